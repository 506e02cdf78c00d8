// CUDA topk. Five strategies, chosen per shape by ChooseTopkPath (knobs: TopkTune):
//   - warp sort: lines of at most 128 elements (many short lines): a warp per line holds
//     its line in registers, sorts it with the Sort primitive and writes the first k;
//   - selection, k <= 16: a block per line, each lane streams its share of the line
//     keeping its own best in registers (sorted insertion, behind a block-wide bar that
//     soon rejects nearly everything with one compare), then the elements at the block's
//     final bar (or, past 64 of them, each warp's k best) go to shared memory, and one
//     warp sorts them with the Sort primitive (topk_select.cuh). One read of the line;
//   - radix select, a block per line (k > 16): passes over the key's 8-bit digits find
//     the k-th key, a last pass gathers the winners in position order (topk_radix.cuh);
//   - radix select split across blocks (few long lines, any k): the same passes, each
//     line's digit counts summed by many blocks into a global histogram, a tiny kernel
//     picking the digit; the gather ranks winners across blocks by a scan of per-block
//     counts;
//   - sort (the old path for k > 16, still taken for lines or grids past int range):
//     sort each whole line (sort_cuda.h) and keep the first k.
// Radix-selected winners come out in position order (the `sorted` = false result); for
// `sorted` they are sorted as lines of k by SortLinesCuda, stable, so by (key, position).
//
// Order: ascending radix keys, complemented for `largest`, ties by position: the k
// winners are exactly the first k of the stable sort, whatever the path or launch shape.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "ops/common/axis.h"
#include "registry/data_type.h"
#include "ops/common/contiguous.h"
#include "ops/sort/sort_cuda.h"
#include "ops/sort/sort_keys.cuh"
#include "ops/sort/topk_radix.cuh"
#include "ops/sort/topk_select.cuh"
#include "primitives/sort.cuh"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"
#include "registry/tuning.h"

