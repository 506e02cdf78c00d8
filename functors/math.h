// Scalar math shared by the functors, for host and device: float and double overloads
// that call the CUDA math library in device code and <cmath> in host code, limits that
// device code may read, and the NaN / signed-zero helpers behind min and max.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "functors/macros.h"
#include "functors/mp_type.h"

namespace kps {
namespace details {

// kHigh / kLow: the identities of max and min reductions: +-inf for float and double,
// max() / lowest() for integers and bool. Read in device code by value only (constexpr
// scalars may be, without --expt-relaxed-constexpr); 16-bit floats convert from float.
template <typename T>
struct Limits {
  static_assert(std::is_arithmetic_v<T>, "Limits: float16/bfloat16 use Limits<float>");
  static constexpr T kHigh = std::numeric_limits<T>::has_infinity
                                 ? std::numeric_limits<T>::infinity()
                                 : std::numeric_limits<T>::max();
  static constexpr T kLow = std::numeric_limits<T>::has_infinity
                                ? -std::numeric_limits<T>::infinity()
                                : std::numeric_limits<T>::lowest();
  static constexpr T kMax = std::numeric_limits<T>::max();
  static constexpr T kLowest = std::numeric_limits<T>::lowest();
};

// One definition per function for float and double: the device pass calls the CUDA
// math library (::expf / ::exp), the host pass <cmath>.
#if defined(__CUDA_ARCH__)
#define KPS_DEFINE_MATH_UNARY_(Name, device_f, device_d, host)      \
  KPS_FUNCTOR_HD float Name(float x) { return ::device_f(x); }      \
  KPS_FUNCTOR_HD double Name(double x) { return ::device_d(x); }
#else
#define KPS_DEFINE_MATH_UNARY_(Name, device_f, device_d, host)      \
  KPS_FUNCTOR_HD float Name(float x) { return std::host(x); }       \
  KPS_FUNCTOR_HD double Name(double x) { return std::host(x); }
#endif

KPS_DEFINE_MATH_UNARY_(Exp, expf, exp, exp)
KPS_DEFINE_MATH_UNARY_(Log, logf, log, log)
KPS_DEFINE_MATH_UNARY_(Sqrt, sqrtf, sqrt, sqrt)
KPS_DEFINE_MATH_UNARY_(Sin, sinf, sin, sin)
KPS_DEFINE_MATH_UNARY_(Cos, cosf, cos, cos)
KPS_DEFINE_MATH_UNARY_(Tanh, tanhf, tanh, tanh)
KPS_DEFINE_MATH_UNARY_(Erfc, erfcf, erfc, erfc)
KPS_DEFINE_MATH_UNARY_(Floor, floorf, floor, floor)
KPS_DEFINE_MATH_UNARY_(Ceil, ceilf, ceil, ceil)
// Round half to even (rint / nearbyint in the default rounding mode).
KPS_DEFINE_MATH_UNARY_(RoundHalfEven, rintf, rint, nearbyint)
KPS_DEFINE_MATH_UNARY_(Fabs, fabsf, fabs, fabs)

#undef KPS_DEFINE_MATH_UNARY_

// Two-argument functions, dispatched the same way.
#if defined(__CUDA_ARCH__)
#define KPS_DEFINE_MATH_BINARY_(Name, device_f, device_d, host)                  \
  KPS_FUNCTOR_HD float Name(float x, float y) { return ::device_f(x, y); }       \
  KPS_FUNCTOR_HD double Name(double x, double y) { return ::device_d(x, y); }
#else
#define KPS_DEFINE_MATH_BINARY_(Name, device_f, device_d, host)                  \
  KPS_FUNCTOR_HD float Name(float x, float y) { return std::host(x, y); }        \
  KPS_FUNCTOR_HD double Name(double x, double y) { return std::host(x, y); }
#endif

KPS_DEFINE_MATH_BINARY_(Pow, powf, pow, pow)
// The remainder of x / y with the sign of x (C fmod; exact).
KPS_DEFINE_MATH_BINARY_(Fmod, fmodf, fmod, fmod)

#undef KPS_DEFINE_MATH_BINARY_

// x * y + z rounded once (the device's fma; std::fma on the host, which is exact there too).
KPS_FUNCTOR_HD float Fma(float x, float y, float z) {
#if defined(__CUDA_ARCH__)
  return ::fmaf(x, y, z);
#else
  return std::fma(x, y, z);
#endif
}
KPS_FUNCTOR_HD double Fma(double x, double y, double z) {
#if defined(__CUDA_ARCH__)
  return ::fma(x, y, z);
#else
  return std::fma(x, y, z);
#endif
}

// x * y rounded on its own: never fused with a following add into one fma (the device's
// compiler fuses a * b + c by default; the host's does not without FMA instructions), so
// CPU and CUDA kernels that add a product round it alike. Integers: the plain product.
template <typename M>
KPS_FUNCTOR_HD M MulRounded(M x, M y) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<M, float>) return __fmul_rn(x, y);
  if constexpr (std::is_same_v<M, double>) return __dmul_rn(x, y);
#endif
  return x * y;
}

