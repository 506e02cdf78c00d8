// Unary functors: a -> f(a), for host and device.
#pragma once

#include "functors/macros.h"

namespace kps {

// Converts In to Out (the identity when they match).
template <typename In, typename Out = In>
struct IdentityFunctor {
  KPS_FUNCTOR_HD Out operator()(In a) const { return static_cast<Out>(a); }
};

}  // namespace kps
