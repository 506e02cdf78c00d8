// The CUDA part of spmm (SpmmOn<kCuda>) and the registration of spmm's kernel on both
// devices.
//
// Work split: merge path (Merrill and Garland, SC'16) over the m row ends and nnz entries,
// as spmv does, but per warp: every warp takes a segment of 32 * X consecutive merge items,
// so a row of a million entries and a million empty rows cost the same per warp (X = 8,
// smaller down to 1 when the matrix would give fewer than kTargetWarps warps). A segment's entries and row ends are
// staged in shared memory with coalesced loads, once per warp.
//
// Lanes go across b's columns: a group of G lanes (G = the power of two covering k / V
// vectors, at most 32) walks a part of the segment together, each lane owning V adjacent
// columns (V = 16 bytes of T when k and the pointers allow it, else 1), so each entry's
// row of b is read as G contiguous vectors. Small k makes several groups per warp (k = 2
// in floats: 16 groups of 2 lanes); k past 32 * V columns takes several column chunks,
// each a warp of its own over the same segment, run side by side. A group issues the
// loads of up to kBatch entries before it folds any, so that several rows of b are in
// flight per lane whatever the row lengths. k = 1 is the same kernel with 32 groups of one
// lane (on the H200 it beat calling spmv's kernel, whose extra eager call costs more).
//
// Determinism without atomics: a group writes every row that starts and ends in its part;
// the rows open at group boundaries are completed by a segmented scan across the warp's
// groups (shuffles, fixed tree). What crosses warps goes through global scratch: each
// segment leaves its open row's partial (its carry), and a segment whose first finished
// row began in an earlier segment leaves that row's partial (its head). SpmmFixupKernel
// then folds, for each head, the carries of the segments the row crosses in a fixed order
// (a row over more than kFoldBlock segments uses SpmmCarryBlockKernel's per-block folds)
// and writes the row. The split depends on m, nnz, k and b's alignment only.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>

#include "ops/sparse/merge_path.cuh"
#include "ops/sparse/spmm_ops.h"
#include "ops/sparse/spmv_ops.h"
#include "primitives/datamover.cuh"
#include "primitives/details/vector_type.cuh"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace sparse {
namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
constexpr int kMaxLaneItems = 8;                     // X: merge items per lane of a warp segment
constexpr int kWarpItems = 32 * kMaxLaneItems;       // the largest warp segment
constexpr int kEndSlots = kWarpItems / 32 + 1;       // row ends staged per lane (a segment has <= 257)
// Warps (segments times column chunks) a launch should have before X grows past 1: two
// waves of 32 resident warps on the H100's 132 SMs, so no SM idles on small matrices.
constexpr int64_t kTargetWarps = 8192;
// Carries folded per SpmmCarryBlockKernel block: a row crossing R segments costs its
// fix-up at most 2 * kFoldBlock + R / kFoldBlock loads per column.
constexpr int64_t kFoldBlock = 128;

// The semiring's operations; plus-times (the common case) without the switch, so that its
// inner loop is fused multiply-adds alone.
template <bool kPlusTimes>
struct Ops {
  template <typename Acc>
  static __device__ __forceinline__ Acc Add(Semiring s, Acc a, Acc b) {
    return SemiringAdd(s, a, b);
  }
  template <typename Acc>
  static __device__ __forceinline__ Acc Mul(Semiring s, Acc a, Acc x) {
    return SemiringMul(s, a, x);
  }
};
template <>
struct Ops<true> {
  template <typename Acc>
  static __device__ __forceinline__ Acc Add(Semiring, Acc a, Acc b) {
    return a + b;
  }
  template <typename Acc>
  static __device__ __forceinline__ Acc Mul(Semiring, Acc a, Acc x) {
    return a * x;
  }
};

// V adjacent elements at p, one vector load when V > 1 (p aligned to V elements).
template <typename T, int V>
__device__ __forceinline__ void LoadRun(T (&dst)[V], const T* p) {
  if constexpr (V == 1) {
    dst[0] = *p;
  } else {
    const auto w = *reinterpret_cast<const details::VectorType<T, V>*>(p);
#pragma unroll
    for (int v = 0; v < V; ++v) dst[v] = w.val[v];
  }
}

