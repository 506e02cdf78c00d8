// The CUDA kernels of index_add and index_add_, instantiated per dtype group by
// index_add_cuda_float.cu and index_add_cuda_int.cu.
//
// Every call first checks the index on the device (IndexPrepKernel: the first position
// holding a value outside [0, dim_size) goes to a flag; nothing reads or writes through a
// bad index) and ends by reading that flag back (a stream synchronization), so a bad index
// comes back as a Status from the call. Each later kernel returns at once when the flag
// is set, so a failed call leaves x (index_add_) unchanged. Then one of two paths:
//
// - Sorted (deterministic = true, integer dtypes, and out-of-place calls whose slices are
//   at least 64 bytes): a stable radix sort of (index, position) pairs gives each
//   destination the run of its sources in position order; IndexAddGatherKernel then has
//   each destination slice (a group of 1-32 lanes, 16-byte vectors) read x, sum its
//   sources in that order (IndexAcc) and write x + alpha * sum once. No atomics, bitwise
//   reproducible, and out of place it is one streaming pass over x and out (the sort
//   costs about 20 bytes per index).
// - Atomic (the rest: floats without `deterministic`): out = x (a copy) and every source
//   element is added with an atomic; float16/bfloat16 add two neighbours with one
//   half2/bfloat162 atomic wherever the pair is 4-byte aligned, and a single 16-bit
//   atomic at the ends of a slice.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "ops/index/index_add_ops.h"
#include "ops/ops.h"
#include "registry/allocator.h"
#include "registry/status.h"

namespace kps {
namespace indexing {

inline constexpr int kIndexAddBlock = 256;

template <typename T, int K>
struct alignas(sizeof(T) * K) IndexAddPack {
  T v[K];
};

// Each lane owns kPer vectors of a slice per pass (two, unless the accumulators would
// take more than 32 bytes per vector), and issues its x loads before it looks at the run
// bounds, so a slice's x and its bounds are in flight together.
//
// At least 5 resident blocks per SM (at most 51 registers): uncapped, the kernel took 58
// registers (4 blocks, 36% achieved occupancy) and index_add_f32_1Mx256 ran at 2213 GB/s;
// capped at 4 blocks 2425, at 5 blocks 2560 (H100, 2026-11-22; 6 and 8 spill).
template <typename T, int VEC, bool kInPlace>
__global__ void __launch_bounds__(kIndexAddBlock, 5) IndexAddGatherKernel(
    const T* x, const T* __restrict__ src, T* out, const uint32_t* __restrict__ positions,
    const uint32_t* __restrict__ seg_start, const uint32_t* __restrict__ seg_end, int64_t outer, int64_t dim_size,
    int64_t count, int64_t inner, IndexAcc<T> alpha, int lanes_log2, const unsigned long long* first_bad) {
  using Acc = IndexAcc<T>;
  using V = IndexAddPack<T, VEC>;
  constexpr int kPer = sizeof(Acc) * VEC > 32 ? 1 : 2;
  if (*first_bad != kNoBadIndex) return;
  const int lanes = 1 << lanes_log2;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * kIndexAddBlock + threadIdx.x;
  const int lane = static_cast<int>(tid & (lanes - 1));
  const int64_t groups = (static_cast<int64_t>(gridDim.x) * kIndexAddBlock) >> lanes_log2;
  const int64_t rows = outer * dim_size;
  const int64_t nvec = inner / VEC;
  for (int64_t row = tid >> lanes_log2; row < rows; row += groups) {
    const int64_t o = row / dim_size;
    const int64_t r = row - o * dim_size;
    const uint32_t s = seg_start[r], e = seg_end[r];
    // In place, a slice without sources is not touched at all (x is out).
    if constexpr (kInPlace) {
      if (s == e) continue;
    }
    const V* xr = reinterpret_cast<const V*>(x + row * inner);
    V* outr = reinterpret_cast<V*>(out + row * inner);
    const T* src_o = src + o * count * inner;
    for (int64_t v0 = lane; v0 < nvec; v0 += int64_t{kPer} * lanes) {
      V xv[kPer];
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        if (v0 + u * lanes < nvec) xv[u] = xr[v0 + u * lanes];
      }
      if (s == e) {  // an exact copy (x + alpha * 0 would turn -0 into +0)
#pragma unroll
        for (int u = 0; u < kPer; ++u) {
          if (v0 + u * lanes < nvec) outr[v0 + u * lanes] = xv[u];
        }
        continue;
      }
      Acc sum[kPer][VEC];
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) sum[u][k] = Acc(0);
      }
      for (uint32_t j = s; j < e; ++j) {
        const V* sr = reinterpret_cast<const V*>(src_o + static_cast<int64_t>(positions[j]) * inner);
#pragma unroll
        for (int u = 0; u < kPer; ++u) {
          if (v0 + u * lanes < nvec) {
            const V a = sr[v0 + u * lanes];
#pragma unroll
            for (int k = 0; k < VEC; ++k) sum[u][k] += static_cast<Acc>(a.v[k]);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        if (v0 + u * lanes < nvec) {
          V res;
#pragma unroll
          for (int k = 0; k < VEC; ++k) res.v[k] = static_cast<T>(static_cast<Acc>(xv[u].v[k]) + alpha * sum[u][k]);
          outr[v0 + u * lanes] = res;
        }
      }
    }
  }
}

// float and double: one atomic per source element.
template <typename T>
__global__ void __launch_bounds__(kIndexAddBlock) IndexAddScatterKernel(
    const T* __restrict__ src, const uint32_t* __restrict__ keys, T* out, int64_t outer, int64_t dim_size,
    int64_t count, int64_t inner, T alpha, const unsigned long long* first_bad) {
  if (*first_bad != kNoBadIndex) return;
  const int64_t total = outer * count * inner;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kIndexAddBlock + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * kIndexAddBlock) {
    const int64_t t = e / inner;
    const int64_t k = e - t * inner;
    const int64_t o = t / count;
    const int64_t i = t - o * count;
    const uint32_t key = keys[i];
    if (key >= dim_size) continue;
    atomicAdd(out + (o * dim_size + key) * inner + k, alpha * src[e]);
  }
}

