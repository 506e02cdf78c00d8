// CPU kernel of copy.
#include <cstring>

#include "ops/elementwise/copy_ops.h"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {
namespace {

template <typename T>
class CopyCpuKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    using Bits = BitsOf<T>;
    const Tensor& x = ctx->input(0);
    Tensor& out = ctx->output(0);
    const Bits* src = static_cast<const Bits*>(x.raw_data());
    Bits* dst = static_cast<Bits*>(out.raw_data());
    const int64_t n = x.numel();
    if (n == 0) return absl::OkStatus();
    if (x.is_contiguous()) {
      std::memcpy(dst, src, n * sizeof(Bits));
      return absl::OkStatus();
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
    return absl::OkStatus();
  }
};

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("copy", DeviceType::kCpu, CopyCpuKernel, KPS_ALL_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
