// Reducers: what one reduction op computes, for the CUDA launcher and the CPU loop alike.
//
// A reducer is a combiner (functors/combiner.h) over a running state:
//
//   struct SomeReducer {
//     using In = ...;   // the input element type
//     using Acc = ...;  // the running state (a number, or a struct: Welford's moments)
//     using Out = ...;  // the output element type
//     Acc initial() const;                              // the state of an empty set
//     Acc operator()(Acc a, Acc b) const;               // merge two partial states
//     Acc Accumulate(Acc a, In x, int64_t index) const; // fold element `index` in
//     Out Finalize(Acc a) const;
//   };
//
// `index` is the element's row-major position within the reduced extent (argmax needs it).
// The merge is associative but the launchers do not promise to call it in index order:
// a thread folds a strided subset, then threads merge in a tree. Reducers whose result
// would depend on that order break ties explicitly (argmax: the lower index wins), and
// every launch order is a fixed function of the shape and the device, which is what makes
// results bitwise reproducible.
//
// Accumulation types: float16/bfloat16 and float accumulate in float (prod: in double),
// double in double, bool and integers (sum, prod) in int64 with two's-complement wrap.
#pragma once

#include <cstdint>
#include <type_traits>

#include "functors/binary.h"  // details::ReduceLimit
#include "functors/combiner.h"
#include "functors/macros.h"
#include "functors/math.h"
#include "functors/mp_type.h"

namespace kps {
namespace reduce {

// The accumulator and output of sum and prod: int64 for bool and integers, else the MP type.
template <typename T>
using SumAccType = std::conditional_t<IsFloatingType<T>, MPType<T>, int64_t>;
template <typename T>
using SumOutType = std::conditional_t<IsFloatingType<T>, T, int64_t>;

namespace details {

// Integer sums and products wrap (functors/math.h).
using ::kps::details::WrapAdd;
using ::kps::details::WrapMul;

template <typename T, typename A>
KPS_FUNCTOR_HD A Widen(T x) {
  if constexpr (IsFloat16Type<T>) {
    return static_cast<A>(static_cast<float>(x));
  } else {
    return static_cast<A>(x);
  }
}

template <typename O, typename A>
KPS_FUNCTOR_HD O Narrow(A a) {
  if constexpr (IsFloat16Type<O>) {
    return static_cast<O>(static_cast<float>(a));
  } else {
    return static_cast<O>(a);
  }
}

}  // namespace details

// sum, and mean (the sum over `divisor`, the reduced count, when `mean` is set).
template <typename T>
struct SumReducer {
  using In = T;
  using Acc = SumAccType<T>;
  using Out = SumOutType<T>;
  bool mean = false;
  Acc divisor = Acc(1);

  KPS_FUNCTOR_HD Acc initial() const { return Acc(0); }
  KPS_FUNCTOR_HD Acc Accumulate(Acc a, In x, int64_t) const { return details::WrapAdd(a, details::Widen<T, Acc>(x)); }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const { return details::WrapAdd(a, b); }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const { return details::Narrow<Out>(mean ? a / divisor : a); }
};

// Floating products accumulate in double: in float, a lane's running product of values
// near 1 drifts (its rounding grid is twice as coarse above 1 as below), which over 2^24
// factors measured a 1.4% bias where a double accumulator stays exact to float.
template <typename T>
struct ProdReducer {
  using In = T;
  using Acc = std::conditional_t<IsFloatingType<T>, double, int64_t>;
  using Out = SumOutType<T>;

  KPS_FUNCTOR_HD Acc initial() const { return Acc(1); }
  KPS_FUNCTOR_HD Acc Accumulate(Acc a, In x, int64_t) const { return details::WrapMul(a, details::Widen<T, Acc>(x)); }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const { return details::WrapMul(a, b); }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const { return details::Narrow<Out>(a); }
};

// max (kMax) or min: NaN wins (NumPy's maximum.reduce), and -0.0 < +0.0, so the result
// does not depend on the order of combination. The identity is -inf/+inf (lowest/max for
// integers); an empty extent is rejected before launch, so it is never the output.
template <typename T, bool kMax>
struct MaxMinReducer {
  using In = T;
  using Acc = MPType<T>;
  using Out = T;

