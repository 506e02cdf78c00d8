// The CUDA parts of graph_orient and triangle_count (GraphOn<kCuda>), and the
// registration of both ops' kernels.
//
// triangle_count: for each vertex u, with N+(u) its counted neighbours (all of them in an
// oriented graph, those above u in a symmetric one), every w in N+(v) for v in N+(u) that
// is also in N+(u) closes one triangle. The work of u is the two-hop list, the sum of
// |N+(v)|; the intersection strategy is chosen by |N+(u)|:
//   <= kWarpList: a warp per vertex (TriangleWarpKernel), N+(u) staged in shared memory;
//   longer:       a block per piece of kPiece neighbours (TriangleBlockKernel), pieces
//                 taken from a work counter so that hubs spread over blocks; N+(u) in
//                 shared memory up to kBlockTableBytes, read from global memory beyond.
// In both, a warp takes 32 v at a time, scans their list lengths, and its lanes walk the
// flattened two-hop list together (lane i takes item t + i), so short and long N+(v)
// keep every lane busy; each w is looked up in N+(u), in a hash table in shared memory
// (a slot read or two, where a binary search takes log2 |N+(u)| dependent reads), kIlp
// lookups per lane at a time. Warps take vertices from a work counter, so hubs do not
// hold up a fixed share. Counts are integer atomics: exact and deterministic.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "ops/sparse/graph_ops.h"
#include "ops/sparse/sparse_launch.h"
#include "registry/allocator.h"
#include "registry/call.h"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"
#include "registry/tuning.h"

