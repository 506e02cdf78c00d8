// Data-movement primitives: global memory <-> registers, block-cooperatively.
//
// The KPS layout for 1-D data: a block works on a tile of KPS_BLOCK_NUM_X * NX contiguous
// elements; thread t owns elements [t * NX, t * NX + NX) of the tile and keeps them in a
// register array of NX (x NY) values. Kernels offset `src`/`dst` to the tile's start, so
// `num` (the valid elements left in the tile) fits in an int even for tensors of more
// than 2^31 elements.
//
//   float x[4], y[4];
//   kps::ReadData<float, 4, 1, false>(x, in + tile_start, tile_size);   // full tile
//   kps::ReadData<float, 4, 1, true>(y, in + tail_start, remaining);    // last tile
//
// Names: ReadData* / WriteData* take the tile's start and place this thread's elements
// by KPS_THREAD_ID_X; Load* / Store* take the address of this thread's own elements, for
// kernels whose per-thread addresses do not follow the tile layout (upsample's output
// rows, a compaction's output offsets).
#pragma once

#include <cuda/std/tuple>

#include <cstring>

#include "primitives/details/broadcast_config.cuh"
#include "primitives/details/macros.cuh"
#include "primitives/details/vector_type.cuh"

namespace kps {

// Loads *p for a kernel that reads it once and never writes it: through the read-only
// path (ld.global.nc) without allocating in L1 (L1::no_allocate), so a stream of loads
// does not churn the L1 lines that other data (shared memory's carveout, the kernel's
// other reads) could use. An L2::256B prefetch hint alone does not help.
// f16 row sums, rows of 8K, H100: 2961 GB/s against 2907 for a plain or .nc load.
// 4-, 8- and 16-byte T; others load plainly. Use it for the vectors of a kernel's main
// input where each byte is read once (reductions, scans); the 1-D ReadData's policy
// parameter (LoadPolicy::kStreaming) gives the same load per vector.
//
//   const float4 v = kps::LoadStreaming(reinterpret_cast<const float4*>(row) + i);
template <typename T>
KPS_DEVICE T LoadStreaming(const T* p) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 16 && alignof(T) >= 16) {
    unsigned w[4];
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "l"(p));
    T v;
    memcpy(&v, w, 16);
    return v;
  } else if constexpr (sizeof(T) == 8 && alignof(T) >= 8) {
    unsigned w[2];
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
    T v;
    memcpy(&v, w, 8);
    return v;
  } else if constexpr (sizeof(T) == 4 && alignof(T) >= 4) {
    unsigned w;
    asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(w) : "l"(p));
    T v;
    memcpy(&v, &w, 4);
    return v;
  }
#endif
  return *p;
}

// Loads *p through L2 alone (ld.cg), never from this SM's L1: for data that another block
// of the same kernel wrote (a split reduction's partial states, read by the block that
// folds them after a fence and a ticket), where a line could sit stale in L1 from an
// earlier read of a neighbour. Any trivially copyable T of 1, 2 or a multiple of 4 bytes.
//
//   if (last_block) acc = f(acc, kps::LoadFromL2(partial + s * num_outputs + o));
template <typename T>
KPS_DEVICE T LoadFromL2(const T* p) {
  T v;
  if constexpr (sizeof(T) % 4 == 0 && alignof(T) >= 4) {
    unsigned w[sizeof(T) / 4];
#pragma unroll
    for (size_t i = 0; i < sizeof(T) / 4; ++i) w[i] = __ldcg(reinterpret_cast<const unsigned*>(p) + i);
    memcpy(&v, w, sizeof(T));
  } else if constexpr (sizeof(T) == 2) {
    const unsigned short h = __ldcg(reinterpret_cast<const unsigned short*>(p));
    memcpy(&v, &h, 2);
  } else {
    static_assert(sizeof(T) == 1, "partial states are 1 or 2 bytes, or whole 4-byte words");
    const unsigned char b = __ldcg(reinterpret_cast<const unsigned char*>(p));
    memcpy(&v, &b, 1);
  }
  return v;
}