  KPS_FUNCTOR_HD Acc initial() const {
    const Acc v = ::kps::details::ReduceLimit<Acc, !kMax>();
    return v;
  }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // max.NaN / min.NaN (sm_80+): the same result in one instruction (a NaN gives NaN,
    // +0.0 > -0.0), where the portable test takes several per element and held
    // max_last_f32_8Kx8K about 4% below sum_last's read rate.
    if constexpr (std::is_same_v<Acc, float>) {
      float r;
      if constexpr (kMax) {
        asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      } else {
        asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      }
      return r;
    } else  // NOLINT(readability/braces): the portable branch below
#endif
    {
      if constexpr (kMax) {
        return ::kps::details::MaxPicksFirst(a, b) ? a : b;
      } else {
        return ::kps::details::MinPicksFirst(a, b) ? a : b;
      }
    }
  }
  KPS_FUNCTOR_HD Acc Accumulate(Acc a, In x, int64_t) const { return (*this)(a, details::Widen<T, Acc>(x)); }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const { return details::Narrow<Out>(a); }
};

// any (kAny) or all: x counts as true when x != 0 (NaN is true, -0.0 false).
template <typename T, bool kAny>
struct AnyAllReducer {
  using In = T;
  using Acc = bool;
  using Out = bool;

  KPS_FUNCTOR_HD Acc initial() const { return !kAny; }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const { return kAny ? (a || b) : (a && b); }
  KPS_FUNCTOR_HD Acc Accumulate(Acc a, In x, int64_t) const { return (*this)(a, ::kps::details::IsNonZero(x)); }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const { return a; }
};

// count_nonzero: how many elements are nonzero (NaN counts, -0.0 does not), in int64.
// The combiner's defaults do the rest: Accumulate is a + Make(x), Finalize the count.
template <typename T>
struct CountNonzeroReducer {
  using In = T;
  using Acc = int64_t;
  using Out = int64_t;
  KPS_FUNCTOR_HD Acc initial() const { return 0; }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const { return a + b; }
  KPS_FUNCTOR_HD Acc Make(In x, int64_t) const { return ::kps::details::IsNonZero(x) ? 1 : 0; }
};

template <typename V>
struct ArgAcc {
  V value;
  int64_t index;
};

// argmax (kMax) or argmin: the index of the first NaN if any, else of the first extreme
// value. Ties are broken by index inside the merge, so the winner does not depend on the
// order in which partial results meet. initial(): the weakest value at an index past any
// real one, so every element beats it.
template <typename T, bool kMax>
struct ArgReducer {
  static constexpr bool kIndexOnly = true;  // the result is a position (ReduceOneKernel)
  using In = T;
  using V = MPType<T>;
  using Acc = ArgAcc<V>;
  using Out = int64_t;

  KPS_FUNCTOR_HD Acc initial() const {
    const V v = ::kps::details::ReduceLimit<V, !kMax>();
    return {v, INT64_MAX};
  }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const {
    const bool a_nan = ::kps::details::IsNan(a.value), b_nan = ::kps::details::IsNan(b.value);
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return a.index <= b.index ? a : b;
      return a_nan ? a : b;
    }
    if (a.value == b.value) return a.index <= b.index ? a : b;
    return (kMax ? b.value > a.value : b.value < a.value) ? b : a;
  }
  KPS_FUNCTOR_HD Acc Accumulate(Acc a, In x, int64_t index) const {
    return (*this)(a, Acc{details::Widen<T, V>(x), index});
  }
  // N consecutive elements, in index order: a later element wins only if strictly better
  // (or the first NaN), so no index comparisons (a vector's fold in the row kernel).
  template <int N>
  KPS_FUNCTOR_HD Acc MakeN(const In (&in)[N], int64_t index) const {
    V best = details::Widen<T, V>(in[0]);
    int at = 0;
    for (int j = 1; j < N; ++j) {
      const V x = details::Widen<T, V>(in[j]);
      const bool better = ::kps::details::IsNan(x) || (kMax ? x > best : x < best);
      if (!::kps::details::IsNan(best) && better) {
        best = x;
        at = j;
      }
    }
    return {best, index + at};
  }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const { return a.index; }
};

template <typename M>
struct LogSumExpAcc {
  M max;  // the largest element so far (-inf when none; NaN once a NaN was seen)
  M sum;  // sum of exp(x - max)
};

// log(sum(exp(x))) in one pass: the running sum is kept relative to the running max and
// rescaled when the max grows, so no exp overflows. -inf elements add nothing; a +inf
// gives +inf, a NaN gives NaN.
template <typename T>
struct LogSumExpReducer {
  using In = T;
  using M = MPType<T>;
  using Acc = LogSumExpAcc<M>;
  using Out = T;

