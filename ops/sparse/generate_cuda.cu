// The CUDA parts of the sparse generators (RmatOn, StencilOn, BandedOn for kCuda) and the
// registration of their kernels on both devices. Each thread computes its own edges, rows
// or entries from the closed forms in generate_ops.h, so a launch needs no scan, no
// atomics and no synchronization, and any grid gives the same bits.
//
// rmat is bound by arithmetic, not by its stores: ceil(scale / 8) Philox calls per edge (4
// at scale 26) and the level decisions. A thread makes kEdgesPerThread consecutive edges,
// whose independent Philox chains interleave, and stores them as vectors (WriteData).
// Scale 26 (2^30 edges, 17.2 GB of int64 ids), H200: 23 ms, against 3.7 ms to memset the
// outputs. stencil_csr stages each block's rows in shared memory and banded_csr writes
// tiles of entries, so both store coalesced: about 2.5-3.7 TB/s (stencil) and 1.3-2.5
// TB/s (banded, which draws a Philox call per entry) on H200.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/common/element_bits.cuh"
#include "ops/sparse/generate_ops.h"
#include "primitives/compute.cuh"
#include "primitives/datamover.cuh"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace sparse {
namespace {

constexpr int kBlock = 256;
// Past this many blocks, the blocks stride over the tiles.
constexpr int64_t kMaxGrid = int64_t{1} << 30;
// 4 edges a thread: 16-byte stores of int32 ids, 4 Philox chains in flight.
constexpr int kEdgesPerThread = 4;
// banded_csr: one row search per kEntriesPerThread entries.
constexpr int kEntriesPerThread = 4;
// Vector stores of WriteData are at most this wide.
constexpr uintptr_t kVectorBytes = 16;

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kVectorBytes == 0; }

// Thread t of tile b makes edges [b * tile + t * NX, + NX) (InitWithDataIndex) and stores
// them with WriteData: vectorized for a full tile of aligned outputs, else bounds-checked.
template <typename I>
__global__ void __launch_bounds__(kBlock) RmatEdgesKernel(I* src, I* dst, RmatParams p, bool aligned) {
  constexpr int kNX = kEdgesPerThread;
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_NUM_X) * kNX;
  for (int64_t base = static_cast<int64_t>(KPS_BLOCK_ID_X) * tile; base < p.edges;
       base += static_cast<int64_t>(KPS_GRID_NUM_X) * tile) {
    int64_t edge[kNX];
    I s[kNX], d[kNX];
    InitWithDataIndex<int64_t, kNX>(edge, base);
#pragma unroll
    for (int i = 0; i < kNX; ++i) {
      uint32_t a, b;
      RmatEdge(p, static_cast<uint64_t>(edge[i]), &a, &b);
      s[i] = static_cast<I>(a);
      d[i] = static_cast<I>(b);
    }
    const int64_t rem = p.edges - base;
    if (aligned && rem >= tile) {
      WriteData<I, kNX, 1, false>(src + base, s, static_cast<int>(tile));
      WriteData<I, kNX, 1, false>(dst + base, d, static_cast<int>(tile));
    } else {
      const int num = static_cast<int>(rem < tile ? rem : tile);
      WriteData<I, kNX, 1, true>(src + base, s, num);
      WriteData<I, kNX, 1, true>(dst + base, d, num);
    }
  }
}

// Rows a stencil block stages: its shared memory holds their entries (at most 27 each) as
// indices and values, within the 48 KiB of static shared memory.
constexpr size_t kStageBytes = 48 * 1024;
template <typename T, typename I>
__host__ __device__ constexpr int StencilRowsPerBlock() {
  return (sizeof(T) + sizeof(I)) * kStencilMaxRowLength * 128 <= kStageBytes ? 128 : 64;
}

