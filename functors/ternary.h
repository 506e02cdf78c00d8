// Ternary functors, for host and device.
#pragma once

#include "functors/macros.h"
#include "functors/math.h"

namespace kps {

// cond ? a : b, for a condition of type Cond that is true when nonzero (NaN is true);
// a and b pass through unchanged (NaN payloads, signed zeros).
template <typename T, typename Cond = bool>
struct WhereFunctor {
  KPS_FUNCTOR_HD T operator()(Cond cond, T a, T b) const { return details::IsNonZero(cond) ? a : b; }
};

}  // namespace kps
