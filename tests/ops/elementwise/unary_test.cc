// The one-line unary ops on every device and dtype, against <cmath> in double:
// random inputs with edge values, contiguous and strided.
#include <cmath>
#include <functional>
#include <limits>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/reference/elementwise.h"
#include "tests/support/test_support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

struct UnaryCase {
  const char* op;
  std::function<double(double)> ref;  // on the input as stored, in double
  bool floats_only;
};

const UnaryCase kCases[] = {
    {"neg", [](double x) { return -x; }, false},
    {"abs", [](double x) { return std::fabs(x); }, false},
    {"exp", [](double x) { return std::exp(x); }, true},
    {"log", [](double x) { return std::log(x); }, true},
    {"sqrt", [](double x) { return std::sqrt(x); }, true},
    {"relu", [](double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }, true},
    {"sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, true},
    {"tanh", [](double x) { return std::tanh(x); }, true},
    {"rsqrt", [](double x) { return 1.0 / std::sqrt(x); }, true},
    {"reciprocal", [](double x) { return 1.0 / x; }, true},
    {"square", [](double x) { return x * x; }, false},
    {"sign", [](double x) { return std::isnan(x) ? x : (x > 0 ? 1.0 : (x < 0 ? -1.0 : x)); }, false},
    {"sin", [](double x) { return std::sin(x); }, true},
    {"cos", [](double x) { return std::cos(x); }, true},
    {"floor", [](double x) { return std::floor(x); }, true},
    {"ceil", [](double x) { return std::ceil(x); }, true},
    {"round", [](double x) { return std::nearbyint(x); }, true},
    // At -inf both take their limit, -0, rather than -inf * 0 = NaN (functors/activation.h).
    {"gelu", [](double x) { return std::isinf(x) && x < 0 ? -0.0 : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, true},
    {"silu", [](double x) { return std::isinf(x) && x < 0 ? -0.0 : x / (1.0 + std::exp(-x)); }, true},
};

// Predicates: bool results.
struct PredicateCase {
  const char* op;
  std::function<bool(double)> ref;
  bool floats_only;
};
const PredicateCase kPredicates[] = {
    {"logical_not", [](double x) { return x == 0; }, false},
    {"isnan", [](double x) { return std::isnan(x); }, true},
    {"isinf", [](double x) { return std::isinf(x); }, true},
};

const DataType kFloats[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
const DataType kSigned[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
                            DataType::kInt8,    DataType::kInt16,    DataType::kInt32,   DataType::kInt64};

bool Matches(DataType dt, double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  // Transcendentals: a few ulps of float32 / one rounding of 16-bit types; the
  // functors' own tests hold the tight per-function bounds.
  const double tol = dt == DataType::kFloat32 ? 4e-7 * std::max(1.0, std::fabs(want)) : testing::Tolerance(dt, want);
  return std::fabs(got - want) <= tol;
}

class UnaryOpTest : public ::kps::testing::PerDeviceTest {};

TEST_P(UnaryOpTest, EveryOpAndDtypeAgainstCmath) {
  for (const UnaryCase& c : kCases) {
    for (DataType dt : kSigned) {
      if (c.floats_only && !IsFloatingPoint(dt)) continue;
      for (int64_t n : {int64_t{1}, int64_t{257}, int64_t{65537}}) {
        const uint64_t seed = FreshSeed();
        SCOPED_TRACE(::testing::Message() << c.op << " " << DataTypeName(dt) << " n=" << n << " seed=" << seed);
        Tensor x = *testing::RandomTensor(Shape{n}, dt, seed).To(GetParam());
        auto out = Call(c.op).Input("x", x).RunOne();
        ASSERT_TRUE(out.ok()) << out.status();
        ASSERT_EQ(out->dtype(), dt);
        const std::vector<double> in = ToDoubles(x), got = ToDoubles(*out);
        for (int64_t i = 0; i < n; ++i) {
          double want = testing::RoundTo(dt, c.ref(in[i]));
          if (IsIntegral(dt)) want = reference::WrapTo(dt, static_cast<int64_t>(c.ref(in[i])));
          ASSERT_TRUE(Matches(dt, got[i], want)) << "x=" << in[i] << " got " << got[i] << " want " << want;
        }
      }
    }
  }
}

TEST_P(UnaryOpTest, EdgeValues) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<float> xs = {0.0f, -0.0f, static_cast<float>(inf), static_cast<float>(-inf),
                                 static_cast<float>(nan), 1e-30f, -1e-30f, 88.0f, -88.0f};
  for (const UnaryCase& c : kCases) {
    if (!c.floats_only) continue;
    Tensor x = *Tensor::FromVector(xs, Shape{static_cast<int64_t>(xs.size())})->To(GetParam());
    auto out = Call(c.op).Input("x", x).RunOne();
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<double> got = ToDoubles(*out);
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = testing::RoundTo(DataType::kFloat32, c.ref(xs[i]));
      EXPECT_TRUE(Matches(DataType::kFloat32, got[i], want)) << c.op << "(" << xs[i] << ") = " << got[i] << ", want " << want;
      if (want == 0.0 && !std::isnan(got[i]) && std::string(c.op) != "relu") {
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want)) << c.op << "(" << xs[i] << "): sign of zero";
      }
    }
  }
}

