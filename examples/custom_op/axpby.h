// axpby: out = a * x + b * y, the example of adding an op to KPS from outside.
#pragma once

#include "functors/macros.h"
#include "functors/mp_type.h"

namespace example {

// The op's math, shared by the CPU and CUDA kernels (16-bit floats compute in float).
template <typename T>
struct AxpbyFunctor {
  using MP = kps::MPType<T>;
  MP a, b;
  KPS_FUNCTOR_HD T operator()(T x, T y) const {
    return static_cast<T>(a * static_cast<MP>(x) + b * static_cast<MP>(y));
  }
};

}  // namespace example
