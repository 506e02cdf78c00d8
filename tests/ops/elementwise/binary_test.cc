// add and mul on every device and dtype: edge sizes, shapes, unaligned inputs, special
// values and integer overflow, against the independent references.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "ops/ops.h"
#include "registry/call.h"
#include "tests/reference/elementwise.h"
#include "tests/support/test_support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

const DataType kDtypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64, DataType::kInt32,    DataType::kInt64};

bool Close(DataType dt, double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= testing::Tolerance(dt, want);
}

struct Case {
  const char* op;
  double alpha;  // add only
};

void CheckBinary(const Case& c, DataType dt, DeviceType dev, const Shape& shape, int64_t x_off, int64_t y_off) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << c.op << " alpha=" << c.alpha << " " << DataTypeName(dt) << " "
                                    << DeviceTypeName(dev) << " shape=" << shape.ToString()
                                    << " offsets=" << x_off << "," << y_off << " seed=" << seed);
  // Inputs start `off` elements into their buffer on the device: off > 0 misaligns them.
  auto make = [&](uint64_t s, int64_t off) {
    Tensor buffer = *testing::RandomTensor(Shape{shape.numel() + off}, dt, s).To(dev);
    return *buffer.AsStrided(shape, ContiguousStrides(shape), off);
  };
  Tensor x = make(seed, x_off);
  Tensor y = make(seed + 1, y_off);
  auto out = std::string(c.op) == "add" ? ops::Add(x, y, c.alpha) : ops::Mul(x, y);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), shape);
  EXPECT_EQ(out->dtype(), dt);
  EXPECT_EQ(out->device(), dev);
  const std::vector<double> a = ToDoubles(x), b = ToDoubles(y), got = ToDoubles(*out);
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 10; ++i) {
    const double want = std::string(c.op) == "add" ? reference::Add(dt, a[i], b[i], c.alpha)
                                                    : reference::Mul(dt, a[i], b[i]);
    if (!Close(dt, got[i], want)) {
      ++bad;
      ADD_FAILURE() << "element " << i << ": " << a[i] << " , " << b[i] << " -> " << got[i] << ", want " << want;
    }
  }
}

class BinaryOpTest : public ::testing::TestWithParam<DeviceType> {
 protected:
  void SetUp() override {
    if (GetParam() == DeviceType::kCuda) KPS_SKIP_WITHOUT_GPU();
  }
};

TEST_P(BinaryOpTest, EdgeSizesEveryDtype) {
  for (const Case& c : {Case{"add", 1.0}, Case{"add", -3.0}, Case{"mul", 0.0}}) {
    for (DataType dt : kDtypes) {
      for (int64_t n : testing::EdgeSizes()) CheckBinary(c, dt, GetParam(), Shape{n}, 0, 0);
    }
  }
}

TEST_P(BinaryOpTest, FractionalAlphaOnFloats) {
  for (DataType dt : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    CheckBinary(Case{"add", 0.37}, dt, GetParam(), Shape{4099}, 0, 0);
  }
}

TEST_P(BinaryOpTest, MultiDimensionalShapes) {
  for (DataType dt : kDtypes) {
    CheckBinary(Case{"add", 2.0}, dt, GetParam(), Shape{3, 5, 7}, 0, 0);
    CheckBinary(Case{"mul", 0.0}, dt, GetParam(), Shape{2, 1, 1, 3, 1, 257}, 0, 0);
    CheckBinary(Case{"add", 1.0}, dt, GetParam(), Shape{0, 4}, 0, 0);
    CheckBinary(Case{"mul", 0.0}, dt, GetParam(), Shape{}, 0, 0);  // a scalar
  }
}

TEST_P(BinaryOpTest, UnalignedInputsTakeTheScalarPath) {
  for (DataType dt : kDtypes) {
    for (int64_t off : {1, 3}) {
      CheckBinary(Case{"add", 1.0}, dt, GetParam(), Shape{65537}, off, 0);
      CheckBinary(Case{"mul", 0.0}, dt, GetParam(), Shape{1025}, off, 0);
    }
  }
}

