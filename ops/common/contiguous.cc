#include "ops/common/contiguous.h"

#include "absl/strings/str_cat.h"
#include "ops/elementwise/copy_ops.h"
#include "registry/status.h"

namespace kps {
namespace internal {

absl::Status CopyInto(const Tensor& x, Tensor& out, const Stream& stream) {
  if (out.shape() != x.shape() || out.dtype() != x.dtype() || out.device() != x.device() || !out.is_contiguous()) {
    return absl::InternalError(absl::StrCat("CopyInto: the output ", out.shape().ToString(), " must be a contiguous ",
                                            "tensor of the input's shape ", x.shape().ToString(),
                                            ", dtype and device"));
  }
  if (x.rank() > elementwise::kMaxCopyRank && !x.is_contiguous()) {
    return absl::InvalidArgumentError(absl::StrCat("a strided view of rank ", x.rank(), " cannot be packed: at most ",
                                                   elementwise::kMaxCopyRank, " dimensions are supported"));
  }
  return x.device() == DeviceType::kCuda ? CopyIntoCuda(x, out, stream) : CopyIntoCpu(x, out);
}

absl::StatusOr<Tensor> AsContiguous(const Tensor& x, const Stream& stream) {
  if (x.is_contiguous()) return x;
  KPS_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(x.shape(), x.dtype(), x.device(), stream));
  KPS_RETURN_IF_ERROR(CopyInto(x, out, stream));
  return out;
}

}  // namespace internal
}  // namespace kps