template <typename T>
struct Pair16;
template <>
struct Pair16<__half> {
  using Type = __half2;
  static __device__ __forceinline__ Type Make(float a, float b) { return __floats2half2_rn(a, b); }
};
template <>
struct Pair16<__nv_bfloat16> {
  using Type = __nv_bfloat162;
  static __device__ __forceinline__ Type Make(float a, float b) { return __floats2bfloat162_rn(a, b); }
};

// float16 and bfloat16: a thread per aligned pair slot of a destination slice. A slice
// starting at an odd element (relative to 4-byte alignment) has a lone first element, and
// one of odd length a lone last element: those take a 16-bit atomic, every full pair one
// half2/bfloat162 atomic (one 32-bit atomic unit instead of two).
template <typename T>
__global__ void __launch_bounds__(kIndexAddBlock) IndexAddScatterPairKernel(
    const T* __restrict__ src, const uint32_t* __restrict__ keys, T* out, int64_t outer, int64_t dim_size,
    int64_t count, int64_t inner, float alpha, const unsigned long long* first_bad) {
  if (*first_bad != kNoBadIndex) return;
  const int64_t slots = inner / 2 + 1;
  const int64_t total = outer * count * slots;
  const int64_t base_parity = static_cast<int64_t>((reinterpret_cast<uintptr_t>(out) / sizeof(T)) & 1);
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kIndexAddBlock + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * kIndexAddBlock) {
    const int64_t t = e / slots;
    const int64_t s = e - t * slots;
    const int64_t o = t / count;
    const int64_t i = t - o * count;
    const uint32_t key = keys[i];
    if (key >= dim_size) continue;
    const int64_t d0 = (o * dim_size + key) * inner;
    const int64_t lead = (d0 + base_parity) & 1;
    const int64_t k0 = 2 * s - lead, k1 = k0 + 1;
    const bool in0 = k0 >= 0 && k0 < inner, in1 = k1 < inner;
    const T* sr = src + t * inner;
    if (in0 && in1) {
      atomicAdd(reinterpret_cast<typename Pair16<T>::Type*>(out + d0 + k0),
                Pair16<T>::Make(alpha * static_cast<float>(sr[k0]), alpha * static_cast<float>(sr[k1])));
    } else if (in0) {
      atomicAdd(out + d0 + k0, T(alpha * static_cast<float>(sr[k0])));
    } else if (in1) {
      atomicAdd(out + d0 + k1, T(alpha * static_cast<float>(sr[k1])));
    }
  }
}

