// Sort: block-wide bitonic sort of register values, keys only or keys with an index
// payload, ascending or descending, NaN-aware.
//
//   // Sort one tile of up to 256 * 4 floats per block, with their positions.
//   float key[4];
//   int idx[4];
//   const int valid = min(n - tile_start, 256 * 4);
//   kps::ReadData<float, 4, 1, true>(key, in + tile_start, valid);
//   for (int j = 0; j < 4; ++j) idx[j] = threadIdx.x * 4 + j;
//   kps::Sort<float, float, 4, 256>(key, idx, key, idx, valid, /*ascending=*/true);
//   kps::WriteData<float, 4, 1, true>(out + tile_start, key, valid);
//
// InsertSorted: per-thread insertion into an ordered register list of (key, index)
// pairs, which keeps a thread's NX best of a stream (topk's selection).
#pragma once

#include "primitives/details/comparator.cuh"
#include "primitives/details/macros.cuh"
#include "primitives/details/warp_shuffle.cuh"

namespace kps {
namespace details {

// Shared memory a Sort may take: exchanges between warps go through it in chunks of
// register slots small enough to fit (16 KiB leaves most of the 48 KiB of static shared
// memory to the calling kernel).
inline constexpr int kSortSharedBytes = 16 * 1024;

struct SortKeyTag {};
struct SortIndexTag {};

// The bitonic network over N = NX * BlockSize positions, position p = thread * NX + slot.
// It is the variant in which every merge sorts ascending in position (the first step of
// the merge of size s compares p with p ^ (s - 1), the next ones p with p ^ stride), so
// that elements at positions >= num can stay where they are as virtual "+infinity":
// every comparison that involves one is skipped, which is exactly what comparing with a
// value larger than everything (NaN included) would do. No sentinel value is needed and
// padding can never be confused with a real key.
//
// A step pairs positions p and p ^ M: within a thread when M < NX (compile-time slots),
// by warp shuffles when the partner thread is in the same warp, through shared memory
// otherwise. In a cross-thread step both threads evaluate the same predicate on the same
// pair and keep one element each. Merges up to the size of a warp's tile (32 * NX) are
// unrolled; larger ones (whose steps down to stride 32 * NX cross warps) run as a loop
// around one copy of the warp-level tail, which keeps code size and compile time flat
// in BlockSize.
template <typename K, typename I, bool kWithIndex, int NX, int BlockSize>
struct BitonicSorter {
  static_assert(NX >= 1 && (NX & (NX - 1)) == 0, "Sort: NX must be a power of two");
  static_assert(BlockSize >= 1 && BlockSize <= 1024 && (BlockSize & (BlockSize - 1)) == 0,
                "Sort: BlockSize must be a power of two in [1, 1024]");
  static constexpr int kLogNX = Log2OfPow2(NX);
  static constexpr int kLogN = Log2OfPow2(NX * BlockSize);
  // Merges of size <= 2^kLogWarpTile stay within a warp.
  static constexpr int kLogWarpTile = kLogNX + Log2OfPow2(BlockSize < kWarpSize ? BlockSize : kWarpSize);
  static constexpr int kIndexBytes = kWithIndex ? static_cast<int>(sizeof(I)) : 0;
  static constexpr int kSlotBytes = BlockSize * (static_cast<int>(sizeof(K)) + kIndexBytes);
  // Register slots exchanged per round through shared memory: a power of two <= NX.
  static constexpr int kChunk = kSortSharedBytes / kSlotBytes >= NX ? NX
                                : kSortSharedBytes / kSlotBytes >= 1
                                    ? GetLastPow2(kSortSharedBytes / kSlotBytes)
                                    : 1;
  static constexpr unsigned kMask = BlockSize >= kWarpSize ? kFullWarpMask : ((1u << BlockSize) - 1u);

  K key[NX];
  I idx[kWithIndex ? NX : 1];
  int num;
  bool ascending;
  int tid;

  // True when (a, ia) goes strictly before (b, ib).
  KPS_DEVICE bool Before(K a, I ia, K b, I ib) const {
    if constexpr (kWithIndex) {
      if (SortsBefore(a, b, ascending)) return true;
      if (SortsBefore(b, a, ascending)) return false;
      return ia < ib;
    } else {
      return SortsBefore(a, b, ascending);
    }
  }

