// The CUDA kernels of index_add and index_add_, instantiated per dtype group by
// index_add_cuda_float.cu and index_add_cuda_int.cu.
//
// Every call first checks the index on the device (IndexCountKernel: the first position
// holding a value outside [0, dim_size) goes to a flag; nothing reads or writes through a
// bad index), posts the flags to host-mapped memory right after that kernel, queues the
// rest, and then waits for the post (not for the rest), so a bad index comes back as a
// Status from the call. Each later kernel returns at once when the flag is set, so a
// failed call leaves x (index_add_) unchanged. Then one of two paths:
//
// - Gather (deterministic = true, integer dtypes, and out-of-place calls whose slices are
//   at least 64 bytes): the index kernel counts the sources of every destination (an
//   integer atomicAdd also gives each index its slot among them), a scan of the counts
//   gives each destination a run, and the positions are scattered into their runs.
//   IndexAddGatherKernel then has each destination slice (a group of 1-32 lanes, 16-byte
//   vectors) read x, sum its sources (IndexAcc) and write x + alpha * sum once. No
//   atomics on the data. The slots' order within a run varies from run to run, so:
//   integers sum in any order (int64 addition is exact, wrapping); floats sum in position
//   order: a thread per destination sorts a run of at most kShortRun sources, and for
//   longer runs, which the index kernel flags, a second gather (queued once the call has
//   the flags) sums those destinations alone over a stable CUB radix sort of (index,
//   position) pairs. Bitwise reproducible either way; out of place it is one streaming
//   pass over x and out, plus about 20 bytes per index for the runs.
// - Atomic (the rest: floats without `deterministic`): out = x (a copy) and every source
//   element is added with an atomic; float16/bfloat16 add two neighbours with one
//   half2/bfloat162 atomic wherever the pair is 4-byte aligned, and a single 16-bit
//   atomic at the ends of a slice.
//
// Loads and stores are primitives: the gather moves x, the sources and out with the 1-D
// ReadData/WriteData (16-byte vectors), the scatter reads its source elements with
// ReadData, and the index kernels (index_add_sort.cu) read and write their tiles with
// ReadData/WriteData and InitWithDataIndex. What stays kernel logic: the loads through
// an index (run starts, positions, keys), the atomics, the pair kernel's loads (a slice's
// pairs follow its destination's parity, not a tile), and the short runs' insertion sort.
// The run starts (an exclusive scan over all destinations) and the long runs' order (a
// stable radix sort over all indices) are CUB device-wide calls: KPS's Cumsum and Sort
// are block-wide, and the library has no device-wide scan or radix sort primitive.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "ops/index/index_add_ops.h"
#include "ops/common/contiguous.h"
#include "primitives/datamover.cuh"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/status.h"

