// copy: contiguous and strided sources of every dtype, on every device.
#include <numeric>

#include "gtest/gtest.h"
#include "ops/ops.h"
#include "registry/call.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

class CopyTest : public ::kps::testing::PerDeviceTest {};

// Host-side gather of a view, from the base tensor's values: the reference.
std::vector<double> Gather(const std::vector<double>& base, const Shape& shape, const DimVector& strides,
                           int64_t offset) {
  std::vector<double> out;
  DimVector idx(shape.rank(), 0);
  for (int64_t i = 0; i < shape.numel(); ++i) {
    int64_t off = offset;
    for (int d = 0; d < shape.rank(); ++d) off += idx[d] * strides[d];
    out.push_back(base[off]);
    for (int d = shape.rank() - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

TEST_P(CopyTest, EveryDtypeContiguousAndStrided) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    const DataType dt = static_cast<DataType>(i);
    const uint64_t seed = FreshSeed();
    SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " seed=" << seed);
    Tensor base = *testing::RandomTensor(Shape{6, 7, 11}, dt, seed).To(GetParam());
    const std::vector<double> v = ToDoubles(base);
    struct View {
      Shape shape;
      DimVector strides;
      int64_t offset;
    } views[] = {
        {Shape{6, 7, 11}, {77, 11, 1}, 0},  // contiguous
        {Shape{461}, {1}, 1},               // contiguous, misaligned
        {Shape{11, 7, 6}, {1, 11, 77}, 0},  // all dims reversed
        {Shape{6, 3, 5}, {77, 22, 2}, 3},   // every other column of every other row
        {Shape{7, 6}, {11, 77}, 4},         // a transposed slice
        {Shape{0, 5}, {5, 1}, 0},           // empty
    };
    for (const View& w : views) {
      Tensor view = *base.AsStrided(w.shape, w.strides, w.offset);
      auto out = ops::Contiguous(view);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_TRUE(out->is_contiguous());
      EXPECT_EQ(out->shape(), w.shape);
      EXPECT_EQ(ToDoubles(*out), Gather(v, w.shape, w.strides, w.offset)) << w.shape.ToString();
    }
  }
}

TEST_P(CopyTest, LargeContiguousAndStridedFloat) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  Tensor base = *testing::RandomTensor(Shape{1031, 517}, DataType::kFloat32, seed).To(GetParam());
  const std::vector<double> v = ToDoubles(base);
  EXPECT_EQ(ToDoubles(*ops::Contiguous(base)), v);
  Tensor t = *base.Transpose(0, 1);
  EXPECT_EQ(ToDoubles(*ops::Contiguous(t)), Gather(v, t.shape(), t.strides(), 0));
}

// Transposes of every dtype on both sides of the tile kernel's switch (both dims at least
// elementwise.tile_min = 16 elements) and across its tiles' edges (32, or 64 for 1- and
// 2-byte types).
TEST_P(CopyTest, TransposesOfEveryDtypeAcrossTheTileSwitch) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    const DataType dt = static_cast<DataType>(i);
    const uint64_t seed = FreshSeed();
    SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " seed=" << seed);
    for (const Shape& s : {Shape{15, 40}, Shape{16, 16}, Shape{33, 65}, Shape{2, 64, 31}, Shape{65, 129}}) {
      Tensor base = *testing::RandomTensor(s, dt, seed).To(GetParam());
      const std::vector<double> v = ToDoubles(base);
      Tensor t = *base.Transpose(s.rank() - 2, s.rank() - 1);
      auto out = ops::Contiguous(t);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ(ToDoubles(*out), Gather(v, t.shape(), t.strides(), 0)) << s.ToString();
    }
  }
}

TEST_P(CopyTest, StridedViewOfTooHighRankIsAnError) {
  Shape s{1, 2, 1, 2, 1, 2, 1, 2, 2};
  Tensor base = *testing::RandomTensor(s, DataType::kFloat32, FreshSeed()).To(GetParam());
  Tensor t = *base.Transpose(1, 8);
  auto r = ops::Contiguous(t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("op 'copy': input 'x' is a strided view of rank 9; at most 8"), std::string::npos)
      << r.status();
}

KPS_INSTANTIATE_ON_DEVICES(CopyTest);

}  // namespace
}  // namespace kps
