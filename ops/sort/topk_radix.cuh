// The device side of topk's radix select (topk_cuda.cu), the scheme PyTorch's topk uses:
// the k-th key of a line is found one 8-bit digit at a time, from the most significant:
// each pass counts the digits of the keys that are still candidates (their higher digits
// equal the prefix found so far: CountCandidateDigits), and a scan over the 256 counts
// picks the digit that holds the k-th (FindDigit). After KeyBits / 8 passes the prefix is
// the threshold key T, and the winners are every key below T plus the first
// (k - count below) keys equal to T in position order (GatherWinners). They come out in
// position order, which is what `sorted` = false returns; the caller sorts them otherwise.
//
// Primitives: the digit scan is kps::Cumsum (primitives/cumsum.cuh) with the radix
// counts' combiner, digits are kps::RadixDigit's (primitives/radix.cuh). Kernel logic
// that stays here: the per-warp shared histograms, and the gather's ranking by warp
// ballots (a scan of two flags per tile, where the running counts must be block-uniform
// for the early stop).
//
// Order: ascending radix keys (sort_keys.cuh), complemented for `largest`, ties by
// position, so the winners are exactly the first k of the stable sort.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/sort/sort_keys.cuh"
#include "primitives/cumsum.cuh"
#include "primitives/radix.cuh"

namespace kps {
namespace sort {
namespace radix_select {

// Threads of every radix-select block: FindDigit gives each of the 256 digits a thread.
inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kBins = kps::kRadixBins<>;

// The digit of a 32- or 64-bit key at `shift` (kps::RadixDigit takes the 32-bit half
// that holds it).
template <typename K>
__device__ __forceinline__ int DigitOf(K key, int shift) {
  if constexpr (sizeof(K) == 8) return kps::RadixDigit(static_cast<uint32_t>(key >> (shift & ~31)), shift & 31);
  return kps::RadixDigit(static_cast<uint32_t>(key), shift);
}

// The lines are read through a Load as in topk_select.cuh (BitsLoad): Batch<N, kStride>(p0,
// end, raw) loads the raw bits at positions p0 + u * kStride below end, Key(raw) makes the
// (flipped) key. Raw loads first, keys after: a dtype switch between loads made each load
// wait for the one before (sort_keys.cuh, LoadKeyRun).
template <typename K, typename Load>
__device__ __forceinline__ K KeyAt(const Load& load, int p, int end) {
  typename Load::Raw raw[1];
  load.template Batch<1, 1>(p, end, raw);
  return load.Key(raw[0]);
}

// Adds to the calling warp's histogram (warp_hist, 256 shared counters) the digit at
// `shift` of every key in positions [begin, end) of the line whose bits under `mask`
// equal `prefix` (the candidates). Four loads in flight per thread before any count: the
// loop is loads and one shared atomic each. Per-warp histograms, because ties (a few
// distinct values) put a whole block's atomics on one counter.
template <typename K, typename Load>
__device__ __forceinline__ void CountCandidateDigits(const Load& load, int begin, int end, K prefix, K mask,
                                                     int shift, uint32_t* warp_hist) {
  constexpr int kUnroll = 4;
  for (int p0 = begin + static_cast<int>(threadIdx.x); p0 < end; p0 += kThreads * kUnroll) {
    typename Load::Raw raw[kUnroll];
    load.template Batch<kUnroll, kThreads>(p0, end, raw);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const K key = load.Key(raw[u]);
      if (p0 + u * kThreads < end && (key & mask) == prefix) atomicAdd(&warp_hist[DigitOf(key, shift)], 1u);
    }
  }
}

// The digit that holds the k_rem-th candidate (1-based), the candidates of smaller digits
// (*below) and of that digit (*same): thread d < 256 passes `count`, the candidates with
// digit d (others pass 0), and every thread gets the answer. s_pick: 3 shared words. A
// block of kThreads (1-D); block-wide (barriers inside).
// Precondition: 1 <= k_rem <= the sum of the counts, so exactly one digit qualifies.
__device__ __forceinline__ void FindDigit(uint32_t count, uint32_t k_rem, uint32_t* s_pick, int* digit,
                                          uint32_t* below, uint32_t* same) {
  const int tid = static_cast<int>(threadIdx.x);
  uint32_t excl;
  kps::Cumsum<uint32_t, uint32_t, 1, kThreads>(&excl, &count, kps::details::RadixCountSum{}, /*exclusive=*/true);
  if (tid < kBins && excl < k_rem && k_rem <= excl + count) {
    s_pick[0] = static_cast<uint32_t>(tid);
    s_pick[1] = excl;
    s_pick[2] = count;
  }
  __syncthreads();
  *digit = static_cast<int>(s_pick[0]);
  *below = s_pick[1];
  *same = s_pick[2];
  __syncthreads();  // s_pick and Cumsum's scratch are free for the next call
}

// Writes the winners among positions [begin, end) of a line, in position order: every key
// whose bits under `mask` are below `thr`, and keys equal to it while fewer than `eq_needed` equal keys came before
// (counting from the line's start). better_before and equal_before: the keys below and
// equal to `thr` in the line before `begin` (0 for a whole line; the split path's scan
// over blocks otherwise). emit(slot, p) stores the winner at position p into rank `slot`
// of the position-ordered winners (slot = winners before it). Stops as soon as all
// `better_total` keys below thr and eq_needed equal ones were seen: the rest cannot win.
// Tiles of one element per thread ranked by two warp ballots (below, equal) and the warps'
// totals in s_tot, double-buffered so one barrier per tile suffices. Block-wide.
// The mask is the digits the passes fixed: all of them, or fewer where a pass found that
// every candidate of its digit wins (then the keys equal to thr under the mask are
// exactly eq_needed, and all of them win).
template <typename K, typename Load, typename Emit>
__device__ __forceinline__ void GatherWinners(const Load& load, int begin, int end, K thr, K mask, uint32_t eq_needed,
                                              uint32_t better_total, uint32_t better_before, uint32_t equal_before,
                                              uint32_t (*s_tot)[kWarps][2], const Emit& emit) {
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid / 32;
  const uint32_t lanes_below = (1u << lane) - 1u;
  int parity = 0;
  for (int t0 = begin; t0 < end; t0 += kThreads, parity ^= 1) {
    if (better_before >= better_total && equal_before >= eq_needed) break;  // block-uniform
    const int p = t0 + tid;
    const bool in = p < end;
    const K key = KeyAt<K>(load, p, end) & mask;
    const bool b = in && key < thr, e = in && key == thr;
    const uint32_t bb = __ballot_sync(0xffffffffu, b), be = __ballot_sync(0xffffffffu, e);
    if (lane == 0) {
      s_tot[parity][warp][0] = __popc(bb);
      s_tot[parity][warp][1] = __popc(be);
    }
    __syncthreads();
    uint32_t wb = 0, we = 0, tb = 0, te = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const uint32_t cb = s_tot[parity][w][0], ce = s_tot[parity][w][1];
      if (w < warp) {
        wb += cb;
        we += ce;
      }
      tb += cb;
      te += ce;
    }
    if (b || e) {
      const uint32_t br = better_before + wb + __popc(bb & lanes_below);
      const uint32_t er = equal_before + we + __popc(be & lanes_below);
      if (b || er < eq_needed) emit(static_cast<int>(br + min(er, eq_needed)), p);
    }
    better_before += tb;
    equal_before += te;
  }
}

}  // namespace radix_select
}  // namespace sort
}  // namespace kps
