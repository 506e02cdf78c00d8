#include "registry/tensor.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "registry/allocator.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::RandomTensor;
using ::kps::testing::ToDoubles;

TEST(ShapeTest, NumelStridesAndContiguity) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.ToString(), "[2, 3, 4]");
  EXPECT_EQ(ContiguousStrides(s), (DimVector{12, 4, 1}));
  EXPECT_EQ(Shape().numel(), 1);  // a scalar
  EXPECT_EQ(Shape({3, 0, 5}).numel(), 0);
  EXPECT_TRUE(IsContiguous(s, {12, 4, 1}));
  EXPECT_FALSE(IsContiguous(s, {1, 2, 6}));
  EXPECT_TRUE(IsContiguous(Shape{2, 1, 4}, {4, 99, 1}));  // size-1 dims: any stride
}

TEST(TensorTest, EmptyIsContiguousWithRowMajorStrides) {
  auto t = Tensor::Empty(Shape{5, 7}, DataType::kFloat16, DeviceType::kCpu);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->defined());
  EXPECT_EQ(t->numel(), 35);
  EXPECT_EQ(t->nbytes(), 70u);
  EXPECT_TRUE(t->is_contiguous());
  EXPECT_EQ(t->strides(), (DimVector{7, 1}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % kCpuAlignment, 0u);
  EXPECT_EQ(t->DebugString(), "Tensor(float16[5, 7], cpu)");
}

TEST(TensorTest, NegativeDimIsAnError) {
  auto t = Tensor::Empty(Shape{3, -1}, DataType::kFloat32, DeviceType::kCpu);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("negative dimension"), std::string::npos) << t.status();
}

TEST(TensorTest, FromVectorAndBack) {
  std::vector<int32_t> v = {4, -8, 15, 16, -23, 42};
  auto t = Tensor::FromVector(v, Shape{2, 3});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->ToVector<int32_t>(), v);
  EXPECT_FALSE(t->ToVector<float>().ok());  // wrong type is an error, not garbage
  EXPECT_FALSE(Tensor::FromVector(v, Shape{4}).ok());
}

TEST(TensorTest, ViewsAreBoundsChecked) {
  auto t = *Tensor::Empty(Shape{4, 4}, DataType::kFloat32, DeviceType::kCpu);
  EXPECT_TRUE(t.AsStrided(Shape{2, 2}, {4, 1}, 10).ok());
  auto bad = t.AsStrided(Shape{2, 2}, {4, 1}, 12);  // reaches element 17 of 16
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_FALSE(t.AsStrided(Shape{2}, {-1}, 3).ok());
  EXPECT_FALSE(t.Slice(0, 2, 5).ok());
  EXPECT_FALSE(t.Transpose(0, 2).ok());
}

TEST(TensorTest, StridedViewsGatherOnEveryDevice) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  Tensor base = RandomTensor(Shape{6, 5}, DataType::kFloat32, seed);
  const std::vector<double> v = ToDoubles(base);
  for (DeviceType dev : testing::TestDevices()) {
    if (dev == DeviceType::kCuda) KPS_SKIP_WITHOUT_GPU();
    Tensor on = *base.To(dev);
    Tensor tr = *on.Transpose(0, 1);  // [5, 6], strides [1, 5]
    EXPECT_FALSE(tr.is_contiguous());
    std::vector<double> got = ToDoubles(tr);
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 6; ++j) EXPECT_EQ(got[i * 6 + j], v[j * 5 + i]);
    }
    Tensor sl = *on.Slice(1, 1, 4);  // columns 1..3
    got = ToDoubles(sl);
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 3; ++j) EXPECT_EQ(got[i * 3 + j], v[i * 5 + j + 1]);
    }
  }
}

TEST(TensorTest, HostDeviceRoundTripOfEveryDtype) {
  KPS_SKIP_WITHOUT_GPU();
  for (int i = 0; i < kNumDataTypes; ++i) {
    const DataType d = static_cast<DataType>(i);
    const uint64_t seed = FreshSeed();
    SCOPED_TRACE(std::string(DataTypeName(d)) + " seed " + std::to_string(seed));
    Tensor h = RandomTensor(Shape{3, 1001}, d, seed);
    auto dev = h.To(DeviceType::kCuda);
    ASSERT_TRUE(dev.ok()) << dev.status();
    EXPECT_EQ(dev->device(), DeviceType::kCuda);
    EXPECT_EQ(ToDoubles(*dev), ToDoubles(h));
  }
}

TEST(TensorTest, ZeroElementTensorsWork) {
  for (DeviceType dev : testing::TestDevices()) {
    if (dev == DeviceType::kCuda) KPS_SKIP_WITHOUT_GPU();
    auto t = Tensor::Empty(Shape{0, 3}, DataType::kFloat32, dev);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->numel(), 0);
    auto back = t->To(DeviceType::kCpu);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->shape(), (Shape{0, 3}));
  }
}

TEST(TensorTest, PoisoningFillsFreshAllocations) {
  ASSERT_TRUE(AllocationPoisoning());  // set by the test environment
  auto t = *Tensor::Empty(Shape{8}, DataType::kInt32, DeviceType::kCpu);
  const std::vector<int32_t> values = *t.ToVector<int32_t>();
  for (int32_t x : values) EXPECT_EQ(x, -1);
}

TEST(StreamTest, OwnedStreamSynchronizes) {
  KPS_SKIP_WITHOUT_GPU();
  auto s = OwnedCudaStream::Create();
  ASSERT_TRUE(s.ok()) << s.status();
  auto t = Tensor::Empty(Shape{1024}, DataType::kFloat32, DeviceType::kCuda, s->stream());
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(s->stream().Synchronize().ok());
}

}  // namespace
}  // namespace kps
