// Radix: the building blocks of an LSD radix sort over unsigned 32-bit keys, one digit of
// kRadixBits (8: 256 bins) per pass. A warp ranks its keys by digit (WarpRadixRank), the
// block turns the warps' digit counts into slots in its tile (RadixWarpCountsTotal,
// RadixWarpCountsToSlots), tiles find the counts of the tiles before them by a decoupled
// look-back (RadixLookBackPublish, RadixLookBack), and a block counts the digits of every
// pass in one read of the input (BlockRadixHistogram). Keys are what the caller makes of
// its values: an order-preserving unsigned encoding (ops/sort/sort_keys.cuh is one).
//
//   // One pass of a block of kThreads (= kWarps * 32) over a tile; warp w holds the
//   // tile's keys [w * 32 * NX, (w + 1) * 32 * NX), item j of lane l being key j * 32 + l.
//   __shared__ uint32_t warp_counts[kWarps][256];   // zeroed, then a barrier
//   uint32_t rank[NX];
//   kps::WarpRadixRank<NX>(key, shift, /*match=*/false, warp_counts[warp], rank);
//   __syncthreads();
//   const uint32_t total = kps::RadixWarpCountsTotal<kWarps>(warp_counts);  // thread d: digit d
//   uint32_t tile_start;
//   kps::RadixWarpCountsToSlots<kThreads, kWarps>(warp_counts, total, &tile_start);
//   __syncthreads();
//   for (int j = 0; j < NX; ++j)   // the tile in digit order, stable
//     sorted[warp_counts[warp][kps::RadixDigit(key[j], shift)] + rank[j]] = key[j];
#pragma once

#include <cstdint>

#include "primitives/cumsum.cuh"
#include "primitives/datamover.cuh"
#include "primitives/details/macros.cuh"

namespace kps {
namespace details {

// Unsigned addition as a scan combiner (the digit counts are exact integers).
struct RadixCountSum {
  KPS_DEVICE uint32_t initial() const { return 0u; }
  KPS_DEVICE uint32_t operator()(uint32_t a, uint32_t b) const { return a + b; }
};

}  // namespace details

// The bins of a kRadixBits-bit digit.
template <int kRadixBits = 8>
inline constexpr int kRadixBins = 1 << kRadixBits;

// The digit of `key` that starts at bit `shift`: (key >> shift) & (bins - 1).
template <int kRadixBits = 8>
KPS_DEVICE int RadixDigit(uint32_t key, int shift) {
  return static_cast<int>((key >> shift) & (kRadixBins<kRadixBits> - 1));
}

// Ranks a warp's 32 * NX keys by their digit at `shift`, stably: rank[j] becomes
// warp_counts[d] (as it was on entry) plus the number of the warp's keys of the same
// digit d at earlier positions, where item j of lane l is the warp's key j * 32 + l (so
// (j, l) order is position order). On return warp_counts[d] has grown by the warp's
// count of digit d; pass zeroed counts to get ranks within the warp and its histogram.
//
// Lanes with the same digit in round j find each other and the lowest of them advances
// the count with one shared atomic. They find each other by one ballot per digit bit
// (in PTX), or with `match` by __match_any_sync: match is faster only when few digits
// occur (the onesweep sort picks it for passes of at most 16 distinct digits).
// sort_f32_64M, H100, passes 1 and 2: ballots 0.71 and 0.68 ms, match 0.89 and 0.79.
//
// Preconditions: all 32 lanes of the warp call it with the same shift and match;
// warp_counts is this warp's own array of kRadixBins<kRadixBits> counters in shared
// memory (no other warp touches it meanwhile). Warp-level: no block barrier.
//
//   uint32_t rank[NX];
//   kps::WarpRadixRank<NX>(key, 0, false, s_counts[threadIdx.x / 32], rank);
template <int NX, int kRadixBits = 8>
KPS_DEVICE void WarpRadixRank(const uint32_t (&key)[NX], int shift, bool match, uint32_t* warp_counts,
                              uint32_t (&rank)[NX]) {
  const int lane = static_cast<int>(KPS_THREAD_ID_X % 32);
  const unsigned lanes_before = (1u << lane) - 1u;
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    const int d = RadixDigit<kRadixBits>(key[j], shift);
    unsigned peers;
    if (match) {
      peers = __match_any_sync(0xffffffffu, d);
    } else {
      // Per bit: the lanes whose digit has the bit as this lane's. In PTX, so that the
      // test makes the vote's predicate and the complement is predicated: four
      // instructions a bit (the C++ form took seven; ncu: a third of the onesweep pass's
      // issue slots went to ranking).
      peers = 0xffffffffu;
#pragma unroll
      for (int b = 0; b < kRadixBits; ++b) {
        asm("{\n\t.reg .pred p;\n\t.reg .b32 m;\n\t"
            "and.b32 m, %1, %2;\n\tsetp.ne.u32 p, m, 0;\n\t"
            "vote.sync.ballot.b32 m, p, 0xffffffff;\n\t"
            "@!p not.b32 m, m;\n\tand.b32 %0, %0, m;\n\t}"
            : "+r"(peers)
            : "r"(d), "r"(1 << b));
      }
    }
    const int leader = __ffs(peers) - 1;
    uint32_t before = 0;
    if (lane == leader) before = atomicAdd(&warp_counts[d], static_cast<uint32_t>(__popc(peers)));
    rank[j] = __shfl_sync(0xffffffffu, before, leader) + __popc(peers & lanes_before);
    __syncwarp();  // this round's counts before the next round's
  }
}

