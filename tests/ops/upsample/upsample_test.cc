// upsample_nearest2d and upsample_nearest2d_backward on every device and every dtype each
// is registered for: square and mixed integer scales (the 2x fast path with 16-byte and
// pair stores, and the general kernel), widths that do and do not fill a 16-byte vector,
// empty tensors, misaligned and strided inputs, against the references of
// tests/reference/upsample.h; the backward is checked against window sums in double, and
// forward and backward against each other (the adjoint identity, and backward(forward(x))
// = sh * sw * x). Bad arguments give errors naming the op and the argument.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/data_type.h"
#include "registry/call.h"
#include "tests/ops/check_util.h"
#include "tests/reference/upsample.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::op_check::AllClose;
using ::kps::op_check::Layout;
using ::kps::op_check::LayoutName;
using ::kps::op_check::Place;
using ::kps::op_check::RandomValues;
using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

const std::vector<DataType> kFloatTypes = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                           DataType::kFloat64};

class UpsampleTest : public ::kps::testing::PerDeviceTest {};

struct Scales {
  int64_t scale = 2, scale_h = 0, scale_w = 0;
  int64_t sh() const { return scale_h ? scale_h : scale; }
  int64_t sw() const { return scale_w ? scale_w : scale; }
  std::string Name() const { return std::to_string(sh()) + "x" + std::to_string(sw()); }
};

absl::StatusOr<Tensor> RunUpsample(const std::string& op, const Tensor& x, const Scales& s) {
  Call call(op);
  call.Input(op == "upsample_nearest2d" ? "x" : "grad_out", x).Attr("scale", s.scale);
  if (s.scale_h) call.Attr("scale_h", s.scale_h);
  if (s.scale_w) call.Attr("scale_w", s.scale_w);
  return call.RunOne();
}

const std::vector<Scales>& AllScales() {
  // Every scale_w of the run kernel (1 to 4) with scale_h 1 to 4, and 5 (the general kernel).
  static const std::vector<Scales> s = {{2, 0, 0}, {1, 0, 0}, {3, 0, 0}, {2, 3, 0}, {2, 0, 1},
                                        {1, 4, 0}, {5, 1, 3}, {4, 0, 0}, {3, 1, 4}, {2, 0, 5}};
  return s;
}

const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> s = {Shape{1, 1, 1, 1}, Shape{2, 3, 5, 7},  Shape{1, 2, 4, 16}, Shape{2, 1, 3, 8},
                                       Shape{1, 1, 2, 33}, Shape{1, 3, 17, 32}, Shape{2, 2, 33, 129}};
  return s;
}

void CheckForward(DeviceType dev, DataType dt, const Shape& shape, const Scales& s, Layout layout) {
  SCOPED_TRACE(std::string(DataTypeName(dt)) + " " + shape.ToString() + " scale " + s.Name() + " " + LayoutName(layout));
  const std::vector<double> v = RandomValues(shape.numel(), dt, FreshSeed());
  const Tensor x = Place(v, shape, dt, dev, layout);
  auto out = RunUpsample("upsample_nearest2d", x, s);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (Shape{shape[0], shape[1], shape[2] * s.sh(), shape[3] * s.sw()}));
  EXPECT_EQ(out->dtype(), dt);
  EXPECT_EQ(out->device(), dev);
  const std::vector<double> want = reference::UpsampleNearest2d(v, shape[0] * shape[1], shape[2], shape[3], s.sh(), s.sw());
  EXPECT_TRUE(AllClose(ToDoubles(*out), want, std::vector<double>(want.size(), 0.0)));
}