TEST_P(BinaryOpTest, SpecialFloatValues) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<double> xs = {inf, -inf, nan, -0.0, 0.0, inf, 1.0, -0.0};
  const std::vector<double> ys = {-inf, -inf, 1.0, -0.0, -0.0, 0.0, nan, 0.0};
  for (DataType dt : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    SCOPED_TRACE(DataTypeName(dt));
    Tensor x, y;
    VisitDataType(dt, [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> xv, yv;
      for (size_t i = 0; i < xs.size(); ++i) {
        xv.push_back(static_cast<T>(static_cast<float>(xs[i])));
        yv.push_back(static_cast<T>(static_cast<float>(ys[i])));
      }
      x = *Tensor::FromVector(xv, Shape{static_cast<int64_t>(xv.size())});
      y = *Tensor::FromVector(yv, Shape{static_cast<int64_t>(yv.size())});
    });
    x = *x.To(GetParam());
    y = *y.To(GetParam());
    const std::vector<double> sum = ToDoubles(*ops::Add(x, y)), prod = ToDoubles(*ops::Mul(x, y));
    for (size_t i = 0; i < xs.size(); ++i) {
      const double s = xs[i] + ys[i], p = xs[i] * ys[i];
      EXPECT_TRUE(std::isnan(s) ? std::isnan(sum[i]) : sum[i] == s) << i << ": " << sum[i] << " vs " << s;
      EXPECT_TRUE(std::isnan(p) ? std::isnan(prod[i]) : prod[i] == p) << i << ": " << prod[i] << " vs " << p;
      if (s == 0.0 && !std::isnan(sum[i])) EXPECT_EQ(std::signbit(sum[i]), std::signbit(s)) << "sign of zero, " << i;
      if (p == 0.0 && !std::isnan(prod[i])) EXPECT_EQ(std::signbit(prod[i]), std::signbit(p)) << "sign of zero, " << i;
    }
  }
}

TEST_P(BinaryOpTest, IntegerOverflowWrapsTheSameOnEveryDevice) {
  const int32_t max32 = std::numeric_limits<int32_t>::max();
  Tensor x = *Tensor::FromVector<int32_t>({max32, -max32 - 1, 1 << 20, 7}, Shape{4});
  Tensor y = *Tensor::FromVector<int32_t>({1, -1, 1 << 20, -3}, Shape{4});
  x = *x.To(GetParam());
  y = *y.To(GetParam());
  EXPECT_EQ(*ops::Add(x, y)->ToVector<int32_t>(), (std::vector<int32_t>{-max32 - 1, max32, 1 << 21, 4}));
  EXPECT_EQ(*ops::Mul(x, y)->ToVector<int32_t>(), (std::vector<int32_t>{max32, -max32 - 1, 0, -21}));
  EXPECT_EQ(*ops::Add(x, y, 2.0)->ToVector<int32_t>(), (std::vector<int32_t>{-max32, max32 - 1, 3 << 20, 1}));
  const int64_t max64 = std::numeric_limits<int64_t>::max();
  Tensor a = *Tensor::FromVector<int64_t>({max64, 3}, Shape{2})->To(GetParam());
  Tensor b = *Tensor::FromVector<int64_t>({2, -5}, Shape{2})->To(GetParam());
  EXPECT_EQ(*ops::Mul(a, b)->ToVector<int64_t>(), (std::vector<int64_t>{-2, -15}));
}

TEST_P(BinaryOpTest, FractionalAlphaOnIntegersIsAnError) {
  Tensor x = *testing::RandomTensor(Shape{4}, DataType::kInt64, FreshSeed()).To(GetParam());
  auto r = ops::Add(x, x, 0.5);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("op 'add': attribute 'alpha' = 0.5 must be a whole number for int64 inputs"),
            std::string::npos) << r.status();
}

// 16-bit add (alpha 1) and mul run as packed pairs (Apply2) on the GPU; they must give
// the CPU kernels' results bit for bit.
TEST(BinaryOpGpuTest, PackedSixteenBitMathMatchesTheCpuExactly) {
  KPS_SKIP_WITHOUT_GPU();
  for (DataType dt : {DataType::kFloat16, DataType::kBFloat16}) {
    for (int64_t n : {int64_t{1}, int64_t{1023}, int64_t{65536}, int64_t{1000003}}) {
      const uint64_t seed = FreshSeed();
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " n=" << n << " seed=" << seed);
      Tensor x = testing::RandomTensor(Shape{n}, dt, seed), y = testing::RandomTensor(Shape{n}, dt, seed + 1);
      Tensor xg = *x.To(DeviceType::kCuda), yg = *y.To(DeviceType::kCuda);
      EXPECT_EQ(ToDoubles(*ops::Add(xg, yg)), ToDoubles(*ops::Add(x, y)));
      EXPECT_EQ(ToDoubles(*ops::Mul(xg, yg)), ToDoubles(*ops::Mul(x, y)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, BinaryOpTest, ::testing::Values(DeviceType::kCpu, DeviceType::kCuda),
                         [](const auto& info) { return std::string(DeviceTypeName(info.param)); });

}  // namespace
}  // namespace kps