TEST_P(UnaryOpTest, PredicatesGiveBools) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const PredicateCase& c : kPredicates) {
    for (int d = 0; d < kNumDataTypes; ++d) {
      const DataType dt = static_cast<DataType>(d);
      if (c.floats_only && !IsFloatingPoint(dt)) continue;
      const uint64_t seed = FreshSeed();
      SCOPED_TRACE(::testing::Message() << c.op << " " << DataTypeName(dt) << " seed=" << seed);
      Tensor x = testing::RandomTensor(Shape{1000}, dt, seed);
      if (IsFloatingPoint(dt)) {  // plant special values and zeros
        VisitDataType(dt, [&](auto tag) {
          using T = decltype(tag);
          if constexpr (!std::is_integral_v<T>) {
            T* p = x.data<T>();
            p[3] = static_cast<T>(static_cast<float>(std::nan("")));
            p[5] = static_cast<T>(static_cast<float>(inf));
            p[7] = static_cast<T>(static_cast<float>(-inf));
            p[9] = static_cast<T>(0.0f);
            p[11] = static_cast<T>(-0.0f);
          }
        });
      }
      x = *x.To(GetParam());
      auto out = Call(c.op).Input("x", x).RunOne();
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->dtype(), DataType::kBool);
      const std::vector<double> in = ToDoubles(x), got = ToDoubles(*out);
      for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(got[i], c.ref(in[i]) ? 1.0 : 0.0) << "x=" << in[i];
    }
  }
}

TEST_P(UnaryOpTest, StridedInput) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  Tensor base = *testing::RandomTensor(Shape{33, 65}, DataType::kFloat32, seed).To(GetParam());
  Tensor t = *base.Transpose(0, 1);
  auto out = Call("exp").Input("x", t).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (Shape{65, 33}));
  EXPECT_TRUE(out->is_contiguous());
  const std::vector<double> in = ToDoubles(t), got = ToDoubles(*out);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(Matches(DataType::kFloat32, got[i], std::exp(in[i]))) << i;
}

TEST_P(UnaryOpTest, IntegerInputToAFloatOnlyOpListsTheDtypes) {
  Tensor x = *testing::RandomTensor(Shape{4}, DataType::kInt32, FreshSeed()).To(GetParam());
  auto out = Call("exp").Input("x", x).Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("has no " + std::string(DeviceTypeName(GetParam())) + " kernel for dtype int32"),
            std::string::npos) << out.status();
}

KPS_INSTANTIATE_ON_DEVICES(UnaryOpTest);

}  // namespace
}  // namespace kps
