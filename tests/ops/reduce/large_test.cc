// Reductions over more than 2^31 elements on the GPU (64-bit indexing of the input, of
// the argmax/argmin index, and of rows longer than 2^30): an int8 tensor of 2^31 + 77
// elements (a seeded hash of the index, fresh per run, with planted extremes near the
// end), summed, maxed and argmaxed over everything; its first 2^31 + 6 elements viewed
// as [2, 2^30 + 3] (rows) and [2^30 + 3, 2] (columns) and summed; and a float16
// [2, 2^30 + 3] of sparse +-1 values summed over its rows. Every expectation is
// computed exactly on the host, in parallel. Device memory: 2 GiB + 4 GiB.
//
// These are slow under compute-sanitizer; tools/gpu_check.sh runs the sanitizer with
// --gtest_filter=-LargeTensor*.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ops/reduce/reduce_check.h"
#include "testing/support.h"
#include "tests/support/parallel_for.h"

namespace kps {
namespace {

using ::kps::test_support::ParallelFor;
using ::kps::test_support::kTestThreads;
using ::kps::testing::FreshSeed;
using ::kps::reduce_test::RunReduce;

// sum of value(i) over i in [0, n) with step `step` from `start`, exactly.
template <typename Value>
int64_t ParallelSum(int64_t start, int64_t end, int64_t step, Value value) {
  const int64_t count = (end - start + step - 1) / step;
  std::vector<int64_t> part(kTestThreads, 0);
  ParallelFor(count, [&](int t, int64_t b, int64_t e) {
    int64_t s = 0;
    for (int64_t k = b; k < e; ++k) s += value(start + k * step);
    part[t] = s;
  });
  int64_t s = 0;
  for (int64_t p : part) s += p;
  return s;
}

// A hash of the index in [-127, 126]: 127 and -128 are left for the planted extremes.
int8_t Hash8(uint64_t i, uint64_t seed) {
  const int v = static_cast<int8_t>(((i + seed) * 0x9E3779B97F4A7C15ull) >> 56);
  return static_cast<int8_t>(std::clamp(v, -127, 126));
}

int64_t First64(const absl::StatusOr<Tensor>& t, int64_t i = 0) {
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return -12345;
  EXPECT_EQ(t->dtype(), DataType::kInt64);
  return (*t->ToVector<int64_t>())[i];
}

TEST(LargeTensorReduceGpuTest, Int8Past2To31Elements) {
  KPS_SKIP_WITHOUT_GPU();
  const int64_t n = (int64_t{1} << 31) + 77;
  const int64_t m = (int64_t{1} << 30) + 3;  // the [2, m] and [m, 2] views: 2^31 + 6 elements
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Tensor host = *Tensor::Empty(Shape{n}, DataType::kInt8, DeviceType::kCpu);
  int8_t* p = host.data<int8_t>();
  ParallelFor(n, [&](int, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = Hash8(static_cast<uint64_t>(i), seed);
  });
  const int64_t max_at = 2 * m - 1;  // the last element of row 1 of the [2, m] view
  const int64_t max_again = n - 3;   // a tie, later
  const int64_t min_at = n - 2;
  p[max_at] = 127;
  p[max_again] = 127;
  p[min_at] = -128;
  const Tensor x = *host.To(DeviceType::kCuda);
  auto value = [p](int64_t i) { return static_cast<int64_t>(p[i]); };

  // Everything.
  EXPECT_EQ(First64(RunReduce("sum", x, {}, false)), ParallelSum(0, n, 1, value));
  EXPECT_EQ(First64(RunReduce("argmax", x, {}, false)), max_at);
  EXPECT_EQ(First64(RunReduce("argmin", x, {0}, false)), min_at);
  {
    auto mx = RunReduce("max", x, {}, false), mn = RunReduce("min", x, {}, true);
    ASSERT_TRUE(mx.ok() && mn.ok());
    EXPECT_EQ(*mx->ToVector<int8_t>(), std::vector<int8_t>{127});
    EXPECT_EQ(*mn->ToVector<int8_t>(), std::vector<int8_t>{-128});
  }
  // Two rows of 2^30 + 3.
  const Tensor rows = *x.AsStrided(Shape{2, m}, std::vector<int64_t>{m, 1}, 0);
  {
    auto s = RunReduce("sum", rows, {1}, false);
    EXPECT_EQ(First64(s, 0), ParallelSum(0, m, 1, value));
    EXPECT_EQ(First64(s, 1), ParallelSum(m, 2 * m, 1, value));
    auto a = RunReduce("argmax", rows, {-1}, true);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->shape(), (Shape{2, 1}));
    EXPECT_EQ(First64(a, 1), m - 1);
  }
  // Two columns of 2^30 + 3 (a column reduction over 2^31 + 6 elements).
  const Tensor cols = *x.AsStrided(Shape{m, 2}, std::vector<int64_t>{2, 1}, 0);
  {
    auto s = RunReduce("sum", cols, {0}, false);
    EXPECT_EQ(First64(s, 0), ParallelSum(0, 2 * m, 2, value));
    EXPECT_EQ(First64(s, 1), ParallelSum(1, 2 * m, 2, value));
  }
}

TEST(LargeTensorReduceGpuTest, Float16RowsOf2To30Elements) {
  KPS_SKIP_WITHOUT_GPU();
  // Sparse +-1 values (1 in 16 nonzero): every partial sum is a small integer, exact in
  // the float accumulator (a random walk of ~2^26 steps stays far below 2^24), so each
  // row's result is the exact sum rounded once to float16.
  const int64_t m = (int64_t{1} << 30) + 3;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  auto value = [seed](int64_t i) -> int64_t {
    const uint64_t h = ((static_cast<uint64_t>(i) + seed) * 0x9E3779B97F4A7C15ull) >> 59;  // 5 bits
    return h == 0 ? 1 : h == 1 ? -1 : 0;
  };
  Tensor host = *Tensor::Empty(Shape{2, m}, DataType::kFloat16, DeviceType::kCpu);
  float16* p = host.data<float16>();
  const float16 one = static_cast<float16>(1.0f), minus_one = static_cast<float16>(-1.0f), zero = static_cast<float16>(0.0f);
  ParallelFor(2 * m, [&](int, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t v = value(i);
      p[i] = v == 1 ? one : v == -1 ? minus_one : zero;
    }
  });
  const Tensor x = *host.To(DeviceType::kCuda);
  auto out = RunReduce("sum", x, {1}, false);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->shape(), Shape{2});
  ASSERT_EQ(out->dtype(), DataType::kFloat16);
  const std::vector<double> got = testing::ToDoubles(*out);
  for (int r = 0; r < 2; ++r) {
    const int64_t want = ParallelSum(r * m, (r + 1) * m, 1, value);
    EXPECT_EQ(got[r], testing::RoundTo(DataType::kFloat16, static_cast<double>(want))) << "row " << r << ", exact sum "
                                                                                       << want;
  }
}

}  // namespace
}  // namespace kps
