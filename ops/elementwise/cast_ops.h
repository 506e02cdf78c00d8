// cast: CastFunctor<In, Out> (functors/cast.h) over any (strided) input, for every pair
// of the ten dtypes. The kernel (one class template over the device) is keyed by the
// input dtype and picks the output type at run time; cast_cuda_float.cu and
// cast_cuda_int.cu register it, on both devices, for the float and the integer inputs,
// so the hundred pairs build in parallel.
#pragma once

#include "functors/cast.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/elementwise_on.h"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {

#define KPS_CAST_FLOAT_CPP_TYPES KPS_FLOAT_CPP_TYPES
#define KPS_CAST_INT_CPP_TYPES bool, KPS_INT_CPP_TYPES

// Calls run(CastFunctor<In, Out>(), out_pointer) for the call's output dtype.
template <typename In, typename Run>
absl::Status DispatchCast(KernelContext& ctx, Run&& run) {
  Tensor& out = ctx.output(0);
  return VisitDataType(out.dtype(), [&](auto tag) -> absl::Status {
    using Out = decltype(tag);
    return run(CastFunctor<In, Out>(), out.data<Out>());
  });
}

// cast's kernel, on either device: x's layout and the functor for the output dtype, then
// the device's elementwise part.
template <DeviceType D, typename In>
class CastKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    const Tensor& x = ctx->input(0);
    const Tensor* ins[] = {&x};
    const ElementwiseLayout layout = MakeElementwiseLayout(x.shape(), ins);
    return DispatchCast<In>(
        *ctx, [&](auto f, auto* out) { return ElementwiseOn<D>::Run(*ctx, layout, out, f, x.data<In>()); });
  }
};

}  // namespace elementwise
}  // namespace kps