// A block per kRows consecutive rows (striding over the grid), a thread per row: the
// row's offset from the closed form (also indptr[rows] for the thread of row `rows`), its
// entries written to shared memory at their offset in the block's span, then the span
// copied out with consecutive threads on consecutive entries. A row's own stores would
// hit 32 rows' worth of sectors per warp store, 27 entries apart.
template <typename T, typename I>
__global__ void __launch_bounds__(StencilRowsPerBlock<T, I>())
    StencilRowsKernel(int64_t* __restrict__ indptr, I* __restrict__ indices, T* __restrict__ values, StencilParams p) {
  constexpr int kRows = StencilRowsPerBlock<T, I>();
  __shared__ I stage_idx[kRows * kStencilMaxRowLength];
  __shared__ T stage_val[kRows * kStencilMaxRowLength];
  __shared__ int64_t span[2];  // the block's first and end entry
  for (int64_t r0 = static_cast<int64_t>(KPS_BLOCK_ID_X) * kRows; r0 <= p.rows;
       r0 += static_cast<int64_t>(KPS_GRID_NUM_X) * kRows) {
    const int64_t r = r0 + KPS_THREAD_ID_X;
    const int64_t r_end = r0 + kRows < p.rows ? r0 + kRows : p.rows;
    StencilPoint q{0, 0, 0};
    int64_t start = 0;
    if (r <= p.rows && p.rows > 0) {
      q = StencilPointOf(p, r);
      start = StencilRowStartAt(p, q);
    }
    if (r <= p.rows) indptr[r] = start;
    if (r == r0) span[0] = start;
    if (KPS_THREAD_ID_X == kRows - 1) span[1] = StencilRowStart(p, r_end);
    __syncthreads();
    const int64_t first = span[0];
    const int count = static_cast<int>(span[1] - first);
    if (r < p.rows) StencilRow(p, r, q, stage_idx + (start - first), stage_val + (start - first));
    __syncthreads();
    for (int e = KPS_THREAD_ID_X; e < count; e += kRows) {
      indices[first + e] = stage_idx[e];
      values[first + e] = stage_val[e];
    }
    __syncthreads();  // the next span reuses the stage
  }
}

struct BandedRowStartFunctor {
  BandedParams p;
  __device__ __forceinline__ int64_t operator()(int64_t r) const { return BandedRowStart(p, r); }
};

// indptr[r] for r <= n: row indices (InitWithDataIndex), their closed-form offsets
// (ElementwiseUnary), a store of the tile (WriteData).
template <typename F>
__global__ void __launch_bounds__(kBlock) RowStartsKernel(int64_t* out, int64_t count, F f, bool aligned) {
  constexpr int kNX = 4;
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_NUM_X) * kNX;
  for (int64_t base = static_cast<int64_t>(KPS_BLOCK_ID_X) * tile; base < count;
       base += static_cast<int64_t>(KPS_GRID_NUM_X) * tile) {
    int64_t row[kNX], start[kNX];
    InitWithDataIndex<int64_t, kNX>(row, base);
    ElementwiseUnary<int64_t, int64_t, kNX, 1>(start, row, f);
    const int64_t rem = count - base;
    if (aligned && rem >= tile) {
      WriteData<int64_t, kNX, 1, false>(out + base, start, static_cast<int>(tile));
    } else {
      WriteData<int64_t, kNX, 1, true>(out + base, start, static_cast<int>(rem < tile ? rem : tile));
    }
  }
}

