// The CUDA kernel of cast, keyed by the input type: the elementwise launcher with
// CastFunctor<In, Out> for the call's output dtype. cast_cuda_float.cu and
// cast_cuda_int.cu register it for halves of the input types (cast_ops.h says why).
#pragma once

#include "ops/elementwise/cast_ops.h"
#include "ops/elementwise/elementwise_launch.cuh"

namespace kps {
namespace elementwise {

template <typename In>
class CastCudaKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    const Tensor& x = ctx->input(0);
    const Tensor* ins[] = {&x};
    const ElementwiseLayout layout = MakeElementwiseLayout(x.shape(), ins);
    return DispatchCast<In>(*ctx, [&](auto f, auto* out) {
      return LaunchElementwise(MakeInputs(x.data<In>()), layout, out, x.numel(), f, ctx->stream(), "cast");
    });
  }
};

}  // namespace elementwise
}  // namespace kps
