// Schema of copy: a contiguous copy of any (possibly strided) tensor.
#include "ops/elementwise/copy_ops.h"
#include "registry/op_schema.h"

namespace kps {
namespace elementwise {

namespace {
absl::Status InferCopy(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() > kMaxCopyRank && !x.is_contiguous()) {
    return ctx.Error("input 'x' is a strided view of rank ", x.rank(), "; at most ", kMaxCopyRank,
                     " dimensions are supported");
  }
  ctx.SetOutput(0, x.shape(), x.dtype());
  return absl::OkStatus();
}
}  // namespace

KPS_REGISTER_OP("copy")
    .Input("x", "any tensor, contiguous or a strided view")
    .Output("out", "a contiguous copy of x")
    .SetInferFn(InferCopy)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes())
    .Doc("Copies x into a new contiguous tensor (also makes strided views contiguous).");

}  // namespace elementwise
}  // namespace kps
