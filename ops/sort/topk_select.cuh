// The device side of topk's selection kernel (topk_cuda.cu): each lane streams its share
// of a line keeping its NX best in registers (ScanLine), then the block gathers its
// candidates (CollectCandidates). Its own header so that a benchmark kernel outside the
// library can include and time the same code.
//
// Primitives: a lane's list is kept by kps::InsertSorted (primitives/sort.cuh), and the
// contiguous lines' batches load through kps::ReadDataStriped (primitives/radix.cuh).
// What stays kernel logic: the bar (a warp bitonic sort of one key per lane, a shared
// atomicMin), the first batch's sorting network, loads of lines whose elements are
// `inner` apart (64-bit offsets, which ReadDataStriped's int indices do not cover), and
// CollectCandidates: its prefix count is a warp scan in a 2-D block (lanes on
// threadIdx.x, warps on threadIdx.y, as the warp-level Sort after it needs), where
// kps::Cumsum requires a 1-D block.
//
// Order: ascending radix keys (sort_keys.cuh), complemented for `largest`, ties by
// position.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "ops/sort/sort_keys.cuh"
#include "primitives/radix.cuh"
#include "primitives/sort.cuh"

namespace kps {
namespace sort {
namespace select {

// Atomics on the block's shared bar, for both key widths (uint64_t is unsigned long,
// which the atomic overloads do not take).
__device__ __forceinline__ uint32_t AtomicLoadShared(uint32_t* p) { return atomicOr(p, 0u); }
__device__ __forceinline__ uint64_t AtomicLoadShared(uint64_t* p) {
  return atomicOr(reinterpret_cast<unsigned long long*>(p), 0ull);
}
__device__ __forceinline__ void AtomicMinShared(uint32_t* p, uint32_t v) { atomicMin(p, v); }
__device__ __forceinline__ void AtomicMinShared(uint64_t* p, uint64_t v) {
  atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

template <typename K>
__device__ __forceinline__ bool Before(K a, int pa, K b, int pb) {
  return a < b || (a == b && pa < pb);
}

// The scan's view of the line. Batch<N, kStride>(p0, length, raw) loads the raw bits of
// the elements at positions p0 + u * kStride (u < N) below length, 0 past it (Raw is the
// element's width, so the dtype switch sits outside the loop), Key(bits) makes its
// ascending key, and MakePass(lim) a test that every element whose (flipped) key is at
// most `lim` passes. The test may pass a few more: the exact key is made only for
// the elements that pass, in the insertion path.
//
// BitsLoad: any dtype, the exact key compared.
template <typename K, typename RawT>
struct BitsLoad {
  using Raw = RawT;
  const Raw* p;
  int64_t inner;
  DataType dtype;
  K flip;
  // Positions are `inner` elements apart, so an element's offset is 64-bit (pos * inner
  // may pass 2^31): ReadDataStriped's int indices do not cover it.
  template <int N, int kStride>
  __device__ __forceinline__ void Batch(int p0, int length, Raw (&raw)[N]) const {
#pragma unroll
    for (int u = 0; u < N; ++u) {
      const int pos = p0 + u * kStride;
      raw[u] = Raw(0);
      if (pos < length) raw[u] = p[static_cast<int64_t>(pos) * inner];
    }
  }
  __device__ __forceinline__ K Key(Raw b) const { return KeyOfBits<K>(static_cast<K>(b), dtype) ^ flip; }
  struct Pass {
    const BitsLoad* load;
    K lim;
    __device__ __forceinline__ bool operator()(Raw b) const { return load->Key(b) <= lim; }
  };
  __device__ __forceinline__ Pass MakePass(K lim) const { return Pass{this, lim}; }
};

// Float32: the test is one float compare against the value at the bound, with no key
// made (the key transform was most of the loop's instructions: ncu showed the kernel
// issue-bound at 85% with DRAM at 37%). NaN, the largest key, passes a `largest` test
// through the unordered compare; for smallest it passes as a harmless extra.
// kUnit: lines are contiguous (inner == 1, topk along the last dim), so a batch is a
// strided run (kps::ReadDataStriped) whose loads take constant offsets from one address
// instead of a multiply per load.
// topk of 4096 x 32768 float32, H100: constant offsets 0.28 ms, a multiply per load 0.37.
template <bool kLargest, bool kUnit>
struct Float32Load {
  using Raw = uint32_t;
  const uint32_t* p;
  int64_t inner;
  template <int N, int kStride>
  __device__ __forceinline__ void Batch(int p0, int length, Raw (&raw)[N]) const {
    if constexpr (kUnit) {
      ReadDataStriped<uint32_t, uint32_t, N>(raw, p, p0, kStride, length, 0u);
    } else {
#pragma unroll
      for (int u = 0; u < N; ++u) {
        const int pos = p0 + u * kStride;
        raw[u] = 0u;
        if (pos < length) raw[u] = p[static_cast<int64_t>(pos) * inner];
      }
    }
  }
  __device__ __forceinline__ uint32_t Key(Raw b) const {
    const uint32_t k = KeyOfBits<uint32_t>(b, DataType::kFloat32);
    return kLargest ? ~k : k;
  }
  struct Pass {
    float t;
    __device__ __forceinline__ bool operator()(Raw b) const {
      const float x = __uint_as_float(b);
      return kLargest ? !(x < t) : !(x > t);
    }
  };
  // The float t at the bound. Positive keys are the bits with the sign set, negative
  // ones the complemented bits; keys that no float has (past +inf, below -inf, the
  // -0.0 slot) round outward, which only lets more elements pass.
  __device__ __forceinline__ Pass MakePass(uint32_t lim) const {
    uint32_t bits;
    if (kLargest) {  // passes: key >= m
      const uint32_t m = ~lim;
      // Past +inf only NaN qualifies, and it passes any t. Below -inf's key, ~m is a NaN
      // pattern, and everything passes !(x < NaN).
      bits = m >= 0x80000000u ? min(m & 0x7fffffffu, 0x7f800000u) : ~m;
    } else {  // passes: key <= lim
      bits = lim >= 0xff800000u   ? 0x7f800000u          // +inf: all pass
             : lim >= 0x80000000u ? (lim & 0x7fffffffu)  // t >= +0
             : lim >= 0x007fffffu ? ~lim                 // t < 0 (-0.0 for the unused slot)
                                  : 0xff800000u;         // -inf: no real key is below it
    }
    return Pass{__uint_as_float(bits)};
  }
};

// This lane's share of the line (positions tid, tid + kThreads, ...) into its NX best,
// kept in order. Elements strictly worse than `bar` are skipped: a bar is always the
// k-th best of k distinct elements already held, so nothing worse can win. Each warp
// computes one from its lanes' best elements after it inserts, and the block keeps the
// best of the warps' bars in shared memory (`block_bar`), which a warp reads before it
// inserts: 8 warps' worth of elements make the bar about 8 times as selective as the
// warp's own (a warp-only bar let a candidate into most batches). A warp whose lanes
// all skip a batch runs no insertion code at all, and within a batch only the elements
// some lane takes run it, so the loop is loads and one compare per element.
template <typename K, int NX, int kThreads, typename Load>
__device__ __forceinline__ void ScanLine(const Load& load, int length, int k, int tid, K* block_bar, K (&key)[NX],
                                         int (&pos)[NX]) {
  // Loads in flight per lane before the inserts and the bar's update: 4 left the kernel
  // latency-bound (0.91 ms for 4096 x 32768, DRAM at 0.5 TB/s); 16 was slower than 8.
  constexpr int kBatch = 8;
  using Raw = typename Load::Raw;
  K bar = ~K(0);
  const int lane = tid & 31;
  // The warp's bar: the k-th smallest of the 32 lanes' best keys (a bitonic sort across
  // the warp, one key per lane). Those are k distinct elements, all at least as good.
  auto update_bar = [&] {
    K best = key[0];
#pragma unroll
    for (int size = 2; size <= 32; size *= 2) {
#pragma unroll
      for (int stride = size / 2; stride > 0; stride /= 2) {
        const K other = __shfl_xor_sync(0xffffffffu, best, stride);
        const bool keep_min = ((lane & stride) == 0) == ((lane & size) == 0 || size == 32);
        best = keep_min ? (other < best ? other : best) : (other < best ? best : other);
      }
    }
    const K warp_bar = __shfl_sync(0xffffffffu, best, k - 1);
    if (warp_bar < bar) {
      bar = warp_bar;
      if (lane == 0) AtomicMinShared(block_bar, warp_bar);
    }
  };
  // Every load of a batch first: with each key made right after its load, the next load
  // waited for the data (ncu: most stalls on loads, DRAM at 22%; 0.64 -> 0.36 ms).
  auto load_batch = [&](int p0, Raw (&raw)[kBatch]) { load.template Batch<kBatch, kThreads>(p0, length, raw); };
  // The first batch fills the empty lists through a sorting network (Batcher's 19
  // comparators for 8) instead of 8 insertions of NX steps each.
  const int w_first = tid - lane;  // the loop bound is the warp's, so every lane reaches the shuffles
  if (w_first >= length) return;
  {
    static_assert(kBatch == 8 && NX >= kBatch, "the network sorts one batch of 8 into the list");
    Raw raw[kBatch];
    load_batch(w_first + lane, raw);
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int p = w_first + lane + u * kThreads;
      key[u] = p < length ? load.Key(raw[u]) : ~K(0);
      pos[u] = p < length ? p : INT_MAX;
    }
    auto cas = [&](int i, int j) {
      if (Before(key[j], pos[j], key[i], pos[i])) {
        const K tk = key[i];
        const int tp = pos[i];
        key[i] = key[j];
        pos[i] = pos[j];
        key[j] = tk;
        pos[j] = tp;
      }
    };
    cas(0, 1), cas(2, 3), cas(4, 5), cas(6, 7);
    cas(0, 2), cas(1, 3), cas(4, 6), cas(5, 7);
    cas(1, 2), cas(5, 6);
    cas(0, 4), cas(1, 5), cas(2, 6), cas(3, 7);
    cas(2, 4), cas(3, 5);
    cas(1, 2), cas(3, 4), cas(5, 6);
    update_bar();
  }
  for (int w0 = w_first + kThreads * kBatch; w0 < length; w0 += kThreads * kBatch) {
    const int p0 = w0 + lane;
    Raw raw[kBatch];
    load_batch(p0, raw);
    // The block's bar, which other warps may have tightened, read once per batch so the
    // filter and the insertion use the same bar (no slower than reading it in the
    // insertion path only). An atomic read (the other warps write it with atomicMin) by
    // one lane, broadcast.
    K shared_bar = lane == 0 ? AtomicLoadShared(block_bar) : K(0);
    shared_bar = __shfl_sync(0xffffffffu, shared_bar, 0);
    bar = shared_bar < bar ? shared_bar : bar;
    // Positions only grow along a lane, so a new element beats the lane's last slot iff
    // its key is smaller, or the slot is empty: keys up to `lim` are candidates.
    const bool list_full = pos[NX - 1] != INT_MAX;
    const bool can_win = !(list_full && key[NX - 1] == K(0));
    K lim = list_full ? static_cast<K>(key[NX - 1] - K(1)) : ~K(0);
    lim = bar < lim ? bar : lim;
    const auto pass = load.MakePass(lim);
    bool any = false;
#pragma unroll
    for (int u = 0; u < kBatch; ++u) any |= p0 + u * kThreads < length && pass(raw[u]);
    // A warp-uniform branch, so the insertion code is skipped, not run under predicates.
    if (__any_sync(0xffffffffu, any && can_win)) {
      bool inserted = false;
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int p = p0 + u * kThreads;
        const K v = load.Key(raw[u]);
        // Equal to the bar may still win on position: only strictly worse is skipped.
        const bool take = p < length && v <= bar && Before(v, p, key[NX - 1], pos[NX - 1]);
        if (__any_sync(0xffffffffu, take)) {
          inserted = true;
          if (take) InsertSorted<K, int, NX>(key, pos, v, p);
        }
      }
      if (inserted) update_bar();
    }
  }
}

// The warp's k best of its lanes' ordered lists (k <= NX), by k rounds of taking the
// smallest head across the warp: lane r < k gets the r-th (lanes from k on, and lanes
// past the real elements, get empty slots). Cheaper than sorting all 32 x NX entries,
// most of which cannot win.
template <typename K, int NX>
__device__ __forceinline__ void WarpBest(int k, int lane, K (&key)[NX], int (&pos)[NX], K& out_key, int& out_pos) {
  out_key = ~K(0);
  out_pos = INT_MAX;
  for (int r = 0; r < k; ++r) {
    K mk = key[0];
    int mp = pos[0];
#pragma unroll
    for (int s = 16; s > 0; s /= 2) {
      const K ok = __shfl_xor_sync(0xffffffffu, mk, s);
      const int op = __shfl_xor_sync(0xffffffffu, mp, s);
      if (Before(ok, op, mk, mp)) {
        mk = ok;
        mp = op;
      }
    }
    if (lane == r) {
      out_key = mk;
      out_pos = mp;
    }
    // Real heads are distinct (positions are); empty ones all match and all shift, which
    // leaves them empty.
    if (key[0] == mk && pos[0] == mp) {
#pragma unroll
      for (int j = 0; j + 1 < NX; ++j) {
        key[j] = key[j + 1];
        pos[j] = pos[j + 1];
      }
      key[NX - 1] = ~K(0);
      pos[NX - 1] = INT_MAX;
    }
  }
}

// The block's candidates into cand_key/cand_pos[64], which hold empty slots on entry:
// every listed element whose key is at most `bar`, the block's final bar (all of the
// block's k best are), in any order. When more than 64 are (ties at the bar), each
// warp's k best instead, NX slots per warp. Called by every thread; the block is
// synchronized on return. The usual case costs a prefix count per lane, where taking
// each warp's k best costs k rounds of shuffles (a sixth of the kernel's instructions).
template <typename K, int NX>
__device__ __forceinline__ void CollectCandidates(int k, K bar, int* count, K (&key)[NX], int (&pos)[NX],
                                                  K* cand_key, int* cand_pos) {
  const int lane = threadIdx.x, warp = threadIdx.y;
  int c = 0;  // the lists are ordered: a prefix is at most the bar
#pragma unroll
  for (int j = 0; j < NX; ++j) c += key[j] <= bar && pos[j] != INT_MAX;
  int incl = c;
#pragma unroll
  for (int s = 1; s < 32; s *= 2) {
    const int t = __shfl_up_sync(0xffffffffu, incl, s);
    if (lane >= s) incl += t;
  }
  int base = 0;
  if (lane == 31) base = atomicAdd(count, incl);
  base = __shfl_sync(0xffffffffu, base, 31) + incl - c;
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    if (j < c && base + j < 64) {
      cand_key[base + j] = key[j];
      cand_pos[base + j] = pos[j];
    }
  }
  __syncthreads();
  if (*count <= 64) return;
  K wk;
  int wp;
  WarpBest<K, NX>(k, lane, key, pos, wk, wp);
  if (lane < NX) {
    cand_key[warp * NX + lane] = wk;
    cand_pos[warp * NX + lane] = wp;
  }
  __syncthreads();
}

}  // namespace select
}  // namespace sort
}  // namespace kps
