// The one-line binary ops (comparisons, logical, maximum/minimum, div, floor_divide,
// remainder, pow) on every device and dtype, same-shape and broadcast, against references written
// from the documented semantics.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/reference/elementwise.h"
#include "testing/op_test.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

using Ref = std::function<double(DataType, double, double)>;

double Bool(bool b) { return b ? 1.0 : 0.0; }

// The type a float functor computes in: float for 16- and 32-bit types, double for f64.
double InCompute(DataType dt, double v) { return dt == DataType::kFloat64 ? v : static_cast<float>(v); }

double IntDiv(DataType dt, int64_t a, int64_t b, bool floor) {
  if (b == 0) return 0.0;
  if (b == -1) return reference::WrapTo(dt, static_cast<int64_t>(0 - static_cast<uint64_t>(a)));
  int64_t q = a / b;
  if (floor && (a % b != 0) && ((a < 0) != (b < 0))) --q;
  return reference::WrapTo(dt, q);
}

// Python's float divmod (its // and %, NumPy's floor_divide and remainder) in the
// compute type of dt, each operation rounded to it: the floor of the exact quotient and
// the remainder with the sign of b. b == 0 gives a / b and NaN, as NumPy does.
std::pair<double, double> PyDivMod(DataType dt, double a, double b) {
  a = InCompute(dt, a);
  b = InCompute(dt, b);
  double mod = std::fmod(a, b);  // exact
  if (b == 0) return {InCompute(dt, a / b), mod};
  double div = InCompute(dt, InCompute(dt, a - mod) / b);
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod = InCompute(dt, mod + b);
      div = InCompute(dt, div - 1);
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  if (div == 0) return {std::copysign(0.0, a / b), mod};
  double floor_div = std::floor(div);
  if (div - floor_div > 0.5) floor_div += 1;
  return {floor_div, mod};
}

double IntPow(DataType dt, int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1.0 : (base == -1 ? (exp % 2 == 0 ? 1.0 : -1.0) : 0.0);
  uint64_t r = 1, b = static_cast<uint64_t>(base);
  for (uint64_t e = static_cast<uint64_t>(exp); e; e >>= 1, b *= b) {
    if (e & 1) r *= b;
  }
  return reference::WrapTo(dt, static_cast<int64_t>(r));
}

struct BinaryCase {
  const char* op;
  bool bool_out;
  bool all_dtypes;  // else the signed numeric dtypes
  Ref ref;
};

const BinaryCase kCases[] = {
    {"eq", true, true, [](DataType, double a, double b) { return Bool(a == b); }},
    {"ne", true, true, [](DataType, double a, double b) { return Bool(a != b); }},
    {"lt", true, true, [](DataType, double a, double b) { return Bool(a < b); }},
    {"le", true, true, [](DataType, double a, double b) { return Bool(a <= b); }},
    {"gt", true, true, [](DataType, double a, double b) { return Bool(a > b); }},
    {"ge", true, true, [](DataType, double a, double b) { return Bool(a >= b); }},
    {"logical_and", true, true, [](DataType, double a, double b) { return Bool(a != 0 && b != 0); }},
    {"logical_or", true, true, [](DataType, double a, double b) { return Bool(a != 0 || b != 0); }},
    {"logical_xor", true, true, [](DataType, double a, double b) { return Bool((a != 0) != (b != 0)); }},
    {"maximum", false, false,
     [](DataType, double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b); }},
    {"minimum", false, false,
     [](DataType, double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::min(a, b); }},
    {"div", false, false,
     [](DataType dt, double a, double b) {
       return IsIntegral(dt) ? IntDiv(dt, static_cast<int64_t>(a), static_cast<int64_t>(b), false)
                             : testing::RoundTo(dt, a / b);
     }},
    {"floor_divide", false, false,
     [](DataType dt, double a, double b) {
       return IsIntegral(dt) ? IntDiv(dt, static_cast<int64_t>(a), static_cast<int64_t>(b), true)
                             : testing::RoundTo(dt, PyDivMod(dt, a, b).first);
     }},
    {"remainder", false, false,
     [](DataType dt, double a, double b) {
       if (IsIntegral(dt)) {
         const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
         if (y == 0 || y == -1) return 0.0;
         int64_t r = x % y;
         if (r != 0 && ((r < 0) != (y < 0))) r += y;
         return reference::WrapTo(dt, r);
       }
       return testing::RoundTo(dt, PyDivMod(dt, a, b).second);
     }},
    {"pow", false, false,
     [](DataType dt, double a, double b) {
       return IsIntegral(dt) ? IntPow(dt, static_cast<int64_t>(a), static_cast<int64_t>(b))
                             : testing::RoundTo(dt, std::pow(a, b));
     }},
};