namespace kps {
namespace indexing {

inline constexpr int kIndexAddBlock = 256;

// Which destinations a gather kernel writes, and how it orders a run's sources.
enum class RunMode {
  kAll,    // every destination, sources in run order (integers: any order sums the same)
  kShort,  // runs of at most kShortRun sources; longer skipped
  kLong,   // only runs longer than kShortRun, whose positions come sorted
};

// Each lane owns kPer vectors of a slice per pass and issues its x loads before it looks
// at the run, so a slice's x and its run bounds are in flight together. Two vectors per
// lane at five blocks per SM beat four at three; uncapped, the kernel takes 58 registers
// (36% occupancy); six and eight blocks spill.
// index_add_f32_1Mx256, H100: 2 vectors x 5 blocks 2745 GB/s, 4 x 3 2681, uncapped 2213.
template <typename T, int VEC>
inline constexpr int kGatherPer = static_cast<int>(sizeof(IndexAcc<T>)) * VEC > 32 ? 1 : 2;
// Resident blocks per SM the kernel is held to: five (48 registers) for float and
// double; 16-bit floats (two vectors of eight float accumulators) and integers (int64
// accumulators) spill there (ptxas -v) and take three (80 registers).
template <typename T>
inline constexpr int kGatherMinBlocks = std::is_floating_point_v<T> ? 5 : 3;

// A destination slice is a row of the block: blockDim.x = its lanes (a power of two, at
// most a warp), blockDim.y = kIndexAddBlock / lanes slices, so the warps are those of a
// 1-D block of kIndexAddBlock. In each pass a lane moves kPer vectors of VEC elements,
// vector `base + u * lanes + lane` for u < kPer: for each u, the slice's lanes load one
// tile of lanes * VEC elements with the 1-D ReadData (16-byte vectors) and store it with
// WriteData. ReadData loads x through the read-only path (its source is __restrict__),
// in place too: each element of x is read once, by the thread that later writes it, so
// no load can see a line another thread of this kernel wrote.
template <typename T, int VEC, bool kInPlace, RunMode kMode>
__global__ void __launch_bounds__(kIndexAddBlock, kGatherMinBlocks<T>) IndexAddGatherKernel(
    const T* x, const T* __restrict__ src, T* out, const uint32_t* __restrict__ positions,
    const uint32_t* __restrict__ start, int64_t outer, int64_t dim_size, int64_t count, int64_t inner,
    IndexAcc<T> alpha, const IndexFlags* flags) {
  using Acc = IndexAcc<T>;
  constexpr int kPer = kGatherPer<T, VEC>;
  if (flags->bad != 0) return;
  const int lanes = static_cast<int>(KPS_BLOCK_NUM_X);
  const int lane = static_cast<int>(KPS_THREAD_ID_X);
  const int64_t groups = static_cast<int64_t>(KPS_GRID_NUM_X) * KPS_BLOCK_NUM_Y;
  const int64_t rows = outer * dim_size;
  const int64_t nvec = inner / VEC;
  for (int64_t row = static_cast<int64_t>(KPS_BLOCK_ID_X) * KPS_BLOCK_NUM_Y + KPS_THREAD_ID_Y; row < rows;
       row += groups) {
    const int64_t o = outer == 1 ? 0 : row / dim_size;
    const int64_t r = row - o * dim_size;
    const uint32_t s = start[r], e = start[r + 1];
    const uint32_t n = e - s;
    // In place, a slice without sources is not touched at all (x is out).
    if (kInPlace && n == 0) continue;
    if (kMode == RunMode::kLong && n <= kShortRun) continue;
    const T* xr = x + row * inner;
    T* outr = out + row * inner;
    const T* src_o = src + o * count * inner;
    for (int64_t base = 0; base + lane < nvec; base += int64_t{kPer} * lanes) {
      // Tile u of the pass starts at element pass + u * lanes * VEC. (An int64 offset per
      // tile, (base + u * lanes) * VEC, loses the second tile's 16-byte stores to scalars.)
      const int64_t pass = base * VEC;
      T xv[kPer][VEC];
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        const int tile = u * lanes * VEC;
        if (base + u * lanes + lane < nvec) ReadData<T, VEC, 1, false>(xv[u], xr + pass + tile, lanes * VEC);
      }
      if (kMode == RunMode::kShort && n > kShortRun) break;  // the long-run gather's
      if (n == 0) {  // an exact copy (x + alpha * 0 would turn -0 into +0)
#pragma unroll
        for (int u = 0; u < kPer; ++u) {
          const int tile = u * lanes * VEC;
          if (base + u * lanes + lane < nvec) WriteData<T, VEC, 1, false>(outr + pass + tile, xv[u], lanes * VEC);
        }
        continue;
      }
      Acc sum[kPer][VEC];
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) sum[u][k] = Acc(0);
      }
      // Not unrolled: unrolled, the source loads of several j spill under the cap.
#pragma unroll 1
      for (uint32_t j = s; j < e; ++j) {
        const uint32_t p = positions[j];
        const T* sr = src_o + static_cast<int64_t>(p) * inner;
#pragma unroll
        for (int u = 0; u < kPer; ++u) {
          const int tile = u * lanes * VEC;
          if (base + u * lanes + lane < nvec) {
            T a[VEC];
            ReadData<T, VEC, 1, false>(a, sr + pass + tile, lanes * VEC);
#pragma unroll
            for (int k = 0; k < VEC; ++k) sum[u][k] += static_cast<Acc>(a[k]);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kPer; ++u) {
        const int tile = u * lanes * VEC;
        if (base + u * lanes + lane < nvec) {
          T res[VEC];
#pragma unroll
          for (int k = 0; k < VEC; ++k) res[k] = static_cast<T>(static_cast<Acc>(xv[u][k]) + alpha * sum[u][k]);
          WriteData<T, VEC, 1, false>(outr + pass + tile, res, lanes * VEC);
        }
      }
    }
  }
}

// float and double: one atomic per source element.
template <typename T>
__global__ void __launch_bounds__(kIndexAddBlock) IndexAddScatterKernel(
    const T* __restrict__ src, const uint32_t* __restrict__ keys, T* out, int64_t outer, int64_t dim_size,
    int64_t count, int64_t inner, T alpha, const IndexFlags* flags) {
  if (flags->bad != 0) return;
  const int64_t total = outer * count * inner;
  for (int64_t e = static_cast<int64_t>(KPS_BLOCK_ID_X) * kIndexAddBlock + KPS_THREAD_ID_X; e < total;
       e += static_cast<int64_t>(KPS_GRID_NUM_X) * kIndexAddBlock) {
    const int64_t t = e / inner;
    const int64_t k = e - t * inner;
    const int64_t o = t / count;
    const int64_t i = t - o * count;
    const uint32_t key = keys[i];
    if (key >= dim_size) continue;
    T v[1];
    ReadData<T, 1, 1, false>(v, src + (e - KPS_THREAD_ID_X), 1);  // this block's tile of kIndexAddBlock
    atomicAdd(out + (o * dim_size + key) * inner + k, alpha * v[0]);
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
    int64_t count, int64_t inner, float alpha, const IndexFlags* flags) {
  if (flags->bad != 0) return;
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
                          const IndexAddGeometry& g, IndexAcc<T> alpha, bool in_place, RunMode mode,
                          const IndexFlags* flags, cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T) > 0 ? 16 / sizeof(T) : 1;
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = g.inner % kVec == 0 && aligned(x) && aligned(src) && aligned(out);
  const int64_t nvec = vec ? g.inner / kVec : g.inner;
  auto for_mode = [&](auto vec_c, auto in_place_c) {
    constexpr int kV = decltype(vec_c)::value ? kVec : 1;
    constexpr bool kIp = decltype(in_place_c)::value;
    // Lanes per slice: enough for one pass of kPer vectors each, at most a warp.
    int lanes_log2 = 0;
    while (lanes_log2 < 5 && (int64_t{kGatherPer<T, kV>} << lanes_log2) < nvec) ++lanes_log2;
    const unsigned grid = IndexAddGrid((g.outer * g.dim_size) << lanes_log2);
    const dim3 block(1u << lanes_log2, kIndexAddBlock >> lanes_log2);  // a slice a row of lanes
    // mode_c: a std::integral_constant<RunMode, ...> naming the kernel's run mode.
    auto launch = [&](auto mode_c) {
      return LaunchKernel<&IndexAddGatherKernel<T, kV, kIp, decltype(mode_c)::value>>(
          "IndexAddGatherKernel", grid, block, 0, stream, x, src, out, positions, start, g.outer, g.dim_size, g.count,
          g.inner, alpha, flags);
    };
    if constexpr (std::is_integral_v<T>) {
      return launch(std::integral_constant<RunMode, RunMode::kAll>{});
    } else {
      return mode == RunMode::kShort ? launch(std::integral_constant<RunMode, RunMode::kShort>{})
                                     : launch(std::integral_constant<RunMode, RunMode::kLong>{});
    }
  };
  using True = std::true_type;
  using False = std::false_type;
  if (vec) {
    return in_place ? for_mode(True{}, True{}) : for_mode(True{}, False{});
  } else {
    return in_place ? for_mode(False{}, True{}) : for_mode(False{}, False{});
  }
}

template <typename T>
absl::Status LaunchScatter(const T* src, const uint32_t* keys, T* out, const IndexAddGeometry& g, double alpha,
                           const IndexFlags* flags, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    KPS_RETURN_IF_ERROR(LaunchKernel<&IndexAddScatterPairKernel<T>>(
        "IndexAddScatterPairKernel", IndexAddGrid(g.outer * g.count * (g.inner / 2 + 1)), kIndexAddBlock, 0, stream,
        src, keys, out, g.outer, g.dim_size, g.count, g.inner, static_cast<float>(alpha), flags));
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    KPS_RETURN_IF_ERROR(LaunchKernel<&IndexAddScatterKernel<T>>(
        "IndexAddScatterKernel", IndexAddGrid(g.outer * g.count * g.inner), kIndexAddBlock, 0, stream, src, keys, out,
        g.outer, g.dim_size, g.count, g.inner, static_cast<T>(alpha), flags));
  } else {
    return absl::InternalError("index_add: the atomic path is for floating dtypes only");
  }
  return absl::OkStatus();
}

