// The CUDA side of the scans (first version: correct, deterministic, not yet fast for
// long single rows or long columns).
//
// - ScanRowsKernel (the scanned dim is the innermost, inner == 1): a block per row walks
//   it in tiles of 256 x 4 elements; each tile is one block-wide scan (kps::Cumsum:
//   sequential in each thread, shuffles across lanes and warps) whose total is carried
//   into the next tile.
// - ScanColsKernel (inner > 1): a thread per column walks it sequentially; neighbouring
//   threads own neighbouring columns, so every step is one coalesced row access.
// Both combine in a fixed order, so the output is bitwise reproducible. Still to do
// (issue 6): a single-pass decoupled look-back over tiles for long rows (a 1-D scan runs
// in one block here), and columns split across blocks when outer * inner is small.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ops/scan/scan_ops.h"
#include "primitives/cumsum.cuh"
#include "registry/status.h"

namespace kps {
namespace scan {

inline constexpr int kScanBlock = 256;
inline constexpr int kScanItems = 4;

template <typename Scanner>
struct ScanFn {
  Scanner s;
  __device__ __forceinline__ typename Scanner::Acc operator()(const typename Scanner::Acc& a,
                                                              const typename Scanner::Acc& b) const {
    return s.Combine(a, b);
  }
  __device__ __forceinline__ typename Scanner::Acc initial() const { return s.Identity(); }
};

template <typename Scanner>
__device__ __forceinline__ void WriteScan(const Scanner& s, const typename Scanner::Acc& a, bool exclusive, int64_t off,
                                          typename Scanner::Out* out, int64_t* index) {
  out[off] = exclusive ? s.ExclusiveValue(a) : s.Value(a);
  if constexpr (Scanner::kHasIndex) index[off] = s.Index(a);
}

template <typename Scanner>
__global__ void __launch_bounds__(kScanBlock) ScanRowsKernel(const typename Scanner::In* __restrict__ x, Scanner s,
                                                            ScanShape sh, typename Scanner::Out* __restrict__ out,
                                                            int64_t* __restrict__ index) {
  using Acc = typename Scanner::Acc;
  constexpr int64_t kTile = int64_t{kScanBlock} * kScanItems;
  const ScanFn<Scanner> fn{s};
  const int64_t L = sh.length;
  for (int64_t row = blockIdx.x; row < sh.outer; row += gridDim.x) {
    const int64_t base = row * L;
    Acc carry = s.Identity();
    for (int64_t t0 = 0; t0 < L; t0 += kTile) {
      Acc items[kScanItems], scanned[kScanItems], total;
#pragma unroll
      for (int j = 0; j < kScanItems; ++j) {
        const int64_t p = t0 + threadIdx.x * kScanItems + j;
        const int64_t e = sh.reverse ? L - 1 - p : p;
        items[j] = p < L ? s.Make(x[base + e], e) : s.Identity();
      }
      Cumsum<Acc, Acc, kScanItems, kScanBlock>(scanned, items, fn, sh.exclusive, &total);
#pragma unroll
      for (int j = 0; j < kScanItems; ++j) {
        const int64_t p = t0 + threadIdx.x * kScanItems + j;
        if (p < L) WriteScan(s, s.Combine(carry, scanned[j]), sh.exclusive, base + (sh.reverse ? L - 1 - p : p), out, index);
      }
      carry = s.Combine(carry, total);
    }
  }
}

template <typename Scanner>
__global__ void __launch_bounds__(256) ScanColsKernel(const typename Scanner::In* __restrict__ x, Scanner s,
                                                     ScanShape sh, typename Scanner::Out* __restrict__ out,
                                                     int64_t* __restrict__ index) {
  using Acc = typename Scanner::Acc;
  const int64_t cols = sh.outer * sh.inner;
  const int64_t L = sh.length;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = c / sh.inner;
    const int64_t base = o * L * sh.inner + (c - o * sh.inner);
    Acc acc = s.Identity();
#pragma unroll 4
    for (int64_t p = 0; p < L; ++p) {
      const int64_t e = sh.reverse ? L - 1 - p : p;
      const int64_t off = base + e * sh.inner;
      const Acc prefix = acc;
      acc = s.Combine(acc, s.Make(x[off], e));
      WriteScan(s, sh.exclusive ? prefix : acc, sh.exclusive, off, out, index);
    }
  }
}

template <typename Scanner>
absl::Status LaunchScan(const typename Scanner::In* x, const ScanShape& sh, const Scanner& s,
                        typename Scanner::Out* out, int64_t* index, const Stream& stream) {
  constexpr int64_t kMaxGrid = int64_t{1} << 30;
  if (sh.inner == 1) {
    ScanRowsKernel<Scanner><<<static_cast<unsigned>(std::min(sh.outer, kMaxGrid)), kScanBlock, 0,
                              stream.cuda_stream()>>>(x, s, sh, out, index);
    KPS_RETURN_IF_LAUNCH_ERROR("ScanRowsKernel");
  } else {
    const int64_t blocks = (sh.outer * sh.inner + 255) / 256;
    ScanColsKernel<Scanner><<<static_cast<unsigned>(std::min(blocks, kMaxGrid)), 256, 0, stream.cuda_stream()>>>(
        x, s, sh, out, index);
    KPS_RETURN_IF_LAUNCH_ERROR("ScanColsKernel");
  }
  return absl::OkStatus();
}

template <template <typename> class Maker>
struct CudaScanKernel {
  template <typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      return RunScan<Maker, T>(ctx, [ctx](const T* x, const ScanShape& sh, const auto& s, auto* out, int64_t* index) {
        return LaunchScan(x, sh, s, out, index, ctx->stream());
      });
    }
  };
};

}  // namespace scan
}  // namespace kps
