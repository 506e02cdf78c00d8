// The CUDA part of spmv (SpmvOn<kCuda>) and the registration of spmv's kernel on both
// devices.
//
// Merge-path split (Merrill and Garland, "Merge-based parallel sparse matrix-vector
// multiplication", SC'16): the m row ends and the nnz entries form one sorted merge of
// m + nnz items, and every thread takes kItems consecutive items, so a row of a million
// entries and a million empty rows cost the same per thread. SpmvTileSearchKernel finds
// where each tile of kBlock * kItems items starts by binary search over indptr; a block
// stages its tile's row ends and its entries' products (coalesced loads, x gathered in
// entry order) in shared memory, and each thread finds its own start there.
//
// Determinism without atomics: a thread writes every row that starts and ends in its
// items. The row open at a thread's end (its carry) continues into the next threads; a
// segmented scan of the carries across the block (fixed tree) completes the rows that end
// in the tile, and a row that started in an earlier tile leaves its tile-local part as
// the tile's tail. SpmvFixupKernel then folds, for each such row, the carries of the
// tiles it crosses (a warp per row, fixed order) and writes it. The split depends on m
// and nnz only.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "ops/sparse/merge_path.cuh"
#include "ops/sparse/spmv_ops.h"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"
#include "registry/tuning.h"

namespace kps {
namespace sparse {
namespace {

// A launch shape of the tile kernel: threads per block, merge items per thread, and the
// blocks per SM its registers must leave room for. 256 x 7 (40 registers, 6 blocks per SM)
// against 256 x 7 at 4 per SM, 256 x 11, 128 x 15 and 256 x 5 (H200, f32): none faster on
// more than three of seven classes, each by at most 8%.
template <int kBlockT, int kItemsT, int kMinBlocksT>
struct TileShape {
  static constexpr int kBlock = kBlockT, kItems = kItemsT, kTile = kBlockT * kItemsT, kWarps = kBlockT / 32;
  static constexpr int kMinBlocks = kMinBlocksT;
};
using DefaultShape = TileShape<256, 7, 1>;

// A row's partial value; the scan's pair combines two partials of one row.
template <typename Acc>
struct Carry {
  int64_t row;
  Acc val;
};

template <typename Acc>
__device__ __forceinline__ Carry<Acc> Combine(Semiring s, const Carry<Acc>& left, const Carry<Acc>& right) {
  return {right.row, left.row == right.row ? SemiringAdd(s, left.val, right.val) : right.val};
}

template <typename S, typename T, typename P, typename I>
__global__ void __launch_bounds__(S::kBlock, S::kMinBlocks)
    SpmvTileKernel(const P* __restrict__ ptr, const I* __restrict__ idx, const T* __restrict__ val,
                   const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, int64_t m, int64_t nnz,
                   int64_t n, SpmvParams p, int row_max, const int64_t* __restrict__ tile_row,
                   int64_t* __restrict__ tile_carry_row, MPType<T>* __restrict__ tile_carry_val,
                   int64_t* __restrict__ tile_tail_row, MPType<T>* __restrict__ tile_tail_val) {
  using Acc = MPType<T>;
  constexpr int kBlock = S::kBlock, kItems = S::kItems, kTile = S::kTile, kWarps = S::kWarps;
  __shared__ int row_ends[kTile + 1];  // tile-local: entry offsets from the tile's first entry
  __shared__ Acc products[kTile];
  __shared__ Carry<Acc> warp_total[kWarps];
  const Semiring s = p.semiring;
  const int64_t total = m + nnz;
  const int64_t tile = blockIdx.x;
  const int64_t d0 = tile * kTile;
  const int64_t d1 = d0 + kTile < total ? d0 + kTile : total;
  const int64_t x0 = tile_row[tile], x1 = tile_row[tile + 1];
  const int64_t y0 = d0 - x0, y1 = d1 - x1;
  // Tile-local coordinates fit in 32 bits: at most kTile rows and kTile entries.
  const int ents = static_cast<int>(y1 - y0);
  const int span = static_cast<int>(x1 - x0);
  const int rows = static_cast<int>((x1 < m ? x1 : m - 1) - x0 + 1);  // row ends staged (rows < m only)
  // The tile's row ends (clamped to [0, ents + 1]: a row ending past the tile never ends
  // here) and its entries' products, loaded coalesced with every load issued before use.
#pragma unroll
  for (int j = 0; j <= kItems; ++j) {
    const int i = threadIdx.x + j * kBlock;
    if (i < rows) {
      const int64_t e = RowEnd(ptr, x0 + i, nnz) - y0;
      row_ends[i] = static_cast<int>(e < 0 ? 0 : (e > ents ? ents + 1 : e));
    }
  }
  I col[kItems];
  Acc a[kItems];
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int i = threadIdx.x + j * kBlock;
    const int64_t k = y0 + i;
    col[j] = i < ents && k < nnz ? idx[k] : I(-1);
    a[j] = p.has_values && i < ents && k < nnz ? static_cast<Acc>(val[k]) : Acc(1);
  }
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    const int i = threadIdx.x + j * kBlock;
    // A column outside [0, n) (unchecked input) adds nothing.
    const Acc prod = col[j] >= 0 && static_cast<int64_t>(col[j]) < n
                         ? SemiringMul(s, a[j], static_cast<Acc>(x[col[j]]))
                         : SemiringZero<Acc>(s);
    if (i < ents) products[i] = prod;
  }
  __syncthreads();
  const Acc zero = SemiringZero<Acc>(s);

