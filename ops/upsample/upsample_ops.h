// upsample_nearest2d and its backward: the call's geometry, shared by the schemas, the
// CPU kernels (upsample_op.cc) and the CUDA kernels (upsample_cuda.cu).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "registry/op_schema.h"

namespace kps {
namespace upsample {

// The small side of the op: `planes` = N * C images of h x w, each output pixel
// (y, x) of the (h * sh) x (w * sw) side taking the small side's (y / sh, x / sw).
struct UpsampleGeometry {
  int64_t planes = 0, h = 0, w = 0;
  int64_t sh = 1, sw = 1;
  int64_t out_h() const { return h * sh; }
  int64_t out_w() const { return w * sw; }
};

// Checks the call (a rank-4 NCHW input; integer scales `scale`, `scale_h`, `scale_w`)
// and returns its geometry. For the backward, the input is the large side (grad_out),
// whose H and W must be multiples of the scales.
absl::StatusOr<UpsampleGeometry> ResolveUpsample(const CallView& call, bool backward);

}  // namespace upsample
}  // namespace kps