// Thread d < kRadixBins<kRadixBits>: the block's count of digit d, the sum over the warps
// of warp_counts[w][d] (the counts WarpRadixRank left); 0 in the other threads.
// Per-thread; call after a barrier that follows every warp's WarpRadixRank.
template <int kWarps, int kRadixBits = 8>
KPS_DEVICE uint32_t RadixWarpCountsTotal(const uint32_t (*warp_counts)[kRadixBins<kRadixBits>]) {
  const int d = static_cast<int>(KPS_THREAD_ID_X);
  uint32_t c = 0;
  if (d < kRadixBins<kRadixBits>) {
#pragma unroll
    for (int w = 0; w < kWarps; ++w) c += warp_counts[w][d];
  }
  return c;
}

// Turns the warps' digit counts into their first slots in the tile, digit-major then
// warp-major: afterwards warp_counts[w][d] = (keys of digits < d in the tile) + (keys of
// digit d in warps < w), so warp_counts[w][d] + rank (WarpRadixRank's) is a key's slot in
// the tile sorted stably by digit. total: RadixWarpCountsTotal's value for this thread.
// *tile_start: in thread d < bins, the tile's first slot of digit d (the exclusive scan of
// the totals over the digits).
//
// Block-wide (a Cumsum over the threads): every thread calls it. Preconditions:
// blockDim.x == kBlockThreads, a power of two >= kRadixBins<kRadixBits>, 1-D block; a
// barrier after it before other threads read warp_counts.
//
//   const uint32_t total = kps::RadixWarpCountsTotal<kWarps>(s_warp);
//   uint32_t tile_start;
//   kps::RadixWarpCountsToSlots<kThreads, kWarps>(s_warp, total, &tile_start);
//   __syncthreads();
template <int kBlockThreads, int kWarps, int kRadixBits = 8>
KPS_DEVICE void RadixWarpCountsToSlots(uint32_t (*warp_counts)[kRadixBins<kRadixBits>], uint32_t total,
                                       uint32_t* tile_start) {
  static_assert(kBlockThreads >= kRadixBins<kRadixBits>, "RadixWarpCountsToSlots: a thread per digit");
  const int d = static_cast<int>(KPS_THREAD_ID_X);
  uint32_t start[1], in[1] = {total};
  Cumsum<uint32_t, uint32_t, 1, kBlockThreads>(start, in, details::RadixCountSum{}, /*exclusive=*/true);
  if (d < kRadixBins<kRadixBits>) {
    uint32_t slot = start[0];
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const uint32_t k = warp_counts[w][d];
      warp_counts[w][d] = slot;
      slot += k;
    }
  }
  *tile_start = start[0];
}

