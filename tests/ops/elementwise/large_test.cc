// Tensors past 2^31 and 2^32 elements on the GPU: 64-bit indexing in the same-shape walk
// and in the broadcast walk (the BroadcastConfig 64-bit path, chosen when the output
// has more than 2^32 elements). int8 keeps them at 2-4 GiB per tensor. Inputs are a
// seeded hash of the index (fresh per run), so every element differs from its
// neighbours and the whole output is checked on the host, in parallel.
//
// These are slow under compute-sanitizer (billions of checked accesses);
// tools/gpu_check.sh runs the sanitizer with --gtest_filter=-LargeTensor*.
#include <atomic>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "testing/support.h"
#include "tests/support/parallel_for.h"

namespace kps {
namespace {

using ::kps::test_support::ParallelFor;
using ::kps::testing::FreshSeed;

int8_t Hash8(uint64_t i, uint64_t seed) {
  return static_cast<int8_t>(((i + seed) * 0x9E3779B97F4A7C15ull) >> 56);
}

Tensor HashTensor(const Shape& shape, uint64_t seed) {
  Tensor t = *Tensor::Empty(shape, DataType::kInt8, DeviceType::kCpu);
  int8_t* p = t.data<int8_t>();
  ParallelFor(t.numel(), [&](int, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = Hash8(static_cast<uint64_t>(i), seed);
  });
  return t;
}

// int8 add wraps: the sum's low byte.
int8_t Wrap8(int a, int b) { return static_cast<int8_t>(static_cast<uint8_t>(a + b)); }

TEST(LargeTensorGpuTest, SameShapeAddPast2To31Elements) {
  KPS_SKIP_WITHOUT_GPU();
  const int64_t n = (int64_t{1} << 31) + 77;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  Tensor x = *HashTensor(Shape{n}, seed).To(DeviceType::kCuda);
  Tensor y = *HashTensor(Shape{n}, seed * 31 + 1).To(DeviceType::kCuda);
  auto out = Call("add").Input("x", x).Input("y", y).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  Tensor host = *out->To(DeviceType::kCpu);
  const int8_t* got = host.data<int8_t>();
  std::vector<int64_t> first_bad(16, -1);
  std::atomic<int64_t> bad{0};
  ParallelFor(n, [&](int, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int8_t want = Wrap8(Hash8(i, seed), Hash8(i, seed * 31 + 1));
      if (got[i] != want) bad.fetch_add(1);
    }
  });
  EXPECT_EQ(bad.load(), 0);
  // The last elements, named, so a failure at the top of the range is visible.
  for (int64_t i = n - 3; i < n; ++i) EXPECT_EQ(got[i], Wrap8(Hash8(i, seed), Hash8(i, seed * 31 + 1))) << i;
}

TEST(LargeTensorGpuTest, BroadcastAddPast2To32Elements) {
  KPS_SKIP_WITHOUT_GPU();
  // [65537, 65536] + [1, 65536]: 2^32 + 2^16 outputs, a row broadcast through the
  // 64-bit offset path (which the launcher runs in its scalar walk kernel).
  const int64_t rows = 65537, cols = 65536;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  Tensor x = *HashTensor(Shape{rows, cols}, seed).To(DeviceType::kCuda);
  Tensor y = *HashTensor(Shape{1, cols}, seed + 5).To(DeviceType::kCuda);
  auto out = Call("add").Input("x", x).Input("y", y).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  Tensor host = *out->To(DeviceType::kCpu);
  const int8_t* got = host.data<int8_t>();
  std::atomic<int64_t> bad{0};
  ParallelFor(rows * cols, [&](int, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if (got[i] != Wrap8(Hash8(i, seed), Hash8(i % cols, seed + 5))) bad.fetch_add(1);
    }
  });
  EXPECT_EQ(bad.load(), 0);
  const int64_t last = rows * cols - 1;
  EXPECT_EQ(got[last], Wrap8(Hash8(last, seed), Hash8(last % cols, seed + 5)));
}

}  // namespace
}  // namespace kps