// How the vectorized 1-D ReadData loads: kCached is a plain load; kStreaming is
// LoadStreaming (read-only path, no L1 allocation) for data the kernel reads once.
enum class LoadPolicy { kCached, kStreaming };

// Sets all NX registers of `dst` to `init_data`.
template <typename T, int NX>
KPS_DEVICE void Init(T* dst, T init_data) {
#pragma unroll
  for (int i = 0; i < NX; ++i) dst[i] = init_data;
}

// Copies registers: dst[i] = src[i] for i < NX; with IsBoundary, only for i < num
// (the rest of `dst` is left as it was, e.g. as set by the other Init).
template <typename T, int NX, bool IsBoundary = false>
KPS_DEVICE void Init(T* dst, const T* src, int num) {
#pragma unroll
  for (int i = 0; i < NX; ++i) {
    if (!IsBoundary || i < num) dst[i] = src[i];
  }
}

// Sets dst[i] = block_offset + KPS_THREAD_ID_X * NX + i, the global index of each of
// this thread's NX * NY elements in the 1-D layout (NY rows of NX). Used by arange and
// by kernels that need element indices (e.g. argsort payloads).
template <typename T, int NX, int NY = 1>
KPS_DEVICE void InitWithDataIndex(T* dst, int64_t block_offset) {
  const int64_t base = block_offset + static_cast<int64_t>(KPS_THREAD_ID_X) * NX * NY;
#pragma unroll
  for (int i = 0; i < NX * NY; ++i) dst[i] = static_cast<T>(base + i);
}

// 1-D load of this thread's NX contiguous elements of the tile at `src`
// (elements [KPS_THREAD_ID_X * NX, + NX)). NY must be 1 for the 1-D form.
//
// IsBoundary == false: every element is in range and `src` is aligned to the vector
// width (the largest power of two dividing NX with at most 16 bytes); the load is
// vectorized, each vector loaded as `Policy` says. IsBoundary == true: only elements with
// tile index < `num` are read, one by one; registers of the others are left untouched.
template <typename T, int NX, int NY, bool IsBoundary = false, LoadPolicy Policy = LoadPolicy::kCached>
KPS_DEVICE void ReadData(T* dst, const T* __restrict__ src, int num) {
  static_assert(NY == 1, "1-D ReadData: NY must be 1");
  const int thread_offset = static_cast<int>(KPS_THREAD_ID_X) * NX;
  if (IsBoundary) {
#pragma unroll
    for (int i = 0; i < NX; ++i) {
      if (thread_offset + i < num) dst[i] = src[thread_offset + i];
    }
  } else {
    constexpr int kVec = details::VectorSizeFor<T, NX>();
    using Vec = details::VectorType<T, kVec>;
    const Vec* vsrc = reinterpret_cast<const Vec*>(src + thread_offset);
#pragma unroll
    for (int v = 0; v < NX / kVec; ++v) {
      const Vec tmp = Policy == LoadPolicy::kStreaming ? LoadStreaming(vsrc + v) : vsrc[v];
#pragma unroll
      for (int i = 0; i < kVec; ++i) dst[v * kVec + i] = tmp.val[i];
    }
  }
}

// 1-D store of this thread's NX contiguous elements to the tile at `dst`; the mirror of
// ReadData (same layout, alignment and boundary rules).
template <typename T, int NX, int NY, bool IsBoundary = false>
KPS_DEVICE void WriteData(T* dst, const T* src, int num) {
  static_assert(NY == 1, "1-D WriteData: NY must be 1");
  const int thread_offset = static_cast<int>(KPS_THREAD_ID_X) * NX;
  if (IsBoundary) {
#pragma unroll
    for (int i = 0; i < NX; ++i) {
      if (thread_offset + i < num) dst[thread_offset + i] = src[i];
    }
  } else {
    constexpr int kVec = details::VectorSizeFor<T, NX>();
    using Vec = details::VectorType<T, kVec>;
    Vec* vdst = reinterpret_cast<Vec*>(dst + thread_offset);
#pragma unroll
    for (int v = 0; v < NX / kVec; ++v) {
      Vec tmp;
#pragma unroll
      for (int i = 0; i < kVec; ++i) tmp.val[i] = src[v * kVec + i];
      vdst[v] = tmp;
    }
  }
}

