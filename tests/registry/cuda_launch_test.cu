// LaunchKernel (registry/cuda_launch.h): arguments convert to the kernel's parameter
// types, kernels of one signature keep their own handles, a struct parameter arrives
// whole, and a bad configuration is a Status naming the kernel (and leaves no sticky
// error behind for the next launch).
#include "registry/cuda_launch.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "registry/status.h"
#include "testing/support.h"

namespace kps {
namespace {

__global__ void WriteMix(int64_t* out, int64_t a, double b, int16_t c) {
  out[threadIdx.x] = a * 1000 + static_cast<int64_t>(b * 4) * 10 + c + threadIdx.x;
}
// The same signature as WriteMix: it must not be launched in WriteMix's stead.
__global__ void WriteMixNegated(int64_t* out, int64_t a, double b, int16_t c) {
  out[threadIdx.x] = -(a * 1000 + static_cast<int64_t>(b * 4) * 10 + c + threadIdx.x);
}

struct Big {
  int32_t v[100];  // 400 bytes, past what a few registers would carry
};
__global__ void CopyBig(int32_t* out, Big big) { out[threadIdx.x] = big.v[threadIdx.x]; }

std::vector<int64_t> Read(const int64_t* d, int n) {
  std::vector<int64_t> h(n, 0);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(int64_t), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

class CudaLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KPS_SKIP_WITHOUT_GPU();
    ASSERT_EQ(cudaMalloc(&out_, kThreads * sizeof(int64_t)), cudaSuccess);
    ASSERT_EQ(cudaMemset(out_, 0xFF, kThreads * sizeof(int64_t)), cudaSuccess);  // poison
  }
  void TearDown() override {
    if (out_ != nullptr) cudaFree(out_);
  }
  static constexpr int kThreads = 37;
  int64_t* out_ = nullptr;
};

TEST_F(CudaLaunchTest, ArgumentsConvertToTheKernelsTypes) {
  std::mt19937_64 rng(testing::FreshSeed());
  const int a = static_cast<int>(rng() % 100000);     // int -> int64_t
  const float b = static_cast<float>(rng() % 64) / 4;  // float -> double, exact in quarters
  const int c = static_cast<int>(rng() % 9);           // int -> int16_t
  ASSERT_TRUE(LaunchKernel<&WriteMix>("WriteMix", dim3(1), dim3(kThreads), 0, nullptr, out_, a, b, c).ok());
  const std::vector<int64_t> got = Read(out_, kThreads);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(got[t], int64_t{a} * 1000 + static_cast<int64_t>(b * 4) * 10 + c + t) << "thread " << t;
  }
}

TEST_F(CudaLaunchTest, KernelsOfOneSignatureKeepTheirOwnHandles) {
  std::mt19937_64 rng(testing::FreshSeed());
  const int64_t a = static_cast<int64_t>(rng() % 100000) + 1;
  for (int round = 0; round < 2; ++round) {  // the second round runs on cached handles
    ASSERT_TRUE(LaunchKernel<&WriteMix>("WriteMix", dim3(1), dim3(kThreads), 0, nullptr, out_, a, 0.25, int16_t{1}).ok());
    EXPECT_EQ(Read(out_, 1)[0], a * 1000 + 10 + 1);
    ASSERT_TRUE(LaunchKernel<&WriteMixNegated>("WriteMixNegated", dim3(1), dim3(kThreads), 0, nullptr, out_, a, 0.25,
                                               int16_t{1})
                    .ok());
    EXPECT_EQ(Read(out_, 1)[0], -(a * 1000 + 10 + 1));
  }
}

TEST_F(CudaLaunchTest, StructParameterArrivesWhole) {
  std::mt19937_64 rng(testing::FreshSeed());
  Big big;
  for (int32_t& v : big.v) v = static_cast<int32_t>(rng());
  int32_t* out = reinterpret_cast<int32_t*>(out_);  // 37 x 8 bytes hold 74 int32
  ASSERT_TRUE(LaunchKernel<&CopyBig>("CopyBig", dim3(1), dim3(2 * kThreads), 0, nullptr, out, big).ok());
  std::vector<int32_t> got(2 * kThreads, 0);
  ASSERT_EQ(cudaMemcpy(got.data(), out, got.size() * sizeof(int32_t), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int t = 0; t < 2 * kThreads; ++t) EXPECT_EQ(got[t], big.v[t]) << "element " << t;
}

TEST_F(CudaLaunchTest, BadConfigurationIsAStatusNamingTheKernel) {
  // 2048 threads a block is past every CUDA device's limit of 1024.
  const absl::Status s = LaunchKernel<&WriteMix>("WriteMix<test>", dim3(1), dim3(2048), 0, nullptr, out_, 1, 1.0, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("WriteMix<test>"), absl::string_view::npos) << s;
  // Nothing sticky: the next launch and the runtime's error state are clean.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_TRUE(LaunchKernel<&WriteMix>("WriteMix", dim3(1), dim3(kThreads), 0, nullptr, out_, 2, 0.5, int16_t{3}).ok());
  EXPECT_EQ(Read(out_, 1)[0], 2000 + 20 + 3);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// One mapping serves the runtime's errors and the driver's (launches): the numbers they
// share give the same Status code. Needs no GPU.
TEST(CudaErrorCodeTest, RuntimeAndDriverErrorsMapAlike) {
  EXPECT_EQ(CudaErrorCode(cudaErrorMemoryAllocation), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CudaErrorCode(CUDA_ERROR_OUT_OF_MEMORY), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CudaErrorCode(cudaErrorInvalidValue), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaErrorCode(CUDA_ERROR_INVALID_VALUE), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaErrorCode(CUDA_ERROR_INVALID_HANDLE), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaErrorCode(cudaErrorInvalidConfiguration), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaErrorCode(cudaErrorNoDevice), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CudaErrorCode(CUDA_ERROR_NO_DEVICE), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CudaErrorCode(cudaErrorLaunchFailure), absl::StatusCode::kInternal);
  const absl::Status s = CudaErrorToStatus(cudaErrorMemoryAllocation, "cudaMallocAsync of 8 bytes");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("cudaMallocAsync of 8 bytes failed: cudaErrorMemoryAllocation"), absl::string_view::npos)
      << s;
}

}  // namespace
}  // namespace kps
