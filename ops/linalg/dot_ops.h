// dot: shared by its schema and CPU kernel (dot_op.cc) and its CUDA kernel (dot_cuda.cu).
#pragma once

#include <type_traits>

#include "functors/mp_type.h"

namespace kps {
namespace linalg {

#define KPS_DOT_CPP_TYPES KPS_FLOAT_CPP_TYPES

// The accumulator: float for float16, bfloat16 and float32, double for float64.
template <typename T>
using DotAcc = MPType<T>;

}  // namespace linalg
}  // namespace kps
