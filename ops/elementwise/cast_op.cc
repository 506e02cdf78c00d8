// Schema of cast. Its kernel (CastKernel, cast_ops.h) is registered in cast_cuda_float.cu
// and cast_cuda_int.cu.
#include "ops/elementwise/cast_ops.h"
#include "ops/elementwise/copy_ops.h"
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

}  // namespace elementwise
}  // namespace kps