namespace kps {
namespace sort {
namespace {

// Largest k served by the selection kernel.
constexpr int64_t kMaxSelectK = 16;

struct TopkArgs {
  const void* x;
  DataType dtype;
  int elem_size;
  int64_t inner;
  int length, k;
  bool largest, sorted;
  void* values;
  int64_t* indices;
};

// Resident blocks per SM asked of the compiler: 5 for 32-bit keys and 8 candidates
// (48 registers instead of 60). Wider keys and lists would spill.
// topk of 4096 x 32768 float32, H100: 5 blocks (48 registers) 0.28 ms, 4 (60) 0.39.
template <typename K, int NX>
constexpr int SelectMinBlocks() {
  return sizeof(K) == 4 && NX == 8 ? 5 : 1;
}

// A kernel per (key, list, loader): each gets its own registers and code, where one
// kernel holding every loader's scan runs the float32 rows 25% slower than that scan
// alone.
template <typename K, int NX, int kThreads, typename Load>
__global__ void __launch_bounds__(kThreads, (SelectMinBlocks<K, NX>())) TopkSelectKernel(TopkArgs a, Load load) {
  static_assert(kThreads % 32 == 0 && kThreads / 32 * NX == 64, "the final warp sort takes 64 candidates");
  const int64_t line = blockIdx.x;
  const int64_t o = line / a.inner;
  const int64_t i = line - o * a.inner;
  const int64_t base = o * a.length * a.inner + i;
  // A 2-D block of kThreads / 32 warps: threadIdx.x is the lane, as the warp-level Sort
  // below needs.
  const int tid = static_cast<int>(threadIdx.y * 32 + threadIdx.x);
  // This lane's NX best, in order; empty slots sort after every real element.
  K key[NX];
  int pos[NX];
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    key[j] = ~K(0);
    pos[j] = INT_MAX;
  }
  __shared__ K block_bar;
  __shared__ int cand_count;
  __shared__ K cand_key[64];
  __shared__ int cand_pos[64];
  if (tid == 0) {
    block_bar = ~K(0);
    cand_count = 0;
  }
  if (tid < 64) {  // kThreads >= 64
    cand_key[tid] = ~K(0);
    cand_pos[tid] = INT_MAX;
  }
  __syncthreads();
  load.p += base;
  select::ScanLine<K, NX, kThreads>(load, a.length, a.k, tid, &block_bar, key, pos);
  __syncthreads();  // every warp's bar is in
  select::CollectCandidates<K, NX>(a.k, block_bar, &cand_count, key, pos, cand_key, cand_pos);
  const int warp = static_cast<int>(threadIdx.y), lane = static_cast<int>(threadIdx.x);
  if (warp != 0) return;
  // Warp 0 orders the 64 candidates (2 per lane): positions 0..k-1 win.
  K fk[2] = {cand_key[lane * 2], cand_key[lane * 2 + 1]};
  int fp[2] = {cand_pos[lane * 2], cand_pos[lane * 2 + 1]};
  kps::Sort<K, K, 2, 32, int>(fk, fp, fk, fp, 64, /*ascending=*/true);
  if (!a.sorted) kps::Sort<int, int, 2, 32>(fp, fp, a.k, /*ascending=*/true);  // winners by position
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int r = lane * 2 + j;
    if (r < a.k) {
      const int64_t dst = (o * a.k + r) * a.inner + i;
      a.indices[dst] = fp[j];
      CopyElement(a.values, dst, a.x, base + static_cast<int64_t>(fp[j]) * a.inner, a.elem_size);
    }
  }
}

template <typename K, int NX, int kThreads>
absl::Status LaunchSelect(const TopkArgs& a, int64_t lines, cudaStream_t stream) {
  auto launch = [&](auto load) {
    return LaunchKernel<&TopkSelectKernel<K, NX, kThreads, decltype(load)>>(
        "TopkSelectKernel", static_cast<unsigned>(lines), dim3(32, kThreads / 32), 0, stream, a, load);
  };
  const K flip = a.largest ? KeyMask<K>(a.elem_size * 8) : K(0);
  // One loader per raw element width, and float32's own four (direction, and whether
  // the lines are contiguous).
  if constexpr (sizeof(K) == 8) {
    return launch(select::BitsLoad<K, uint64_t>{static_cast<const uint64_t*>(a.x), a.inner, a.dtype, flip});
  } else if (a.dtype == DataType::kFloat32) {
    const uint32_t* p = static_cast<const uint32_t*>(a.x);
    if (a.inner == 1) {
      return a.largest ? launch(select::Float32Load<true, true>{p, 1})
                       : launch(select::Float32Load<false, true>{p, 1});
    } else {
      return a.largest ? launch(select::Float32Load<true, false>{p, a.inner})
                       : launch(select::Float32Load<false, false>{p, a.inner});
    }
  } else if (a.elem_size == 4) {
    return launch(select::BitsLoad<K, uint32_t>{static_cast<const uint32_t*>(a.x), a.inner, a.dtype, flip});
  } else if (a.elem_size == 2) {
    return launch(select::BitsLoad<K, uint16_t>{static_cast<const uint16_t*>(a.x), a.inner, a.dtype, flip});
  } else {
    return launch(select::BitsLoad<K, uint8_t>{static_cast<const uint8_t*>(a.x), a.inner, a.dtype, flip});
  }
}

template <typename K>
absl::Status Select(const TopkArgs& a, int64_t lines, cudaStream_t stream) {
  // 8 warps of 8 candidates per lane, or 4 warps of 16: 64 warp winners either way.
  if (a.k <= 8) return LaunchSelect<K, 8, 256>(a, lines, stream);
  return LaunchSelect<K, 16, 128>(a, lines, stream);
}

// out[(o, j, i)] = idx[(o, j, i)] of a [outer, length, inner] array, for j < k.
__global__ void TakeFirstKernel(const int64_t* idx, int64_t length, int64_t k, int64_t inner, int64_t n,
                                int64_t* out) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = e / (k * inner);
    const int64_t r = e - o * k * inner;
    out[e] = idx[o * length * inner + r];  // (o, j, i) with j < k: the same r in both layouts
  }
}

// values[(o, j, i)] = x[(o, idx[(o, j, i)], i)].
__global__ void GatherKernel(const void* x, int elem_size, int64_t length, int64_t k, int64_t inner, int64_t n,
                             const int64_t* idx, void* values) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = e / (k * inner);
    const int64_t i = e % inner;
    CopyElement(values, e, x, (o * length + idx[e]) * inner + i, elem_size);
  }
}

