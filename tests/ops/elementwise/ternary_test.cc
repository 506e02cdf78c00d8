// where, clip, clip_tensor and addcmul on every device and registered dtype: broadcast
// shapes of rank 1 to 4, strided and unaligned inputs, special values and errors,
// against references written from the documented semantics.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/reference/elementwise.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::RandomTensor;
using ::kps::testing::ToDoubles;

class TernaryOpTest : public ::kps::testing::PerDeviceTest {
 protected:
  DeviceType dev() const { return GetParam(); }
};

// Row-major index of `out_index` (of out_shape) into an input of `in_shape`, NumPy
// broadcasting (trailing alignment; size-1 dims repeat).
int64_t BroadcastIndex(const Shape& out_shape, const Shape& in_shape, int64_t out_index) {
  int64_t in_index = 0, in_stride = 1;
  int64_t rem = out_index;
  for (int d = out_shape.rank() - 1, k = in_shape.rank() - 1; d >= 0; --d, --k) {
    const int64_t od = out_shape[d];
    const int64_t coord = rem % od;
    rem /= od;
    if (k >= 0) {
      if (in_shape[k] != 1) in_index += coord * in_stride;
      in_stride *= in_shape[k];
    }
  }
  return in_index;
}

struct Shapes3 {
  Shape a, b, c, out;
};
const Shapes3 kShapes[] = {
    {Shape{1031}, Shape{1031}, Shape{1031}, Shape{1031}},
    {Shape{4, 1, 6}, Shape{5, 1}, Shape{6}, Shape{4, 5, 6}},
    {Shape{1}, Shape{3, 1, 1, 2}, Shape{1, 7, 1}, Shape{3, 1, 7, 2}},
    {Shape{2, 0, 3}, Shape{3}, Shape{1}, Shape{2, 0, 3}},
};

const DataType kSigned[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
                            DataType::kInt8,    DataType::kInt16,    DataType::kInt32,   DataType::kInt64};

bool Close(DataType dt, double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return std::fabs(got - want) <= testing::Tolerance(dt, want);
}

TEST_P(TernaryOpTest, WhereEveryDtypeAndBroadcast) {
  for (int d = 0; d < kNumDataTypes; ++d) {
    const DataType dt = static_cast<DataType>(d);
    for (const Shapes3& s : kShapes) {
      const uint64_t seed = FreshSeed();
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " out " << s.out.ToString() << " seed=" << seed);
      Tensor cond = *RandomTensor(s.a, DataType::kBool, seed).To(dev());
      Tensor x = *RandomTensor(s.b, dt, seed + 1).To(dev());
      Tensor y = *RandomTensor(s.c, dt, seed + 2).To(dev());
      auto out = Call("where").Input("cond", cond).Input("x", x).Input("y", y).RunOne();
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->shape(), s.out);
      ASSERT_EQ(out->dtype(), dt);
      const auto cv = ToDoubles(cond), xv = ToDoubles(x), yv = ToDoubles(y), got = ToDoubles(*out);
      for (int64_t i = 0; i < s.out.numel(); ++i) {
        const double want = cv[BroadcastIndex(s.out, s.a, i)] != 0 ? xv[BroadcastIndex(s.out, s.b, i)]
                                                                    : yv[BroadcastIndex(s.out, s.c, i)];
        ASSERT_EQ(got[i], want) << "element " << i;
      }
    }
  }
}

TEST_P(TernaryOpTest, WherePassesBitsThroughAndTakesStridedViews) {
  const float nan = std::nanf("");
  Tensor cond = *Tensor::FromVector<bool>({true, false, true, false}, Shape{4})->To(dev());
  Tensor x = *Tensor::FromVector<float>({-0.0f, 1.0f, nan, 2.0f}, Shape{4})->To(dev());
  Tensor y = *Tensor::FromVector<float>({5.0f, -0.0f, 3.0f, -std::numeric_limits<float>::infinity()}, Shape{4})
                  ->To(dev());
  auto out = *Call("where").Input("cond", cond).Input("x", x).Input("y", y).RunOne()->ToVector<float>();
  EXPECT_TRUE(std::signbit(out[0]) && out[0] == 0.0f);
  EXPECT_TRUE(std::signbit(out[1]) && out[1] == 0.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], -std::numeric_limits<float>::infinity());

  // Transposed x, unaligned y.
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  Tensor c2 = *RandomTensor(Shape{33, 17}, DataType::kBool, seed).To(dev());
  Tensor xt = *RandomTensor(Shape{17, 33}, DataType::kFloat16, seed + 1).To(dev())->Transpose(0, 1);
  Tensor yu = *testing::RandomTensorAtOffset(Shape{33, 17}, DataType::kFloat16, seed + 2, 1).To(dev());
  auto o2 = Call("where").Input("cond", c2).Input("x", xt).Input("y", yu).RunOne();
  ASSERT_TRUE(o2.ok()) << o2.status();
  const auto cv = ToDoubles(c2), xv = ToDoubles(xt), yv = ToDoubles(yu), got = ToDoubles(*o2);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], cv[i] != 0 ? xv[i] : yv[i]) << i;
}

