// CPU kernels of add and mul: the same functors as the CUDA kernels, in a plain loop.
#include "ops/elementwise/binary_ops.h"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {
namespace {

template <typename Op>
struct BinaryCpu {
  template <typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      const T* x = ctx->input(0).data<T>();
      const T* y = ctx->input(1).data<T>();
      T* out = ctx->output(0).data<T>();
      const int64_t n = ctx->output(0).numel();
      return Op::template Dispatch<T>(*ctx, [&](auto f) {
        for (int64_t i = 0; i < n; ++i) out[i] = f(x[i], y[i]);
        return absl::OkStatus();
      });
    }
  };
};

template <typename T>
using AddCpuKernel = BinaryCpu<AddOp>::Kernel<T>;
template <typename T>
using MulCpuKernel = BinaryCpu<MulOp>::Kernel<T>;

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("add", DeviceType::kCpu, AddCpuKernel, KPS_ADD_MUL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("mul", DeviceType::kCpu, MulCpuKernel, KPS_ADD_MUL_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
