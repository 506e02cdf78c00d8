// upsample_nearest2d and its backward: the call's geometry, and the ops' kernels (one
// class template over the device each, registered in upsample_cuda.cu) with their CPU
// parts; the CUDA parts are in upsample_cuda.cu.
#pragma once

#include <cstdint>
#include <cstring>

#include "absl/status/statusor.h"
#include "functors/mp_type.h"
#include "ops/common/contiguous.h"
#include "registry/kernel.h"
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

// The device parts: Forward<U>(in, out, g, stream) writes the (h * sh) x (w * sw) planes
// of `out` from the contiguous h x w planes of `in` (U: the elements' bits); Backward<T>
// sums each sh x sw window of the contiguous grad_out `in` into grad_in `out`, in
// row-major order, in MPType<T>.
template <DeviceType D>
struct UpsampleOn;

template <>
struct UpsampleOn<DeviceType::kCpu> {
  template <typename U>
  static absl::Status Forward(const U* in, U* out, const UpsampleGeometry& g, const Stream&) {
    const int64_t ow = g.out_w();
    for (int64_t row = 0; row < g.planes * g.h; ++row) {
      U* first = out + row * g.sh * ow;
      for (int64_t ox = 0; ox < ow; ++ox) first[ox] = in[row * g.w + ox / g.sw];
      for (int64_t dy = 1; dy < g.sh; ++dy) std::memcpy(first + dy * ow, first, ow * sizeof(U));
    }
    return absl::OkStatus();
  }
  template <typename T>
  static absl::Status Backward(const T* in, T* out, const UpsampleGeometry& g, const Stream&) {
    using Acc = MPType<T>;
    const int64_t ow = g.out_w();
    for (int64_t row = 0; row < g.planes * g.h; ++row) {
      for (int64_t x = 0; x < g.w; ++x) {
        Acc acc = Acc(0);
        for (int64_t dy = 0; dy < g.sh; ++dy) {
          const T* src = in + (row * g.sh + dy) * ow + x * g.sw;
          for (int64_t dx = 0; dx < g.sw; ++dx) acc += static_cast<Acc>(src[dx]);
        }
        out[row * g.w + x] = static_cast<T>(acc);
      }
    }
    return absl::OkStatus();
  }
};

// upsample_nearest2d's kernel on device D, one class per element width (the op moves
// bits; KPS_REGISTER_DEVICE_KERNELS_BY_WIDTH).
template <DeviceType D, typename Bits>
class UpsampleNearest2dKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const UpsampleGeometry g, ResolveUpsample(*ctx, false));
    if (ctx->output(0).numel() == 0) return absl::OkStatus();
    KPS_ASSIGN_OR_RETURN(const Tensor x, internal::AsContiguous(ctx->input(0), ctx->stream()));
    return UpsampleOn<D>::template Forward<Bits>(static_cast<const Bits*>(x.raw_data()),
                                                 static_cast<Bits*>(ctx->output(0).raw_data()), g, ctx->stream());
  }
};

// upsample_nearest2d_backward's kernel on device D.
template <DeviceType D, typename T>
class UpsampleNearest2dBackwardKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const UpsampleGeometry g, ResolveUpsample(*ctx, true));
    if (ctx->output(0).numel() == 0) return absl::OkStatus();
    KPS_ASSIGN_OR_RETURN(const Tensor go, internal::AsContiguous(ctx->input(0), ctx->stream()));
    return UpsampleOn<D>::template Backward<T>(go.data<T>(), ctx->output(0).data<T>(), g, ctx->stream());
  }
};

}  // namespace upsample
}  // namespace kps