bool Matches(DataType dt, const char* op, double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  double tol = testing::Tolerance(dt, want);
  if (std::string(op) == "pow" && dt == DataType::kFloat32) tol = 1e-6 * std::max(1.0, std::fabs(want));
  return std::fabs(got - want) <= tol;
}

class BinaryOpsTest : public ::kps::testing::PerDeviceTest {};

// Each op through the kit (testing/op_test.h): every dtype it registers, edge sizes,
// broadcasting pairs, misaligned and strided inputs, outputs poisoned twice, bitwise
// repeatable, CUDA against the CPU, and the schema's error cases (shapes that do not
// broadcast among them). Integer pow takes exponents in [-1, 7], so not every power wraps.
TEST_P(BinaryOpsTest, EveryOpAndDtypeThroughTheKit) {
  for (const BinaryCase& c : kCases) {
    SCOPED_TRACE(c.op);
    const bool pow = std::string(c.op) == "pow";
    testing::OpTest(c.op)
        .Input("x")
        .Input("y", pow ? testing::Values::Range(-1, 7) : testing::Values{})
        .Broadcasts()
        .Deterministic()
        .Tolerance([&c](DataType dt, double want, const testing::RefCall&) {
          if (std::string(c.op) == "pow" && dt == DataType::kFloat32) return 1e-6 * std::max(1.0, std::fabs(want));
          return testing::Tolerance(dt, want);
        })
        .Reference([&c](const testing::RefCall& call) {
          const DataType dt = call.dtype();
          return call.Map([&](double a, double b) { return c.ref(dt, a, b); },
                          c.bool_out ? DataType::kBool : dt);
        })
        .Run(GetParam());
  }
}

TEST_P(BinaryOpsTest, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<float> xs = {nan, 1.0f, -0.0f, 0.0f, static_cast<float>(inf), -3.0f, 5.0f, -7.0f};
  const std::vector<float> ys = {1.0f, nan, 0.0f, -0.0f, static_cast<float>(inf), 0.0f, -2.0f, 2.0f};
  Tensor x = *Tensor::FromVector(xs, Shape{8})->To(GetParam());
  Tensor y = *Tensor::FromVector(ys, Shape{8})->To(GetParam());
  for (const BinaryCase& c : kCases) {
    auto out = Call(c.op).Input("x", x).Input("y", y).RunOne();
    ASSERT_TRUE(out.ok()) << c.op << ": " << out.status();
    const std::vector<double> got = ToDoubles(*out);
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = c.ref(DataType::kFloat32, xs[i], ys[i]);
      EXPECT_TRUE(Matches(DataType::kFloat32, c.op, got[i], want))
          << c.op << "(" << xs[i] << ", " << ys[i] << ") = " << got[i] << ", want " << want;
    }
  }
}

// Float floor_divide and remainder against Python (x // y, x % y; NumPy for y == 0):
// the floor of the exact quotient (1.0 // 0.1 == 9.0, not floor(1.0 / 0.1) == 10.0) and
// the remainder with the sign of y, including the signs of zeros, infinities and NaN.
// float64 rows are Python's own results; float32 rows the exact floor quotient and the
// exact remainder rounded to float32 (Python's fractions), for the inputs rounded to
// float32. Both the tensor and the scalar forms.
struct PyDivModCase {
  double a, b, q64, r64, q32, r32;
};

