// The one shape rule (registry/shape.h: ValidateShape) at every place a shape enters:
// element counts and strides that would overflow int64 are errors, never wrapped sizes.
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"
#include "registry/allocator.h"
#include "registry/call.h"
#include "registry/checked_math.h"
#include "registry/shape.h"
#include "registry/tensor.h"
#include "testing/support.h"

namespace kps {
namespace {

constexpr int64_t k2e32 = int64_t{1} << 32;
constexpr int64_t k2e62 = int64_t{1} << 62;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

void ExpectTooLarge(const absl::Status& s, const std::string& prefix) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(s.message().rfind(prefix, 0), 0u) << s;
  EXPECT_NE(s.message().find("too large"), std::string::npos) << s;
}

TEST(CheckedMathTest, DetectsOverflow) {
  int64_t r = 0;
  // (2^31 - 1)(2^32 + 1) = 2^63 - 2^31 - 1 fits; (2^32 - 1)(2^32 + 1) = 2^64 - 1 does not.
  EXPECT_FALSE(MulOverflow(k2e32 / 2 - 1, k2e32 + 1, &r));
  EXPECT_EQ(r, kInt64Max - k2e32 / 2);
  EXPECT_TRUE(MulOverflow(k2e32 - 1, k2e32 + 1, &r));
  EXPECT_TRUE(MulOverflow(k2e32, k2e32, &r));
  EXPECT_TRUE(MulOverflow(int64_t{-1}, std::numeric_limits<int64_t>::min(), &r));
  EXPECT_TRUE(AddOverflow(kInt64Max, int64_t{1}, &r));
  EXPECT_FALSE(AddOverflow(kInt64Max, int64_t{-1}, &r));
  size_t u = 0;
  EXPECT_TRUE(AddOverflow(std::numeric_limits<size_t>::max(), size_t{1}, &u));
  EXPECT_TRUE(MulOverflow(size_t{1} << 32, size_t{1} << 32, &u));
}

TEST(ShapeRuleTest, AcceptsAndRefusesAtTheLimit) {
  EXPECT_TRUE(ValidateShape(Shape{}, "t").ok());
  EXPECT_TRUE(ValidateShape(Shape{0}, "t").ok());
  EXPECT_TRUE(ValidateShape(Shape{kMaxNumel}, "t").ok());
  EXPECT_TRUE(ValidateShape(Shape{int64_t{1} << 30, int64_t{1} << 30}, "t").ok());
  ExpectTooLarge(ValidateShape(Shape{kMaxNumel + 1}, "t"), "t: shape");
  ExpectTooLarge(ValidateShape(Shape{2, kMaxNumel / 2 + 1}, "t"), "t: shape");
  // A zero dim does not excuse the others: their product sizes the strides. The order of
  // the dims does not matter.
  ExpectTooLarge(ValidateShape(Shape{0, k2e62, k2e62}, "t"), "t: shape");
  ExpectTooLarge(ValidateShape(Shape{k2e62, k2e62, 0}, "t"), "t: shape");
  EXPECT_TRUE(ValidateShape(Shape{0, k2e32, 1 << 20}, "t").ok());
  absl::Status neg = ValidateShape(Shape{3, -1}, "t");
  EXPECT_NE(neg.message().find("negative dimension"), std::string::npos) << neg;
  EXPECT_FALSE(IsValidShape(Shape{kInt64Max, kInt64Max}.dims()));
  EXPECT_TRUE(IsValidShape(Shape{7, 0, 11}.dims()));
}

TEST(ShapeRuleTest, EmptyRefusesShapesWhoseCountWraps) {
  // Each of these wrapped to a small or negative count before the rule: 4, 0, -1.
  for (const Shape& s : {Shape{4, k2e62 + 1}, Shape{k2e32, k2e32}, Shape{k2e32 + 1, k2e32 - 1},
                         Shape{0, k2e62, k2e62}}) {
    auto t = Tensor::Empty(s, DataType::kFloat32, DeviceType::kCpu);
    ASSERT_FALSE(t.ok()) << s.ToString();
    ExpectTooLarge(t.status(), "Tensor::Empty: shape");
  }
}

TEST(ShapeRuleTest, ViewsRefuseStridesThatWrap) {
  auto t = *Tensor::Empty(Shape{6}, DataType::kFloat32, DeviceType::kCpu);
  // (3 - 1) * (2^62 + 2^40) wraps to 2^41: it passed the bounds check, then To() read
  // terabytes past the storage.
  auto bad = t.AsStrided(Shape{3}, {k2e62 + (int64_t{1} << 40)}, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kOutOfRange) << bad.status();
  EXPECT_FALSE(t.AsStrided(Shape{2, 2}, {kInt64Max, 1}, 0).ok());
  EXPECT_FALSE(t.AsStrided(Shape{2}, {1}, kInt64Max).ok());       // the offset sum wraps
  EXPECT_FALSE(t.AsStrided(Shape{k2e32, k2e32}, {0, 0}, 0).ok());  // 2^64 elements
  // Stride 0 over a large (but countable) extent is a valid broadcast view.
  auto wide = t.AsStrided(Shape{k2e32}, {0}, 5);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->numel(), k2e32);
  // Unchanged: a view that fits is fine, one that reaches past the end is not.
  EXPECT_TRUE(t.AsStrided(Shape{3}, {2}, 1).ok());
  EXPECT_FALSE(t.AsStrided(Shape{3}, {2}, 2).ok());
}