// The old path for k > kMaxSelectK (topk.radix=0), and lines or grids past int range:
// sort each line's positions, keep the first k, and for `sorted` = false sort those k
// positions themselves.
absl::Status TopkBySort(const Lines& x, int64_t k, bool largest, bool sorted, void* values, int64_t* indices,
                        const Stream& stream) {
  cudaStream_t s = stream.cuda_stream();
  const int64_t n_out = x.outer * k * x.inner;
  const size_t all_bytes = static_cast<size_t>(x.count() * x.length) * sizeof(int64_t);
  const size_t sel_bytes = sorted ? 0 : static_cast<size_t>(n_out) * sizeof(int64_t);
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> scratch,
                       Storage::Allocate(all_bytes + sel_bytes, DeviceType::kCuda, stream));
  int64_t* order = static_cast<int64_t*>(scratch->data());
  KPS_RETURN_IF_ERROR(SortLinesCuda(x, largest, nullptr, order, stream));
  int64_t* chosen = sorted ? indices : order + x.count() * x.length;
  KPS_RETURN_IF_ERROR(LaunchKernel<&TakeFirstKernel>("TakeFirstKernel", GridStrideBlocks(n_out, 256), 256, 0, s, order,
                                                     x.length, k, x.inner, n_out, chosen));
  if (!sorted) {  // the chosen positions in ascending order are the output indices
    const Lines chosen_lines{{x.outer, k, x.inner}, chosen, DataType::kInt64};
    KPS_RETURN_IF_ERROR(SortLinesCuda(chosen_lines, /*descending=*/false, indices, nullptr, stream));
  }
  KPS_RETURN_IF_ERROR(LaunchKernel<&GatherKernel>("GatherKernel", GridStrideBlocks(n_out, 256), 256, 0, s, x.data,
                                                  static_cast<int>(DataTypeSize(x.dtype)), x.length, k, x.inner, n_out,
                                                  indices, values));
  return absl::OkStatus();
}

// ---- Radix select and the warp sort (ChooseTopkPath picks among all paths) ----

// KPS_TUNE="topk.radix=R,topk.short_max=S,topk.select_k=K,topk.split_lines=L,
// topk.split_min=M" (registry/tuning.h; to compare paths in one run, and for tests that
// must reach a path at small sizes). R = 0: the old choice (selection for k <= 16, the
// full sort beyond); R = 1 (the default): lines of at most S (<= 128) elements take the
// warp sort; at most L lines (<= 65535) of at least M elements the split radix select;
// otherwise k <= K (<= 16) the selection kernel and larger k the block radix select.
// The defaults are reasoned, not yet measured: S = 128 is the warp sort's largest tile
// (4 per lane); L = 256 is about two lines per H100 SM, below which a block per line
// leaves SMs idle; M = 32768 gives each line at least 4 blocks of kSplitChunk; K = 16
// keeps the one-read selection where it was measured fast (4096 x 32768 f32: 0.28 ms).
struct TopkTune {
  int radix = 1;
  int64_t short_max = 128;
  int64_t select_k = 16;
  int64_t split_lines = 256;
  int64_t split_min = 32768;
};
const TopkTune& Tune() {
  static const TopkTune tune = [] {
    TopkTune t;
    t.radix = static_cast<int>(TuneInt("topk.radix", t.radix));
    t.short_max = std::min<int64_t>(TuneInt("topk.short_max", t.short_max), 128);
    t.select_k = std::min<int64_t>(TuneInt("topk.select_k", t.select_k), kMaxSelectK);
    t.split_lines = std::min<int64_t>(TuneInt("topk.split_lines", t.split_lines), 65535);  // grid y
    t.split_min = TuneInt("topk.split_min", t.split_min);
    return t;
  }();
  return tune;
}

enum class TopkPath { kSort, kSelect, kWarpSort, kRadixBlock, kRadixSplit };

// The strategy for x's lines and k (the file comment says what each does).
TopkPath ChooseTopkPath(const Lines& x, int64_t k) {
  if (x.length > INT_MAX - 4096 || x.count() > INT_MAX) return TopkPath::kSort;  // int positions, grid
  const TopkTune& t = Tune();
  if (t.radix == 0) return k <= kMaxSelectK ? TopkPath::kSelect : TopkPath::kSort;
  if (x.length <= t.short_max) return TopkPath::kWarpSort;
  if (x.count() <= t.split_lines && x.length >= t.split_min) return TopkPath::kRadixSplit;
  if (k <= t.select_k) return TopkPath::kSelect;
  return TopkPath::kRadixBlock;
}

