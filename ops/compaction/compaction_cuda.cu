// nonzero and masked_select on CUDA: a count that packs the predicate into a bitmap, a
// scan of the tile counts, then a scatter from the bitmap, in order.
//
//   1. CountKernel: the predicate in tiles of kTile = 4096 positions. Each lane loads
//      16-byte vectors with the block's lanes adjacent (a warp's load covers 512
//      contiguous bytes), tests each element on its bits and ORs the flags of a warp's
//      lanes into 32-bit words by shuffles; it writes the tile's flags as a bitmap (one
//      bit per position, n / 8 bytes) and the tile's count. One block takes 16 KiB of
//      predicate (several tiles for 1- and 2-byte predicates) so that a block's start-up
//      is amortized over enough bytes. An unaligned predicate or a partial block loads
//      one element per lane per step (still coalesced; a ballot makes each word).
//   2. ScanTilesKernel: one block turns the tile counts into int64 tile offsets and the
//      total (a fixed order: the same result on every run).
//   3. The total goes to the host (the one device-to-host copy and stream synchronization
//      of the call: the output size depends on it), which allocates the output.
//   4. A scatter kernel per output kind reads the tile's 512 bitmap bytes (each lane 16
//      consecutive positions), ranks the kept positions with a block scan of the lanes'
//      counts (kps::Cumsum) and lists them, in increasing order, in shared memory; the
//      block then writes its contiguous output run with consecutive lanes on consecutive
//      elements: nonzero's [count, rank] int64 rows as one run of count * rank values
//      (each value unravelled with FastDivMod by the row-major stride and the dim),
//      masked_select's values gathered from the tile in order.
//
// Bytes moved: the predicate is read once (the old code read it twice, with scalar loads
// 16 elements apart across a warp), the bitmap written and read once (n / 8 each way), the
// output written once with full 32-byte sectors (the old code's lanes each wrote their own
// rows, so a warp's store touched 32 rows), masked_select's values read where kept.
// The kernels are instantiated per predicate width (1, 2, 4, 8 bytes; the test is on the
// element's bits, compaction.h's BitsNonzero) and, for the scatter, per value width.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "functors/binary.h"
#include "ops/compaction/compaction.h"
#include "primitives/cumsum.cuh"
#include "primitives/datamover.cuh"
#include "primitives/details/fast_divmod.cuh"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/data_type.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace compaction {
namespace {

constexpr int kThreads = 256;
constexpr int kItems = 16;  // positions per lane in the scatter (one 16-bit bitmap half-word)
constexpr int kTile = kThreads * kItems;
constexpr int kWordsPerTile = kTile / 32;  // 32-bit bitmap words
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr int kMaxRank = 8;
constexpr unsigned kFullMask = 0xffffffffu;

// Tiles per count block: 16 KiB of predicate per block (64 bytes per lane), so that
// 1- and 2-byte predicates do not run a block for 4 or 8 KiB. The per-tile counts are
// packed in 16-bit fields of one int64 for the block scan (a tile counts at most 4096).
template <typename P>
constexpr int kCountTiles = sizeof(P) >= 4 ? 1 : 4 / static_cast<int>(sizeof(P));

// Flags of a block's tiles from 16-byte vector loads. Round k loads vector
// k * kThreads + lane of the block's span (lanes adjacent: coalesced); each vector holds
// kPer elements, and kLanesPerWord lanes' flags make one 32-bit word (bit j of the word:
// position 32 * word + j), ORed together by shuffles and stored by the group's first
// lane. Adds each tile's count of this lane to field g (16 bits) of *packed.
template <typename P, int kTiles>
__device__ __forceinline__ void FlagsFromVectors(const P* span, bool is_float, uint32_t* words, int64_t* packed) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(P));  // elements per vector
  constexpr int kRoundsPerTile = kItems / kPer;          // = sizeof(P)
  constexpr int kRounds = kTiles * kRoundsPerTile;
  constexpr int kLanesPerWord = 32 / kPer;
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const uint4* src = reinterpret_cast<const uint4*>(span);
  uint4 v[kRounds];
#pragma unroll
  for (int k = 0; k < kRounds; ++k) v[k] = LoadStreaming(src + k * kThreads + threadIdx.x);  // all loads in flight
#pragma unroll
  for (int k = 0; k < kRounds; ++k) {
    P e[kPer];
    memcpy(e, &v[k], sizeof(e));  // little-endian: e[j] is position (k * kThreads + lane) * kPer + j
    unsigned flags = 0;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      if (BitsNonzero(e[j], sizeof(P), is_float)) flags |= 1u << j;
    }
    *packed += static_cast<int64_t>(__popc(flags)) << (16 * (k / kRoundsPerTile));
    unsigned word = flags << ((lane % kLanesPerWord) * kPer);
