// Every functor on the host (as CPU kernels run them, compiled by the host compiler)
// against independent long-double references: see functor_check.h for the suites and
// the accepted error per functor and dtype.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "tests/functors/functor_check.h"

namespace kps {
namespace testing {
namespace functor_check {
namespace {

KPS_DEFINE_FUNCTOR_TESTS(FunctorHost, HostApplier, (void)0)

template <typename T>
class FunctorHostIdentity : public ::testing::Test {};
TYPED_TEST_SUITE(FunctorHostIdentity, AllTypes);
TYPED_TEST(FunctorHostIdentity, ReduceInitialIsTheIdentity) { CheckInitialIsIdentity<TypeParam>(); }

// The documented integer edge cases, spelled out (the suites cover them among others).
TEST(FunctorHostEdges, IntegerDivisionIsDefined) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::lowest();
  EXPECT_EQ(DivFunctor<int32_t>()(7, 0), 0);
  EXPECT_EQ(DivFunctor<int32_t>()(kMin, -1), kMin);
  EXPECT_EQ(DivFunctor<int64_t>()(std::numeric_limits<int64_t>::lowest(), -1),
            std::numeric_limits<int64_t>::lowest());
  EXPECT_EQ(DivFunctor<int8_t>()(-128, -1), -128);
  EXPECT_EQ(FloorDivFunctor<int32_t>()(7, 0), 0);
  EXPECT_EQ(FloorDivFunctor<int32_t>()(kMin, -1), kMin);
  EXPECT_EQ(FloorDivFunctor<int32_t>()(-7, 2), -4);
  EXPECT_EQ(FloorDivFunctor<int32_t>()(7, -2), -4);
  EXPECT_EQ(FloorDivFunctor<int32_t>()(-7, -2), 3);
  EXPECT_EQ(DivFunctor<int32_t>()(-7, 2), -3);
  EXPECT_EQ(AddFunctor<int32_t>()(std::numeric_limits<int32_t>::max(), 1), kMin);
  EXPECT_EQ(MulFunctor<int16_t>()(-32768, -1), -32768);
  EXPECT_EQ(SquareFunctor<uint16_t>()(65535), 1);  // no int overflow after promotion
  EXPECT_EQ(AbsFunctor<int32_t>()(kMin), kMin);
  EXPECT_EQ(PowFunctor<int32_t>()(2, 31), kMin);
  EXPECT_EQ(PowFunctor<int32_t>()(-1, -3), -1);
  EXPECT_EQ(PowFunctor<int32_t>()(0, -1), 0);
}

TEST(FunctorHostEdges, FloatSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(DivFunctor<float>()(1.0f, 0.0f), inf);
  EXPECT_EQ(DivFunctor<float>()(1.0f, -0.0f), -inf);
  EXPECT_TRUE(std::isnan(DivFunctor<float>()(0.0f, 0.0f)));
  EXPECT_EQ(FloorDivFunctor<float>()(-7.0f, 2.0f), -4.0f);
  EXPECT_TRUE(std::isnan(MaxFunctor<float>()(nan, 1.0f)));
  EXPECT_TRUE(std::isnan(MaxFunctor<float>()(1.0f, nan)));
  EXPECT_TRUE(std::isnan(MinFunctor<float>()(1.0f, nan)));
  EXPECT_FALSE(std::signbit(MaxFunctor<float>()(-0.0f, 0.0f)));
  EXPECT_FALSE(std::signbit(MaxFunctor<float>()(0.0f, -0.0f)));
  EXPECT_TRUE(std::signbit(MinFunctor<float>()(0.0f, -0.0f)));
  EXPECT_TRUE(std::signbit(MinFunctor<float>()(-0.0f, 0.0f)));
  EXPECT_TRUE(std::isnan(ClipFunctor<float>(0, 1)(nan)));
  EXPECT_EQ(RoundFunctor<float>()(2.5f), 2.0f);
  EXPECT_EQ(RoundFunctor<float>()(-3.5f), -4.0f);
  EXPECT_EQ((CastFunctor<float, int32_t>()(nan)), 0);
  EXPECT_EQ((CastFunctor<float, int32_t>()(inf)), std::numeric_limits<int32_t>::max());
  EXPECT_EQ((CastFunctor<float, int8_t>()(-1e9f)), -128);
  EXPECT_EQ((CastFunctor<double, uint8_t>()(-3.7)), 0);
  EXPECT_EQ((CastFunctor<float, bool>()(nan)), true);
  EXPECT_EQ((CastFunctor<float, bool>()(-0.0f)), false);
  EXPECT_EQ((CastFunctor<int32_t, int8_t>()(300)), 44);
  EXPECT_EQ(SiluFunctor<float>()(-inf), 0.0f);
  EXPECT_EQ(GeluFunctor<float>()(-inf), 0.0f);
  EXPECT_EQ(GeluTanhFunctor<float>()(inf), inf);
}

// Float floor_div and remainder are Python's // and % (the floor of the exact
// quotient), values as Python prints them; y == 0 as NumPy (x / 0 and NaN).
TEST(FunctorHostEdges, FloatFloorDivAndRemainderArePythons) {
  const double inf = std::numeric_limits<double>::infinity();
  const FloorDivFunctor<double> fd;
  const RemainderFunctor<double> rem;
  EXPECT_EQ(fd(1.0, 0.1), 9.0);  // floor(1.0 / 0.1) would be floor(10.0)
  EXPECT_EQ(rem(1.0, 0.1), 0.09999999999999995);
  EXPECT_EQ(fd(-1.0, 0.1), -10.0);
  EXPECT_EQ(rem(-1.0, 0.1), 5.551115123125783e-17);
  EXPECT_EQ(fd(7.5, -2.0), -4.0);
  EXPECT_EQ(rem(7.5, -2.0), -0.5);
  EXPECT_EQ(FloorDivFunctor<float>()(1.0f, 0.1f), 9.0f);
  EXPECT_EQ(FloorDivFunctor<float>()(-7.0f, 2.0f), -4.0f);
  EXPECT_TRUE(std::signbit(fd(-0.0, 5.0)));
  EXPECT_FALSE(std::signbit(rem(-4.0, 2.0)));  // zero remainders take the sign of y
  EXPECT_TRUE(std::signbit(rem(4.0, -2.0)));
  EXPECT_EQ(fd(-5.0, inf), -1.0);
  EXPECT_EQ(rem(-5.0, inf), inf);
  EXPECT_EQ(rem(5.0, inf), 5.0);
  EXPECT_EQ(fd(1.0, 0.0), inf);
  EXPECT_EQ(fd(1.0, -0.0), -inf);
  EXPECT_TRUE(std::isnan(fd(0.0, 0.0)));
  EXPECT_TRUE(std::isnan(rem(1.0, 0.0)));
  EXPECT_TRUE(std::isnan(fd(inf, 2.0)));
  EXPECT_TRUE(std::isnan(rem(inf, 2.0)));
  EXPECT_EQ(RemainderFunctor<int32_t>()(-7, 2), 1);  // integers unchanged
  EXPECT_EQ(RemainderFunctor<int32_t>()(7, 0), 0);
}

// gelu, silu and sigmoid of every float16 and bfloat16 value (details::Gelu16, a
// degree-5 fit of erfc; details::Sigmoid16): faithful, within one ulp of the exact value
// (long double), and the limits exact. This runs the host path (exact exp2 and
// reciprocal); the device's ex2.approx and rcp.approx add under 2^-18 relative.
template <typename T, typename F, typename R>
void Check16Exhaustively(const char* name, F f, R ref, int digits, long double min_subnormal) {
  long double worst = 0;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint16_t b = static_cast<uint16_t>(bits);
    T h;
    std::memcpy(&h, &b, sizeof(b));
    const float x = static_cast<float>(h);
    const float got = static_cast<float>(f(h));
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got)) << name << " " << bits;
      continue;
    }
    const long double want = ref(static_cast<long double>(x));
    if (std::isinf(x) || want == 0) {  // limits and +-0: exact, with the sign
      EXPECT_EQ(got, want) << name << " " << bits;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << name << " " << bits;
      continue;
    }
    int exp = 0;
    std::frexp(want, &exp);
    const long double ulp = std::max(std::ldexp(1.0L, exp - digits), min_subnormal);
    const long double err = std::fabs(static_cast<long double>(got) - want) / ulp;
    worst = std::max(worst, err);
    ASSERT_LE(err, 1.0L) << "x = " << x << " (bits " << bits << "): " << name << " " << got << ", exact " << want;
  }
  std::printf("%s, every %d-digit value: worst %.3Lf ulp\n", name, digits, worst);
}

long double ExactGelu(long double x) {
  return std::isinf(x) && x < 0 ? -0.0L : 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
}
long double ExactSigmoid(long double x) { return 1 / (1 + std::exp(-x)); }
long double ExactSilu(long double x) { return std::isinf(x) && x < 0 ? -0.0L : x / (1 + std::exp(-x)); }

template <typename T>
void CheckActivations16(int digits, long double min_subnormal) {
  Check16Exhaustively<T>("gelu", GeluFunctor<T>(), ExactGelu, digits, min_subnormal);
  Check16Exhaustively<T>("sigmoid", SigmoidFunctor<T>(), ExactSigmoid, digits, min_subnormal);
  Check16Exhaustively<T>("silu", SiluFunctor<T>(), ExactSilu, digits, min_subnormal);
}

TEST(FunctorHostEdges, ActivationsOfEvery16BitValueAreFaithful) {
  CheckActivations16<float16>(11, std::ldexp(1.0L, -24));
  CheckActivations16<bfloat16>(8, std::ldexp(1.0L, -133));
}

}  // namespace
}  // namespace functor_check
}  // namespace testing
}  // namespace kps
