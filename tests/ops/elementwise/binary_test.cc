// add and mul on every device and dtype: edge sizes, shapes, unaligned inputs, special
// values and integer overflow, against the independent references.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "ops/ops.h"
#include "registry/call.h"
#include "testing/support.h"
#include "tests/reference/elementwise.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

const DataType kDtypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64, DataType::kInt8,     DataType::kUInt8,
                            DataType::kInt16,   DataType::kInt32,    DataType::kInt64};

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
                                    << DeviceTypeName(dev) << " shape=" << shape.ToString() << " offsets=" << x_off
                                    << "," << y_off << " seed=" << seed);
  // Inputs start `off` elements into their buffer on the device: off > 0 misaligns them.
  auto make = [&](uint64_t s, int64_t off) {
    Tensor buffer = *testing::RandomTensor(Shape{shape.numel() + off}, dt, s).To(dev);
    return *buffer.AsStrided(shape, ContiguousStrides(shape), off);
  };
  Tensor x = make(seed, x_off);
  Tensor y = make(seed + 1, y_off);
  const std::string op = c.op;
  Call call(op);
  call.Input("x", x).Input("y", y);
  if (op != "mul") call.Attr("alpha", c.alpha);
  auto out = call.RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), shape);
  EXPECT_EQ(out->dtype(), dt);
  EXPECT_EQ(out->device(), dev);
  const std::vector<double> a = ToDoubles(x), b = ToDoubles(y), got = ToDoubles(*out);
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 10; ++i) {
    const double want = op == "add"   ? reference::Add(dt, a[i], b[i], c.alpha)
                        : op == "sub" ? reference::Add(dt, a[i], b[i], -c.alpha)
                                      : reference::Mul(dt, a[i], b[i]);
    if (!Close(dt, got[i], want)) {
      ++bad;
      ADD_FAILURE() << "element " << i << ": " << a[i] << " , " << b[i] << " -> " << got[i] << ", want " << want;
    }
  }
}

class BinaryOpTest : public ::kps::testing::PerDeviceTest {};

TEST_P(BinaryOpTest, EdgeSizesEveryDtype) {
  for (const Case& c : {Case{"add", 1.0}, Case{"add", -3.0}, Case{"sub", 1.0}, Case{"sub", 2.0}, Case{"mul", 0.0}}) {
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
            std::string::npos)
      << r.status();
}

// Broadcasting and strided inputs, against a host reference that indexes each input
// through its own broadcast strides.
struct BroadcastCase {
  Shape x, y, out;
};

std::vector<double> Expand(const std::vector<double>& v, const Shape& in, const Shape& out) {
  std::vector<double> r(out.numel());
  const int offset = out.rank() - in.rank();
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t rem = i, src = 0, stride = 1;
    for (int d = out.rank() - 1; d >= 0; --d) {
      const int64_t coord = rem % out[d];
      rem /= out[d];
      const int id = d - offset;
      if (id >= 0) {
        if (in[id] != 1) src += coord * stride;
        stride *= in[id];
      }
    }
    r[i] = v[src];
  }
  return r;
}

TEST_P(BinaryOpTest, NumpyBroadcastingOfRank1To6) {
  const BroadcastCase cases[] = {
      {Shape{5}, Shape{1}, Shape{5}},
      {Shape{8, 33}, Shape{1, 33}, Shape{8, 33}},                    // row
      {Shape{33, 8}, Shape{33, 1}, Shape{33, 8}},                    // column
      {Shape{3, 1, 5}, Shape{4, 1}, Shape{3, 4, 5}},                 // both sides broadcast
      {Shape{2, 16, 7, 7}, Shape{1, 16, 1, 1}, Shape{2, 16, 7, 7}},  // NCHW bias
      {Shape{2, 1, 3, 1, 2, 3}, Shape{1, 4, 1, 5, 1, 3}, Shape{2, 4, 3, 5, 2, 3}},
      {Shape{}, Shape{2, 3}, Shape{2, 3}},      // scalar
      {Shape{0, 3}, Shape{1, 3}, Shape{0, 3}},  // empty
      {Shape{1, 1}, Shape{1}, Shape{1, 1}},
  };
  for (const BroadcastCase& c : cases) {
    for (DataType dt : kDtypes) {
      const uint64_t seed = FreshSeed();
      SCOPED_TRACE(::testing::Message() << c.x.ToString() << " + " << c.y.ToString() << " " << DataTypeName(dt)
                                        << " seed=" << seed);
      Tensor x = *testing::RandomTensor(c.x, dt, seed).To(GetParam());
      Tensor y = *testing::RandomTensor(c.y, dt, seed + 1).To(GetParam());
      auto sum = ops::Add(x, y, 2.0);
      auto prod = ops::Mul(y, x);
      ASSERT_TRUE(sum.ok()) << sum.status();
      ASSERT_TRUE(prod.ok()) << prod.status();
      EXPECT_EQ(sum->shape(), c.out);
      EXPECT_EQ(prod->shape(), c.out);
      const std::vector<double> a = Expand(ToDoubles(x), c.x, c.out), b = Expand(ToDoubles(y), c.y, c.out);
      const std::vector<double> s = ToDoubles(*sum), p = ToDoubles(*prod);
      for (int64_t i = 0; i < c.out.numel(); ++i) {
        ASSERT_TRUE(Close(dt, s[i], reference::Add(dt, a[i], b[i], 2.0))) << "add element " << i << ": " << s[i];
        ASSERT_TRUE(Close(dt, p[i], reference::Mul(dt, b[i], a[i]))) << "mul element " << i << ": " << p[i];
      }
    }
  }
}