// Elements per block and pass of the split radix select: 32 per thread (8 batches of 4
// loads), so a block's 256 global atomics for its digit counts are 3% of its work.
constexpr int kSplitChunk = radix_select::kThreads * 32;

// A radix-select or warp-sort launch: x's lines, and where the winners go, in the outputs'
// layout [outer, k, inner] (the outputs themselves, or scratch that is sorted after).
struct RadixArgs {
  const void* x;
  DataType dtype;
  int elem_size, key_bits;
  int64_t lines, inner;
  int length, k;
  bool sorted;        // the warp sort orders its winners itself
  uint64_t flip;      // the key's complement mask for `largest`, 0 for smallest
  int64_t* idx_out;   // positions
  void* val_out;      // x's dtype
};

// The end of chunk `c` of a line (the split path's block c covers [c * kSplitChunk, end)).
__device__ __forceinline__ int ChunkEnd(int c, int length) {
  const int64_t end = (static_cast<int64_t>(c) + 1) * kSplitChunk;
  return end < length ? static_cast<int>(end) : length;
}

// Line `line`'s first element in x.
__device__ __forceinline__ int64_t RadixLineBase(const RadixArgs& a, int64_t line) {
  const int64_t o = line / a.inner;
  return o * a.length * a.inner + (line - o * a.inner);
}

template <typename K, typename Raw>
__device__ __forceinline__ select::BitsLoad<K, Raw> LineLoad(const RadixArgs& a, int64_t base) {
  return select::BitsLoad<K, Raw>{static_cast<const Raw*>(a.x) + base, a.inner, a.dtype, static_cast<K>(a.flip)};
}

// Stores line `line`'s winner at position p as its rank r: index and the element's bits.
__device__ __forceinline__ void StoreWinner(const RadixArgs& a, int64_t line, int64_t base, int r, int p) {
  const int64_t o = line / a.inner;
  const int64_t dst = (o * a.k + r) * a.inner + (line - o * a.inner);
  a.idx_out[dst] = p;
  CopyElement(a.val_out, dst, a.x, base + static_cast<int64_t>(p) * a.inner, a.elem_size);
}

// One line per warp of a (32, 8) block, lines of at most 32 * NX elements: lane l holds
// positions l * NX ...; the warp sorts (key, position) with the Sort primitive and the
// first k are the winners (sorted again by position for `sorted` = false); k = 1 takes
// the warp's minimum instead. Lines of 17 elements took a 256-thread block each in the
// selection kernel (1M lines: 4.9 ms, where PyTorch took 1.16).
template <typename K, typename Raw, int NX>
__global__ void __launch_bounds__(256) TopkWarpSortKernel(RadixArgs a) {
  const int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (line >= a.lines) return;  // a whole warp
  const int64_t base = RadixLineBase(a, line);
  const auto load = LineLoad<K, Raw>(a, base);
  const int lane = static_cast<int>(threadIdx.x);
  Raw raw[NX];
  load.template Batch<NX, 1>(lane * NX, a.length, raw);
  K key[NX];
  int pos[NX];
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    key[j] = load.Key(raw[j]);
    pos[j] = lane * NX + j;
  }
  if (a.k == 1) {  // the best (key, position) by 5 shuffle rounds instead of the whole network
    K bk = ~K(0);
    int bp = INT_MAX;
#pragma unroll
    for (int j = 0; j < NX; ++j) {
      if (pos[j] < a.length && select::Before(key[j], pos[j], bk, bp)) {
        bk = key[j];
        bp = pos[j];
      }
    }
#pragma unroll
    for (int s = 16; s > 0; s /= 2) {
      const K ok = __shfl_xor_sync(0xffffffffu, bk, s);
      const int op = __shfl_xor_sync(0xffffffffu, bp, s);
      if (select::Before(ok, op, bk, bp)) {
        bk = ok;
        bp = op;
      }
    }
    if (lane == 0) StoreWinner(a, line, base, 0, bp);
    return;
  }
  kps::Sort<K, K, NX, 32, int>(key, pos, key, pos, a.length, /*ascending=*/true);  // positions >= length stay last
  if (!a.sorted) kps::Sort<int, int, NX, 32>(pos, pos, a.k, /*ascending=*/true);
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    const int r = lane * NX + j;
    if (r < a.k) StoreWinner(a, line, base, r, pos[j]);
  }
}

