// CUDA topk. For k <= 16 one kernel selects without sorting the line: a block per line,
// each lane streams its share of the line keeping its own best in registers (sorted
// insertion, behind a block-wide bar that soon rejects nearly everything with one
// compare), then each warp picks its k best from its lanes' lists, and one warp sorts
// the warps' winners with the Sort primitive. Larger k sorts the lines (sort_cuda.h)
// and keeps the first k.
//
// Order: ascending radix keys, complemented for `largest`, ties by position: the k
// winners are exactly the first k of the stable sort, whatever the launch shape.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "ops/axis.h"
#include "ops/elementwise/copy_ops.h"
#include "ops/ops.h"
#include "ops/sort/sort_cuda.h"
#include "ops/sort/sort_keys.cuh"
#include "primitives/sort.cuh"
#include "registry/allocator.h"
#include "registry/kernel.h"
#include "registry/status.h"

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

// Atomics on the block's shared bar, for both key widths (uint64_t is unsigned long,
// which the atomic overloads do not take).
__device__ __forceinline__ uint32_t AtomicLoadShared(uint32_t* p) { return atomicOr(p, 0u); }
__device__ __forceinline__ uint64_t AtomicLoadShared(uint64_t* p) {
  return atomicOr(reinterpret_cast<unsigned long long*>(p), 0ull);
}
__device__ __forceinline__ void AtomicMinShared(uint32_t* p, uint32_t v) { atomicMin(p, v); }
__device__ __forceinline__ void AtomicMinShared(uint64_t* p, uint64_t v) {
  atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

template <typename K>
__device__ __forceinline__ bool Before(K a, int pa, K b, int pb) {
  return a < b || (a == b && pa < pb);
}

// This lane's share of the line (positions tid, tid + kThreads, ...) into its NX best,
// kept in order. Elements strictly worse than `bar` are skipped: a bar is always the
// k-th best of k distinct elements already held, so nothing worse can win. Each warp
// computes one from its lanes' best elements after it inserts, and the block keeps the
// best of the warps' bars in shared memory (`block_bar`), which a warp reads before it
// inserts: 8 warps' worth of elements make the bar about 8 times as selective as the
// warp's own (a warp-only bar still let a candidate into most batches: 0.86 ms for
// 4096 x 32768, issue-bound at DRAM 16%). A warp whose lanes all skip a batch runs no
// insertion code at all, and within a batch only the elements some lane takes run it,
// so the loop is loads and compares. Keys load through a compile-time dtype (Load): the
// dtype switch sits outside the loop.
template <typename K, int NX, int kThreads, typename Load>
__device__ __forceinline__ void ScanLine(const Load& load, int length, int k, int tid, K flip, K* block_bar,
                                         K (&key)[NX], int (&pos)[NX]) {
  // Loads in flight per lane before the inserts and the bar's update: 4 left the kernel
  // latency-bound (0.91 ms for 4096 x 32768, DRAM at 0.5 TB/s).
  constexpr int kBatch = 8;
  K bar = ~K(0);
  // The loop bound is the warp's (its first lane's), so every lane reaches the shuffles.
  const int lane = tid & 31;
  for (int w0 = tid - lane; w0 < length; w0 += kThreads * kBatch) {
    const int p0 = w0 + lane;
    K v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int p = p0 + u * kThreads;
      v[u] = p < length ? static_cast<K>(load(p) ^ flip) : ~K(0);
    }
    // Whether any lane holds a candidate (against its NX-th best before the batch, which
    // only improves): a warp-uniform branch, so the insertion code below is skipped, not
    // executed under predicates.
    bool any = false;
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int p = p0 + u * kThreads;
      any |= p < length && v[u] <= bar && Before(v[u], p, key[NX - 1], pos[NX - 1]);
    }
    if (__any_sync(0xffffffffu, any)) {
      // The block's bar may have tightened since this warp last looked. An atomic read
      // (the other warps write it with atomicMin) by one lane, broadcast.
      K shared_bar = lane == 0 ? AtomicLoadShared(block_bar) : K(0);
      shared_bar = __shfl_sync(0xffffffffu, shared_bar, 0);
      bar = shared_bar < bar ? shared_bar : bar;
      bool inserted = false;
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int p = p0 + u * kThreads;
        // Equal to the bar may still win on position: only strictly worse is skipped.
        const bool take = p < length && v[u] <= bar && Before(v[u], p, key[NX - 1], pos[NX - 1]);
        if (__any_sync(0xffffffffu, take)) {
          inserted = true;
          if (take) {
            K ck = v[u];
            int cp = p;
#pragma unroll
            for (int j = 0; j < NX; ++j) {  // carry the new element down to its slot
              if (Before(ck, cp, key[j], pos[j])) {
                const K tk = key[j];
                const int tp = pos[j];
                key[j] = ck;
                pos[j] = cp;
                ck = tk;
                cp = tp;
              }
            }
          }
        }
      }
      if (inserted) {
        // The warp's bar: the k-th smallest of the 32 lanes' best keys (a bitonic sort
        // across the warp, one key per lane). Those are k distinct elements, all at
        // least as good.
        K best = key[0];
#pragma unroll
        for (int size = 2; size <= 32; size *= 2) {
#pragma unroll
          for (int stride = size / 2; stride > 0; stride /= 2) {
            const K other = __shfl_xor_sync(0xffffffffu, best, stride);
            const bool keep_min = ((lane & stride) == 0) == ((lane & size) == 0 || size == 32);
            best = keep_min ? (other < best ? other : best) : (other < best ? best : other);
          }
        }
        const K warp_bar = __shfl_sync(0xffffffffu, best, k - 1);
        if (warp_bar < bar) {
          bar = warp_bar;
          if (lane == 0) AtomicMinShared(block_bar, warp_bar);
        }
      }
    }
  }
}