  // Step with mask M < NX: both positions in this thread, slots j < (j ^ M).
  template <int M>
  KPS_DEVICE void ThreadStep() {
#pragma unroll
    for (int j = 0; j < NX; ++j) {
      const int jj = j ^ M;
      if (jj > j && tid * NX + jj < num) {
        if (Before(key[jj], idx[kWithIndex ? jj : 0], key[j], idx[kWithIndex ? j : 0])) {
          const K t = key[j];
          key[j] = key[jj];
          key[jj] = t;
          if constexpr (kWithIndex) {
            const I ti = idx[j];
            idx[j] = idx[jj];
            idx[jj] = ti;
          }
        }
      }
    }
  }

  // Keeps, in slot j, the element of the pair (own slot j, partner's value pk) that
  // belongs at this thread's position: both threads of a pair test whether the element at
  // the higher position goes strictly before the one at the lower position, and swap if so.
  // hi_pos: the pair's higher position (the same number in both threads).
  KPS_DEVICE void Keep(int j, K pk, I pi, bool own_is_low, int hi_pos) {
    if (hi_pos >= num) return;  // a virtual +infinity: nothing moves
    const I own_i = idx[kWithIndex ? j : 0];
    const bool take = own_is_low ? Before(pk, pi, key[j], own_i) : Before(key[j], own_i, pk, pi);
    if (take) {
      key[j] = pk;
      if constexpr (kWithIndex) idx[j] = pi;
    }
  }

  // Step with mask M >= NX: position tid * NX + j pairs with partner * NX + (j ^ kSlotMask),
  // partner = tid ^ dist. kFlip: the first step of a merge (M = size - 1, kSlotMask =
  // NX - 1); otherwise a half-cleaner (M = stride, kSlotMask = 0). kViaShared: dist >= 32.
  // Values stream through a slot (or a mirrored pair of slots) at a time where they can,
  // which keeps few registers live.
  template <bool kFlip, bool kViaShared>
  KPS_DEVICE void CrossStep(int dist) {
    constexpr int kSlotMask = kFlip ? NX - 1 : 0;
    const int partner = tid ^ dist;
    const bool own_is_low = tid < partner;
    const int hi_base = (own_is_low ? partner : tid) * NX;
    // Slot j of the thread at the higher position pairs with...
    auto hi_slot = [&](int j) { return own_is_low ? (j ^ kSlotMask) : j; };
    if constexpr (!kViaShared) {
      if constexpr (kSlotMask == 0) {
        // Slot j pairs with the partner's slot j: exchange and decide one slot at a time.
#pragma unroll
        for (int j = 0; j < NX; ++j) {
          const K pk = ShuffleXor(kMask, key[j], dist);
          I pi = I();
          if constexpr (kWithIndex) pi = ShuffleXor(kMask, idx[j], dist);
          Keep(j, pk, pi, own_is_low, hi_base + hi_slot(j));
        }
      } else {
        // Slots j and NX-1-j pair with the partner's NX-1-j and j: exchange both of a
        // mirrored pair before changing either.
#pragma unroll
        for (int j = 0; j < NX / 2; ++j) {
          const int jm = NX - 1 - j;
          const K pk_j = ShuffleXor(kMask, key[jm], dist);
          const K pk_jm = ShuffleXor(kMask, key[j], dist);
          I pi_j = I(), pi_jm = I();
          if constexpr (kWithIndex) {
            pi_j = ShuffleXor(kMask, idx[jm], dist);
            pi_jm = ShuffleXor(kMask, idx[j], dist);
          }
          Keep(j, pk_j, pi_j, own_is_low, hi_base + hi_slot(j));
          Keep(jm, pk_jm, pi_jm, own_is_low, hi_base + hi_slot(jm));
        }
      }
    } else {
      K* sk = SharedScratch<K, kChunk * BlockSize, SortKeyTag>();
      I* si = nullptr;
      if constexpr (kWithIndex) si = SharedScratch<I, kChunk * BlockSize, SortIndexTag>();
      // Rounds of kChunk slots; slot-major layout, so consecutive threads touch
      // consecutive words (no bank conflicts for 4-byte types).
      if constexpr (kSlotMask == 0) {
#pragma unroll
        for (int r = 0; r < NX / kChunk; ++r) {
          __syncthreads();  // earlier readers of the scratch are done
#pragma unroll
          for (int c = 0; c < kChunk; ++c) {
            sk[c * BlockSize + tid] = key[r * kChunk + c];
            if constexpr (kWithIndex) si[c * BlockSize + tid] = idx[r * kChunk + c];
          }
          __syncthreads();
#pragma unroll
          for (int c = 0; c < kChunk; ++c) {
            const int j = r * kChunk + c;
            I pi = I();
            if constexpr (kWithIndex) pi = si[c * BlockSize + partner];
            Keep(j, sk[c * BlockSize + partner], pi, own_is_low, hi_base + hi_slot(j));
          }
        }
      } else {
        // Mirrored slots may be in different rounds: gather every partner value first.
        K pk[NX];
        I pi[kWithIndex ? NX : 1] = {};
#pragma unroll
        for (int r = 0; r < NX / kChunk; ++r) {
          __syncthreads();
#pragma unroll
          for (int c = 0; c < kChunk; ++c) {
            sk[c * BlockSize + tid] = key[(r * kChunk + c) ^ kSlotMask];
            if constexpr (kWithIndex) si[c * BlockSize + tid] = idx[(r * kChunk + c) ^ kSlotMask];
          }
          __syncthreads();
#pragma unroll
          for (int c = 0; c < kChunk; ++c) {
            pk[r * kChunk + c] = sk[c * BlockSize + partner];
            if constexpr (kWithIndex) pi[r * kChunk + c] = si[c * BlockSize + partner];
          }
        }
#pragma unroll
        for (int j = 0; j < NX; ++j) Keep(j, pk[j], pi[kWithIndex ? j : 0], own_is_low, hi_base + hi_slot(j));
      }
    }
  }