TEST_P(TernaryOpTest, WhereErrors) {
  Tensor c = *RandomTensor(Shape{3}, DataType::kInt32, 1).To(dev());
  Tensor x = *RandomTensor(Shape{3}, DataType::kFloat32, 2).To(dev());
  Tensor y64 = *RandomTensor(Shape{3}, DataType::kFloat64, 3).To(dev());
  Tensor b = *RandomTensor(Shape{3}, DataType::kBool, 4).To(dev());
  auto r1 = Call("where").Input("cond", c).Input("x", x).Input("y", x).RunOne();
  EXPECT_TRUE(testing::Contains(std::string(r1.status().message()), "input 'cond' is int32; where needs a bool"));
  auto r2 = Call("where").Input("cond", b).Input("x", x).Input("y", y64).RunOne();
  EXPECT_TRUE(testing::Contains(std::string(r2.status().message()), "'x' (float32) and 'y' (float64)"));
  Tensor x4 = *RandomTensor(Shape{4}, DataType::kFloat32, 5).To(dev());
  auto r3 = Call("where").Input("cond", b).Input("x", x4).Input("y", x).RunOne();
  EXPECT_TRUE(testing::Contains(std::string(r3.status().message()), "do not broadcast"));
}

// The clip reference: bounds as the op documents them (integers: ceil(min), floor(max)
// saturated; unset = none), min > max gives max, NaN x stays NaN, NaN bound ignored.
double ClipRef(DataType dt, double x, double lo, double hi) {
  if (std::isnan(x)) return x;
  if (IsIntegral(dt)) {
    if (!std::isnan(lo)) lo = std::ceil(lo);
    if (!std::isnan(hi)) hi = std::floor(hi);
  }
  double r = x;
  if (!std::isnan(lo) && r < lo) r = lo;
  if (!std::isnan(hi) && r > hi) r = hi;
  return IsIntegral(dt) ? r : testing::RoundTo(dt, dt == DataType::kFloat64 ? r : static_cast<float>(r));
}

TEST_P(TernaryOpTest, ClipScalarBoundsEveryDtype) {
  const double nan = std::nan("");
  const struct {
    double lo, hi;
  } bounds[] = {{-1.5, 2.25}, {nan, 0.5}, {-100.0, nan}, {3.0, -3.0}, {-1e30, 1e30}};
  for (DataType dt : kSigned) {
    for (const auto& b : bounds) {
      for (int layout = 0; layout < 2; ++layout) {
        const uint64_t seed = FreshSeed();
        SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " [" << b.lo << ", " << b.hi << "] layout "
                                          << layout << " seed=" << seed);
        Tensor x = layout == 0 ? *RandomTensor(Shape{1031}, dt, seed).To(dev())
                               : *testing::RandomTensorAtOffset(Shape{1031}, dt, seed, 1).To(dev());
        Call call("clip");
        call.Input("x", x);
        if (!std::isnan(b.lo)) call.Attr("min", b.lo);
        if (!std::isnan(b.hi)) call.Attr("max", b.hi);
        auto out = call.RunOne();
        ASSERT_TRUE(out.ok()) << out.status();
        const auto xv = ToDoubles(x), got = ToDoubles(*out);
        for (size_t i = 0; i < got.size(); ++i) {
          double lo = b.lo, hi = b.hi;
          if (!IsIntegral(dt)) {  // the bounds are rounded to the compute type first
            if (!std::isnan(lo) && dt != DataType::kFloat64) lo = static_cast<float>(lo);
            if (!std::isnan(hi) && dt != DataType::kFloat64) hi = static_cast<float>(hi);
          }
          ASSERT_TRUE(Close(dt, got[i], ClipRef(dt, xv[i], lo, hi))) << i << ": " << xv[i] << " -> " << got[i];
        }
      }
    }
  }
}