// A block per line: KeyBits / 8 counting passes over the line (each read from global
// memory; L2 keeps mid-size lines), each followed by FindDigit, then the gather. A pass
// that finds every candidate of its digit a winner ends the passes early.
template <typename K, typename Raw>
__global__ void __launch_bounds__(radix_select::kThreads) TopkRadixBlockKernel(RadixArgs a) {
  using namespace radix_select;  // NOLINT(build/namespaces): the kernel is written in its terms
  __shared__ uint32_t hist[kWarps][kBins];
  __shared__ uint32_t s_pick[3];
  __shared__ uint32_t s_tot[2][kWarps][2];
  const int64_t line = blockIdx.x;
  const int64_t base = RadixLineBase(a, line);
  const auto load = LineLoad<K, Raw>(a, base);
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32;
  K prefix = 0, mask = 0;
  uint32_t k_rem = static_cast<uint32_t>(a.k);
  for (int shift = a.key_bits - 8; shift >= 0; shift -= 8) {
    for (int j = tid; j < kWarps * kBins; j += kThreads) (&hist[0][0])[j] = 0;
    __syncthreads();
    CountCandidateDigits<K>(load, 0, a.length, prefix, mask, shift, hist[warp]);
    __syncthreads();
    uint32_t count = 0;
    if (tid < kBins) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) count += hist[w][tid];
    }
    int digit;
    uint32_t below, same;
    FindDigit(count, k_rem, s_pick, &digit, &below, &same);
    k_rem -= below;
    prefix |= static_cast<K>(digit) << shift;
    mask |= static_cast<K>(0xff) << shift;
    if (same == k_rem) break;  // every candidate of this digit wins: no need to tell them apart
  }
  GatherWinners<K>(load, 0, a.length, prefix, mask, k_rem, static_cast<uint32_t>(a.k) - k_rem, 0u, 0u, s_tot,
                   [&](int r, int p) { StoreWinner(a, line, base, r, p); });
}

// The split radix select's state of a line between its kernels.
struct SplitState {
  uint64_t prefix, mask;  // the digits found so far (K's bits)
  uint32_t k_rem;         // winners still to find among the candidates
  uint32_t done;          // no more passes needed
};

// Per line (a block of 256): zero counts, all candidates, k to find.
__global__ void __launch_bounds__(radix_select::kThreads) SplitInitKernel(int k, SplitState* state, uint32_t* hist) {
  hist[blockIdx.x * radix_select::kBins + threadIdx.x] = 0;
  if (threadIdx.x == 0) state[blockIdx.x] = SplitState{0, 0, static_cast<uint32_t>(k), 0};
}

// Grid (chunks, lines): block (c, line) adds its chunk's candidate digit counts at
// `shift` to the line's global histogram.
template <typename K, typename Raw>
__global__ void __launch_bounds__(radix_select::kThreads)
    SplitCountKernel(RadixArgs a, int shift, const SplitState* state, uint32_t* hist) {
  using namespace radix_select;  // NOLINT(build/namespaces)
  __shared__ uint32_t s_hist[kWarps][kBins];
  const int64_t line = blockIdx.y;
  const SplitState st = state[line];
  if (st.done) return;  // the whole block
  const int tid = static_cast<int>(threadIdx.x);
  for (int j = tid; j < kWarps * kBins; j += kThreads) (&s_hist[0][0])[j] = 0;
  __syncthreads();
  const int begin = static_cast<int>(blockIdx.x) * kSplitChunk;
  const int end = ChunkEnd(static_cast<int>(blockIdx.x), a.length);
  CountCandidateDigits<K>(LineLoad<K, Raw>(a, RadixLineBase(a, line)), begin, end, static_cast<K>(st.prefix),
                          static_cast<K>(st.mask), shift, s_hist[tid / 32]);
  __syncthreads();
  if (tid < kBins) {
    uint32_t count = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) count += s_hist[w][tid];
    if (count != 0) atomicAdd(&hist[line * kBins + tid], count);  // integer sums: deterministic
  }
}