namespace kps {
namespace sparse {
namespace {

constexpr int kBlock = kSparseBlock;
constexpr int kWarps = kBlock / 32;
constexpr int kWarpList = 256;           // the warp kernel's longest N+(u)
constexpr int kBlockTableBytes = 32768;  // the block kernel's N+(u) in shared memory (a hash table or the list)
constexpr int kChunk = 4;                // vertices a warp takes from the work counter at once
constexpr int kIlp = 4;                  // lookups per lane in flight together (1.19x over 1: R-MAT 24, H200)
constexpr int kPiece = 1024;             // a heavy vertex's neighbours v per block kernel work item

// begin[u]: where u's counted neighbours start (after u's own id in a symmetric graph), for
// every vertex, as each can be a second hop. Roots (u in [root_begin, root_end)) whose count
// passes kWarpList are appended to the block kernel's work list, one item per kPiece of
// their neighbours (heavy_u: the vertex, heavy_first: the first neighbour position), so
// that one hub is spread over several blocks.
template <typename P, typename I>
__global__ void __launch_bounds__(kBlock) TriangleBeginKernel(const P* __restrict__ ptr, const I* __restrict__ idx,
                                                             int64_t n, bool oriented, int64_t root_begin,
                                                             int64_t root_end, int64_t* __restrict__ begin,
                                                             I* __restrict__ heavy_u, int* __restrict__ heavy_first,
                                                             unsigned long long* heavy_count) {
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t lo = static_cast<int64_t>(ptr[u]);
    const int64_t end = static_cast<int64_t>(ptr[u + 1]);
    if (!oriented) {
      int64_t hi = end;
      while (lo < hi) {
        const int64_t mid = (lo + hi) >> 1;
        if (static_cast<int64_t>(idx[mid]) <= u) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
    }
    begin[u] = lo;
    if (end - lo > kWarpList && u >= root_begin && u < root_end) {
      const int pieces = static_cast<int>((end - lo + kPiece - 1) / kPiece);
      const int64_t at = static_cast<int64_t>(atomicAdd(heavy_count, static_cast<unsigned long long>(pieces)));
      for (int k = 0; k < pieces; ++k) {
        heavy_u[at + k] = static_cast<I>(u);
        heavy_first[at + k] = k * kPiece;
      }
    }
  }
}

// Whether w is in the sorted list a[0, d).
template <typename I>
__device__ __forceinline__ bool InList(const I* a, int d, I w) {
  int lo = 0, hi = d;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (a[mid] < w) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < d && a[lo] == w;
}

// The number of entries of the sorted a[0, d) below w (lower bound), for kIlp lookups at
// once: a branchless walk of power-of-two steps from `top` (the largest power of two <= d,
// 0 when d == 0), the same steps for every lookup, so the kIlp reads of a step are
// independent loads in flight together.
template <typename I>
__device__ __forceinline__ void LowerBounds(const I* a, int d, int top, const I (&w)[kIlp], int (&pos)[kIlp]) {
#pragma unroll
  for (int q = 0; q < kIlp; ++q) pos[q] = 0;
  for (int step = top; step > 0; step >>= 1) {
#pragma unroll
    for (int q = 0; q < kIlp; ++q) {
      if (pos[q] + step <= d && a[pos[q] + step - 1] < w[q]) pos[q] += step;
    }
  }
}

// Hash tables of N+(u) in shared memory: 2^bits slots (at least twice |N+(u)|), linear
// probing from a multiplicative hash, empty slots -1 (vertex ids are >= 0).
template <typename I>
__device__ __forceinline__ uint32_t HashSlot(I w, int bits) {
  const uint64_t x = static_cast<uint64_t>(w);
  return (static_cast<uint32_t>(x ^ (x >> 32)) * 0x9E3779B1u) >> (32 - bits);
}

__device__ __forceinline__ int TableBits(int d) { return 32 - __clz(2 * d - 1); }  // d >= 2

// Fills `table` (2^bits slots) with list[0, d), the threads first..d stepping by `stride`
// (the caller synchronizes before and after).
template <typename I>
__device__ __forceinline__ void HashInsert(I* table, int bits, const I* list, int d, int first, int stride) {
  using U = std::conditional_t<sizeof(I) == 8, unsigned long long, unsigned int>;
  const uint32_t mask = (1u << bits) - 1;
  for (int k = first; k < d; k += stride) {
    const I w = list[k];
    uint32_t slot = HashSlot(w, bits);
    while (true) {
      const U prev = atomicCAS(reinterpret_cast<U*>(table + slot), static_cast<U>(I(-1)), static_cast<U>(w));
      if (prev == static_cast<U>(I(-1)) || prev == static_cast<U>(w)) break;
      slot = (slot + 1) & mask;
    }
  }
}

// Whether each w[q] with in[q] is in the table: the first slot reads of all kIlp lookups in flight
// together, then the rare collisions one by one.
template <typename I>
__device__ __forceinline__ void HashLookups(const I* table, int bits, const I (&w)[kIlp], const bool (&in)[kIlp],
                                            bool (&hit)[kIlp]) {
  const uint32_t mask = (1u << bits) - 1;
  uint32_t slot[kIlp];
  I t[kIlp];
#pragma unroll
  for (int q = 0; q < kIlp; ++q) slot[q] = HashSlot(w[q], bits);
#pragma unroll
  for (int q = 0; q < kIlp; ++q) t[q] = table[slot[q]];
#pragma unroll
  for (int q = 0; q < kIlp; ++q) {
    hit[q] = false;
    if (!in[q]) continue;
    while (t[q] != w[q] && t[q] != I(-1)) {
      slot[q] = (slot[q] + 1) & mask;
      t[q] = table[slot[q]];
    }
    hit[q] = t[q] == w[q];
  }
}

// One warp's share of vertex u: the v at list positions first, first + stride, ... below
// `end` (32 at a time). `list` is N+(u) (shared or global memory), `table` its hash table (kHash)
// of 2^bits slots; offs, vb, vl and vs are the warp's shared scratch (32 each). Each edge
// (u, v) is intersected by walking the shorter of N+(v) and N+(u) (with `min_side`; else
// always N+(v)) and looking each element up in the other: in N+(u) through the table, or
// by binary search (LowerBounds), kIlp per lane at a time; in N+(v) by binary search.
// Returns the triangles found.
template <bool kHash, typename P, typename I>
__device__ unsigned long long CountTwoHop(const P* __restrict__ ptr, const I* __restrict__ idx,
                                          const int64_t* __restrict__ begin, const I* list, const I* table, int bits,
                                          int d, int first, int end, int stride, int64_t* offs, int64_t* vb,
                                          int64_t* vl,
                                          I* vs, unsigned long long* per_vertex, bool min_side) {
  const int lane = threadIdx.x & 31;
  const int top = d > 0 ? 1 << (31 - __clz(d)) : 0;
  unsigned long long found = 0;
  for (int base = first; base < end; base += stride) {
    const int j = base + lane;
    int64_t items = 0, start = 0, len = 0;
    I v = 0;
    if (j < end) {
      v = list[j];
      start = begin[v];
      len = static_cast<int64_t>(ptr[v + 1]) - start;
      items = !min_side || len <= d ? len : d;
    }
    int64_t incl = items;  // inclusive scan of the walk lengths across the warp
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int64_t t = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += t;
    }
    const int64_t total = __shfl_sync(0xffffffffu, incl, 31);
    offs[lane] = incl - items;
    vb[lane] = start;
    vl[lane] = !min_side || len <= d ? len : -len - 1;  // negative: walk N+(u), search N+(v)
    vs[lane] = v;
    __syncwarp();
    int lo = 0;  // the last v whose offset is <= t: t only grows, so lo only moves forward
    for (int64_t t0 = lane; t0 < total; t0 += 32 * kIlp) {
      I w[kIlp];
      int who[kIlp];
      bool in_u[kIlp];  // w is to be looked up in N+(u)
#pragma unroll
      for (int q = 0; q < kIlp; ++q) {
        const int64_t t = t0 + 32 * q;
        in_u[q] = false;
        w[q] = 0;
        who[q] = lo;
        if (t < total) {
          while (lo < 31 && offs[lo + 1] <= t) ++lo;
          who[q] = lo;
          const int64_t k = t - offs[lo], n_v = vl[lo];
          if (n_v >= 0) {
            w[q] = idx[vb[lo] + k];
            in_u[q] = true;
          } else if (InList(idx + vb[lo], static_cast<int>(-n_v - 1), list[k])) {
            ++found;
            if (per_vertex != nullptr) {
              atomicAdd(per_vertex + static_cast<int64_t>(vs[lo]), 1ull);
              atomicAdd(per_vertex + static_cast<int64_t>(list[k]), 1ull);
            }
          }
        }
      }
      bool hit[kIlp];
      if constexpr (kHash) {
        HashLookups(table, bits, w, in_u, hit);
      } else {
        int pos[kIlp];
        LowerBounds(list, d, top, w, pos);
#pragma unroll
        for (int q = 0; q < kIlp; ++q) hit[q] = in_u[q] && pos[q] < d && list[pos[q]] == w[q];
      }
#pragma unroll
      for (int q = 0; q < kIlp; ++q) {
        if (hit[q]) {
          ++found;
          if (per_vertex != nullptr) {
            atomicAdd(per_vertex + static_cast<int64_t>(vs[who[q]]), 1ull);
            atomicAdd(per_vertex + static_cast<int64_t>(w[q]), 1ull);
          }
        }
      }
    }
    __syncwarp();
  }
  return found;
}

__device__ __forceinline__ unsigned long long WarpSum(unsigned long long v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Vertices with 2 to kWarpList counted neighbours, a warp each: N+(u) staged in the
// warp's shared memory, as a hash table (kHash) or the sorted list.
template <bool kHash, typename P, typename I>
__global__ void __launch_bounds__(kBlock) TriangleWarpKernel(const P* __restrict__ ptr, const I* __restrict__ idx,
                                                            const int64_t* __restrict__ begin, int64_t root_begin,
                                                            int64_t root_end, unsigned long long* work,
                                                            unsigned long long* total,
                                                            unsigned long long* per_vertex, bool min_side) {
  __shared__ I staged[kWarps][2 * kWarpList];  // the table (2^bits <= 2 kWarpList slots) or the list
  __shared__ int64_t offs[kWarps][32], vb[kWarps][32], vl[kWarps][32];
  __shared__ I vs[kWarps][32];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  I* mine = staged[warp];
  unsigned long long found = 0;
  while (true) {
    unsigned long long first = 0;
    if (lane == 0) first = atomicAdd(work, static_cast<unsigned long long>(kChunk));
    first = __shfl_sync(0xffffffffu, first, 0);
    const int64_t u0 = root_begin + static_cast<int64_t>(first);
    if (u0 >= root_end) break;
    const int64_t last = min(u0 + kChunk, root_end);
    for (int64_t u = u0; u < last; ++u) {
      const int64_t b = begin[u];
      const int d = static_cast<int>(min(static_cast<int64_t>(ptr[u + 1]) - b, int64_t{kWarpList + 1}));
      if (d < 2 || d > kWarpList) continue;  // no triangle; or a heavy vertex (the block kernel's)
      const I* list = mine;
      int bits = 0;
      if constexpr (kHash) {
        bits = TableBits(d);
        for (int k = lane; k < (1 << bits); k += 32) mine[k] = I(-1);
        __syncwarp();
        HashInsert(mine, bits, idx + b, d, lane, 32);
        list = idx + b;  // walked (rarely) from global memory
      } else {
        for (int k = lane; k < d; k += 32) mine[k] = idx[b + k];
      }
      __syncwarp();
      const unsigned long long here = CountTwoHop<kHash>(ptr, idx, begin, list, mine, bits, d, 0, d, 32, offs[warp],
                                                         vb[warp], vl[warp], vs[warp], per_vertex, min_side);
      found += here;
      if (per_vertex != nullptr) {
        const unsigned long long s = WarpSum(here);
        if (lane == 0 && s != 0) atomicAdd(per_vertex + u, s);
      }
      __syncwarp();
    }
  }
  found = WarpSum(found);
  if (lane == 0 && total != nullptr && found != 0) atomicAdd(total, found);
}

// The heavy vertices' pieces, a block each, taken from a work counter: N+(u) in shared
// memory as a hash table (kHash, up to half the table's slots) or the sorted list (up to
// all of them), else searched in global memory (L1/L2); the block's warps take the
// piece's kPiece neighbours v, 32 at a time.
template <bool kHash, typename P, typename I>
__global__ void __launch_bounds__(kBlock) TriangleBlockKernel(const P* __restrict__ ptr, const I* __restrict__ idx,
                                                             const int64_t* __restrict__ begin,
                                                             const I* __restrict__ heavy_u,
                                                             const int* __restrict__ heavy_first,
                                                             const unsigned long long* heavy_listed,
                                                             unsigned long long* work, unsigned long long* total,
                                                             unsigned long long* per_vertex, bool min_side) {
  constexpr int kCap = kBlockTableBytes / static_cast<int>(sizeof(I));  // a power of two
  __shared__ I staged[kCap];
  __shared__ int64_t offs[kWarps][32], vb[kWarps][32], vl[kWarps][32];
  __shared__ I vs[kWarps][32];
  __shared__ unsigned long long piece;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  unsigned long long found = 0;
  const int64_t pieces = static_cast<int64_t>(*heavy_listed);
  while (true) {
    if (threadIdx.x == 0) {
      piece = atomicAdd(work, 1ull);
    }
    __syncthreads();
    const int64_t h = static_cast<int64_t>(piece);
    if (h >= pieces) break;
    const int64_t u = static_cast<int64_t>(heavy_u[h]);
    const int64_t b = begin[u];
    const int d = static_cast<int>(static_cast<int64_t>(ptr[u + 1]) - b);
    const int first = heavy_first[h], end = min(first + kPiece, d);
    const I* list = idx + b;
    int bits = 0;
    if (kHash && 2 * d <= kCap) {
      bits = TableBits(d);
      for (int k = threadIdx.x; k < (1 << bits); k += kBlock) staged[k] = I(-1);
      __syncthreads();
      HashInsert(staged, bits, list, d, threadIdx.x, kBlock);
    } else if (!kHash && d <= kCap) {
      for (int k = threadIdx.x; k < d; k += kBlock) staged[k] = idx[b + k];
      list = staged;
    }
    __syncthreads();
    const unsigned long long here =
        bits > 0 ? CountTwoHop<true>(ptr, idx, begin, list, staged, bits, d, first + warp * 32, end, kBlock,
                                     offs[warp], vb[warp], vl[warp], vs[warp], per_vertex, min_side)
                 : CountTwoHop<false>(ptr, idx, begin, list, staged, 0, d, first + warp * 32, end, kBlock,
                                      offs[warp], vb[warp], vl[warp], vs[warp], per_vertex, min_side);
    found += here;
    if (per_vertex != nullptr) {
      // A warp's share goes straight to u's count: a block-wide sum in shared memory was
      // read back after the barrier, and nvcc hoisted that read out of thread 0's branch
      // (racecheck: every thread read it while thread 0 reset it for the next piece).
      const unsigned long long s = WarpSum(here);
      if (lane == 0 && s != 0) atomicAdd(per_vertex + u, s);
    }
    __syncthreads();  // the staged list or table is rewritten for the next piece
  }
  found = WarpSum(found);
  if (lane == 0 && total != nullptr && found != 0) atomicAdd(total, found);
}

// graph_orient, first pass: counts[u + 1] = the neighbours u keeps (a warp per vertex).
template <typename P, typename I>
__global__ void __launch_bounds__(kBlock) OrientCountKernel(const P* __restrict__ ptr, const I* __restrict__ idx,
                                                           int64_t n, bool by_degree, int64_t* __restrict__ counts) {
  const int lane = threadIdx.x & 31;
  if (blockIdx.x == 0 && threadIdx.x == 0) counts[0] = 0;
  for (int64_t u = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; u < n;
       u += (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5) {
    const int64_t lo = static_cast<int64_t>(ptr[u]), hi = static_cast<int64_t>(ptr[u + 1]);
    int64_t kept = 0;
    for (int64_t k0 = lo; k0 < hi; k0 += 32) {
      bool keep = false;
      if (k0 + lane < hi) {
        const int64_t v = static_cast<int64_t>(idx[k0 + lane]);
        keep = by_degree ? (hi - lo < static_cast<int64_t>(ptr[v + 1] - ptr[v]) ||
                            (hi - lo == static_cast<int64_t>(ptr[v + 1] - ptr[v]) && u < v))
                         : u < v;
      }
      kept += __popc(__ballot_sync(0xffffffffu, keep));
    }
    if (lane == 0) counts[u + 1] = kept;
  }
}

// graph_orient, second pass: each vertex's kept neighbours, in order, at out_ptr[u].
template <typename P, typename I>
__global__ void __launch_bounds__(kBlock) OrientWriteKernel(const P* __restrict__ ptr, const I* __restrict__ idx,
                                                           int64_t n, bool by_degree,
                                                           const int64_t* __restrict__ out_ptr,
                                                           I* __restrict__ out_idx) {
  const int lane = threadIdx.x & 31;
  for (int64_t u = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; u < n;
       u += (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5) {
    const int64_t lo = static_cast<int64_t>(ptr[u]), hi = static_cast<int64_t>(ptr[u + 1]);
    int64_t at = out_ptr[u];
    for (int64_t k0 = lo; k0 < hi; k0 += 32) {
      bool keep = false;
      I v = 0;
      if (k0 + lane < hi) {
        v = idx[k0 + lane];
        const int64_t dv = static_cast<int64_t>(ptr[static_cast<int64_t>(v) + 1] - ptr[v]);
        keep = by_degree ? (hi - lo < dv || (hi - lo == dv && u < static_cast<int64_t>(v))) : u < v;
      }
      const unsigned mask = __ballot_sync(0xffffffffu, keep);
      if (keep) out_idx[at + __popc(mask & ((1u << lane) - 1))] = v;
      at += __popc(mask);
    }
  }
}

// The two counting kernels: the warp kernel over every vertex, then the block kernel over
// the heavy ones' pieces (at most `most_pieces`). counters: the pieces listed, the warp
// kernel's work counter, the block kernel's.
template <bool kHash, typename P, typename I>
absl::Status LaunchCount(const P* ptr, const I* idx, const int64_t* begin, const I* heavy_u, const int* heavy_first,
                         int64_t most_pieces, unsigned long long* counters, int64_t root_begin, int64_t root_end,
                         unsigned long long* total, unsigned long long* pv, bool min_side, cudaStream_t cs) {
  int device = 0, sms = 0;
  KPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  KPS_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                           "cudaDeviceGetAttribute");
  // Enough warps to fill the GPU; they take roots from the work counter until none is left.
  const int64_t n = root_end - root_begin;
  const unsigned warp_blocks =
      static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(int64_t{sms} * 8, (n + kChunk * kWarps - 1) /
                                                                                          (kChunk * kWarps))));
  KPS_RETURN_IF_ERROR((LaunchKernel<&TriangleWarpKernel<kHash, P, I>>(
      "TriangleWarpKernel", warp_blocks, kBlock, 0, cs, ptr, idx, begin, root_begin, root_end, counters + 1, total,
      pv, min_side)));
  // The heavy vertices' pieces, whose number only the device knows (no wait for it).
  if (most_pieces == 0) return absl::OkStatus();
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(most_pieces, int64_t{sms} * 4));
  return LaunchKernel<&TriangleBlockKernel<kHash, P, I>>("TriangleBlockKernel", blocks, kBlock, 0, cs, ptr, idx, begin,
                                                        heavy_u, heavy_first, counters, counters + 2, total, pv,
                                                        min_side);
}

}  // namespace

