// Schema and CPU kernel of dot. The CUDA kernel is in dot_cuda.cu.
#include <algorithm>
#include <vector>

#include "ops/linalg/dot_ops.h"
#include "ops/common/contiguous.h"
#include "registry/kernel.h"

namespace kps {
namespace linalg {
namespace {

absl::Status InferDot(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  for (int i = 0; i < 2; ++i) {
    const Tensor& t = ctx.input(i);
    const char* name = i == 0 ? "x" : "y";
    if (t.rank() != 1) {
      return ctx.Error("input '", name, "' has rank ", t.rank(), " (shape ", t.shape().ToString(),
                       "); dot takes 1-D tensors");
    }
  }
  if (y.dtype() != x.dtype()) {
    return ctx.Error("input 'y' has dtype ", DataTypeName(y.dtype()), " but input 'x' has ",
                     DataTypeName(x.dtype()), "; cast one of them");
  }
  if (!IsFloatingPoint(x.dtype())) {
    return ctx.Error("input 'x' has dtype ", DataTypeName(x.dtype()),
                     "; dot takes float16, bfloat16, float32 or float64 (cast integers first)");
  }
  if (y.numel() != x.numel()) {
    return ctx.Error("input 'y' has ", y.numel(), " elements but input 'x' has ", x.numel());
  }
  ctx.SetOutput(0, Shape{}, x.dtype());
  return absl::OkStatus();
}

}  // namespace

KPS_REGISTER_OP("dot")
    .Input("x", "1-D (any view)")
    .Input("y", "1-D, x's dtype and length")
    .Output("out", "x's dtype, a scalar (rank 0): sum of x[i] * y[i]")
    .SetInferFn(InferDot)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda},
             {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64})
    .Doc("Inner product of two 1-D tensors, accumulated in float (float16, bfloat16, float32) or double "
         "(float64) and rounded once. Deterministic: no atomics; on CUDA each block folds a fixed interleaved "
         "share and a second kernel folds the block sums in order. Empty inputs give 0.");

namespace {

template <typename T>
class DotCpuKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    using Acc = DotAcc<T>;
    const Stream stream = ctx->stream();
    KPS_ASSIGN_OR_RETURN(const Tensor x, internal::AsContiguous(ctx->input(0), stream));
    KPS_ASSIGN_OR_RETURN(const Tensor y, internal::AsContiguous(ctx->input(1), stream));
    const T* a = x.data<T>();
    const T* b = y.data<T>();
    const int64_t n = x.numel();
    // Blocks of 4096 keep float sums accurate over long inputs; the block sums are folded
    // in order.
    constexpr int64_t kBlock = 4096;
    Acc total = Acc(0);
    for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
      Acc part = Acc(0);
      for (int64_t i = b0; i < std::min(n, b0 + kBlock); ++i) part += static_cast<Acc>(a[i]) * static_cast<Acc>(b[i]);
      total += part;
    }
    ctx->output(0).data<T>()[0] = static_cast<T>(total);
    return absl::OkStatus();
  }
};

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("dot", DeviceType::kCpu, DotCpuKernel, KPS_DOT_CPP_TYPES);

}  // namespace linalg
}  // namespace kps