template <typename T, int V>
__device__ __forceinline__ void StoreRun(T* p, const T (&src)[V]) {
  if constexpr (V == 1) {
    *p = src[0];
  } else {
    details::VectorType<T, V> w;
#pragma unroll
    for (int v = 0; v < V; ++v) w.val[v] = src[v];
    *reinterpret_cast<details::VectorType<T, V>*>(p) = w;
  }
}

// How the host split the work.
struct SpmmPlan {
  int64_t segments;   // warp segments
  int64_t seg_items;  // merge items per segment: 32 * X
  int lane_items;     // X
  int group_shift;    // G = 1 << group_shift lanes per group
};

// The finished row `row` (global), V columns from `col`, into out.
template <typename T, int V>
__device__ __forceinline__ void WriteRow(const SpmvParams& p, bool need_c, const T* __restrict__ c,
                                         T* __restrict__ out, int64_t k, int64_t row, int64_t col,
                                         const MPType<T> (&acc)[V]) {
  using Acc = MPType<T>;
  T cv[V];
  if (need_c) {
    LoadRun<T, V>(cv, c + row * k + col);
  }
  T res[V];
#pragma unroll
  for (int v = 0; v < V; ++v) res[v] = static_cast<T>(SpmvFinish(p, acc[v], need_c ? static_cast<Acc>(cv[v]) : Acc(0)));
  StoreRun<T, V>(out + row * k + col, res);
}