// The decoupled look-back over per-tile digit counts (the onesweep scheme of Adinets &
// Merrill, 2022): `status` holds one 32-bit word per tile and digit, status[tile * bins +
// d], zeroed once, and may serve several passes in turn (pass p = 0, 1, ...) without being
// cleared between them. A word holds a count in its low kRadixLookBackCountBits bits (so
// the counts must stay below 2^28) and a state in its top 4: 2p + 1 once pass p has
// published the tile's own count (its aggregate), 2p + 2 its inclusive count (this tile
// and all before); less: not yet.
inline constexpr int kRadixLookBackCountBits = 28;
inline constexpr uint32_t kRadixLookBackCountMask = (1u << kRadixLookBackCountBits) - 1;
KPS_DEVICE uint32_t RadixLookBackAggregateWord(int pass, uint32_t count) {
  return (2u * pass + 1u) << kRadixLookBackCountBits | count;
}
KPS_DEVICE uint32_t RadixLookBackInclusiveWord(int pass, uint32_t count) {
  return (2u * pass + 2u) << kRadixLookBackCountBits | count;
}

// Publishes the tile's count of digit d for the later tiles of pass `pass`: as its
// aggregate, or as its inclusive count when tile == 0. Per-thread (one thread per digit);
// call it as soon as the count is known, so that later tiles wait less.
template <int kRadixBits = 8>
KPS_DEVICE void RadixLookBackPublish(uint32_t* status, int pass, int tile, int d, uint32_t count) {
  atomicExch(status + static_cast<int64_t>(tile) * kRadixBins<kRadixBits> + d,
             tile == 0 ? RadixLookBackInclusiveWord(pass, count) : RadixLookBackAggregateWord(pass, count));
}

// Returns the count of digit d in the tiles before `tile` in pass `pass`, waiting for
// them as needed, and publishes the tile's inclusive count (that plus `count`, this tile's
// own). The earlier tiles' words are read kRadixLookAhead at a time, so that a walk past
// tiles that have published only their aggregates costs a round trip per kRadixLookAhead
// tiles; a word not yet published is read again. Counts are integers, so the sum does
// not depend on the timing.
//
// Per-thread, after RadixLookBackPublish of the same (tile, d). Preconditions: every tile
// before `tile` publishes (is running or will run: tiles taken in blockIdx.x order, which
// CUDA dispatches in increasing order, never wait on a tile that cannot start);
// counts below 2^28.
//
//   if (d < 256) {
//     kps::RadixLookBackPublish(status, pass, tile, d, count);
//     // ... work that does not need the earlier tiles ...
//     before = kps::RadixLookBack(status, pass, tile, d, count);
//   }
inline constexpr int kRadixLookAhead = 4;
template <int kRadixBits = 8>
KPS_DEVICE uint32_t RadixLookBack(uint32_t* status, int pass, int tile, int d, uint32_t count) {
  constexpr int kBins = kRadixBins<kRadixBits>;
  uint32_t before = 0;
  if (tile == 0) return 0;
  int t = tile - 1;
  for (bool done = false; !done;) {
    uint32_t w[kRadixLookAhead];
#pragma unroll
    for (int k = 0; k < kRadixLookAhead; ++k) {
      w[k] = RadixLookBackInclusiveWord(pass, 0);  // tile 0 is inclusive, so the walk never passes it
      if (t - k >= 0) w[k] = *reinterpret_cast<volatile uint32_t*>(status + static_cast<int64_t>(t - k) * kBins + d);
    }
#pragma unroll
    for (int k = 0; k < kRadixLookAhead; ++k) {
      const uint32_t state = w[k] >> kRadixLookBackCountBits;
      if (state < 2u * pass + 1u) break;  // not yet published: from here again
      before += w[k] & kRadixLookBackCountMask;
      --t;
      if (state == 2u * pass + 2u) {
        done = true;
        break;
      }
    }
  }
  atomicExch(status + static_cast<int64_t>(tile) * kBins + d, RadixLookBackInclusiveWord(pass, before + count));
  return before;
}

