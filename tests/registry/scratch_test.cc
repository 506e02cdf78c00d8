// Stream scratch (registry/scratch.h): per-stream blocks, zeroed tickets, growth and
// release, and a CPU stream is an error.
#include "registry/scratch.h"

#include <cuda_runtime_api.h>

#include <vector>

#include "gtest/gtest.h"
#include "testing/support.h"

namespace kps {
namespace {

std::vector<unsigned> ReadTickets(const unsigned* tickets, size_t n, cudaStream_t s) {
  std::vector<unsigned> v(n, 0xdeadbeef);
  EXPECT_EQ(cudaMemcpyAsync(v.data(), tickets, n * sizeof(unsigned), cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  return v;
}

TEST(ScratchTest, CpuStreamIsAnError) {
  auto s = GetStreamScratch(Stream::Cpu(), 16, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("CUDA stream"), absl::string_view::npos) << s.status();
}

TEST(ScratchTest, PerStreamBlocksWithZeroTicketsThatGrow) {
  KPS_SKIP_WITHOUT_GPU();
  auto owned = OwnedCudaStream::Create();
  ASSERT_TRUE(owned.ok()) << owned.status();
  const Stream a = Stream::Cuda(), b = owned->stream();
  auto sa = GetStreamScratch(a, 1000, 10);
  auto sb = GetStreamScratch(b, 1000, 10);
  ASSERT_TRUE(sa.ok() && sb.ok());
  EXPECT_NE(sa->data, sb->data);
  EXPECT_NE(sa->tickets, sb->tickets);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(sa->data) % 256, 0u);
  for (unsigned t : ReadTickets(sb->tickets, 10, b.cuda_stream())) EXPECT_EQ(t, 0u);
  // The same request gives the same block; a larger one a block that holds it, tickets zero.
  auto again = GetStreamScratch(b, 1000, 10);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->data, sb->data);
  EXPECT_EQ(again->tickets, sb->tickets);
  const size_t big = size_t{3} << 20, many = 5000;
  auto grown = GetStreamScratch(b, big, many);
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_EQ(cudaMemsetAsync(grown->data, 0x5a, big, b.cuda_stream()), cudaSuccess);  // all of it is usable
  for (unsigned t : ReadTickets(grown->tickets, many, b.cuda_stream())) ASSERT_EQ(t, 0u);
  ReleaseStreamScratch(b.cuda_stream());
  EXPECT_EQ(cudaStreamSynchronize(b.cuda_stream()), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace kps