// Stores each of this thread's NX register values R times in a row at `dst`:
// dst[i * R + r] = src[i] for i < NX, r < R, the NX * R elements written as vectors of
// details::VectorSizeFor<T, NX * R>() elements (the widest power of two dividing NX * R
// that fits 16 bytes), so a thread's duplicated run goes out in as few stores as
// possible. For nearest-neighbour upsampling and repeat_interleave, whose outputs repeat
// each input element: a kernel that needs the run in several rows calls it once per row.
// upsample2x_f32 (NX = 2, R = 2: one 16-byte store per output row), H100: 2911 GB/s,
// against 2678 for two 8-byte stores per row.
//
// `dst` is this thread's own first output (not the tile's start) and must be aligned to
// the vector (sizeof(T) * VectorSizeFor<T, NX * R>() bytes); check the pointer and the
// row length on the host and take a narrower NX (or R) where it is not. Per-thread.
//
//   uint16_t v[4];  // 4 halves of an input row, loaded with ReadData
//   kps::StoreRepeated<uint16_t, 4, 2>(out_row + 8 * col, v);              // 1 x 16 bytes
//   kps::StoreRepeated<uint16_t, 4, 2>(out_row + out_w + 8 * col, v);      // next row
template <typename T, int NX, int R>
KPS_DEVICE void StoreRepeated(T* dst, const T* src) {
  static_assert(NX > 0 && R > 0, "StoreRepeated: NX and R must be positive");
  constexpr int kVec = details::VectorSizeFor<T, NX * R>();
  using Vec = details::VectorType<T, kVec>;
  Vec* vdst = reinterpret_cast<Vec*>(dst);
#pragma unroll
  for (int v = 0; v < NX * R / kVec; ++v) {
    Vec tmp;
#pragma unroll
    for (int i = 0; i < kVec; ++i) tmp.val[i] = src[(v * kVec + i) / R];
    vdst[v] = tmp;
  }
}

// 1-D load of the elements of this thread (tile layout, as the 1-D ReadData: elements
// [KPS_THREAD_ID_X * NX, + NX) of the tile at `src`) whose bit is set in `mask`:
// dst[i] = src[KPS_THREAD_ID_X * NX + i] where mask & (1u << i); the other registers are
// left alone and their elements are not touched. One scalar load per set bit, so a
// sparse mask reads only the bytes it selects (masked_select's values). NX <= 32.
// Per-thread.
//
//   unsigned keep = ...;  // bit i: element i of this thread is kept
//   float v[16];
//   kps::ReadDataIf<float, 16>(v, values + tile_start, keep);
//   kps::StoreSelected<float, 16>(out + first_rank, v, keep);
template <typename T, int NX>
KPS_DEVICE void ReadDataIf(T* dst, const T* __restrict__ src, unsigned mask) {
  static_assert(NX > 0 && NX <= 32, "ReadDataIf: NX must be in [1, 32]");
  const int thread_offset = static_cast<int>(KPS_THREAD_ID_X) * NX;
#pragma unroll
  for (int i = 0; i < NX; ++i) {
    if (mask & (1u << i)) dst[i] = src[thread_offset + i];
  }
}

// Stores the registers whose bit is set in `mask` to consecutive elements at `dst`, in
// register order: the k-th set bit i of mask writes dst[k] = src[i] (k from 0), so
// popcount(mask) elements are written and nothing else. The scatter of a stream
// compaction: `dst` is this thread's own first output (its exclusive prefix count of
// kept elements, e.g. from Cumsum, added to the tile's offset). Scalar stores; NX <= 32.
// Per-thread. Snippet: see ReadDataIf.
template <typename T, int NX>
KPS_DEVICE void StoreSelected(T* dst, const T* src, unsigned mask) {
  static_assert(NX > 0 && NX <= 32, "StoreSelected: NX must be in [1, 32]");
  int k = 0;
#pragma unroll
  for (int i = 0; i < NX; ++i) {
    if (mask & (1u << i)) dst[k++] = src[i];
  }
}

