// The launch shape of the sparse ops' grid-stride kernels (convert_cuda.cu,
// triangle_cuda.cu, relabel_cuda.cu).
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

}  // namespace sparse
}  // namespace kps
