// The CUDA kernel of axpby, written with the KPS primitives.
#include "axpby.h"
#include "primitives/primitives.cuh"
#include "registry/kernel.h"
#include "registry/status.h"

namespace example {
namespace {

constexpr int kBlock = 256;

// Each block handles one tile of kBlock * 4 elements; the last tile checks bounds.
template <typename T>
__global__ void AxpbyKernel(const T* x, const T* y, T* out, int64_t n, AxpbyFunctor<T> f) {
  constexpr int kNX = 4;
  const int64_t base = static_cast<int64_t>(KPS_BLOCK_ID_X) * KPS_BLOCK_NUM_X * kNX;
  const int num = static_cast<int>(n - base < kBlock * kNX ? n - base : kBlock * kNX);
  T xs[kNX], ys[kNX], rs[kNX];
  kps::ReadData<T, kNX, 1, true>(xs, x + base, num);
  kps::ReadData<T, kNX, 1, true>(ys, y + base, num);
  kps::ElementwiseBinary<T, T, kNX, 1>(rs, xs, ys, f);
  kps::WriteData<T, kNX, 1, true>(out + base, rs, num);
}

template <typename T>
class AxpbyCudaKernel final : public kps::OpKernel {
 public:
  absl::Status Compute(kps::KernelContext* ctx) const override {
    const int64_t n = ctx->output(0).numel();
    if (n == 0) return absl::OkStatus();
    AxpbyFunctor<T> f{static_cast<float>(ctx->Attr<double>("a")), static_cast<float>(ctx->Attr<double>("b"))};
    const int64_t blocks = (n + kBlock * 4 - 1) / (kBlock * 4);
    AxpbyKernel<T><<<static_cast<unsigned>(blocks), kBlock, 0, ctx->cuda_stream()>>>(
        ctx->input(0).data<T>(), ctx->input(1).data<T>(), ctx->output(0).data<T>(), n, f);
    KPS_RETURN_IF_LAUNCH_ERROR("AxpbyKernel");
    return absl::OkStatus();
  }
};

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("axpby", kps::DeviceType::kCuda, AxpbyCudaKernel, float, kps::float16);

}  // namespace example
