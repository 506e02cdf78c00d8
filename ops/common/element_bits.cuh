// Dtype-generic element moves for kernels that only need an element's bits (sort,
// topk, compaction): elements are 1, 2, 4 or 8 bytes, the width a runtime argument, so
// one kernel serves every dtype of that width. The branch on the width is uniform over
// the grid. Plus the grid size of the grid-stride helper kernels of those families.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "registry/device.h"

namespace kps {

// Element i of a `size`-byte array, zero-extended to 64 bits.
__device__ __forceinline__ uint64_t LoadBits(const void* p, int64_t i, int size) {
  switch (size) {
    case 1:
      return static_cast<const uint8_t*>(p)[i];
    case 2:
      return static_cast<const uint16_t*>(p)[i];
    case 4:
      return static_cast<const uint32_t*>(p)[i];
    default:
      return static_cast<const uint64_t*>(p)[i];
  }
}

// Writes `bits` as element `to` of a `size`-byte array.
__device__ __forceinline__ void StoreBits(void* dst, int64_t to, uint64_t bits, int size) {
  switch (size) {
    case 1:
      static_cast<uint8_t*>(dst)[to] = static_cast<uint8_t>(bits);
      break;
    case 2:
      static_cast<uint16_t*>(dst)[to] = static_cast<uint16_t>(bits);
      break;
    case 4:
      static_cast<uint32_t*>(dst)[to] = static_cast<uint32_t>(bits);
      break;
    default:
      static_cast<uint64_t*>(dst)[to] = bits;
      break;
  }
}

// Copies element `from` of src to element `to` of dst (both of `size` bytes).
__device__ __forceinline__ void CopyElement(void* dst, int64_t to, const void* src, int64_t from, int size) {
  StoreBits(dst, to, LoadBits(src, from, size), size);
}

// Blocks of `per_block` items each to cover n items, at least 1 and at most max_blocks
// (a grid-stride loop takes the rest).
inline unsigned BlocksFor(int64_t n, int64_t per_block, int64_t max_blocks) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((n + per_block - 1) / per_block, max_blocks)));
}

// Blocks of `threads` for a grid-stride loop over n items: enough to cover them, at most
// 16 per SM.
inline unsigned GridStrideBlocks(int64_t n, int threads) {
  return BlocksFor(n, threads, int64_t{CudaMultiprocessorCount()} * 16);
}

}  // namespace kps
