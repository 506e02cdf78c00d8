// CUDA sort and argsort: lines of up to kMaxBlockSortLength elements sort in one kernel,
// a warp or a block per line; longer ones go to the radix sort (sort_radix_cuda.cu).
#include <cub/block/block_radix_sort.cuh>

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "ops/common/axis.h"
#include "registry/data_type.h"
#include "ops/common/contiguous.h"
#include "ops/sort/sort_cuda.h"
#include "ops/sort/sort_keys.cuh"
#include "primitives/radix.cuh"
#include "primitives/sort.cuh"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"
#include "registry/tuning.h"

namespace kps {
namespace sort {
namespace {

struct BlockSortArgs {
  const void* x;
  DataType dtype;
  int elem_size;
  int key_bits;  // the dtype's radix key width (sort_keys.cuh)
  int64_t lines, inner;
  int length;
  bool descending;
  void* values;      // may be null
  int64_t* indices;  // may be null
};

// Where line `line` starts in x and in the outputs.
__device__ __forceinline__ int64_t LineBase(const BlockSortArgs& a, int64_t line) {
  const int64_t o = line / a.inner;
  return o * a.length * a.inner + (line - o * a.inner);
}

// This thread's NX ascending keys of a line in the blocked arrangement (thread t holds
// positions t * NX ...), with the positions as payload; `pad` past the line's end.
template <typename K, int NX>
__device__ __forceinline__ void LoadLineKeys(const BlockSortArgs& a, int64_t base, int tid, K pad, K (&key)[NX],
                                             int (&pos)[NX]) {
  const K flip = a.descending ? KeyMask<K>(a.key_bits) : K(0);
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    const int p = tid * NX + j;
    pos[j] = p;
    key[j] = p < a.length ? static_cast<K>(LoadKey<K>(a.x, base + p * a.inner, a.dtype) ^ flip) : pad;
  }
}

// Writes rank p of a sorted line whose element came from position src: its index, and
// its value read back from x by position (a gather within the line just read, so it
// hits L1/L2, carrying the exact bits, NaN payloads and the sign of zero, that the key
// does not).
__device__ __forceinline__ void StoreRank(const BlockSortArgs& a, int64_t base, int p, int src) {
  const int64_t dst = base + p * a.inner;
  if (a.indices != nullptr) a.indices[dst] = src;
  if (a.values != nullptr) CopyElement(a.values, dst, a.x, base + src * a.inner, a.elem_size);
}

// One line per group of kThreads lanes: kThreads == 32 puts blockDim.y lines in a block
// (each warp sorts its own, which the Sort primitive allows since its steps then never
// leave the warp), larger kThreads one line per block. The blocked keys are sorted
// ascending by (key, position).
template <typename K, int NX, int kThreads>
__global__ void __launch_bounds__(kThreads == 32 ? 256 : kThreads) SortLinesBlockKernel(BlockSortArgs a) {
  const int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (line >= a.lines) return;  // whole warps only: lines never share a warp
  const int64_t base = LineBase(a, line);
  const int tid = static_cast<int>(threadIdx.x);
  K key[NX];
  int pos[NX];
  LoadLineKeys(a, base, tid, K(0), key, pos);  // Sort leaves positions >= length last
  kps::Sort<K, K, NX, kThreads, int>(key, pos, key, pos, a.length, /*ascending=*/true);
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    const int p = tid * NX + j;
    if (p >= a.length) break;
    StoreRank(a, base, p, pos[j]);
  }
}

// Many lines of at most 32 elements: a thread per line sorts it in registers with a
// bitonic network over N (8, 16 or 32) keys, fully unrolled (every register index a
// constant), comparing (key, position) so that the order is the stable one; padding
// takes the largest key and the last positions. A warp per line (SortLinesBlockKernel)
// spends its shuffles on one line of 17 across 32 lanes: [1M, 17] f32, H200, 1.58 ms
// against PyTorch's 1.00.
template <typename K, int N>
__global__ void __launch_bounds__(128) SortLinesThreadKernel(BlockSortArgs a) {
  const int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (line >= a.lines) return;
  const int64_t base = LineBase(a, line);
  K key[N];
  int pos[N];
  LoadLineKeys(a, base, 0, ~K(0), key, pos);
#pragma unroll
  for (int k = 2; k <= N; k <<= 1) {
#pragma unroll
    for (int j = k >> 1; j > 0; j >>= 1) {
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const int l = i ^ j;
        if (l > i) {
          // Ascending pairs where bit k of i is clear, descending where it is set.
          const bool l_first = key[l] < key[i] || (key[l] == key[i] && pos[l] < pos[i]);
          if (((i & k) == 0) == l_first) {
            const K tk = key[i];
            key[i] = key[l];
            key[l] = tk;
            const int tp = pos[i];
            pos[i] = pos[l];
            pos[l] = tp;
          }
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (j >= a.length) break;
    StoreRank(a, base, j, pos[j]);
  }
}

template <typename K, int N>
absl::Status LaunchThreadSort(const BlockSortArgs& a, cudaStream_t stream) {
  const int64_t blocks = (a.lines + 127) / 128;
  return LaunchKernel<&SortLinesThreadKernel<K, N>>("SortLinesThreadKernel", static_cast<unsigned>(blocks), 128, 0,
                                                    stream, a);
}

// Lines of 129 to 4096 elements of the classes where it beats KPS's block radix sort
// (UseKpsBlockRadix): a block per line sorts the keys with CUB's block radix sort (4-bit
// digits, only the dtype's key bits: 4 passes for 16-bit types, 8 for 32-bit) instead of
// the bitonic network, whose 78 compare-exchange steps of a 4096-line each
// cross shared memory and a barrier. The sort is stable over the blocked arrangement,
// which is position order, so ties keep position order as in the bitonic kernel; padding
// takes the largest key and the last positions, so it sorts after every real element.
// Results come out striped (thread t holds ranks t, t + kThreads, ...): coalesced stores.
template <typename K, int NX, int kThreads>
__global__ void __launch_bounds__(kThreads) RadixSortLinesBlockKernel(BlockSortArgs a) {
  using BlockRadixSortT = cub::BlockRadixSort<K, kThreads, NX, int>;
  __shared__ typename BlockRadixSortT::TempStorage temp;
  const int64_t base = LineBase(a, blockIdx.x);
  const int tid = static_cast<int>(threadIdx.x);
  K key[NX];
  int pos[NX];
  LoadLineKeys(a, base, tid, KeyMask<K>(a.key_bits), key, pos);
  BlockRadixSortT(temp).SortBlockedToStriped(key, pos, 0, a.key_bits);
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    const int p = j * kThreads + tid;
    if (p < a.length) StoreRank(a, base, p, pos[j]);
  }
}

// Lines of 129 to 4096 elements sorted by KPS's radix primitives: a block of kThreads
// (>= 256, as RadixWarpCountsToSlots needs a thread per digit) per line, each thread holding NX keys warp-striped (item j of lane l in warp w
// is line position w * 32 * NX + j * 32 + l), one 8-bit digit a pass over the key's
// significant bits (1 pass for 8-bit dtypes, 2 for 16-bit, 4 for 32-bit, 8 for 64-bit).
// Each pass: WarpRadixRank ranks every warp's keys by the digit (of the key's 32-bit half
// that holds it), RadixWarpCountsToSlots turns the warps' counts into slots of the tile,
// and the keys with their positions move to their slots in shared memory, from where the
// next pass reloads them warp-striped. Stable over warp-striped order, which is position
// order, so ties keep position order; padding (the largest key, the last positions) sorts
// last. The sorted tile ends warp-striped too: coalesced stores. The tile moves through
// shared memory 32 bits of key at a time (a 64-bit key's low half, then its high half)
// and positions as 16 bits (lines are at most 4096 long): 32 KB for a tile of 4096, where
// whole 64-bit keys would pass the 48 KB of static shared memory.
template <typename K, int NX, int kThreads>
__global__ void __launch_bounds__(kThreads) KpsRadixSortLinesBlockKernel(BlockSortArgs a) {
  constexpr int kWarps = kThreads / 32;
  constexpr int kTile = kThreads * NX;
  static_assert(kTile <= 65536, "positions travel as 16 bits");
  __shared__ uint32_t warp_counts[kWarps][kps::kRadixBins<>];
  __shared__ uint32_t s_key[kTile];
  __shared__ uint16_t s_pos[kTile];
  const int64_t base = LineBase(a, blockIdx.x);
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int first = warp * 32 * NX + lane;  // this thread's first position, warp-striped
  const K flip = a.descending ? KeyMask<K>(a.key_bits) : K(0);
  const K pad = KeyMask<K>(a.key_bits);
  K key[NX];
  int pos[NX];
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    const int p = first + j * 32;
    pos[j] = p;
    key[j] = p < a.length ? static_cast<K>(LoadKey<K>(a.x, base + p * a.inner, a.dtype) ^ flip) : pad;
  }
  for (int shift = 0; shift < a.key_bits; shift += 8) {
    for (int i = tid; i < kWarps * kps::kRadixBins<>; i += kThreads) (&warp_counts[0][0])[i] = 0;
    // The 32-bit half of each key that holds this pass's digit, and the digit's shift in it.
    const int half_shift = shift & ~31, digit_shift = shift & 31;
    uint32_t half[NX];
#pragma unroll
    for (int j = 0; j < NX; ++j) half[j] = static_cast<uint32_t>(key[j] >> half_shift);
    __syncthreads();
    uint32_t rank[NX];
    kps::WarpRadixRank<NX>(half, digit_shift, /*match=*/false, warp_counts[warp], rank);
    __syncthreads();
    const uint32_t total = kps::RadixWarpCountsTotal<kWarps>(warp_counts);
    uint32_t tile_start;
    kps::RadixWarpCountsToSlots<kThreads, kWarps>(warp_counts, total, &tile_start);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < NX; ++j) {
      rank[j] += warp_counts[warp][kps::RadixDigit(half[j], digit_shift)];  // the key's slot
      s_key[rank[j]] = static_cast<uint32_t>(key[j]);
      s_pos[rank[j]] = static_cast<uint16_t>(pos[j]);
    }
    __syncthreads();
    uint32_t low[NX];
#pragma unroll
    for (int j = 0; j < NX; ++j) {
      low[j] = s_key[first + j * 32];
      pos[j] = s_pos[first + j * 32];
    }
    if constexpr (sizeof(K) == 8) {
      __syncthreads();
#pragma unroll
      for (int j = 0; j < NX; ++j) s_key[rank[j]] = static_cast<uint32_t>(key[j] >> 32);
      __syncthreads();
#pragma unroll
      for (int j = 0; j < NX; ++j) key[j] = (static_cast<K>(s_key[first + j * 32]) << 32) | low[j];
    } else {
#pragma unroll
      for (int j = 0; j < NX; ++j) key[j] = low[j];
    }
  }
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    const int p = first + j * 32;  // the rank this thread now holds
    if (p < a.length) StoreRank(a, base, p, pos[j]);
  }
}

