// CUDA kernels of upsample_nearest2d and its backward.
//
// - Upsample2xKernel (scale 2 x 2, the common case): a thread reads K neighbouring
//   elements of an input row with one load (8 bytes when W and the pointers allow) and
//   writes the 2K duplicated elements to each of the two output rows they land on as one
//   16-byte store per row, or, with K = 1, as one two-element pack per row. The forward only
//   moves bits, so it is instantiated per element width (1, 2, 4, 8 bytes), not per dtype.
// - UpsampleKernel (any scales): a thread per output element.
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
#include "ops/elementwise/copy_ops.h"
#include "ops/common/contiguous.h"
#include "ops/upsample/upsample_ops.h"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace upsample {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 30;

template <typename U, int K>
struct alignas(sizeof(U) * K) Pack {
  U v[K];
};

template <typename U, int K, typename Index>
__global__ void __launch_bounds__(kBlock) Upsample2xKernel(const U* __restrict__ in, U* __restrict__ out, Index runs,
                                                          Index runs_per_row) {
  // One store of all 2K duplicated elements per output row (16 bytes whenever K > 1),
  // rather than KO = K, two 8-byte stores per row interleaved across the warp.
  // upsample2x_f32, H100: one store per row 2911 GB/s, two 2678.
  constexpr int KO = 2 * K;      // elements per store
  constexpr int P = 2 * K / KO;  // stores per output row (1)
  const Index out_row_packs = runs_per_row * (2 * K / KO);
  for (Index t = static_cast<Index>(blockIdx.x) * kBlock + threadIdx.x; t < runs;
       t += static_cast<Index>(gridDim.x) * kBlock) {
    const Index row = t / runs_per_row;
    const Index col = t - row * runs_per_row;
    const Pack<U, K> a = reinterpret_cast<const Pack<U, K>*>(in)[t];
    Pack<U, KO> o[P];
#pragma unroll
    for (int e = 0; e < 2 * K; ++e) o[e / KO].v[e % KO] = a.v[e / 2];
    Pack<U, KO>* dst = reinterpret_cast<Pack<U, KO>*>(out) + 2 * row * out_row_packs + col * P;
#pragma unroll
    for (int p = 0; p < P; ++p) {
      dst[p] = o[p];
      dst[out_row_packs + p] = o[p];
    }
  }
}

template <typename U, typename Index>
__global__ void __launch_bounds__(kBlock) UpsampleKernel(const U* __restrict__ in, U* __restrict__ out, Index total,
                                                        Index h, Index w, Index sh, Index sw) {
  const Index ow = w * sw, oh = h * sh;
  for (Index t = static_cast<Index>(blockIdx.x) * kBlock + threadIdx.x; t < total;
       t += static_cast<Index>(gridDim.x) * kBlock) {
    const Index r = t / ow;
    const Index ox = t - r * ow;
    const Index plane = r / oh;
    const Index oy = r - plane * oh;
    out[t] = in[(plane * h + oy / sh) * w + ox / sw];
  }
}

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
    grad_in[t] = static_cast<T>(acc);
  }
}

