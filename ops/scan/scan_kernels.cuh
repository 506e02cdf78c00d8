// The kernels of the scans (scan_dispatch.cuh picks one and launches it).
//
// - ScanRowsKernel (the scanned dim is the innermost, inner == 1): a block per row walks
//   it in tiles of 256 x 4 elements; each tile is one block-wide scan (kps::Cumsum:
//   sequential in each thread, shuffles across lanes and warps) whose total is carried
//   into the next tile.
// - ScanBandsKernel (inner > 1, 16-byte vectors, bands enough to fill the GPU): a block
//   per band of 128 bytes of every line, one pass (see below).
// - ScanColsKernel (other inner > 1): a thread per K adjacent columns walks them
//   sequentially, R lines at a time: neighbouring threads own neighbouring columns, so
//   every step is one coalesced access of K-vectors per thread, and the R loads of a batch
//   are in flight together. Too few columns to fill the GPU: the dim is cut into segments
//   (three passes).
// - ScanLookbackKernel (rows too few to fill the GPU, long ones: a 1-D scan is one row):
//   one pass over tiles of 256 x 16 elements (4-byte states) with a decoupled look-back
//   whose grouping is fixed (see below).
// All combine in a fixed order, so the output is bitwise reproducible. Still to do:
// several short rows per block.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "ops/scan/scan_ops.h"
#include "primitives/cumsum.cuh"
#include "primitives/datamover.cuh"
#include "registry/allocator.h"
#include "registry/device.h"
#include "registry/logging.h"
#include "registry/status.h"

