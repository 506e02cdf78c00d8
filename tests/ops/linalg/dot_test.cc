// dot on every device and its four dtypes: lengths 0, 1, primes, 2^k +- 1, around the
// vector, block and grid sizes, misaligned (each input on its own) and strided inputs,
// against a long-double reference with a tolerance from the sum of |x[i] y[i]|; exact-sum
// inputs must match exactly; runs are bitwise reproducible; bad arguments are errors
// naming the op and the argument.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/ops/check_util.h"
#include "tests/reference/dot.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::op_check::AllClose;
using ::kps::op_check::Layout;
using ::kps::op_check::LayoutName;
using ::kps::op_check::Place;
using ::kps::op_check::RandomValues;
using ::kps::testing::Contains;
using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

const std::vector<DataType> kTypes = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                      DataType::kFloat64};

class DotTest : public ::kps::testing::PerDeviceTest {};

absl::StatusOr<Tensor> RunDot(const Tensor& x, const Tensor& y) {
  return Call("dot").Input("x", x).Input("y", y).RunOne();
}

// Small integers (exact products and sums in float up to 2^24), or random values.
std::vector<double> Values(int64_t n, DataType dt, uint64_t seed, bool exact) {
  if (!exact) return RandomValues(n, dt, seed);
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> d(-3, 3);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(gen);
  return v;
}

double CheckDot(DeviceType dev, DataType dt, int64_t n, Layout lx, Layout ly, bool exact) {
  SCOPED_TRACE(std::string(DataTypeName(dt)) + " n " + std::to_string(n) + " x " + LayoutName(lx) + " y " +
               LayoutName(ly) + (exact ? " exact" : ""));
  const uint64_t seed = FreshSeed();
  const std::vector<double> xv = Values(n, dt, seed, exact), yv = Values(n, dt, seed + 1, exact);
  auto out = RunDot(Place(xv, Shape{n}, dt, dev, lx), Place(yv, Shape{n}, dt, dev, ly));
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return 0;
  EXPECT_EQ(out->shape(), Shape{});
  EXPECT_EQ(out->dtype(), dt);
  const reference::DotResult want = reference::Dot(xv, yv);
  const double got = ToDoubles(*out)[0];
  double tol = 0;
  double expect = testing::RoundTo(dt, want.value);
  if (!exact || std::fabs(want.magnitude) >= 0x1p24) {
    // Any summation order in the accumulator: |error| <= (log2-ish depth) eps sum |x y|;
    // the bound n eps is loose but order-free, and tight enough to catch a lost element.
    const double depth = std::min<double>(static_cast<double>(n), 64.0 + std::sqrt(static_cast<double>(n)));
    tol = testing::Tolerance(dt, want.value) + depth * op_check::AccEps(dt) * want.magnitude;
    expect = want.value;
  }
  EXPECT_TRUE(AllClose({got}, {expect}, {tol}));
  return got;
}

TEST_P(DotTest, EdgeLengthsEveryDtype) {
  std::vector<int64_t> sizes = testing::EdgeSizes();
  for (int64_t n : {2, 4, 5, 8, 9, 15, 16, 17, 24, 2047, 2048, 2049, 8191, 8192, 8193, 262143, 262145})
    sizes.push_back(n);
  for (DataType dt : kTypes) {
    for (int64_t n : sizes) {
      CheckDot(GetParam(), dt, n, Layout::kContiguous, Layout::kContiguous, false);
      CheckDot(GetParam(), dt, n, Layout::kContiguous, Layout::kContiguous, true);
      if (HasFailure()) return;
    }
  }
}

TEST_P(DotTest, MisalignedAndStridedInputs) {
  for (DataType dt : kTypes) {
    for (int64_t n : {1, 7, 8, 33, 1000, 65537}) {
      CheckDot(GetParam(), dt, n, Layout::kOffset, Layout::kContiguous, true);
      CheckDot(GetParam(), dt, n, Layout::kContiguous, Layout::kOffset, false);
      CheckDot(GetParam(), dt, n, Layout::kOffset, Layout::kOffset, false);
      CheckDot(GetParam(), dt, n, Layout::kStrided, Layout::kContiguous, true);
      CheckDot(GetParam(), dt, n, Layout::kStrided, Layout::kStrided, false);
    }
  }
}