// 1-D load of `read_lens` (<= NX) contiguous elements per thread: this thread's elements
// are [KPS_THREAD_ID_X * read_lens, + read_lens) of the tile at `src`, so a kernel can
// choose the per-thread count at run time (registers past read_lens are left alone).
// With IsBoundary, only tile indices < num are read. Never vectorized.
template <typename T, int NX, int NY, bool IsBoundary = false>
KPS_DEVICE void ReadData(T* dst, const T* __restrict__ src, int num, int read_lens) {
  static_assert(NY == 1, "1-D ReadData: NY must be 1");
  const int thread_offset = static_cast<int>(KPS_THREAD_ID_X) * read_lens;
#pragma unroll
  for (int i = 0; i < NX; ++i) {
    if (i >= read_lens) break;
    if (!IsBoundary || thread_offset + i < num) dst[i] = src[thread_offset + i];
  }
}

// Loads input `Index` of a mixed-type argument pack: for the NX elements this thread owns
// in the 1-D layout (as 1-D ReadData, read_lens <= NX of them), sets
// cuda::std::get<Index>(dst[i]) = src[...]. ArgsT is a cuda::std::tuple of the inputs'
// types, so one register array carries every input of an op with mixed input dtypes.
template <typename T, typename ArgsT, int Index, int NX, int NY, bool IsBoundary = false>
KPS_DEVICE void ReadData(ArgsT* dst, const T* __restrict__ src, int num, int read_lens = NX) {
  static_assert(NY == 1, "1-D ReadData: NY must be 1");
  const int thread_offset = static_cast<int>(KPS_THREAD_ID_X) * read_lens;
#pragma unroll
  for (int i = 0; i < NX; ++i) {
    if (i >= read_lens) break;
    if (!IsBoundary || thread_offset + i < num) {
      cuda::std::get<Index>(dst[i]) = src[thread_offset + i];
    }
  }
}

// Copies a whole tile of kTile elements from `src` to `dst` (global memory to shared
// memory or back) as 16-byte vectors, thread t of the block moving vectors t,
// t + kBlockThreads, ...: each warp instruction moves 512 contiguous bytes. Staged in
// shared memory this way, a tile then gives each thread its run of the blocked
// arrangement with 16-byte shared-memory reads (a transpose through shared memory, as
// CUB's BLOCK_LOAD_TRANSPOSE): faster than each thread loading its own run from global
// memory, whose lanes would be a run apart (cumsum of 256M floats, H100: 2083 GB/s with
// direct 16-byte loads of runs of 4). Block-wide (every thread calls it; blockDim.x ==
// kBlockThreads); both pointers 16-byte aligned; kTile * sizeof(T) a multiple of 16. No
// barrier inside: synchronize before reading what other threads copied.
//
//   __shared__ alignas(16) float stage[256 * 16];
//   kps::CopyTileStriped<float, 256 * 16, 256>(stage, x + tile_start);
//   __syncthreads();
//   kps::ReadData<float, 16, 1>(v, stage, 256 * 16);  // this thread's run, 16-byte reads
template <typename T, int kTile, int kBlockThreads>
KPS_DEVICE void CopyTileStriped(T* dst, const T* src) {
  static_assert(kTile * sizeof(T) % details::kMaxVectorBytes == 0, "CopyTileStriped: whole 16-byte vectors");
  constexpr int kPer = details::kMaxVectorBytes / static_cast<int>(sizeof(T));
  using Vec = details::VectorType<T, kPer>;
  constexpr int kVectors = static_cast<int>(kTile * sizeof(T) / details::kMaxVectorBytes);
#pragma unroll
  for (int v = static_cast<int>(KPS_THREAD_ID_X); v < kVectors; v += kBlockThreads) {
    reinterpret_cast<Vec*>(dst)[v] = reinterpret_cast<const Vec*>(src)[v];
  }
}

