// Orderings used by Sort: NaN-aware key comparison, the pairwise Comparator, GetLastPow2.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "primitives/details/macros.cuh"

namespace kps {
namespace details {

// The largest power of two <= n, and 1 for n <= 1 (GetLastPow2(5) == 4,
// GetLastPow2(8) == 8). Host and device, usable in constant expressions.
KPS_HOST_DEVICE constexpr int GetLastPow2(int n) {
  if (n <= 1) return 1;
  unsigned v = static_cast<unsigned>(n);
  v |= v >> 1;
  v |= v >> 2;
  v |= v >> 4;
  v |= v >> 8;
  v |= v >> 16;
  return static_cast<int>(v - (v >> 1));
}

// log2 of a power of two, in constant expressions.
KPS_HOST_DEVICE constexpr int Log2OfPow2(int n) {
  int lg = 0;
  while ((1 << lg) < n) ++lg;
  return lg;
}

// The value a key compares as: 16-bit floats as float (exactly), everything else as is.
template <typename T>
KPS_HOST_DEVICE auto SortCompareValue(T v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}

// True when v is a NaN; always false for types without NaN.
template <typename T>
KPS_HOST_DEVICE bool SortKeyIsNan(T v) {
  const auto c = SortCompareValue(v);
  if constexpr (std::is_floating_point_v<decltype(c)>) {
    return c != c;
  } else {
    return false;
  }
}

// True when key `a` goes strictly before key `b` in the sort order: ascending puts
// smaller first and NaN last; descending puts larger first and NaN first. NaN is the
// largest value, as in NumPy and PyTorch; all NaNs are equivalent to each other, and
// -0.0 is equivalent to +0.0. A strict weak ordering for every input.
template <typename T>
KPS_HOST_DEVICE bool SortsBefore(T a, T b, bool ascending) {
  const auto ca = SortCompareValue(a);
  const auto cb = SortCompareValue(b);
  if (ascending) return !SortKeyIsNan(a) && (SortKeyIsNan(b) || ca < cb);
  return !SortKeyIsNan(b) && (SortKeyIsNan(a) || ca > cb);
}

// Orders a pair in place: swaps *first and *second when *second goes strictly before
// *first (SortsBefore), so that afterwards *first does not go after *second. Equivalent
// keys are not swapped.
template <typename T>
KPS_HOST_DEVICE void Comparator(T* first, T* second, bool ascending) {
  if (SortsBefore(*second, *first, ascending)) {
    const T t = *first;
    *first = *second;
    *second = t;
  }
}

// Comparator with an index payload that moves with its key. Equivalent keys are ordered
// by index, ascending in both directions, so with distinct indices the order is total
// (and a sort with the original positions as indices is stable).
template <typename T, typename IndexType>
KPS_HOST_DEVICE void ComparatorWithIndex(T* first, T* second, IndexType* first_index, IndexType* second_index,
                                         bool ascending) {
  const bool swap = SortsBefore(*second, *first, ascending) ||
                    (!SortsBefore(*first, *second, ascending) && *second_index < *first_index);
  if (swap) {
    const T t = *first;
    *first = *second;
    *second = t;
    const IndexType ti = *first_index;
    *first_index = *second_index;
    *second_index = ti;
  }
}

}  // namespace details
}  // namespace kps
