// CUDA kernels of cast for float inputs (every output dtype), through the elementwise
// launcher (cast_ops.h says why the inputs are split across two files).
#include "ops/elementwise/cast_ops.h"
#include "ops/elementwise/elementwise_launch.cuh"

namespace kps {
namespace elementwise {
namespace {

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

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("cast", DeviceType::kCuda, CastCudaKernel, KPS_CAST_FLOAT_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
