// VectorType<T, N>: N values of T moved as one aligned load or store.
#pragma once

#include <cstddef>
#include <cstring>

namespace kps {
namespace details {

// The widest vector the hardware loads in one instruction is 16 bytes.
inline constexpr int kMaxVectorBytes = 16;

// N elements of T, aligned to their total size so the compiler emits one
// LDG/STG of sizeof(T) * N bytes (N * sizeof(T) must be a power of two <= 16).
template <typename T, int N>
struct alignas(sizeof(T) * N) VectorType {
  static_assert(N > 0 && (N & (N - 1)) == 0, "VectorType: N must be a power of two");
  static_assert(sizeof(T) * N <= kMaxVectorBytes, "VectorType: wider than 16 bytes");
  T val[N];
};

// The largest power-of-two count of T, dividing NX, that fits in 16 bytes.
template <typename T, int NX>
__host__ __device__ constexpr int VectorSizeFor() {
  int v = 1;
  while (v * 2 <= NX && NX % (v * 2) == 0 && sizeof(T) * v * 2 <= kMaxVectorBytes) v *= 2;
  return v;
}

// Elements of T in one 16-byte vector (4 for float, 8 for half).
template <typename T>
__host__ __device__ constexpr int MaxVectorSize() {
  return sizeof(T) >= kMaxVectorBytes ? 1 : static_cast<int>(kMaxVectorBytes / sizeof(T));
}

}  // namespace details
}  // namespace kps