// Per line (a block of 256): the digit at `shift` from the summed counts (zeroed again
// for the next pass).
__global__ void __launch_bounds__(radix_select::kThreads) SplitPickKernel(int shift, SplitState* state,
                                                                          uint32_t* hist) {
  using namespace radix_select;  // NOLINT(build/namespaces)
  __shared__ uint32_t s_pick[3];
  const int64_t line = blockIdx.x;
  const SplitState st = state[line];
  if (st.done) return;
  uint32_t* h = hist + line * kBins + threadIdx.x;
  const uint32_t count = *h;
  *h = 0;
  int digit;
  uint32_t below, same;
  FindDigit(count, st.k_rem, s_pick, &digit, &below, &same);
  if (threadIdx.x == 0) {
    SplitState next = st;
    next.k_rem -= below;
    next.prefix |= static_cast<uint64_t>(digit) << shift;
    next.mask |= uint64_t{0xff} << shift;
    next.done = same == next.k_rem || shift == 0;
    state[line] = next;
  }
}

// Block (c, line) counts its chunk's keys below the threshold and equal to it (under the
// state's mask) into tally[line * chunks + c]: below in the low 32 bits, equal in the high.
template <typename K, typename Raw>
__global__ void __launch_bounds__(radix_select::kThreads)
    SplitTallyKernel(RadixArgs a, const SplitState* state, uint64_t* tally) {
  using namespace radix_select;  // NOLINT(build/namespaces)
  __shared__ uint64_t s_sum;
  const int64_t line = blockIdx.y;
  const SplitState st = state[line];
  const K thr = static_cast<K>(st.prefix), mask = static_cast<K>(st.mask);
  const auto load = LineLoad<K, Raw>(a, RadixLineBase(a, line));
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) s_sum = 0;
  __syncthreads();
  const int begin = static_cast<int>(blockIdx.x) * kSplitChunk;
  const int end = ChunkEnd(static_cast<int>(blockIdx.x), a.length);
  constexpr int kUnroll = 4;
  uint32_t below = 0, equal = 0;
  for (int p0 = begin + tid; p0 < end; p0 += kThreads * kUnroll) {
    Raw raw[kUnroll];
    load.template Batch<kUnroll, kThreads>(p0, end, raw);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const K key = load.Key(raw[u]) & mask;
      const bool in = p0 + u * kThreads < end;
      below += in && key < thr;
      equal += in && key == thr;
    }
  }
  uint64_t both = (static_cast<uint64_t>(equal) << 32) | below;  // each below 2^31
#pragma unroll
  for (int s = 16; s > 0; s /= 2) both += __shfl_xor_sync(0xffffffffu, both, s);
  if ((tid & 31) == 0) atomicAdd(reinterpret_cast<unsigned long long*>(&s_sum), static_cast<unsigned long long>(both));
  __syncthreads();
  if (tid == 0) tally[line * gridDim.x + blockIdx.x] = s_sum;
}

// Adds 64-bit packed counts (kps::Cumsum's combiner).
struct PackedCountSum {
  __device__ uint64_t initial() const { return 0; }
  __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a + b; }
};

// Per line (a block of 256): tally[line * chunks + c] becomes the exclusive scan over the
// chunks (the keys below and equal to the threshold before chunk c).
__global__ void __launch_bounds__(radix_select::kThreads) SplitScanKernel(int chunks, uint64_t* tally) {
  uint64_t* t = tally + static_cast<int64_t>(blockIdx.x) * chunks;
  uint64_t carry = 0;
  for (int c0 = 0; c0 < chunks; c0 += radix_select::kThreads) {
    const int c = c0 + static_cast<int>(threadIdx.x);
    uint64_t v = c < chunks ? t[c] : 0, excl, total;
    kps::Cumsum<uint64_t, uint64_t, 1, radix_select::kThreads>(&excl, &v, PackedCountSum{}, /*exclusive=*/true,
                                                                &total);
    if (c < chunks) t[c] = carry + excl;
    carry += total;
    __syncthreads();  // Cumsum's scratch is free for the next tile
  }
}

// Block (c, line) writes its chunk's winners at their ranks among the line's winners.
template <typename K, typename Raw>
__global__ void __launch_bounds__(radix_select::kThreads)
    SplitGatherKernel(RadixArgs a, const SplitState* state, const uint64_t* tally) {
  using namespace radix_select;  // NOLINT(build/namespaces)
  __shared__ uint32_t s_tot[2][kWarps][2];
  const int64_t line = blockIdx.y;
  const SplitState st = state[line];
  const uint64_t before = tally[line * gridDim.x + blockIdx.x];
  const int64_t base = RadixLineBase(a, line);
  const int begin = static_cast<int>(blockIdx.x) * kSplitChunk;
  const int end = ChunkEnd(static_cast<int>(blockIdx.x), a.length);
  GatherWinners<K>(LineLoad<K, Raw>(a, base), begin, end, static_cast<K>(st.prefix), static_cast<K>(st.mask),
                   st.k_rem, static_cast<uint32_t>(a.k) - st.k_rem, static_cast<uint32_t>(before),
                   static_cast<uint32_t>(before >> 32), s_tot, [&](int r, int p) { StoreWinner(a, line, base, r, p); });
}

