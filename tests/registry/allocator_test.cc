// The CUDA caching allocator (registry/allocator.h): size classes, same-stream reuse,
// which streams cache, release on stream destruction and on demand, and distinct blocks
// under concurrent use. Running out of memory is in allocator_oom_test.cc.
#include "registry/allocator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "testing/support.h"

namespace kps {
namespace {

TEST(CudaBlockSizeTest, ClassesHoldTheRequestWithLittleWaste) {
  EXPECT_EQ(CudaBlockSize(1), 512u);
  EXPECT_EQ(CudaBlockSize(512), 512u);
  EXPECT_EQ(CudaBlockSize(513), 1024u);
  EXPECT_EQ(CudaBlockSize(size_t{1} << 20), size_t{1} << 20);
  EXPECT_EQ(CudaBlockSize((size_t{1} << 20) + 1), (size_t{1} << 20) + (size_t{1} << 17));
  EXPECT_EQ(CudaBlockSize((size_t{3} << 30) + 7), (size_t{3} << 30) + (size_t{1} << 28));
  std::mt19937_64 rng(std::random_device{}());
  size_t prev_bytes = 0, prev_size = 0;
  std::vector<size_t> sizes;
  for (int i = 0; i < 2000; ++i) sizes.push_back(rng() >> (20 + rng() % 40));  // 0 .. 2^44, log-spread
  for (int k = 0; k < 30; ++k) {
    for (int64_t d : {-1, 0, 1}) sizes.push_back((size_t{1} << (k + 10)) + d);
  }
  std::sort(sizes.begin(), sizes.end());
  for (size_t b : sizes) {
    if (b == 0) continue;
    const size_t s = CudaBlockSize(b);
    ASSERT_GE(s, b);
    ASSERT_EQ(s % 512, 0u) << b;
    ASSERT_LE(s - b, std::max<size_t>(511, b / 8)) << b;  // at most 12.5% above 1 MiB
    if (b >= prev_bytes) ASSERT_GE(s, prev_size) << b;     // classes never shrink as requests grow
    prev_bytes = b;
    prev_size = s;
  }
}

// Storage on `stream`, checked.
std::shared_ptr<Storage> Alloc(size_t bytes, const Stream& stream) {
  auto s = Storage::Allocate(bytes, DeviceType::kCuda, stream);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : nullptr;
}

TEST(CudaAllocatorTest, SameStreamTakesBackItsFreedBlock) {
  KPS_SKIP_WITHOUT_GPU();
  const Stream stream = Stream::Cuda();
  // An earlier test may have left a block of this class cached on this stream, which the
  // first allocation would take (seen on 2 GPUs, after the multi-GPU tests).
  ReleaseCachedCudaMemory();
  const size_t before = CachedCudaBytes();
  auto a = Alloc(4000, stream);
  ASSERT_NE(a, nullptr);
  void* const pa = a->data();
  // Work queued on the block before it is freed runs before the next owner's work.
  ASSERT_EQ(cudaMemsetAsync(pa, 0x3c, 4000, stream.cuda_stream()), cudaSuccess);
  a.reset();
  EXPECT_EQ(CachedCudaBytes(), before + CudaBlockSize(4000));
  auto b = Alloc(3900, stream);  // same class
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->data(), pa);
  EXPECT_EQ(CachedCudaBytes(), before);
  // A fresh block is poisoned again (tests run with poisoning on), after the old memset.
  ASSERT_TRUE(AllocationPoisoning());
  for (uint8_t v : testing::DeviceBytes(b->data(), 3900, stream.cuda_stream())) ASSERT_EQ(v, 0xFF);
  ASSERT_EQ(cudaMemsetAsync(b->data(), 0x5a, 3900, stream.cuda_stream()), cudaSuccess);
  for (uint8_t v : testing::DeviceBytes(b->data(), 3900, stream.cuda_stream())) ASSERT_EQ(v, 0x5a);
  // Another class does not take it.
  b.reset();
  auto c = Alloc(CudaBlockSize(4000) + 1, stream);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->data(), pa);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaAllocatorTest, OwnedStreamsCacheSeparatelyAndReleaseWhenDestroyed) {
  KPS_SKIP_WITHOUT_GPU();
  const size_t bytes = 12345, size = CudaBlockSize(bytes);
  void* owned_block = nullptr;
  {
    auto owned = OwnedCudaStream::Create();
    ASSERT_TRUE(owned.ok()) << owned.status();
    const size_t before = CachedCudaBytes();
    auto a = Alloc(bytes, owned->stream());
    ASSERT_NE(a, nullptr);
    owned_block = a->data();
    a.reset();
    EXPECT_EQ(CachedCudaBytes(), before + size);
    // The default stream does not take a block whose last work is on another stream.
    auto d = Alloc(bytes, Stream::Cuda());
    ASSERT_NE(d, nullptr);
    EXPECT_NE(d->data(), owned_block);
    d.reset();
    auto again = Alloc(bytes, owned->stream());
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->data(), owned_block);
    again.reset();
    ASSERT_EQ(cudaStreamSynchronize(owned->stream().cuda_stream()), cudaSuccess);
  }
  // Destroying the stream gave its cached block back to the pool; the default stream's
  // block (from `d`) stays cached.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ReleaseCachedCudaMemory();
  EXPECT_EQ(CachedCudaBytes(), 0u);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaAllocatorTest, CallerOwnedStreamsAreNotCached) {
  KPS_SKIP_WITHOUT_GPU();
  cudaStream_t raw = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking), cudaSuccess);
  const size_t before = CachedCudaBytes();
  auto a = Alloc(77777, Stream::Cuda(raw));
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(cudaMemsetAsync(a->data(), 0x42, 77777, raw), cudaSuccess);
  for (uint8_t v : testing::DeviceBytes(a->data(), 77777, raw)) ASSERT_EQ(v, 0x42);
  a.reset();
  EXPECT_EQ(CachedCudaBytes(), before);  // straight back to the pool
  auto p = Alloc(5000, Stream::Cuda(cudaStreamPerThread));  // nor is the per-thread stream
  ASSERT_NE(p, nullptr);
  p.reset();
  EXPECT_EQ(CachedCudaBytes(), before);
  ASSERT_EQ(cudaStreamSynchronize(raw), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(raw), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaAllocatorTest, ReleaseEmptiesTheCache) {
  KPS_SKIP_WITHOUT_GPU();
  const Stream stream = Stream::Cuda();
  std::vector<std::shared_ptr<Storage>> held;
  for (size_t bytes : {size_t{100}, size_t{70000}, size_t{3} << 20, size_t{5}}) held.push_back(Alloc(bytes, stream));
  held.clear();
  EXPECT_GE(CachedCudaBytes(), CudaBlockSize(size_t{3} << 20));
  ReleaseCachedCudaMemory();
  EXPECT_EQ(CachedCudaBytes(), 0u);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CudaAllocatorTest, ConcurrentThreadsNeverShareALiveBlock) {
  KPS_SKIP_WITHOUT_GPU();
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  std::mutex mu;
  std::set<void*> live;
  bool shared = false, failed = false;
  // All on the legacy default stream, the one they share (its blocks are cached).
  auto worker = [&](int seed) {
    cudaSetDevice(device);
    std::mt19937 rng(seed);
    std::vector<std::shared_ptr<Storage>> held;
    for (int i = 0; i < 400; ++i) {
      if (held.size() < 8 && rng() % 3 != 0) {
        const size_t bytes = 1 + rng() % 5000;  // a few classes, so blocks come back often
        auto s = Storage::Allocate(bytes, DeviceType::kCuda, Stream::Cuda());
        std::lock_guard<std::mutex> lock(mu);
        if (!s.ok()) {
          failed = true;
          continue;
        }
        if (!live.insert((*s)->data()).second) shared = true;
        held.push_back(*s);
      } else if (!held.empty()) {
        const size_t k = rng() % held.size();
        {
          std::lock_guard<std::mutex> lock(mu);
          live.erase(held[k]->data());
        }
        held.erase(held.begin() + k);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& s : held) live.erase(s->data());
    held.clear();
  };
  std::vector<std::thread> threads;
  std::random_device rd;
  for (int t = 0; t < 8; ++t) threads.emplace_back(worker, static_cast<int>(rd()));
  for (auto& t : threads) t.join();
  EXPECT_FALSE(failed);
  EXPECT_FALSE(shared);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace kps
