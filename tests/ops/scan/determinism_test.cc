// Determinism: the same input on the same device gives bitwise the same output every run
// (5 runs of cumsum float32 of [1 << 22] and of [4096, 1025] along each dim on CUDA; 3
// runs of smaller inputs on the CPU). The first run is also checked against the reference.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ops/scan/scan_check.h"
#include "tests/support/test_support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using namespace ::kps::scan_test;

class ScanDeterminismTest : public ::kps::testing::PerDeviceTest {};

TEST_P(ScanDeterminismTest, SameInputGivesTheSameBits) {
  const bool cuda = GetParam() == DeviceType::kCuda;
  const int runs = cuda ? 5 : 3;
  struct Case {
    Shape shape;
    std::vector<int64_t> dims;
    ScanAttrs attrs;
  };
  ScanAttrs er;
  er.exclusive = er.reverse = true;
  const std::vector<Case> cases = {
      {cuda ? Shape{int64_t{1} << 22} : Shape{(int64_t{1} << 18) + 3}, {0}, {}},
      {cuda ? Shape{4096, 1025} : Shape{515, 1031}, {0, 1}, {}},
      {cuda ? Shape{4096, 1025} : Shape{515, 1031}, {1}, er},
  };
  for (const Case& c : cases) {
    const uint64_t seed = FreshSeed();
    const ScanInput in = MakeInput(c.shape, DataType::kFloat32, GetParam(), Data::kRandom, seed);
    for (int64_t dim : c.dims) {
      SCOPED_TRACE(::testing::Message() << "cumsum float32 " << c.shape.ToString() << " " << AttrsText(dim, c.attrs)
                                        << " seed=" << seed);
      CheckScan("cumsum", in, dim, c.attrs);
      auto first = RunScan("cumsum", in.x, dim, c.attrs);
      ASSERT_TRUE(first.ok()) << first.status();
      const std::vector<uint8_t> want = HostBytes((*first)[0]);
      for (int run = 1; run < runs; ++run) {
        auto again = RunScan("cumsum", in.x, dim, c.attrs);
        ASSERT_TRUE(again.ok()) << again.status();
        const std::vector<uint8_t> got = HostBytes((*again)[0]);
        ASSERT_EQ(got.size(), want.size());
        int64_t differ = 0, first_diff = -1;
        for (size_t i = 0; i < got.size(); ++i) {
          if (got[i] != want[i] && differ++ == 0) first_diff = static_cast<int64_t>(i);
        }
        EXPECT_EQ(differ, 0) << "run " << run << ": " << differ << " bytes differ from run 0, the first at byte "
                             << first_diff;
      }
    }
  }
}

KPS_INSTANTIATE_ON_DEVICES(ScanDeterminismTest);

// The single-pass decoupled look-back (on CUDA only with KPS_SCAN_LOOKBACK=1; the
// default for long rows is three passes): exact on grid values, right on random ones in
// both directions, and bitwise reproducible.
TEST_P(ScanDeterminismTest, LookbackPathWhenRequested) {
  {  // the default three-pass path on the same shapes, for comparison
    const ScanInput random = MakeInput(Shape{3, 100003}, DataType::kFloat32, GetParam(), Data::kRandom, FreshSeed());
    ScanAttrs er;
    er.exclusive = er.reverse = true;
    for (const char* op : {"cumsum", "cummax", "logcumsumexp"}) EXPECT_TRUE(CheckScan(op, random, 1, er)) << op;
  }
  ASSERT_EQ(setenv("KPS_SCAN_LOOKBACK", "1", 1), 0);
  const ScanInput grid = MakeInput(Shape{(int64_t{1} << 20) + 7}, DataType::kFloat32, GetParam(), Data::kGrid,
                                   FreshSeed());
  ScanAttrs er;
  er.exclusive = er.reverse = true;
  EXPECT_TRUE(CheckScan("cumsum", grid, 0));
  EXPECT_TRUE(CheckScan("cumsum", grid, 0, er));
  const ScanInput random = MakeInput(Shape{3, 100003}, DataType::kFloat32, GetParam(), Data::kRandom, FreshSeed());
  for (const char* op : {"cumsum", "cummax", "logcumsumexp"}) EXPECT_TRUE(CheckScan(op, random, 1, er)) << op;
  auto first = RunScan("cumsum", random.x, 1, {});
  ASSERT_TRUE(first.ok()) << first.status();
  for (int run = 0; run < 3; ++run) {
    auto again = RunScan("cumsum", random.x, 1, {});
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(HostBytes((*again)[0]), HostBytes((*first)[0])) << "run " << run;
  }
  ASSERT_EQ(unsetenv("KPS_SCAN_LOOKBACK"), 0);
}

}  // namespace
}  // namespace kps
