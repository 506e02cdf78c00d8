// Comparison functors: (a, b) -> bool, for host and device (Paddle's names).
//
// 16-bit floats compare in float (exactly). IEEE semantics: every comparison with NaN is
// false except NotEqual, which is true; -0 == +0.
#pragma once

#include "functors/macros.h"
#include "functors/mp_type.h"

namespace kps {

#define KPS_COMPARE_FUNCTOR_(Name, op)                                                \
  template <typename T>                                                               \
  struct Name {                                                                       \
    KPS_FUNCTOR_HD bool operator()(T a, T b) const {                                  \
      return static_cast<MPType<T>>(a) op static_cast<MPType<T>>(b);                  \
    }                                                                                 \
  };

// a == b.
KPS_COMPARE_FUNCTOR_(EqualFunctor, ==)
// a != b (true when either is NaN).
KPS_COMPARE_FUNCTOR_(NotEqualFunctor, !=)
// a < b.
KPS_COMPARE_FUNCTOR_(LessThanFunctor, <)
// a <= b.
KPS_COMPARE_FUNCTOR_(LessEqualFunctor, <=)
// a > b.
KPS_COMPARE_FUNCTOR_(GreaterThanFunctor, >)
// a >= b.
KPS_COMPARE_FUNCTOR_(GreaterEqualFunctor, >=)

#undef KPS_COMPARE_FUNCTOR_

}  // namespace kps
