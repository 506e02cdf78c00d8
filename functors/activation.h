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
    const auto s = details::Sigmoid(static_cast<MPType<T>>(in));
    return static_cast<T>(s.num / s.den);
  }
};

// x * sigmoid(x) (swish); floating types only. silu(-inf) == -0.
template <typename T>
struct SiluFunctor {
  static_assert(IsFloatingType<T>, "SiluFunctor: floating types only");
  KPS_FUNCTOR_HD T operator()(T in) const {
    using M = MPType<T>;
    const M x = static_cast<M>(in);
    const auto s = details::Sigmoid(x);
    return static_cast<T>(details::ClampLow(x) * s.num / s.den);
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
// details::Erfc16 (a rational fit and the approximate exponential, within a hundredth of
// their ulp), where the float library's erfcf made gelu compute-bound: gelu_f16_256M,
// H200, 0.645 ms against PyTorch's 0.331.
template <typename T>
struct GeluFunctor {
  static_assert(IsFloatingType<T>, "GeluFunctor: floating types only");
  KPS_FUNCTOR_HD T operator()(T in) const {
    using M = MPType<T>;
    const M x = static_cast<M>(in);
    constexpr M kMinusRSqrt2 = static_cast<M>(-0.70710678118654752440);
    if constexpr (sizeof(T) == 2) {
      return static_cast<T>(0.5f * details::ClampLow(x) * details::Erfc16(x * kMinusRSqrt2));
    } else {
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