void ExpectSameFloat(double got, double want, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << " = " << got << ", want NaN";
  } else {
    EXPECT_TRUE(got == want && std::signbit(got) == std::signbit(want)) << what << " = " << got << ", want " << want;
  }
}

TEST_P(BinaryOpsTest, FloatFloorDivideAndRemainderMatchPython) {
  const double kInf = std::numeric_limits<double>::infinity(), kNan = std::nan("");
  const PyDivModCase cases[] = {
      {1.0, 0.1, 9.0, 0.09999999999999995, 9.0, 0.09999998658895493},
      {-1.0, 0.1, -10.0, 5.551115123125783e-17, -10.0, 1.4901161193847656e-08},
      {1.0, -0.1, -10.0, -5.551115123125783e-17, -10.0, -1.4901161193847656e-08},
      {-1.0, -0.1, 9.0, -0.09999999999999995, 9.0, -0.09999998658895493},
      {7.5, -2.0, -4.0, -0.5, -4.0, -0.5},
      {-7.5, 2.0, -4.0, 0.5, -4.0, 0.5},
      {7.5, 2.0, 3.0, 1.5, 3.0, 1.5},
      {-7.5, -2.0, 3.0, -1.5, 3.0, -1.5},
      {0.3, 0.1, 2.0, 0.09999999999999998, 3.0, 7.450580596923828e-09},
      {2.0, 0.2, 9.0, 0.1999999999999999, 9.0, 0.19999997317790985},
      {0.7, 0.1, 6.0, 0.09999999999999992, 6.0, 0.09999997913837433},
      {5.0, 3.0, 1.0, 2.0, 1.0, 2.0},
      {-5.0, 3.0, -2.0, 1.0, -2.0, 1.0},
      {0.0, 5.0, 0.0, 0.0, 0.0, 0.0},
      {-0.0, 5.0, -0.0, 0.0, -0.0, 0.0},
      {0.0, -5.0, -0.0, -0.0, -0.0, -0.0},
      {-0.0, -5.0, 0.0, -0.0, 0.0, -0.0},
      {-4.0, 2.0, -2.0, 0.0, -2.0, 0.0},
      {4.0, -2.0, -2.0, -0.0, -2.0, -0.0},
      {4.0, 2.0, 2.0, 0.0, 2.0, 0.0},
      {-4.0, -2.0, 2.0, -0.0, 2.0, -0.0},
      {-1e-30, 1.0, -1.0, 1.0, -1.0, 1.0},
      {1e-30, -1.0, -1.0, -1.0, -1.0, -1.0},
      {5.0, kInf, 0.0, 5.0, 0.0, 5.0},
      {-5.0, kInf, -1.0, kInf, -1.0, kInf},
      {5.0, -kInf, -1.0, -kInf, -1.0, -kInf},
      {-5.0, -kInf, 0.0, -5.0, 0.0, -5.0},
      {0.0, kInf, 0.0, 0.0, 0.0, 0.0},
      {-0.0, kInf, -0.0, 0.0, -0.0, 0.0},
      {-0.0, -kInf, 0.0, -0.0, 0.0, -0.0},
      {kInf, 2.0, kNan, kNan, kNan, kNan},
      {-kInf, 2.0, kNan, kNan, kNan, kNan},
      {kNan, 2.0, kNan, kNan, kNan, kNan},
      {2.0, kNan, kNan, kNan, kNan, kNan},
      {kInf, kInf, kNan, kNan, kNan, kNan},
      // y == 0 (Python raises; NumPy): x / 0 and NaN.
      {1.0, 0.0, kInf, kNan, kInf, kNan},
      {-1.0, 0.0, -kInf, kNan, -kInf, kNan},
      {1.0, -0.0, -kInf, kNan, -kInf, kNan},
      {0.0, 0.0, kNan, kNan, kNan, kNan},
      {kNan, 0.0, kNan, kNan, kNan, kNan},
  };
  for (DataType dt : {DataType::kFloat64, DataType::kFloat32}) {
    const bool f64 = dt == DataType::kFloat64;
    std::vector<double> as, bs;
    for (const PyDivModCase& c : cases) {
      as.push_back(c.a);
      bs.push_back(c.b);
    }
    const Tensor x = *testing::HostFromDoubles(as, Shape{static_cast<int64_t>(as.size())}, dt).To(GetParam());
    const Tensor y = *testing::HostFromDoubles(bs, Shape{static_cast<int64_t>(bs.size())}, dt).To(GetParam());
    auto q = Call("floor_divide").Input("x", x).Input("y", y).RunOne();
    auto r = Call("remainder").Input("x", x).Input("y", y).RunOne();
    ASSERT_TRUE(q.ok()) << q.status();
    ASSERT_TRUE(r.ok()) << r.status();
    const std::vector<double> qv = ToDoubles(*q), rv = ToDoubles(*r);
    for (size_t i = 0; i < as.size(); ++i) {
      const PyDivModCase& c = cases[i];
      const std::string args =
          std::string(DataTypeName(dt)) + " (" + std::to_string(c.a) + ", " + std::to_string(c.b) + ")";
      ExpectSameFloat(qv[i], f64 ? c.q64 : c.q32, "floor_divide" + args);
      ExpectSameFloat(rv[i], f64 ? c.r64 : c.r32, "remainder" + args);
      // The scalar forms: y as the attribute `other`.
      const Tensor xi = *testing::HostFromDoubles({c.a}, Shape{1}, dt).To(GetParam());
      auto qs = Call("floor_divide_scalar").Input("x", xi).Attr("other", c.b).RunOne();
      auto rs = Call("remainder_scalar").Input("x", xi).Attr("other", c.b).RunOne();
      ASSERT_TRUE(qs.ok()) << qs.status();
      ASSERT_TRUE(rs.ok()) << rs.status();
      ExpectSameFloat(ToDoubles(*qs)[0], f64 ? c.q64 : c.q32, "floor_divide_scalar" + args);
      ExpectSameFloat(ToDoubles(*rs)[0], f64 ? c.r64 : c.r32, "remainder_scalar" + args);
    }
  }
  // Python's 1e20 // 3.0 and 1e20 % 3.0: a quotient past 2^53 comes out rounded.
  const Tensor big = *testing::HostFromDoubles({1e20}, Shape{1}, DataType::kFloat64).To(GetParam());
  const Tensor three = *testing::HostFromDoubles({3.0}, Shape{1}, DataType::kFloat64).To(GetParam());
  ExpectSameFloat(ToDoubles(*Call("floor_divide").Input("x", big).Input("y", three).RunOne())[0], 3.333333333333333e+19,
                  "floor_divide(1e20, 3)");
  ExpectSameFloat(ToDoubles(*Call("remainder").Input("x", big).Input("y", three).RunOne())[0], 1.0,
                  "remainder(1e20, 3)");
  // 16-bit floats compute in float and round once: the exact floor quotient of the
  // inputs rounded to the dtype (float16's 0.1 is below 1/10, bfloat16's above), and the
  // exact remainder, which these dtypes hold exactly here (Python's fractions).
  const struct {
    DataType dt;
    double a, b, q, r;
  } half_cases[] = {
      {DataType::kFloat16, 1.0, 0.1, 10.0, 0.000244140625},
      {DataType::kFloat16, -1.0, 0.1, -11.0, 0.0997314453125},
      {DataType::kFloat16, 1.0, -0.1, -11.0, -0.0997314453125},
      {DataType::kFloat16, 0.7, 0.1, 7.0, 0.0003662109375},
      {DataType::kFloat16, -4.0, 2.0, -2.0, 0.0},
      {DataType::kFloat16, 4.0, -2.0, -2.0, -0.0},
      {DataType::kBFloat16, 1.0, 0.1, 9.0, 0.09912109375},
      {DataType::kBFloat16, -1.0, 0.1, -10.0, 0.0009765625},
      {DataType::kBFloat16, 2.0, 0.2, 9.0, 0.1982421875},
      {DataType::kBFloat16, 0.7, 0.1, 6.0, 0.0986328125},
      {DataType::kBFloat16, 7.5, -2.0, -4.0, -0.5},
      {DataType::kBFloat16, -0.0, 5.0, -0.0, 0.0},
  };
  for (const auto& c : half_cases) {
    const std::string args =
        std::string(DataTypeName(c.dt)) + " (" + std::to_string(c.a) + ", " + std::to_string(c.b) + ")";
    const Tensor x = *testing::HostFromDoubles({c.a}, Shape{1}, c.dt).To(GetParam());
    const Tensor y = *testing::HostFromDoubles({c.b}, Shape{1}, c.dt).To(GetParam());
    ExpectSameFloat(ToDoubles(*Call("floor_divide").Input("x", x).Input("y", y).RunOne())[0], c.q,
                    "floor_divide" + args);
    ExpectSameFloat(ToDoubles(*Call("remainder").Input("x", x).Input("y", y).RunOne())[0], c.r, "remainder" + args);
  }
}

