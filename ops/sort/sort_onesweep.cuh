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
// - OnesweepPassKernel: block b takes tile b (8192 keys in the first pass, 6144 in the
//   others: FirstPass and Pass below). Each warp ranks its keys by
//   digit, with ballots or __match_any_sync as the pass's digits suggest (stable: a
//   warp's keys go in position order), the block adds the warps' counts per digit,
//   and one thread per digit finds the count of that digit in all earlier tiles by a
//   decoupled look-back (aggregates, then inclusive counts, in one 32-bit word per tile
//   and digit, shared by the passes). The tile's keys are then placed in shared memory
//   in digit order and written out, each at its digit's start + the earlier tiles'
//   count + its rank in the tile. Counts are integers, so the result does not depend on
//   timing.
//
// Tiles go by blockIdx.x, as in the scan's look-back (scan_kernels.cuh): blocks are
// dispatched in increasing index order, so the tiles a block waits on are running or
// done.
//
// The device techniques are primitives (primitives/radix.cuh): the histogram is
// BlockRadixHistogram, the warp ranking WarpRadixRank, the block's digit slots
// RadixWarpCountsTotal and RadixWarpCountsToSlots, the look-back RadixLookBackPublish and
// RadixLookBack; the key and position loads ReadDataStriped (LoadKeyRun,
// sort_keys.cuh) and the 256-count scans kps::Cumsum. What stays here is the kernel
// logic: the fused encode and decode, the tile shapes, and the scatter of the sorted tile
// (each key to its own digit's place: no primitive store fits a scatter).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "functors/binary.h"
#include "ops/common/element_bits.cuh"
#include "ops/sort/sort_keys.cuh"
#include "primitives/cumsum.cuh"
#include "primitives/datamover.cuh"
#include "primitives/radix.cuh"
#include "registry/cuda_launch.h"
#include "registry/data_type.h"
#include "registry/device.h"
#include "registry/status.h"

