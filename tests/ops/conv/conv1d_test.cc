// conv1d on every device and its four dtypes, in the three modes: odd, even and length-1
// filters, filters longer than the signal, empty inputs, signals long enough for the tiled
// CUDA kernel (and filters too long for its constant memory, which take the direct
// kernel), misaligned and strided inputs, against a direct double-precision sum
// (tests/reference/conv1d.h, numpy.convolve's definition); exact-sum inputs must match
// exactly; bad arguments are errors naming the op and the argument.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/ops/check_util.h"
#include "tests/reference/conv1d.h"
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
const std::vector<std::string> kModes = {"full", "same", "valid"};

class Conv1dTest : public ::kps::testing::PerDeviceTest {};

absl::StatusOr<Tensor> RunConv(const Tensor& x, const Tensor& w, const std::string& mode) {
  return Call("conv1d").Input("x", x).Input("w", w).Attr("mode", mode).RunOne();
}

std::vector<double> Values(int64_t n, DataType dt, uint64_t seed, bool exact) {
  if (!exact) return RandomValues(n, dt, seed);
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> d(-3, 3);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(gen);
  return v;
}

void CheckConv(DeviceType dev, DataType dt, int64_t n, int64_t m, const std::string& mode, bool exact,
               Layout lx = Layout::kContiguous, Layout lw = Layout::kContiguous) {
  SCOPED_TRACE(std::string(DataTypeName(dt)) + " n " + std::to_string(n) + " m " + std::to_string(m) + " " + mode +
               (exact ? " exact" : "") + " x " + LayoutName(lx) + " w " + LayoutName(lw));
  const uint64_t seed = FreshSeed();
  const std::vector<double> xv = Values(n, dt, seed, exact), wv = Values(m, dt, seed + 1, exact);
  auto out = RunConv(Place(xv, Shape{n}, dt, dev, lx), Place(wv, Shape{m}, dt, dev, lw), mode);
  ASSERT_TRUE(out.ok()) << out.status();
  const reference::Conv1dResult want = reference::Conv1d(xv, wv, mode);
  ASSERT_EQ(out->shape(), Shape{static_cast<int64_t>(want.value.size())});
  EXPECT_EQ(out->dtype(), dt);
  std::vector<double> expect(want.value.size()), tol(want.value.size(), 0.0);
  const double terms = static_cast<double>(std::min(n, m));
  for (size_t i = 0; i < expect.size(); ++i) {
    // Exact inputs: every product and partial sum is an integer below 2^24 (|sum| <= 9 m).
    if (exact && 9 * terms < 0x1p24) {
      expect[i] = testing::RoundTo(dt, want.value[i]);
    } else {
      expect[i] = want.value[i];
      tol[i] = testing::Tolerance(dt, want.value[i]) + (terms + 1) * op_check::AccEps(dt) * want.magnitude[i];
    }
  }
  EXPECT_TRUE(AllClose(ToDoubles(*out), expect, tol));
}

