// CUDA kernels of copy, and the CUDA half of internal::CopyInto (ops/common/contiguous.h):
// the elementwise launcher with the identity, per element width
// (copy moves bits). Contiguous sources take its vectorized same-shape walk; strided
// views its offset walk over the merged layout (FastDivMod once per vector, vector loads
// where the view's innermost run is contiguous).
#include "functors/unary.h"
#include "ops/common/contiguous.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/copy_ops.h"
#include "ops/elementwise/elementwise_launch.cuh"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {
namespace {

template <typename Bits>
absl::Status CopyBits(const Tensor& x, Tensor& out, const Stream& stream) {
  const Bits* src = static_cast<const Bits*>(x.raw_data());
  Bits* dst = static_cast<Bits*>(out.raw_data());
  const Tensor* ins[] = {&x};
  return LaunchElementwise(MakeInputs(src), MakeElementwiseLayout(out.shape(), ins), dst, out.numel(),
                           IdentityFunctor<Bits>(), stream, "copy");
}

// One class per element width (KPS_REGISTER_KERNEL_BY_WIDTH).
template <typename Bits>
class CopyCudaKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    return CopyBits<Bits>(ctx->input(0), ctx->output(0), ctx->stream());
  }
};

}  // namespace

KPS_REGISTER_KERNEL_BY_WIDTH("copy", DeviceType::kCuda, CopyCudaKernel, KPS_ALL_CPP_TYPES);

}  // namespace elementwise

absl::Status internal::CopyIntoCuda(const Tensor& x, Tensor& out, const Stream& stream) {
  switch (DataTypeSize(x.dtype())) {
    case 1: return elementwise::CopyBits<uint8_t>(x, out, stream);
    case 2: return elementwise::CopyBits<uint16_t>(x, out, stream);
    case 4: return elementwise::CopyBits<uint32_t>(x, out, stream);
    default: return elementwise::CopyBits<uint64_t>(x, out, stream);
  }
}

}  // namespace kps