// 2-D strided load with type conversion (Paddle's form; for a 1-D strided run in a hot
// loop, ReadDataStriped below issues every load before the first use and spills less).
// This thread's element (idy, idx), stored in
// dst[idy * NX + idx] as Ty, is src[KPS_THREAD_ID_X + idx * stride_nx + idy * stride_ny]:
// each thread starts at its own column (threadIdx.x), never at threadIdx.x * NX. With
// IsBoundary, an element is read only when KPS_THREAD_ID_X + idx * stride_nx < size_nx
// and idy * stride_ny < size_ny (extents in elements of `src` from the block's start).
template <typename Tx, typename Ty, int NX, int NY, bool IsBoundary = false>
KPS_DEVICE void ReadData(Ty* dst, const Tx* __restrict__ src, int size_nx, int size_ny, int stride_nx,
                         int stride_ny) {
  const int thread_offset = static_cast<int>(KPS_THREAD_ID_X);
#pragma unroll
  for (int idy = 0; idy < NY; ++idy) {
    if (IsBoundary && idy * stride_ny >= size_ny) break;
#pragma unroll
    for (int idx = 0; idx < NX; ++idx) {
      if (IsBoundary && thread_offset + idx * stride_nx >= size_nx) break;
      dst[idy * NX + idx] = static_cast<Ty>(src[thread_offset + idx * stride_nx + idy * stride_ny]);
    }
  }
}

// Loads this thread's NX items of a strided run: dst[j] = Ty(src[first + j * stride])
// where first + j * stride < num (or `full`), else `fill`. The radix passes' arrangements
// (primitives/radix.cuh) are such runs: striped over the block (first = threadIdx.x,
// stride = blockDim.x: BlockRadixHistogram's), or over the warp (first = warp * 32 * NX +
// lane, stride = 32: WarpRadixRank's). Each load is predicated on its own test, so all NX issue before any
// is used. `full` (the same in the threads of a warp, e.g. "this is not the last tile")
// promises that every item is in range and skips the tests. Indices are int: offset
// `src` to the tile for larger arrays. Per-thread.
//
// ReadData's 2-D form moves the same items, but starts each thread at threadIdx.x and
// stops at the first item out of range: in the onesweep pass kernels (64 registers) that
// spilled 8 to 16 bytes per thread where this form spills none (ptxas, sm_90).
//
//   uint32_t key[16];   // warp-striped; past the end: 0xffffffff
//   kps::ReadDataStriped<uint32_t, uint32_t, 16>(key, keys, tile_start + warp * 512 + lane, 32, n,
//                                                0xffffffffu, /*full=*/tile_start + tile <= n);
template <typename Tx, typename Ty, int NX>
KPS_DEVICE void ReadDataStriped(Ty* dst, const Tx* __restrict__ src, int first, int stride, int num, Ty fill,
                                bool full = false) {
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    const int p = first + j * stride;
    dst[j] = full || p < num ? static_cast<Ty>(src[p]) : fill;
  }
}

// 2-D strided store with type conversion; the mirror of the 2-D ReadData (same layout
// and boundary rule): dst[KPS_THREAD_ID_X + idx * stride_nx + idy * stride_ny] =
// Ty(src[idy * NX + idx]).
template <typename Tx, typename Ty, int NX, int NY, bool IsBoundary = false>
KPS_DEVICE void WriteData(Ty* dst, const Tx* src, int size_nx, int size_ny, int stride_nx, int stride_ny) {
  const int thread_offset = static_cast<int>(KPS_THREAD_ID_X);
#pragma unroll
  for (int idy = 0; idy < NY; ++idy) {
    if (IsBoundary && idy * stride_ny >= size_ny) break;
#pragma unroll
    for (int idx = 0; idx < NX; ++idx) {
      if (IsBoundary && thread_offset + idx * stride_nx >= size_nx) break;
      dst[thread_offset + idx * stride_nx + idy * stride_ny] = static_cast<Ty>(src[idy * NX + idx]);
    }
  }
}