inline unsigned IndexAddGrid(int64_t threads) {
  return static_cast<unsigned>(std::min<int64_t>((threads + kIndexAddBlock - 1) / kIndexAddBlock, int64_t{1} << 30));
}

template <typename T>
absl::Status LaunchGather(const T* x, const T* src, T* out, const uint32_t* positions, const uint32_t* start,
                          const uint32_t* end, const IndexAddGeometry& g, IndexAcc<T> alpha, bool in_place,
                          const unsigned long long* first_bad, cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T) > 0 ? 16 / sizeof(T) : 1;
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = g.inner % kVec == 0 && aligned(x) && aligned(src) && aligned(out);
  const int64_t nvec = vec ? g.inner / kVec : g.inner;
  // Lanes per slice: enough for one pass of two vectors each, at most a warp.
  int lanes_log2 = 0;
  while (lanes_log2 < 5 && (int64_t{2} << lanes_log2) < nvec) ++lanes_log2;
  const unsigned grid = IndexAddGrid((g.outer * g.dim_size) << lanes_log2);
  auto launch = [&](auto kernel) {
    kernel<<<grid, kIndexAddBlock, 0, stream>>>(x, src, out, positions, start, end, g.outer, g.dim_size, g.count,
                                                g.inner, alpha, lanes_log2, first_bad);
  };
  if (vec) {
    in_place ? launch(IndexAddGatherKernel<T, kVec, true>) : launch(IndexAddGatherKernel<T, kVec, false>);
  } else {
    in_place ? launch(IndexAddGatherKernel<T, 1, true>) : launch(IndexAddGatherKernel<T, 1, false>);
  }
  KPS_RETURN_IF_LAUNCH_ERROR("IndexAddGatherKernel");
  return absl::OkStatus();
}

template <typename T>
absl::Status LaunchScatter(const T* src, const uint32_t* keys, T* out, const IndexAddGeometry& g, double alpha,
                           const unsigned long long* first_bad, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    IndexAddScatterPairKernel<T><<<IndexAddGrid(g.outer * g.count * (g.inner / 2 + 1)), kIndexAddBlock, 0, stream>>>(
        src, keys, out, g.outer, g.dim_size, g.count, g.inner, static_cast<float>(alpha), first_bad);
    KPS_RETURN_IF_LAUNCH_ERROR("IndexAddScatterPairKernel");
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    IndexAddScatterKernel<T><<<IndexAddGrid(g.outer * g.count * g.inner), kIndexAddBlock, 0, stream>>>(
        src, keys, out, g.outer, g.dim_size, g.count, g.inner, static_cast<T>(alpha), first_bad);
    KPS_RETURN_IF_LAUNCH_ERROR("IndexAddScatterKernel");
  } else {
    return absl::InternalError("index_add: the atomic path is for floating dtypes only");
  }
  return absl::OkStatus();
}

inline size_t AlignUp16(size_t n) { return (n + 15) / 16 * 16; }

