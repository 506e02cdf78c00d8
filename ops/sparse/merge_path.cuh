// The merge-path coordinates that spmv's and spmm's CUDA kernels share (Merrill and
// Garland, SC'16): the m row ends (indptr[1..m]) and the nnz entries form one sorted merge
// of m + nnz items, and a split point on its diagonal d is (row, d - row).
#pragma once

#include <cstdint>

namespace kps {
namespace sparse {

// The row end of row r (indptr[r + 1]) clamped to [0, nnz]: unchecked malformed input
// stays in bounds.
template <typename P>
__device__ __forceinline__ int64_t RowEnd(const P* ptr, int64_t r, int64_t nnz) {
  const int64_t e = static_cast<int64_t>(ptr[r + 1]);
  return e < 0 ? 0 : (e > nnz ? nnz : e);
}

// The merge path's row coordinate at `diagonal` (the entry coordinate is diagonal - row):
// the number of row ends among the first `diagonal` items.
template <typename P>
__device__ int64_t MergePathRow(const P* ptr, int64_t m, int64_t nnz, int64_t diagonal) {
  int64_t lo = diagonal - nnz > 0 ? diagonal - nnz : 0;
  int64_t hi = diagonal < m ? diagonal : m;
  while (lo < hi) {
    const int64_t mid = (lo + hi) >> 1;
    if (RowEnd(ptr, mid, nnz) <= diagonal - mid - 1) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace sparse
}  // namespace kps
