// The CUDA side of the scans.
//
// - ScanRowsKernel (the scanned dim is the innermost, inner == 1): a block per row walks
//   it in tiles of 256 x 4 elements; each tile is one block-wide scan (kps::Cumsum:
//   sequential in each thread, shuffles across lanes and warps) whose total is carried
//   into the next tile.
// - ScanBandsKernel (inner > 1, 16-byte vectors, bands enough to fill the GPU): a block
//   per band of 128 bytes of every line, one pass (see below).
// - ScanColsKernel (other inner > 1): a thread per column walks it sequentially; neighbouring
//   threads own neighbouring columns, so every step is one coalesced row access. Too
//   few columns to fill the GPU: the dim is cut into segments (three passes).
// - ScanLookbackKernel (a few long rows): one pass over tiles of 2048 with a decoupled
//   look-back (see below).
// All combine in a fixed order, so the output is bitwise reproducible. Still to do:
// several short rows per block.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "ops/scan/scan_ops.h"
#include "primitives/cumsum.cuh"
#include "registry/allocator.h"
#include "registry/device.h"
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

// A block per (chunk, row): rows are cut into `chunks` runs of chunk_len (a multiple of
// the tile) when there are too few rows to fill the GPU. As ScanColsKernel: states ==
// nullptr scans whole rows, aggregate_only stores each chunk's aggregate (the left fold
// of its tile totals) in states[g], otherwise the chunk is scanned from carry states[g].
// g = chunk * outer + row.
template <typename Scanner>
__global__ void __launch_bounds__(kScanBlock)
    ScanRowsKernel(const typename Scanner::In* __restrict__ x, Scanner s, ScanShape sh,
                   typename Scanner::Out* __restrict__ out, int64_t* __restrict__ index, int64_t chunk_len,
                   int64_t chunks, typename Scanner::Acc* states, bool aggregate_only) {
  using Acc = typename Scanner::Acc;
  constexpr int64_t kTile = int64_t{kScanBlock} * kScanItems;
  const ScanFn<Scanner> fn{s};
  const int64_t L = sh.length;
  for (int64_t g = blockIdx.x; g < sh.outer * chunks; g += gridDim.x) {
    const int64_t chunk = g / sh.outer, row = g - chunk * sh.outer;
    const int64_t base = row * L;
    const int64_t p_begin = chunk * chunk_len, p_end = p_begin + chunk_len < L ? p_begin + chunk_len : L;
    Acc carry = states != nullptr && !aggregate_only ? states[g] : s.Identity();
    for (int64_t t0 = p_begin; t0 < p_end; t0 += kTile) {
      Acc items[kScanItems], scanned[kScanItems], total;
#pragma unroll
      for (int j = 0; j < kScanItems; ++j) {
        const int64_t p = t0 + threadIdx.x * kScanItems + j;
        const int64_t e = sh.reverse ? L - 1 - p : p;
        items[j] = p < p_end ? s.Make(x[base + e], e) : s.Identity();
      }
      Cumsum<Acc, Acc, kScanItems, kScanBlock>(scanned, items, fn, sh.exclusive, &total);
      if (!aggregate_only) {
#pragma unroll
        for (int j = 0; j < kScanItems; ++j) {
          const int64_t p = t0 + threadIdx.x * kScanItems + j;
          if (p < p_end) {
            WriteScan(s, s.Combine(carry, scanned[j]), sh.exclusive, base + (sh.reverse ? L - 1 - p : p), out, index);
          }
        }
      }
      carry = s.Combine(carry, total);
    }
    if (aggregate_only && threadIdx.x == 0) states[g] = carry;
  }
}

