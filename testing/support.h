// Shared test support: the GPU skip rule, fresh random inputs, host views of results.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "gtest/gtest.h"
#include "registry/data_type.h"
#include "registry/device.h"
#include "registry/tensor.h"

namespace kps {
namespace testing {

// True when CUDA tests must run: a GPU is present. Without one they skip, unless
// KPS_REQUIRE_GPU=1, in which case the caller fails.
bool GpuRequired();

// Skips the test when there is no GPU (saying so), or fails it when KPS_REQUIRE_GPU=1.
#define KPS_SKIP_WITHOUT_GPU()                                                         \
  do {                                                                                  \
    if (!::kps::CudaAvailable()) {                                                      \
      if (::kps::testing::GpuRequired()) {                                              \
        FAIL() << "KPS_REQUIRE_GPU=1 but no CUDA device is usable";                     \
      }                                                                                 \
      GTEST_SKIP() << "no CUDA device (set KPS_REQUIRE_GPU=1 to make this a failure)"; \
    }                                                                                   \
  } while (0)

// Skips a test that needs `n` GPUs on a machine with fewer (with none, as
// KPS_SKIP_WITHOUT_GPU: a failure under KPS_REQUIRE_GPU=1). A machine with some GPUs but
// fewer than `n` skips even under KPS_REQUIRE_GPU=1: the 1-GPU run stays clean.
#define KPS_SKIP_WITHOUT_GPUS(n)                                                                   \
  do {                                                                                            \
    KPS_SKIP_WITHOUT_GPU();                                                                       \
    if (::kps::CudaDeviceCount() < (n)) {                                                         \
      GTEST_SKIP() << "needs " << (n) << " GPUs; this process sees " << ::kps::CudaDeviceCount(); \
    }                                                                                             \
  } while (0)

// The fixture of tests run once per device (TEST_P over DeviceType): the CUDA instance
// skips without a GPU, or fails when KPS_REQUIRE_GPU=1. Instantiate with
// KPS_INSTANTIATE_ON_DEVICES.
class PerDeviceTest : public ::testing::TestWithParam<DeviceType> {
 protected:
  void SetUp() override {
    if (GetParam() == DeviceType::kCuda) KPS_SKIP_WITHOUT_GPU();
  }
};

// Instantiates the PerDeviceTest `suite` as Devices/suite.Name/cpu and .../cuda.
#define KPS_INSTANTIATE_ON_DEVICES(suite)                                                                  \
  INSTANTIATE_TEST_SUITE_P(Devices, suite, ::testing::Values(::kps::DeviceType::kCpu, ::kps::DeviceType::kCuda), \
                           [](const auto& info) { return std::string(::kps::DeviceTypeName(info.param)); })

// Every DataType, in enum order: the dtype list of tests that cover them all.
inline constexpr DataType kAllDataTypes[] = {DataType::kBool,    DataType::kInt8,     DataType::kUInt8,
                                             DataType::kInt16,   DataType::kInt32,    DataType::kInt64,
                                             DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                             DataType::kFloat64};
static_assert(sizeof(kAllDataTypes) / sizeof(kAllDataTypes[0]) == kNumDataTypes, "a DataType is missing");

// The devices a test should cover: the CPU, and CUDA when present (or required).
std::vector<DeviceType> TestDevices();

// A generator seeded freshly per call (from std::random_device); the seed is printed by
// SCOPED_TRACE in the tests that use it, so a failure can be replayed.
uint64_t FreshSeed();

// A CPU tensor of random values: floats uniform in [-4, 4) (never all zero or one),
// integers in [-1000, 1000] (unsigned: [0, 255]), bools half true.
Tensor RandomTensor(const Shape& shape, DataType dtype, uint64_t seed);
// The same values placed `offset` elements into a larger buffer, so that the data
// pointer is misaligned for vector loads (offset 1 leaves 16-byte alignment).
Tensor RandomTensorAtOffset(const Shape& shape, DataType dtype, uint64_t seed, int64_t offset);

// Element i of `t` (any device, any layout) as double, in row-major order.
std::vector<double> ToDoubles(const Tensor& t);

// `bytes` bytes of device memory at `p`, copied to the host in the order of stream `s`
// (which it then synchronizes); a failed copy fails the test and leaves 0x11 bytes.
std::vector<uint8_t> DeviceBytes(const void* p, size_t bytes, cudaStream_t s);
// The reverse: a CPU tensor of `values` (row-major) in dtype; floats convert through
// float, integers through int64, bool is values != 0.
Tensor HostFromDoubles(const std::vector<double>& values, const Shape& shape, DataType dtype);

// Rounds a double to dtype and back (what storing a reference value in dtype does).
double RoundTo(DataType dtype, double v);

// |a - b| allowed for results of dtype whose magnitude is near `ref`: one rounding of
// the output type (16-bit: their epsilon; 32-bit: a few ulps; integers: exact).
double Tolerance(DataType dtype, double ref);

// Passes when `text` contains `part`; on failure shows both.
::testing::AssertionResult Contains(const std::string& text, const std::string& part);

// The sizes every elementwise test sweeps: 0, 1, primes, 2^k +- 1, tile edges.
std::vector<int64_t> EdgeSizes();

}  // namespace testing
}  // namespace kps
