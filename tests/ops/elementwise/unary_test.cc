// The one-line unary ops on every device and dtype, against <cmath> in double:
// random inputs with edge values, contiguous and strided.
#include <cmath>
#include <functional>
#include <limits>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/reference/elementwise.h"
#include "testing/op_test.h"
#include "testing/support.h"

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


bool Matches(DataType dt, double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  // Transcendentals: a few ulps of float32 / one rounding of 16-bit types; the
  // functors' own tests hold the tight per-function bounds.
  const double tol = dt == DataType::kFloat32 ? 4e-7 * std::max(1.0, std::fabs(want)) : testing::Tolerance(dt, want);
  return std::fabs(got - want) <= tol;
}

// Matches's tolerance, for the op test kit.
double UnaryTolerance(DataType dt, double want, const testing::RefCall&) {
  return dt == DataType::kFloat32 ? 4e-7 * std::max(1.0, std::fabs(want)) : testing::Tolerance(dt, want);
}

class UnaryOpTest : public ::kps::testing::PerDeviceTest {};

// Each op through the kit (testing/op_test.h): every dtype it registers, edge sizes,
// misaligned and strided inputs, outputs poisoned twice, bitwise repeatable, CUDA against
// the CPU, and the schema's error cases. Float-only ops see NaN, +-inf, -0 and the
// extremes; the ops that take integers see values in [-1000, 1000], whose results
// integers hold exactly (after wrapping).
TEST_P(UnaryOpTest, EveryOpAndDtypeThroughTheKit) {
  for (const UnaryCase& c : kCases) {
    SCOPED_TRACE(c.op);
    const testing::Values values = c.floats_only ? testing::Values::WithSpecials() : testing::Values::Range(-1000, 1000);
    testing::OpTest(c.op)
        .Input("x", values)
        .Deterministic()
        .Tolerance(UnaryTolerance)
        .Reference([&c](const testing::RefCall& call) {
          const DataType dt = call.dtype();
          return call.Map([&](double x) {
            const double r = c.ref(x);
            return IsIntegral(dt) ? reference::WrapTo(dt, static_cast<int64_t>(r)) : r;
          });
        })
        .Run(GetParam());
  }
}

TEST_P(UnaryOpTest, PredicatesThroughTheKit) {
  for (const PredicateCase& c : kPredicates) {
    SCOPED_TRACE(c.op);
    testing::OpTest(c.op)
        .Input("x", testing::Values::WithSpecials())
        .Deterministic()
        .Reference([&c](const testing::RefCall& call) {
          return call.Map([&](double x) { return c.ref(x) ? 1.0 : 0.0; }, DataType::kBool);
        })
        .Run(GetParam());
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
