// Logical functors, for host and device: inputs of any KPS type are true when nonzero
// (NaN is true, -0 is false); results are bool. LogicalAnd / LogicalOr are also reduce
// functors (all / any) and carry `T initial() const` (true / false).
#pragma once

#include "functors/macros.h"
#include "functors/math.h"
#include "functors/mp_type.h"

namespace kps {

// a && b. initial() == true (the identity of all()).
template <typename T>
struct LogicalAndFunctor {
  KPS_FUNCTOR_HD T initial() const { return static_cast<T>(static_cast<MPType<T>>(1)); }
  KPS_FUNCTOR_HD bool operator()(T a, T b) const {
    return details::IsNonZero(a) && details::IsNonZero(b);
  }
};

// a || b. initial() == false (the identity of any()).
template <typename T>
struct LogicalOrFunctor {
  KPS_FUNCTOR_HD T initial() const { return static_cast<T>(static_cast<MPType<T>>(0)); }
  KPS_FUNCTOR_HD bool operator()(T a, T b) const {
    return details::IsNonZero(a) || details::IsNonZero(b);
  }
};

// a != b as truth values: exactly one of a, b is nonzero.
template <typename T>
struct LogicalXorFunctor {
  KPS_FUNCTOR_HD bool operator()(T a, T b) const {
    return details::IsNonZero(a) != details::IsNonZero(b);
  }
};

// !a: true when a is zero (+0 or -0).
template <typename T>
struct LogicalNotFunctor {
  KPS_FUNCTOR_HD bool operator()(T a) const { return !details::IsNonZero(a); }
};

}  // namespace kps
