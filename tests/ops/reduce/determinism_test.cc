// Determinism: the same input on the same device gives bitwise the same output every
// run (10 runs of [4096, 4097] on CUDA, where the block and grid trees combine partial
// results; 3 runs of a smaller input on the CPU), for sums over rows, columns and
// everything in float32, float16, bfloat16 and float64, and for mean, var, std,
// logsumexp, prod and argmax. The first run is also checked against the reference.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ops/reduce/reduce_check.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using namespace ::kps::reduce_test;

class ReduceDeterminismTest : public ::kps::testing::PerDeviceTest {};

TEST_P(ReduceDeterminismTest, SameInputGivesTheSameBits) {
  const bool cuda = GetParam() == DeviceType::kCuda;
  const Shape shape = cuda ? Shape{4096, 4097} : Shape{515, 1031};
  const int runs = cuda ? 10 : 3;
  struct Case {
    std::string op;
    DataType dt;
    std::vector<std::vector<int64_t>> dims;
  };
  const std::vector<Case> cases = {
      {"sum", DataType::kFloat32, {{1}, {0}, {}}},
      {"sum", DataType::kFloat16, {{1}, {0}, {}}},
      {"sum", DataType::kBFloat16, {{}}},
      {"sum", DataType::kFloat64, {{}, {0}}},
      {"mean", DataType::kFloat32, {{}}},
      {"var", DataType::kFloat32, {{1}, {0}, {}}},
      {"var", DataType::kFloat16, {{}}},
      {"std", DataType::kFloat16, {{}}},
      {"logsumexp", DataType::kFloat32, {{1}, {}}},
      {"prod", DataType::kFloat32, {{}}},
      {"argmax", DataType::kFloat32, {{}}},
  };
  for (const Case& c : cases) {
    const uint64_t seed = FreshSeed();
    const ReduceInput in = MakeInput(shape, c.dt, GetParam(), DataFor(c.op, Data::kRandom), seed);
    for (const auto& dims : c.dims) {
      SCOPED_TRACE(::testing::Message() << c.op << " " << DataTypeName(c.dt) << " " << shape.ToString()
                                        << " dims=" << DimsText(dims) << " seed=" << seed);
      CheckReduce(c.op, in, dims, false);
      auto first = RunReduce(c.op, in.x, dims, false);
      ASSERT_TRUE(first.ok()) << first.status();
      const std::vector<uint8_t> want = HostBytes(*first);
      for (int run = 1; run < runs; ++run) {
        auto again = RunReduce(c.op, in.x, dims, false);
        ASSERT_TRUE(again.ok()) << again.status();
        const std::vector<uint8_t> got = HostBytes(*again);
        ASSERT_EQ(got.size(), want.size());
        int64_t differ = 0, first_diff = -1;
        for (size_t i = 0; i < got.size(); ++i) {
          if (got[i] != want[i]) {
            if (differ++ == 0) first_diff = static_cast<int64_t>(i);
          }
        }
        EXPECT_EQ(differ, 0) << "run " << run << ": " << differ << " bytes differ from run 0, the first at byte "
                             << first_diff;
      }
    }
  }
}

KPS_INSTANTIATE_ON_DEVICES(ReduceDeterminismTest);

}  // namespace
}  // namespace kps
