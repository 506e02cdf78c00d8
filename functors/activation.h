// Activation functors: relu, sigmoid, silu, tanh, gelu (erf form and tanh form).
//
// Floating types only (relu also takes integers); they compute in MPType (float for
// float16 / bfloat16) and round once to T. The formulas avoid cancellation and overflow:
// sigmoid uses e^-|x| on both sides, gelu uses erfc, the tanh-form gelu uses
// 1 + tanh(u) == 2 / (1 + e^-2u); so a float result is within a few ulps of the exact
// value where the function is well conditioned (tests/functors state the bounds), and
// the limits at +-inf are exact (silu(-inf) == gelu(-inf) == -0, not NaN).
#pragma once

#include <type_traits>

#include "functors/apply2.h"
#include "functors/macros.h"
#include "functors/math.h"
#include "functors/mp_type.h"

namespace kps {
namespace details {

// sigmoid(x) as num / den with num, den > 0: 1 / (1 + e^-x) for x >= 0 and
// e^x / (1 + e^x) for x < 0, so e^-|x| never overflows. NaN gives NaN / NaN.
template <typename M>
struct SigmoidParts {
  M num;
  M den;
};
template <typename M>
KPS_FUNCTOR_HD SigmoidParts<M> Sigmoid(M x) {
  const M e = Exp(-Fabs(x));
  return {x >= static_cast<M>(0) ? static_cast<M>(1) : e, static_cast<M>(1) + e};
}

// x for the products x * g(x) where g(x) underflows to 0 as x -> -inf: clamping x at
// -1000 (where g is already 0 in double) turns -inf * 0 == NaN into -1000 * 0 == -0.
template <typename M>
KPS_FUNCTOR_HD M ClampLow(M x) {
  return x < static_cast<M>(-1000) ? static_cast<M>(-1000) : x;
}

// 16-bit outputs take Exp2Approx, which flushes results below 2^-126 to zero; bfloat16
// holds values down to 2^-133 (sigmoid(-92), gelu(-13.6)), so its exponentials are taken
// 2^32 times too large and scaled back by a multiply, which rounds gradually into float's
// subnormals. float16's smallest value, 2^-24, needs no scaling.
template <typename T>
inline constexpr int kExpScaleLog2 = std::is_same_v<T, __nv_bfloat16> ? 32 : 0;

// sigmoid(x) for 16-bit outputs, as SigmoidParts (num / den) but with num and 1 / den
// from the approximate exponential and reciprocal: relative error below 2^-18 (the
// rounding of -|x| log2(e) adds at most 2^-18 for |x| < 100), under a thousandth of a
// 16-bit ulp; CUDA's expf and the IEEE division cost 29.75 instructions per element.
struct Sigmoid16Parts {
  float num;   // 1 for x >= 0, e^x for x < 0
  float rden;  // 1 / (1 + e^-|x|)
};
template <typename T>
KPS_FUNCTOR_HD Sigmoid16Parts Sigmoid16(float x) {
  constexpr int kS = kExpScaleLog2<T>;
  constexpr float kLog2e = 1.4426950408889634f;
  const float scaled = Exp2Approx(Fma(-Fabs(x), kLog2e, static_cast<float>(kS)));
  const float e = kS == 0 ? scaled : scaled * (1.0f / static_cast<float>(1ull << kS));
  return {x >= 0.0f ? 1.0f : e, RcpApprox(1.0f + e)};
}

// gelu(x) = x Phi(x) for 16-bit outputs. h = Phi(-|x|) = erfc(a) / 2 with a = |x| / sqrt 2
// is t 2^(P(t) - 1 - a^2 log2(e)), t = 1 / (1 + a / 2) (the form of Numerical Recipes'
// erfcc) with a degree-5 P fit here (minimax of log2(erfc(a) / t) + a^2 log2(e) for a in
// [0, 10]: relative error 7.7e-6, against 1.2e-7 for erfcc's degree 9; a 16-bit result
// needs 2^-12). a^2 = x^2 / 2 is exact for 16-bit x. Then gelu = r - |x| h with r = x
// for x >= 0 and -0 below: x h for x < 0, x (1 - h) for x > 0, one fma rounding each,
// and +-0 keep their sign. |x| is clamped at 1000 as in ClampLow, so that gelu(-inf) ==
// -0 rather than NaN.
template <typename T>
KPS_FUNCTOR_HD float Gelu16(float x) {
  constexpr int kS = kExpScaleLog2<T>;
  constexpr float kHalfRSqrt2 = 0.35355339059327376f;  // t = 1 / (1 + |x| / (2 sqrt 2))
  constexpr float kMinusHalfLog2e = -0.72134752044448170f;
  const float ax = Fabs(x);
  const float t = RcpApprox(Fma(ax, kHalfRSqrt2, 1.0f));
  float p = 0.3300749957561493f;
  p = Fma(p, t, -1.0231460332870483f);
  p = Fma(p, t, 0.684546947479248f);
  p = Fma(p, t, 0.3670864999294281f);
  p = Fma(p, t, 1.4686819314956665f);
  // The constant term -1.8272333 less 1 (the halving of erfc) plus the scaling.
  p = Fma(p, t, static_cast<float>(-1.8272333145141602 - 1.0 + kS));
  const float scaled = Exp2Approx(Fma(x * x, kMinusHalfLog2e, p));
  const float h = kS == 0 ? t * scaled : (t * (1.0f / static_cast<float>(1ull << kS))) * scaled;
  const float m = ax < 1000.0f ? ax : 1000.0f;
  return Fma(-m, h, x >= 0.0f ? x : -0.0f);
}

}  // namespace details

// max(x, 0): NaN stays NaN, -0 gives +0 (the result is never negative). Any KPS
// arithmetic type. Apply2: exact.
template <typename T>
struct ReluFunctor {
  KPS_FUNCTOR_HD T operator()(T x) const {
    using M = MPType<T>;
    const M m = static_cast<M>(x);
    if (m > static_cast<M>(0) || details::IsNan(m)) return x;
    return static_cast<T>(static_cast<M>(0));
  }
  template <typename U = T>
  KPS_FUNCTOR_HD Packed2Type<U> Apply2(Packed2Type<U> a) const {
    return details::PackedRelu(a, *this);
  }
};

// 1 / (1 + e^-x); floating types only.
template <typename T>
struct SigmoidFunctor {
  static_assert(IsFloatingType<T>, "SigmoidFunctor: floating types only");
  KPS_FUNCTOR_HD T operator()(T in) const {
    if constexpr (sizeof(T) == 2) {
      const auto s = details::Sigmoid16<T>(static_cast<float>(in));
      return static_cast<T>(s.num * s.rden);
    } else {
      const auto s = details::Sigmoid(static_cast<MPType<T>>(in));
      return static_cast<T>(s.num / s.den);
    }
  }
};

// x * sigmoid(x) (swish); floating types only. silu(-inf) == -0.
template <typename T>
struct SiluFunctor {
  static_assert(IsFloatingType<T>, "SiluFunctor: floating types only");
  KPS_FUNCTOR_HD T operator()(T in) const {
    using M = MPType<T>;
    const M x = static_cast<M>(in);
    if constexpr (sizeof(T) == 2) {
      const auto s = details::Sigmoid16<T>(x);
      return static_cast<T>(details::ClampLow(x) * s.rden * s.num);
    } else {
      const auto s = details::Sigmoid(x);
      return static_cast<T>(details::ClampLow(x) * s.num / s.den);
    }
  }
};

// tanh x; floating types only. tanhf / tanh (CUDA: 2 / 1 ulp).
template <typename T>
struct TanhFunctor {
  static_assert(IsFloatingType<T>, "TanhFunctor: floating types only");
  KPS_FUNCTOR_HD T operator()(T in) const {
    return static_cast<T>(details::Tanh(static_cast<MPType<T>>(in)));
  }
};

// gelu, erf form: x / 2 * (1 + erf(x / sqrt 2)), computed as x / 2 * erfc(-x / sqrt 2)
// (no cancellation for x < 0); floating types only. gelu(-inf) == -0. 16-bit types take
// details::Gelu16 (a degree-5 fit of erfc with the approximate reciprocal and exponential,
// within a hundredth of their ulp): with a degree-9 fit gelu f16 268M ran at 1750
// GB/s against PyTorch's 3241 (H200), compute-bound at 32.5 SASS instructions per
// element; Gelu16 takes 17.
template <typename T>
struct GeluFunctor {
  static_assert(IsFloatingType<T>, "GeluFunctor: floating types only");
  KPS_FUNCTOR_HD T operator()(T in) const {
    using M = MPType<T>;
    const M x = static_cast<M>(in);
    if constexpr (sizeof(T) == 2) {
      return static_cast<T>(details::Gelu16<T>(x));
    } else {
      constexpr M kMinusRSqrt2 = static_cast<M>(-0.70710678118654752440);
      return static_cast<T>(static_cast<M>(0.5) * details::ClampLow(x) * details::Erfc(x * kMinusRSqrt2));
    }
  }
};

// gelu, tanh form (torch's approximate="tanh"): x / 2 * (1 + tanh(u)) with
// u = sqrt(2 / pi) * (x + 0.044715 x^3), computed as x * sigmoid(2u) (no cancellation
// for x < 0); floating types only. Its condition number grows like |u|, so float results
// are within a few ulps times |u| (tests/functors). gelu_tanh(-inf) == -0.
template <typename T>
struct GeluTanhFunctor {
  static_assert(IsFloatingType<T>, "GeluTanhFunctor: floating types only");
  KPS_FUNCTOR_HD T operator()(T in) const {
    using M = MPType<T>;
    const M x = static_cast<M>(in);
    // 2 sqrt(2 / pi) and 2 sqrt(2 / pi) * 0.044715, so that 2u = x * (kA + kB * x^2).
    constexpr M kA = static_cast<M>(1.5957691216057307118);
    constexpr M kB = static_cast<M>(0.071354816272600248776);
    const auto s = details::Sigmoid(x * (kA + kB * (x * x)));
    return static_cast<T>(details::ClampLow(x) * s.num / s.den);
  }
};

}  // namespace kps