  // A tile inside one row (no row ends here): its sum, by a fixed-order block reduction, is
  // the tile's carry.
  if (span == 0) {
    Acc v = zero;
    for (int i = threadIdx.x; i < ents; i += kBlock) v = SemiringAdd(s, v, products[i]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = SemiringAdd(s, v, __shfl_down_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) warp_total[threadIdx.x >> 5].val = v;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kWarps; ++w) v = SemiringAdd(s, v, warp_total[w].val);
      tile_carry_row[tile] = x0;
      tile_carry_val[tile] = v;
    }
    return;
  }

  // Row mode: where no row has more than row_max entries in the tile, a thread per row
  // sums the row's staged products in order; no per-thread search, no scan. Local row i
  // (< span) ends in the tile; row span is the open row carried into the next tile.
  bool long_row = false;
  for (int i = threadIdx.x; i <= span && i < rows; i += kBlock) {
    const int e = i < span ? min(row_ends[i], ents) : ents, b = i == 0 ? 0 : row_ends[i - 1];
    long_row |= e - b > row_max;
  }
  if (!__syncthreads_or(long_row)) {
    for (int i = threadIdx.x; i <= span; i += kBlock) {
      const int64_t row = x0 + i;
      if (row >= m) {  // the last tile: no open row
        tile_carry_row[tile] = row;
        tile_carry_val[tile] = zero;
        break;
      }
      const int e = i < span ? min(row_ends[i], ents) : ents, b = i == 0 ? 0 : row_ends[i - 1];
      Acc v = zero;
      for (int k = b; k < e; ++k) v = SemiringAdd(s, v, products[k]);
      if (i == span) {
        tile_carry_row[tile] = row;
        tile_carry_val[tile] = v;
      } else if (i == 0 && tile > 0 && y0 > (x0 > 0 ? RowEnd(ptr, x0 - 1, nnz) : 0)) {
        tile_tail_row[tile] = row;  // began in an earlier tile
        tile_tail_val[tile] = v;
      } else {
        out[row] = static_cast<T>(SpmvFinish(p, v, p.has_y ? static_cast<Acc>(y[row]) : Acc(0)));
      }
    }
    return;
  }

