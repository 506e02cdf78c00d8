// Binary functors: (a, b) -> a op b, for host and device, and the reduce functors
// (Add, Mul, Max, Min here; LogicalAnd / LogicalOr in logical.h), which carry
// `T initial() const`: the identity a reduction starts from.
//
// Floating types compute in MPType (float for float16 / bfloat16) and round once to T;
// float division by zero follows IEEE (+-inf, NaN for 0 / 0); float floor_div and
// remainder follow Python's divmod (FloatFloorDivMod). Integer arithmetic wraps
// on overflow (two's complement), and integer division is defined everywhere, the same
// on CPU and GPU:
//   a / 0 == 0 and floor_div(a, 0) == 0 (x86's idiv would trap; CUDA returns garbage);
//   lowest / -1 == lowest (the quotient wrapped, where x86's idiv would trap).
#pragma once

#include <type_traits>

#include "functors/apply2.h"
#include "functors/macros.h"
#include "functors/math.h"
#include "functors/mp_type.h"

namespace kps {
namespace details {

// Truncating integer division with the documented edge cases (see the file comment).
template <typename T>
KPS_FUNCTOR_HD T IntDiv(T a, T b) {
  if (b == static_cast<T>(0)) return static_cast<T>(0);
  if constexpr (std::is_signed_v<T>) {
    if (b == static_cast<T>(-1)) return WrapNeg(a);
  }
  return static_cast<T>(a / b);
}

// Integer division rounding toward -inf (Python's //), edge cases as IntDiv.
template <typename T>
KPS_FUNCTOR_HD T IntFloorDiv(T a, T b) {
  if (b == static_cast<T>(0)) return static_cast<T>(0);
  if constexpr (std::is_signed_v<T>) {
    if (b == static_cast<T>(-1)) return WrapNeg(a);
    const T q = static_cast<T>(a / b);
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(a / b);
  }
}

// Python's float divmod in M (float or double): returns floor(a / b) of the exact
// quotient and sets *mod to a - floor(a / b) * b with the sign of b.
//
// The usual case, a finite quotient of magnitude below 2^(digits - 2) and a finite,
// nonzero b, takes one division: t = floor(a / b) is the exact floor or one above it
// (the rounded quotient is at least the exact floor, an integer that M holds, and
// reaches floor + 1 only by rounding up to it), and r = fma(-t, b, a) is the exact
// a - t * b rounded once. If t is one too high, r lies in [-b, 0) (for b > 0), so its sign
// differs from b's, and t - 1 with a second fma is the answer. With t the exact floor, r
// is fmod(a, b) when their signs agree, and otherwise the exact fmod(a, b) + b rounded
// once, which is what Python's divmod computes. floor_divide of 2^28 float pairs, H200:
// 0.74 ms (the memory's rate) this way, 1.06 ms by the fmod-based path below; remainder
// alone, by fmod and the sign fix-up only, was 1% slower than this path (H100).
//
// Otherwise (huge quotients, b == 0 or infinite, NaN or infinite operands) the quotient
// comes from the exact remainder: fmod(a, b) is exact, a - fmod(a, b) is a multiple of
// b, and dividing it by b gives a value within a few ulps of an integer, which is
// rounded to it. For b == 0, a / b (+-inf or NaN) and fmod's NaN. Either way, zero
// results get the sign NumPy gives them: a zero remainder b's, a zero quotient a / b's.
template <typename M>
KPS_FUNCTOR_HD M FloatFloorDivMod(M a, M b, M* mod) {
  const M zero = static_cast<M>(0);
  const M one = static_cast<M>(1);
  constexpr M kExactQuotients = static_cast<M>(sizeof(M) == 4 ? 0x1p22 : 0x1p51);
  const M q = a / b;
  const M b_mag = b < zero ? -b : b;
  if ((q < zero ? -q : q) < kExactQuotients && b_mag <= Limits<M>::kMax && b != zero) {
    M t = Floor(q);
    M r = Fma(-t, b, a);
    if (r != zero && ((r < zero) != (b < zero))) {
      t -= one;
      r = Fma(-t, b, a);
    }
    *mod = r != zero ? r : (SignBit(b) ? -zero : zero);
    return t != zero ? t : (SignBit(q) ? -zero : zero);
  }
  M m = Fmod(a, b);
  if (b == zero) {
    *mod = m;
    return q;
  }
  M div = (a - m) / b;
  if (m != zero) {
    // fmod has the sign of a; Python's remainder has the sign of b.
    if ((b < zero) != (m < zero)) {
      m += b;
      div -= one;
    }
  } else {
    m = SignBit(b) ? -zero : zero;
  }
  *mod = m;
  if (div == zero) return SignBit(q) ? -zero : zero;
  // div is within rounding of an integer: the nearest one is the exact floor.
  M floor_div = Floor(div);
  if (div - floor_div > static_cast<M>(0.5)) floor_div += one;
  return floor_div;
}

// The identity of a reduction in T: kHigh for min, kLow for max (+-inf for floating
// types, max / lowest for integers and bool).
template <typename T, bool kHighEnd>
KPS_FUNCTOR_HD T ReduceLimit() {
  using L = Limits<std::conditional_t<IsFloat16Type<T>, float, T>>;
  if constexpr (kHighEnd) {
    const auto v = L::kHigh;  // copied by value: device code may read a constexpr scalar
    return static_cast<T>(v);
  } else {
    const auto v = L::kLow;
    return static_cast<T>(v);
  }
}

}  // namespace details

// a + b; 16-bit floats add in float, integers wrap on overflow. initial() == 0.
// Apply2: exact (the float sum rounded to 16 bits is the correctly rounded sum).
template <typename T>
struct AddFunctor {
  KPS_FUNCTOR_HD T initial() const { return static_cast<T>(static_cast<MPType<T>>(0)); }
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    using W = WrapType<MPType<T>>;
    return static_cast<T>(static_cast<W>(static_cast<MPType<T>>(a)) +
                          static_cast<W>(static_cast<MPType<T>>(b)));
  }
  template <typename U = T>
  KPS_FUNCTOR_HD Packed2Type<U> Apply2(Packed2Type<U> a, Packed2Type<U> b) const {
    return details::PackedAdd(a, b, *this);
  }
};