// One warp segment's work after staging, for one column chunk: each group walks its part
// of the segment, the groups' open rows are combined across the warp, and what crosses the
// segment goes to the scratch.
template <bool kPlusTimes, typename T, typename P, typename I, int V>
__device__ __forceinline__ void SpmmWarpSegment(const P* __restrict__ ptr, const T* __restrict__ b,
                                                const T* __restrict__ c, T* __restrict__ out, int64_t nnz,
                                                int64_t n, int64_t k, const SpmvParams& p, const SpmmPlan& plan,
                                                int64_t seg, int chunk, int64_t x0, int64_t y0, int span, int ents,
                                                const int* s_end, const I* s_col, const T* s_val,
                                                int64_t* __restrict__ head_row, MPType<T>* __restrict__ head_val,
                                                MPType<T>* __restrict__ carry_val) {
  using Acc = MPType<T>;
  using O = Ops<kPlusTimes>;
  // Entries whose b rows one lane has in flight before folding: 64 bytes per lane.
  constexpr int kBatch = 64 / (V * static_cast<int>(sizeof(T))) > 8 ? 8
                         : (64 / (V * static_cast<int>(sizeof(T))) < 2 ? 2 : 64 / (V * static_cast<int>(sizeof(T))));
  const Semiring s = p.semiring;
  const int lane = threadIdx.x & 31;
  const int gs = plan.group_shift;
  const int group_lanes = 1 << gs;
  const int groups = 32 >> gs;
  const int g = lane >> gs, lg = lane & (group_lanes - 1);
  const int64_t col = static_cast<int64_t>(chunk) * (group_lanes * V) + lg * V;
  const bool lane_ok = col < k;
  const bool need_c = p.has_y && (s != Semiring::kPlusTimes || p.beta != 0);
  const int items = span + ents;

  // The group's part of the segment: local diagonals [gd0, gd1), found by binary search
  // over the staged row ends (tile-local entry offsets).
  auto search = [&](int d, int* row, int* ent) {
    int lo = d - ents > 0 ? d - ents : 0;
    int hi = d < span ? d : span;
    while (lo < hi) {
      const int mid = (lo + hi) >> 1;
      if (s_end[mid] <= d - mid - 1) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    *row = lo;
    *ent = d - lo;
  };
  const int per_group = group_lanes * plan.lane_items;
  const int gd0 = g * per_group;
  const int gd1 = gd0 + per_group < items ? gd0 + per_group : items;
  int r_lo = span, e_lo = ents, r_hi = span, e_hi = ents;
  if (gd0 < items) {
    search(gd0, &r_lo, &e_lo);
    if (gd1 < items) search(gd1, &r_hi, &e_hi);
  }

  const Acc zero = SemiringZero<Acc>(s);
  Acc acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = zero;
  int first_row = -1;  // local: the first row finished here, deferred (it may have begun before)
  Acc first_val[V];
#pragma unroll
  for (int v = 0; v < V; ++v) first_val[v] = zero;
  int r = r_lo;
  // The entry offset where row r ends, kept in a register between row ends.
  int next_end = r < r_hi ? s_end[r] : INT_MAX;
  auto finish_row = [&]() {
    if (first_row < 0) {
      first_row = r;
#pragma unroll
      for (int v = 0; v < V; ++v) first_val[v] = acc[v];
    } else if (lane_ok) {
      WriteRow<T, V>(p, need_c, c, out, k, x0 + r, col, acc);
    }
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = zero;
    ++r;
    next_end = r < r_hi ? s_end[r] : INT_MAX;
  };
  for (int e0 = e_lo; e0 < e_hi; e0 += kBatch) {
    // Every load of the batch issues before the first is used.
    T bv[kBatch][V];
    Acc a[kBatch];
    bool ok[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = e0 + u;
      const bool in = e < e_hi;
      const int64_t j = in ? static_cast<int64_t>(s_col[e]) : -1;
      // A column outside [0, n) (unchecked input) adds nothing.
      ok[u] = in && j >= 0 && j < n;
      a[u] = p.has_values && in ? static_cast<Acc>(s_val[e]) : Acc(1);
      if (ok[u] && lane_ok) {
        LoadRun<T, V>(bv[u], b + j * k + col);
      } else {
#pragma unroll
        for (int v = 0; v < V; ++v) bv[u][v] = static_cast<T>(0.0f);
      }
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = e0 + u;
      if (e >= e_hi) break;
      // Rows that end before entry e (row ends come first in the merge order).
      while (e >= next_end) finish_row();
      if (ok[u]) {
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] = O::Add(s, acc[v], O::Mul(s, a[u], static_cast<Acc>(bv[u][v])));
      }
    }
  }
  while (r < r_hi) finish_row();

  // Segmented inclusive scan of the groups' open rows (row r_hi, value acc) over the warp,
  // lane lg of every group together: group g ends up with the combination of groups <= g.
  int c_row = r_hi;
  Acc c_val[V];
#pragma unroll
  for (int v = 0; v < V; ++v) c_val[v] = acc[v];
  for (int o = 1; o < groups; o <<= 1) {
    const int up_row = __shfl_up_sync(0xffffffffu, c_row, o << gs);
    Acc up_val[V];
#pragma unroll
    for (int v = 0; v < V; ++v) up_val[v] = __shfl_up_sync(0xffffffffu, c_val[v], o << gs);
    if (g >= o && up_row == c_row) {
#pragma unroll
      for (int v = 0; v < V; ++v) c_val[v] = O::Add(s, up_val[v], c_val[v]);
    }
  }
  // The exclusive prefix of group g: group g - 1's inclusive value.
  int prev_row = -1;
  Acc prev_val[V];
  if (groups > 1) {
    prev_row = __shfl_up_sync(0xffffffffu, c_row, group_lanes);
#pragma unroll
    for (int v = 0; v < V; ++v) prev_val[v] = __shfl_up_sync(0xffffffffu, c_val[v], group_lanes);
  }
  bool is_head = false;
  if (first_row >= 0) {
    if (g > 0 && prev_row == first_row) {
#pragma unroll
      for (int v = 0; v < V; ++v) first_val[v] = O::Add(s, prev_val[v], first_val[v]);
    }
    // The segment's first row, with entries before the segment: its earlier parts are
    // other segments' carries, folded by the fix-up.
    is_head = first_row == 0 && seg > 0 && y0 > (x0 > 0 ? RowEnd(ptr, x0 - 1, nnz) : 0);
    if (is_head) {
      if (lane_ok) {
#pragma unroll
        for (int v = 0; v < V; ++v) head_val[seg * k + col + v] = first_val[v];
      }
    } else if (lane_ok) {
      WriteRow<T, V>(p, need_c, c, out, k, x0 + first_row, col, first_val);
    }
  }
  const unsigned heads = __ballot_sync(0xffffffffu, is_head);
  if (chunk == 0 && lane == 0) head_row[seg] = heads != 0 ? x0 : -1;
  // The segment's carry (its open row, x0 + span): the last group's inclusive value.
  if (g == groups - 1 && lane_ok) {
#pragma unroll
    for (int v = 0; v < V; ++v) carry_val[seg * k + col + v] = c_val[v];
  }
}