namespace kps {
namespace scan {

inline constexpr int kScanBlock = 256;
inline constexpr int kScanItems = 4;

template <typename Scanner>
__device__ __forceinline__ void WriteScan(const Scanner& s, const CombinerAcc<Scanner>& a, bool exclusive, int64_t off,
                                          CombinerOut<Scanner>* out, int64_t* index) {
  out[off] = exclusive ? s.ExclusiveValue(a) : CombinerFinalize(s, a);
  if constexpr (Scanner::kHasIndex) index[off] = s.Index(a);
}

// N values of T at p (p aligned to the smaller of N * sizeof(T) and 16 bytes), moved in
// vectors of at most 16 bytes: a thread's run of int64 indices is 32 bytes or more.
template <typename T, int N>
__device__ __forceinline__ void LoadVectors(const T* p, T (&v)[N]) {
  constexpr int kC = N * sizeof(T) <= 16 ? N : static_cast<int>(16 / sizeof(T));
#pragma unroll
  for (int c = 0; c < N / kC; ++c) {
    const details::VectorType<T, kC> w = reinterpret_cast<const details::VectorType<T, kC>*>(p)[c];
#pragma unroll
    for (int i = 0; i < kC; ++i) v[c * kC + i] = w.val[i];
  }
}

template <typename T, int N>
__device__ __forceinline__ void StoreVectors(T* p, const T (&v)[N]) {
  constexpr int kC = N * sizeof(T) <= 16 ? N : static_cast<int>(16 / sizeof(T));
#pragma unroll
  for (int c = 0; c < N / kC; ++c) {
    details::VectorType<T, kC> w;
#pragma unroll
    for (int i = 0; i < kC; ++i) w.val[i] = v[c * kC + i];
    reinterpret_cast<details::VectorType<T, kC>*>(p)[c] = w;
  }
}

// The alignment LoadVectors and StoreVectors need for N values of T.
template <typename T, int N>
constexpr uintptr_t kVectorsAlign = N * sizeof(T) < 16 ? N * sizeof(T) : 16;

template <typename T, int N>
__device__ __forceinline__ bool VectorsAligned(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % kVectorsAlign<T, N> == 0;
}

// A block per row: the row in tiles of kScanBlock x kScanItems, each tile's total
// carried into the next. A thread's run of kScanItems elements is contiguous (descending
// in a reversed row), so whole runs move as vectors where aligned: element-wise, a warp's
// access spans kScanItems times the bytes it uses, and the 8-byte indices of cummax were
// written a quarter-sector at a time. The run is scanned in the thread, the runs' totals
// across the block, and the tile's carry folds into the thread's prefix once, so each
// element takes two combines (three when the carry met every element: logcumsumexp pays
// an exp per combine).
template <typename Scanner>
__global__ void __launch_bounds__(kScanBlock)
    ScanRowsKernel(const CombinerIn<Scanner>* __restrict__ x, Scanner s, ScanShape sh,
                   CombinerOut<Scanner>* __restrict__ out, int64_t* __restrict__ index) {
  using Acc = CombinerAcc<Scanner>;
  using In = CombinerIn<Scanner>;
  using Out = CombinerOut<Scanner>;
  constexpr int kN = kScanItems;
  constexpr int64_t kTile = int64_t{kScanBlock} * kN;
  const int64_t L = sh.length;
  for (int64_t row = blockIdx.x; row < sh.outer; row += gridDim.x) {
    const int64_t base = row * L;
    Acc carry = s.initial();
    for (int64_t t0 = 0; t0 < L; t0 += kTile) {
      const int64_t p0 = t0 + static_cast<int64_t>(threadIdx.x) * kN;
      const bool full = p0 + kN <= L;
      const int64_t lo = sh.reverse ? L - p0 - kN : p0;  // the run's lowest element, when full
      Acc local[kN];
      // Element-wise loads are made states as they arrive: ReadDataGather into a register
      // array first took 7 more registers (float) and spilled the 16-bit look-back kernel
      // (ptxas, sm_90).
      if (full && VectorsAligned<In, kN>(x + base + lo)) {
        In v[kN];
        LoadVectors<In, kN>(x + base + lo, v);
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          local[j] = CombinerMake(s, v[sh.reverse ? kN - 1 - j : j], sh.reverse ? L - 1 - (p0 + j) : p0 + j);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          const int64_t p = p0 + j;
          const int64_t e = sh.reverse ? L - 1 - p : p;
          local[j] = p < L ? CombinerMake(s, x[base + e], e) : s.initial();
        }
      }
#pragma unroll
      for (int j = 1; j < kN; ++j) local[j] = s(local[j - 1], local[j]);
      Acc before, total;
      Cumsum<Acc, Acc, 1, kScanBlock>(&before, &local[kN - 1], s, /*exclusive=*/true, &total);
      const Acc prefix = s(carry, before);
      Acc a[kN];
#pragma unroll
      for (int j = 0; j < kN; ++j) {
        a[j] = sh.exclusive ? (j == 0 ? prefix : s(prefix, local[j - 1])) : s(prefix, local[j]);
      }
      if (full && VectorsAligned<Out, kN>(out + base + lo) &&
          (!Scanner::kHasIndex || VectorsAligned<int64_t, kN>(index + base + lo))) {
        Out v[kN];
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          v[sh.reverse ? kN - 1 - j : j] = sh.exclusive ? s.ExclusiveValue(a[j]) : CombinerFinalize(s, a[j]);
        }
        StoreVectors<Out, kN>(out + base + lo, v);
        if constexpr (Scanner::kHasIndex) {
          int64_t w[kN];
#pragma unroll
          for (int j = 0; j < kN; ++j) w[sh.reverse ? kN - 1 - j : j] = s.Index(a[j]);
          StoreVectors<int64_t, kN>(index + base + lo, w);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          const int64_t p = p0 + j;
          if (p < L) WriteScan(s, a[j], sh.exclusive, base + (sh.reverse ? L - 1 - p : p), out, index);
        }
      }
      carry = s(carry, total);
    }
  }
}

// Columns per thread of ScanColsKernel's vector form: 16-byte loads, unless K states or
// outputs would pass 64 bytes (their registers; cummax's state is 16 bytes).
template <typename Scanner>
constexpr int ColsVecWidth() {
  int k = static_cast<int>(16 / sizeof(CombinerIn<Scanner>));
  while (k > 1 && (k * sizeof(CombinerAcc<Scanner>) > 64 || k * sizeof(CombinerOut<Scanner>) > 64)) k /= 2;
  return k < 1 ? 1 : k;
}