bool AlignedTo(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <typename U, int K, typename Index>
absl::Status Launch2x(const U* in, U* out, const UpsampleGeometry& g, cudaStream_t stream) {
  const int64_t runs = g.planes * g.h * g.w / K;
  KPS_RETURN_IF_ERROR((LaunchKernel<&Upsample2xKernel<U, K, Index>>("Upsample2xKernel",
                                                                    BlocksFor(runs, kBlock, kMaxBlocks), kBlock, 0,
                                                                    stream, in, out, static_cast<Index>(runs),
                                                                    static_cast<Index>(g.w / K))));
  return absl::OkStatus();
}

template <typename U, typename Index>
absl::Status LaunchForIndex(const U* in, U* out, const UpsampleGeometry& g, cudaStream_t stream) {
  // 8-byte loads, so that the 2 x kVec outputs of a lane fill one 16-byte store per output
  // row and a warp's stores cover 512 contiguous bytes (16-byte loads would give each
  // lane two stores per row, 32 bytes apart across the warp: measured 1934 GB/s).
  constexpr int kVec = sizeof(U) >= 8 ? 1 : 8 / sizeof(U);
  if (g.sh == 2 && g.sw == 2) {
    if (g.w % kVec == 0 && AlignedTo(in, kVec * sizeof(U)) && AlignedTo(out, 2 * kVec * sizeof(U))) {
      return Launch2x<U, kVec, Index>(in, out, g, stream);
    }
    if (AlignedTo(out, 2 * sizeof(U))) return Launch2x<U, 1, Index>(in, out, g, stream);
  }
  const int64_t total = g.planes * g.out_h() * g.out_w();
  KPS_RETURN_IF_ERROR((LaunchKernel<&UpsampleKernel<U, Index>>(
      "UpsampleKernel", BlocksFor(total, kBlock, kMaxBlocks), kBlock, 0, stream, in, out, static_cast<Index>(total),
      static_cast<Index>(g.h), static_cast<Index>(g.w), static_cast<Index>(g.sh), static_cast<Index>(g.sw))));
  return absl::OkStatus();
}

template <typename U>
absl::Status LaunchUpsample(const void* in, void* out, const UpsampleGeometry& g, cudaStream_t stream) {
  const bool narrow = g.planes * g.out_h() * g.out_w() < (int64_t{1} << 31);
  if (narrow) return LaunchForIndex<U, uint32_t>(static_cast<const U*>(in), static_cast<U*>(out), g, stream);
  return LaunchForIndex<U, uint64_t>(static_cast<const U*>(in), static_cast<U*>(out), g, stream);
}

// One class per element width (KPS_REGISTER_KERNEL_BY_WIDTH): the forward op moves bits.
template <typename Bits>
class UpsampleCudaKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const UpsampleGeometry g, ResolveUpsample(*ctx, false));
    if (ctx->output(0).numel() == 0) return absl::OkStatus();
    KPS_ASSIGN_OR_RETURN(const Tensor x, internal::AsContiguous(ctx->input(0), ctx->stream()));
    return LaunchUpsample<Bits>(x.raw_data(), ctx->output(0).raw_data(), g, ctx->cuda_stream());
  }
};

template <typename T>
class UpsampleBackwardCudaKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const UpsampleGeometry g, ResolveUpsample(*ctx, true));
    const int64_t total = ctx->output(0).numel();
    if (total == 0) return absl::OkStatus();
    KPS_ASSIGN_OR_RETURN(const Tensor go, internal::AsContiguous(ctx->input(0), ctx->stream()));
    const T* in = go.data<T>();
    T* out = ctx->output(0).data<T>();
    if (go.numel() < (int64_t{1} << 31)) {
      KPS_RETURN_IF_ERROR((LaunchKernel<&UpsampleBackwardKernel<T, uint32_t>>(
          "UpsampleBackwardKernel", BlocksFor(total, kBlock, kMaxBlocks), kBlock, 0, ctx->cuda_stream(), in, out,
          static_cast<uint32_t>(total), static_cast<uint32_t>(g.w), static_cast<uint32_t>(g.sh),
          static_cast<uint32_t>(g.sw))));
    } else {
      KPS_RETURN_IF_ERROR((LaunchKernel<&UpsampleBackwardKernel<T, uint64_t>>(
          "UpsampleBackwardKernel", BlocksFor(total, kBlock, kMaxBlocks), kBlock, 0, ctx->cuda_stream(), in, out,
          static_cast<uint64_t>(total), static_cast<uint64_t>(g.w), static_cast<uint64_t>(g.sh),
          static_cast<uint64_t>(g.sw))));
    }
    return absl::OkStatus();
  }
};

}  // namespace

KPS_REGISTER_KERNEL_BY_WIDTH("upsample_nearest2d", DeviceType::kCuda, UpsampleCudaKernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("upsample_nearest2d_backward", DeviceType::kCuda, UpsampleBackwardCudaKernel,
                              ::kps::float16, ::kps::bfloat16, float, double);

}  // namespace upsample
}  // namespace kps
