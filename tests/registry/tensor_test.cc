#include "registry/tensor.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
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


// --- Device indices (cuda:N). The MultiGpu* tests need 2 GPUs and skip with fewer. ---

// The device a CUDA pointer's memory lives on, by the runtime's account.
int PointerDevice(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess || attr.type != cudaMemoryTypeDevice) return -2;
  return attr.device;
}

int CurrentDevice() {
  int d = -1;
  cudaGetDevice(&d);
  return d;
}

TEST(TensorDeviceIndexTest, CpuTensorsHaveIndexMinusOne) {
  auto t = Tensor::Empty(Shape{3}, DataType::kFloat32, Device(DeviceType::kCpu));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->device_index(), -1);
  EXPECT_EQ(t->storage()->device_index(), -1);
  EXPECT_EQ(t->place(), Device(DeviceType::kCpu));
  EXPECT_EQ(t->DebugString(), "Tensor(float32[3], cpu)");
}

// Runs everywhere: with no GPU, cuda:0 and cuda:1 do not exist, and asking for them is an
// error that says so, not a crash.
TEST(TensorDeviceIndexTest, AGpuPastTheCountIsAnError) {
  const int n = CudaDeviceCount();
  Tensor host = *Tensor::FromVector<float>({1, 2, 3}, Shape{3});
  for (int index : {n, n + 1}) {
    SCOPED_TRACE(index);
    const std::string expected = absl::StrCat("cuda:", index, " does not exist: this process sees ", n);
    auto t = Tensor::Empty(Shape{4}, DataType::kFloat32, Device(DeviceType::kCuda, index));
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(expected), std::string::npos) << t.status();
    auto moved = host.To(Device(DeviceType::kCuda, index));
    ASSERT_FALSE(moved.ok());
    EXPECT_NE(moved.status().message().find(expected), std::string::npos) << moved.status();
    EXPECT_FALSE(Storage::Allocate(16, Device(DeviceType::kCuda, index), Stream::Cuda()).ok());
  }
  auto parsed = ParseDevice("cuda:1");
  ASSERT_TRUE(parsed.ok()) << parsed.status();  // the name is well formed; the GPU may not exist
  if (n < 2) EXPECT_FALSE(Tensor::Empty(Shape{1}, DataType::kFloat32, *parsed).ok());
}

TEST(TensorDeviceIndexTest, CudaTensorsRecordTheirGpu) {
  KPS_SKIP_WITHOUT_GPU();
  const int current = CurrentDevice();
  auto t = Tensor::Empty(Shape{3}, DataType::kFloat32, DeviceType::kCuda);  // the current GPU
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->device_index(), current);
  EXPECT_EQ(t->place(), Device(DeviceType::kCuda, current));
  EXPECT_EQ(t->DebugString(), absl::StrCat("Tensor(float32[3], cuda:", current, ")"));
  auto z = Tensor::Empty(Shape{0}, DataType::kFloat32, Device(DeviceType::kCuda, 0));  // no bytes, still an index
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(z->device_index(), 0);
  auto copy = Tensor::FromVector<float>({1, 2}, Shape{2})->To(Device(DeviceType::kCuda, 0));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->device_index(), 0);
  EXPECT_EQ(PointerDevice(copy->raw_data()), 0);
  auto view = copy->Slice(0, 1, 2);  // views keep the storage's GPU
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->device_index(), 0);
  auto owned = OwnedCudaStream::Create();
  ASSERT_TRUE(owned.ok()) << owned.status();
  EXPECT_EQ(owned->stream().device_index(), current);
  EXPECT_EQ(Stream::Cuda().device_index(), -1);  // the legacy default stream follows the current GPU
  EXPECT_EQ(CurrentDevice(), current);
}