// A thread per (segment, column): the dim is cut into `segments` runs of seg_len, so
// that few columns still fill the GPU. With states == nullptr (one segment) it scans the
// column; with aggregate_only it stores the segment's aggregate in states[g]; otherwise
// it scans the segment starting from the carry states[g] (ScanCarriesKernel's output).
template <typename Scanner>
__global__ void __launch_bounds__(256)
    ScanColsKernel(const typename Scanner::In* __restrict__ x, Scanner s, ScanShape sh,
                   typename Scanner::Out* __restrict__ out, int64_t* __restrict__ index, int64_t seg_len,
                   int64_t segments, typename Scanner::Acc* states, bool aggregate_only) {
  using Acc = typename Scanner::Acc;
  const int64_t cols = sh.outer * sh.inner;
  const int64_t L = sh.length;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < cols * segments;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t seg = g / cols, c = g - seg * cols;
    const int64_t o = c / sh.inner;
    const int64_t base = o * L * sh.inner + (c - o * sh.inner);
    const int64_t p0 = seg * seg_len, p1 = p0 + seg_len < L ? p0 + seg_len : L;
    Acc acc = states != nullptr && !aggregate_only ? states[g] : s.Identity();
#pragma unroll 4
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t e = sh.reverse ? L - 1 - p : p;
      const int64_t off = base + e * sh.inner;
      const Acc prefix = acc;
      acc = s.Combine(acc, s.Make(x[off], e));
      if (!aggregate_only) WriteScan(s, sh.exclusive ? prefix : acc, sh.exclusive, off, out, index);
    }
    if (aggregate_only) states[g] = acc;
  }
}

// Per column, the segment aggregates become exclusive carries, folded in segment order.
template <typename Scanner>
__global__ void __launch_bounds__(256) ScanCarriesKernel(Scanner s, typename Scanner::Acc* states, int64_t cols,
                                                        int64_t segments) {
  using Acc = typename Scanner::Acc;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Acc carry = s.Identity();
    for (int64_t seg = 0; seg < segments; ++seg) {
      const Acc a = states[seg * cols + c];
      states[seg * cols + c] = carry;
      carry = s.Combine(carry, a);
    }
  }
}

// ---- Columns in bands: one pass ------------------------------------------------------
//
// A block per band of kBandLanes 16-byte vectors across the inner dim (128 bytes of every
// line of the scanned dim), walking the whole dim in stripes of (kScanBlock / kBandLanes)
// row groups x kBandRows lines. A thread scans its kBandRows lines of its vector in
// registers; the row groups' totals are scanned across a warp with shuffles and across
// the warps through shared memory; the band's running total carries to the next stripe.
// Every element is read and written once (the segmented three passes read twice), and
// the order of combination is fixed by the shape, so results are reproducible.
// cumsum_first_f32_8Kx8K (a probe of this shape, H100, 2026-11-22): 8 lanes 2528-2578
// GB/s for 4 to 16 lines per thread; 4 lanes 2294-2522, 2 lanes 1894-2258.
inline constexpr int kBandLanes = 8;
inline constexpr int kBandRows = 4;

template <typename T, int K>
struct alignas(sizeof(T) * K) ScanPack {
  T v[K];
};

// Shuffle up across a warp of any trivially copyable state, a 32-bit word at a time.
template <typename T>
__device__ __forceinline__ T ShflUpAny(const T& v, int delta) {
  static_assert(sizeof(T) % sizeof(unsigned) == 0, "ShflUpAny: a size in whole words");
  T r;
  const unsigned* src = reinterpret_cast<const unsigned*>(&v);
  unsigned* dst = reinterpret_cast<unsigned*>(&r);
#pragma unroll
  for (size_t i = 0; i < sizeof(T) / sizeof(unsigned); ++i) dst[i] = __shfl_up_sync(0xffffffffu, src[i], delta);
  return r;
}