  // This thread's start, by the same search over the staged row ends.
  const int ld = static_cast<int>(threadIdx.x) * kItems;  // local diagonal
  const int items = static_cast<int>(d1 - d0);
  int lrow = span, lent = ents;
  if (ld < items) {
    int lo = ld - ents > 0 ? ld - ents : 0;
    int hi = ld < span ? ld : span;
    while (lo < hi) {
      const int mid = (lo + hi) >> 1;
      if (row_ends[mid] <= ld - mid - 1) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    lrow = lo;
    lent = ld - lo;
  }
  Acc acc = zero;
  int64_t first_row = -1;
  Acc first_val = zero;
  const int end = ld + kItems < items ? ld + kItems : items;
  for (int d = ld; d < end; ++d) {
    if (lrow < rows && lent >= row_ends[lrow]) {
      // Row x0 + lrow ends here.
      const int64_t row = x0 + lrow;
      if (first_row < 0) {
        first_row = row;  // may have begun in earlier threads: completed after the scan
        first_val = acc;
      } else {
        out[row] = static_cast<T>(SpmvFinish(p, acc, p.has_y ? static_cast<Acc>(y[row]) : Acc(0)));
      }
      acc = zero;
      ++lrow;
    } else if (lent < ents) {
      acc = SemiringAdd(s, acc, products[lent]);
      ++lent;
    } else {
      break;  // unchecked malformed input: no entries left
    }
  }
  const int64_t row = x0 + lrow;

  // Segmented inclusive scan of the carries (row open at each thread's end) over the block.
  Carry<Acc> c{row, acc};
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    Carry<Acc> up;
    up.row = __shfl_up_sync(0xffffffffu, c.row, o);
    up.val = __shfl_up_sync(0xffffffffu, c.val, o);
    if (lane >= o) c = Combine(s, up, c);
  }
  if (lane == 31) warp_total[warp] = c;
  __syncthreads();
  // The exclusive prefix of this thread: the previous lane's inclusive value, after the
  // earlier warps' totals.
  Carry<Acc> warps{-2, zero};  // the earlier warps' totals
  for (int w = 0; w < warp; ++w) warps = w > 0 ? Combine(s, warps, warp_total[w]) : warp_total[w];
  Carry<Acc> prev;
  prev.row = __shfl_up_sync(0xffffffffu, c.row, 1);
  prev.val = __shfl_up_sync(0xffffffffu, c.val, 1);
  Carry<Acc> before = warps;
  bool has_before = warp > 0;
  if (lane > 0) {
    before = has_before ? Combine(s, warps, prev) : prev;
    has_before = true;
  }
  // c already holds this warp's lanes up to this one.
  const Carry<Acc> inclusive = warp > 0 ? Combine(s, warps, c) : c;

  if (first_row >= 0) {
    Acc v = first_val;
    if (has_before && before.row == first_row) v = SemiringAdd(s, before.val, first_val);
    // A row that began in an earlier tile: entries of it precede the tile's first entry.
    const bool crosses = first_row == x0 && tile > 0 && y0 > (x0 > 0 ? RowEnd(ptr, x0 - 1, nnz) : 0);
    if (crosses) {
      tile_tail_row[tile] = first_row;
      tile_tail_val[tile] = v;
    } else {
      out[first_row] = static_cast<T>(SpmvFinish(p, v, p.has_y ? static_cast<Acc>(y[first_row]) : Acc(0)));
    }
  }
  if (threadIdx.x == kBlock - 1) {
    tile_carry_row[tile] = inclusive.row;
    tile_carry_val[tile] = inclusive.val;
  }
}

// The merge path's row coordinate at every tile boundary (tiles + 1 of them), so that a
// tile starts without a binary search over indptr of its own.
template <typename P>
__global__ void __launch_bounds__(256) SpmvTileSearchKernel(const P* __restrict__ ptr, int64_t m, int64_t nnz,
                                                            int64_t tiles, int tile_items, int64_t* __restrict__ row) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (t > tiles) return;
  const int64_t d = t * tile_items < m + nnz ? t * tile_items : m + nnz;
  row[t] = MergePathRow(ptr, m, nnz, d);
}

