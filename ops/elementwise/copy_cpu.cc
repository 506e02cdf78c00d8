// CPU kernel of copy, and the CPU half of internal::CopyInto (ops/common/contiguous.h).
#include <cstring>

#include "ops/common/contiguous.h"
#include "ops/elementwise/copy_ops.h"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {
namespace {

template <typename Bits>
void CopyBitsCpu(const Tensor& x, Tensor& out) {
  const Bits* src = static_cast<const Bits*>(x.raw_data());
  Bits* dst = static_cast<Bits*>(out.raw_data());
  const int64_t n = x.numel();
  if (n == 0) return;
  if (x.is_contiguous()) {
    std::memcpy(dst, src, n * sizeof(Bits));
    return;
  }
  const int rank = x.rank();
  DimVector index(rank, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = src[off];
    for (int d = rank - 1; d >= 0; --d) {  // odometer over x's dims
      if (++index[d] < x.shape()[d]) {
        off += x.strides()[d];
        break;
      }
      off -= x.strides()[d] * (x.shape()[d] - 1);
      index[d] = 0;
    }
  }
}

// One class per element width (KPS_REGISTER_KERNEL_BY_WIDTH): copy moves bits.
template <typename Bits>
class CopyCpuKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    CopyBitsCpu<Bits>(ctx->input(0), ctx->output(0));
    return absl::OkStatus();
  }
};

}  // namespace

KPS_REGISTER_KERNEL_BY_WIDTH("copy", DeviceType::kCpu, CopyCpuKernel, KPS_ALL_CPP_TYPES);

}  // namespace elementwise

absl::Status internal::CopyIntoCpu(const Tensor& x, Tensor& out) {
  switch (DataTypeSize(x.dtype())) {
    case 1: elementwise::CopyBitsCpu<uint8_t>(x, out); break;
    case 2: elementwise::CopyBitsCpu<uint16_t>(x, out); break;
    case 4: elementwise::CopyBitsCpu<uint32_t>(x, out); break;
    default: elementwise::CopyBitsCpu<uint64_t>(x, out); break;
  }
  return absl::OkStatus();
}

}  // namespace kps