template <typename Scanner, int K>
__global__ void __launch_bounds__(kScanBlock, 2)
    ScanBandsKernel(const typename Scanner::In* __restrict__ x, Scanner s, ScanShape sh,
                    typename Scanner::Out* __restrict__ out, int64_t* __restrict__ index, int64_t bands_per_slice) {
  using Acc = typename Scanner::Acc;
  using In = typename Scanner::In;
  using Out = typename Scanner::Out;
  constexpr int kGroups = kScanBlock / kBandLanes;  // row groups
  constexpr int kPerWarp = 32 / kBandLanes;         // row groups per warp
  constexpr int kWarps = kScanBlock / 32;
  __shared__ Acc s_warp[kWarps][kBandLanes][K];
  const int lane_v = static_cast<int>(threadIdx.x) % kBandLanes;
  const int group = static_cast<int>(threadIdx.x) / kBandLanes;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int in_warp = group % kPerWarp;
  const int64_t slice = blockIdx.x / bands_per_slice;
  const int64_t band = blockIdx.x - slice * bands_per_slice;
  const int64_t col = (band * kBandLanes + lane_v) * K;  // first of this thread's K columns
  const bool active = col < sh.inner;                    // inner % K == 0: all K or none
  const int64_t L = sh.length;
  const int64_t base = slice * L * sh.inner + col;
  Acc carry[K];
#pragma unroll
  for (int k = 0; k < K; ++k) carry[k] = s.Identity();
  for (int64_t p0 = 0; p0 < L; p0 += int64_t{kGroups} * kBandRows) {
    Acc a[kBandRows][K];
#pragma unroll
    for (int j = 0; j < kBandRows; ++j) {
      const int64_t p = p0 + group * kBandRows + j;
      const int64_t e = sh.reverse ? L - 1 - p : p;
      if (active && p < L) {
        const ScanPack<In, K> v = *reinterpret_cast<const ScanPack<In, K>*>(x + base + e * sh.inner);
#pragma unroll
        for (int k = 0; k < K; ++k) a[j][k] = s.Make(v.v[k], e);
      } else {
#pragma unroll
        for (int k = 0; k < K; ++k) a[j][k] = s.Identity();
      }
    }
#pragma unroll
    for (int j = 1; j < kBandRows; ++j) {
#pragma unroll
      for (int k = 0; k < K; ++k) a[j][k] = s.Combine(a[j - 1][k], a[j][k]);
    }
    // The row groups' totals: inclusive across the warp's groups, then exclusive.
    Acc incl[K], before[K];
#pragma unroll
    for (int k = 0; k < K; ++k) incl[k] = a[kBandRows - 1][k];
#pragma unroll
    for (int off = 1; off < kPerWarp; off <<= 1) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const Acc o = ShflUpAny(incl[k], off * kBandLanes);
        if (in_warp >= off) incl[k] = s.Combine(o, incl[k]);
      }
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const Acc o = ShflUpAny(incl[k], kBandLanes);
      before[k] = in_warp > 0 ? o : s.Identity();
    }
    if (in_warp == kPerWarp - 1) {
#pragma unroll
      for (int k = 0; k < K; ++k) s_warp[warp][lane_v][k] = incl[k];
    }
    __syncthreads();
    Acc prefix[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      Acc w = carry[k];
      for (int i = 0; i < kWarps; ++i) {
        if (i == warp) prefix[k] = s.Combine(w, before[k]);
        w = s.Combine(w, s_warp[i][lane_v][k]);
      }
      carry[k] = w;
    }
    __syncthreads();
    if (!active) continue;
#pragma unroll
    for (int j = 0; j < kBandRows; ++j) {
      const int64_t p = p0 + group * kBandRows + j;
      if (p >= L) break;
      const int64_t e = sh.reverse ? L - 1 - p : p;
      const int64_t off = base + e * sh.inner;
      if constexpr (sizeof(Out) == sizeof(In) && !Scanner::kHasIndex) {
        ScanPack<Out, K> o;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          o.v[k] = sh.exclusive ? s.ExclusiveValue(j == 0 ? prefix[k] : s.Combine(prefix[k], a[j - 1][k]))
                                : s.Value(s.Combine(prefix[k], a[j][k]));
        }
        *reinterpret_cast<ScanPack<Out, K>*>(out + off) = o;
      } else {
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const Acc v = sh.exclusive ? (j == 0 ? prefix[k] : s.Combine(prefix[k], a[j - 1][k]))
                                     : s.Combine(prefix[k], a[j][k]);
          WriteScan(s, v, sh.exclusive, off + k, out, index);
        }
      }
    }
  }
}

