// The schema and the CPU kernel of example_softmax.
#include <vector>

#include "registry/data_type.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"
#include "softmax.h"

namespace example {
namespace {

// Checked before any allocation or launch, on every device alike.
absl::Status InferSoftmax(kps::InferContext& ctx) {
  const kps::Tensor& x = ctx.input(0);
  if (x.rank() == 0) {
    return ctx.Error("input 'x' ", x.DebugString(),
                     " has rank 0; softmax normalizes over the last dim, so x needs rank >= 1 (reshape a "
                     "scalar to [1])");
  }
  if (x.dtype() != kps::DataType::kFloat32 && x.dtype() != kps::DataType::kBFloat16) {
    return ctx.Error("input 'x' has dtype ", kps::DataTypeName(x.dtype()),
                     "; example_softmax takes float32 or bfloat16: cast x first");
  }
  ctx.SetOutput(0, x.shape(), x.dtype());
  return absl::OkStatus();
}

KPS_REGISTER_OP("example_softmax")
    .Input("x", "the values; each row along the last dim is normalized on its own")
    .Output("out", "exp(x - max) / sum(exp(x - max)) over the last dim, x's shape and dtype")
    .SetInferFn(InferSoftmax)
    .RequireContiguousInputs()
    .Kernels({kps::DeviceType::kCpu, kps::DeviceType::kCuda}, {kps::DataType::kFloat32, kps::DataType::kBFloat16})
    .Doc("Softmax over the last dim, computed in float (an example op registered outside KPS, "
         "examples/softmax). A row holding NaN or +inf, or only -inf, gives NaN.");

// One row at a time: the max, exp(x - max) in float as the CUDA kernel does, their sum in
// double (a float sum in order over a 64K row would drift by ~1e-5), then the scale.
template <typename T>
class SoftmaxCpuKernel final : public kps::OpKernel {
 public:
  absl::Status Compute(kps::KernelContext* ctx) const override {
    const kps::Tensor& x = ctx->input(0);
    const int64_t n = x.numel();
    if (n == 0) return absl::OkStatus();
    const int64_t cols = x.shape()[x.rank() - 1];
    const int64_t rows = n / cols;
    const kps::MaxFunctor<float> max_op;
    const kps::IdentityFunctor<T, float> to_float;
    std::vector<float> e(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      const T* in = x.data<T>() + r * cols;
      T* out = ctx->output(0).data<T>() + r * cols;
      float m = max_op.initial();
      for (int64_t c = 0; c < cols; ++c) m = max_op(m, to_float(in[c]));
      const ExpShiftedFunctor exp_shifted{m};
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) {
        e[c] = exp_shifted(to_float(in[c]));
        sum += e[c];
      }
      const NormalizeFunctor<T> normalize{1.0f / static_cast<float>(sum)};
      for (int64_t c = 0; c < cols; ++c) out[c] = normalize(e[c]);
    }
    return absl::OkStatus();
  }
};

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("example_softmax", kps::DeviceType::kCpu, SoftmaxCpuKernel, float, kps::bfloat16);

}  // namespace example
