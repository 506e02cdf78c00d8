// CUDA topk. For k <= 16 one kernel selects without sorting the line: a block per line,
// each lane streams its share of the line keeping its own best in registers (sorted
// insertion, behind a block-wide bar that soon rejects nearly everything with one
// compare), then the elements at the block's final bar (or, past 64 of them, each
// warp's k best) go to shared memory, and one warp sorts them with the Sort primitive.
// Larger k sorts the lines (sort_cuda.h) and keeps the first k.
//
// Order: ascending radix keys, complemented for `largest`, ties by position: the k
// winners are exactly the first k of the stable sort, whatever the launch shape.
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
#include "ops/sort/topk_select.cuh"
#include "primitives/sort.cuh"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
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

}  // namespace sort
}  // namespace kps
