// Scanners: what one scan op computes, for the CUDA kernels and the CPU loop alike.
//
// A scanner is a combiner (functors/combiner.h) with the scan's extras:
//
//   struct SomeScanner {
//     using In = ...; using Acc = ...; using Out = ...;
//     static constexpr bool kHasIndex = ...;         // a second, int64 output (cummax)
//     Acc initial() const;                           // the state before the first element
//     Acc Make(In x, int64_t position) const;        // one element's state
//     Acc operator()(Acc earlier, Acc later) const;  // associative (not always commutative)
//     Out Finalize(Acc a) const;                     // the output at a position
//     Out ExclusiveValue(Acc prefix) const;          // exclusive scans: the output from the
//                                                    // state of the elements before it
//     int64_t Index(Acc a) const;                    // kHasIndex only
//   };
//
// With f the scanner, out[i] = Finalize(f(...f(Make(x[0]), Make(x[1]))..., Make(x[i]))) in
// scan order (reverse scans run from the end). f is associative, so the CUDA kernels may
// group the elements in trees (block scans), and their grouping is fixed, so results are
// bitwise reproducible.
#pragma once

#include <cstdint>

#include "functors/combiner.h"
#include "functors/macros.h"
#include "functors/math.h"
#include "ops/reduce/reducers.h"

namespace kps {
namespace scan {

template <typename T>
struct SumScanner {
  using In = T;
  using Acc = reduce::SumAccType<T>;
  using Out = reduce::SumOutType<T>;
  static constexpr bool kHasIndex = false;
  KPS_FUNCTOR_HD Acc initial() const { return Acc(0); }
  KPS_FUNCTOR_HD Acc Make(In x, int64_t) const { return reduce::details::Widen<T, Acc>(x); }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const { return ::kps::details::WrapAdd(a, b); }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const { return reduce::details::Narrow<Out>(a); }
  KPS_FUNCTOR_HD Out ExclusiveValue(Acc prefix) const { return Finalize(prefix); }
  KPS_FUNCTOR_HD int64_t Index(Acc) const { return 0; }
};

// Products of floats run in double (see reduce::ProdReducer: a float running product of
// values near 1 drifts).
template <typename T>
struct ProdScanner {
  using In = T;
  using Acc = typename reduce::ProdReducer<T>::Acc;
  using Out = reduce::SumOutType<T>;
  static constexpr bool kHasIndex = false;
  KPS_FUNCTOR_HD Acc initial() const { return Acc(1); }
  KPS_FUNCTOR_HD Acc Make(In x, int64_t) const { return reduce::details::Widen<T, Acc>(x); }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const { return ::kps::details::WrapMul(a, b); }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const { return reduce::details::Narrow<Out>(a); }
  KPS_FUNCTOR_HD Out ExclusiveValue(Acc prefix) const { return Finalize(prefix); }
  KPS_FUNCTOR_HD int64_t Index(Acc) const { return 0; }
};

// cummax (kMax) / cummin: the running extreme and the position that supplied it. The
// later element wins ties (as in PyTorch), and NaN beats every number (the latest NaN
// wins among NaNs), so the merge is the max of the key (is NaN, +-value, position):
// associative and commutative.
template <typename T, bool kMax>
struct ExtremeScanner {
  using In = T;
  using V = MPType<T>;
  using Acc = reduce::ArgAcc<V>;
  using Out = T;
  static constexpr bool kHasIndex = true;
  KPS_FUNCTOR_HD Acc initial() const {
    const V v = ::kps::details::ReduceLimit<V, !kMax>();
    return {v, -1};
  }
  KPS_FUNCTOR_HD Acc Make(In x, int64_t position) const { return {reduce::details::Widen<T, V>(x), position}; }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const {
    const bool a_nan = ::kps::details::IsNan(a.value), b_nan = ::kps::details::IsNan(b.value);
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan && a.value != b.value) return (kMax ? b.value > a.value : b.value < a.value) ? b : a;
    return b.index >= a.index ? b : a;
  }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const { return reduce::details::Narrow<Out>(a.value); }
  KPS_FUNCTOR_HD Out ExclusiveValue(Acc prefix) const { return Finalize(prefix); }
  KPS_FUNCTOR_HD int64_t Index(Acc a) const { return a.index; }
};

// logcumsumexp through the running (max, sum of exp(x - max)) of reduce::LogSumExpReducer.
template <typename T>
struct LogSumExpScanner {
  using In = T;
  using Reducer = reduce::LogSumExpReducer<T>;
  using Acc = typename Reducer::Acc;
  using Out = T;
  static constexpr bool kHasIndex = false;
  KPS_FUNCTOR_HD Acc initial() const { return Reducer().initial(); }
  KPS_FUNCTOR_HD Acc Make(In x, int64_t) const { return Reducer().Accumulate(Reducer().initial(), x, 0); }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const { return Reducer()(a, b); }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const { return Reducer().Finalize(a); }
  KPS_FUNCTOR_HD Out ExclusiveValue(Acc prefix) const { return Finalize(prefix); }
  KPS_FUNCTOR_HD int64_t Index(Acc) const { return 0; }
};

template <typename M>
struct DiscountAcc {
  M value;   // the discounted sum of the segment
  M weight;  // gamma^(segment length): how the segment scales what came before it
};

// discounted_cumsum: out[i] = x[i] + gamma * out[i-1], as a scan of affine maps
// v -> weight * v + value, so that it runs as a parallel scan: a segment's state is
// (value, gamma^length) and f(a, b) = (b.value + b.weight * a.value, a.weight * b.weight).
template <typename T>
struct DiscountScanner {
  using In = T;
  using M = MPType<T>;
  using Acc = DiscountAcc<M>;
  using Out = T;
  static constexpr bool kHasIndex = false;
  M gamma = M(1);
  KPS_FUNCTOR_HD Acc initial() const { return {M(0), M(1)}; }
  KPS_FUNCTOR_HD Acc Make(In x, int64_t) const { return {reduce::details::Widen<T, M>(x), gamma}; }
  KPS_FUNCTOR_HD Acc operator()(Acc a, Acc b) const {
    M scaled = b.weight * a.value;
    // gamma^length underflows to (signed) zero after a few hundred steps in float, where
    // the true weight is tiny but not zero: an infinite earlier value must stay infinite
    // (the sequential recurrence keeps inf forever), not become 0 * inf = NaN.
    if (scaled != scaled && b.weight == M(0) && gamma != M(0) && !::kps::details::IsNan(a.value)) {
      scaled = ::kps::details::SignBit(b.weight) ? -a.value : a.value;
    }
    return {b.value + scaled, a.weight * b.weight};
  }
  KPS_FUNCTOR_HD Out Finalize(Acc a) const { return reduce::details::Narrow<Out>(a.value); }
  // The running value before x[i] is added: gamma * out[i-1] (0 at the start).
  KPS_FUNCTOR_HD Out ExclusiveValue(Acc prefix) const { return reduce::details::Narrow<Out>(gamma * prefix.value); }
  KPS_FUNCTOR_HD int64_t Index(Acc) const { return 0; }
};

}  // namespace scan
}  // namespace kps
