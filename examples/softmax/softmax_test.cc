// example_softmax, registered in this project, against a reference computed in double on
// the host, on the CPU and on CUDA.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/allocator.h"
#include "registry/call.h"
#include "registry/data_type.h"
#include "registry/device.h"
#include "registry/kernel.h"

namespace {

// Every allocation, outputs included, starts as 0xFF bytes (NaN in float32 and bfloat16),
// so an element the kernel fails to write fails the comparison.
class PoisonEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { kps::SetAllocationPoisoning(true); }
};
const auto* const kPoison = ::testing::AddGlobalTestEnvironment(new PoisonEnvironment());

bool GpuRequired() {
  const char* v = std::getenv("KPS_REQUIRE_GPU");
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

// Skips a CUDA test without a GPU, or fails it when KPS_REQUIRE_GPU=1.
#define SKIP_WITHOUT_GPU()                                                                      \
  do {                                                                                         \
    if (!kps::CudaAvailable()) {                                                               \
      if (GpuRequired()) FAIL() << "KPS_REQUIRE_GPU=1 but no CUDA device";                     \
      GTEST_SKIP() << "no CUDA device (set KPS_REQUIRE_GPU=1 to make this a failure)";         \
    }                                                                                          \
  } while (0)

using Dims = std::vector<int64_t>;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Rows of 0 elements and 0 rows; 1 element; rows shorter than a warp's vectors (several
// rows per block); around the register path's tile sizes; the largest row held in
// registers (16384) and the first past it; long rows in two passes, vectorizable
// (32776: a multiple of 8, with a partial last chunk) or not (65537, a prime); rank 3.
const std::vector<Dims> kShapes = {{0, 7},    {3, 0},     {1, 1},     {3, 1},     {1000, 3},   {33, 100},
                                   {9, 257},  {5, 1023},  {7, 1024},  {2, 1025},  {3, 2000},   {4, 4096},
                                   {3, 16384}, {2, 16385}, {2, 32776}, {1, 65537}, {2, 3, 513}};

int64_t Numel(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeString(const Dims& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// The value the kernel sees: float32 as is, bfloat16 rounded.
float Representable(kps::DataType dtype, float v) {
  return dtype == kps::DataType::kBFloat16 ? __bfloat162float(__float2bfloat16(v)) : v;
}

// Fresh values in [-4, 4), shifted per row by -100, 0 or +100 (exp overflows float past
// 88 unless the max is subtracted), about 1 in 50 set to -inf (a masked position; never a
// row's first element, so no row is all -inf).
std::vector<float> RandomRows(const Dims& shape, uint64_t seed, kps::DataType dtype) {
  const int64_t n = Numel(shape);
  const int64_t cols = shape.back();
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::uniform_int_distribution<int> pick(0, 49);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float shift = 100.0f * static_cast<float>((i / cols) % 3 - 1);
    v[i] = pick(gen) == 0 && i % cols != 0 ? -std::numeric_limits<float>::infinity()
                                           : Representable(dtype, value(gen) + shift);
  }
  return v;
}

// softmax in double, row by row: exp(x - max) / sum. NaN or +inf in a row, or a row of
// -inf only, gives NaN through the arithmetic itself.
std::vector<double> Reference(const std::vector<float>& x, int64_t cols) {
  std::vector<double> out(x.size());
  for (size_t start = 0; start < x.size(); start += static_cast<size_t>(cols)) {
    double m = -kInf;
    for (int64_t c = 0; c < cols; ++c) {
      const double v = x[start + c];
      m = (std::isnan(m) || v < m) ? m : v;  // NaN wins
    }
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[start + c] - m);
    for (int64_t c = 0; c < cols; ++c) out[start + c] = std::exp(x[start + c] - m) / sum;
  }
  return out;
}

// A contiguous tensor of `values` on `device`, starting `offset` elements into its
// storage: an offset of 1 misaligns 16-byte vector loads.
kps::Tensor MakeInput(const std::vector<float>& values, const Dims& shape, kps::DataType dtype,
                      kps::DeviceType device, int64_t offset) {
  std::vector<float> padded(static_cast<size_t>(offset), 0.0f);
  padded.insert(padded.end(), values.begin(), values.end());
  const kps::Shape flat{static_cast<int64_t>(padded.size())};
  kps::Tensor host;
  if (dtype == kps::DataType::kBFloat16) {
    std::vector<kps::bfloat16> b(padded.size());
    for (size_t i = 0; i < padded.size(); ++i) b[i] = __float2bfloat16(padded[i]);
    host = *kps::Tensor::FromVector(b, flat);
  } else {
    host = *kps::Tensor::FromVector(padded, flat);
  }
  kps::Tensor storage = *host.To(device);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return *storage.AsStrided(kps::Shape(shape), strides, offset);
}

std::vector<double> ToDoubles(const kps::Tensor& t) {
  // The host vectors are named: a range-for over *t.ToVector() would outlive the
  // StatusOr that holds it.
  std::vector<double> out;
  if (t.dtype() == kps::DataType::kBFloat16) {
    const std::vector<kps::bfloat16> values = *t.ToVector<kps::bfloat16>();
    for (kps::bfloat16 v : values) out.push_back(__bfloat162float(v));
  } else {
    const std::vector<float> values = *t.ToVector<float>();
    out.assign(values.begin(), values.end());
  }
  return out;
}

// Relative error allowed: float32 computes in float (exp 2 ulp, a sum of up to 64K
// values, one scale); bfloat16 rounds the float result once more, to 8 bits (2^-9).
double RelTolerance(kps::DataType dtype) { return dtype == kps::DataType::kBFloat16 ? 1.0 / 256 : 1e-5; }

// Runs example_softmax on `values` and compares it with the reference; NaN where the
// reference has NaN.
void ExpectSoftmax(const std::vector<float>& values, const Dims& shape, kps::DataType dtype, kps::DeviceType device,
                   int64_t offset) {
  const kps::Tensor x = MakeInput(values, shape, dtype, device, offset);
  auto out = kps::Call("example_softmax").Input("x", x).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->shape(), kps::Shape(shape));
  ASSERT_EQ(out->dtype(), dtype);
  ASSERT_EQ(out->device(), device);
  const std::vector<double> got = ToDoubles(*out);
  const std::vector<double> want = Reference(values, shape.back());
  ASSERT_EQ(got.size(), want.size());
  const double rtol = RelTolerance(dtype);
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << "element " << i << " = " << got[i] << ", want NaN";
    } else {
      ASSERT_NEAR(got[i], want[i], rtol * want[i] + 1e-30) << "element " << i << " (row " << i / shape.back() << ")";
    }
  }
}

