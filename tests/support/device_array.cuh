// Helpers shared by the primitive tests: device buffers of any element type, and the
// host-side views of 16-bit values they compare with.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "registry/tensor.h"

namespace kps {
namespace testing {

// 16-bit floats as float (what they compute in); every other type as itself.
template <typename T>
__host__ __device__ auto Widen(T v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}

template <typename T>
double ToDouble(T v) {
  return static_cast<double>(Widen(v));
}

// Relative precision of T's arithmetic (0 for integers: exact).
template <typename T>
double Epsilon() {
  if constexpr (std::is_same_v<T, __half>) return 0x1p-10;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return 0x1p-7;
  if constexpr (std::is_same_v<T, float>) return 0x1p-23;
  if constexpr (std::is_same_v<T, double>) return 0x1p-52;
  return 0.0;
}

// a + b: the test reducer/scan op; 16-bit floats add in float and round once.
template <typename T>
struct TestSum {
  __host__ __device__ T initial() const { return static_cast<T>(0.0f); }
  __host__ __device__ T operator()(T a, T b) const { return static_cast<T>(Widen(a) + Widen(b)); }
};

// x -> m * x + c over the integers mod 2^32. Composition "a, then b" is associative but
// not commutative, and exact: a result equals the host's only if every value was combined
// exactly once and in index order.
struct Affine {
  uint32_t m;
  uint32_t c;
};
struct ComposeAffine {
  __host__ __device__ Affine initial() const { return Affine{1u, 0u}; }
  __host__ __device__ Affine operator()(Affine a, Affine b) const {
    return Affine{b.m * a.m, b.m * a.c + b.c};
  }
};
inline bool operator==(const Affine& a, const Affine& b) { return a.m == b.m && a.c == b.c; }

// Device memory from kps::Tensor (a byte tensor, so any T fits, test structs included).
// Tensor::Empty on CUDA is poisoned (all bytes 0xFF) in tests: unwritten outputs show.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(int64_t n)
      : n_(n),
        bytes_(*Tensor::Empty(Shape{std::max<int64_t>(n, 1) * static_cast<int64_t>(sizeof(T))},
                              DataType::kUInt8, DeviceType::kCuda)) {}
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(static_cast<int64_t>(host.size())) {
    const absl::Status s = CopyBytes(bytes_.raw_data(), DeviceType::kCuda, host.data(), DeviceType::kCpu,
                                     host.size() * sizeof(T), Stream());
    EXPECT_TRUE(s.ok()) << s;
  }
  T* get() const { return static_cast<T*>(bytes_.raw_data()); }
  std::vector<T> ToHost() const {
    std::vector<T> host(static_cast<size_t>(n_));
    const absl::Status s = CopyBytes(host.data(), DeviceType::kCpu, bytes_.raw_data(), DeviceType::kCuda,
                                     host.size() * sizeof(T), Stream());
    EXPECT_TRUE(s.ok()) << s;
    return host;
  }

 private:
  int64_t n_;
  Tensor bytes_;
};

}  // namespace testing
}  // namespace kps