TEST_P(Conv1dTest, OddEvenAndLengthOneFiltersEveryMode) {
  for (DataType dt : kTypes) {
    for (const std::string& mode : kModes) {
      for (int64_t n : {1, 2, 3, 10, 31, 100}) {
        for (int64_t m : {1, 2, 3, 4, 5, 8, 16, 17, 33}) {
          CheckConv(GetParam(), dt, n, m, mode, false);
          CheckConv(GetParam(), dt, n, m, mode, true);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// Long enough outputs for the tiled CUDA kernel (filters up to 256 taps), with every
// remainder of 16 taps, and longer filters (the direct kernel).
TEST_P(Conv1dTest, LongSignals) {
  for (DataType dt : kTypes) {
    for (const std::string& mode : kModes) {
      for (int64_t m : {1, 2, 4, 15, 16, 17, 64, 127, 128, 255, 256, 257, 700}) {
        CheckConv(GetParam(), dt, 5003, m, mode, true);
        if (HasFatalFailure()) return;
      }
      CheckConv(GetParam(), dt, 70001, 127, mode, false);
      CheckConv(GetParam(), dt, 4096, 4096, mode, false);
      CheckConv(GetParam(), dt, 127, 20000, mode, true);  // the filter longer than the signal
    }
  }
}

TEST_P(Conv1dTest, MisalignedAndStridedInputs) {
  for (DataType dt : kTypes) {
    for (const std::string& mode : kModes) {
      CheckConv(GetParam(), dt, 3001, 9, mode, true, Layout::kOffset, Layout::kStrided);
      CheckConv(GetParam(), dt, 257, 6, mode, false, Layout::kStrided, Layout::kOffset);
      CheckConv(GetParam(), dt, 9000, 300, mode, true, Layout::kStrided, Layout::kStrided);
    }
  }
}

TEST_P(Conv1dTest, EmptyInputsGiveEmptyOutputs) {
  for (const std::string& mode : kModes) {
    CheckConv(GetParam(), DataType::kFloat32, 0, 5, mode, false);
    CheckConv(GetParam(), DataType::kFloat32, 5, 0, mode, false);
    CheckConv(GetParam(), DataType::kFloat64, 0, 0, mode, false);
  }
}

TEST_P(Conv1dTest, DefaultModeIsFull) {
  const std::vector<double> x = {1, 2, 3}, w = {0, 1, 0.5};
  auto out = Call("conv1d")
                 .Input("x", Place(x, Shape{3}, DataType::kFloat32, GetParam(), Layout::kContiguous))
                 .Input("w", Place(w, Shape{3}, DataType::kFloat32, GetParam(), Layout::kContiguous))
                 .RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToDoubles(*out), (std::vector<double>{0, 1, 2.5, 4, 1.5}));  // numpy.convolve's documented example
  auto same = RunConv(Place(x, Shape{3}, DataType::kFloat32, GetParam(), Layout::kContiguous),
                      Place(w, Shape{3}, DataType::kFloat32, GetParam(), Layout::kContiguous), "same");
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(ToDoubles(*same), (std::vector<double>{1, 2.5, 4}));
  auto valid = RunConv(Place(x, Shape{3}, DataType::kFloat32, GetParam(), Layout::kContiguous),
                       Place(w, Shape{3}, DataType::kFloat32, GetParam(), Layout::kContiguous), "valid");
  ASSERT_TRUE(valid.ok()) << valid.status();
  EXPECT_EQ(ToDoubles(*valid), (std::vector<double>{2.5}));
  // An even filter: "same" keeps the leading part (numpy: [1, 3, 5, 7]).
  auto even = RunConv(Place({1, 2, 3, 4}, Shape{4}, DataType::kFloat32, GetParam(), Layout::kContiguous),
                      Place({1, 1}, Shape{2}, DataType::kFloat32, GetParam(), Layout::kContiguous), "same");
  ASSERT_TRUE(even.ok()) << even.status();
  EXPECT_EQ(ToDoubles(*even), (std::vector<double>{1, 3, 5, 7}));
}

TEST_P(Conv1dTest, BadArgumentsNameTheOpAndArgument) {
  const DeviceType dev = GetParam();
  auto t = [&](const Shape& s, DataType dt) {
    return Place(RandomValues(s.numel(), dt, 3), s, dt, dev, Layout::kContiguous);
  };
  struct Bad {
    Tensor x, w;
    std::string mode, want;
  };
  const std::vector<Bad> cases = {
      {t(Shape{2, 3}, DataType::kFloat32), t(Shape{3}, DataType::kFloat32), "full", "input 'x' has rank 2"},
      {t(Shape{6}, DataType::kFloat32), t(Shape{}, DataType::kFloat32), "full", "input 'w' has rank 0"},
      {t(Shape{6}, DataType::kFloat32), t(Shape{3}, DataType::kFloat64), "full", "input 'w' has dtype float64"},
      {t(Shape{6}, DataType::kInt32), t(Shape{3}, DataType::kInt32), "full", "input 'x' has dtype int32"},
      {t(Shape{6}, DataType::kFloat32), t(Shape{3}, DataType::kFloat32), "circular", "attribute 'mode'"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.want);
    auto r = RunConv(b.x, b.w, b.mode);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Contains(std::string(r.status().message()), "op 'conv1d'"));
    EXPECT_TRUE(Contains(std::string(r.status().message()), b.want));
  }
}

KPS_INSTANTIATE_ON_DEVICES(Conv1dTest);

}  // namespace
}  // namespace kps
