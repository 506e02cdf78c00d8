// The schema and the CPU kernel of axpby.
#include "axpby.h"

#include "registry/kernel.h"
#include "registry/op_schema.h"

namespace example {
namespace {

absl::Status InferAxpby(kps::InferContext& ctx) {
  const kps::Tensor& x = ctx.input(0);
  const kps::Tensor& y = ctx.input(1);
  if (x.shape() != y.shape() || x.dtype() != y.dtype()) {
    return ctx.Error("'x' and 'y' must have one shape and dtype, got ", x.DebugString(), " and ", y.DebugString());
  }
  ctx.SetOutput(0, x.shape(), x.dtype());
  return absl::OkStatus();
}

KPS_REGISTER_OP("axpby")
    .Input("x")
    .Input("y")
    .Output("out", "a * x + b * y")
    .Attr<double>("a", 1.0)
    .Attr<double>("b", 1.0)
    .SetInferFn(InferAxpby)
    .RequireContiguousInputs()
    .Kernels({kps::DeviceType::kCpu, kps::DeviceType::kCuda}, {kps::DataType::kFloat32, kps::DataType::kFloat16})
    .Doc("out = a * x + b * y (an example op registered outside KPS).");

template <typename T>
class AxpbyCpuKernel final : public kps::OpKernel {
 public:
  absl::Status Compute(kps::KernelContext* ctx) const override {
    AxpbyFunctor<T> f{static_cast<float>(ctx->Attr<double>("a")), static_cast<float>(ctx->Attr<double>("b"))};
    const T* x = ctx->input(0).data<T>();
    const T* y = ctx->input(1).data<T>();
    T* out = ctx->output(0).data<T>();
    for (int64_t i = 0; i < ctx->output(0).numel(); ++i) out[i] = f(x[i], y[i]);
    return absl::OkStatus();
  }
};

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("axpby", kps::DeviceType::kCpu, AxpbyCpuKernel, float, kps::float16);

}  // namespace example