TEST_P(TernaryOpTest, ClipSpecialValuesAndErrors) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  Tensor x = *Tensor::FromVector<float>({nan, inf, -inf, -0.0f, 0.7f}, Shape{5})->To(dev());
  auto out = *Call("clip").Input("x", x).Attr("min", -1.0).Attr("max", 0.5).RunOne()->ToVector<float>();
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 0.5f);
  EXPECT_EQ(out[2], -1.0f);
  EXPECT_EQ(out[3], 0.0f);
  EXPECT_EQ(out[4], 0.5f);
  Tensor i8 = *Tensor::FromVector<int8_t>({-128, 0, 127}, Shape{3})->To(dev());
  EXPECT_EQ(*Call("clip").Input("x", i8).Attr("min", -1000.0).Attr("max", 2.5).RunOne()->ToVector<int8_t>(),
            (std::vector<int8_t>{-128, 0, 2}));
  auto r = Call("clip").Input("x", x).RunOne();
  EXPECT_TRUE(testing::Contains(std::string(r.status().message()), "op 'clip': set at least one of the attributes"));
  Tensor u8 = *RandomTensor(Shape{3}, DataType::kUInt8, 1).To(dev());
  auto r2 = Call("clip").Input("x", u8).Attr("min", 0.0).RunOne();
  EXPECT_FALSE(r2.ok());
}

TEST_P(TernaryOpTest, ClipTensorBoundsBroadcast) {
  for (DataType dt : kSigned) {
    for (const Shapes3& s : kShapes) {
      const uint64_t seed = FreshSeed();
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " out " << s.out.ToString() << " seed=" << seed);
      Tensor x = *RandomTensor(s.a, dt, seed).To(dev());
      Tensor lo = *RandomTensor(s.b, dt, seed + 1).To(dev());
      Tensor hi = *RandomTensor(s.c, dt, seed + 2).To(dev());
      auto out = Call("clip_tensor").Input("x", x).Input("min", lo).Input("max", hi).RunOne();
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->shape(), s.out);
      const auto xv = ToDoubles(x), lv = ToDoubles(lo), hv = ToDoubles(hi), got = ToDoubles(*out);
      for (int64_t i = 0; i < s.out.numel(); ++i) {
        const double want = ClipRef(dt, xv[BroadcastIndex(s.out, s.a, i)], lv[BroadcastIndex(s.out, s.b, i)],
                                    hv[BroadcastIndex(s.out, s.c, i)]);
        ASSERT_EQ(got[i], want) << "element " << i;
      }
    }
  }
}

double AddcmulRef(DataType dt, double x, double y, double z, double value) {
  if (IsIntegral(dt)) {
    const uint64_t r = static_cast<uint64_t>(static_cast<int64_t>(x)) +
                       static_cast<uint64_t>(static_cast<int64_t>(value)) * static_cast<uint64_t>(static_cast<int64_t>(y)) *
                           static_cast<uint64_t>(static_cast<int64_t>(z));
    return reference::WrapTo(dt, static_cast<int64_t>(r));
  }
  return testing::RoundTo(dt, x + value * y * z);
}

TEST_P(TernaryOpTest, AddcmulEveryDtypeAndBroadcast) {
  for (DataType dt : kSigned) {
    for (const Shapes3& s : kShapes) {
      const uint64_t seed = FreshSeed();
      const double value = IsIntegral(dt) ? -3.0 : 0.75;
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " out " << s.out.ToString() << " seed=" << seed);
      Tensor x = *RandomTensor(s.a, dt, seed).To(dev());
      Tensor y = *RandomTensor(s.b, dt, seed + 1).To(dev());
      Tensor z = *RandomTensor(s.c, dt, seed + 2).To(dev());
      auto out = Call("addcmul").Input("x", x).Input("y", y).Input("z", z).Attr("value", value).RunOne();
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->shape(), s.out);
      const auto xv = ToDoubles(x), yv = ToDoubles(y), zv = ToDoubles(z), got = ToDoubles(*out);
      for (int64_t i = 0; i < s.out.numel(); ++i) {
        const double want = AddcmulRef(dt, xv[BroadcastIndex(s.out, s.a, i)], yv[BroadcastIndex(s.out, s.b, i)],
                                       zv[BroadcastIndex(s.out, s.c, i)], value);
        // Floats: one rounding of the output, plus float's rounding of the product
        // (|x| + |value y z| <= 52 here).
        const double tol = IsIntegral(dt) ? 0 : testing::Tolerance(dt, want) + (dt == DataType::kFloat64 ? 1e-13 : 1e-5);
        ASSERT_LE(std::fabs(got[i] - want), tol) << "element " << i;
      }
    }
  }
  Tensor i32 = *RandomTensor(Shape{3}, DataType::kInt32, 9).To(dev());
  auto r = Call("addcmul").Input("x", i32).Input("y", i32).Input("z", i32).Attr("value", 0.5).RunOne();
  EXPECT_TRUE(testing::Contains(std::string(r.status().message()), "attribute 'value' = 0.5 is not representable in int32"));
}

KPS_INSTANTIATE_ON_DEVICES(TernaryOpTest);

}  // namespace
}  // namespace kps