// ---- Long rows: one pass with a deterministic decoupled look-back -------------------
//
// Merrill & Garland's single-pass scan: each block takes the next tile (a counter hands
// tiles out in launch order, so a tile's predecessors are always running or done), scans
// it, publishes its aggregate, looks back for the nearest predecessor that has published
// its inclusive prefix, and publishes its own. Determinism for floats: the look-back does
// not fold aggregates back to front (whose grouping would depend on timing); it finds the
// nearest inclusive prefix P(j) and folds A(j+1), ..., A(t-1) onto it front to back.
// Every published prefix is then the same left fold A(0) (+) A(1) (+) ... of the tile
// aggregates whichever j a tile happened to find, so the bits never depend on timing.
// The walk and the fold go a warp-wide window of 32 tiles per L2 round trip (the first
// version walked one tile per round trip from one thread: 323 GB/s on cumsum_f32_256M).
inline constexpr int kLookbackItems = 8;  // 2048 elements per tile

enum TileFlag : int { kTileEmpty = 0, kTileAggregate = 1, kTilePrefix = 2 };

// A state read from another block: through L2 (ld.cg), never a stale L1 line.
template <typename T>
__device__ __forceinline__ T LoadCg(const T* p) {
  static_assert(sizeof(T) % sizeof(unsigned) == 0 || sizeof(T) < sizeof(unsigned), "LoadCg: odd size");
  if constexpr (sizeof(T) % sizeof(unsigned) == 0) {
    T v;
    unsigned* w = reinterpret_cast<unsigned*>(&v);
    const unsigned* src = reinterpret_cast<const unsigned*>(p);
#pragma unroll
    for (size_t i = 0; i < sizeof(T) / sizeof(unsigned); ++i) w[i] = __ldcg(src + i);
    return v;
  } else {
    return *reinterpret_cast<const volatile T*>(p);
  }
}