// Thread t of tile b writes entries [b * tile + t * NX, + NX): it finds the row of its
// first entry by binary search over the row offsets, then steps along (a row has at least
// one entry, so at most one row change per entry).
template <typename T, typename I>
__global__ void __launch_bounds__(kBlock) BandedEntriesKernel(I* indices, T* values, BandedParams p, bool aligned) {
  constexpr int kNX = kEntriesPerThread;
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_NUM_X) * kNX;
  for (int64_t base = static_cast<int64_t>(KPS_BLOCK_ID_X) * tile; base < p.nnz;
       base += static_cast<int64_t>(KPS_GRID_NUM_X) * tile) {
    I col[kNX] = {};
    T val[kNX] = {};
    const int64_t first = base + static_cast<int64_t>(KPS_THREAD_ID_X) * kNX;
    if (first < p.nnz) {
      int64_t r = BandedRowOf(p, first);
      int64_t next = BandedRowStart(p, r + 1);
      int64_t c = BandedFirstColumn(p, r) + (first - BandedRowStart(p, r));
#pragma unroll
      for (int i = 0; i < kNX; ++i) {
        if (first + i == next && next < p.nnz) {
          ++r;
          next = BandedRowStart(p, r + 1);
          c = BandedFirstColumn(p, r);
        }
        col[i] = static_cast<I>(c);
        val[i] = BandedValue<T>(p, r, c);  // past nnz: computed, never stored
        ++c;
      }
    }
    const int64_t rem = p.nnz - base;
    if (aligned && rem >= tile) {
      WriteData<I, kNX, 1, false>(indices + base, col, static_cast<int>(tile));
      WriteData<T, kNX, 1, false>(values + base, val, static_cast<int>(tile));
    } else {
      const int num = static_cast<int>(rem < tile ? rem : tile);
      WriteData<I, kNX, 1, true>(indices + base, col, num);
      WriteData<T, kNX, 1, true>(values + base, val, num);
    }
  }
}

}  // namespace

template <>
struct RmatOn<DeviceType::kCuda> {
  template <typename I>
  static absl::Status Run(const KernelContext& ctx, const RmatParams& p, I* src, I* dst) {
    return LaunchKernel<&RmatEdgesKernel<I>>("RmatEdgesKernel (rmat)",
                                             BlocksFor(p.edges, int64_t{kBlock} * kEdgesPerThread, kMaxGrid), kBlock, 0,
                                             ctx.cuda_stream(), src, dst, p, Aligned(src) && Aligned(dst));
  }
};

template <>
struct StencilOn<DeviceType::kCuda> {
  template <typename T, typename I>
  static absl::Status Run(const KernelContext& ctx, const StencilParams& p, int64_t* indptr, I* indices, T* values) {
    constexpr int kRows = StencilRowsPerBlock<T, I>();
    return LaunchKernel<&StencilRowsKernel<T, I>>("StencilRowsKernel (stencil_csr)",
                                                  BlocksFor(p.rows + 1, kRows, kMaxGrid), kRows, 0, ctx.cuda_stream(),
                                                  indptr, indices, values, p);
  }
};

template <>
struct BandedOn<DeviceType::kCuda> {
  template <typename T, typename I>
  static absl::Status Run(const KernelContext& ctx, const BandedParams& p, int64_t* indptr, I* indices, T* values) {
    const cudaStream_t stream = ctx.cuda_stream();
    KPS_RETURN_IF_ERROR((LaunchKernel<&RowStartsKernel<BandedRowStartFunctor>>(
        "RowStartsKernel (banded_csr)", BlocksFor(p.n + 1, int64_t{kBlock} * 4, kMaxGrid), kBlock, 0, stream, indptr,
        p.n + 1, BandedRowStartFunctor{p}, Aligned(indptr))));
    if (p.nnz == 0) return absl::OkStatus();
    return LaunchKernel<&BandedEntriesKernel<T, I>>(
        "BandedEntriesKernel (banded_csr)", BlocksFor(p.nnz, int64_t{kBlock} * kEntriesPerThread, kMaxGrid), kBlock, 0,
        stream, indices, values, p, Aligned(indices) && Aligned(values));
  }
};

KPS_REGISTER_DEVICE_KERNELS("rmat", RmatKernel, int32_t, int64_t);
KPS_REGISTER_DEVICE_KERNELS("stencil_csr", StencilCsrKernel, KPS_FLOAT_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS("banded_csr", BandedCsrKernel, KPS_FLOAT_CPP_TYPES);

}  // namespace sparse
}  // namespace kps
