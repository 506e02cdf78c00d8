// Schemas of upsample_nearest2d and upsample_nearest2d_backward, and ResolveUpsample. The
// kernels are in upsample_ops.h (with their CPU parts) and upsample_cuda.cu.
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

#include "functors/mp_type.h"
#include "registry/data_type.h"  // KPS_ALL_CPP_TYPES, AllDataTypes()
#include "ops/common/contiguous.h"
#include "ops/upsample/upsample_ops.h"
#include "registry/checked_math.h"
#include "registry/kernel.h"
#include "registry/shape.h"

namespace kps {
namespace upsample {

absl::StatusOr<UpsampleGeometry> ResolveUpsample(const CallView& call, bool backward) {
  const char* arg = backward ? "grad_out" : "x";
  const Tensor& x = call.input(0);
  if (x.rank() != 4) {
    return call.Error("input '", arg, "' has rank ", x.rank(), " (shape ", x.shape().ToString(),
                      "); it must be rank 4, NCHW");
  }
  const int64_t scale = call.Attr<int64_t>("scale");
  if (scale < 1) return call.Error("attribute 'scale' = ", scale, " must be >= 1");
  UpsampleGeometry g;
  // The attribute each scale came from, for errors: 'scale_h' or, when it is 0, 'scale'.
  const char* source[2] = {"scale_h", "scale_w"};
  for (int i = 0; i < 2; ++i) {
    const int64_t s = call.Attr<int64_t>(source[i]);
    if (s < 0) return call.Error("attribute '", source[i], "' = ", s, " must be >= 1 (or 0: take 'scale')");
    (i == 0 ? g.sh : g.sw) = s == 0 ? scale : s;
    if (s == 0) source[i] = "scale";
  }
  g.planes = x.shape()[0] * x.shape()[1];
  if (backward) {
    const int64_t oh = x.shape()[2], ow = x.shape()[3];
    if (oh % g.sh != 0 || ow % g.sw != 0) {
      return call.Error("input 'grad_out' has H x W = ", oh, " x ", ow, ", not a multiple of the scales ", g.sh,
                        " x ", g.sw);
    }
    g.h = oh / g.sh;
    g.w = ow / g.sw;
  } else {
    g.h = x.shape()[2];
    g.w = x.shape()[3];
    // H * scale_h and W * scale_w are checked before they form the output shape: a
    // wrapped product would make a wrong (possibly negative) dim, and a zero H or W
    // must not hide a huge other side (the shape rule counts zero dims as one).
    int64_t out_h = 0, out_w = 0;
    if (MulOverflow(g.h, g.sh, &out_h)) {
      return call.Error("attribute '", source[0], "' = ", g.sh, " times H = ", g.h, " of input 'x' ",
                        x.shape().ToString(), " overflows int64");
    }
    if (MulOverflow(g.w, g.sw, &out_w)) {
      return call.Error("attribute '", source[1], "' = ", g.sw, " times W = ", g.w, " of input 'x' ",
                        x.shape().ToString(), " overflows int64");
    }
    KPS_RETURN_IF_ERROR(ValidateShape(
        Shape{x.shape()[0], x.shape()[1], out_h, out_w},
        absl::StrCat("op '", call.schema().name(), "': output 'out' of input 'x' ", x.shape().ToString(),
                     " scaled by attributes '", source[0], "' x '", source[1], "' = ", g.sh, " x ", g.sw)));
  }
  return g;
}

namespace {

absl::Status InferUpsample(InferContext& ctx, bool backward) {
  KPS_ASSIGN_OR_RETURN(const UpsampleGeometry g, ResolveUpsample(ctx, backward));
  const Tensor& x = ctx.input(0);
  if (backward && !IsFloatingPoint(x.dtype())) {
    return ctx.Error("input 'grad_out' has dtype ", DataTypeName(x.dtype()),
                     "; the backward sums gradients and needs a floating dtype (float16, bfloat16, float32, float64)");
  }
  ctx.SetOutput(0,
                backward ? Shape{x.shape()[0], x.shape()[1], g.h, g.w}
                         : Shape{x.shape()[0], x.shape()[1], g.out_h(), g.out_w()},
                x.dtype());
  return absl::OkStatus();
}

}  // namespace

KPS_REGISTER_OP("upsample_nearest2d")
    .Input("x", "NCHW tensor (any layout; strided views are packed first)")
    .Output("out", "x's dtype, contiguous [N, C, H * scale_h, W * scale_w]")
    .Attr<int64_t>("scale", 2, "integer scale factor of H and W")
    .Attr<int64_t>("scale_h", 0, "integer scale factor of H (0: take 'scale')")
    .Attr<int64_t>("scale_w", 0, "integer scale factor of W (0: take 'scale')")
    .SetInferFn([](InferContext& ctx) { return InferUpsample(ctx, false); })
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes())
    .Doc("Nearest-neighbour upsampling of NCHW images by integer factors: out[n, c, y, x] = "
         "x[n, c, y / scale_h, x / scale_w] (PyTorch's interpolate(mode='nearest') for integer scales).");

KPS_REGISTER_OP("upsample_nearest2d_backward")
    .Input("grad_out", "NCHW gradient of upsample_nearest2d's output (H, W multiples of the scales)")
    .Output("grad_in", "grad_out's dtype, contiguous [N, C, H / scale_h, W / scale_w]")
    .Attr<int64_t>("scale", 2, "integer scale factor of H and W")
    .Attr<int64_t>("scale_h", 0, "integer scale factor of H (0: take 'scale')")
    .Attr<int64_t>("scale_w", 0, "integer scale factor of W (0: take 'scale')")
    .SetInferFn([](InferContext& ctx) { return InferUpsample(ctx, true); })
    .Kernels({DeviceType::kCpu, DeviceType::kCuda},
             {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64})
    .Doc("Gradient of upsample_nearest2d: grad_in[n, c, y, x] sums the scale_h x scale_w window of grad_out "
         "that (y, x) was copied to, in row-major order, in float for 16-bit types (no atomics: deterministic).");

}  // namespace upsample
}  // namespace kps