  // The step with compile-time mask M within a warp's tile (M < 32 * NX); kFlip: M is
  // size - 1, the first step of a merge.
  template <int M, bool kFlip>
  KPS_DEVICE void WarpStep() {
    static_assert(M < (1 << kLogWarpTile), "WarpStep: the mask crosses warps");
    if constexpr (M < NX) {
      ThreadStep<M>();
    } else {
      CrossStep<kFlip, false>(M >> kLogNX);
    }
  }

  // Half-cleaners with strides 2^kLogStride, ..., 2, 1 (all within a warp's tile).
  template <int kLogStride>
  KPS_DEVICE void HalfCleaners() {
    if constexpr (kLogStride >= 0) {
      WarpStep<(1 << kLogStride), false>();
      HalfCleaners<kLogStride - 1>();
    }
  }

  // Merges of size 2^kLogSize, ..., 2^kLogWarpTile, unrolled.
  template <int kLogSize>
  KPS_DEVICE void WarpMerges() {
    if constexpr (kLogSize <= kLogWarpTile) {
      if ((1 << (kLogSize - 1)) >= num) return;
      WarpStep<(1 << kLogSize) - 1, true>();
      HalfCleaners<kLogSize - 2>();
      WarpMerges<kLogSize + 1>();
    }
  }