#pragma unroll
    for (int o = 1; o < kLanesPerWord; o <<= 1) word |= __shfl_xor_sync(kFullMask, word, o);
    if (lane % kLanesPerWord == 0) {
      words[(k * kThreads + warp * 32) / kLanesPerWord + lane / kLanesPerWord] = word;
    }
  }
}

// The same for a tile that is partial (num < kTile valid positions) or whose predicate is
// not 16-byte aligned: one element per lane per round, lanes adjacent, a ballot per word.
// Positions past num are not kept (their bits are 0, so the scatter never sees them).
template <typename P>
__device__ __forceinline__ int FlagsFromElements(const P* tile, int num, bool is_float, uint32_t* words) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  int count = 0;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = k * kThreads + static_cast<int>(threadIdx.x);
    const bool keep = i < num && BitsNonzero(tile[i], sizeof(P), is_float);
    count += keep ? 1 : 0;
    const unsigned word = __ballot_sync(kFullMask, keep);
    if (lane == 0) words[k * kWarpsPerBlock + warp] = word;
  }
  return count;
}

// Step 1: the bitmap (kWordsPerTile words per tile) and the count of each of the block's
// kCountTiles<P> tiles that exist (tile < tiles).
template <typename P>
__global__ void __launch_bounds__(kThreads) CountKernel(const P* pred, int64_t n, int64_t tiles, bool is_float,
                                                        bool aligned, uint32_t* bitmap, int* tile_counts) {
  constexpr int kTiles = kCountTiles<P>;
  const int64_t first_tile = static_cast<int64_t>(blockIdx.x) * kTiles;
  const int64_t span_start = first_tile * kTile;
  uint32_t* words = bitmap + first_tile * kWordsPerTile;
  int64_t packed = 0;  // this lane's count of tile g in bits [16 g, 16 g + 16)
  if (aligned && n - span_start >= int64_t{kTiles} * kTile) {  // uniform over the block
    FlagsFromVectors<P, kTiles>(pred + span_start, is_float, words, &packed);
  } else {
#pragma unroll
    for (int g = 0; g < kTiles; ++g) {
      if (first_tile + g >= tiles) break;  // uniform
      const int64_t tile_start = span_start + int64_t{g} * kTile;
      const int num = static_cast<int>(min(n - tile_start, static_cast<int64_t>(kTile)));
      const int count = FlagsFromElements<P>(pred + tile_start, num, is_float, words + g * kWordsPerTile);
      packed += static_cast<int64_t>(count) << (16 * g);
    }
  }
  int64_t prefix, total;  // fields never carry: each tile's total is at most kTile < 2^16
  Cumsum<int64_t, int64_t, 1, kThreads>(&prefix, &packed, AddFunctor<int64_t>(), /*exclusive=*/true, &total);
  if (static_cast<int>(threadIdx.x) < kTiles && first_tile + threadIdx.x < tiles) {
    tile_counts[first_tile + threadIdx.x] = static_cast<int>((total >> (16 * threadIdx.x)) & 0xffff);
  }
}

// One block: offsets[t] = sum of counts[0..t), offsets[tiles] = the total. Each lane
// sums a run of tiles, the block scans the run sums, each lane writes its run. The runs
// stay plain loops: their length (tiles / kThreads) has no compile-time bound, and a
// loop of block-wide ReadData + Cumsum steps over kThreads * NX counts would serialize a
// load latency and two barriers per step (hundreds of steps at 2^31 positions).
__global__ void __launch_bounds__(kThreads) ScanTilesKernel(const int* counts, int64_t tiles, int64_t* offsets) {
  const int64_t chunk = (tiles + kThreads - 1) / kThreads;
  const int64_t begin = min(tiles, static_cast<int64_t>(threadIdx.x) * chunk), end = min(tiles, begin + chunk);
  int64_t sum = 0;
  for (int64_t t = begin; t < end; ++t) sum += counts[t];
  int64_t before, total;
  Cumsum<int64_t, int64_t, 1, kThreads>(&before, &sum, AddFunctor<int64_t>(), /*exclusive=*/true, &total);
  for (int64_t t = begin; t < end; ++t) {
    offsets[t] = before;
    before += counts[t];
  }
  if (threadIdx.x == 0) offsets[tiles] = total;
}

// Lists the kept positions of this block's tile (tile-relative, increasing) in pos[0,
// total) and returns total. Lane t takes bitmap half-word t (positions [16 t, 16 t + 16),
// a coalesced 2-byte load), its rank is the exclusive block scan of the lanes' counts.
// Ends with a barrier: pos is complete for every thread. Block-wide.
__device__ __forceinline__ int StageKeptPositions(const uint16_t* bitmap, uint16_t* pos) {
  unsigned bits = bitmap[static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x];
  const int count = __popc(bits);
  int prefix, total;
  Cumsum<int, int, 1, kThreads>(&prefix, &count, AddFunctor<int>(), /*exclusive=*/true, &total);
  const int first = static_cast<int>(threadIdx.x) * kItems;
  while (bits != 0) {
    pos[prefix++] = static_cast<uint16_t>(first + __ffs(bits) - 1);
    bits &= bits - 1;
  }
  __syncthreads();
  return total;
}