template <typename Scanner>
__global__ void __launch_bounds__(kScanBlock) ScanLookbackKernel(const typename Scanner::In* __restrict__ x, Scanner s,
                                                                ScanShape sh, typename Scanner::Out* __restrict__ out,
                                                                int64_t* __restrict__ index,
                                                                typename Scanner::Acc* aggregates,
                                                                typename Scanner::Acc* prefixes, int* flags,
                                                                unsigned long long* counter, int64_t tiles_per_row) {
  using Acc = typename Scanner::Acc;
  constexpr int64_t kTile = int64_t{kScanBlock} * kLookbackItems;
  __shared__ unsigned long long s_tile;
  __shared__ Acc s_exclusive;
  const ScanFn<Scanner> fn{s};
  if (threadIdx.x == 0) s_tile = atomicAdd(counter, 1ull);
  __syncthreads();
  const int64_t tile = static_cast<int64_t>(s_tile);
  const int64_t row = tile / tiles_per_row;
  const int64_t t = tile - row * tiles_per_row;
  const int64_t L = sh.length;
  const int64_t base = row * L;
  const int64_t t0 = t * kTile;
  Acc items[kLookbackItems], scanned[kLookbackItems], total;
#pragma unroll
  for (int j = 0; j < kLookbackItems; ++j) {
    const int64_t p = t0 + threadIdx.x * kLookbackItems + j;
    const int64_t e = sh.reverse ? L - 1 - p : p;
    items[j] = p < L ? s.Make(x[base + e], e) : s.Identity();
  }
  Cumsum<Acc, Acc, kLookbackItems, kScanBlock>(scanned, items, fn, sh.exclusive, &total);
  // The look-back, by warp 0: 32 predecessors' flags (and then their states) per L2
  // round trip instead of one. Lane 31 of a window is its nearest tile.
  __shared__ Acc s_window[32];
  if (threadIdx.x < 32) {
    const int lane = static_cast<int>(threadIdx.x);
    const int64_t row_first = tile - t;  // the row's tile 0, in the flat state arrays
    Acc exclusive = s.Identity();
    if (t == 0) {
      if (lane == 0) {
        prefixes[tile] = total;
        __threadfence();
        atomicExch(flags + tile, static_cast<int>(kTilePrefix));
      }
    } else {
      if (lane == 0) {
        aggregates[tile] = total;
        __threadfence();
        atomicExch(flags + tile, static_cast<int>(kTileAggregate));
      }
      // Walk back a window at a time to the nearest predecessor j with a prefix (tile 0
      // of the row always gets one); wait out the window's empty flags first.
      int64_t j = -1;
      for (int64_t end = t - 1; j < 0; end -= 32) {
        const int64_t k = end - 31 + lane;
        int f = kTileAggregate;  // before the row: never looked at
        if (k >= 0) {
          do {
            f = *reinterpret_cast<volatile int*>(flags + row_first + k);
          } while (f == kTileEmpty);
        }
        const unsigned with_prefix = __ballot_sync(0xffffffffu, f == kTilePrefix);
        if (with_prefix != 0) j = end - 31 + (31 - __clz(static_cast<int>(with_prefix)));
      }
      __threadfence();
      // Fold front to back from P(j) over A(j+1) .. A(t-1): lanes load a window of
      // states at once, lane 0 folds them in order.
      if (lane == 0) exclusive = LoadCg(prefixes + row_first + j);
      for (int64_t w = j + 1; w < t; w += 32) {
        const int64_t k = w + lane;
        if (k < t) s_window[lane] = LoadCg(aggregates + row_first + k);
        __syncwarp();
        if (lane == 0) {
          const int n = static_cast<int>(t - w < 32 ? t - w : 32);
          for (int i = 0; i < n; ++i) exclusive = s.Combine(exclusive, s_window[i]);
        }
        __syncwarp();
      }
      if (lane == 0) {
        prefixes[tile] = s.Combine(exclusive, total);
        __threadfence();
        atomicExch(flags + tile, static_cast<int>(kTilePrefix));
      }
    }
    if (lane == 0) s_exclusive = exclusive;
  }
  __syncthreads();
  const Acc carry = s_exclusive;
#pragma unroll
  for (int j = 0; j < kLookbackItems; ++j) {
    const int64_t p = t0 + threadIdx.x * kLookbackItems + j;
    if (p < L) WriteScan(s, s.Combine(carry, scanned[j]), sh.exclusive, base + (sh.reverse ? L - 1 - p : p), out, index);
  }
}

template <typename Scanner>
absl::Status LaunchLookback(const typename Scanner::In* x, const ScanShape& sh, const Scanner& s,
                            typename Scanner::Out* out, int64_t* index, const Stream& stream) {
  using Acc = typename Scanner::Acc;
  constexpr int64_t kTile = int64_t{kScanBlock} * kLookbackItems;
  const int64_t tiles_per_row = (sh.length + kTile - 1) / kTile;
  const int64_t tiles = tiles_per_row * sh.outer;
  // One buffer: the tile counter, the flags (zeroed together), then the two state arrays.
  const size_t head = (sizeof(unsigned long long) + tiles * sizeof(int) + 15) / 16 * 16;
  const size_t bytes = head + 2 * tiles * sizeof(Acc);
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> state, Storage::Allocate(bytes, DeviceType::kCuda, stream));
  char* p = static_cast<char*>(state->data());
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0, sizeof(unsigned long long) + tiles * sizeof(int), stream.cuda_stream()),
                           "cudaMemsetAsync of the scan tile flags");
  auto* counter = reinterpret_cast<unsigned long long*>(p);
  int* flags = reinterpret_cast<int*>(p + sizeof(unsigned long long));
  Acc* aggregates = reinterpret_cast<Acc*>(p + head);
  Acc* prefixes = aggregates + tiles;
  if (tiles > 0x7fffffff) return absl::InvalidArgumentError("scan: more than 2^31 tiles");
  ScanLookbackKernel<Scanner><<<static_cast<unsigned>(tiles), kScanBlock, 0, stream.cuda_stream()>>>(
      x, s, sh, out, index, aggregates, prefixes, flags, counter, tiles_per_row);
  KPS_RETURN_IF_LAUNCH_ERROR("ScanLookbackKernel");
  return absl::OkStatus();
}