template <typename K, int NX, int kThreads>
absl::Status LaunchKpsRadixBlockSort(const BlockSortArgs& a, cudaStream_t stream) {
  return LaunchKernel<&KpsRadixSortLinesBlockKernel<K, NX, kThreads>>("KpsRadixSortLinesBlockKernel",
                                                                      static_cast<unsigned>(a.lines), kThreads, 0,
                                                                      stream, a);
}

template <typename K, int NX, int kThreads>
absl::Status LaunchRadixBlockSort(const BlockSortArgs& a, cudaStream_t stream) {
  KPS_RETURN_IF_ERROR((LaunchKernel<&RadixSortLinesBlockKernel<K, NX, kThreads>>(
      "RadixSortLinesBlockKernel", static_cast<unsigned>(a.lines), kThreads, 0, stream, a)));
  return absl::OkStatus();
}

template <typename K, int NX, int kThreads>
absl::Status LaunchBlockSort(const BlockSortArgs& a, cudaStream_t stream) {
  const int per_block = kThreads == 32 ? 8 : 1;
  const int64_t blocks = (a.lines + per_block - 1) / per_block;
  KPS_RETURN_IF_ERROR((LaunchKernel<&SortLinesBlockKernel<K, NX, kThreads>>(
      "SortLinesBlockKernel", static_cast<unsigned>(blocks), dim3(kThreads, per_block), 0, stream, a)));
  return absl::OkStatus();
}