TEST_P(BinaryOpTest, StridedInputViews) {
  for (DataType dt : kDtypes) {
    const uint64_t seed = FreshSeed();
    SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " seed=" << seed);
    Tensor base = *testing::RandomTensor(Shape{37, 41}, dt, seed).To(GetParam());
    Tensor t = *base.Transpose(0, 1);                      // [41, 37], strides [1, 41]
    Tensor sl = *(*base.Slice(1, 3, 40)).Transpose(0, 1);  // [37, 37] of a slice
    Tensor other = *testing::RandomTensor(Shape{41, 37}, dt, seed + 1).To(GetParam());
    const std::vector<double> tv = ToDoubles(t), ov = ToDoubles(other);
    const std::vector<double> got = ToDoubles(*ops::Add(t, other));
    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(Close(dt, got[i], reference::Add(dt, tv[i], ov[i], 1.0))) << i;
    // A strided view broadcast against a row.
    Tensor row = *testing::RandomTensor(Shape{37}, dt, seed + 2).To(GetParam());
    const std::vector<double> sv = ToDoubles(sl), rv = ToDoubles(row);
    const std::vector<double> prod = ToDoubles(*ops::Mul(sl, row));
    for (int i = 0; i < 37; ++i) {
      for (int j = 0; j < 37; ++j) {
        ASSERT_TRUE(Close(dt, prod[i * 37 + j], reference::Mul(dt, sv[i * 37 + j], rv[j]))) << i << "," << j;
      }
    }
  }
}

// Views read across their contiguous dim take the shared-memory tile kernel on the GPU
// where that dim and the innermost both span at least elementwise.tile_min (16)
// elements: the shapes straddle that switch and the tiles' edges (32 x 32, 64 x 64 for 1- and
// 2-byte types), in every dtype,
// with the other input transposed too, contiguous, broadcast along either dim, and with
// an unaligned start; 3-D permutations put the contiguous dim first with a batch dim
// between (a tile over dims 0 and 2).
TEST_P(BinaryOpTest, TransposedViewsAcrossTheTileSwitch) {
  struct Dims {
    int64_t m, n;
  };
  const Dims kDims[] = {{15, 40}, {16, 40}, {40, 15}, {40, 16}, {32, 32},
                        {33, 65}, {97, 31}, {1, 64},  {64, 64}, {65, 129}};
  for (DataType dt : kDtypes) {
    const uint64_t seed = FreshSeed();
    SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " seed=" << seed);
    for (const Dims& d : kDims) {
      SCOPED_TRACE(::testing::Message() << "[" << d.m << ", " << d.n << "]");
      // [m, n] views with strides [1, m]; the second starts one element into its buffer.
      Tensor xb = *testing::RandomTensor(Shape{d.n, d.m}, dt, seed).To(GetParam());
      Tensor yb = *testing::RandomTensor(Shape{d.n * d.m + 1}, dt, seed + 1).To(GetParam());
      Tensor x = *xb.Transpose(0, 1);
      Tensor y = *yb.AsStrided(Shape{d.m, d.n}, {1, d.m}, 1);
      Tensor c = *testing::RandomTensor(Shape{d.m, d.n}, dt, seed + 2).To(GetParam());
      Tensor row = *testing::RandomTensor(Shape{d.n}, dt, seed + 3).To(GetParam());
      Tensor col = *testing::RandomTensor(Shape{d.m, 1}, dt, seed + 4).To(GetParam());
      const Shape out{d.m, d.n};
      const std::vector<double> xv = ToDoubles(x);
      for (const Tensor* other : {&y, &c, &row, &col}) {
        auto sum = ops::Add(x, *other);
        auto prod = ops::Mul(*other, x);
        ASSERT_TRUE(sum.ok()) << sum.status();
        ASSERT_TRUE(prod.ok()) << prod.status();
        const std::vector<double> ov = Expand(ToDoubles(*other), other->shape(), out);
        const std::vector<double> s = ToDoubles(*sum), p = ToDoubles(*prod);
        ASSERT_EQ(s.size(), xv.size());
        for (size_t i = 0; i < xv.size(); ++i) {
          ASSERT_TRUE(Close(dt, s[i], reference::Add(dt, xv[i], ov[i], 1.0))) << "add " << i << ": " << s[i];
          ASSERT_TRUE(Close(dt, p[i], reference::Mul(dt, ov[i], xv[i]))) << "mul " << i << ": " << p[i];
        }
      }
    }
    // [c, b, a] = permute(2, 1, 0) of [a, b, c]: strides [1, c, b * c].
    for (const Shape& s3 : {Shape{17, 3, 40}, Shape{33, 2, 16}}) {
      const int64_t a = s3[2], b = s3[1], cc = s3[0];
      Tensor base = *testing::RandomTensor(Shape{a, b, cc}, dt, seed + 5).To(GetParam());
      Tensor x = *base.AsStrided(s3, {1, cc, b * cc}, 0);
      Tensor y = *testing::RandomTensor(s3, dt, seed + 6).To(GetParam());
      auto sum = ops::Add(x, y);
      ASSERT_TRUE(sum.ok()) << sum.status();
      const std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y), got = ToDoubles(*sum);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(Close(dt, got[i], reference::Add(dt, xv[i], yv[i], 1.0))) << s3.ToString() << " " << i;
      }
    }
  }
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

KPS_INSTANTIATE_ON_DEVICES(BinaryOpTest);

}  // namespace
}  // namespace kps
