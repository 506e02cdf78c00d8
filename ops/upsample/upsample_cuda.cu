// CUDA kernels of upsample_nearest2d and its backward.
//
// - UpsampleRunsKernel (integer scales with scale_w <= 4; 2 x 2 the common case): a thread
//   reads K neighbouring elements of an input row with one load (ReadData; 8 bytes when W
//   and the pointers allow) and writes them repeated scale_w times to each of the scale_h
//   output rows they land on (StoreRepeated: one 16-byte store per row for 2 x 2, or a
//   two-element pack with K = 1). The forward only moves bits, so it is instantiated per
//   element width (1, 2, 4, 8 bytes), not per dtype.
// - UpsampleKernel (any scales): a thread per output element (ReadDataGather through
//   UpsampleSource, WriteData).
// - UpsampleBackwardKernel: a thread per grad_in element sums its scale_h x scale_w window
//   of grad_out in row-major order (float for 16-bit types): no atomics, deterministic.
// Offsets are 32-bit when the larger side has fewer than 2^31 elements (so that an index
// plus the grid stride cannot wrap), else 64-bit.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "functors/mp_type.h"
#include "ops/common/element_bits.cuh"
#include "registry/data_type.h"
#include "ops/common/contiguous.h"
#include "ops/upsample/upsample_ops.h"
#include "primitives/datamover.cuh"
#include "primitives/details/fast_divmod.cuh"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace upsample {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 30;

// Integer scales with scale_w of at most 4 (2 x 2, the common case; 4x uint8, 3x float32,
// (2, 1)): a thread reads K neighbouring elements of an input row with one load (ReadData;
// 8 bytes when W and the pointers allow) and writes them repeated kSw times (StoreRepeated:
// 16-byte stores where K * kSw elements fill them) to each of the scale_h output rows they
// land on. kSh > 0 fixes scale_h at compile time (2 for 2 x 2: the two rows' stores
// unrolled), 0 takes the `sh` argument. The general kernel below writes one element per
// thread: scale 4 uint8 [16, 64, 128, 128], H200: 0.693 ms against PyTorch's 0.530.
// All of a lane's duplicated elements go to each output row as one store, rather than two
// 8-byte stores per row interleaved across the warp.
// upsample2x_f32, H100: one store per row 2911 GB/s, two 2678.
template <typename U, int K, int kSw, int kSh, typename Index>
__global__ void __launch_bounds__(kBlock) UpsampleRunsKernel(const U* __restrict__ in, U* __restrict__ out, Index runs,
                                                            Index runs_per_row, Index sh) {
  const Index rows = kSh > 0 ? Index{kSh} : sh;
  const Index out_row = runs_per_row * (kSw * K);  // elements per output row
  for (Index t = static_cast<Index>(blockIdx.x) * kBlock + threadIdx.x; t < runs;
       t += static_cast<Index>(gridDim.x) * kBlock) {
    const Index row = t / runs_per_row;
    const Index col = t - row * runs_per_row;
    // The block's runs [t - threadIdx.x, + kBlock) are a tile of kBlock * K elements; this
    // lane's K of them are in range (runs counts whole runs), so the load is the full-tile
    // (vectorized, one K-element load) form even in the grid's last, partial tile.
    U a[K];
    ReadData<U, K, 1, false>(a, in + (t - threadIdx.x) * K, kBlock * K);
    U* dst = out + rows * row * out_row + col * (kSw * K);
#pragma unroll
    for (Index r = 0; r < rows; ++r) StoreRepeated<U, K, kSw>(dst + r * out_row, a);
  }
}

// The input element that output element t reads: (plane * h + oy / sh) * w + ox / sw,
// with 64-bit divisions.
template <typename Index>
struct UpsampleSource {
  Index h, w, sh, sw, oh, ow;
  UpsampleSource(const UpsampleGeometry& g)  // NOLINT: built from the geometry on the host
      : h(g.h), w(g.w), sh(g.sh), sw(g.sw), oh(g.out_h()), ow(g.out_w()) {}
  __device__ __forceinline__ Index operator()(Index t) const {
    const Index r = t / ow;
    const Index ox = t - r * ow;
    const Index plane = r / oh;
    const Index oy = r - plane * oh;
    return (plane * h + oy / sh) * w + ox / sw;
  }
};