TEST_P(BinaryOpsTest, IntegerDivisionByZeroAndOverflowAreDefined) {
  const int32_t mn = std::numeric_limits<int32_t>::min();
  Tensor x = *Tensor::FromVector<int32_t>({7, -7, mn, mn, 0, -9}, Shape{6})->To(GetParam());
  Tensor y = *Tensor::FromVector<int32_t>({0, 2, -1, 0, 0, 4}, Shape{6})->To(GetParam());
  EXPECT_EQ(*Call("div").Input("x", x).Input("y", y).RunOne()->ToVector<int32_t>(),
            (std::vector<int32_t>{0, -3, mn, 0, 0, -2}));
  EXPECT_EQ(*Call("floor_divide").Input("x", x).Input("y", y).RunOne()->ToVector<int32_t>(),
            (std::vector<int32_t>{0, -4, mn, 0, 0, -3}));
}

// The scalar forms ("<op>_scalar", attribute `other`): every op and dtype, contiguous,
// unaligned and strided x, against the binary reference with y == other everywhere.
TEST_P(BinaryOpsTest, ScalarFormsMatchTheBinaryReference) {
  struct ScalarCase {
    std::string op;
    bool bool_out;
    bool all_dtypes;
    bool add_mul_dtypes;  // every numeric dtype
    Ref ref;
  };
  std::vector<ScalarCase> cases;
  for (const BinaryCase& c : kCases) cases.push_back({c.op, c.bool_out, c.all_dtypes, false, c.ref});
  cases.push_back({"add", false, false, true, [](DataType dt, double a, double b) { return reference::Add(dt, a, b, 1); }});
  cases.push_back({"sub", false, false, true, [](DataType dt, double a, double b) { return reference::Add(dt, a, b, -1); }});
  cases.push_back({"mul", false, false, true, [](DataType dt, double a, double b) { return reference::Mul(dt, a, b); }});
  for (const ScalarCase& c : cases) {
    for (int d = 0; d < kNumDataTypes; ++d) {
      const DataType dt = static_cast<DataType>(d);
      if (c.add_mul_dtypes ? dt == DataType::kBool
                           : !c.all_dtypes && (dt == DataType::kBool || dt == DataType::kUInt8)) {
        continue;
      }
      for (int layout = 0; layout < 3; ++layout) {  // contiguous, unaligned, transposed
        const uint64_t seed = FreshSeed();
        const std::string name = c.op + "_scalar";
        SCOPED_TRACE(::testing::Message() << name << " " << DataTypeName(dt) << " layout " << layout << " seed=" << seed);
        Tensor x = layout == 1 ? *testing::RandomTensorAtOffset(Shape{1029}, dt, seed, 1).To(GetParam())
                               : *testing::RandomTensor(layout == 0 ? Shape{1029} : Shape{21, 49}, dt, seed).To(GetParam());
        if (layout == 2) x = *x.Transpose(0, 1);
        // `other`: a value of the dtype (so exactly representable), small for integer pow.
        double other = ToDoubles(testing::RandomTensor(Shape{1}, dt, seed + 7))[0];
        if (c.op == "pow" && IsIntegral(dt)) other = static_cast<double>(seed % 9) - 1;
        auto out = Call(name).Input("x", x).Attr("other", other).RunOne();
        ASSERT_TRUE(out.ok()) << out.status();
        ASSERT_EQ(out->shape(), x.shape());
        ASSERT_EQ(out->dtype(), c.bool_out ? DataType::kBool : dt);
        const std::vector<double> xv = ToDoubles(x), got = ToDoubles(*out);
        for (size_t i = 0; i < got.size(); ++i) {
          const double want = c.ref(dt, xv[i], other);
          ASSERT_TRUE(Matches(dt, c.op.c_str(), got[i], want))
              << "element " << i << ": " << xv[i] << ", " << other << " -> " << got[i] << ", want " << want;
        }
      }
    }
  }
}

