// conv1d: the call's geometry, and the op's kernel (one class template over the device,
// Conv1dKernel) with its CPU part; the CUDA part and the registration are in
// conv1d_cuda.cu.
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/status/statusor.h"
#include "functors/mp_type.h"
#include "ops/common/contiguous.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"

namespace kps {
namespace conv {

#define KPS_CONV1D_CPP_TYPES KPS_FLOAT_CPP_TYPES

// out[i] = full[i + offset], i < length, where full[k] = sum_j w[j] * x[k - j] over the j
// with 0 <= j < m and 0 <= k - j < n (true convolution: the filter is flipped, as in
// numpy.convolve). full: length n + m - 1, offset 0; same: max(n, m), offset
// (min(n, m) - 1) / 2 (numpy's centring); valid: max(n, m) - min(n, m) + 1, offset
// min(n, m) - 1. An empty x or w gives an empty output in every mode.
struct Conv1dGeometry {
  int64_t n = 0, m = 0, length = 0, offset = 0;
};

// Checks the call (1-D x and w of one floating dtype; mode full/same/valid).
absl::StatusOr<Conv1dGeometry> ResolveConv1d(const CallView& call);

// The device part: Conv1dOn<D>::Run<T>(ctx, g, x, w) writes output 0 from the contiguous
// x and w, each output summed over j in increasing order in MPType<T>.
template <DeviceType D>
struct Conv1dOn;

template <>
struct Conv1dOn<DeviceType::kCpu> {
  template <typename T>
  static absl::Status Run(const KernelContext& ctx, const Conv1dGeometry& g, const Tensor& x, const Tensor& w) {
    using Acc = MPType<T>;
    const T* xs = x.data<T>();
    const T* ws = w.data<T>();
    T* out = ctx.output(0).data<T>();
    for (int64_t i = 0; i < g.length; ++i) {
      const int64_t k = i + g.offset;
      const int64_t jlo = std::max<int64_t>(0, k - (g.n - 1)), jhi = std::min(g.m - 1, k);
      Acc acc = Acc(0);
      for (int64_t j = jlo; j <= jhi; ++j) acc += static_cast<Acc>(ws[j]) * static_cast<Acc>(xs[k - j]);
      out[i] = static_cast<T>(acc);
    }
    return absl::OkStatus();
  }
};

// conv1d's kernel on device D: the geometry and the contiguous signals, then the
// device's part.
template <DeviceType D, typename T>
class Conv1dKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const Conv1dGeometry g, ResolveConv1d(*ctx));
    if (g.length == 0) return absl::OkStatus();
    KPS_ASSIGN_OR_RETURN(const Tensor x, internal::AsContiguous(ctx->input(0), ctx->stream()));
    KPS_ASSIGN_OR_RETURN(const Tensor w, internal::AsContiguous(ctx->input(1), ctx->stream()));
    return Conv1dOn<D>::template Run<T>(*ctx, g, x, w);
  }
};

}  // namespace conv
}  // namespace kps