// Lines a thread of ScanColsKernel loads before it scans them: one load in flight per
// thread left a dim of 33 over 512K columns at half of PyTorch's bandwidth (cummax, H200).
inline constexpr int kColsBatch = 8;

// A thread per (segment, K adjacent columns): the dim is cut into `segments` runs of
// seg_len, so that few columns still fill the GPU. With states == nullptr (one segment)
// it scans the columns; with aggregate_only it stores the segment's aggregates in
// states[seg * columns + column]; otherwise it scans the segment starting from those
// carries (ScanCarriesKernel's output). K > 1: inner % K == 0 and x, out and index
// aligned for K-vectors (VectorsAligned). Each thread loads R lines of its columns, then
// scans and stores them, so R loads per thread are in flight.
template <typename Scanner, int K, int R>
__global__ void __launch_bounds__(256)
    ScanColsKernel(const CombinerIn<Scanner>* __restrict__ x, Scanner s, ScanShape sh,
                   CombinerOut<Scanner>* __restrict__ out, int64_t* __restrict__ index, int64_t seg_len,
                   int64_t segments, CombinerAcc<Scanner>* states, bool aggregate_only) {
  using Acc = CombinerAcc<Scanner>;
  using In = CombinerIn<Scanner>;
  using Out = CombinerOut<Scanner>;
  const int64_t vin = sh.inner / K;
  const int64_t vcols = sh.outer * vin;
  const int64_t cols = vcols * K;
  const int64_t L = sh.length;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < vcols * segments;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t seg = g / vcols, v = g - seg * vcols;
    const int64_t o = v / vin;
    const int64_t base = o * L * sh.inner + (v - o * vin) * K;
    const int64_t p0 = seg * seg_len, p1 = p0 + seg_len < L ? p0 + seg_len : L;
    Acc* const st = states != nullptr ? states + seg * cols + v * K : nullptr;  // v * K: its first column
    Acc acc[K];
#pragma unroll
    for (int k = 0; k < K; ++k) acc[k] = states != nullptr && !aggregate_only ? st[k] : s.initial();
    for (int64_t p = p0; p < p1; p += R) {
      In in[R][K];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t q = p + r;
        if (q < p1) LoadVectors<In, K>(x + base + (sh.reverse ? L - 1 - q : q) * sh.inner, in[r]);
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t q = p + r;
        if (q >= p1) break;
        const int64_t e = sh.reverse ? L - 1 - q : q;
        if (aggregate_only) {
#pragma unroll
          for (int k = 0; k < K; ++k) acc[k] = s(acc[k], CombinerMake(s, in[r][k], e));
          continue;
        }
        Out vals[K];
        int64_t idx[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const Acc prefix = acc[k];
          acc[k] = s(acc[k], CombinerMake(s, in[r][k], e));
          vals[k] = sh.exclusive ? s.ExclusiveValue(prefix) : CombinerFinalize(s, acc[k]);
          idx[k] = Scanner::kHasIndex ? s.Index(sh.exclusive ? prefix : acc[k]) : 0;
        }
        const int64_t off = base + e * sh.inner;
        StoreVectors<Out, K>(out + off, vals);
        if constexpr (Scanner::kHasIndex) StoreVectors<int64_t, K>(index + off, idx);
      }
    }
    if (aggregate_only) {
#pragma unroll
      for (int k = 0; k < K; ++k) st[k] = acc[k];
    }
  }
}