TEST(MultiGpuTest, TensorOnCuda1LivesOnDevice1) {
  KPS_SKIP_WITHOUT_GPUS(2);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{3} << 20}) {  // small and large size classes
    auto t = Tensor::Empty(Shape{n}, DataType::kFloat32, *ParseDevice("cuda:1"));
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->device_index(), 1);
    EXPECT_EQ(t->storage()->device_index(), 1);
    EXPECT_EQ(t->place(), Device(DeviceType::kCuda, 1));
    EXPECT_NE(t->DebugString().find("cuda:1"), std::string::npos) << t->DebugString();
    EXPECT_EQ(PointerDevice(t->raw_data()), 1);
    EXPECT_EQ(CurrentDevice(), 0);  // the caller's device is left alone
  }
  // A block cached on cuda:1 is not handed out on cuda:0 (same size class, same stream
  // handle: the legacy default stream).
  void* freed = nullptr;
  {
    auto t = Tensor::Empty(Shape{1000}, DataType::kFloat32, Device(DeviceType::kCuda, 1));
    ASSERT_TRUE(t.ok());
    freed = t->raw_data();
  }
  auto on0 = Tensor::Empty(Shape{1000}, DataType::kFloat32, Device(DeviceType::kCuda, 0));
  ASSERT_TRUE(on0.ok());
  EXPECT_NE(on0->raw_data(), freed);
  EXPECT_EQ(PointerDevice(on0->raw_data()), 0);
  auto again = Tensor::Empty(Shape{1000}, DataType::kFloat32, Device(DeviceType::kCuda, 1));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(PointerDevice(again->raw_data()), 1);
  // A stream made for cuda:1 records it; allocating for cuda:0 on it is an error.
  auto s1 = OwnedCudaStream::Create(1);
  ASSERT_TRUE(s1.ok()) << s1.status();
  EXPECT_EQ(s1->stream().device_index(), 1);
  EXPECT_EQ(CurrentDevice(), 0);
  auto wrong = Tensor::Empty(Shape{4}, DataType::kFloat32, Device(DeviceType::kCuda, 0), s1->stream());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("cuda:1"), std::string::npos) << wrong.status();
  auto right = Tensor::Empty(Shape{4}, DataType::kFloat32, Device(DeviceType::kCuda, 1), s1->stream());
  ASSERT_TRUE(right.ok()) << right.status();
  ASSERT_TRUE(s1->stream().Synchronize().ok());
  ReleaseCachedCudaMemory();
  EXPECT_EQ(CurrentDevice(), 0);
}

TEST(MultiGpuTest, ToBetweenGpusRoundTrips) {
  KPS_SKIP_WITHOUT_GPUS(2);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  for (DataType dt : {DataType::kFloat32, DataType::kInt64, DataType::kBFloat16, DataType::kBool}) {
    SCOPED_TRACE(DataTypeName(dt));
    Tensor host = RandomTensor(Shape{37, 129}, dt, seed);
    const std::vector<double> want = ToDoubles(host);
    auto on0 = host.To(Device(DeviceType::kCuda, 0));
    ASSERT_TRUE(on0.ok()) << on0.status();
    auto on1 = on0->To(Device(DeviceType::kCuda, 1));
    ASSERT_TRUE(on1.ok()) << on1.status();
    EXPECT_EQ(on1->device_index(), 1);
    EXPECT_EQ(PointerDevice(on1->raw_data()), 1);
    EXPECT_EQ(CurrentDevice(), 0);
    EXPECT_EQ(ToDoubles(*on1), want);  // read back from cuda:1 while cuda:0 is current
    auto back = on1->To(Device(DeviceType::kCuda, 0));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->device_index(), 0);
    EXPECT_EQ(ToDoubles(*back), want);
    // kCuda without an index keeps a CUDA tensor on its GPU.
    auto same = on1->To(DeviceType::kCuda);
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(same->device_index(), 1);
    // A strided view goes through the host.
    auto t1 = on1->Transpose(0, 1);
    ASSERT_TRUE(t1.ok());
    auto t0 = t1->To(Device(DeviceType::kCuda, 0));
    ASSERT_TRUE(t0.ok()) << t0.status();
    EXPECT_EQ(t0->device_index(), 0);
    EXPECT_EQ(ToDoubles(*t0), ToDoubles(*host.Transpose(0, 1)));
    EXPECT_EQ(CurrentDevice(), 0);
  }
  // On a stream of the source GPU: fine; of the target's: an error naming it.
  Tensor host = RandomTensor(Shape{1 << 20}, DataType::kFloat32, seed);
  auto s0 = OwnedCudaStream::Create(0);
  auto s1 = OwnedCudaStream::Create(1);
  ASSERT_TRUE(s0.ok() && s1.ok());
  auto on0 = host.To(Device(DeviceType::kCuda, 0), s0->stream());
  ASSERT_TRUE(on0.ok()) << on0.status();
  auto on1 = on0->To(Device(DeviceType::kCuda, 1), s0->stream());
  ASSERT_TRUE(on1.ok()) << on1.status();
  EXPECT_EQ(ToDoubles(*on1), ToDoubles(host));
  auto wrong = on0->To(Device(DeviceType::kCuda, 1), s1->stream());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("the stream is on cuda:1"), std::string::npos) << wrong.status();
  ASSERT_TRUE(s0->stream().Synchronize().ok());
  EXPECT_EQ(CurrentDevice(), 0);
}

}  // namespace
}  // namespace kps