namespace kps {
namespace sort {
namespace onesweep {

// The digit count kernel's blocks (DigitStartsKernel: a thread per digit); the pass
// kernels' shapes are PassShape's (FirstPass and Pass, below).
inline constexpr int kThreads = 256;
inline constexpr int kItems = 16;  // keys per thread
inline constexpr int kTile = kThreads * kItems;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kBins = 256;
inline constexpr int kMaxPasses = 4;
static_assert(kThreads == kBins, "a thread per digit");

// Look-back words (RadixLookBack), one per tile and digit, shared by every pass and
// zeroed once (a set per pass took a 64 MiB memset for 64M keys): a count takes 28 bits,
// so lines of fewer than 2^28 keys take this path.
inline constexpr int kCountBits = kRadixLookBackCountBits;

// counts[p * kBins + d]: keys whose digit p is d, for the kPasses passes (1, 2 or 4).
template <int kPasses>
__global__ void __launch_bounds__(kThreads) HistogramKernel(const void* x, DataType dtype, int64_t n, uint32_t flip,
                                                            uint32_t* counts) {
  using Histogram = BlockRadixHistogram<kThreads, kPasses>;
  __shared__ typename Histogram::TempStorage storage;
  Histogram hist(storage);
  hist.Zero();
  for (int64_t t = blockIdx.x; t * kTile < n; t += gridDim.x) {
    uint32_t key[kItems];  // striped: item j is the tile's key j * kThreads + threadIdx.x
    const int64_t base = t * kTile;
    const int num = n - base < kTile ? static_cast<int>(n - base) : kTile;
    LoadKeyRun<kItems>(x, dtype, base, static_cast<int>(threadIdx.x), kThreads, num, flip, key);
    hist.template Count<kItems>(key, num);
  }
  hist.AddTo(counts);
}

// starts[p * kBins + d]: where digit d's keys begin after pass p (exclusive scan);
// occupied[p]: how many of pass p's digits occur.
__global__ void __launch_bounds__(kBins) DigitStartsKernel(const uint32_t* counts, int passes, uint32_t* starts,
                                                           uint32_t* occupied) {
  for (int p = 0; p < passes; ++p) {
    uint32_t in[1], out[1];
    ReadData<uint32_t, 1, 1, false>(in, counts + p * kBins, kBins);
    Cumsum<uint32_t, uint32_t, 1, kBins>(out, in, AddFunctor<uint32_t>{}, /*exclusive=*/true);
    WriteData<uint32_t, 1, 1, false>(starts + p * kBins, out, kBins);
    const int used = __syncthreads_count(in[0] != 0);
    if (threadIdx.x == 0) occupied[p] = static_cast<uint32_t>(used);
  }
}

// How a pass ranks keys within a warp: by ballots (one per digit bit) or by
// __match_any_sync; kRankAuto picks match when at most kMatchMaxDigits digits occur.
enum RankMode : int { kRankBallot = 0, kRankMatch = 1, kRankAuto = 2 };
inline constexpr uint32_t kMatchMaxDigits = 16;

// A pass's block: kThreads threads (a power of two, at least kBins: the first kBins do
// the per-digit work) of kItems keys each; kMinBlocks is the occupancy the registers are
// capped for.
template <int kThreadsT, int kItemsT, int kMinBlocksT>
struct PassShape {
  static constexpr int kThreads = kThreadsT;
  static constexpr int kItems = kItemsT;
  static constexpr int kMinBlocks = kMinBlocksT;
  static constexpr int kTile = kThreads * kItems;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kWarpKeys = kTile / kWarps;
  static_assert(kThreads >= kBins && (kThreads & (kThreads - 1)) == 0, "a power of two, a thread per digit");
};

// A pass block's shared memory (dynamic, as a tile of more than 4096 keys would pass the
// 48 KiB static limit): the tile's keys and positions in digit order, the warps' counts
// per digit, then their first slots in the tile, and where each digit's slots go out.
template <class Shape>
struct PassSmem {
  uint32_t keys[Shape::kTile];
  int pos[Shape::kTile];
  uint32_t warp[Shape::kWarps][kBins];
  int offset[kBins];  // slot i of digit d goes to offset[d] + i
};

// What a pass reads and writes. x, dtype, elem_size, flip: the line and its key encoding
// (the first pass reads keys from x, the last decodes them back into `values`, x's
// dtype); keys_in/pos_in: the keys and positions the previous pass wrote (not read by
// the first pass); keys_out/pos_out: this pass's (not written by the last, which writes
// `values` and the int64 `indices` instead; either may be null); digit_starts: where
// each digit's keys begin; occupied: how many digits occur; status: kBins look-back
// words per tile, zeroed.
struct PassArgs {
  const void* x;
  DataType dtype;
  int elem_size;
  int n;  // < 2^28 on this path
  uint32_t flip;
  int pass;
  int shift;  // 8 * pass
  const uint32_t* keys_in;
  const int* pos_in;
  uint32_t* keys_out;
  int* pos_out;
  void* values;
  int64_t* indices;
  const uint32_t* digit_starts;
  const uint32_t* occupied;
  int rank_mode;
  uint32_t* status;
};

// Writes the tile's first tile_n keys of s_keys/s_pos (digit order) out.
template <bool kLast, class Shape>
__device__ __forceinline__ void WriteTile(const PassArgs& a, const uint32_t* s_keys, const int* s_pos,
                                          const int* s_offset, int tile_n) {
  const int tid = static_cast<int>(threadIdx.x);
  // Unrolled a few rounds deep: the last pass's decode, unrolled fully, spilled.
#pragma unroll 4
  for (int r = 0; r < Shape::kItems; ++r) {
    const int i = r * Shape::kThreads + tid;
    if (tile_n < Shape::kTile && i >= tile_n) break;
    const uint32_t k = s_keys[i];
    const int dst = s_offset[RadixDigit(k, a.shift)] + i;
    const int p = s_pos[i];
    if constexpr (kLast) {
      if (a.indices != nullptr) a.indices[dst] = p;
      if (a.values != nullptr) {
        uint64_t bits;
        if (KeyToBits<uint32_t>(k ^ a.flip, a.dtype, &bits)) {
          StoreBits(a.values, dst, bits, a.elem_size);
        } else {
          CopyElement(a.values, dst, a.x, p, a.elem_size);  // NaN or zero: the element itself
        }
      }
    } else {
      a.keys_out[dst] = k;
      a.pos_out[dst] = p;
    }
  }
}

// Keys past the end (the last tile only) become 0xffffffff: digit kBins - 1 in every
// pass, ranked after every real key of that digit in their warp, and the warps after
// hold only such keys, so they take the tile's last slots, which are not written out.
// Nothing past the loads tests for them.
inline constexpr uint32_t kPastEnd = 0xffffffffu;

// One digit pass, a block per tile (tile = blockIdx.x). kFirst: keys from x (encoded,
// ^ flip) and their positions; else from keys_in/pos_in. Launch with Shape::kThreads
// threads and sizeof(PassSmem<Shape>) of dynamic shared memory.
template <bool kFirst, bool kLast, class Shape>
__global__ void __launch_bounds__(Shape::kThreads, Shape::kMinBlocks) OnesweepPassKernel(const PassArgs a) {
  constexpr int kItems = Shape::kItems, kTile = Shape::kTile;
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  auto& sm = *reinterpret_cast<PassSmem<Shape>*>(smem_bytes);
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int tile = static_cast<int>(blockIdx.x);
  for (int i = tid; i < Shape::kWarps * kBins; i += Shape::kThreads) (&sm.warp[0][0])[i] = 0;
  __syncthreads();

  const int base = tile * kTile;
  const int tile_n = a.n - base < kTile ? a.n - base : kTile;
  const bool full = tile_n == kTile;
  const int first = warp * Shape::kWarpKeys + lane;  // within the tile
  // Item j of the thread is the tile's key first + j * 32: warp-striped, WarpRadixRank's
  // order.
  uint32_t key[kItems];
  if constexpr (kFirst) {
    LoadKeyRun<kItems>(a.x, a.dtype, 0, base + first, 32, a.n, a.flip, key);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      if (!full && first + j * 32 >= tile_n) key[j] = kPastEnd;
    }
  } else {
    ReadDataStriped<uint32_t, uint32_t, kItems>(key, a.keys_in, base + first, 32, a.n, kPastEnd, full);
  }
  // Ballots, or __match_any_sync when few digits occur (WarpRadixRank gives the timings).
  const bool match = a.rank_mode == kRankMatch || (a.rank_mode == kRankAuto && *a.occupied <= kMatchMaxDigits);
  uint32_t rank[kItems];
  WarpRadixRank<kItems>(key, a.shift, match, sm.warp[warp], rank);
  // The positions, loaded only now: ranking does not need them, and their registers
  // are not free for it.
  int pos[kItems];
  if constexpr (kFirst) {
#pragma unroll
    for (int j = 0; j < kItems; ++j) pos[j] = base + first + j * 32;
  } else {
    ReadDataStriped<int, int, kItems>(pos, a.pos_in, base + first, 32, a.n, 0, full);
  }
  __syncthreads();
  // Thread d < kBins publishes the tile's count of digit d for the later tiles, then the
  // block turns the warps' counts into their first slots in the tile.
  const uint32_t count = RadixWarpCountsTotal<Shape::kWarps>(sm.warp);
  if (tid < kBins) RadixLookBackPublish(a.status, a.pass, tile, tid, count);
  uint32_t tile_start;
  RadixWarpCountsToSlots<Shape::kThreads, Shape::kWarps>(sm.warp, count, &tile_start);
  __syncthreads();
  // The tile in digit order, before the look-back, so that the keys leave the registers.
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const uint32_t slot = sm.warp[warp][RadixDigit(key[j], a.shift)] + rank[j];
    sm.keys[slot] = key[j];
    sm.pos[slot] = pos[j];
  }
  if (tid < kBins) {
    const uint32_t before = RadixLookBack(a.status, a.pass, tile, tid, count);
    sm.offset[tid] = static_cast<int>(a.digit_starts[tid] + before) - static_cast<int>(tile_start);
  }
  __syncthreads();
  WriteTile<kLast, Shape>(a, sm.keys, sm.pos, sm.offset, tile_n);
}

// The pass shapes: the first pass, which reads x, takes tiles of 8192 keys in 2 blocks of
// 512 threads an SM; the later passes tiles of 6144 in 2 blocks of 512. In 64 registers
// the 16 ranks, keys and positions of a thread spill with 256 threads at 4 blocks.
// sort_f32_64M, H100, first pass: 8192 keys 0.52 ms, 6144 0.57, 256 x 32 0.55.
// sort_f32_64M, H100, later passes: 512 x 12 0.61/0.47/0.58 ms, 256 x 16 0.71/0.46/0.60.
// The passes count their tiles apart: a pass's look-back words read as unpublished to
// the next.
using FirstPass = PassShape<512, 16, 2>;
using Pass = PassShape<512, 12, 2>;

// The look-back words to allocate for a line of n keys: the most tiles a pass takes.
inline int64_t LookbackTiles(int64_t n) {
  const int64_t tile = FirstPass::kTile < Pass::kTile ? FirstPass::kTile : Pass::kTile;
  return (n + tile - 1) / tile;
}

// Launches a pass of shape Shape. Its kernels are opted in to their shared memory once
// per device: cudaFuncSetAttribute applies to the current device only.
template <class Shape, bool kFirst>
absl::Status LaunchPassOfShape(const PassArgs& a, bool last, cudaStream_t s) {
  using Fn = void (*)(const PassArgs);
  static const Fn kernels[2] = {OnesweepPassKernel<kFirst, false, Shape>, OnesweepPassKernel<kFirst, true, Shape>};
  static std::atomic<bool> opted_in[kMaxCudaDevices];  // static storage: all false at start
  constexpr size_t kSmem = sizeof(PassSmem<Shape>);
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return CudaErrorToStatus(e, "OnesweepPassKernel");
  if (device < 0 || device >= kMaxCudaDevices) return CudaErrorToStatus(cudaErrorInvalidDevice, "OnesweepPassKernel");
  if (!opted_in[device].load(std::memory_order_acquire)) {
    for (Fn k : kernels) {
      e = cudaFuncSetAttribute(reinterpret_cast<const void*>(k), cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
      if (e != cudaSuccess) return CudaErrorToStatus(e, "OnesweepPassKernel");
    }
    opted_in[device].store(true, std::memory_order_release);  // two threads may both set it: the same value
  }
  const unsigned tiles = static_cast<unsigned>((a.n + Shape::kTile - 1) / Shape::kTile);
  if (last) {
    return LaunchKernelOnDevice<&OnesweepPassKernel<kFirst, true, Shape>>(device, "OnesweepPassKernel", tiles,
                                                                          Shape::kThreads, kSmem, s, a);
  }
  return LaunchKernelOnDevice<&OnesweepPassKernel<kFirst, false, Shape>>(device, "OnesweepPassKernel", tiles,
                                                                         Shape::kThreads, kSmem, s, a);
}

// Launches pass `pass` of `passes`.
inline absl::Status LaunchPass(const PassArgs& a, int pass, int passes, cudaStream_t s) {
  const bool last = pass == passes - 1;
  return pass == 0 ? LaunchPassOfShape<FirstPass, true>(a, last, s) : LaunchPassOfShape<Pass, false>(a, last, s);
}

}  // namespace onesweep
}  // namespace sort
}  // namespace kps
