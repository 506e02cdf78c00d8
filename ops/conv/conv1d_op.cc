// Schema of conv1d and ResolveConv1d. The kernel is in conv1d_ops.h (with its CPU part)
// and conv1d_cuda.cu.
#include <algorithm>

#include "ops/conv/conv1d_ops.h"
#include "ops/common/contiguous.h"
#include "registry/kernel.h"

namespace kps {
namespace conv {

absl::StatusOr<Conv1dGeometry> ResolveConv1d(const CallView& call) {
  const Tensor& x = call.input(0);
  const Tensor& w = call.input(1);
  for (int i = 0; i < 2; ++i) {
    const Tensor& t = call.input(i);
    if (t.rank() != 1) {
      return call.Error("input '", i == 0 ? "x" : "w", "' has rank ", t.rank(), " (shape ", t.shape().ToString(),
                        "); conv1d takes two 1-D signals");
    }
  }
  if (w.dtype() != x.dtype()) {
    return call.Error("input 'w' has dtype ", DataTypeName(w.dtype()), " but input 'x' has ",
                      DataTypeName(x.dtype()), "; cast one of them");
  }
  if (!IsFloatingPoint(x.dtype())) {
    return call.Error("input 'x' has dtype ", DataTypeName(x.dtype()),
                      "; conv1d takes float16, bfloat16, float32 or float64");
  }
  const std::string& mode = call.Attr<std::string>("mode");
  Conv1dGeometry g;
  g.n = x.numel();
  g.m = w.numel();
  const int64_t lo = std::min(g.n, g.m), hi = std::max(g.n, g.m);
  if (mode == "full") {
    g.length = lo == 0 ? 0 : g.n + g.m - 1;
  } else if (mode == "same") {
    g.length = lo == 0 ? 0 : hi;
    g.offset = lo == 0 ? 0 : (lo - 1) / 2;
  } else if (mode == "valid") {
    g.length = lo == 0 ? 0 : hi - lo + 1;
    g.offset = lo == 0 ? 0 : lo - 1;
  } else {
    return call.Error("attribute 'mode' = '", mode, "'; expected 'full', 'same' or 'valid'");
  }
  return g;
}

namespace {

absl::Status InferConv1d(InferContext& ctx) {
  KPS_ASSIGN_OR_RETURN(const Conv1dGeometry g, ResolveConv1d(ctx));
  ctx.SetOutput(0, Shape{g.length}, ctx.input(0).dtype());
  return absl::OkStatus();
}

}  // namespace

KPS_REGISTER_OP("conv1d")
    .Input("x", "1-D signal (any view)")
    .Input("w", "1-D filter, x's dtype (any length; the two are interchangeable)")
    .Output("out", "x's dtype, 1-D: the convolution in the chosen mode")
    .Attr<std::string>("mode", "full",
                       "full (length n + m - 1), same (max(n, m), centred as numpy.convolve), or valid "
                       "(max(n, m) - min(n, m) + 1)")
    .SetInferFn(InferConv1d)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda},
             {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64})
    .Doc("Linear convolution of two 1-D signals, numpy.convolve's definition (the filter is flipped): "
         "full[k] = sum_j w[j] * x[k - j] over the terms inside both signals, in float (16-bit and float32) or "
         "double, each output summed over j in increasing order. An empty input gives an empty output.");

}  // namespace conv
}  // namespace kps