TEST_P(BinaryOpsTest, ScalarFormsRejectValuesTheDtypeCannotHold) {
  Tensor i32 = *testing::RandomTensor(Shape{5}, DataType::kInt32, FreshSeed()).To(GetParam());
  Tensor i8 = *testing::RandomTensor(Shape{5}, DataType::kInt8, FreshSeed()).To(GetParam());
  Tensor b = *testing::RandomTensor(Shape{5}, DataType::kBool, FreshSeed()).To(GetParam());
  auto r1 = Call("lt_scalar").Input("x", i32).Attr("other", 2.5).RunOne();
  ASSERT_FALSE(r1.ok());
  EXPECT_TRUE(testing::Contains(std::string(r1.status().message()), "op 'lt_scalar'"));
  EXPECT_TRUE(testing::Contains(std::string(r1.status().message()), "'other' = 2.5 is not representable in int32"));
  auto r2 = Call("add_scalar").Input("x", i32).Attr("other", 3e9).RunOne();
  EXPECT_TRUE(testing::Contains(std::string(r2.status().message()), "not representable in int32"));
  auto r3 = Call("maximum_scalar").Input("x", i8).Attr("other", 128.0).RunOne();
  EXPECT_TRUE(testing::Contains(std::string(r3.status().message()), "not representable in int8"));
  EXPECT_TRUE(Call("maximum_scalar").Input("x", i8).Attr("other", -128.0).RunOne().ok());
  auto r4 = Call("logical_and_scalar").Input("x", b).Attr("other", 2.0).RunOne();
  EXPECT_TRUE(testing::Contains(std::string(r4.status().message()), "is not a bool value"));
  auto r5 = Call("eq_scalar").Input("x", i32).RunOne();
  EXPECT_TRUE(testing::Contains(std::string(r5.status().message()), "other"));
  // Floats take any value: 1e300 overflows float32 to inf, as a cast would.
  Tensor f = *Tensor::FromVector<float>({1.0f, -2.0f}, Shape{2})->To(GetParam());
  EXPECT_EQ(*Call("add_scalar").Input("x", f).Attr("other", 1e300).RunOne()->ToVector<float>(),
            (std::vector<float>{std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()}));
}

KPS_INSTANTIATE_ON_DEVICES(BinaryOpsTest);

}  // namespace
}  // namespace kps