// Blocks per SM the kernel is compiled for. Floats: 4 (64 registers, 32 warps resident);
// the float kernel with 16-byte vectors left at 80 registers (3 blocks) ran 3-5% slower
// at k = 32 and 64 on the H200 than an earlier build of it at 64 (at 64 it spills about 20
// bytes, outside the entry loop). Doubles: 3 (85 registers; at 64 they spill 100 bytes).
// 16-bit vectors (8 values a lane, summed in float): 2.
template <typename T, int V>
constexpr int MinBlocks() {
  return sizeof(T) == 2 && V > 1 ? 2 : (sizeof(T) == 8 ? 3 : 4);
}

// A warp per (segment, column chunk): stages the segment, then SpmmWarpSegment. Blocks
// take the column chunks of 8 segments in turn (block b: segments 8 * (b / chunks) on,
// chunk b % chunks), so that the chunks of a segment run together and read its entries
// from L2 once. Shared memory (dynamic, sized on the host to 32 * X items): per warp, the
// segment's entry columns, values and row ends.
template <typename T, typename P, typename I, int V>
__global__ void __launch_bounds__(kBlock, MinBlocks<T, V>())
    SpmmWarpKernel(const P* __restrict__ ptr, const I* __restrict__ idx, const T* __restrict__ val,
                   const T* __restrict__ b, const T* __restrict__ c, T* __restrict__ out, int64_t m, int64_t nnz,
                   int64_t n, int64_t k, unsigned chunks, SpmvParams p, SpmmPlan plan,
                   const int64_t* __restrict__ seg_row,
                   int64_t* __restrict__ head_row, MPType<T>* __restrict__ head_val,
                   MPType<T>* __restrict__ carry_val) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int seg_cap = static_cast<int>(plan.seg_items);
  I* my_col = reinterpret_cast<I*>(smem) + warp * seg_cap;
  T* my_val = reinterpret_cast<T*>(smem + kWarps * seg_cap * sizeof(I)) + warp * seg_cap;
  // Tile-local row ends: entry offsets from the segment's first entry.
  int* my_end = reinterpret_cast<int*>(smem + kWarps * seg_cap * (sizeof(I) + sizeof(T))) + warp * (seg_cap + 1);
  const int chunk = static_cast<int>(blockIdx.x % chunks);  // 32-bit division: a grid fits 2^31 blocks
  const int64_t seg = static_cast<int64_t>(blockIdx.x / chunks) * kWarps + warp;
  if (seg >= plan.segments) return;  // whole warps; nothing below synchronizes the block
  const int64_t total = m + nnz;
  const int64_t d0 = seg * plan.seg_items;
  const int64_t d1 = d0 + plan.seg_items < total ? d0 + plan.seg_items : total;
  const int64_t x0 = seg_row[seg], x1 = seg_row[seg + 1];
  const int64_t y0 = d0 - x0, y1 = d1 - x1;
  // Segment-local coordinates fit in 32 bits. Clamped, a malformed indptr (unchecked) still
  // keeps every index below inside the segment's rows and entries.
  const int64_t ents64 = y1 - y0, span64 = x1 - x0;
  const int ents = static_cast<int>(ents64 < 0 ? 0 : (ents64 > plan.seg_items ? plan.seg_items : ents64));
  const int span = static_cast<int>(span64 < 0 ? 0 : (span64 > plan.seg_items ? plan.seg_items : span64));
  // Row ends staged: rows x0 .. x0 + span, those below m.
  const int rows = x0 >= m ? 0 : (span < m - 1 - x0 ? span : static_cast<int>(m - 1 - x0)) + 1;

  int64_t ends[kEndSlots];
  ReadDataStriped<P, int64_t, kEndSlots>(ends, ptr + x0 + 1, lane, 32, rows, int64_t{0});
