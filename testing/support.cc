#include "testing/support.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "registry/allocator.h"

namespace kps {
namespace testing {
namespace {

// Every test binary poisons fresh allocations: unwritten outputs read as NaN / -1.
class PoisonEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { SetAllocationPoisoning(true); }
};
const auto* const kPoisonEnv = ::testing::AddGlobalTestEnvironment(new PoisonEnvironment());

template <typename T>
void Fill(T* p, int64_t n, std::mt19937_64& gen) {
  if constexpr (std::is_same_v<T, bool>) {
    std::bernoulli_distribution d(0.5);
    for (int64_t i = 0; i < n; ++i) p[i] = d(gen);
  } else if constexpr (std::is_integral_v<T>) {
    const int64_t lo = std::is_same_v<T, int8_t> ? -128 : (std::is_signed_v<T> ? -1000 : 0);
    const int64_t hi = std::is_same_v<T, int8_t> ? 127 : (std::is_signed_v<T> ? 1000 : 255);
    std::uniform_int_distribution<int64_t> d(lo, hi);
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(d(gen));
  } else {
    std::uniform_real_distribution<double> d(-4.0, 4.0);
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, double>) {
        p[i] = d(gen);
      } else {
        p[i] = static_cast<T>(static_cast<float>(d(gen)));
      }
    }
  }
}

}  // namespace

bool GpuRequired() {
  const char* v = std::getenv("KPS_REQUIRE_GPU");
  return v != nullptr && std::strcmp(v, "0") != 0 && v[0] != '\0';
}

std::vector<DeviceType> TestDevices() {
  std::vector<DeviceType> d = {DeviceType::kCpu};
  if (CudaAvailable() || GpuRequired()) d.push_back(DeviceType::kCuda);
  return d;
}

uint64_t FreshSeed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

Tensor RandomTensorAtOffset(const Shape& shape, DataType dtype, uint64_t seed, int64_t offset) {
  const int64_t n = shape.numel();
  auto storage = Tensor::Empty(Shape{n + offset}, dtype, DeviceType::kCpu);
  EXPECT_TRUE(storage.ok()) << storage.status();
  std::mt19937_64 gen(seed);
  VisitDataType(dtype, [&](auto tag) {
    using T = decltype(tag);
    Fill<T>(storage->data<T>(), n + offset, gen);
  });
  auto view = storage->AsStrided(shape, ContiguousStrides(shape), offset);
  EXPECT_TRUE(view.ok()) << view.status();
  return *view;
}

Tensor RandomTensor(const Shape& shape, DataType dtype, uint64_t seed) {
  return RandomTensorAtOffset(shape, dtype, seed, 0);
}

Tensor HostFromDoubles(const std::vector<double>& values, const Shape& shape, DataType dtype) {
  auto t = Tensor::Empty(shape, dtype, DeviceType::kCpu);
  EXPECT_TRUE(t.ok()) << t.status();
  VisitDataType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t->template data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = values[i] != 0.0;
      } else if constexpr (std::is_same_v<T, double>) {
        p[i] = values[i];
      } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        p[i] = static_cast<T>(static_cast<float>(values[i]));
      } else {
        p[i] = static_cast<T>(static_cast<int64_t>(values[i]));
      }
    }
  });
  return *t;
}

std::vector<double> ToDoubles(const Tensor& t) {
  auto host = t.To(DeviceType::kCpu);
  EXPECT_TRUE(host.ok()) << host.status();
  std::vector<double> out(t.numel());
  VisitDataType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = host->template data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        out[i] = static_cast<double>(static_cast<float>(p[i]));
      } else {
        out[i] = static_cast<double>(p[i]);
      }
    }
  });
  return out;
}

double RoundTo(DataType dtype, double v) {
  return VisitDataType(dtype, [&](auto tag) -> double {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, double>) {
      return v;
    } else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      return static_cast<double>(static_cast<float>(T(static_cast<float>(v))));
    } else {
      return static_cast<double>(static_cast<T>(v));
    }
  });
}

double Tolerance(DataType dtype, double ref) {
  const double mag = std::max(std::fabs(ref), 1.0);
  switch (dtype) {
    case DataType::kFloat16: return mag * 1e-3;    // eps 2^-10, one rounding
    case DataType::kBFloat16: return mag * 8e-3;   // eps 2^-7, one rounding
    case DataType::kFloat32: return mag * 1e-6;
    case DataType::kFloat64: return mag * 1e-14;
    default: return 0.0;
  }
}

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

std::vector<int64_t> EdgeSizes() {
  return {0, 1, 2, 3, 7, 31, 127, 255, 256, 257, 1023, 1024, 1025, 4093, 65535, 65536, 65537,
          1000003};
}

std::vector<uint8_t> DeviceBytes(const void* p, size_t bytes, cudaStream_t s) {
  std::vector<uint8_t> v(bytes, 0x11);
  EXPECT_EQ(cudaMemcpyAsync(v.data(), p, bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  return v;
}

}  // namespace testing
}  // namespace kps