// The same for outputs of fewer than 2^31 elements, each division a multiply-high and a
// shift (FastDivMod): the kernel is bound by its four divisions per element, not by memory.
template <>
struct UpsampleSource<uint32_t> {
  details::FastDivMod ow, oh, sh, sw;
  uint32_t h, w;
  UpsampleSource(const UpsampleGeometry& g)  // NOLINT: built from the geometry on the host
      : ow(static_cast<uint32_t>(g.out_w())),
        oh(static_cast<uint32_t>(g.out_h())),
        sh(static_cast<uint32_t>(g.sh)),
        sw(static_cast<uint32_t>(g.sw)),
        h(static_cast<uint32_t>(g.h)),
        w(static_cast<uint32_t>(g.w)) {}
  __device__ __forceinline__ uint32_t operator()(uint32_t t) const {
    const auto r = ow.Divmod(t);            // r.quotient: plane * oh + oy; r.remainder: ox
    const auto p = oh.Divmod(r.quotient);   // p.quotient: plane; p.remainder: oy
    return (p.quotient * h + sh.Div(p.remainder)) * w + sw.Div(r.remainder);
  }
};

template <typename U, typename Index>
__global__ void __launch_bounds__(kBlock) UpsampleKernel(const U* __restrict__ in, U* __restrict__ out, Index total,
                                                        UpsampleSource<Index> source) {
  for (Index t = static_cast<Index>(blockIdx.x) * kBlock + threadIdx.x; t < total;
       t += static_cast<Index>(gridDim.x) * kBlock) {
    // A thread per output element: a tile of kBlock elements at t - threadIdx.x.
    const Index tile = t - threadIdx.x;
    U v[1];
    ReadDataGather<U, 1, 1, false>(v, in, tile, source, total);
    WriteData<U, 1, 1, false>(out + tile, v, kBlock);
  }
}

// A thread per grad_in element sums its sh x sw window of grad_out. The window's loads
// stay a plain loop: its extent is a run-time value with no bound, and ReadData's forms
// need a compile-time NX per thread (a cap would add a second loop level to every
// window). The store is WriteData's.
template <typename T, typename Index>
__global__ void __launch_bounds__(kBlock) UpsampleBackwardKernel(const T* __restrict__ grad_out,
                                                                T* __restrict__ grad_in, Index total, Index w,
                                                                Index sh, Index sw) {
  using Acc = MPType<T>;
  const Index ow = w * sw;
  for (Index t = static_cast<Index>(blockIdx.x) * kBlock + threadIdx.x; t < total;
       t += static_cast<Index>(gridDim.x) * kBlock) {
    const Index row = t / w;  // plane * h + y
    const Index x = t - row * w;
    const T* src = grad_out + row * sh * ow + x * sw;
    Acc acc = Acc(0);
    for (Index dy = 0; dy < sh; ++dy) {
      for (Index dx = 0; dx < sw; ++dx) acc += static_cast<Acc>(src[dy * ow + dx]);
    }
    const T sum[1] = {static_cast<T>(acc)};
    WriteData<T, 1, 1, false>(grad_in + (t - threadIdx.x), sum, kBlock);
  }
}