// a + alpha * b (torch.add's alpha); 16-bit floats compute in float, integers wrap. The
// product is rounded before the sum on every device (details::MulRounded): a fused
// multiply-add on CUDA gave inf where the CPU gave NaN for a = inf, alpha * b = -inf after
// rounding (the op test kit caught it), and differed by an ulp elsewhere.
template <typename T>
struct AddScaledFunctor {
  using MP = MPType<T>;
  MP alpha;
  KPS_FUNCTOR_HD explicit AddScaledFunctor(MP a) : alpha(a) {}
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    using W = WrapType<MP>;
    return static_cast<T>(static_cast<W>(static_cast<MP>(a)) +
                          details::MulRounded(static_cast<W>(alpha), static_cast<W>(static_cast<MP>(b))));
  }
};

// a - b; 16-bit floats subtract in float, integers wrap on overflow. Apply2: exact.
template <typename T>
struct SubFunctor {
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    using W = WrapType<MPType<T>>;
    return static_cast<T>(static_cast<W>(static_cast<MPType<T>>(a)) -
                          static_cast<W>(static_cast<MPType<T>>(b)));
  }
  template <typename U = T>
  KPS_FUNCTOR_HD Packed2Type<U> Apply2(Packed2Type<U> a, Packed2Type<U> b) const {
    return details::PackedSub(a, b, *this);
  }
};

// a * b; 16-bit floats multiply in float, integers wrap on overflow. initial() == 1.
// Apply2: exact, except bfloat16 products below 2^-126 (see apply2.h).
template <typename T>
struct MulFunctor {
  KPS_FUNCTOR_HD T initial() const { return static_cast<T>(static_cast<MPType<T>>(1)); }
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    using W = WrapType<MPType<T>>;
    return static_cast<T>(static_cast<W>(static_cast<MPType<T>>(a)) *
                          static_cast<W>(static_cast<MPType<T>>(b)));
  }
  template <typename U = T>
  KPS_FUNCTOR_HD Packed2Type<U> Apply2(Packed2Type<U> a, Packed2Type<U> b) const {
    return details::PackedMul(a, b, *this);
  }
};

// a / b. Floating: IEEE division in MPType, correctly rounded. Integers: truncation
// toward zero, a / 0 == 0, lowest / -1 == lowest.
template <typename T>
struct DivFunctor {
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    if constexpr (IsFloatingType<T>) {
      return static_cast<T>(static_cast<MPType<T>>(a) / static_cast<MPType<T>>(b));
    } else {
      return details::IntDiv(a, b);
    }
  }
};

// floor(a / b), the floor of the exact quotient (Python's //, NumPy, torch.floor_divide),
// not of the rounded one: floor_divide(1.0, 0.1) == 9 since 0.1 is a little above 1/10,
// where floor(1.0 / 0.1) == floor(10.0) == 10. Floating: Python's divmod in MPType
// (FloatFloorDivMod); b == 0 gives a / b (+-inf, NaN for 0 / 0), a NaN operand or an
// infinite a gives NaN, a zero quotient takes the sign of a / b. Integers: rounds toward
// -inf, a // 0 == 0, lowest // -1 == lowest.
template <typename T>
struct FloorDivFunctor {
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    if constexpr (IsFloatingType<T>) {
      MPType<T> mod;
      return static_cast<T>(details::FloatFloorDivMod(static_cast<MPType<T>>(a), static_cast<MPType<T>>(b), &mod));
    } else {
      return details::IntFloorDiv(a, b);
    }
  }
};

