// CPU kernels of add and mul: the same functors as the CUDA kernels, in a plain loop.
#include "ops/elementwise/binary_ops.h"
#include "ops/elementwise/cpu_loop.h"
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
      const Tensor& x = ctx->input(0);
      const Tensor& y = ctx->input(1);
      Tensor& out = ctx->output(0);
      const Tensor* inputs[] = {&x, &y};
      const ElementwiseLayout layout = MakeElementwiseLayout(out.shape(), inputs);
      return Op::template Dispatch<T>(*ctx, [&](auto f) {
        CpuElementwiseLoop(layout, out.data<T>(), f, x.data<T>(), y.data<T>());
        return absl::OkStatus();
      });
    }
  };
};

template <typename T>
using AddCpuKernel = BinaryCpu<AddOp>::Kernel<T>;
template <typename T>
using SubCpuKernel = BinaryCpu<SubOp>::Kernel<T>;
template <typename T>
using MulCpuKernel = BinaryCpu<MulOp>::Kernel<T>;

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("add", DeviceType::kCpu, AddCpuKernel, KPS_ADD_MUL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("sub", DeviceType::kCpu, SubCpuKernel, KPS_ADD_MUL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("mul", DeviceType::kCpu, MulCpuKernel, KPS_ADD_MUL_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
