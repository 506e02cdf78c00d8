// Schema and CPU kernels of cast.
#include "ops/elementwise/cast_ops.h"
#include "ops/elementwise/copy_ops.h"
#include "ops/elementwise/cpu_loop.h"
#include "registry/op_schema.h"

namespace kps {
namespace elementwise {
namespace {

absl::Status InferCast(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() > kMaxCopyRank && !x.is_contiguous()) {
    return ctx.Error("input 'x' is a strided view of rank ", x.rank(), "; at most ", kMaxCopyRank,
                     " dimensions are supported (make it contiguous first)");
  }
  ctx.SetOutput(0, x.shape(), ctx.Attr<DataType>("dtype"));
  return absl::OkStatus();
}

template <typename In>
class CastCpuKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    const Tensor& x = ctx->input(0);
    const Tensor* ins[] = {&x};
    const ElementwiseLayout layout = MakeElementwiseLayout(x.shape(), ins);
    return DispatchCast<In>(*ctx, [&](auto f, auto* out) {
      CpuElementwiseLoop(layout, out, f, x.data<In>());
      return absl::OkStatus();
    });
  }
};

}  // namespace

KPS_REGISTER_OP("cast")
    .Input("x", "any tensor, contiguous or a strided view")
    .Output("out", "x's values as `dtype`, contiguous, of x's shape")
    .RequiredAttr<DataType>("dtype", "the output dtype (any of the ten)")
    .KeyDataTypeFrom("x")
    .SetInferFn(InferCast)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes())
    .Doc("Converts x to `dtype`, every pair of the ten dtypes, one defined result per input on CPU and GPU: "
         "float to integer truncates and saturates (NaN -> 0), integer to integer wraps, to bool is x != 0, "
         "to a float type rounds to nearest even (see functors/cast.h).");
KPS_REGISTER_KERNEL_FOR_TYPES("cast", DeviceType::kCpu, CastCpuKernel, KPS_ALL_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
