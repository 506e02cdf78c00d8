// The CUDA caching allocator when the device runs out (registry/allocator.h): the cache
// goes back and the allocation is retried; an impossible size is a clear error. It takes
// most of the device's memory, so CTest runs it alone (RUN_SERIAL): tests running beside
// it would fail their own allocations.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/allocator.h"
#include "testing/support.h"

namespace kps {
namespace {

TEST(CudaAllocatorTest, RunningOutGivesTheCacheBackAndRetries) {
  KPS_SKIP_WITHOUT_GPU();
  ReleaseCachedCudaMemory();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  const Stream stream = Stream::Cuda();
  // Two blocks of different classes that cannot both fit: the second only succeeds if
  // the first, cached, goes back to the driver.
  const size_t first = free_bytes / 100 * 55, second = free_bytes / 100 * 70;
  ASSERT_NE(CudaBlockSize(first), CudaBlockSize(second));
  {
    auto a = Storage::Allocate(first, DeviceType::kCuda, stream);
    ASSERT_TRUE(a.ok()) << a.status();
  }
  EXPECT_GE(CachedCudaBytes(), CudaBlockSize(first));
  {
    auto b = Storage::Allocate(second, DeviceType::kCuda, stream);
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_EQ(cudaMemsetAsync((*b)->data(), 0x33, 4096, stream.cuda_stream()), cudaSuccess);
    for (uint8_t v : testing::DeviceBytes((*b)->data(), 4096, stream.cuda_stream())) ASSERT_EQ(v, 0x33);
  }
  ReleaseCachedCudaMemory();
  // More than the device has: a clear error naming the size, and the device still works.
  auto huge = Storage::Allocate(total * 2, DeviceType::kCuda, stream);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  EXPECT_NE(huge.status().message().find(std::to_string(total * 2)), absl::string_view::npos) << huge.status();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  {
    auto small = Storage::Allocate(1000, DeviceType::kCuda, stream);
    ASSERT_TRUE(small.ok()) << small.status();
  }
  ReleaseCachedCudaMemory();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // The pool keeps what it was given back; hand it to the driver so later tests start
  // from a device with its memory free.
  cudaMemPool_t pool;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  EXPECT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
}

}  // namespace
}  // namespace kps
