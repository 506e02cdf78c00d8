// Combiners: the one concept behind every reduction and scan in KPS. The block and warp
// reduce and scan primitives (primitives/reduce.cuh, primitives/cumsum.cuh), the CUDA
// launchers of the reduce and scan ops and their CPU loops all take a combiner.
//
//   struct SomeCombiner {
//     // Required:
//     Acc initial() const;                   // the identity: f(initial(), a) == a
//     Acc operator()(Acc a, Acc b) const;    // associative; `a` holds the earlier elements
//     // Optional (the defaults below apply when a member is absent):
//     using In = ...;                        // the element type       (default: Acc)
//     using Acc = ...;                       // the running state      (default: initial()'s type)
//     using Out = ...;                       // the result type        (default: Acc)
//     Acc Make(In x, int64_t index) const;   // one element's state    (default: Acc(x))
//     Acc Accumulate(Acc a, In x, int64_t index) const;
//                                            // fold one element in    (default: f(a, Make(x, index)))
//     Out Finalize(Acc a) const;             // the result of a state  (default: a)
//     template <int N>
//     Acc MakeN(const In (&x)[N], int64_t index) const;
//                                            // the state of N consecutive elements, the
//                                            // first at `index` (default: Accumulate
//                                            // them in turn into initial())
//   };
//
// `index` is the element's position along the reduced (scanned) extent: argmax and
// cummax keep it. A binary reduce functor (AddFunctor, MaxFunctor, LogicalAndFunctor,
// ... in functors/binary.h and functors/logical.h) is a combiner as it stands: a sum is
// `AddFunctor<float>`, an all() is `LogicalAndFunctor<bool>`. Stateful ones (mean,
// Welford's variance, argmax's (value, index), logsumexp's (max, sum)) add the optional
// members: see ops/reduce/reducers.h and ops/scan/scanners.h.
//
// The helpers below are how library code calls the optional members, so that a combiner
// only spells out what differs from the defaults:
//
//   template <class F>
//   CombinerOut<F> SumOfRow(const F& f, const CombinerIn<F>* row, int64_t n) {
//     CombinerAcc<F> acc = f.initial();
//     for (int64_t i = 0; i < n; ++i) acc = CombinerAccumulate(f, acc, row[i], i);
//     return CombinerFinalize(f, acc);
//   }
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "functors/macros.h"

namespace kps {
namespace details {

template <class F, class = void>
struct CombinerAccOf {
  using type = std::decay_t<decltype(std::declval<const F&>().initial())>;
};
template <class F>
struct CombinerAccOf<F, std::void_t<typename F::Acc>> {
  using type = typename F::Acc;
};
template <class F, class = void>
struct CombinerInOf {
  using type = typename CombinerAccOf<F>::type;
};
template <class F>
struct CombinerInOf<F, std::void_t<typename F::In>> {
  using type = typename F::In;
};
template <class F, class = void>
struct CombinerOutOf {
  using type = typename CombinerAccOf<F>::type;
};
template <class F>
struct CombinerOutOf<F, std::void_t<typename F::Out>> {
  using type = typename F::Out;
};

template <class F, class = void>
inline constexpr bool kHasMake = false;
template <class F>
inline constexpr bool
    kHasMake<F, std::void_t<decltype(std::declval<const F&>().Make(
                    std::declval<typename CombinerInOf<F>::type>(), int64_t{}))>> = true;
template <class F, class = void>
inline constexpr bool kHasAccumulate = false;
template <class F>
inline constexpr bool kHasAccumulate<
    F, std::void_t<decltype(std::declval<const F&>().Accumulate(std::declval<typename CombinerAccOf<F>::type>(),
                                                                std::declval<typename CombinerInOf<F>::type>(),
                                                                int64_t{}))>> = true;
template <class F, class = void>
inline constexpr bool kHasFinalize = false;
template <class F>
inline constexpr bool kHasFinalize<
    F, std::void_t<decltype(std::declval<const F&>().Finalize(std::declval<typename CombinerAccOf<F>::type>()))>> =
    true;

template <class F, int N, class = void>
inline constexpr bool kHasMakeN = false;
template <class F, int N>
inline constexpr bool kHasMakeN<F, N,
                                std::void_t<decltype(std::declval<const F&>().template MakeN<N>(
                                    std::declval<const typename CombinerInOf<F>::type (&)[N]>(), int64_t{}))>> = true;

}  // namespace details

template <class F>
using CombinerAcc = typename details::CombinerAccOf<F>::type;
template <class F>
using CombinerIn = typename details::CombinerInOf<F>::type;
template <class F>
using CombinerOut = typename details::CombinerOutOf<F>::type;

// One element's state: f.Make(x, index), else Acc(x).
template <class F>
KPS_FUNCTOR_HD CombinerAcc<F> CombinerMake(const F& f, CombinerIn<F> x, int64_t index) {
  if constexpr (details::kHasMake<F>) {
    return f.Make(x, index);
  } else {
    (void)f;
    (void)index;
    return static_cast<CombinerAcc<F>>(x);
  }
}

// `a` with one more element folded in: f.Accumulate(a, x, index), else f(a, Make(x, index)).
template <class F>
KPS_FUNCTOR_HD CombinerAcc<F> CombinerAccumulate(const F& f, CombinerAcc<F> a, CombinerIn<F> x, int64_t index) {
  if constexpr (details::kHasAccumulate<F>) {
    return f.Accumulate(a, x, index);
  } else {
    return f(a, CombinerMake(f, x, index));
  }
}

// The state of the N consecutive elements x[0..N) (x[0] at `index`): f.MakeN<N>(x, index),
// else each Accumulate'd in turn into f.initial(). The vector loops of the reduce kernels
// fold each loaded vector this way (Welford's variance takes the vector's mean and
// squared deviations at once instead of a division per element).
template <int N, class F>
KPS_FUNCTOR_HD CombinerAcc<F> CombinerMakeN(const F& f, const CombinerIn<F> (&x)[N], int64_t index) {
  if constexpr (details::kHasMakeN<F, N>) {
    return f.template MakeN<N>(x, index);
  } else {
    CombinerAcc<F> a = CombinerAccumulate(f, f.initial(), x[0], index);
    for (int j = 1; j < N; ++j) a = CombinerAccumulate(f, a, x[j], index + j);
    return a;
  }
}

// The result of a state: f.Finalize(a), else a.
template <class F>
KPS_FUNCTOR_HD CombinerOut<F> CombinerFinalize(const F& f, CombinerAcc<F> a) {
  if constexpr (details::kHasFinalize<F>) {
    return f.Finalize(a);
  } else {
    (void)f;
    return static_cast<CombinerOut<F>>(a);
  }
}

}  // namespace kps
