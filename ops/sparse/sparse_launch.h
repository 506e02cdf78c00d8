// The launch shape of the sparse ops' grid-stride kernels (convert_cuda.cu,
// triangle_cuda.cu, relabel_cuda.cu, and dist/triangle_cuda.cu's), the loop they stride with
// and a binary search they share.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kps {
namespace sparse {

inline constexpr int kSparseBlock = 256;  // threads per block

// Enough blocks of kSparseBlock threads to give each of `items` a thread, at least one and
// at most 65536: the kernels stride over the rest.
inline unsigned GridFor(int64_t items) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>((items + kSparseBlock - 1) / kSparseBlock, 65536)));
}

#ifdef __CUDACC__
// A grid-stride loop of i over [0, count), for kernels launched with GridFor.
#define KPS_SPARSE_GRID_STRIDE(i, count)                                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count);                 \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// The first position in ascending keys[0, count) whose key is >= target.
__device__ __forceinline__ int64_t LowerBound(const int64_t* keys, int64_t count, int64_t target) {
  int64_t lo = 0, hi = count;
  while (lo < hi) {
    const int64_t mid = (lo + hi) >> 1;
    if (keys[mid] < target) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}
#endif  // __CUDACC__

}  // namespace sparse
}  // namespace kps