inline size_t AlignUp16(size_t n) { return (n + 15) / 16 * 16; }

// The long-run pass of the gather path (floats only): a stable radix sort of (index,
// position) pairs puts every run in position order, and the gather writes the
// destinations with more than kShortRun sources, which the first gather skipped. The
// run starts are the same: the sort keeps each key's count.
template <typename T>
absl::Status GatherLongRuns(const T* x, const T* src, T* out, const uint32_t* keys, const uint32_t* start,
                            const IndexAddGeometry& g, IndexAcc<T> alpha, bool in_place, const IndexFlags* flags,
                            const Stream& stream) {
  const cudaStream_t cs = stream.cuda_stream();
  const int n = static_cast<int>(g.count);
  int end_bit = 1;
  while (end_bit < 32 && (uint64_t{1} << end_bit) < static_cast<uint64_t>(g.dim_size)) ++end_bit;
  KPS_ASSIGN_OR_RETURN(const size_t sort_bytes, SortIndexPairsTempBytes(n, end_bit));
  const size_t n4 = AlignUp16(static_cast<size_t>(n) * 4);
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> buffer,
                       Storage::Allocate(3 * n4 + AlignUp16(sort_bytes), DeviceType::kCuda, stream));
  char* p = static_cast<char*>(buffer->data());
  auto* iota = reinterpret_cast<uint32_t*>(p);
  auto* keys_sorted = reinterpret_cast<uint32_t*>(p + n4);
  auto* positions = reinterpret_cast<uint32_t*>(p + 2 * n4);
  KPS_RETURN_IF_ERROR(LaunchIota(iota, n, cs));
  KPS_RETURN_IF_ERROR(SortIndexPairs(p + 3 * n4, sort_bytes, keys, keys_sorted, iota, positions, n, end_bit, cs));
  // The buffer goes back to the stream-ordered pool after the gather's work.
  return LaunchGather<T>(x, src, out, positions, start, g, alpha, in_place, RunMode::kLong, flags, cs);
}

