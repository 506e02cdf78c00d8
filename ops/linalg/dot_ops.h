// dot: shared by its schema (dot_op.cc) and its kernel, one class template over the
// device (DotKernel, registered in dot_cuda.cu), with the CPU part here and the CUDA part
// (DotOn<kCuda>) in dot_cuda.cu.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "functors/mp_type.h"
#include "ops/common/contiguous.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace linalg {

#define KPS_DOT_CPP_TYPES KPS_FLOAT_CPP_TYPES

// The accumulator: float for float16, bfloat16 and float32, double for float64.
template <typename T>
using DotAcc = MPType<T>;

// The device part of dot: DotOn<D>::Run<T>(ctx, x, y) writes sum x[i] * y[i] of the
// contiguous x and y (of one length) to the call's scalar output.
template <DeviceType D>
struct DotOn;

template <>
struct DotOn<DeviceType::kCpu> {
  template <typename T>
  static absl::Status Run(const KernelContext& ctx, const Tensor& x, const Tensor& y) {
    using Acc = DotAcc<T>;
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
    ctx.output(0).data<T>()[0] = static_cast<T>(total);
    return absl::OkStatus();
  }
};

// dot's kernel, on either device: x and y made contiguous, then the device's part.
template <DeviceType D, typename T>
class DotKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    const Stream stream = ctx->stream();
    KPS_ASSIGN_OR_RETURN(const Tensor x, internal::AsContiguous(ctx->input(0), stream));
    KPS_ASSIGN_OR_RETURN(const Tensor y, internal::AsContiguous(ctx->input(1), stream));
    return DotOn<D>::template Run<T>(*ctx, x, y);
  }
};

}  // namespace linalg
}  // namespace kps
