// CUDA kernels of copy: contiguous sources through the vectorized elementwise launcher,
// strided views through a gather kernel. Both instantiate per element width only.
#include "functors/unary.h"
#include "ops/elementwise/copy_ops.h"
#include "ops/elementwise/elementwise_launch.cuh"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {
namespace {

struct StridedLayout {
  int rank;
  int64_t sizes[kMaxCopyRank];
  int64_t strides[kMaxCopyRank];
};

// dst[i] = src[offset of the i-th element of the view], one element per thread step.
template <typename Bits>
__global__ void __launch_bounds__(kBlockSize)
    StridedGatherKernel(const Bits* __restrict__ src, Bits* __restrict__ dst, int64_t n, StridedLayout l) {
  const int64_t step = static_cast<int64_t>(KPS_GRID_NUM_X) * KPS_BLOCK_NUM_X;
  for (int64_t i = static_cast<int64_t>(KPS_BLOCK_ID_X) * KPS_BLOCK_NUM_X + KPS_THREAD_ID_X; i < n; i += step) {
    int64_t rem = i;
    int64_t off = 0;
    for (int d = l.rank - 1; d >= 0; --d) {
      const int64_t q = rem / l.sizes[d];
      off += (rem - q * l.sizes[d]) * l.strides[d];
      rem = q;
    }
    dst[i] = src[off];
  }
}

template <typename Bits>
absl::Status CopyBits(const Tensor& x, Tensor& out, const Stream& stream) {
  const Bits* src = static_cast<const Bits*>(x.raw_data());
  Bits* dst = static_cast<Bits*>(out.raw_data());
  const int64_t n = x.numel();
  if (n == 0) return absl::OkStatus();
  if (x.is_contiguous()) {
    return LaunchElementwiseSameShape<Bits, Bits, 1>(PointerArray<Bits, 1>{{src}}, dst, n,
                                                     IdentityFunctor<Bits>(), stream, "copy");
  }
  StridedLayout l{};
  l.rank = x.rank();
  for (int d = 0; d < l.rank; ++d) {
    l.sizes[d] = x.shape()[d];
    l.strides[d] = x.strides()[d];
  }
  const int64_t blocks = (n + kBlockSize - 1) / kBlockSize;
  const int64_t max_blocks = int64_t{CudaMultiprocessorCount()} * 8;
  StridedGatherKernel<Bits><<<static_cast<int>(blocks < max_blocks ? blocks : max_blocks), kBlockSize, 0,
                              stream.cuda_stream()>>>(src, dst, n, l);
  KPS_RETURN_IF_LAUNCH_ERROR("StridedGatherKernel (copy)");
  return absl::OkStatus();
}

template <typename T>
class CopyCudaKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    return CopyBits<BitsOf<T>>(ctx->input(0), ctx->output(0), ctx->stream());
  }
};

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("copy", DeviceType::kCuda, CopyCudaKernel, KPS_ALL_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
