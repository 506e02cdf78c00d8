// Determinism: the same input on the same device gives bitwise the same output every run
// (5 runs of cumsum float32 of [1 << 22] and of [4096, 1025] along each dim on CUDA; 3
// runs of smaller inputs on the CPU). The first run is also checked against the reference.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ops/scan/scan_check.h"
#include "testing/support.h"

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

// The single-pass look-back (CUDA, rows too few to fill the GPU and at least 8 tiles
// long) on every kind of state it publishes, with 1 to 3 levels of its fixed grouping:
// exact on grid and integer inputs, right on random ones with every exclusive/reverse
// combination, aligned (vector loads) and one element off (scalar), several rows at once,
// and bitwise reproducible. On the CPU the same checks run the host loop.
TEST_P(ScanDeterminismTest, LookbackLevelsAndStates) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  ScanAttrs er;
  er.exclusive = er.reverse = true;
  // float sums (4-byte states, one 64-bit word each): 2048-element tiles, 513 of them
  // (2 levels), and exactly 2^20 elements (every tile full: vector loads throughout).
  for (int64_t n : {(int64_t{1} << 20) + 7, int64_t{1} << 20}) {
    const ScanInput grid = MakeInput(Shape{n}, DataType::kFloat32, GetParam(), Data::kGrid, seed);
    for (const ScanAttrs& a : AllFlags()) EXPECT_TRUE(CheckScan("cumsum", grid, 0, a)) << n;
  }
  // int32 sums accumulate in int64 (8-byte states behind a flag): 1024-element tiles,
  // 4097 of them (3 levels), aligned and one element into the buffer.
  for (int64_t offset : {0, 1}) {
    const ScanInput ints =
        MakeInput(Shape{(int64_t{1} << 22) + 3}, DataType::kInt32, GetParam(), Data::kRandom, seed + 1, offset);
    EXPECT_TRUE(CheckScan("cumsum", ints, 0)) << "offset " << offset;
    EXPECT_TRUE(CheckScan("cumsum", ints, 0, er)) << "offset " << offset;
  }
  // Three rows at once, every op (cummax: 16-byte value-and-index states; discounted
  // sums: a combine that does not commute), every flag combination.
  const ScanInput random = MakeInput(Shape{3, 100003}, DataType::kFloat32, GetParam(), Data::kRandom, seed + 2);
  const ScanInput near_one = MakeInput(Shape{3, 100003}, DataType::kFloat32, GetParam(), Data::kNearOne, seed + 3);
  for (const std::string& op : AllOps()) {
    for (const ScanAttrs& a : AllFlags()) EXPECT_TRUE(CheckScan(op, InputFor(op, random, near_one), 1, a)) << op;
  }
  for (const char* op : {"cumsum", "logcumsumexp", "discounted_cumsum"}) {
    ScanAttrs a;
    if (std::string(op) == "discounted_cumsum") a.gamma = 0.9;
    auto first = RunScan(op, random.x, 1, a);
    ASSERT_TRUE(first.ok()) << first.status();
    for (int run = 0; run < 3; ++run) {
      auto again = RunScan(op, random.x, 1, a);
      ASSERT_TRUE(again.ok()) << again.status();
      EXPECT_EQ(HostBytes((*again)[0]), HostBytes((*first)[0])) << op << " run " << run;
    }
  }
}

}  // namespace
}  // namespace kps