TEST(ShapeRuleTest, AllocatorsRefuseSizesThatWrapWhenRounded) {
  for (DeviceType device : testing::TestDevices()) {
    const Stream stream = Stream::Default(device);
    auto huge = Storage::Allocate(std::numeric_limits<size_t>::max(), device, stream);
    ASSERT_FALSE(huge.ok()) << DeviceTypeName(device);
    EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
    EXPECT_FALSE(Storage::Allocate(std::numeric_limits<size_t>::max() - 30, device, stream).ok());
  }
}

// Broadcasting small inputs can describe more elements than int64 counts: the call must
// refuse it before a kernel sizes a buffer or a loop from the wrapped count.
class BroadcastOverflowTest : public testing::PerDeviceTest {};

TEST_P(BroadcastOverflowTest, OutputsTooLargeToCountAreErrors) {
  const DeviceType device = GetParam();
  // Stride-0 views: each input holds one element but describes 2^32 (or more).
  auto base = [&](DataType dtype) {
    return *testing::RandomTensor(Shape{1}, dtype, 7).To(device);
  };
  auto view = [&](DataType dtype, const Shape& shape) {
    Tensor b = base(dtype);
    DimVector strides(shape.rank(), 0);
    auto v = b.AsStrided(shape, strides, 0);
    EXPECT_TRUE(v.ok()) << v.status();
    return *v;
  };
  const Tensor x = view(DataType::kFloat32, Shape{k2e32, 1});
  const Tensor y = view(DataType::kFloat32, Shape{1, k2e32});
  auto add = Call("add").Input("x", x).Input("y", y).Run();
  ASSERT_FALSE(add.ok());
  ExpectTooLarge(add.status(), "op 'add': the broadcast of its inputs: shape [4294967296, 4294967296]");

  // The reported case: [3785993,1,1] x [1,1764119,1] x [1,1,2761926] is 2^64 + 26.
  const Tensor cond = view(DataType::kBool, Shape{3785993, 1, 1});
  const Tensor a = view(DataType::kInt8, Shape{1, 1764119, 1});
  const Tensor b = view(DataType::kInt8, Shape{1, 1, 2761926});
  auto where = Call("where").Input("cond", cond).Input("x", a).Input("y", b).Run();
  ASSERT_FALSE(where.ok());
  ExpectTooLarge(where.status(), "op 'where': the broadcast of its inputs: shape [3785993, 1764119, 2761926]");
  const Tensor fa = view(DataType::kFloat32, Shape{3785993, 1, 1});
  const Tensor fb = view(DataType::kFloat32, Shape{1, 1764119, 1});
  const Tensor fc = view(DataType::kFloat32, Shape{1, 1, 2761926});
  auto addcmul = Call("addcmul").Input("x", fa).Input("y", fb).Input("z", fc).Run();
  ASSERT_FALSE(addcmul.ok());
  EXPECT_NE(addcmul.status().message().find("too large"), std::string::npos) << addcmul.status();
  auto clip = Call("clip_tensor").Input("x", fa).Input("min", fb).Input("max", fc).Run();
  ASSERT_FALSE(clip.ok());
  ExpectTooLarge(clip.status(), "op 'clip_tensor': the broadcast");
  // masked_select's output is dynamic (sized by the mask's values), so only the
  // broadcast's own check stands between it and a wrapped count.
  const Tensor mask = view(DataType::kBool, Shape{1, k2e32});
  auto masked = Call("masked_select").Input("x", x).Input("mask", mask).Run();
  ASSERT_FALSE(masked.ok());
  ExpectTooLarge(masked.status(), "op 'masked_select': the broadcast");
}

// The call's own check of every inferred output, for ops whose infer does not broadcast:
// a kernel-free op whose output shape comes from an attribute as is.
absl::Status InferFromAttr(InferContext& ctx) {
  ctx.SetOutput(0, Shape(ctx.Attr<std::vector<int64_t>>("dims")), DataType::kInt8);
  return absl::OkStatus();
}
KPS_REGISTER_OP("kps_test_shape_from_attr")
    .Output("out")
    .Attr<std::vector<int64_t>>("dims", {1})
    .SetInferFn(InferFromAttr);

TEST(ShapeRuleTest, TheCallChecksEveryInferredOutput) {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{k2e32, k2e32}, std::vector<int64_t>{0, k2e62, 4},
                                           std::vector<int64_t>{-2}}) {
    auto r = Call("kps_test_shape_from_attr").SetAttr("dims", AttrValue(dims)).Run();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message().rfind("op 'kps_test_shape_from_attr': output 'out': shape", 0), 0u) << r.status();
  }
}

KPS_INSTANTIATE_ON_DEVICES(BroadcastOverflowTest);

}  // namespace
}  // namespace kps
