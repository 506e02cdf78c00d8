// A device-wide LSD radix sort of one line with 32-bit radix keys, one pass per 8-bit
// digit (the onesweep scheme of Adinets & Merrill, 2022), with KPS's key encode fused
// into the first pass and the decode into the last: the first pass reads x itself and
// makes the keys and positions on the fly, the last writes the sorted values and the
// int64 positions straight to the outputs. Around CUB's onesweep the encode and decode
// were two more passes over memory (0.95 of 3.0 ms for 64M floats).
//
// - HistogramKernel: every pass's digit counts in one read of x (shared-memory counts,
//   per warp, then one global add per bin and block; integer adds, so the counts are
//   exact).
// - DigitStartsKernel: each pass's exclusive scan of its 256 counts.
// - OnesweepPassKernel: block b takes tile b (kTile keys). Each warp ranks its keys by
//   digit, with ballots or __match_any_sync as the pass's digits suggest (stable: a
//   warp's keys go in position order), the block adds the warps' counts per digit,
//   and one thread per digit finds the count of that digit in all earlier tiles by a
//   decoupled look-back (aggregates, then inclusive counts, in one 32-bit word per tile
//   and digit). The tile's keys are then placed in
//   shared memory in digit order and written out, each at its digit's start + the
//   earlier tiles' count + its rank in the tile. Counts are integers, so the result does
//   not depend on timing.
//
// Tiles go by blockIdx.x, as in the scan's look-back (scan_launch.cuh): blocks are
// dispatched in increasing index order, so the tiles a block waits on are running or
// done.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "functors/binary.h"
#include "ops/element_bits.cuh"
#include "ops/sort/sort_keys.cuh"
#include "primitives/cumsum.cuh"
#include "registry/data_type.h"

namespace kps {
namespace sort {
namespace onesweep {

inline constexpr int kThreads = 256;
inline constexpr int kItems = 16;  // keys per thread
inline constexpr int kTile = kThreads * kItems;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kWarpKeys = kTile / kWarps;
inline constexpr int kBins = 256;
inline constexpr int kMaxPasses = 4;
static_assert(kThreads == kBins, "a thread per digit");

// Look-back words: the flag in the top 2 bits, the count in the low 30 (lines of fewer
// than 2^30 keys take this path).
inline constexpr uint32_t kAggregate = 1u << 30;
inline constexpr uint32_t kInclusive = 2u << 30;
inline constexpr uint32_t kCountMask = (1u << 30) - 1;

// counts[p * kBins + d]: keys whose digit p is d.
__global__ void __launch_bounds__(kThreads) HistogramKernel(const void* x, DataType dtype, int64_t n, uint32_t flip,
                                                            int passes, uint32_t* counts) {
  // Per warp, so that warps do not contend for the hot bins of skewed digits.
  __shared__ uint32_t s_counts[kWarps][kMaxPasses * kBins];
  for (int i = threadIdx.x; i < kWarps * kMaxPasses * kBins; i += kThreads) (&s_counts[0][0])[i] = 0;
  __syncthreads();
  uint32_t* mine = s_counts[threadIdx.x / 32];
  for (int64_t t = blockIdx.x; t * kTile < n; t += gridDim.x) {
    uint32_t key[kItems];
    const int64_t first = t * kTile + threadIdx.x;
    LoadKeyRun<kItems>(x, dtype, n, first, kThreads, flip, key);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (first + static_cast<int64_t>(j) * kThreads < n) {
        for (int p = 0; p < passes; ++p) atomicAdd(&mine[p * kBins + ((key[j] >> (8 * p)) & (kBins - 1))], 1u);
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < passes * kBins; i += kThreads) {
    uint32_t c = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) c += s_counts[w][i];
    if (c != 0) atomicAdd(&counts[i], c);
  }
}

// starts[p * kBins + d]: where digit d's keys begin after pass p (exclusive scan);
// occupied[p]: how many of pass p's digits occur.
__global__ void __launch_bounds__(kBins) DigitStartsKernel(const uint32_t* counts, int passes, uint32_t* starts,
                                                           uint32_t* occupied) {
  for (int p = 0; p < passes; ++p) {
    uint32_t in[1] = {counts[p * kBins + threadIdx.x]}, out[1];
    Cumsum<uint32_t, uint32_t, 1, kBins>(out, in, AddFunctor<uint32_t>{}, /*exclusive=*/true);
    starts[p * kBins + threadIdx.x] = out[0];
    const int used = __syncthreads_count(in[0] != 0);
    if (threadIdx.x == 0) occupied[p] = static_cast<uint32_t>(used);
  }
}

// How a pass ranks keys within a warp: by ballots (one per digit bit) or by
// __match_any_sync; kRankAuto picks match when at most kMatchMaxDigits digits occur.
enum RankMode : int { kRankBallot = 0, kRankMatch = 1, kRankAuto = 2 };
inline constexpr uint32_t kMatchMaxDigits = 64;

// One digit pass. kFirst: keys from x (encoded, ^ flip) with their positions; else
// keys_in/pos_in. kLast: values (x's dtype, decoded) and int64 positions to the outputs
// (either may be null); else keys_out/pos_out. `status`: kBins words per tile, zeroed.
template <bool kFirst, bool kLast>
__global__ void __launch_bounds__(kThreads, 4) OnesweepPassKernel(const void* x, DataType dtype, int elem_size,
                                                               int64_t n, uint32_t flip, int shift,
                                                               const uint32_t* __restrict__ keys_in,
                                                               const int* __restrict__ pos_in,
                                                               uint32_t* __restrict__ keys_out,
                                                               int* __restrict__ pos_out, void* values,
                                                               int64_t* indices, const uint32_t* digit_starts,
                                                               const uint32_t* occupied, int rank_mode,
                                                               uint32_t* status) {
  __shared__ uint32_t s_keys[kTile];
  __shared__ int s_pos[kTile];
  __shared__ uint32_t s_warp[kWarps][kBins];  // per warp: counts, then offsets within the digit
  __shared__ uint32_t s_tile_start[kBins];    // the tile's first slot of each digit
  __shared__ int64_t s_dest[kBins];           // the output position of that slot
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int64_t tile = blockIdx.x;
  const int64_t base = tile * kTile;
  for (int i = tid; i < kWarps * kBins; i += kThreads) (&s_warp[0][0])[i] = 0;

  // A warp's keys: item j of lane l is key base + warp * kWarpKeys + j * 32 + l, so
  // (j, l) order is position order.
  uint32_t key[kItems];
  int pos[kItems];
  const int64_t first = base + warp * kWarpKeys + lane;
  if constexpr (kFirst) LoadKeyRun<kItems>(x, dtype, n, first, 32, flip, key);
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int64_t e = first + j * 32;
    if (e < n) {
      if constexpr (!kFirst) key[j] = keys_in[e];
      pos[j] = kFirst ? static_cast<int>(e) : pos_in[e];
    } else {
      pos[j] = -1;  // past the end: neither counted nor stored
    }
  }
  __syncthreads();

