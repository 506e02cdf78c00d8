// cumsum over more than 2^31 elements on the GPU (64-bit indexing of the scan, and int64
// accumulation past the int32 range): an int8 tensor of 2^31 + 77 elements holding
// x[i] = i mod 127, whose prefix sums have a closed form, scanned inclusive forward and
// exclusive reverse. A sample of positions (the first, the period edges, around 2^31,
// the last, and random ones) is read back and compared exactly. Device memory: 2 GiB of
// input + 16 GiB of int64 output (one output at a time).
//
// These are slow under compute-sanitizer; run the sanitizer with
// --gtest_filter=-LargeTensor*.
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ops/scan/scan_check.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::scan_test::RunScan;
using ::kps::scan_test::ScanAttrs;

constexpr int64_t kPeriod = 127;

// sum of x[0..m-1] for x[i] = i mod 127.
int64_t PrefixOfCount(int64_t m) {
  const int64_t q = m / kPeriod, r = m % kPeriod;
  return q * (kPeriod * (kPeriod - 1) / 2) + r * (r - 1) / 2;
}

int64_t ElementAt(const Tensor& t, int64_t i) {
  auto one = t.Slice(0, i, i + 1);
  EXPECT_TRUE(one.ok()) << one.status();
  if (!one.ok()) return -12345;
  auto v = one->ToVector<int64_t>();
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? (*v)[0] : -12345;
}

TEST(LargeTensorScanGpuTest, Int8CumsumPast2To31Elements) {
  KPS_SKIP_WITHOUT_GPU();
  const int64_t n = (int64_t{1} << 31) + 77;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Tensor host = *Tensor::Empty(Shape{n}, DataType::kInt8, DeviceType::kCpu);
  int8_t* p = host.data<int8_t>();
  {
    const int threads = 16;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      const int64_t b = n * t / threads, e = n * (t + 1) / threads;
      pool.emplace_back([=] {
        for (int64_t i = b; i < e; ++i) p[i] = static_cast<int8_t>(i % kPeriod);
      });
    }
    for (auto& th : pool) th.join();
  }
  const Tensor x = *host.To(DeviceType::kCuda);
  host = Tensor();

  std::vector<int64_t> positions = {0, 1, 2, 126, 127, 128, 253, 254, 1000003, (int64_t{1} << 31) - 129,
                                    (int64_t{1} << 31) - 1, int64_t{1} << 31, (int64_t{1} << 31) + 1, n - 2, n - 1};
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> pos(0, n - 1);
  for (int k = 0; k < 40; ++k) positions.push_back(pos(gen));
  const int64_t total = PrefixOfCount(n);
  ASSERT_GT(total, int64_t{1} << 32);  // far past the int32 range

  {
    auto out = RunScan("cumsum", x, 0);
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& s = (*out)[0];
    ASSERT_EQ(s.dtype(), DataType::kInt64);
    ASSERT_EQ(s.shape(), Shape{n});
    for (int64_t i : positions) EXPECT_EQ(ElementAt(s, i), PrefixOfCount(i + 1)) << "inclusive, position " << i;
  }
  {
    ScanAttrs er;
    er.exclusive = er.reverse = true;
    auto out = RunScan("cumsum", x, -1, er);
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& s = (*out)[0];
    for (int64_t i : positions)
      EXPECT_EQ(ElementAt(s, i), total - PrefixOfCount(i + 1)) << "exclusive reverse, position " << i;
  }
}

}  // namespace
}  // namespace kps
