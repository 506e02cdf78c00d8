// CastFunctor<In, Out>: converts between any two KPS types with one defined result for
// every input, the same on CPU and GPU (no undefined static_cast):
//
//   to bool          x != 0 (NaN -> true, -0 -> false).
//   bool to any      0 or 1.
//   float to integer truncates toward zero, saturates to [lowest, max] (+-inf too), and
//                    NaN -> 0. (PyTorch leaves these undefined; NumPy warns.)
//   integer to int   wraps modulo 2^bits (two's complement), as C++20 defines.
//   to a float type  rounds to nearest even once, from the exact value, except integers
//                    to float16 / bfloat16, which go through double: exact up to 2^53
//                    in magnitude, larger int64 values round twice. Overflow gives +-inf.
//   float16 <-> bfloat16 go through float (exact), then round once.
#pragma once

#include <cstdint>
#include <type_traits>

#include "functors/macros.h"
#include "functors/math.h"
#include "functors/mp_type.h"

namespace kps {
namespace details {

// Floating (float or double) to integer: truncation, saturation, NaN -> 0.
template <typename Out, typename M>
KPS_FUNCTOR_HD Out SaturatingFloatToInt(M v) {
  if (v != v) return static_cast<Out>(0);
  // 2^(value bits): max + 1 computed without rounding (max / 2 + 1 is a power of two).
  const M upper = static_cast<M>(2) * static_cast<M>(Limits<Out>::kMax / 2 + 1);
  if (v >= upper) return Limits<Out>::kMax;
  if constexpr (std::is_signed_v<Out>) {
    if (v <= -upper) return Limits<Out>::kLowest;  // -2^(bits-1) is lowest exactly
  } else {
    if (v <= static_cast<M>(-1)) return static_cast<Out>(0);
  }
  return static_cast<Out>(v);  // |trunc(v)| fits: defined
}

}  // namespace details

template <typename In, typename Out>
struct CastFunctor {
  KPS_FUNCTOR_HD Out operator()(In x) const {
    if constexpr (std::is_same_v<In, Out>) {
      return x;
    } else if constexpr (std::is_same_v<Out, bool>) {
      return details::IsNonZero(x);
    } else if constexpr (std::is_same_v<In, bool>) {
      return static_cast<Out>(static_cast<MPType<Out>>(x ? 1 : 0));
    } else if constexpr (IsFloatingType<In> && std::is_integral_v<Out>) {
      return details::SaturatingFloatToInt<Out>(static_cast<MPType<In>>(x));
    } else if constexpr (std::is_integral_v<In> && IsFloat16Type<Out>) {
      return static_cast<Out>(static_cast<double>(x));
    } else if constexpr (IsFloat16Type<In>) {  // to float, double or the other 16-bit type
      return static_cast<Out>(static_cast<float>(x));
    } else {
      // integer <-> integer (wraps), integer -> float / double, float <-> double, and
      // float / double -> float16 / bfloat16 (their constructors round once).
      return static_cast<Out>(x);
    }
  }
};

}  // namespace kps