TEST_P(DotTest, LongInputs) {
  // Many blocks, several grid strides per thread, a partial last round.
  for (DataType dt : kTypes) {
    CheckDot(GetParam(), dt, 5000011, Layout::kContiguous, Layout::kContiguous, false);
    CheckDot(GetParam(), dt, (1 << 22) + 3, Layout::kContiguous, Layout::kContiguous, true);
  }
}

TEST_P(DotTest, DeterministicRunToRun) {
  for (DataType dt : kTypes) {
    for (int64_t n : {int64_t{1000003}, int64_t{1} << 20}) {
      SCOPED_TRACE(std::string(DataTypeName(dt)) + " n " + std::to_string(n));
      const uint64_t seed = FreshSeed();
      const Tensor x = Place(RandomValues(n, dt, seed), Shape{n}, dt, GetParam(), Layout::kContiguous);
      const Tensor y = Place(RandomValues(n, dt, seed + 1), Shape{n}, dt, GetParam(), Layout::kContiguous);
      double first = 0;
      for (int run = 0; run < 10; ++run) {
        auto out = RunDot(x, y);
        ASSERT_TRUE(out.ok()) << out.status();
        const double got = ToDoubles(*out)[0];
        if (run == 0) {
          first = got;
        } else {
          EXPECT_EQ(std::memcmp(&got, &first, sizeof(double)), 0) << "run " << run << ": " << got << " vs " << first;
        }
      }
    }
  }
}

TEST_P(DotTest, NanAndInfinityPropagate) {
  for (DataType dt : kTypes) {
    std::vector<double> x(100, 1.0), y(100, 2.0);
    x[37] = std::nan("");
    auto out = RunDot(Place(x, Shape{100}, dt, GetParam(), Layout::kContiguous),
                      Place(y, Shape{100}, dt, GetParam(), Layout::kContiguous));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(std::isnan(ToDoubles(*out)[0]));
    x[37] = INFINITY;
    out = RunDot(Place(x, Shape{100}, dt, GetParam(), Layout::kContiguous),
                 Place(y, Shape{100}, dt, GetParam(), Layout::kContiguous));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(ToDoubles(*out)[0], INFINITY);
  }
}

TEST_P(DotTest, BadArgumentsNameTheOpAndArgument) {
  const DeviceType dev = GetParam();
  auto t = [&](const Shape& s, DataType dt) {
    return Place(RandomValues(s.numel(), dt, 3), s, dt, dev, Layout::kContiguous);
  };
  struct Bad {
    Tensor x, y;
    std::string want;
  };
  const std::vector<Bad> cases = {
      {t(Shape{2, 3}, DataType::kFloat32), t(Shape{6}, DataType::kFloat32), "input 'x' has rank 2"},
      {t(Shape{6}, DataType::kFloat32), t(Shape{}, DataType::kFloat32), "input 'y' has rank 0"},
      {t(Shape{6}, DataType::kFloat32), t(Shape{6}, DataType::kFloat16), "input 'y' has dtype float16"},
      {t(Shape{6}, DataType::kFloat32), t(Shape{5}, DataType::kFloat32), "input 'y' has 5 elements"},
      {t(Shape{6}, DataType::kInt32), t(Shape{6}, DataType::kInt32), "input 'x' has dtype int32"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.want);
    auto r = RunDot(b.x, b.y);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Contains(std::string(r.status().message()), "op 'dot'"));
    EXPECT_TRUE(Contains(std::string(r.status().message()), b.want));
  }
}

KPS_INSTANTIATE_ON_DEVICES(DotTest);

}  // namespace
}  // namespace kps