  // Rank within the warp: lanes with the same digit in round j find each other, and the
  // lowest of them advances the warp's count of that digit. Finding them by one ballot per
  // digit bit (and one for past-the-end keys) took the first two passes of
  // sort_f32_64M (uniform digits) from 0.89 and 0.79 ms with __match_any_sync to 0.71
  // and 0.68, but the last (float sign and exponent: about 20 digits occur) from 0.65 to
  // 0.82 (ncu; two machines), so a pass with few digits matches.
  const bool match = rank_mode == kRankMatch || (rank_mode == kRankAuto && *occupied <= kMatchMaxDigits);
  uint32_t rank[kItems];
  const unsigned lanes_before = (1u << lane) - 1u;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const bool valid = pos[j] >= 0;
    const int d = static_cast<int>((key[j] >> shift) & (kBins - 1));
    unsigned peers;
    if (match) {
      peers = __match_any_sync(0xffffffffu, valid ? d : kBins);
    } else {
      peers = __ballot_sync(0xffffffffu, valid);
      if (!valid) peers = ~peers;
#pragma unroll
      for (int b = 0; b < 8; ++b) {
        const bool bit = (d >> b) & 1;
        const unsigned set = __ballot_sync(0xffffffffu, bit);
        peers &= bit ? set : ~set;
      }
    }
    const int leader = __ffs(peers) - 1;
    uint32_t before = 0;
    if (lane == leader && valid) before = atomicAdd(&s_warp[warp][d], static_cast<uint32_t>(__popc(peers)));
    rank[j] = __shfl_sync(0xffffffffu, before, leader) + __popc(peers & lanes_before);
    __syncwarp();  // this round's counts before the next round's
  }
  __syncthreads();

  // Thread d: the tile's count of digit d, the warps' offsets within it, the look-back.
  const int d = tid;
  uint32_t count = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const uint32_t c = s_warp[w][d];
    s_warp[w][d] = count;
    count += c;
  }
  uint32_t* my_status = status + tile * kBins + d;
  if (tile == 0) {
    atomicExch(my_status, kInclusive | count);
  } else {
    atomicExch(my_status, kAggregate | count);
  }
  uint32_t tile_start[1], cnt[1] = {count};
  Cumsum<uint32_t, uint32_t, 1, kThreads>(tile_start, cnt, AddFunctor<uint32_t>{}, /*exclusive=*/true);
  s_tile_start[d] = tile_start[0];
  uint32_t before = 0;
  if (tile > 0) {
    for (int64_t t = tile - 1;; --t) {
      uint32_t w;
      do {
        w = *reinterpret_cast<volatile uint32_t*>(status + t * kBins + d);
      } while ((w & ~kCountMask) == 0);
      before += w & kCountMask;
      if (w & kInclusive) break;
    }
    atomicExch(my_status, kInclusive | (before + count));
  }
  s_dest[d] = static_cast<int64_t>(digit_starts[d]) + before;
  __syncthreads();

  // The tile in digit order in shared memory, then out.
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    if (pos[j] >= 0) {
      const int dj = static_cast<int>((key[j] >> shift) & (kBins - 1));
      const uint32_t slot = s_tile_start[dj] + s_warp[warp][dj] + rank[j];
      s_keys[slot] = key[j];
      s_pos[slot] = pos[j];
    }
  }
  __syncthreads();
  const int tile_n = static_cast<int>(n - base < kTile ? n - base : kTile);
  for (int i = tid; i < tile_n; i += kThreads) {
    const uint32_t k = s_keys[i];
    const int dk = static_cast<int>((k >> shift) & (kBins - 1));
    const int64_t dst = s_dest[dk] + (i - static_cast<int>(s_tile_start[dk]));
    const int p = s_pos[i];
    if constexpr (kLast) {
      if (indices != nullptr) indices[dst] = p;
      if (values != nullptr) {
        uint64_t bits;
        if (KeyToBits<uint32_t>(k ^ flip, dtype, &bits)) {
          StoreBits(values, dst, bits, elem_size);
        } else {
          CopyElement(values, dst, x, p, elem_size);  // NaN or zero: the element itself
        }
      }
    } else {
      keys_out[dst] = k;
      pos_out[dst] = p;
    }
  }
}

}  // namespace onesweep
}  // namespace sort
}  // namespace kps