// KPS_TUNE="sort.block_max=N,sort.block_radix=B" (registry/tuning.h; for measuring launch
// choices within one run): lines longer than N go to the device radix sort; lines of 129
// to 4096 take B = 3 (the default) the faster of the two block radix sorts for the line's
// class (UseKpsBlockRadix), B = 2 always KPS's (KpsRadixSortLinesBlockKernel), B = 1
// always CUB's, B = 0 the bitonic kernel.
// argsort of 4096 x 4096 float32, H100: block radix 0.359 ms, bitonic 1.174, device radix 1.540.
// sort.thread_max / sort.thread_lines: lines of at most thread_max (<= 32) elements, at
// least thread_lines of them, sort a thread per line (SortLinesThreadKernel); the
// defaults await measurement (a thread per line fills the GPU from about 32K lines).
struct SortTune {
  int64_t block_max = kMaxBlockSortLength;
  int block_radix = 3;
  int64_t thread_max = 32;
  int64_t thread_lines = 32768;
};
const SortTune& Tune() {
  static const SortTune tune = [] {
    SortTune t;
    t.block_max = std::min<int64_t>(TuneInt("sort.block_max", t.block_max), kMaxBlockSortLength);
    t.block_radix = static_cast<int>(TuneInt("sort.block_radix", t.block_radix));
    t.thread_max = std::min<int64_t>(TuneInt("sort.thread_max", t.thread_max), 32);
    t.thread_lines = TuneInt("sort.thread_lines", t.thread_lines);
    return t;
  }();
  return tune;
}