// Calls f(K{}, Raw{}) with x's key type and raw element type.
template <typename F>
absl::Status WithKeyAndRaw(DataType dtype, F&& f) {
  switch (DataTypeSize(dtype)) {
    case 1:
      return f(uint32_t{}, uint8_t{});
    case 2:
      return f(uint32_t{}, uint16_t{});
    case 4:
      return f(uint32_t{}, uint32_t{});
    default:
      return f(uint64_t{}, uint64_t{});
  }
}

absl::Status LaunchWarpSort(const RadixArgs& a, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>((a.lines + 7) / 8);
  const dim3 block(32, 8);
  return WithKeyAndRaw(a.dtype, [&](auto k, auto r) -> absl::Status {
    using K = decltype(k);
    using Raw = decltype(r);
    constexpr const char* kName = "TopkWarpSortKernel";
    if (a.length <= 32) return LaunchKernel<&TopkWarpSortKernel<K, Raw, 1>>(kName, blocks, block, 0, s, a);
    if (a.length <= 64) return LaunchKernel<&TopkWarpSortKernel<K, Raw, 2>>(kName, blocks, block, 0, s, a);
    return LaunchKernel<&TopkWarpSortKernel<K, Raw, 4>>(kName, blocks, block, 0, s, a);
  });
}

absl::Status LaunchRadixBlock(const RadixArgs& a, cudaStream_t s) {
  return WithKeyAndRaw(a.dtype, [&](auto k, auto r) -> absl::Status {
    using K = decltype(k);
    using Raw = decltype(r);
    return LaunchKernel<&TopkRadixBlockKernel<K, Raw>>("TopkRadixBlockKernel", static_cast<unsigned>(a.lines),
                                                       radix_select::kThreads, 0, s, a);
  });
}

absl::Status LaunchRadixSplit(const RadixArgs& a, const Stream& stream) {
  using radix_select::kBins;
  using radix_select::kThreads;
  cudaStream_t s = stream.cuda_stream();
  const int chunks = static_cast<int>((a.length + kSplitChunk - 1) / kSplitChunk);
  const unsigned lines = static_cast<unsigned>(a.lines);
  const size_t state_bytes = a.lines * sizeof(SplitState);
  const size_t hist_bytes = a.lines * kBins * sizeof(uint32_t);
  const size_t tally_bytes = a.lines * chunks * sizeof(uint64_t);
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> scratch,
                       Storage::Allocate(state_bytes + hist_bytes + tally_bytes, DeviceType::kCuda, stream));
  char* base = static_cast<char*>(scratch->data());
  SplitState* state = reinterpret_cast<SplitState*>(base);
  uint64_t* tally = reinterpret_cast<uint64_t*>(base + state_bytes);
  uint32_t* hist = reinterpret_cast<uint32_t*>(base + state_bytes + tally_bytes);
  const dim3 grid(static_cast<unsigned>(chunks), lines);
  KPS_RETURN_IF_ERROR(LaunchKernel<&SplitInitKernel>("SplitInitKernel", lines, kThreads, 0, s, a.k, state, hist));
  return WithKeyAndRaw(a.dtype, [&](auto k, auto r) -> absl::Status {
    using K = decltype(k);
    using Raw = decltype(r);
    for (int shift = a.key_bits - 8; shift >= 0; shift -= 8) {
      KPS_RETURN_IF_ERROR((LaunchKernel<&SplitCountKernel<K, Raw>>("SplitCountKernel", grid, kThreads, 0, s, a, shift,
                                                                   state, hist)));
      KPS_RETURN_IF_ERROR(LaunchKernel<&SplitPickKernel>("SplitPickKernel", lines, kThreads, 0, s, shift, state, hist));
    }
    KPS_RETURN_IF_ERROR(
        (LaunchKernel<&SplitTallyKernel<K, Raw>>("SplitTallyKernel", grid, kThreads, 0, s, a, state, tally)));
    KPS_RETURN_IF_ERROR(LaunchKernel<&SplitScanKernel>("SplitScanKernel", lines, kThreads, 0, s, chunks, tally));
    return LaunchKernel<&SplitGatherKernel<K, Raw>>("SplitGatherKernel", grid, kThreads, 0, s, a, state, tally);
  });
}