template <typename P, typename I>
absl::Status GraphOn<DeviceType::kCuda>::Orient(KernelContext* ctx, const Tensor& indptr, const Tensor& indices,
                                                bool by_degree) {
  const Stream& stream = ctx->stream();
  const cudaStream_t cs = ctx->cuda_stream();
  const int64_t n = indptr.numel() - 1;
  KPS_ASSIGN_OR_RETURN(Tensor counts, Tensor::Empty(Shape{n + 1}, DataType::kInt64, DeviceType::kCuda, stream));
  KPS_RETURN_IF_ERROR((LaunchKernel<&OrientCountKernel<P, I>>("OrientCountKernel", GridFor((n + 1) * 32), kBlock, 0,
                                                               cs, indptr.data<P>(), indices.data<I>(), n, by_degree,
                                                               counts.data<int64_t>())));
  Tensor& out_ptr = ctx->output(0);
  KPS_RETURN_IF_ERROR(
      Call("cumsum").Input("x", counts).Output("out", out_ptr).Attr("dim", int64_t{0}).OnStream(stream).Run().status());
  int64_t kept = 0;
  KPS_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&kept, out_ptr.data<int64_t>() + n, sizeof(kept), cudaMemcpyDeviceToHost, cs),
      "cudaMemcpyAsync (graph_orient's edge count)");
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cs), "cudaStreamSynchronize (graph_orient's edge count)");
  KPS_ASSIGN_OR_RETURN(Tensor * out_idx, ctx->AllocateOutput(1, Shape{kept}, indices.dtype()));
  if (kept == 0) return absl::OkStatus();
  return LaunchKernel<&OrientWriteKernel<P, I>>("OrientWriteKernel", GridFor(n * 32), kBlock, 0, cs,
                                                indptr.data<P>(), indices.data<I>(), n, by_degree,
                                                out_ptr.data<int64_t>(), out_idx->data<I>());
}