template <typename Scanner>
absl::Status LaunchScan(const typename Scanner::In* x, const ScanShape& sh, const Scanner& s,
                        typename Scanner::Out* out, int64_t* index, const Stream& stream) {
  constexpr int64_t kMaxGrid = int64_t{1} << 30;
  const char* lookback = std::getenv("KPS_SCAN_LOOKBACK");  // read per call: tests switch it
  if (lookback != nullptr && lookback[0] == '1' && sh.inner == 1 && sh.length > 4 * kScanBlock * kLookbackItems &&
      sh.outer * 4 <= CudaMultiprocessorCount()) {
    return LaunchLookback(x, sh, s, out, index, stream);
  }
  if (sh.inner == 1) {
    // Rows: a block each, unless too few to fill the GPU (a 1-D scan is one row): then
    // rows are cut into chunks of whole tiles, scanned in three passes (chunk
    // aggregates, carries per row in chunk order, the scan from the carries). The
    // single-pass look-back above is kept behind KPS_SCAN_LOOKBACK=1: made deterministic
    // it must fold every aggregate since the nearest published prefix front to back, and
    // that fold, not memory, bounds it (620 GB/s on cumsum_f32_256M against about 2000
    // for the three passes, which move 1.5 times the bytes).
    using Acc = typename Scanner::Acc;
    constexpr int64_t kTile = int64_t{kScanBlock} * kScanItems;
    const int64_t want_blocks = int64_t{CudaMultiprocessorCount()} * 8;
    int64_t chunks = 1, chunk_len = sh.length;
    if (sh.outer < want_blocks / 2 && sh.length >= 16 * kTile) {
      chunks = std::min<int64_t>((want_blocks + sh.outer - 1) / sh.outer, sh.length / (8 * kTile));
      chunk_len = ((sh.length + chunks - 1) / chunks + kTile - 1) / kTile * kTile;
      chunks = (sh.length + chunk_len - 1) / chunk_len;
    }
    const unsigned grid = static_cast<unsigned>(std::min(sh.outer * chunks, kMaxGrid));
    cudaStream_t cs = stream.cuda_stream();
    if (chunks == 1) {
      ScanRowsKernel<Scanner><<<grid, kScanBlock, 0, cs>>>(x, s, sh, out, index, chunk_len, 1, nullptr, false);
      KPS_RETURN_IF_LAUNCH_ERROR("ScanRowsKernel");
      return absl::OkStatus();
    }
    KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> state,
                         Storage::Allocate(static_cast<size_t>(sh.outer * chunks) * sizeof(Acc), DeviceType::kCuda,
                                           stream));
    Acc* states = static_cast<Acc*>(state->data());
    ScanRowsKernel<Scanner><<<grid, kScanBlock, 0, cs>>>(x, s, sh, out, index, chunk_len, chunks, states, true);
    KPS_RETURN_IF_LAUNCH_ERROR("ScanRowsKernel");
    ScanCarriesKernel<Scanner><<<static_cast<unsigned>((sh.outer + 255) / 256), 256, 0, cs>>>(s, states, sh.outer,
                                                                                             chunks);
    KPS_RETURN_IF_LAUNCH_ERROR("ScanCarriesKernel");
    ScanRowsKernel<Scanner><<<grid, kScanBlock, 0, cs>>>(x, s, sh, out, index, chunk_len, chunks, states, false);
    KPS_RETURN_IF_LAUNCH_ERROR("ScanRowsKernel");
  } else {
    // Columns: a thread each, unless too few to fill the GPU (cumsum_first of 8192 x 8192
    // has 8192): then the dim is cut into segments, scanned in three passes (segment
    // aggregates, carries per column in segment order, the scan from the carries). The
    // cut depends only on the shape and the SM count, so results stay reproducible.
    using Acc = typename Scanner::Acc;
    using In = typename Scanner::In;
    constexpr int kK = 16 / sizeof(In) >= 1 ? 16 / sizeof(In) : 1;
    const int64_t bands_per_slice = (sh.inner + kBandLanes * kK - 1) / (kBandLanes * kK);
    // Bands when the lines are vectors of 16 bytes, a band would be at least half used,
    // and there are bands enough to fill the GPU; else threads per column below. Not for
    // states of more than 32 bytes per vector (cummax's value and index, integer sums of
    // 8-bit types): their registers would spill.
    if constexpr (sizeof(Acc) * kK <= 32) {
      if (sh.inner % kK == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
          reinterpret_cast<uintptr_t>(out) % 16 == 0 && 2 * sh.inner >= kBandLanes * kK &&
          sh.outer * bands_per_slice >= CudaMultiprocessorCount() && sh.outer * bands_per_slice <= kMaxGrid) {
        ScanBandsKernel<Scanner, kK><<<static_cast<unsigned>(sh.outer * bands_per_slice), kScanBlock, 0,
                                       stream.cuda_stream()>>>(x, s, sh, out, index, bands_per_slice);
        KPS_RETURN_IF_LAUNCH_ERROR("ScanBandsKernel");
        return absl::OkStatus();
      }
    }
    const int64_t cols = sh.outer * sh.inner;
    const int64_t want_threads = int64_t{CudaMultiprocessorCount()} * 2048 * 2;
    int64_t segments = 1, seg_len = sh.length;
    if (cols < want_threads / 4 && sh.length >= 256) {
      segments = std::min<int64_t>((want_threads + cols - 1) / cols, sh.length / 64);
      seg_len = (sh.length + segments - 1) / segments;
      segments = (sh.length + seg_len - 1) / seg_len;
    }
    const int64_t blocks = (cols * segments + 255) / 256;
    const unsigned grid = static_cast<unsigned>(std::min(blocks, kMaxGrid));
    cudaStream_t cs = stream.cuda_stream();
    if (segments == 1) {
      ScanColsKernel<Scanner><<<grid, 256, 0, cs>>>(x, s, sh, out, index, seg_len, 1, nullptr, false);
      KPS_RETURN_IF_LAUNCH_ERROR("ScanColsKernel");
      return absl::OkStatus();
    }
    KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> state,
                         Storage::Allocate(static_cast<size_t>(cols * segments) * sizeof(Acc), DeviceType::kCuda,
                                           stream));
    Acc* states = static_cast<Acc*>(state->data());
    ScanColsKernel<Scanner><<<grid, 256, 0, cs>>>(x, s, sh, out, index, seg_len, segments, states, true);
    KPS_RETURN_IF_LAUNCH_ERROR("ScanColsKernel");
    ScanCarriesKernel<Scanner><<<static_cast<unsigned>((cols + 255) / 256), 256, 0, cs>>>(s, states, cols, segments);
    KPS_RETURN_IF_LAUNCH_ERROR("ScanCarriesKernel");
    ScanColsKernel<Scanner><<<grid, 256, 0, cs>>>(x, s, sh, out, index, seg_len, segments, states, false);
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