// out_idx[(o, j, i)] = win_idx[(o, order[(o, j, i)], i)], and the same for the values:
// the winners (in position order) permuted into their sorted order.
__global__ void PermuteWinnersKernel(const int64_t* order, const int64_t* win_idx, const void* win_val, int elem_size,
                                     int64_t k, int64_t inner, int64_t n, int64_t* out_idx, void* out_val) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = e / (k * inner);
    const int64_t i = e % inner;
    const int64_t from = (o * k + order[e]) * inner + i;
    out_idx[e] = win_idx[from];
    CopyElement(out_val, e, win_val, from, elem_size);
  }
}

// The radix paths: winners in position order, straight into the outputs for `sorted` =
// false (and k = 1), otherwise into scratch, then sorted as lines of k (SortLinesCuda:
// stable, so equal keys stay in position order) and permuted into the outputs.
absl::Status TopkByRadix(const Lines& x, int64_t k, bool largest, bool sorted, void* values, int64_t* indices,
                         TopkPath path, const Stream& stream) {
  cudaStream_t s = stream.cuda_stream();
  const int elem_size = static_cast<int>(DataTypeSize(x.dtype));
  const int key_bits = KeyBits(x.dtype);
  const uint64_t flip = largest ? KeyMask<uint64_t>(key_bits) : 0;
  RadixArgs a{x.data, x.dtype, elem_size,   key_bits, x.count(), x.inner, static_cast<int>(x.length),
              static_cast<int>(k), sorted, flip, indices, values};
  if (path == TopkPath::kWarpSort) return LaunchWarpSort(a, s);
  const bool sort_after = sorted && k > 1;
  const int64_t n_out = x.outer * k * x.inner;
  std::shared_ptr<Storage> scratch;
  if (sort_after) {  // winners' indices, their order, their values
    KPS_ASSIGN_OR_RETURN(scratch, Storage::Allocate(static_cast<size_t>(n_out) * (2 * sizeof(int64_t) + elem_size),
                                                    DeviceType::kCuda, stream));
    a.idx_out = static_cast<int64_t*>(scratch->data());
    a.val_out = a.idx_out + 2 * n_out;
  }
  KPS_RETURN_IF_ERROR(path == TopkPath::kRadixSplit ? LaunchRadixSplit(a, stream) : LaunchRadixBlock(a, s));
  if (!sort_after) return absl::OkStatus();
  int64_t* order = a.idx_out + n_out;
  const Lines winners{{x.outer, k, x.inner}, a.val_out, x.dtype};
  KPS_RETURN_IF_ERROR(SortLinesCuda(winners, largest, nullptr, order, stream));
  return LaunchKernel<&PermuteWinnersKernel>("PermuteWinnersKernel", GridStrideBlocks(n_out, 256), 256, 0, s, order,
                                             a.idx_out, a.val_out, elem_size, k, x.inner, n_out, indices, values);
}

}  // namespace

absl::Status TopkLinesCuda(const Lines& x, int64_t k, bool largest, bool sorted, void* values, int64_t* indices,
                           const Stream& stream) {
  if (x.count() == 0 || k == 0) return absl::OkStatus();
  const TopkPath path = ChooseTopkPath(x, k);
  if (path == TopkPath::kSort) return TopkBySort(x, k, largest, sorted, values, indices, stream);
  if (path != TopkPath::kSelect) return TopkByRadix(x, k, largest, sorted, values, indices, path, stream);
  const TopkArgs a{x.data,
                   x.dtype,
                   static_cast<int>(DataTypeSize(x.dtype)),
                   x.inner,
                   static_cast<int>(x.length),
                   static_cast<int>(k),
                   largest,
                   sorted,
                   values,
                   indices};
  return WideKey(x.dtype) ? Select<uint64_t>(a, x.count(), stream.cuda_stream())
                          : Select<uint32_t>(a, x.count(), stream.cuda_stream());
}

}  // namespace sort
}  // namespace kps
