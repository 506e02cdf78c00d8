// Unary functors: a -> f(a), for host and device.
//
// Floating types compute in MPType (float for float16 / bfloat16) and round once to T.
// Functors marked "floating types only" static_assert on other types. Integer results
// wrap on overflow (two's complement), so abs(lowest) == lowest and -lowest == lowest.
#pragma once

#include <cstdint>
#include <type_traits>

#include "functors/apply2.h"
#include "functors/macros.h"
#include "functors/math.h"
#include "functors/mp_type.h"

namespace kps {

// Converts In to Out (the identity when they match) with static_cast; see CastFunctor
// for conversions with defined NaN / out-of-range behaviour.
template <typename In, typename Out = In>
struct IdentityFunctor {
  KPS_FUNCTOR_HD Out operator()(In a) const { return static_cast<Out>(a); }
};

// -x (Paddle's name). Integers wrap: -lowest == lowest. Apply2: exact.
template <typename T>
struct InverseFunctor {
  KPS_FUNCTOR_HD T operator()(T x) const {
    return static_cast<T>(details::WrapNeg(static_cast<MPType<T>>(x)));
  }
  template <typename U = T>
  KPS_FUNCTOR_HD Packed2Type<U> Apply2(Packed2Type<U> a) const {
    return details::PackedNeg(a, *this);
  }
};

// x * x; integers wrap. Apply2: exact (see apply2.h for bfloat16 below 2^-126).
template <typename T>
struct SquareFunctor {
  KPS_FUNCTOR_HD T operator()(T x) const {
    using W = WrapType<MPType<T>>;
    const W w = static_cast<W>(static_cast<MPType<T>>(x));
    return static_cast<T>(w * w);
  }
  template <typename U = T>
  KPS_FUNCTOR_HD Packed2Type<U> Apply2(Packed2Type<U> a) const {
    return details::PackedMul(a, a, MulSelf{});
  }