// 1-D gather load: this thread's output elements are index = block_offset +
// KPS_THREAD_ID_X * read_lens + i for i < read_lens (<= NX), the 1-D layout, and each
// reads dst[i] = src[index_map(index)]: `index_map` is any functor IndexT -> offset into
// `src` (an upsampling's source pixel, a broadcast, a permutation). With IsBoundary, only
// indices < total_num_output are read and the other registers are left alone. IndexT
// (deduced from block_offset) is the width of the index arithmetic: a kernel whose
// indices fit 32 bits passes uint32_t and keeps 32-bit math. One scalar load per
// element. Per-thread.
//
//   struct Reverse {
//     uint32_t n;
//     __device__ uint32_t operator()(uint32_t i) const { return n - 1 - i; }
//   };
//   float v[4];
//   kps::ReadDataGather<float, 4, 1, true>(v, in, tile_start, Reverse{n}, n);
//   kps::WriteData<float, 4, 1, true>(out + tile_start, v, n - tile_start);
template <typename T, int NX, int NY, bool IsBoundary = false, typename IndexT, typename IndexMap>
KPS_DEVICE void ReadDataGather(T* dst, const T* __restrict__ src, IndexT block_offset, const IndexMap& index_map,
                               IndexT total_num_output, int read_lens = NX) {
  static_assert(NY == 1, "1-D ReadDataGather: NY must be 1");
  const IndexT thread_offset = block_offset + static_cast<IndexT>(KPS_THREAD_ID_X) * static_cast<IndexT>(read_lens);
#pragma unroll
  for (int i = 0; i < NX; ++i) {
    if (i >= read_lens) break;
    const IndexT index = thread_offset + static_cast<IndexT>(i);
    if (IsBoundary && index >= total_num_output) break;
    dst[i] = src[index_map(index)];
  }
}

namespace details {
// BroadcastConfig as an index map of ReadDataGather.
struct BroadcastIndexMap {
  const BroadcastConfig& config;
  KPS_DEVICE int64_t operator()(int64_t index) const { return config.Offset(index); }
};
}  // namespace details

// 1-D broadcast load: ReadDataGather with the map index -> config.Offset(index), the
// input element that output element sees. Indices are 64-bit, so outputs beyond 2^32
// elements work (through the config's 64-bit path).
template <typename T, int NX, int NY, bool IsBoundary = false>
KPS_DEVICE void ReadDataBc(T* dst, const T* __restrict__ src, int64_t block_offset,
                           const details::BroadcastConfig& config, int64_t total_num_output, int read_lens = NX) {
  ReadDataGather<T, NX, NY, IsBoundary>(dst, src, block_offset, details::BroadcastIndexMap{config}, total_num_output,
                                        read_lens);
}

// 1-D broadcast load of a run: this thread's NX output elements block_offset +
// KPS_THREAD_ID_X * NX + k (k < NX; with IsBoundary only tile indices below `num`) read
// src[config.Offset(first) + k * inner_stride], where `first` is the run's first element:
// one offset computation per run instead of one per element (ReadDataBc). Valid when a
// thread's NX elements lie in one innermost run of the output (the caller keeps runs from
// crossing the innermost dim: its length a multiple of NX) and `inner_stride` is the
// input's stride along it. inner_stride 0 (broadcast along the innermost dim) loads once
// and repeats; with `vector` (inner_stride 1, src + offset aligned to NX elements, checked
// on the host), one vector load; otherwise NX strided loads. kNarrow: offsets through the
// config's 32-bit path (every index and offset below 2^32), which keeps the 64-bit
// divisions and their registers out of the kernel. Per-thread.
//
//   // Row bias over [rows, cols], cols % 4 == 0: a thread per 4 outputs of one row.
//   float b[4];
//   kps::ReadDataBcRun<float, 4, false, true>(b, bias, tile_start, cfg, /*inner_stride=*/1,
//                                             /*vector=*/true, tile);
template <typename T, int NX, bool IsBoundary = false, bool kNarrow = false>
KPS_DEVICE void ReadDataBcRun(T* dst, const T* src, int64_t block_offset,
                              const details::BroadcastConfig& config, int64_t inner_stride, bool vector, int num) {
  const int first = static_cast<int>(KPS_THREAD_ID_X) * NX;
  if (IsBoundary && first >= num) return;
  const int64_t off = kNarrow ? static_cast<int64_t>(config.Offset32(static_cast<uint32_t>(block_offset + first)))
                              : config.Offset(block_offset + first);
  if (inner_stride == 0) {
    const T v = src[off];
#pragma unroll
    for (int k = 0; k < NX; ++k) dst[k] = v;
  } else if (!IsBoundary && NX > 1 && vector) {
    // The run's first element sits at tile index `first` of a tile that starts `first`
    // elements before it; ReadData adds the thread offset back.
    ReadData<T, NX, 1, false>(dst, src + off - first, NX);
  } else {
#pragma unroll
    for (int k = 0; k < NX; ++k) {
      if (!IsBoundary || first + k < num) dst[k] = src[off + k * inner_stride];
    }
  }
}

