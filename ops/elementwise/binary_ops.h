// add, sub and mul: each op's functor, built from the call's attributes, the dtypes they
// are registered for, and their kernel (one class template over the device; registered in
// binary_cuda.cu).
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "functors/binary.h"
#include "ops/elementwise/elementwise_on.h"
#include "registry/data_type.h"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {

// Every numeric dtype (not bool).
#define KPS_ADD_MUL_CPP_TYPES KPS_NUMERIC_CPP_TYPES
std::vector<DataType> AddMulDataTypes();

// alpha (or addcmul's value) in T's compute type. Integers: through int64, so a negative alpha wraps into
// unsigned types (x - 1 * y on uint8 is x + 255 * y modulo 2^8) instead of converting a
// negative double to unsigned, which C++ leaves undefined. InferAdd has checked that
// alpha is a whole number within int64.
template <typename T>
MPType<T> AlphaAs(double alpha) {
  if constexpr (std::is_integral_v<MPType<T>>) {
    return static_cast<MPType<T>>(static_cast<WrapType<MPType<T>>>(static_cast<int64_t>(alpha)));
  } else {
    return static_cast<MPType<T>>(alpha);
  }
}

// Each op calls `run(functor)` with the functor the call needs; CPU and CUDA kernels
// pass a `run` that applies it with their own loop or launcher.
struct AddOp {
  static constexpr const char* kName = "add";
  template <typename T, typename Run>
  static absl::Status Dispatch(const KernelContext& ctx, Run&& run) {
    const double alpha = ctx.Attr<double>("alpha");
    // alpha == 1 is plain addition: the same results (1 * y is exact), and a functor
    // with Apply2, so 16-bit pairs use packed math on the GPU.
    if (alpha == 1.0) return run(AddFunctor<T>());
    return run(AddScaledFunctor<T>(AlphaAs<T>(alpha)));
  }
};

// x - alpha * y, as add with -alpha (integers wrap the same way); alpha == 1 is plain
// subtraction, with Apply2.
struct SubOp {
  static constexpr const char* kName = "sub";
  template <typename T, typename Run>
  static absl::Status Dispatch(const KernelContext& ctx, Run&& run) {
    const double alpha = ctx.Attr<double>("alpha");
    if (alpha == 1.0) return run(SubFunctor<T>());
    return run(AddScaledFunctor<T>(AlphaAs<T>(-alpha)));
  }
};

struct MulOp {
  static constexpr const char* kName = "mul";
  template <typename T, typename Run>
  static absl::Status Dispatch(const KernelContext&, Run&& run) {
    return run(MulFunctor<T>());
  }
};

// The kernel of add, sub and mul, on either device: the op's functor for the call (Op's
// Dispatch), then the device's elementwise part.
template <typename Op>
struct BinaryKernel {
  template <DeviceType D, typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      const Tensor& x = ctx->input(0);
      const Tensor& y = ctx->input(1);
      Tensor& out = ctx->output(0);
      const Tensor* inputs[] = {&x, &y};
      const ElementwiseLayout layout = MakeElementwiseLayout(out.shape(), inputs);
      return Op::template Dispatch<T>(*ctx, [&](auto f) {
        return ElementwiseOn<D>::Run(*ctx, layout, out.data<T>(), f, x.data<T>(), y.data<T>());
      });
    }
  };
};

}  // namespace elementwise
}  // namespace kps