TEST_P(UpsampleTest, ForwardEveryDtypeShapeAndScale) {
  for (DataType dt : AllDataTypes()) {
    for (const Shape& shape : Shapes()) {
      for (const Scales& s : AllScales()) {
        CheckForward(GetParam(), dt, shape, s, Layout::kContiguous);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(UpsampleTest, ForwardMisalignedAndStridedInputs) {
  for (DataType dt : AllDataTypes()) {
    for (const Shape& shape : {Shape{1, 2, 4, 16}, Shape{2, 3, 5, 7}, Shape{1, 1, 3, 64}}) {
      for (const Scales& s : {Scales{2, 0, 0}, Scales{3, 0, 2}}) {
        CheckForward(GetParam(), dt, shape, s, Layout::kOffset);
        CheckForward(GetParam(), dt, shape, s, Layout::kStrided);
      }
    }
  }
}

TEST_P(UpsampleTest, ForwardLargerImages) {
  // Many blocks and a grid-stride remainder; widths that fill 16-byte vectors and not.
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kUInt8, DataType::kFloat64}) {
    CheckForward(GetParam(), dt, Shape{3, 5, 64, 128}, Scales{2, 0, 0}, Layout::kContiguous);
    CheckForward(GetParam(), dt, Shape{2, 3, 61, 127}, Scales{2, 0, 0}, Layout::kContiguous);
    CheckForward(GetParam(), dt, Shape{2, 3, 31, 67}, Scales{3, 0, 0}, Layout::kContiguous);
    CheckForward(GetParam(), dt, Shape{2, 3, 40, 64}, Scales{4, 0, 0}, Layout::kContiguous);
    CheckForward(GetParam(), dt, Shape{2, 3, 40, 64}, Scales{3, 0, 0}, Layout::kContiguous);
  }
}

TEST_P(UpsampleTest, EmptyTensors) {
  for (const Shape& shape : {Shape{0, 3, 4, 4}, Shape{2, 0, 4, 4}, Shape{2, 3, 0, 5}, Shape{2, 3, 5, 0}}) {
    for (DataType dt : {DataType::kFloat32, DataType::kInt8}) {
      CheckForward(GetParam(), dt, shape, Scales{2, 0, 0}, Layout::kContiguous);
    }
    const Tensor g = Place({}, Shape{shape[0], shape[1], shape[2] * 2, shape[3] * 2}, DataType::kFloat32, GetParam(),
                           Layout::kContiguous);
    auto back = RunUpsample("upsample_nearest2d_backward", g, Scales{2, 0, 0});
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape(), shape);
  }
}

void CheckBackward(DeviceType dev, DataType dt, const Shape& small, const Scales& s, Layout layout) {
  SCOPED_TRACE(std::string(DataTypeName(dt)) + " grad_in " + small.ToString() + " scale " + s.Name() + " " +
               LayoutName(layout));
  const Shape big{small[0], small[1], small[2] * s.sh(), small[3] * s.sw()};
  const std::vector<double> g = RandomValues(big.numel(), dt, FreshSeed());
  auto out = RunUpsample("upsample_nearest2d_backward", Place(g, big, dt, dev, layout), s);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), small);
  const reference::WindowSums want =
      reference::UpsampleNearest2dBackward(g, small[0] * small[1], small[2], small[3], s.sh(), s.sw());
  std::vector<double> tol(want.sum.size());
  for (size_t i = 0; i < tol.size(); ++i) {
    tol[i] = testing::Tolerance(dt, want.sum[i]) + 2 * s.sh() * s.sw() * op_check::AccEps(dt) * want.magnitude[i];
  }
  EXPECT_TRUE(AllClose(ToDoubles(*out), want.sum, tol));
}

TEST_P(UpsampleTest, BackwardSumsEachWindow) {
  for (DataType dt : kFloatTypes) {
    for (const Shape& shape : Shapes()) {
      for (const Scales& s : AllScales()) {
        CheckBackward(GetParam(), dt, shape, s, Layout::kContiguous);
        if (HasFatalFailure()) return;
      }
    }
    CheckBackward(GetParam(), dt, Shape{2, 3, 5, 8}, Scales{2, 0, 0}, Layout::kOffset);
    CheckBackward(GetParam(), dt, Shape{2, 3, 5, 7}, Scales{2, 3, 0}, Layout::kStrided);
    CheckBackward(GetParam(), dt, Shape{3, 4, 40, 70}, Scales{2, 0, 0}, Layout::kContiguous);
  }
}

// backward(forward(x)) = sh * sw * x (exact sums of grid values, then one rounding), and <forward(x), g> = <x, backward(g)>.
TEST_P(UpsampleTest, ForwardAndBackwardAgree) {
  for (DataType dt : kFloatTypes) {
    for (const Scales& s : {Scales{2, 0, 0}, Scales{3, 0, 0}, Scales{1, 2, 5}}) {
      SCOPED_TRACE(std::string(DataTypeName(dt)) + " scale " + s.Name());
      const Shape small{2, 3, 9, 20};
      // Multiples of 1/8 in [-4, 4]: k * x is exact in every dtype for the k here.
      std::vector<double> xv = RandomValues(small.numel(), DataType::kInt32, FreshSeed(), 32);
      for (double& v : xv) v /= 8;
      auto up = RunUpsample("upsample_nearest2d", Place(xv, small, dt, GetParam(), Layout::kContiguous), s);
      ASSERT_TRUE(up.ok()) << up.status();
      auto back = RunUpsample("upsample_nearest2d_backward", *up, s);
      ASSERT_TRUE(back.ok()) << back.status();
      std::vector<double> want(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) want[i] = testing::RoundTo(dt, xv[i] * s.sh() * s.sw());
      EXPECT_TRUE(AllClose(ToDoubles(*back), want, std::vector<double>(want.size(), 0.0)));

      const Shape big = up->shape();
      const std::vector<double> gv = RandomValues(big.numel(), dt, FreshSeed());
      auto gback = RunUpsample("upsample_nearest2d_backward", Place(gv, big, dt, GetParam(), Layout::kContiguous), s);
      ASSERT_TRUE(gback.ok()) << gback.status();
      const std::vector<double> upd = ToDoubles(*up), gbd = ToDoubles(*gback);
      double lhs = 0, rhs = 0, mag = 0;
      for (size_t i = 0; i < gv.size(); ++i) {
        lhs += upd[i] * gv[i];
        mag += std::fabs(upd[i] * gv[i]);
      }
      for (size_t i = 0; i < xv.size(); ++i) rhs += xv[i] * gbd[i];
      // gback is rounded to dt once per element: |error| <= eps(dt) * sum |x| |window sum|.
      const double eps = dt == DataType::kFloat16 ? 1e-3 : dt == DataType::kBFloat16 ? 8e-3 : 1e-6;
      EXPECT_NEAR(lhs, rhs, eps * mag + 1e-9);
    }
  }
}