// 1 / x from the hardware's approximate reciprocal: on the device rcp.approx.ftz, one
// MUFU.RCP (1 ulp; the IEEE division is about ten instructions and a slow-path call).
// For kernels whose outputs round to 16 bits. The host divides.
KPS_FUNCTOR_HD float RcpApprox(float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#else
  return 1.0f / x;
#endif
}

// 2^x from the hardware's approximate exponential: on the device ex2.approx.ftz, one
// MUFU.EX2 (about 2 ulp; results below 2^-126 flush to zero). The host, and double: exp2.
KPS_FUNCTOR_HD float Exp2Approx(float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#else
  return std::exp2(x);
#endif
}
KPS_FUNCTOR_HD double Exp2Approx(double x) {
#if defined(__CUDA_ARCH__)
  return ::exp2(x);
#else
  return std::exp2(x);
#endif
}

// e^x as Exp2Approx(x * log2(e)) on the device: one multiply and one MUFU.EX2 (about 2
// ulp, plus |x| ulp from rounding the product; results below 2^-126 flush to zero),
// against about ten instructions for expf. For kernels whose outputs round to 16 bits.
// The host, and double: exp.
KPS_FUNCTOR_HD float ExpApprox(float x) {
#if defined(__CUDA_ARCH__)
  return Exp2Approx(x * 1.4426950408889634f);
#else
  return std::exp(x);
#endif
}
KPS_FUNCTOR_HD double ExpApprox(double x) { return Exp(x); }

// 1 / sqrt(x): the device's rsqrt (2 ulp in float, 1 in double); the host divides.
KPS_FUNCTOR_HD float Rsqrt(float x) {
#if defined(__CUDA_ARCH__)
  return ::rsqrtf(x);
#else
  return 1.0f / std::sqrt(x);
#endif
}
KPS_FUNCTOR_HD double Rsqrt(double x) {
#if defined(__CUDA_ARCH__)
  return ::rsqrt(x);
#else
  return 1.0 / std::sqrt(x);
#endif
}

// x is NaN (x != x: no library call, same on every compiler without fast-math).
template <typename M>
KPS_FUNCTOR_HD bool IsNan(M x) {
  if constexpr (std::is_floating_point_v<M>) {
    return x != x;
  } else {
    return false;
  }
}

// The sign bit of a float or double (true for -0.0).
KPS_FUNCTOR_HD bool SignBit(float x) {
#if defined(__CUDA_ARCH__)
  return ::copysignf(1.0f, x) < 0.0f;
#else
  return std::signbit(x);
#endif
}
KPS_FUNCTOR_HD bool SignBit(double x) {
#if defined(__CUDA_ARCH__)
  return ::copysign(1.0, x) < 0.0;
#else
  return std::signbit(x);
#endif
}

// Whether max(a, b) is a (else b), IEEE 754-2019 maximum: a NaN operand wins, and -0.0
// counts as less than +0.0, so the result never depends on the argument order.
template <typename M>
KPS_FUNCTOR_HD bool MaxPicksFirst(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    if (a != a) return true;
    if (b != b) return false;
    if (a == b) return !SignBit(a);
    return a > b;
  } else {
    return !(b > a);
  }
}
// Whether min(a, b) is a (else b), IEEE 754-2019 minimum (see MaxPicksFirst).
template <typename M>
KPS_FUNCTOR_HD bool MinPicksFirst(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    if (a != a) return true;
    if (b != b) return false;
    if (a == b) return SignBit(a);
    return a < b;
  } else {
    return !(b < a);
  }
}

// x != 0 for any KPS type (16-bit floats through float); NaN is nonzero, -0.0 is zero.
template <typename T>
KPS_FUNCTOR_HD bool IsNonZero(T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x;
  } else {
    return static_cast<MPType<T>>(x) != static_cast<MPType<T>>(0);
  }
}

// -x with two's-complement wrap for integers (-lowest == lowest), plain negation else.
template <typename M>
KPS_FUNCTOR_HD M WrapNeg(M x) {
  if constexpr (std::is_integral_v<M>) {
    using W = WrapType<M>;
    return static_cast<M>(static_cast<W>(0) - static_cast<W>(x));
  } else {
    return -x;
  }
}

// a + b and a * b with two's-complement wrap for integers (no signed overflow), plain
// arithmetic else: the accumulators of the integer sums and products (reduce and scan).
template <typename M>
KPS_FUNCTOR_HD M WrapAdd(M a, M b) {
  if constexpr (std::is_integral_v<M>) {
    using W = WrapType<M>;
    return static_cast<M>(static_cast<W>(a) + static_cast<W>(b));
  } else {
    return a + b;
  }
}
template <typename M>
KPS_FUNCTOR_HD M WrapMul(M a, M b) {
  if constexpr (std::is_integral_v<M>) {
    using W = WrapType<M>;
    return static_cast<M>(static_cast<W>(a) * static_cast<W>(b));
  } else {
    return a * b;
  }
}

}  // namespace details
}  // namespace kps