// Whether a line of 129 to 4096 elements with keys of key_bits bits sorts faster with
// KPS's block radix sort than with CUB's. KPS's takes 8-bit digits (half CUB's passes),
// ranked by warp ballots, in a tile fitted to the line (512, 1024, 2048 or 4096); CUB's
// takes 4-bit digits in tiles of 1024 or 4096. Where the line fills CUB's tile, CUB's
// cheaper per-digit ranking wins for keys of up to 32 bits at 513-1024 and up to 16 bits
// at 2049-4096; everywhere else KPS's. argsort back to back, H100, CUB ms / KPS ms:
// [16384, 1024] f32 0.326 / 0.327, f16 0.172 / 0.201, i32 0.277 / 0.315;
// [4096, 4096] f32 0.368 / 0.355, f16 0.204 / 0.226, i32 0.319 / 0.330, f64 0.957 / 0.670;
// [8192, 2048] f32 0.625 / 0.320; [65536, 256] f32 0.990 / 0.760, f64 2.556 / 1.516.
bool UseKpsBlockRadix(int64_t length, int key_bits) {
  if (length > 512 && length <= 1024) return key_bits > 32;
  if (length > 2048) return key_bits > 16;
  return true;
}

template <typename K>
absl::Status BlockSort(const BlockSortArgs& a, cudaStream_t stream) {
  if (a.length <= Tune().thread_max && a.lines >= Tune().thread_lines) {
    if (a.length <= 8) return LaunchThreadSort<K, 8>(a, stream);
    if (a.length <= 16) return LaunchThreadSort<K, 16>(a, stream);
    return LaunchThreadSort<K, 32>(a, stream);
  }
  const int choice = Tune().block_radix;
  if (a.length > 128 && (choice == 2 || (choice == 3 && UseKpsBlockRadix(a.length, a.key_bits)))) {
    if (a.length <= 512) return LaunchKpsRadixBlockSort<K, 2, 256>(a, stream);
    if (a.length <= 1024) return LaunchKpsRadixBlockSort<K, 4, 256>(a, stream);
    if (a.length <= 2048) return LaunchKpsRadixBlockSort<K, 8, 256>(a, stream);
    return LaunchKpsRadixBlockSort<K, 8, 512>(a, stream);
  }
  if (a.length > 128 && choice != 0) {
    if (a.length <= 1024) return LaunchRadixBlockSort<K, 8, 128>(a, stream);
    return LaunchRadixBlockSort<K, 8, 512>(a, stream);
  }
  // Bitonic (lines up to 128, or all with block_radix=0), three shapes: a warp per line
  // up to 128 (a warp's tile of 4 per lane), a block of 128 x 8 up to 1024, of 512 x 8
  // up to 4096. The network stops once merges reach twice the line length, so a short
  // line in a larger tile costs little more than its own.
  if (a.length <= 128) return LaunchBlockSort<K, 4, 32>(a, stream);
  if (a.length <= 1024) return LaunchBlockSort<K, 8, 128>(a, stream);
  return LaunchBlockSort<K, 8, 512>(a, stream);
}

}  // namespace

absl::Status SortLinesCuda(const Lines& x, bool descending, void* values, int64_t* indices, const Stream& stream) {
  if (x.count() == 0 || x.length == 0) return absl::OkStatus();
  if (x.length > Tune().block_max) return RadixSortLinesCuda(x, descending, values, indices, stream);
  const int64_t grid_limit = int64_t{0x7fffffff};
  if (x.count() > grid_limit) {
    return absl::InvalidArgumentError(absl::StrCat(x.count(), " lines exceed the CUDA grid (2^31 - 1)"));
  }
  BlockSortArgs a{x.data,     x.dtype,       static_cast<int>(DataTypeSize(x.dtype)), KeyBits(x.dtype), x.count(),
                  x.inner,    static_cast<int>(x.length), descending, values, indices};
  return WideKey(x.dtype) ? BlockSort<uint64_t>(a, stream.cuda_stream()) : BlockSort<uint32_t>(a, stream.cuda_stream());
}

}  // namespace sort
}  // namespace kps