// masked_select: out[offsets[tile] + k] = values[tile_start + pos[k]], consecutive lanes
// on consecutive k (coalesced writes; a dense mask's reads are coalesced too).
template <typename V>
__global__ void __launch_bounds__(kThreads)
    MaskedScatterKernel(const uint16_t* bitmap, const int64_t* offsets, const V* values, V* out) {
  __shared__ uint16_t pos[kTile];
  const int total = StageKeptPositions(bitmap, pos);
  const V* src = values + static_cast<int64_t>(blockIdx.x) * kTile;
  V* dst = out + offsets[blockIdx.x];
  for (int k = static_cast<int>(threadIdx.x); k < total; k += kThreads) dst[k] = src[pos[k]];
}

// How nonzero turns a flat position e into its coordinates: coordinate d is
// (e / strides[d]) % dims[d] (row-major strides). The FastDivMod forms serve positions
// below 2^32 (every dim and stride then fits 32 bits); the int64 forms the rest.
struct Unravel {
  int rank;
  int64_t strides[kMaxRank];
  int64_t dims[kMaxRank];
  details::FastDivMod stride_div[kMaxRank];
  details::FastDivMod dim_div[kMaxRank];
  details::FastDivMod rank_div;  // splits an output value's index into (row, dim)
};

struct UnravelTag {};

// nonzero: the tile's kept positions' coordinates, as the run of total * rank int64s
// that starts at row offsets[tile]: value i is coordinate i % rank of kept position
// i / rank, written by lane i % kThreads (coalesced). Rank >= 1.
template <bool kWide>
__global__ void __launch_bounds__(kThreads)
    NonzeroScatterKernel(const uint16_t* bitmap, const int64_t* offsets, Unravel u, int64_t* out) {
  __shared__ uint16_t pos[kTile];
  // The divisors in shared memory: value i's dim varies across the warp, and a dynamic
  // index into kernel parameters would go through local memory.
  Unravel* su = details::SharedScratch<Unravel, 1, UnravelTag>();
  if (threadIdx.x == 0) *su = u;
  const int total = StageKeptPositions(bitmap, pos);  // its barriers publish *su too
  const int64_t tile_start = static_cast<int64_t>(blockIdx.x) * kTile;
  int64_t* dst = out + offsets[blockIdx.x] * u.rank;
  if (u.rank == 1) {
    for (int k = static_cast<int>(threadIdx.x); k < total; k += kThreads) dst[k] = tile_start + pos[k];
    return;
  }
  const int num_values = total * u.rank;
  for (int i = static_cast<int>(threadIdx.x); i < num_values; i += kThreads) {
    const details::FastDivMod::Result kd = u.rank_div.Divmod(static_cast<uint32_t>(i));
    const int d = static_cast<int>(kd.remainder);
    if constexpr (kWide) {
      const int64_t e = tile_start + pos[kd.quotient];
      dst[i] = (e / su->strides[d]) % su->dims[d];
    } else {
      const uint32_t e = static_cast<uint32_t>(tile_start) + pos[kd.quotient];
      dst[i] = su->dim_div[d].Divmod(su->stride_div[d].Div(e)).remainder;
    }
  }
}

// Step 1 for a predicate of element type P (its width: the test is on bits).
template <typename P>
absl::Status LaunchCount(const CompactArgs& a, int64_t tiles, uint32_t* bitmap, int* counts, cudaStream_t s) {
  constexpr int kTiles = kCountTiles<P>;
  const bool aligned = reinterpret_cast<uintptr_t>(a.pred) % 16 == 0;
  return LaunchKernel<&CountKernel<P>>("CountKernel", static_cast<unsigned>((tiles + kTiles - 1) / kTiles), kThreads,
                                       0, s, static_cast<const P*>(a.pred), a.n, tiles, a.pred_float, aligned, bitmap,
                                       counts);
}

template <typename V>
absl::Status LaunchMaskedScatter(const CompactArgs& a, int64_t tiles, const uint32_t* bitmap,
                                 const int64_t* offsets, void* out, cudaStream_t s) {
  return LaunchKernel<&MaskedScatterKernel<V>>("MaskedScatterKernel", static_cast<unsigned>(tiles), kThreads, 0, s,
                                               reinterpret_cast<const uint16_t*>(bitmap), offsets,
                                               static_cast<const V*>(a.values), static_cast<V*>(out));
}

}  // namespace