TEST_P(UpsampleTest, BadArgumentsNameTheOpAndArgument) {
  const DeviceType dev = GetParam();
  const Tensor x3 = Place(RandomValues(24, DataType::kFloat32, 1), Shape{2, 3, 4}, DataType::kFloat32, dev,
                          Layout::kContiguous);
  auto r = RunUpsample("upsample_nearest2d", x3, Scales{});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(testing::Contains(std::string(r.status().message()), "upsample_nearest2d"));
  EXPECT_TRUE(testing::Contains(std::string(r.status().message()), "'x'"));
  EXPECT_TRUE(testing::Contains(std::string(r.status().message()), "rank 3"));

  const Tensor x4 = Place(RandomValues(48, DataType::kFloat32, 2), Shape{1, 2, 4, 6}, DataType::kFloat32, dev,
                          Layout::kContiguous);
  r = RunUpsample("upsample_nearest2d", x4, Scales{0, 0, 0});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(testing::Contains(std::string(r.status().message()), "'scale'"));
  r = RunUpsample("upsample_nearest2d", x4, Scales{2, -1, 0});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(testing::Contains(std::string(r.status().message()), "'scale_h'"));

  r = RunUpsample("upsample_nearest2d_backward", x4, Scales{3, 0, 0});  // 4 x 6 is not a multiple of 3 x 3
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(testing::Contains(std::string(r.status().message()), "upsample_nearest2d_backward"));
  EXPECT_TRUE(testing::Contains(std::string(r.status().message()), "'grad_out'"));

  const Tensor xi = Place(RandomValues(48, DataType::kInt32, 3), Shape{1, 2, 4, 6}, DataType::kInt32, dev,
                          Layout::kContiguous);
  r = RunUpsample("upsample_nearest2d_backward", xi, Scales{2, 0, 0});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(testing::Contains(std::string(r.status().message()), "floating"));
}

// Scales whose output shape cannot exist: H * scale_h (or W * scale_w) past int64, or an
// output past the shape rule's 2^60 (zero dims counted as one, so an empty input does
// not excuse a huge other side), are refused with the op and the attribute named, not
// turned into a wrapped shape. A large scale of an empty input within the rule is fine.
TEST_P(UpsampleTest, HugeScalesAreRefusedNamingTheAttribute) {
  const DeviceType dev = GetParam();
  const int64_t p62 = int64_t{1} << 62, p61 = int64_t{1} << 61;
  const Tensor x =
      Place(RandomValues(4, DataType::kFloat32, 5), Shape{1, 1, 2, 2}, DataType::kFloat32, dev, Layout::kContiguous);
  const Tensor no_w = Place({}, Shape{1, 1, 2, 0}, DataType::kFloat32, dev, Layout::kContiguous);
  const Tensor no_h = Place({}, Shape{1, 1, 0, 3}, DataType::kFloat32, dev, Layout::kContiguous);
  const Tensor odd_h = Place({}, Shape{1, 1, 3, 0}, DataType::kFloat32, dev, Layout::kContiguous);
  const struct {
    const Tensor* x;
    Scales s;
    const char* attr;  // the attribute the error must name
  } cases[] = {
      {&x, {2, p62, 0}, "'scale_h'"},      // 2 * 2^62 wraps
      {&x, {2, 0, p62}, "'scale_w'"},      // the same for W
      {&x, {p62, 0, 0}, "'scale'"},        // both from 'scale'
      {&no_w, {2, p62, 0}, "'scale_h'"},   // W == 0 once let the wrapped H through
      {&no_h, {2, 1, p62}, "'scale_w'"},   // 3 * 2^62 wraps
      {&odd_h, {2, p61, 0}, "'scale_h'"},  // 3 * 2^61 fits int64 but exceeds 2^60
      {&x, {2, p61, 4}, "'scale_h'"},      // 2^62 x 8: each side fits, the product does not
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.x->shape().ToString() + " scale " + std::to_string(c.s.scale) + " h " + std::to_string(c.s.scale_h) +
                 " w " + std::to_string(c.s.scale_w));
    auto r = RunUpsample("upsample_nearest2d", *c.x, c.s);
    ASSERT_FALSE(r.ok()) << r->shape().ToString();
    const std::string msg(r.status().message());
    EXPECT_TRUE(testing::Contains(msg, "op 'upsample_nearest2d'"));
    EXPECT_TRUE(testing::Contains(msg, c.attr));
  }
  const Tensor empty = Place({}, Shape{0, 1, 2, 2}, DataType::kFloat32, dev, Layout::kContiguous);
  auto big = RunUpsample("upsample_nearest2d", empty, Scales{int64_t{1} << 20, 0, 0});
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->shape(), (Shape{0, 1, int64_t{1} << 21, int64_t{1} << 21}));
}

KPS_INSTANTIATE_ON_DEVICES(UpsampleTest);

}  // namespace
}  // namespace kps