template <typename T>
absl::Status RunIndexAddCuda(KernelContext* ctx, bool in_place) {
  KPS_ASSIGN_OR_RETURN(const IndexAddGeometry g, ResolveIndexAdd(*ctx));
  const Stream stream = ctx->stream();
  const cudaStream_t cs = ctx->cuda_stream();
  Tensor x = ctx->input(0);
  T* out;
  if (in_place) {
    out = x.data<T>();  // contiguous: the schema checked it
  } else {
    KPS_ASSIGN_OR_RETURN(x, ops::AsContiguous(ctx->input(0), ctx->stream()));
    out = ctx->output(0).data<T>();
  }
  auto copy_x = [&]() -> absl::Status {
    if (in_place || x.numel() == 0) return absl::OkStatus();
    KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out, x.data<T>(), x.nbytes(), cudaMemcpyDeviceToDevice, cs),
                             "cudaMemcpyAsync (index_add's copy of x)");
    return absl::OkStatus();
  };
  if (g.count == 0) return copy_x();
  if (g.count > 0x7fffffff) {
    return ctx->Error("input 'index' has ", g.count, " elements; the CUDA kernels take at most 2^31 - 1");
  }
  if (g.dim_size > 0xfffffffe) {
    return ctx->Error("dim ", g.dim, " of input 'x' has size ", g.dim_size,
                      "; the CUDA kernels take at most 2^32 - 2");
  }
  KPS_ASSIGN_OR_RETURN(const Tensor index, ops::AsContiguous(ctx->input(1), ctx->stream()));
  KPS_ASSIGN_OR_RETURN(const Tensor source, ops::AsContiguous(ctx->input(2), ctx->stream()));
  const bool work = g.outer > 0 && g.inner > 0;  // else only the index check
  const bool sorted = ctx->Attr<bool>("deterministic") || std::is_integral_v<T> ||
                      (!in_place && g.inner * static_cast<int64_t>(sizeof(T)) >= 64);
  const int n = static_cast<int>(g.count);
  int end_bit = 1;
  while (end_bit < 32 && (uint64_t{1} << end_bit) < static_cast<uint64_t>(g.dim_size)) ++end_bit;
  // One buffer: the flag, the keys, and for the sorted path the positions, the sorted
  // pairs, the run bounds and CUB's temporary storage.
  const size_t n4 = AlignUp16(static_cast<size_t>(n) * 4);
  const size_t d4 = AlignUp16(static_cast<size_t>(g.dim_size) * 4);
  size_t sort_bytes = 0;
  if (sorted && work) {
    KPS_ASSIGN_OR_RETURN(sort_bytes, SortIndexPairsTempBytes(n, end_bit));
  }
  const size_t bytes = 16 + n4 + (sorted && work ? 3 * n4 + 2 * d4 + AlignUp16(sort_bytes) : 0);
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> buffer, Storage::Allocate(bytes, DeviceType::kCuda, stream));
  char* p = static_cast<char*>(buffer->data());
  auto* first_bad = reinterpret_cast<unsigned long long*>(p);
  auto* keys = reinterpret_cast<uint32_t*>(p + 16);
  uint32_t* positions = nullptr;
  if (sorted && work) positions = reinterpret_cast<uint32_t*>(p + 16 + n4);
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_bad, 0xFF, sizeof(*first_bad), cs),
                           "cudaMemsetAsync (index_add's index flag)");
  KPS_RETURN_IF_ERROR(LaunchIndexPrep(index, g.count, g.dim_size, keys, positions, first_bad, cs));
  if (work) {
    if (sorted) {
      auto* keys_sorted = reinterpret_cast<uint32_t*>(p + 16 + 2 * n4);
      auto* positions_sorted = reinterpret_cast<uint32_t*>(p + 16 + 3 * n4);
      auto* start = reinterpret_cast<uint32_t*>(p + 16 + 4 * n4);
      auto* end = reinterpret_cast<uint32_t*>(p + 16 + 4 * n4 + d4);
      void* temp = p + 16 + 4 * n4 + 2 * d4;
      KPS_RETURN_IF_ERROR(
          SortIndexPairs(temp, sort_bytes, keys, keys_sorted, positions, positions_sorted, n, end_bit, cs));
      KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(start, 0, 2 * d4, cs), "cudaMemsetAsync (index_add's run bounds)");
      KPS_RETURN_IF_ERROR(
          LaunchSegmentBounds(keys_sorted, n, static_cast<uint32_t>(g.dim_size), start, end, cs));
      const IndexAcc<T> alpha = static_cast<IndexAcc<T>>(ctx->Attr<double>("alpha"));
      KPS_RETURN_IF_ERROR(LaunchGather<T>(x.data<T>(), source.data<T>(), out, positions_sorted, start, end, g, alpha,
                                          in_place, first_bad, cs));
    } else {
      KPS_RETURN_IF_ERROR(copy_x());
      KPS_RETURN_IF_ERROR(
          LaunchScatter<T>(source.data<T>(), keys, out, g, ctx->Attr<double>("alpha"), first_bad, cs));
    }
  } else {
    KPS_RETURN_IF_ERROR(copy_x());
  }
  return CheckIndexStatus(*ctx, index, first_bad, g, cs);
}

template <bool kInPlace>
struct CudaIndexAdd {
  template <typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override { return RunIndexAddCuda<T>(ctx, kInPlace); }
  };
};

}  // namespace indexing
}  // namespace kps