  KPS_FUNCTOR_HD Acc initial() const {
    const M low = ::kps::details::ReduceLimit<M, false>();
    return {low, M(0)};
  }
  KPS_FUNCTOR_HD Acc Accumulate(Acc a, In in, int64_t) const {
    const M x = details::Widen<T, M>(in);
    if (::kps::details::IsNan(x)) return {x, x};
    if (x > a.max) {  // also the first finite or +inf element after -inf ones
      const M scaled = a.sum == M(0) ? M(0) : a.sum * ::kps::details::Exp(a.max - x);
      return {x, scaled + M(1)};
    }
    if (x == ::kps::details::ReduceLimit<M, false>()) return a;  // exp(-inf) adds nothing
    if (x == a.max) return {a.max, a.sum + M(1)};                // also +inf == +inf
    return {a.max, a.sum + ::kps::details::Exp(x - a.max)};
  }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const {
    if (::kps::details::IsNan(a.max)) return a;
    if (::kps::details::IsNan(b.max)) return b;
    if (a.sum == M(0)) return b;  // empty (only -inf elements)
    if (b.sum == M(0)) return a;
    if (a.max == b.max) return {a.max, a.sum + b.sum};
    if (a.max > b.max) return {a.max, a.sum + b.sum * ::kps::details::Exp(b.max - a.max)};
    return {b.max, b.sum + a.sum * ::kps::details::Exp(a.max - b.max)};
  }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const {
    M r;
    if (::kps::details::IsNan(a.max) || a.sum == M(0)) {
      r = a.sum == M(0) ? ::kps::details::ReduceLimit<M, false>() : a.max;  // empty -> -inf
    } else if (a.max == ::kps::details::ReduceLimit<M, true>()) {
      r = a.max;  // +inf
    } else {
      r = a.max + ::kps::details::Log(a.sum);
    }
    return details::Narrow<Out>(r);
  }
};

template <typename M>
struct WelfordAcc {
  M mean;
  M m2;  // sum of squared deviations from mean
  int64_t count;
};

// var and std (`sqrt`): Welford's running mean and M2 per thread, merged with Chan et
// al.'s pairwise formula. var = M2 / (N - correction); NaN when N - correction <= 0.
template <typename T>
struct WelfordReducer {
  using In = T;
  using M = MPType<T>;
  using Acc = WelfordAcc<M>;
  using Out = T;
  double correction = 1.0;
  bool sqrt = false;

  KPS_FUNCTOR_HD Acc initial() const { return {M(0), M(0), 0}; }
  KPS_FUNCTOR_HD Acc Accumulate(Acc a, In in, int64_t) const {
    const M x = details::Widen<T, M>(in);
    const int64_t n = a.count + 1;
    const M delta = x - a.mean;
    const M mean = a.mean + delta / static_cast<M>(n);
    return {mean, a.m2 + delta * (x - mean), n};
  }
  // N consecutive elements at once: their mean, then the squared deviations from it (no
  // division per element; N, a vector's width, is a power of two, so x / N is exact).
  template <int N>
  KPS_FUNCTOR_HD Acc MakeN(const In (&in)[N], int64_t) const {
    M x[N];
    M mean = M(0);  // the sum of x / N: scaled first, so that it overflows no sooner than x
    for (int j = 0; j < N; ++j) {
      x[j] = details::Widen<T, M>(in[j]);
      mean += x[j] * (M(1) / static_cast<M>(N));
    }
    M m2 = M(0);
    for (int j = 0; j < N; ++j) m2 += (x[j] - mean) * (x[j] - mean);
    return {mean, m2, N};
  }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const {
    if (a.count == 0) return b;
    if (b.count == 0) return a;
    const int64_t n = a.count + b.count;
    const M nb_over_n = static_cast<M>(b.count) / static_cast<M>(n);
    const M delta = b.mean - a.mean;
    return {a.mean + delta * nb_over_n, a.m2 + b.m2 + delta * delta * static_cast<M>(a.count) * nb_over_n, n};
  }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const {
    const double divisor = static_cast<double>(a.count) - correction;
    M var;
    if (divisor <= 0) {
      var = ::kps::details::Limits<M>::kHigh - ::kps::details::Limits<M>::kHigh;  // NaN
    } else {
      var = a.m2 / static_cast<M>(divisor);
    }
    return details::Narrow<Out>(sqrt ? ::kps::details::Sqrt(var) : var);
  }
};

}  // namespace reduce
}  // namespace kps
