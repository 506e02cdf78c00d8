// Ternary functors, for host and device.
#pragma once

#include "functors/macros.h"
#include "functors/math.h"
#include "functors/mp_type.h"

namespace kps {

// cond ? a : b, for a condition of type Cond that is true when nonzero (NaN is true);
// a and b pass through unchanged (NaN payloads, signed zeros).
template <typename T, typename Cond = bool>
struct WhereFunctor {
  KPS_FUNCTOR_HD T operator()(Cond cond, T a, T b) const { return details::IsNonZero(cond) ? a : b; }
};


// min(max(x, lo), hi) with per-element bounds, the tensor form of ClipFunctor (same
// rules: lo > hi gives hi, a NaN x stays NaN, a NaN bound is ignored).
template <typename T>
struct ClipTensorFunctor {
  KPS_FUNCTOR_HD T operator()(T x, T lo, T hi) const {
    using MP = MPType<T>;
    MP r = static_cast<MP>(x);
    const MP l = static_cast<MP>(lo);
    const MP h = static_cast<MP>(hi);
    if (r < l) r = l;
    if (r > h) r = h;
    return static_cast<T>(r);
  }
};

// x + value * y * z, evaluated as x + ((value * y) * z) in MPType (16-bit floats in
// float, rounded once at the end), the product rounded before the sum on every device
// (details::MulRounded, as AddScaledFunctor); integers wrap modulo 2^bits.
template <typename T>
struct AddcmulFunctor {
  using MP = MPType<T>;
  MP value;
  KPS_FUNCTOR_HD explicit AddcmulFunctor(MP v) : value(v) {}
  KPS_FUNCTOR_HD T operator()(T x, T y, T z) const {
    using W = WrapType<MP>;
    const W product = static_cast<W>(value) * static_cast<W>(static_cast<MP>(y));
    return static_cast<T>(static_cast<W>(static_cast<MP>(x)) +
                          details::MulRounded(product, static_cast<W>(static_cast<MP>(z))));
  }
};

}  // namespace kps