#pragma unroll
  for (int j = 0; j < kEndSlots; ++j) {
    const int i = lane + 32 * j;
    // Clamped to [0, ents + 1]: a row ending past the segment never ends here.
    const int64_t e = ends[j] - y0;
    if (i < rows) my_end[i] = static_cast<int>(e < 0 ? 0 : (e > ents ? ents + 1 : e));
  }
  // The entries are read once: streaming loads (no L1 allocation) leave L1 to b's rows,
  // which nearby entries share.
  {
    I cols[kMaxLaneItems];
#pragma unroll
    for (int j = 0; j < kMaxLaneItems; ++j) {
      if (lane + 32 * j < ents) cols[j] = LoadStreaming(idx + y0 + lane + 32 * j);
    }
#pragma unroll
    for (int j = 0; j < kMaxLaneItems; ++j) {
      if (lane + 32 * j < ents) my_col[lane + 32 * j] = cols[j];
    }
  }
  if (p.has_values) {
    T vals[kMaxLaneItems];
#pragma unroll
    for (int j = 0; j < kMaxLaneItems; ++j) {
      if (lane + 32 * j < ents) vals[j] = LoadStreaming(val + y0 + lane + 32 * j);
    }
#pragma unroll
    for (int j = 0; j < kMaxLaneItems; ++j) {
      if (lane + 32 * j < ents) my_val[lane + 32 * j] = vals[j];
    }
  }
  __syncwarp();
  if (p.semiring == Semiring::kPlusTimes) {
    SpmmWarpSegment<true, T, P, I, V>(ptr, b, c, out, nnz, n, k, p, plan, seg, chunk, x0, y0, span, ents, my_end,
                                      my_col, my_val, head_row, head_val, carry_val);
  } else {
    SpmmWarpSegment<false, T, P, I, V>(ptr, b, c, out, nnz, n, k, p, plan, seg, chunk, x0, y0, span, ents, my_end,
                                       my_col, my_val, head_row, head_val, carry_val);
  }
}

// The merge path's row coordinate at every segment boundary (segments + 1 of them).
template <typename P>
__global__ void __launch_bounds__(256)
    SpmmSegmentSearchKernel(const P* __restrict__ ptr, int64_t m, int64_t nnz, int64_t segments, int64_t seg_items,
                            int64_t* __restrict__ seg_row) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (t > segments) return;
  const int64_t d = t * seg_items < m + nnz ? t * seg_items : m + nnz;
  seg_row[t] = MergePathRow(ptr, m, nnz, d);
}

// For each block of kFoldBlock consecutive segments, per column: the fold (in segment
// order) of the carries of its last row that lie in the block. The fix-up uses the blocks
// whose carries are all of its row, so a row across many segments is folded in
// R / kFoldBlock steps.
template <typename Acc>
__global__ void __launch_bounds__(256)
    SpmmCarryBlockKernel(const int64_t* __restrict__ seg_row, const Acc* __restrict__ carry_val,
                         Acc* __restrict__ block_val, int64_t segments, int64_t k, Semiring s) {
  const int64_t q = blockIdx.x;
  const int64_t col = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (col >= k) return;
  const int64_t j0 = q * kFoldBlock;
  const int64_t j1 = j0 + kFoldBlock < segments ? j0 + kFoldBlock : segments;
  // Segment j's carry is row seg_row[j + 1]; carry rows never decrease.
  const int64_t last = seg_row[j1];
  int64_t lo = j0, hi = j1 - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi) >> 1;
    if (seg_row[mid + 1] < last) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  Acc v = SemiringZero<Acc>(s);
  for (int64_t j = lo; j < j1; ++j) v = SemiringAdd(s, v, carry_val[j * k + col]);
  block_val[q * k + col] = v;
}