// a mod b with the sign of b (Python's %, NumPy, torch.remainder), the remainder of
// FloorDivFunctor: a == floor_div(a, b) * b + remainder(a, b) up to rounding. Floating:
// Python's divmod in MPType (FloatFloorDivMod): a zero remainder takes the sign of b
// (remainder(-4, 2) == +0, remainder(4, -2) == -0); b == 0, a NaN operand or an
// infinite a gives NaN; an infinite b gives a where a has b's sign, b where a has the
// other sign (a zero a gives a zero with b's sign). Integers: a % 0 == 0
// (as a / 0 == 0), lowest % -1 == 0.
template <typename T>
struct RemainderFunctor {
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    if constexpr (IsFloatingType<T>) {
      MPType<T> mod;
      details::FloatFloorDivMod(static_cast<MPType<T>>(a), static_cast<MPType<T>>(b), &mod);
      return static_cast<T>(mod);
    } else {
      if (b == static_cast<T>(0)) return static_cast<T>(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == static_cast<T>(-1)) return static_cast<T>(0);
        const T r = static_cast<T>(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
      } else {
        return static_cast<T>(a % b);
      }
    }
  }
};

// a^b. Floating: pow in MPType (C99 special cases: pow(x, 0) == 1 even for NaN x,
// negative a with non-integral b is NaN). Integers: exact modulo 2^bits (wraps); a
// negative exponent gives the truncated value of 1 / a^-b: 1 for a == 1, +-1 for
// a == -1, 0 otherwise (0 for a == 0 too, as division by zero).
template <typename T>
struct PowFunctor {
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    if constexpr (IsFloatingType<T>) {
      return static_cast<T>(details::Pow(static_cast<MPType<T>>(a), static_cast<MPType<T>>(b)));
    } else {
      static_assert(!std::is_same_v<T, bool>, "PowFunctor: not for bool");
      using W = WrapType<T>;
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) {
          if (a == 1) return static_cast<T>(1);
          if (a == -1) return static_cast<T>((b & 1) ? -1 : 1);
          return static_cast<T>(0);
        }
      }
      W result = 1;
      W base = static_cast<W>(a);
      for (std::make_unsigned_t<T> e = static_cast<std::make_unsigned_t<T>>(b); e != 0; e >>= 1) {
        if (e & 1u) result = static_cast<W>(result * base);
        base = static_cast<W>(base * base);
      }
      return static_cast<T>(result);
    }
  }
};

// max(a, b) that propagates NaN: NaN if either is NaN, and -0 < +0, so the result never
// depends on the order of the arguments (IEEE 754-2019 maximum; torch.maximum, unlike
// std::fmax which drops NaN). Reductions use it too: a max over data holding NaN is NaN.
// initial() == -inf for floating types, lowest for integers. Apply2: exact.
template <typename T>
struct MaxFunctor {
  KPS_FUNCTOR_HD T initial() const { return details::ReduceLimit<T, false>(); }
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    return details::MaxPicksFirst(static_cast<MPType<T>>(a), static_cast<MPType<T>>(b)) ? a : b;
  }
  template <typename U = T>
  KPS_FUNCTOR_HD Packed2Type<U> Apply2(Packed2Type<U> a, Packed2Type<U> b) const {
    return details::PackedMaxNan(a, b, *this);
  }
};

// min(a, b) that propagates NaN (IEEE 754-2019 minimum, -0 < +0; see MaxFunctor).
// initial() == +inf for floating types, max for integers. Apply2: exact.
template <typename T>
struct MinFunctor {
  KPS_FUNCTOR_HD T initial() const { return details::ReduceLimit<T, true>(); }
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    return details::MinPicksFirst(static_cast<MPType<T>>(a), static_cast<MPType<T>>(b)) ? a : b;
  }
  template <typename U = T>
  KPS_FUNCTOR_HD Packed2Type<U> Apply2(Packed2Type<U> a, Packed2Type<U> b) const {
    return details::PackedMinNan(a, b, *this);
  }
};

// The elementwise names (torch.maximum / torch.minimum) of MaxFunctor / MinFunctor: the
// same semantics, NaN-propagating. KPS has no NaN-ignoring max (fmax); the reduce
// functors propagate NaN as well, per DESIGN's semantics.
template <typename T>
using MaximumFunctor = MaxFunctor<T>;
template <typename T>
using MinimumFunctor = MinFunctor<T>;

}  // namespace kps