// The warp's k best of its lanes' ordered lists (k <= NX), by k rounds of taking the
// smallest head across the warp: lane r < k gets the r-th (lanes from k on, and lanes
// past the real elements, get empty slots). Cheaper than sorting all 32 x NX entries,
// most of which cannot win.
template <typename K, int NX>
__device__ __forceinline__ void WarpBest(int k, int lane, K (&key)[NX], int (&pos)[NX], K& out_key, int& out_pos) {
  out_key = ~K(0);
  out_pos = INT_MAX;
  for (int r = 0; r < k; ++r) {
    K mk = key[0];
    int mp = pos[0];
#pragma unroll
    for (int s = 16; s > 0; s /= 2) {
      const K ok = __shfl_xor_sync(0xffffffffu, mk, s);
      const int op = __shfl_xor_sync(0xffffffffu, mp, s);
      if (Before(ok, op, mk, mp)) {
        mk = ok;
        mp = op;
      }
    }
    if (lane == r) {
      out_key = mk;
      out_pos = mp;
    }
    // Real heads are distinct (positions are); empty ones all match and all shift, which
    // leaves them empty.
    if (key[0] == mk && pos[0] == mp) {
#pragma unroll
      for (int j = 0; j + 1 < NX; ++j) {
        key[j] = key[j + 1];
        pos[j] = pos[j + 1];
      }
      key[NX - 1] = ~K(0);
      pos[NX - 1] = INT_MAX;
    }
  }
}

// A compile-time dtype for the scan: the key of each raw element, as LoadKey makes it.
template <typename K, typename Raw>
struct KeyLoad {
  const Raw* p;
  int64_t inner;
  DataType dtype;
  __device__ __forceinline__ K operator()(int pos) const {
    return LoadKey<K>(p, static_cast<int64_t>(pos) * inner, dtype);
  }
};