template <typename P, typename I>
absl::Status GraphOn<DeviceType::kCuda>::Count(KernelContext* ctx, const Tensor& indptr, const Tensor& indices,
                                               bool oriented, bool per_vertex, int64_t root_begin,
                                               int64_t root_end) {
  const Stream& stream = ctx->stream();
  const cudaStream_t cs = ctx->cuda_stream();
  const int64_t n = indptr.numel() - 1;
  Tensor& out = ctx->output(0);
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(out.raw_data(), 0, out.nbytes(), cs), "cudaMemsetAsync");
  if (n == 0 || root_end <= root_begin) return absl::OkStatus();
  // The heavy vertices' pieces: each has over kWarpList counted neighbours (disjoint
  // entries), in ceil(count / kPiece) pieces.
  const int64_t nnz = indices.numel();
  const int64_t most_pieces = std::min<int64_t>(n, nnz / (kWarpList + 1)) + nnz / kPiece + 1;
  // Scratch: begin [n] int64, heavy_u [most_pieces] of I, heavy_first [most_pieces] int32, three counters
  // (each array aligned for its type: the wider first).
  const size_t u_at = static_cast<size_t>(n) * sizeof(int64_t);
  const size_t first_at = u_at + static_cast<size_t>(most_pieces) * sizeof(I);
  const size_t counters_at = (first_at + static_cast<size_t>(most_pieces) * sizeof(int) + 15) / 16 * 16;
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> scratch,
                       Storage::Allocate(counters_at + 3 * sizeof(unsigned long long), DeviceType::kCuda, stream));
  char* base = static_cast<char*>(scratch->data());
  auto* begin = reinterpret_cast<int64_t*>(base);
  int* heavy_first = reinterpret_cast<int*>(base + first_at);
  I* heavy_u = reinterpret_cast<I*>(base + u_at);
  auto* counters = reinterpret_cast<unsigned long long*>(base + counters_at);
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(counters, 0, 3 * sizeof(unsigned long long), cs), "cudaMemsetAsync");
  const P* ptr = indptr.data<P>();
  const I* idx = indices.data<I>();
  KPS_RETURN_IF_ERROR((LaunchKernel<&TriangleBeginKernel<P, I>>("TriangleBeginKernel", GridFor(n), kBlock, 0, cs, ptr,
                                                                 idx, n, oriented, root_begin, root_end, begin,
                                                                 heavy_u, heavy_first, counters)));
  // Walk the shorter list of each edge (KPS_TUNE triangle.min_side=0: always N+(v)).
  static const bool min_side = TuneInt("triangle.min_side", 1) != 0;
  auto* sink = reinterpret_cast<unsigned long long*>(out.raw_data());
  unsigned long long* total = per_vertex ? nullptr : sink;
  unsigned long long* pv = per_vertex ? sink : nullptr;
  // Lookups in N+(u) through a hash table in shared memory (KPS_TUNE triangle.hash=0: binary search).
  static const bool hash = TuneInt("triangle.hash", 1) != 0;
  return hash ? LaunchCount<true, P, I>(ptr, idx, begin, heavy_u, heavy_first, most_pieces, counters, root_begin,
                                        root_end, total, pv, min_side, cs)
              : LaunchCount<false, P, I>(ptr, idx, begin, heavy_u, heavy_first, most_pieces, counters, root_begin,
                                         root_end, total, pv, min_side, cs);
}

KPS_REGISTER_DEVICE_KERNELS("graph_orient", GraphOrientKernel, int32_t, int64_t);
KPS_REGISTER_DEVICE_KERNELS("triangle_count", TriangleCountKernel, int32_t, int64_t);

}  // namespace sparse
}  // namespace kps