// Counts the digits of every pass of a radix sort in one read of the keys: for pass p <
// kPasses, the digit (key >> 8p) & 255 (kRadixBits = 8). Each warp counts into its own
// row of shared memory, so that warps do not contend for the hot bins of skewed digits;
// AddTo then adds the rows and does one global atomic per nonzero bin.
//
//   __shared__ kps::BlockRadixHistogram<256, 4>::TempStorage hist_storage;
//   kps::BlockRadixHistogram<256, 4> hist(hist_storage);
//   hist.Zero();                                  // block-wide, ends with a barrier
//   for (each tile of the block) {
//     uint32_t key[16];                            // item j: tile position j * 256 + threadIdx.x
//     ...load the tile striped...
//     hist.Count<16>(key, valid);                 // per-thread
//   }
//   hist.AddTo(counts);                           // counts[p * 256 + d] += ...
//
// Preconditions: blockDim.x == kBlockThreads (a multiple of 32), 1-D block; Zero and AddTo
// are block-wide (every thread calls them); the global counts are uint32_t.
template <int kBlockThreads, int kPasses, int kRadixBits = 8>
class BlockRadixHistogram {
 public:
  static constexpr int kBins = kRadixBins<kRadixBits>;
  static constexpr int kWarps = kBlockThreads / 32;
  static_assert(kBlockThreads % 32 == 0, "BlockRadixHistogram: whole warps");
  struct TempStorage {
    uint32_t counts[kWarps][kPasses * kBins];
  };

  KPS_DEVICE explicit BlockRadixHistogram(TempStorage& storage) : storage_(storage) {}

  // Zeroes the counts; ends with a barrier. Block-wide.
  KPS_DEVICE void Zero() {
    for (int i = KPS_THREAD_ID_X; i < kWarps * kPasses * kBins; i += kBlockThreads) (&storage_.counts[0][0])[i] = 0;
    __syncthreads();
  }

  // Counts this thread's keys of a tile in the striped arrangement: item j is the tile's
  // position j * kBlockThreads + threadIdx.x, counted when below num (the tile's valid
  // keys, the same in every thread). Per-thread (shared atomics into its warp's row).
  template <int NX>
  KPS_DEVICE void Count(const uint32_t (&key)[NX], int num) {
    uint32_t* mine = storage_.counts[KPS_THREAD_ID_X / 32];
    const int first = static_cast<int>(KPS_THREAD_ID_X);
#pragma unroll
    for (int j = 0; j < NX; ++j) {
      if (first + j * kBlockThreads < num) {
#pragma unroll
        for (int p = 0; p < kPasses; ++p) {
          atomicAdd(&mine[p * kBins + ((key[j] >> (kRadixBits * p)) & (kBins - 1))], 1u);
        }
      }
    }
  }

  // Adds the block's counts to counts[p * bins + d] with one atomic per nonzero bin.
  // Block-wide; starts with a barrier (the last Count calls are done).
  KPS_DEVICE void AddTo(uint32_t* counts) {
    __syncthreads();
    for (int i = KPS_THREAD_ID_X; i < kPasses * kBins; i += kBlockThreads) {
      uint32_t c = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) c += storage_.counts[w][i];
      if (c != 0) atomicAdd(&counts[i], c);
    }
  }

 private:
  TempStorage& storage_;
};

}  // namespace kps