// Per column, the segment aggregates become exclusive carries, folded in segment order.
template <typename Scanner>
__global__ void __launch_bounds__(256) ScanCarriesKernel(Scanner s, CombinerAcc<Scanner>* states, int64_t cols,
                                                        int64_t segments) {
  using Acc = CombinerAcc<Scanner>;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Acc carry = s.initial();
    for (int64_t seg = 0; seg < segments; ++seg) {
      const Acc a = states[seg * cols + c];
      states[seg * cols + c] = carry;
      carry = s(carry, a);
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
// cumsum_first_f32_8Kx8K, H100: 8 lanes 2528-2578 GB/s (4 to 16 lines), 4 lanes 2294-2522.
inline constexpr int kBandLanes = 8;
inline constexpr int kBandRows = 4;

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
    ScanBandsKernel(const CombinerIn<Scanner>* __restrict__ x, Scanner s, ScanShape sh,
                    CombinerOut<Scanner>* __restrict__ out, int64_t* __restrict__ index, int64_t bands_per_slice) {
  using Acc = CombinerAcc<Scanner>;
  using In = CombinerIn<Scanner>;
  using Out = CombinerOut<Scanner>;
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
  for (int k = 0; k < K; ++k) carry[k] = s.initial();
  for (int64_t p0 = 0; p0 < L; p0 += int64_t{kGroups} * kBandRows) {
    Acc a[kBandRows][K];
#pragma unroll
    for (int j = 0; j < kBandRows; ++j) {
      const int64_t p = p0 + group * kBandRows + j;
      const int64_t e = sh.reverse ? L - 1 - p : p;
      if (active && p < L) {
        using Vec = details::VectorType<In, K>;
        const Vec v = *reinterpret_cast<const Vec*>(x + base + e * sh.inner);
#pragma unroll
        for (int k = 0; k < K; ++k) a[j][k] = CombinerMake(s, v.val[k], e);
      } else {
#pragma unroll
        for (int k = 0; k < K; ++k) a[j][k] = s.initial();
      }
    }
#pragma unroll
    for (int j = 1; j < kBandRows; ++j) {
#pragma unroll
      for (int k = 0; k < K; ++k) a[j][k] = s(a[j - 1][k], a[j][k]);
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
        if (in_warp >= off) incl[k] = s(o, incl[k]);
      }
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const Acc o = ShflUpAny(incl[k], kBandLanes);
      before[k] = in_warp > 0 ? o : s.initial();
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
        if (i == warp) prefix[k] = s(w, before[k]);
        w = s(w, s_warp[i][lane_v][k]);
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
        details::VectorType<Out, K> o;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          o.val[k] = sh.exclusive ? s.ExclusiveValue(j == 0 ? prefix[k] : s(prefix[k], a[j - 1][k]))
                                : CombinerFinalize(s, s(prefix[k], a[j][k]));
        }
        *reinterpret_cast<details::VectorType<Out, K>*>(out + off) = o;
      } else {
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const Acc v = sh.exclusive ? (j == 0 ? prefix[k] : s(prefix[k], a[j - 1][k]))
                                     : s(prefix[k], a[j][k]);
          WriteScan(s, v, sh.exclusive, off + k, out, index);
        }
      }
    }
  }
}

// ---- Long rows: one pass with a deterministic decoupled look-back -------------------
//
// Merrill & Garland's single-pass scan (block b scans tile b and publishes its aggregate
// as soon as it has scanned itself), with a look-back whose grouping is fixed, so float
// results never depend on timing. CUB folds whatever predecessors happen to be ready, so
// its grouping (and its float bits) vary from run to run; a fold that always goes front
// to back is reproducible but waits on a chain of one L2 round trip per tile (620 GB/s
// on cumsum_f32_256M, measured).
//
// The fixed grouping is a tree of fan-out 32 over a row's tiles. S0(i) is tile i's
// aggregate; Sk+1(i) folds Sk(32i) ... Sk(32i + 31). A tile t with base-32 digits
// d0, d1, ... (d0 the lowest) takes as its exclusive prefix, front to back,
//   G(K-1) (+) ... (+) G(1) (+) G(0),  Gk = Sk(32q) (+) ... (+) Sk(32q + dk - 1), q = t >> 5(k+1)
// that is, the level-k groups before its own in the level above (at most 31 per level,
// read by one warp per level at once and folded by a fixed shuffle tree). The tile whose
// digits 0..k are all 31 closes those groups: it publishes S1 .. Sk+1, each from G0 ..
// Gk and its aggregate only. Nothing waits on a chain: what a tile reads was published
// by earlier tiles after waiting only on lower levels, so the dependency depth is the
// number of levels (4 for 2^20 tiles), not the number of tiles.
//
// Tiles go by blockIdx.x: blocks are dispatched in increasing index order, so a tile's
// predecessors are running or done when it waits on them. CUB's DeviceScan assumes the
// same (agent_scan.cuh: tile_idx = start_tile + blockIdx.x). A ticket from an atomic
// counter would not need the assumption, but its round trip before the loads costs 5%
// (2000 against 2112 GB/s).
inline constexpr int kLookbackFan = 32;
inline constexpr int kMaxLookbackLevels = kScanBlock / 32;  // a warp per level