// 2-D broadcast load: this thread's element (idy, idx), in dst[idy * NX + idx], is output
// element block_offset + KPS_THREAD_ID_X + idx * stride_nx + idy * stride_ny, read from
// src[config.Offset(index)]; with IsBoundary only indices < total_num_output are read.
template <typename T, int NX, int NY, bool IsBoundary = false>
KPS_DEVICE void ReadDataBc(T* dst, const T* __restrict__ src, int64_t block_offset,
                           const details::BroadcastConfig& config, int64_t total_num_output, int stride_nx,
                           int stride_ny) {
  const int64_t thread_offset = block_offset + static_cast<int64_t>(KPS_THREAD_ID_X);
#pragma unroll
  for (int idy = 0; idy < NY; ++idy) {
#pragma unroll
    for (int idx = 0; idx < NX; ++idx) {
      const int64_t index = thread_offset + static_cast<int64_t>(idx) * stride_nx + static_cast<int64_t>(idy) * stride_ny;
      if (IsBoundary && index >= total_num_output) continue;
      dst[idy * NX + idx] = src[config.Offset(index)];
    }
  }
}

// Load for reductions, through an index calculator that maps the reduce space to
// element offsets. The thread's coordinates: along the reduced axis `r0` = threadIdx.x
// when reduce_last_dim (lanes cooperate along contiguous memory) else threadIdx.y; along
// the kept axis `k0` = the other one. Element (ny, nx), stored in dst[ny * NX + nx] as
// Ty(func(x)), is src[index_cal(block_offset + r0 + ny * stride_ny + nx * stride_nx)].
// With IsBoundary it is read only when r0 + ny * stride_ny < size_ny and
// k0 + nx * stride_nx < size_nx; other registers are left alone (Init them to the
// reducer's identity first).
template <typename Tx, typename Ty, int NX, int NY, typename IndexCal, typename Functor, bool IsBoundary = false>
KPS_DEVICE void ReadDataReduce(Ty* dst, const Tx* __restrict__ src, int block_offset, const IndexCal& index_cal,
                               int size_nx, int size_ny, int stride_nx, int stride_ny, Functor func,
                               bool reduce_last_dim) {
  const int r0 = static_cast<int>(reduce_last_dim ? KPS_THREAD_ID_X : KPS_THREAD_ID_Y);
  const int k0 = static_cast<int>(reduce_last_dim ? KPS_THREAD_ID_Y : KPS_THREAD_ID_X);
#pragma unroll
  for (int nx = 0; nx < NX; ++nx) {
    if (IsBoundary && k0 + nx * stride_nx >= size_nx) break;
#pragma unroll
    for (int ny = 0; ny < NY; ++ny) {
      const int r = r0 + ny * stride_ny;
      if (IsBoundary && r >= size_ny) break;
      const uint32_t linear = static_cast<uint32_t>(block_offset + r + nx * stride_nx);
      dst[ny * NX + nx] = static_cast<Ty>(func(src[index_cal(linear)]));
    }
  }
}

}  // namespace kps
