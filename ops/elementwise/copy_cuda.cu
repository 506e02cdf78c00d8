// The CPU and CUDA kernels of copy (one class template over the device, per element
// width: copy moves bits), and both halves of internal::CopyInto (ops/common/contiguous.h).
// CUDA: the elementwise launcher with the identity. Contiguous sources take its
// vectorized same-shape walk; strided views its offset walk over the merged layout
// (FastDivMod once per vector, vector loads where the view's innermost run is contiguous).
// CPU: memcpy for a contiguous source, an odometer over the view's dims otherwise.
#include <cstring>

#include "functors/unary.h"
#include "ops/common/contiguous.h"
#include "ops/elementwise/broadcast.h"
#include "registry/data_type.h"
#include "ops/elementwise/elementwise_launch.cuh"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {
namespace {

// The device part of copy: CopyOn<D>::Run<Bits>(x, out, stream) copies x's elements (a
// view of any strides) into the contiguous out of x's shape.
template <DeviceType D>
struct CopyOn;

template <>
struct CopyOn<DeviceType::kCpu> {
  template <typename Bits>
  static absl::Status Run(const Tensor& x, Tensor& out, const Stream&) {
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

template <>
struct CopyOn<DeviceType::kCuda> {
  template <typename Bits>
  static absl::Status Run(const Tensor& x, Tensor& out, const Stream& stream) {
    const Bits* src = static_cast<const Bits*>(x.raw_data());
    Bits* dst = static_cast<Bits*>(out.raw_data());
    const Tensor* ins[] = {&x};
    return LaunchElementwise(MakeInputs(src), MakeElementwiseLayout(out.shape(), ins), dst, out.numel(),
                             IdentityFunctor<Bits>(), stream, "copy");
  }
};

// copy's kernel, one class per device and element width
// (KPS_REGISTER_DEVICE_KERNELS_BY_WIDTH).
template <DeviceType D, typename Bits>
class CopyKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    return CopyOn<D>::template Run<Bits>(ctx->input(0), ctx->output(0), ctx->stream());
  }
};

// CopyOn<D> for x's element width.
template <DeviceType D>
absl::Status CopyByWidth(const Tensor& x, Tensor& out, const Stream& stream) {
  switch (DataTypeSize(x.dtype())) {
    case 1: return CopyOn<D>::template Run<uint8_t>(x, out, stream);
    case 2: return CopyOn<D>::template Run<uint16_t>(x, out, stream);
    case 4: return CopyOn<D>::template Run<uint32_t>(x, out, stream);
    default: return CopyOn<D>::template Run<uint64_t>(x, out, stream);
  }
}

}  // namespace

KPS_REGISTER_DEVICE_KERNELS_BY_WIDTH("copy", CopyKernel, KPS_ALL_CPP_TYPES);

}  // namespace elementwise

absl::Status internal::CopyIntoCpu(const Tensor& x, Tensor& out) {
  return elementwise::CopyByWidth<DeviceType::kCpu>(x, out, Stream::Cpu());
}

absl::Status internal::CopyIntoCuda(const Tensor& x, Tensor& out, const Stream& stream) {
  return elementwise::CopyByWidth<DeviceType::kCuda>(x, out, stream);
}

}  // namespace kps