// Items per thread: 16 for 4-byte states (tiles of 4096), fewer for wider ones. 16 ties
// 12 and keeps 2-byte inputs in whole 16-byte vectors (12 would not).
// cumsum_f32_256M, H100: 16 items 2467 GB/s, 12 2477, 8 2241.
template <typename Acc>
constexpr int LookbackItems() {
  return sizeof(Acc) <= 4 ? 16 : sizeof(Acc) <= 8 ? 8 : 2;
}

// Where each level's published states live: level k of row r, entry i, at
// offset[k] + r * per_row[k] + i of the flag (or packed word) and state arrays.
struct LookbackLevels {
  int count = 1;
  int64_t offset[kMaxLookbackLevels] = {};
  int64_t per_row[kMaxLookbackLevels] = {};
};

// Published states. A state of at most 4 bytes shares one 64-bit word with its flag (one
// store publishes both, one load reads both); wider states go to their own array,
// published behind a fence and read after the flag.
template <typename Acc>
struct LookbackStates {
  static constexpr bool kPacked = sizeof(Acc) <= 4;
  unsigned long long* words;  // kPacked: (state bits << 32) | 1; otherwise the flag (0 or 1)
  Acc* states;                // !kPacked

  __device__ __forceinline__ void Publish(int64_t at, const Acc& a) const {
    if constexpr (kPacked) {
      unsigned bits = 0;
      memcpy(&bits, &a, sizeof(Acc));
      atomicExch(words + at, (static_cast<unsigned long long>(bits) << 32) | 1ull);
    } else {
      states[at] = a;
      __threadfence();
      atomicExch(words + at, 1ull);
    }
  }
  // The state at `at` once it has been published, else false.
  __device__ __forceinline__ bool TryRead(int64_t at, Acc* a) const {
    const unsigned long long w = *reinterpret_cast<const volatile unsigned long long*>(words + at);
    if (w == 0) return false;
    if constexpr (kPacked) {
      const unsigned bits = static_cast<unsigned>(w >> 32);
      memcpy(a, &bits, sizeof(Acc));
    } else {
      __threadfence();
      *a = LoadFromL2(states + at);
    }
    return true;
  }
};

// Whole tiles move between global and shared memory (CopyTileStriped, either way), and
// each thread reads or writes its run of NX in shared memory with 16-byte accesses.
// Tiles that stage through shared memory: whole 16-byte vectors per thread run.
template <typename T, int NX>
inline constexpr bool kStageable = NX * sizeof(T) % 16 == 0;