// A warp per segment with a head (a row that began in earlier segments and ends in this
// one): the carries of the segments before it that end inside the row (found from the
// back: carry rows never decrease), whole kFoldBlock blocks as SpmmCarryBlockKernel folded
// them, then the head; written finished. Lanes take 2^kc_shift columns at a time and
// split the terms between the rest, combined by a fixed shuffle tree.
template <typename T>
__global__ void __launch_bounds__(256)
    SpmmFixupKernel(const int64_t* __restrict__ seg_row, const int64_t* __restrict__ head_row,
                    const MPType<T>* __restrict__ head_val, const MPType<T>* __restrict__ carry_val,
                    const MPType<T>* __restrict__ block_val, const T* __restrict__ c, T* __restrict__ out,
                    int64_t segments, int64_t k, SpmvParams p, int kc_shift) {
  using Acc = MPType<T>;
  const int64_t seg = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (seg >= segments) return;
  const int64_t r = head_row[seg];
  if (r < 0) return;
  const Semiring s = p.semiring;
  // lo: the first segment before seg whose carry is row r. Most rows cross one or a few
  // segments: the warp looks at the 32 nearest first.
  const int64_t probe = seg - 1 - lane;  // segment `probe`'s carry row is seg_row[probe + 1]
  const bool before = probe < 0 || seg_row[probe + 1] < r;
  const unsigned found = __ballot_sync(0xffffffffu, before);
  int64_t lo;
  if (found != 0) {
    lo = seg - (__ffs(found) - 1);
  } else {
    int64_t l = 0, h = seg - 32;
    while (l < h) {
      const int64_t mid = (l + h) >> 1;
      if (seg_row[mid + 1] < r) {
        l = mid + 1;
      } else {
        h = mid;
      }
    }
    lo = l;
  }
  // The terms, in order: carries [lo, a), block folds [a / F, e / F), carries [e, seg).
  int64_t a = (lo + kFoldBlock - 1) / kFoldBlock * kFoldBlock, e = seg / kFoldBlock * kFoldBlock;
  if (a >= e) a = e = seg;
  const int64_t n_head = a - lo, n_blocks = (e - a) / kFoldBlock, terms = n_head + n_blocks + (seg - e);
  const int kc = 1 << kc_shift, parts = 32 >> kc_shift;
  const int part = lane >> kc_shift;
  const int64_t t0 = terms * part / parts, t1 = terms * (part + 1) / parts;
  const bool need_c = p.has_y && (s != Semiring::kPlusTimes || p.beta != 0);
  for (int64_t col0 = 0; col0 < k; col0 += kc) {
    const int64_t col = col0 + (lane & (kc - 1));
    const bool ok = col < k;
    Acc v = SemiringZero<Acc>(s);
    if (ok) {
      for (int64_t t = t0; t < t1; ++t) {
        const Acc* src = t < n_head ? carry_val + (lo + t) * k
                         : t < n_head + n_blocks ? block_val + (a / kFoldBlock + t - n_head) * k
                                                 : carry_val + (e + t - n_head - n_blocks) * k;
        v = SemiringAdd(s, v, src[col]);
      }
    }
    for (int o = parts >> 1; o > 0; o >>= 1) {
      const Acc w = __shfl_down_sync(0xffffffffu, v, o << kc_shift);
      if (part < o) v = SemiringAdd(s, v, w);
    }
    if (part == 0 && ok) {
      v = SemiringAdd(s, v, head_val[seg * k + col]);
      const Acc cv = need_c ? static_cast<Acc>(c[r * k + col]) : Acc(0);
      out[r * k + col] = static_cast<T>(SpmvFinish(p, v, cv));
    }
  }
}