template <typename K, int NX, int kThreads>
__global__ void __launch_bounds__(kThreads) TopkSelectKernel(TopkArgs a) {
  static_assert(kThreads % 32 == 0 && kThreads / 32 * NX == 64, "the final warp sort takes 64 candidates");
  const int64_t line = blockIdx.x;
  const int64_t o = line / a.inner;
  const int64_t i = line - o * a.inner;
  const int64_t base = o * a.length * a.inner + i;
  // A 2-D block of kThreads / 32 warps: threadIdx.x is the lane, as the warp-level Sort
  // below needs.
  const int tid = static_cast<int>(threadIdx.y * 32 + threadIdx.x);
  const K flip = a.largest ? KeyMask<K>(a.elem_size * 8) : K(0);
  // This lane's NX best, in order; empty slots sort after every real element.
  K key[NX];
  int pos[NX];
#pragma unroll
  for (int j = 0; j < NX; ++j) {
    key[j] = ~K(0);
    pos[j] = INT_MAX;
  }
  __shared__ K block_bar;
  if (tid == 0) block_bar = ~K(0);
  __syncthreads();
  const char* line_ptr = static_cast<const char*>(a.x) + base * a.elem_size;
  // One copy of the scan per key width of the raw element (the switch inside LoadKey
  // then folds to the dtype's case when the compiler unswitches; the common float32
  // case gets its own copy outright).
  if (a.dtype == DataType::kFloat32) {
    const KeyLoad<K, uint32_t> load{reinterpret_cast<const uint32_t*>(line_ptr), a.inner, DataType::kFloat32};
    ScanLine<K, NX, kThreads>(load, a.length, a.k, tid, flip, &block_bar, key, pos);
  } else {
    const KeyLoad<K, char> load{line_ptr, a.inner, a.dtype};
    ScanLine<K, NX, kThreads>(load, a.length, a.k, tid, flip, &block_bar, key, pos);
  }
  // Each warp's k best, NX slots per warp (the unused ones empty).
  __shared__ K cand_key[64];
  __shared__ int cand_pos[64];
  const int warp = static_cast<int>(threadIdx.y), lane = static_cast<int>(threadIdx.x);
  K wk;
  int wp;
  WarpBest<K, NX>(a.k, lane, key, pos, wk, wp);
  if (lane < NX) {
    cand_key[warp * NX + lane] = wk;
    cand_pos[warp * NX + lane] = wp;
  }
  __syncthreads();
  if (warp != 0) return;
  // Warp 0 orders the 64 warp winners (2 per lane): positions 0..k-1 win.
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
  TopkSelectKernel<K, NX, kThreads><<<static_cast<unsigned>(lines), dim3(32, kThreads / 32), 0, stream>>>(a);
  KPS_RETURN_IF_LAUNCH_ERROR("TopkSelectKernel");
  return absl::OkStatus();
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

// k > kMaxSelectK: sort each line's positions, keep the first k, and for `sorted` =
// false sort those k positions themselves.
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
  TakeFirstKernel<<<GridStrideBlocks(n_out, 256), 256, 0, s>>>(order, x.length, k, x.inner, n_out, chosen);
  KPS_RETURN_IF_LAUNCH_ERROR("TakeFirstKernel");
  if (!sorted) {  // the chosen positions in ascending order are the output indices
    const Lines chosen_lines{chosen, DataType::kInt64, x.outer, k, x.inner};
    KPS_RETURN_IF_ERROR(SortLinesCuda(chosen_lines, /*descending=*/false, indices, nullptr, stream));
  }
  GatherKernel<<<GridStrideBlocks(n_out, 256), 256, 0, s>>>(x.data, static_cast<int>(DataTypeSize(x.dtype)), x.length, k, x.inner,
                                               n_out, indices, values);
  KPS_RETURN_IF_LAUNCH_ERROR("GatherKernel");
  return absl::OkStatus();
}

}  // namespace

absl::Status TopkLinesCuda(const Lines& x, int64_t k, bool largest, bool sorted, void* values, int64_t* indices,
                           const Stream& stream) {
  if (x.count() == 0 || k == 0) return absl::OkStatus();
  if (k > kMaxSelectK || x.length > INT_MAX - 4096 || x.count() > INT_MAX) {  // int positions, grid
    return TopkBySort(x, k, largest, sorted, values, indices, stream);
  }
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

namespace {

template <typename T>
class TopkCudaKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const int dim, ResolveDimAttr(*ctx));
    const Tensor& in = ctx->input(0);
    const int64_t k = ctx->Attr<int64_t>("k");
    if (in.numel() == 0 || k == 0) return absl::OkStatus();
    KPS_ASSIGN_OR_RETURN(const Tensor x, ops::AsContiguous(in, ctx->stream()));
    const AxisLines l = LinesAlong(x.shape(), dim);
    const Lines lines{x.raw_data(), x.dtype(), l.outer, l.length, l.inner};
    return TopkLinesCuda(lines, k, ctx->Attr<bool>("largest"), ctx->Attr<bool>("sorted"), ctx->output(0).raw_data(),
                         ctx->output(1).data<int64_t>(), ctx->stream());
  }
};

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("topk", DeviceType::kCuda, TopkCudaKernel, KPS_ALL_CPP_TYPES);

}  // namespace sort
}  // namespace kps