// The NX items of this thread, positions p0 .. p0 + NX - 1 of the row (element
// e = p or L - 1 - p). `staged`: the whole tile is in range with its lowest element
// 16-byte aligned; it is read through `stage`.
template <typename Scanner, int NX>
__device__ __forceinline__ void LoadRun(const Scanner& s, const CombinerIn<Scanner>* row, int64_t L, int64_t t0,
                                        int64_t p0, bool reverse, bool staged, CombinerIn<Scanner>* stage,
                                        CombinerAcc<Scanner>* items) {
  using In = CombinerIn<Scanner>;
  constexpr int64_t kTile = int64_t{kScanBlock} * NX;
  if constexpr (kStageable<In, NX>) {
    if (staged) {
      CopyTileStriped<In, kTile, kScanBlock>(stage, row + (reverse ? L - t0 - kTile : t0));
      __syncthreads();
      // The run in shared memory, lowest address first (reversed for reverse scans).
      const int lo = static_cast<int>(reverse ? kTile - (p0 - t0) - NX : p0 - t0);
      constexpr int kPer = 16 / sizeof(In);
      In v[NX];
#pragma unroll
      for (int c = 0; c < NX / kPer; ++c) {
        const details::VectorType<In, kPer> pk = reinterpret_cast<const details::VectorType<In, kPer>*>(stage + lo)[c];
#pragma unroll
        for (int i = 0; i < kPer; ++i) v[c * kPer + i] = pk.val[i];
      }
#pragma unroll
      for (int j = 0; j < NX; ++j) items[j] = CombinerMake(s, v[reverse ? NX - 1 - j : j], reverse ? L - 1 - (p0 + j) : p0 + j);
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    const int64_t p = p0 + j;
    const int64_t e = reverse ? L - 1 - p : p;
    items[j] = p < L ? CombinerMake(s, row[e], e) : s.initial();
  }
}

// Writes this thread's scanned items (states already carrying the tile's prefix), as
// LoadRun reads them. `stage` may be LoadRun's: every thread has passed a barrier since
// reading it.
template <typename Scanner, int NX>
__device__ __forceinline__ void StoreRun(const Scanner& s, const CombinerAcc<Scanner>* a, int64_t L, int64_t t0,
                                         int64_t p0, bool reverse, bool exclusive, bool staged,
                                         CombinerOut<Scanner>* stage, CombinerOut<Scanner>* row,
                                         int64_t* index_row) {
  using Out = CombinerOut<Scanner>;
  constexpr int64_t kTile = int64_t{kScanBlock} * NX;
  if constexpr (!Scanner::kHasIndex && kStageable<Out, NX>) {
    if (staged) {
      const int lo = static_cast<int>(reverse ? kTile - (p0 - t0) - NX : p0 - t0);
      constexpr int kPer = 16 / sizeof(Out);
      Out v[NX];
#pragma unroll
      for (int j = 0; j < NX; ++j) v[reverse ? NX - 1 - j : j] = exclusive ? s.ExclusiveValue(a[j]) : CombinerFinalize(s, a[j]);
#pragma unroll
      for (int c = 0; c < NX / kPer; ++c) {
        details::VectorType<Out, kPer> pk;
#pragma unroll
        for (int i = 0; i < kPer; ++i) pk.val[i] = v[c * kPer + i];
        reinterpret_cast<details::VectorType<Out, kPer>*>(stage + lo)[c] = pk;
      }
      __syncthreads();
      CopyTileStriped<Out, kTile, kScanBlock>(row + (reverse ? L - t0 - kTile : t0), stage);
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    const int64_t p = p0 + j;
    if (p < L) WriteScan(s, a[j], exclusive, reverse ? L - 1 - p : p, row, index_row);
  }
}

template <typename Scanner, int NX>
__global__ void __launch_bounds__(kScanBlock) ScanLookbackKernel(const CombinerIn<Scanner>* __restrict__ x, Scanner s,
                                                                ScanShape sh, CombinerOut<Scanner>* __restrict__ out,
                                                                int64_t* __restrict__ index,
                                                                LookbackStates<CombinerAcc<Scanner>> st,
                                                                LookbackLevels lv, int64_t tiles_per_row) {
  using Acc = CombinerAcc<Scanner>;
  using In = CombinerIn<Scanner>;
  using Out = CombinerOut<Scanner>;
  constexpr int64_t kTile = int64_t{kScanBlock} * NX;
  __shared__ Acc s_group[kMaxLookbackLevels];
  __shared__ Acc s_exclusive;
  const int64_t tile = blockIdx.x;
  const int64_t row = tile / tiles_per_row;
  const int64_t t = tile - row * tiles_per_row;
  const int64_t L = sh.length;
  const int64_t t0 = t * kTile;
  const int64_t p0 = t0 + static_cast<int64_t>(threadIdx.x) * NX;
  // Staged loads and stores when the whole tile is in range and its lowest element
  // aligned.
  const bool full = t0 + kTile <= L;
  const int64_t tile_lo = sh.reverse ? L - t0 - kTile : t0;
  const bool vec_in = full && reinterpret_cast<uintptr_t>(x + row * L + tile_lo) % 16 == 0;
  const bool vec_out = full && reinterpret_cast<uintptr_t>(out + row * L + tile_lo) % 16 == 0;

  // Shared memory to stage the tile's input, then its output.
  constexpr size_t kStageBytes = kTile * (sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out));
  __shared__ alignas(16) unsigned char s_stage[kStageBytes];
  Acc items[NX], total;
  LoadRun<Scanner, NX>(s, x + row * L, L, t0, p0, sh.reverse, vec_in, reinterpret_cast<In*>(s_stage), items);
  Cumsum<Acc, Acc, NX, kScanBlock>(items, items, s, sh.exclusive, &total);

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (threadIdx.x == 0) st.Publish(lv.offset[0] + row * lv.per_row[0] + t, total);
  auto digit = [t](int k) { return static_cast<int>((t >> (5 * k)) & (kLookbackFan - 1)); };
  // Gk: the level-k groups before this tile's own, one per lane, folded by a fixed tree.
  auto group_fold = [&](int k) {
    const int d = digit(k);
    const int64_t first = ((t >> (5 * k)) & ~int64_t{kLookbackFan - 1}) + lv.offset[k] + row * lv.per_row[k];
    Acc v = s.initial();
    bool ready = lane >= d;
    while (true) {
      if (!ready) ready = st.TryRead(first + lane, &v);
      if (__all_sync(0xffffffffu, ready)) break;
    }
#pragma unroll
    for (int m = 1; m < 32; m <<= 1) {
      const Acc o = ::kps::details::ShuffleXor(0xffffffffu, v, m);
      v = (lane & m) ? s(o, v) : s(v, o);  // the earlier lane's state first
    }
    return v;
  };
  if (warp < lv.count) {
    const Acc g = group_fold(warp);
    if (lane == 0) s_group[warp] = g;
    if (warp == 0 && digit(0) == kLookbackFan - 1) {
      // This tile closes groups: S(k+1) = Gk (+) Sk(last) for each level k whose digits
      // 0..k are all 31, published before anything else waits. They need only G0..Gk,
      // never a higher level's G (else the closing tiles would wait on one another in a
      // chain: 415 GB/s when they did), so warp 0 folds them itself, level by level.
      Acc a = total;
      for (int k = 0; k + 1 < lv.count && digit(k) == kLookbackFan - 1; ++k) {
        a = s(k == 0 ? g : group_fold(k), a);
        if (lane == 0) st.Publish(lv.offset[k + 1] + row * lv.per_row[k + 1] + (t >> (5 * (k + 1))), a);
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    Acc e = s_group[lv.count - 1];
    for (int k = lv.count - 2; k >= 0; --k) e = s(e, s_group[k]);
    s_exclusive = e;
  }
  __syncthreads();
  // The tile's prefix folds into every item. (Folding each thread's run first and the
  // prefix once per thread, two combines per element instead of three, made
  // cumsum_f32_256M 0.944x as fast, H200 run T2, and logcumsumexp of long lines
  // 0.97-1.12x: not kept.)
  const Acc carry = s_exclusive;
#pragma unroll
  for (int j = 0; j < NX; ++j) items[j] = s(carry, items[j]);
  StoreRun<Scanner, NX>(s, items, L, t0, p0, sh.reverse, sh.exclusive, vec_out, reinterpret_cast<Out*>(s_stage),
                        out + row * L,
                        Scanner::kHasIndex ? index + row * L : nullptr);
}

// The look-back's tiles of `length` elements.
}  // namespace scan
}  // namespace kps