// For each tile with a tail (a row that began in earlier tiles and ends here), a warp:
// the row's value is the carries of the tiles before it that end inside the row (found
// by binary search: carry rows never decrease), in a fixed lane-strided order and
// shuffle tree, then the tail.
template <typename T>
__global__ void __launch_bounds__(256)
    SpmvFixupKernel(const int64_t* __restrict__ carry_row, const MPType<T>* __restrict__ carry_val,
                    const int64_t* __restrict__ tail_row, const MPType<T>* __restrict__ tail_val,
                    const T* __restrict__ y, T* __restrict__ out, int64_t tiles, SpmvParams p) {
  using Acc = MPType<T>;
  const int64_t t = (static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (t >= tiles) return;
  const int64_t r = tail_row[t];
  if (r < 0) return;
  int64_t lo = 0, hi = t;  // the first tile before t whose carry is row r
  while (lo < hi) {
    const int64_t mid = (lo + hi) >> 1;
    if (carry_row[mid] < r) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  // Eight partial sums per lane, so that eight loads are in flight (a row of 50M entries
  // crosses 28K tiles); folded in a fixed order.
  const Acc zero = SemiringZero<Acc>(p.semiring);
  Acc part[8];
#pragma unroll
  for (int q = 0; q < 8; ++q) part[q] = zero;
  int64_t j = lo + lane;
  for (; j + 7 * 32 < t; j += 8 * 32) {
#pragma unroll
    for (int q = 0; q < 8; ++q) part[q] = SemiringAdd(p.semiring, part[q], carry_val[j + q * 32]);
  }
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    if (j + q * 32 < t) part[q] = SemiringAdd(p.semiring, part[q], carry_val[j + q * 32]);
  }
  Acc v = part[0];
#pragma unroll
  for (int q = 1; q < 8; ++q) v = SemiringAdd(p.semiring, v, part[q]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = SemiringAdd(p.semiring, v, __shfl_down_sync(0xffffffffu, v, o));
  if (lane == 0) {
    v = SemiringAdd(p.semiring, v, tail_val[t]);
    out[r] = static_cast<T>(SpmvFinish(p, v, p.has_y ? static_cast<Acc>(y[r]) : Acc(0)));
  }
}

}  // namespace

template <>
struct SpmvOn<DeviceType::kCuda> {
  template <typename T, typename P, typename I>
  static absl::Status Run(const KernelContext& ctx, const SpmvParams& p, const Tensor& indptr, const Tensor& indices,
                          const Tensor* values, const Tensor& x, const Tensor* y) {
    const int64_t m = indptr.numel() - 1, nnz = indices.numel(), n = x.numel();
    const P* ptr = indptr.data<P>();
    const I* idx = indices.data<I>();
    if (m == 0) return absl::OkStatus();
    // Rows of at most this many entries in a tile take a thread each (KPS_TUNE spmv.row_max; 0: merge walk only).
    static const int row_max = static_cast<int>(std::min<int64_t>(TuneInt("spmv.row_max", 32), 1 << 20));
    return Launch<DefaultShape, T, P, I>(ctx, p, row_max, ptr, idx, values, x, y, m, nnz, n);
  }

 private:
  template <typename S, typename T, typename P, typename I>
  static absl::Status Launch(const KernelContext& ctx, const SpmvParams& p, int row_max, const P* ptr, const I* idx,
                             const Tensor* values, const Tensor& x, const Tensor* y, int64_t m, int64_t nnz,
                             int64_t n) {
    using Acc = MPType<T>;
    constexpr int kTile = S::kTile;
    const Stream& stream = ctx.stream();
    const cudaStream_t cs = ctx.cuda_stream();
    const int64_t tiles = (m + nnz + kTile - 1) / kTile;
    if (tiles > (int64_t{1} << 31) - 1) {
      return ctx.Error("the matrix has ", m, " rows and ", nnz, " entries; spmv's CUDA kernel takes fewer than 2^31 * ",
                       kTile, " in all");
    }
    KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> scratch,
                         Storage::Allocate(static_cast<size_t>(tiles) * 2 * (sizeof(int64_t) + sizeof(Acc)) +
                                               static_cast<size_t>(tiles + 1) * sizeof(int64_t),
                                           DeviceType::kCuda, stream));
    auto* carry_row = static_cast<int64_t*>(scratch->data());
    int64_t* tail_row = carry_row + tiles;
    int64_t* tile_row = tail_row + tiles;
    auto* carry_val = reinterpret_cast<Acc*>(tile_row + tiles + 1);
    Acc* tail_val = carry_val + tiles;
    const T* val = values != nullptr ? values->data<T>() : nullptr;
    const T* yv = y != nullptr ? y->data<T>() : nullptr;
    T* out = ctx.output(0).data<T>();
    // No tile has a tail until its kernel says so (all ones: row -1).
    KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(tail_row, 0xff, static_cast<size_t>(tiles) * sizeof(int64_t), cs),
                             "cudaMemsetAsync (spmv's tails)");
    KPS_RETURN_IF_ERROR((LaunchKernel<&SpmvTileSearchKernel<P>>("SpmvTileSearchKernel",
                                                                 static_cast<unsigned>((tiles + 1 + 255) / 256), 256,
                                                                 0, cs, ptr, m, nnz, tiles, kTile, tile_row)));
    KPS_RETURN_IF_ERROR((LaunchKernel<&SpmvTileKernel<S, T, P, I>>(
        "SpmvTileKernel", static_cast<unsigned>(tiles), S::kBlock, 0, cs, ptr, idx, val, x.data<T>(), yv, out, m, nnz,
        n, p, row_max, tile_row, carry_row, carry_val, tail_row, tail_val)));
    if (tiles > 1) {
      KPS_RETURN_IF_ERROR((LaunchKernel<&SpmvFixupKernel<T>>(
          "SpmvFixupKernel", static_cast<unsigned>((tiles + 7) / 8), 256, 0, cs, carry_row, carry_val, tail_row,
          tail_val, yv, out, tiles, p)));
    }
    return absl::OkStatus();
  }
};

KPS_REGISTER_DEVICE_KERNELS("spmv", SpmvKernel, KPS_SPMV_CPP_TYPES);

}  // namespace sparse
}  // namespace kps