absl::Status CompactCuda(const CompactArgs& a, const std::function<absl::StatusOr<void*>(int64_t)>& allocate,
                         const Stream& stream) {
  cudaStream_t s = stream.cuda_stream();
  const int64_t tiles = (a.n + kTile - 1) / kTile;
  if (tiles == 0) return allocate(0).status();
  if (tiles > int64_t{0x7fffffff}) {
    return absl::InvalidArgumentError(absl::StrCat("compaction: ", a.n, " elements exceed the CUDA grid"));
  }
  const int rank = static_cast<int>(a.dims.size());
  if (a.values == nullptr && rank > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat("nonzero: rank ", rank, " exceeds ", kMaxRank));
  }
  // Scratch: the bitmap (512 bytes a tile), the tile counts, the tile offsets and total.
  const size_t bitmap_bytes = static_cast<size_t>(tiles) * kWordsPerTile * sizeof(uint32_t);
  const size_t count_bytes = (static_cast<size_t>(tiles) * sizeof(int) + 255) / 256 * 256;
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> scratch,
                       Storage::Allocate(bitmap_bytes + count_bytes + static_cast<size_t>(tiles + 1) * sizeof(int64_t),
                                         DeviceType::kCuda, stream));
  char* base = static_cast<char*>(scratch->data());
  uint32_t* bitmap = reinterpret_cast<uint32_t*>(base);
  int* counts = reinterpret_cast<int*>(base + bitmap_bytes);
  int64_t* offsets = reinterpret_cast<int64_t*>(base + bitmap_bytes + count_bytes);

  switch (a.pred_size) {
    case 1:
      KPS_RETURN_IF_ERROR(LaunchCount<uint8_t>(a, tiles, bitmap, counts, s));
      break;
    case 2:
      KPS_RETURN_IF_ERROR(LaunchCount<uint16_t>(a, tiles, bitmap, counts, s));
      break;
    case 4:
      KPS_RETURN_IF_ERROR(LaunchCount<uint32_t>(a, tiles, bitmap, counts, s));
      break;
    default:
      KPS_RETURN_IF_ERROR(LaunchCount<uint64_t>(a, tiles, bitmap, counts, s));
      break;
  }
  KPS_RETURN_IF_ERROR(LaunchKernel<&ScanTilesKernel>("ScanTilesKernel", 1, kThreads, 0, s, counts, tiles, offsets));
  int64_t total = 0;
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&total, offsets + tiles, sizeof(total), cudaMemcpyDeviceToHost, s),
                           "cudaMemcpyAsync");
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  KPS_ASSIGN_OR_RETURN(void* out, allocate(total));
  if (total == 0) return absl::OkStatus();

  if (a.values != nullptr) {
    switch (a.value_size) {
      case 1:
        return LaunchMaskedScatter<uint8_t>(a, tiles, bitmap, offsets, out, s);
      case 2:
        return LaunchMaskedScatter<uint16_t>(a, tiles, bitmap, offsets, out, s);
      case 4:
        return LaunchMaskedScatter<uint32_t>(a, tiles, bitmap, offsets, out, s);
      default:
        return LaunchMaskedScatter<uint64_t>(a, tiles, bitmap, offsets, out, s);
    }
  }
  if (rank == 0) return absl::OkStatus();  // rows of no coordinates: nothing to write
  Unravel u{};
  u.rank = rank;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {  // n > 0, so every dim is at least 1
    u.strides[d] = stride;
    u.dims[d] = a.dims[d];
    stride *= a.dims[d];
  }
  // Positions below 2^32: every dim and stride is at most n <= 2^32 - 1 and fits FastDivMod.
  const bool wide = a.n > int64_t{0xffffffff};
  for (int d = 0; d < rank && !wide; ++d) {
    u.stride_div[d] = details::FastDivMod(static_cast<uint32_t>(u.strides[d]));
    u.dim_div[d] = details::FastDivMod(static_cast<uint32_t>(u.dims[d]));
  }
  u.rank_div = details::FastDivMod(static_cast<uint32_t>(rank));
  const uint16_t* bitmap16 = reinterpret_cast<const uint16_t*>(bitmap);
  int64_t* rows = static_cast<int64_t*>(out);
  if (wide) {
    return LaunchKernel<&NonzeroScatterKernel<true>>("NonzeroScatterKernel", static_cast<unsigned>(tiles), kThreads, 0,
                                                     s, bitmap16, offsets, u, rows);
  }
  return LaunchKernel<&NonzeroScatterKernel<false>>("NonzeroScatterKernel", static_cast<unsigned>(tiles), kThreads, 0,
                                                    s, bitmap16, offsets, u, rows);
}

KPS_REGISTER_DEVICE_KERNELS_BY_WIDTH("nonzero", NonzeroKernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS_BY_WIDTH("masked_select", MaskedSelectKernel, KPS_ALL_CPP_TYPES);

}  // namespace compaction
}  // namespace kps