bool AlignedTo(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// UpsampleRunsKernel where the pointers and W allow its vectors (its launch's status goes
// to *status); false when they do not.
template <typename U, int K, int kSw, int kSh, typename Index>
bool LaunchRuns(const U* in, U* out, const UpsampleGeometry& g, cudaStream_t stream, absl::Status* status) {
  constexpr int kStoreVec = details::VectorSizeFor<U, K * kSw>();
  if (g.w % K != 0 || !AlignedTo(in, K * sizeof(U)) || !AlignedTo(out, kStoreVec * sizeof(U))) return false;
  const int64_t runs = g.planes * g.h * g.w / K;
  status->Update(LaunchKernel<&UpsampleRunsKernel<U, K, kSw, kSh, Index>>(
      "UpsampleRunsKernel", BlocksFor(runs, kBlock, kMaxBlocks), kBlock, 0, stream, in, out, static_cast<Index>(runs),
      static_cast<Index>(g.w / K), static_cast<Index>(g.sh)));
  return true;
}

template <typename U, typename Index>
absl::Status LaunchForIndex(const U* in, U* out, const UpsampleGeometry& g, cudaStream_t stream) {
  // 8-byte loads, so that the 2 x kVec outputs of a lane fill one 16-byte store per output
  // row and a warp's stores cover 512 contiguous bytes (16-byte loads would give each
  // lane two stores per row, 32 bytes apart across the warp: measured 1934 GB/s).
  constexpr int kVec = sizeof(U) >= 8 ? 1 : 8 / sizeof(U);
  absl::Status status;
  if (g.sh == 2 && g.sw == 2) {
    // A lane's K elements, repeated, fill one 16-byte store per row; else a two-element pack.
    if (LaunchRuns<U, kVec, 2, 2, Index>(in, out, g, stream, &status)) return status;
    if (LaunchRuns<U, 1, 2, 2, Index>(in, out, g, stream, &status)) return status;
  }
  if (g.sw == 1 && LaunchRuns<U, kVec, 1, 0, Index>(in, out, g, stream, &status)) return status;
  if (g.sw == 2 && LaunchRuns<U, kVec, 2, 0, Index>(in, out, g, stream, &status)) return status;
  if (g.sw == 3 && LaunchRuns<U, kVec, 3, 0, Index>(in, out, g, stream, &status)) return status;
  if (g.sw == 4 && LaunchRuns<U, kVec, 4, 0, Index>(in, out, g, stream, &status)) return status;
  const int64_t total = g.planes * g.out_h() * g.out_w();
  KPS_RETURN_IF_ERROR((LaunchKernel<&UpsampleKernel<U, Index>>("UpsampleKernel", BlocksFor(total, kBlock, kMaxBlocks),
                                                                 kBlock, 0, stream, in, out, static_cast<Index>(total),
                                                                 UpsampleSource<Index>(g))));
  return absl::OkStatus();
}

template <typename U>
absl::Status LaunchUpsample(const void* in, void* out, const UpsampleGeometry& g, cudaStream_t stream) {
  const bool narrow = g.planes * g.out_h() * g.out_w() < (int64_t{1} << 31);
  if (narrow) return LaunchForIndex<U, uint32_t>(static_cast<const U*>(in), static_cast<U*>(out), g, stream);
  return LaunchForIndex<U, uint64_t>(static_cast<const U*>(in), static_cast<U*>(out), g, stream);
}

}  // namespace

template <>
struct UpsampleOn<DeviceType::kCuda> {
  template <typename U>
  static absl::Status Forward(const U* in, U* out, const UpsampleGeometry& g, const Stream& stream) {
    return LaunchUpsample<U>(in, out, g, stream.cuda_stream());
  }
  template <typename T>
  static absl::Status Backward(const T* in, T* out, const UpsampleGeometry& g, const Stream& stream) {
    const int64_t total = g.planes * g.h * g.w;
    if (total * g.sh * g.sw < (int64_t{1} << 31)) {
      return LaunchKernel<&UpsampleBackwardKernel<T, uint32_t>>(
          "UpsampleBackwardKernel", BlocksFor(total, kBlock, kMaxBlocks), kBlock, 0, stream.cuda_stream(), in, out,
          static_cast<uint32_t>(total), static_cast<uint32_t>(g.w), static_cast<uint32_t>(g.sh),
          static_cast<uint32_t>(g.sw));
    }
    return LaunchKernel<&UpsampleBackwardKernel<T, uint64_t>>(
        "UpsampleBackwardKernel", BlocksFor(total, kBlock, kMaxBlocks), kBlock, 0, stream.cuda_stream(), in, out,
        static_cast<uint64_t>(total), static_cast<uint64_t>(g.w), static_cast<uint64_t>(g.sh),
        static_cast<uint64_t>(g.sw));
  }
};

KPS_REGISTER_DEVICE_KERNELS_BY_WIDTH("upsample_nearest2d", UpsampleNearest2dKernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS("upsample_nearest2d_backward", UpsampleNearest2dBackwardKernel, ::kps::float16,
                            ::kps::bfloat16, float, double);

}  // namespace upsample
}  // namespace kps
