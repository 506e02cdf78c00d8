// What add and mul compute, shared by their CPU and CUDA kernels: each op's functor,
// built from the call's attributes, and the dtypes they are registered for.
#pragma once

#include <vector>

#include "functors/binary.h"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {

// float16, bfloat16, float32, float64, int32, int64.
#define KPS_ADD_MUL_CPP_TYPES ::kps::float16, ::kps::bfloat16, float, double, int32_t, int64_t
std::vector<DataType> AddMulDataTypes();

struct AddOp {
  static constexpr const char* kName = "add";
  template <typename T>
  static AddScaledFunctor<T> Make(const KernelContext& ctx) {
    return AddScaledFunctor<T>(static_cast<MPType<T>>(ctx.Attr<double>("alpha")));
  }
};

struct MulOp {
  static constexpr const char* kName = "mul";
  template <typename T>
  static MulFunctor<T> Make(const KernelContext&) {
    return MulFunctor<T>();
  }
};

}  // namespace elementwise
}  // namespace kps