void CheckShapes(kps::DeviceType device, kps::DataType dtype, const std::vector<Dims>& shapes, int64_t offset) {
  for (const Dims& shape : shapes) {
    const uint64_t seed = std::random_device{}();
    SCOPED_TRACE(::testing::Message() << kps::DataTypeName(dtype) << ShapeString(shape) << " offset " << offset
                                      << " seed " << seed);
    ExpectSoftmax(RandomRows(shape, seed, dtype), shape, dtype, device, offset);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Views one element into their storage: not 16-byte aligned, so the element-wise path.
const std::vector<Dims> kMisalignedShapes = {{5, 1023}, {7, 1024}, {3, 16384}, {2, 32776}};

// NaN, +inf and all--inf rows give NaN; a row whose first elements (for long rows: the
// whole first chunk of the two-pass kernel) are -inf is still right.
void CheckEdgeValues(kps::DeviceType device, kps::DataType dtype) {
  for (int64_t cols : {int64_t{3}, int64_t{40000}}) {
    const uint64_t seed = std::random_device{}();
    SCOPED_TRACE(::testing::Message() << kps::DataTypeName(dtype) << " cols " << cols << " seed " << seed);
    const Dims shape = {5, cols};
    std::vector<float> v = RandomRows(shape, seed, dtype);
    const float inf = std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < cols; ++c) v[c] = -inf;                     // row 0: -inf only
    v[2 * cols - 1] = std::numeric_limits<float>::quiet_NaN();          // row 1: NaN, last
    v[2 * cols + cols / 2] = inf;                                        // row 2: +inf
    for (int64_t c = 0; c < std::max<int64_t>(1, cols - 5); ++c) v[3 * cols + c] = -inf;  // row 3
    ExpectSoftmax(v, shape, dtype, device, 0);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(SoftmaxExampleTest, RegisteredWithTheKpsMacros) {
  const kps::OpSchema* s = kps::OpRegistry::Global().Find("example_softmax");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->Describe().find("over the last dim"), std::string::npos) << s->Describe();
  EXPECT_NE(kps::OpRegistry::Global().Find("sum"), nullptr);  // KPS's own ops are there too
  const auto keys = kps::KernelRegistry::Global().RegisteredKeys("example_softmax");
  EXPECT_EQ(keys.size(), 4u) << kps::KeysToString(keys);  // cpu, cuda x float32, bfloat16
}

TEST(SoftmaxExampleTest, Float32OnCpu) { CheckShapes(kps::DeviceType::kCpu, kps::DataType::kFloat32, kShapes, 0); }
TEST(SoftmaxExampleTest, BFloat16OnCpu) { CheckShapes(kps::DeviceType::kCpu, kps::DataType::kBFloat16, kShapes, 0); }

TEST(SoftmaxExampleTest, Float32OnCuda) {
  SKIP_WITHOUT_GPU();
  CheckShapes(kps::DeviceType::kCuda, kps::DataType::kFloat32, kShapes, 0);
}
TEST(SoftmaxExampleTest, BFloat16OnCuda) {
  SKIP_WITHOUT_GPU();
  CheckShapes(kps::DeviceType::kCuda, kps::DataType::kBFloat16, kShapes, 0);
}

TEST(SoftmaxExampleTest, MisalignedViewsOnCpu) {
  for (kps::DataType dtype : {kps::DataType::kFloat32, kps::DataType::kBFloat16}) {
    CheckShapes(kps::DeviceType::kCpu, dtype, kMisalignedShapes, 1);
  }
}
TEST(SoftmaxExampleTest, MisalignedViewsOnCuda) {
  SKIP_WITHOUT_GPU();
  for (kps::DataType dtype : {kps::DataType::kFloat32, kps::DataType::kBFloat16}) {
    CheckShapes(kps::DeviceType::kCuda, dtype, kMisalignedShapes, 1);
  }
}

TEST(SoftmaxExampleTest, EdgeValuesOnCpu) {
  for (kps::DataType dtype : {kps::DataType::kFloat32, kps::DataType::kBFloat16}) {
    CheckEdgeValues(kps::DeviceType::kCpu, dtype);
  }
}
TEST(SoftmaxExampleTest, EdgeValuesOnCuda) {
  SKIP_WITHOUT_GPU();
  for (kps::DataType dtype : {kps::DataType::kFloat32, kps::DataType::kBFloat16}) {
    CheckEdgeValues(kps::DeviceType::kCuda, dtype);
  }
}

// Each message names the op and the argument, and says what is wrong.
TEST(SoftmaxExampleTest, BadCallsGetClearErrors) {
  auto expect_error = [](const kps::Tensor& x, const std::vector<std::string>& parts) {
    auto r = kps::Call("example_softmax").Input("x", x).Run();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    for (const std::string& part : parts) {
      EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status() << "\nlacks: " << part;
    }
  };
  expect_error(*kps::Tensor::FromVector<float>({1.5f}, kps::Shape{}),
               {"op 'example_softmax': input 'x'", "has rank 0", "rank >= 1"});
  expect_error(*kps::Tensor::FromVector<int32_t>({1, 2, 3}, kps::Shape{3}),
               {"op 'example_softmax': input 'x' has dtype int32", "float32 or bfloat16"});
  expect_error(*kps::Tensor::FromVector<kps::float16>({__float2half(1.0f)}, kps::Shape{1}),
               {"op 'example_softmax': input 'x' has dtype float16"});
  const kps::Tensor m = *kps::Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, kps::Shape{2, 3});
  expect_error(*m.Transpose(0, 1), {"op 'example_softmax': input 'x' is not contiguous"});
}

}  // namespace
