// CUDA kernels of add, sub and mul, through the elementwise launcher.
#include "ops/elementwise/binary_ops.h"
#include "ops/elementwise/elementwise_launch.cuh"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {
namespace {

template <typename Op>
struct BinaryCuda {
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
        return LaunchElementwise(MakeInputs(x.data<T>(), y.data<T>()), layout, out.data<T>(), out.numel(), f,
                                 ctx->stream(), Op::kName);
      });
    }
  };
};

template <typename T>
using AddCudaKernel = BinaryCuda<AddOp>::Kernel<T>;
template <typename T>
using SubCudaKernel = BinaryCuda<SubOp>::Kernel<T>;
template <typename T>
using MulCudaKernel = BinaryCuda<MulOp>::Kernel<T>;

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("add", DeviceType::kCuda, AddCudaKernel, KPS_ADD_MUL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("sub", DeviceType::kCuda, SubCudaKernel, KPS_ADD_MUL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("mul", DeviceType::kCuda, MulCudaKernel, KPS_ADD_MUL_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