 private:
  struct MulSelf {
    KPS_FUNCTOR_HD T operator()(T a, T b) const {
      return static_cast<T>(static_cast<MPType<T>>(a) * static_cast<MPType<T>>(b));
    }
  };
};

// x / n for a count n given at construction (mean's final step). Floating types divide
// in MPType by n converted to it (exact for n <= 2^24 in float): one rounding, not two
// as x * (1 / n) would be. Integers truncate toward zero; n == 0 gives 0 (as DivFunctor).
template <typename T>
struct DivideFunctor {
  using MP = MPType<T>;
  using N = std::conditional_t<IsFloatingType<T>, MP, int64_t>;
  N n;
  KPS_FUNCTOR_HD explicit DivideFunctor(int64_t count) : n(static_cast<N>(count)) {}
  KPS_FUNCTOR_HD T operator()(T x) const {
    if constexpr (IsFloatingType<T>) {
      return static_cast<T>(static_cast<MP>(x) / n);
    } else {
      if (n == 0) return static_cast<T>(0);
      if (n == -1) return static_cast<T>(details::WrapNeg(static_cast<int64_t>(x)));
      return static_cast<T>(static_cast<int64_t>(x) / n);
    }
  }
};

// |x|. Floating: clears the sign (|-0| == +0, NaN stays NaN). Integers wrap:
// abs(lowest) == lowest. Apply2: exact.
template <typename T>
struct AbsFunctor {
  KPS_FUNCTOR_HD T operator()(T x) const {
    using M = MPType<T>;
    const M m = static_cast<M>(x);
    if constexpr (std::is_floating_point_v<M>) {
      return static_cast<T>(details::Fabs(m));
    } else if constexpr (std::is_signed_v<M>) {
      return m < 0 ? static_cast<T>(details::WrapNeg(m)) : x;
    } else {
      return x;
    }
  }
  template <typename U = T>
  KPS_FUNCTOR_HD Packed2Type<U> Apply2(Packed2Type<U> a) const {
    return details::PackedAbs(a, *this);
  }
};

// 1 for x > 0, -1 for x < 0; otherwise x itself (so +-0 keep their sign, NaN stays NaN).
template <typename T>
struct SignFunctor {
  KPS_FUNCTOR_HD T operator()(T x) const {
    using M = MPType<T>;
    const M m = static_cast<M>(x);
    if (m > static_cast<M>(0)) return static_cast<T>(static_cast<M>(1));
    if constexpr (std::is_signed_v<M>) {
      if (m < static_cast<M>(0)) return static_cast<T>(static_cast<M>(-1));
    }
    return x;
  }
};

// Floating types only: the unary functors below compute f in MPType and round once.
#define KPS_FLOAT_UNARY_FUNCTOR_(Name, expr)                                          \
  template <typename T>                                                               \
  struct Name {                                                                       \
    static_assert(IsFloatingType<T>, #Name ": floating types only");                  \
    KPS_FUNCTOR_HD T operator()(T in) const {                                         \
      using M = MPType<T>;                                                            \
      const M x = static_cast<M>(in);                                                 \
      return static_cast<T>(expr);                                                    \
    }                                                                                 \
  };

// 1 / x (IEEE: +-0 -> +-inf); floating types only. Correctly rounded.
KPS_FLOAT_UNARY_FUNCTOR_(ReciprocalFunctor, static_cast<M>(1) / x)
// sqrt(x) (IEEE: sqrt(-0) == -0, x < 0 -> NaN); floating types only. Correctly rounded.
KPS_FLOAT_UNARY_FUNCTOR_(SqrtFunctor, details::Sqrt(x))
// 1 / sqrt(x) (+-0 -> +-inf); floating types only. Device: rsqrt (2 ulp float, 1 double).
KPS_FLOAT_UNARY_FUNCTOR_(RsqrtFunctor, details::Rsqrt(x))
// e^x; floating types only. expf / exp (CUDA: 2 / 1 ulp).
KPS_FLOAT_UNARY_FUNCTOR_(ExpFunctor, details::Exp(x))
// e^x from the hardware's approximate exponential (details::ExpApprox: float on the
// device about 2 + |x| ulp, subnormal results flushed to zero; double and the host: exp).
// For kernels whose outputs are 16-bit, where expf's range reduction is most of the cost.
KPS_FLOAT_UNARY_FUNCTOR_(ExpApproxFunctor, details::ExpApprox(x))
// 2^x from the hardware's approximate exponential (details::Exp2Approx: float on the device
// about 2 ulp, subnormal results flushed to zero; double and the host: exp2). With the
// argument prescaled by log2(e), one fused multiply-add and one MUFU.EX2 give e^(x - c).
KPS_FLOAT_UNARY_FUNCTOR_(Exp2ApproxFunctor, details::Exp2Approx(x))
// ln x (ln 0 == -inf, x < 0 -> NaN); floating types only. logf / log (1 / 1 ulp).
KPS_FLOAT_UNARY_FUNCTOR_(LogFunctor, details::Log(x))
// sin x; floating types only. Full-range argument reduction (CUDA: 2 / 2 ulp).
KPS_FLOAT_UNARY_FUNCTOR_(SinFunctor, details::Sin(x))
// cos x; floating types only. Full-range argument reduction (CUDA: 2 / 2 ulp).
KPS_FLOAT_UNARY_FUNCTOR_(CosFunctor, details::Cos(x))

#undef KPS_FLOAT_UNARY_FUNCTOR_

// Rounding to an integral value: floating types round in MPType (exact, keep the sign of
// zero, NaN and inf pass through); integers are returned unchanged.
#define KPS_ROUNDING_FUNCTOR_(Name, fn)                                               \
  template <typename T>                                                               \
  struct Name {                                                                       \
    KPS_FUNCTOR_HD T operator()(T x) const {                                          \
      if constexpr (IsFloatingType<T>) {                                              \
        return static_cast<T>(details::fn(static_cast<MPType<T>>(x)));                \
      } else {                                                                        \
        return x;                                                                     \
      }                                                                               \
    }                                                                                 \
  };

// Largest integral value <= x.
KPS_ROUNDING_FUNCTOR_(FloorFunctor, Floor)
// Smallest integral value >= x.
KPS_ROUNDING_FUNCTOR_(CeilFunctor, Ceil)
// Nearest integral value, halfway cases to even (torch.round, numpy.round, rint).
KPS_ROUNDING_FUNCTOR_(RoundFunctor, RoundHalfEven)

#undef KPS_ROUNDING_FUNCTOR_

// min(max(x, lo), hi) with bounds given at construction (in MPType), as torch.clamp:
// lo > hi gives hi everywhere. A NaN x stays NaN; a NaN bound is ignored.
template <typename T>
struct ClipFunctor {
  using MP = MPType<T>;
  MP lo;
  MP hi;
  KPS_FUNCTOR_HD ClipFunctor(MP min_value, MP max_value) : lo(min_value), hi(max_value) {}
  KPS_FUNCTOR_HD T operator()(T x) const {
    MP r = static_cast<MP>(x);
    if (r < lo) r = lo;
    if (r > hi) r = hi;
    return static_cast<T>(r);
  }
};

// x is NaN; false for integers. bool result.
template <typename T>
struct IsNanFunctor {
  KPS_FUNCTOR_HD bool operator()(T x) const { return details::IsNan(static_cast<MPType<T>>(x)); }
};

// x is +inf or -inf; false for integers. bool result.
template <typename T>
struct IsInfFunctor {
  KPS_FUNCTOR_HD bool operator()(T x) const {
    if constexpr (IsFloatingType<T>) {
      using M = MPType<T>;
      const M v = static_cast<M>(x);
      return v == details::Limits<M>::kHigh || v == details::Limits<M>::kLow;
    } else {
      return false;
    }
  }
};

}  // namespace kps