int CeilLog2(int64_t v) {
  int s = 0;
  while ((int64_t{1} << s) < v) ++s;
  return s;
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

template <>
struct SpmmOn<DeviceType::kCuda> {
  template <typename T, typename P, typename I>
  static absl::Status Run(const KernelContext& ctx, const SpmvParams& p, const Tensor& indptr, const Tensor& indices,
                          const Tensor* values, const Tensor& b, const Tensor* c) {
    using Acc = MPType<T>;
    const int64_t m = indptr.numel() - 1, nnz = indices.numel(), n = b.shape()[0], k = b.shape()[1];
    const Stream& stream = ctx.stream();
    const cudaStream_t cs = ctx.cuda_stream();
    const P* ptr = indptr.data<P>();
    const I* idx = indices.data<I>();
    if (m == 0 || k == 0) return absl::OkStatus();

    const T* bp = b.data<T>();
    const T* cp = c != nullptr ? c->data<T>() : nullptr;
    T* out = ctx.output(0).data<T>();
    // 16-byte vectors of b's rows where every row starts aligned (k a multiple of the
    // vector) and out and c are aligned alike; single elements otherwise.
    constexpr int kVec = details::MaxVectorSize<T>();
    const bool vec = k % kVec == 0 && Aligned16(bp) && Aligned16(out) && (cp == nullptr || Aligned16(cp));
    const int v_width = vec ? kVec : 1;
    const int64_t runs = (k + v_width - 1) / v_width;  // vectors per row of b
    const int group_shift = CeilLog2(std::min<int64_t>(runs, 32));
    const int64_t chunk_cols = (int64_t{1} << group_shift) * v_width;
    const int64_t chunks = (k + chunk_cols - 1) / chunk_cols;
    const int64_t total = m + nnz;
    // X: 8 items per lane, fewer (down to 1) when the matrix would give fewer than
    // kTargetWarps warps. Wide chunks gain nothing from shorter segments: at k = 128 floats,
    // H200, X = 8 against 4 was 3-10% faster on 5 of 6 classes (random rows, power law, 95%
    // empty, one long row, tall) and 7% slower on a 5-point stencil; X = 2 slower on all.
    const int64_t lane_items = std::clamp<int64_t>(total * chunks / (32 * kTargetWarps), 1, kMaxLaneItems);
    SpmmPlan plan;
    plan.lane_items = static_cast<int>(lane_items);
    plan.seg_items = 32 * lane_items;
    plan.segments = (total + plan.seg_items - 1) / plan.seg_items;
    plan.group_shift = group_shift;
    const int64_t segments = plan.segments;
    const int64_t seg_blocks = (segments + kWarps - 1) / kWarps;
    if (seg_blocks * chunks > (int64_t{1} << 31) - 1) {
      return ctx.Error("the matrix has ", m, " rows and ", nnz, " entries and b ", k,
                       " columns; spmm's CUDA kernel takes fewer than 2^31 blocks of ", kWarps * plan.seg_items,
                       " items (rows plus entries) by ", chunk_cols, " columns");
    }
    const int64_t fold_blocks = segments >= kFoldBlock ? (segments + kFoldBlock - 1) / kFoldBlock : 0;
    const size_t index_bytes = static_cast<size_t>(2 * segments + 1) * sizeof(int64_t);
    const size_t value_count = static_cast<size_t>((2 * segments + fold_blocks) * k);
    KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> scratch,
                         Storage::Allocate(index_bytes + value_count * sizeof(Acc), DeviceType::kCuda, stream));
    auto* seg_row = static_cast<int64_t*>(scratch->data());
    int64_t* head_row = seg_row + segments + 1;
    auto* carry_val = reinterpret_cast<Acc*>(head_row + segments);
    Acc* head_val = carry_val + segments * k;
    Acc* block_val = head_val + segments * k;
    const T* val = values != nullptr ? values->data<T>() : nullptr;

    KPS_RETURN_IF_ERROR((LaunchKernel<&SpmmSegmentSearchKernel<P>>(
        "SpmmSegmentSearchKernel", static_cast<unsigned>((segments + 1 + 255) / 256), 256, 0, cs, ptr, m, nnz,
        segments, plan.seg_items, seg_row)));
    const unsigned grid = static_cast<unsigned>(seg_blocks * chunks);
    const unsigned unsigned_chunks = static_cast<unsigned>(chunks);
    const size_t smem = static_cast<size_t>(kWarps) *
                        (plan.seg_items * (sizeof(I) + sizeof(T)) + (plan.seg_items + 1) * sizeof(int));
    if (vec) {
      KPS_RETURN_IF_ERROR((LaunchKernel<&SpmmWarpKernel<T, P, I, kVec>>(
          "SpmmWarpKernel", grid, kBlock, smem, cs, ptr, idx, val, bp, cp, out, m, nnz, n, k, unsigned_chunks, p, plan,
          seg_row, head_row, head_val, carry_val)));
    } else {
      KPS_RETURN_IF_ERROR((LaunchKernel<&SpmmWarpKernel<T, P, I, 1>>(
          "SpmmWarpKernel", grid, kBlock, smem, cs, ptr, idx, val, bp, cp, out, m, nnz, n, k, unsigned_chunks, p, plan,
          seg_row, head_row, head_val, carry_val)));
    }
    if (segments > 1) {
      if (fold_blocks > 0) {
        const int threads = static_cast<int>(std::min<int64_t>(256, (k + 31) / 32 * 32));
        const dim3 fold_grid(static_cast<unsigned>(fold_blocks), static_cast<unsigned>((k + threads - 1) / threads));
        KPS_RETURN_IF_ERROR((LaunchKernel<&SpmmCarryBlockKernel<Acc>>("SpmmCarryBlockKernel", fold_grid, threads, 0,
                                                                       cs, seg_row, carry_val, block_val, segments, k,
                                                                       p.semiring)));
      }
      const int kc_shift = CeilLog2(std::min<int64_t>(k, 32));
      KPS_RETURN_IF_ERROR((LaunchKernel<&SpmmFixupKernel<T>>(
          "SpmmFixupKernel", static_cast<unsigned>((segments + kWarps - 1) / kWarps), 256, 0, cs, seg_row, head_row,
          head_val, carry_val, block_val, cp, out, segments, k, p, kc_shift)));
    }
    return absl::OkStatus();
  }
};

KPS_REGISTER_DEVICE_KERNELS("spmm", SpmmKernel, KPS_SPMM_CPP_TYPES);

}  // namespace sparse
}  // namespace kps