  // The whole network. Once a merge's size is twice num or more the valid prefix is
  // already sorted and every later step would be a no-op, so it stops there (num is the
  // same in every thread: the barriers stay uniform).
  KPS_DEVICE void Run() {
    WarpMerges<1>();
    if constexpr (kLogN > kLogWarpTile) {
#pragma unroll 1
      for (int log_size = kLogWarpTile + 1; log_size <= kLogN; ++log_size) {
        if ((1 << (log_size - 1)) >= num) return;
        // Flip over threads: dist = size / NX - 1 >= 32.
        CrossStep<true, true>((1 << (log_size - kLogNX)) - 1);
        // Half-cleaners whose partner is in another warp: strides size / 4 .. 32 * NX.
#pragma unroll 1
        for (int log_stride = log_size - 2; log_stride >= kLogWarpTile; --log_stride) {
          CrossStep<false, true>(1 << (log_stride - kLogNX));
        }
        // The rest stays within warps: the same code for every size.
        HalfCleaners<kLogWarpTile - 1>();
      }
    }
  }
};

}  // namespace details

// Sorts the BlockSize * NX keys of a 1-D block, in the blocked arrangement (thread t
// holds positions [t * NX, t * NX + NX) in in[0..NX)), and returns them in the same
// arrangement: afterwards position p of out holds the p-th key of the sorted sequence.
//
// Only positions p < num take part (num: the valid count of a partial tile, the same in
// every thread; num >= BlockSize * NX sorts everything, num <= 0 nothing). Positions
// >= num act as keys larger than every key and stay in place: out there holds in's values
// at those positions, so store only the first num (WriteData with IsBoundary).
//
// ascending: smaller first, NaN last; !ascending: larger first, NaN first (NaN is the
// largest value, as in NumPy and PyTorch). Keys compare as values: -0.0 and +0.0 are equal,
// all NaNs are equal; 16-bit floats compare as float. Equal keys land in an unspecified
// but deterministic order. The keys are sorted in InT and converted to OutT on output;
// `out` may alias `in`.
//
// Preconditions: blockDim.x == BlockSize, a power of two in [1, 1024]; blockDim.y ==
// blockDim.z == 1, except that with BlockSize <= 32 every warp of a 2-D block may sort
// its own tile (no step then leaves the warp, so no shared memory is touched); NX a
// power of two; every thread calls it (every lane of the warp, for BlockSize <= 32). A bitonic network of
// log2(N) * (log2(N) + 1) / 2 steps (N = BlockSize * NX, cut short past 2 * num): steps
// within a thread or a warp use registers and shuffles; steps between warps exchange
// through at most details::kSortSharedBytes of shared memory, two barriers per exchange.
// Registers: the keys (and indices) plus about as many again in flight; a kernel launched
// with 1024 threads must say __launch_bounds__(1024) (64 registers per thread), which fits
// 4-byte keys with 4-byte indices at NX = 8 and spills a little beyond (measured: 8-byte
// keys with 8-byte indices at NX = 8).
template <typename InT, typename OutT, int NX, int BlockSize>
KPS_DEVICE void Sort(OutT* out, const InT* in, int num, bool ascending) {
  details::BitonicSorter<InT, char, false, NX, BlockSize> sorter;
#pragma unroll
  for (int j = 0; j < NX; ++j) sorter.key[j] = in[j];
  sorter.idx[0] = 0;
  sorter.num = num;
  sorter.ascending = ascending;
  sorter.tid = static_cast<int>(KPS_THREAD_ID_X);
  sorter.Run();
#pragma unroll
  for (int j = 0; j < NX; ++j) out[j] = static_cast<OutT>(sorter.key[j]);
}

// Sort with an index payload: as the keys-only Sort, and each key's index moves with it.
// Equal keys are ordered by index, ascending in both directions, so with distinct
// indices the result is fully determined; with in_index = the original positions it is
// a stable sort (what std::stable_sort gives). Positions >= num keep their key and index.
// IndexType is any integer type (int, int64_t, ...). `out` may alias `in` and `out_index`
// may alias `in_index`.
template <typename InT, typename OutT, int NX, int BlockSize, typename IndexType>
KPS_DEVICE void Sort(OutT* out, IndexType* out_index, const InT* in, const IndexType* in_index, int num,
                     bool ascending) {
  details::BitonicSorter<InT, IndexType, true, NX, BlockSize> sorter;
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    sorter.key[j] = in[j];
    sorter.idx[j] = in_index[j];
  }
  sorter.num = num;
  sorter.ascending = ascending;
  sorter.tid = static_cast<int>(KPS_THREAD_ID_X);
  sorter.Run();
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    out[j] = static_cast<OutT>(sorter.key[j]);
    out_index[j] = sorter.idx[j];
  }
}

// Inserts (new_key, new_index) into this thread's list of NX (key, index) pairs, kept in
// ascending (key, index) order, if it goes before the last pair; the last pair drops
// out. Afterwards the list holds the NX smallest of the old list and the new pair, in
// order: fed a stream, it keeps the stream's NX smallest (a topk's candidates).
//
// Order: by key with `<`, ties by smaller index. Use keys with a total order under `<`
// (integers, or the order-preserving unsigned encodings of floats a radix sort uses);
// float keys with NaN are not ordered by `<`. Empty slots are pairs that sort after
// every real one (e.g. key ~0 and index INT_MAX, with indices below INT_MAX). The new
// pair carries down the list in NX compare-and-swaps with compile-time slots, so the
// list stays in registers. Per-thread.
//
//   uint32_t key[8];
//   int pos[8];
//   for (int j = 0; j < 8; ++j) key[j] = ~0u, pos[j] = INT_MAX;   // empty
//   for (int p = threadIdx.x; p < n; p += blockDim.x) kps::InsertSorted<uint32_t, int, 8>(key, pos, k[p], p);
namespace details {
// (a, ia) before (b, ib): by key with `<`, ties by smaller index. A function rather than
// the expression inline: inline, topk's scan compiled to 25% more instructions (sm_90).
template <typename K, typename I>
KPS_DEVICE bool KeyIndexBefore(K a, I ia, K b, I ib) {
  return a < b || (a == b && ia < ib);
}
}  // namespace details

template <typename K, typename I, int NX>
KPS_DEVICE void InsertSorted(K (&key)[NX], I (&index)[NX], K new_key, I new_index) {
  K ck = new_key;
  I ci = new_index;
#pragma unroll
  for (int j = 0; j < NX; ++j) {  // carry the new pair down to its slot
    if (details::KeyIndexBefore(ck, ci, key[j], index[j])) {
      const K tk = key[j];
      const I ti = index[j];
      key[j] = ck;
      index[j] = ci;
      ck = tk;
      ci = ti;
    }
  }
}

}  // namespace kps
