// The op registered in this project is found by name and runs on every device.
#include <cstdlib>
#include <random>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "registry/kernel.h"

namespace {

bool GpuRequired() {
  const char* v = std::getenv("KPS_REQUIRE_GPU");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

std::vector<float> RandomValues(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

void CheckAxpby(kps::DeviceType device) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(seed);
  const size_t n = 10007;  // a prime: the last tile is partial
  const std::vector<float> xv = RandomValues(n, seed), yv = RandomValues(n, seed + 1);
  kps::Tensor x = *kps::Tensor::FromVector(xv, kps::Shape{static_cast<int64_t>(n)})->To(device);
  kps::Tensor y = *kps::Tensor::FromVector(yv, kps::Shape{static_cast<int64_t>(n)})->To(device);
  auto out = kps::Call("axpby").Input("x", x).Input("y", y).Attr("a", 2.5).Attr("b", -0.5).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> got = *out->ToVector<float>();
  for (size_t i = 0; i < n; ++i) {
    const double want = 2.5 * xv[i] - 0.5 * yv[i];
    ASSERT_NEAR(got[i], want, 1e-5 * (1 + std::abs(want))) << i;
  }
}

TEST(CustomOpTest, RegisteredWithTheKpsMacros) {
  const kps::OpSchema* s = kps::OpRegistry::Global().Find("axpby");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->Describe().find("a (float, default 1)"), std::string::npos);
  EXPECT_NE(kps::OpRegistry::Global().Find("add"), nullptr);  // KPS's own ops are there too
  const auto keys = kps::KernelRegistry::Global().RegisteredKeys("axpby");
  EXPECT_EQ(keys.size(), 4u) << kps::KeysToString(keys);
}

TEST(CustomOpTest, RunsOnTheCpu) { CheckAxpby(kps::DeviceType::kCpu); }

TEST(CustomOpTest, RunsOnCuda) {
  if (!kps::CudaAvailable()) {
    if (GpuRequired()) FAIL() << "KPS_REQUIRE_GPU=1 but no CUDA device";
    GTEST_SKIP() << "no CUDA device";
  }
  CheckAxpby(kps::DeviceType::kCuda);
}

TEST(CustomOpTest, BadCallsGetClearErrors) {
  kps::Tensor x = *kps::Tensor::FromVector<float>({1, 2}, kps::Shape{2});
  kps::Tensor y = *kps::Tensor::FromVector<float>({1, 2, 3}, kps::Shape{3});
  auto r = kps::Call("axpby").Input("x", x).Input("y", y).Run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("op 'axpby': 'x' and 'y' must have one shape"), std::string::npos) << r.status();
}

}  // namespace
