// Schema of dot. Its kernel (DotKernel, dot_ops.h) is registered in dot_cuda.cu.
#include <vector>

#include "ops/linalg/dot_ops.h"
#include "registry/op_schema.h"

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

}  // namespace linalg
}  // namespace kps