template <typename T>
absl::Status RunIndexAddCuda(const KernelContext* ctx, const IndexAddOperands& a, bool in_place) {
  const IndexAddGeometry& g = a.g;
  const Stream stream = ctx->stream();
  const cudaStream_t cs = ctx->cuda_stream();
  const Tensor& x = a.x;
  T* out = a.out.data<T>();
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
  const Tensor& index = a.index;
  const Tensor& source = a.source;
  const bool work = g.outer > 0 && g.inner > 0;  // else only the index check
  const bool gather = work && (ctx->Attr<bool>("deterministic") || std::is_integral_v<T> ||
                               (!in_place && g.inner * static_cast<int64_t>(sizeof(T)) >= 64));
  const int n = static_cast<int>(g.count);
  // One buffer: the flags, then for the gather path the run counts (cleared with the
  // flags by one memset), the keys, the slots, the run starts, the positions and CUB's
  // scan storage; for the others the keys alone.
  const size_t n4 = AlignUp16(static_cast<size_t>(n) * 4);
  const size_t d4 = AlignUp16(static_cast<size_t>(g.dim_size + 1) * 4);
  size_t scan_bytes = 0;
  if (gather) {
    KPS_RETURN_IF_ERROR(ScanRunCounts(nullptr, scan_bytes, nullptr, nullptr, g.dim_size + 1, cs));
  }
  const size_t bytes =
      sizeof(IndexFlags) + (gather ? 2 * d4 + 3 * n4 + AlignUp16(scan_bytes) : n4);
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> buffer, Storage::Allocate(bytes, DeviceType::kCuda, stream));
  char* p = static_cast<char*>(buffer->data());
  auto* flags = reinterpret_cast<IndexFlags*>(p);
  p += sizeof(IndexFlags);
  uint32_t* counts = nullptr;
  if (gather) {
    counts = reinterpret_cast<uint32_t*>(p);
    p += d4;
  }
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(flags, 0, sizeof(IndexFlags) + (gather ? d4 : 0), cs),
                           "cudaMemsetAsync (index_add's flags and run counts)");
  auto* keys = reinterpret_cast<uint32_t*>(p);
  p += n4;
  if (!gather) {
    KPS_RETURN_IF_ERROR(LaunchIndexCount(index, g.count, g.dim_size, keys, nullptr, nullptr, 0, flags, cs));
    KPS_ASSIGN_OR_RETURN(const FlagPost post, PostIndexFlags(flags, cs));
    KPS_RETURN_IF_ERROR(copy_x());
    if (work) {
      KPS_RETURN_IF_ERROR(
          LaunchScatter<T>(source.data<T>(), keys, out, g, ctx->Attr<double>("alpha"), flags, cs));
    }
    return AwaitIndexFlags(*ctx, index, post, g, cs).status();
  }
  auto* slot = reinterpret_cast<uint32_t*>(p);
  auto* start = reinterpret_cast<uint32_t*>(p + n4);
  auto* positions = reinterpret_cast<uint32_t*>(p + n4 + d4);
  void* scan_temp = p + 2 * n4 + d4;
  // Integer sums do not depend on the order, so their runs are never long.
  const uint32_t long_limit = std::is_integral_v<T> ? 0xFFFFFFFFu : kShortRun;
  KPS_RETURN_IF_ERROR(LaunchIndexCount(index, g.count, g.dim_size, keys, slot, counts, long_limit, flags, cs));
  KPS_ASSIGN_OR_RETURN(const FlagPost post, PostIndexFlags(flags, cs));
  KPS_RETURN_IF_ERROR(ScanRunCounts(scan_temp, scan_bytes, counts, start, g.dim_size + 1, cs));
  KPS_RETURN_IF_ERROR(LaunchScatterPositions(keys, slot, n, start, positions, cs));
  if constexpr (!std::is_integral_v<T>) {
    KPS_RETURN_IF_ERROR(LaunchOrderShortRuns(start, g.dim_size, positions, flags, cs));
  }
  const IndexAcc<T> alpha = static_cast<IndexAcc<T>>(ctx->Attr<double>("alpha"));
  KPS_RETURN_IF_ERROR(LaunchGather<T>(x.data<T>(), source.data<T>(), out, positions, start, g, alpha, in_place,
                                      RunMode::kShort, flags, cs));
  KPS_ASSIGN_OR_RETURN(const bool long_runs, AwaitIndexFlags(*ctx, index, post, g, cs));
  if (!long_runs) return absl::OkStatus();
  return GatherLongRuns<T>(x.data<T>(), source.data<T>(), out, keys, start, g, alpha, in_place, flags, stream);
}

// The CUDA part of index_add's kernel (IndexAddKernel, index_add_ops.h).
template <>
struct IndexAddOn<DeviceType::kCuda> {
  template <typename T>
  static absl::Status Run(const KernelContext& ctx, const IndexAddOperands& a, bool in_place) {
    return RunIndexAddCuda<T>(&ctx, a, in_place);
  }
};

}  // namespace indexing
}  // namespace kps
