// Overflow-checked int64 arithmetic for sizes, strides, offsets and byte counts.
//
// Every count KPS derives from caller data (shapes, strides, offsets, file headers,
// attributes) goes through these, so a wrapped product can never size an allocation or a
// loop. Each returns true when the exact result does not fit (and leaves *out unspecified).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kps {

inline bool MulOverflow(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }
inline bool AddOverflow(int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); }
inline bool MulOverflow(size_t a, size_t b, size_t* out) { return __builtin_mul_overflow(a, b, out); }
inline bool AddOverflow(size_t a, size_t b, size_t* out) { return __builtin_add_overflow(a, b, out); }

// The largest element count of any tensor: 2^60. Its byte count (elements of at most 8
// bytes) fits in size_t, and element offsets and counts fit in int64 with room to add two
// of them. Memory behind a tensor is at most 2^62 bytes (the allocators refuse more), so
// only a view that repeats elements (stride 0) can describe more than 2^59 8-byte values.
inline constexpr int64_t kMaxNumel = int64_t{1} << 60;

// The product of `n` dims, each >= 0, with zero dims counted as one (the span the row-major
// strides of such a shape reach); false when it exceeds kMaxNumel.
inline bool StridedExtent(const int64_t* dims, size_t n, int64_t* out) {
  int64_t p = 1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t d = dims[i] > 0 ? dims[i] : 1;
    if (MulOverflow(p, d, &p) || p > kMaxNumel) return false;
  }
  *out = p;
  return true;
}

}  // namespace kps
