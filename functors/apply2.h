// Apply2: a functor's optional packed path for two 16-bit lanes at once (__half2 /
// __nv_bfloat162), which the elementwise launcher may call when its pack size is even.
//
// Contract. A functor over T = float16 (or bfloat16) may define
//   KPS_FUNCTOR_HD Packed2Type<T> Apply2(Packed2Type<T> a[, Packed2Type<T> b]) const;
// whose lane i equals operator()(a.lane_i[, b.lane_i]), with two documented exceptions:
// a NaN result may carry another payload (the hardware returns the canonical NaN), and
// bfloat16 products whose magnitude is below 2^-126 are rounded once by the packed
// instruction but twice by the scalar path (to a float subnormal, then to bfloat16), so
// they may differ by one bfloat16 ulp. Apply2 is declared in host and device passes
// alike, so HasApply2 never differs between them. The packed instructions run in device
// code on sm_53+ (float16 add, sub, mul, neg, abs) or sm_80+ (float16 max / min / relu,
// and every bfloat16 one); anywhere else Apply2 applies the scalar functor per lane.
//
// Functors with Apply2: Add, Sub, Mul, Max / Min (= Maximum / Minimum), Inverse, Square,
// Abs, Relu. Not AddScaled (a + alpha * b would need an fma, which rounds differently),
// Div (h2div is approximate) or the transcendental ones (h2exp etc. are approximate).
//
//   if constexpr (kps::HasApply2<F, __half2>) { __half2 r = f.Apply2(x2, y2); }
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>
#include <utility>

#include "functors/macros.h"

namespace kps {

// The two-lane type of a 16-bit float: __half -> __half2, __nv_bfloat16 -> __nv_bfloat162.
// Undefined for other types (so Apply2 does not exist for them).
template <typename T>
struct Packed2TypeTrait {};
template <>
struct Packed2TypeTrait<__half> {
  using Type = __half2;
};
template <>
struct Packed2TypeTrait<__nv_bfloat16> {
  using Type = __nv_bfloat162;
};
template <typename T>
using Packed2Type = typename Packed2TypeTrait<T>::Type;

namespace details {

template <typename F, typename T2, typename = void>
struct HasUnaryApply2 : std::false_type {};
template <typename F, typename T2>
struct HasUnaryApply2<F, T2, std::void_t<decltype(std::declval<const F&>().Apply2(std::declval<T2>()))>>
    : std::true_type {};

template <typename F, typename T2, typename = void>
struct HasBinaryApply2 : std::false_type {};
template <typename F, typename T2>
struct HasBinaryApply2<
    F, T2, std::void_t<decltype(std::declval<const F&>().Apply2(std::declval<T2>(), std::declval<T2>()))>>
    : std::true_type {};

}  // namespace details

// True when functor F has an Apply2 taking one or two T2 (T2: __half2 or __nv_bfloat162).
template <typename F, typename T2>
inline constexpr bool HasApply2 =
    (std::is_same_v<T2, __half2> || std::is_same_v<T2, __nv_bfloat162>) &&
    (details::HasUnaryApply2<F, T2>::value || details::HasBinaryApply2<F, T2>::value);

namespace details {

// The scalar functor applied to each lane: the fallback, and the definition Apply2 meets.
template <typename F, typename P>
KPS_FUNCTOR_HD P Lanewise(const F& f, P a) {
  return P(f(a.x), f(a.y));
}
template <typename F, typename P>
KPS_FUNCTOR_HD P Lanewise(const F& f, P a, P b) {
  return P(f(a.x, b.x), f(a.y, b.y));
}

// Packed<Op>(a[, b], f): the packed intrinsic where the architecture has it, else f per
// lane. The _rn forms keep the compiler from fusing a product and a sum into one fma,
// which the scalar path (rounding to 16 bits after each functor) never does.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
#define KPS_IF_HALF2_(packed, fallback) packed
#else
#define KPS_IF_HALF2_(packed, fallback) fallback
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KPS_IF_HALF2_NAN_(packed, fallback) packed
#define KPS_IF_BF162_(packed, fallback) packed
#else
#define KPS_IF_HALF2_NAN_(packed, fallback) fallback
#define KPS_IF_BF162_(packed, fallback) fallback
#endif

#if defined(__CUDA_ARCH__)
KPS_FUNCTOR_HD __half2 ReluNan2(__half2 a) { return __hmax2_nan(a, __float2half2_rn(0.0f)); }
KPS_FUNCTOR_HD __nv_bfloat162 ReluNan2(__nv_bfloat162 a) {
  return __hmax2_nan(a, __float2bfloat162_rn(0.0f));
}
#endif

#define KPS_DEFINE_PACKED_BINARY_(Name, intrinsic, IF_HALF2)                            \
  template <typename F>                                                                 \
  KPS_FUNCTOR_HD __half2 Name(__half2 a, __half2 b, const F& f) {                       \
    (void)f;                                                                            \
    return IF_HALF2(intrinsic(a, b), Lanewise(f, a, b));                                \
  }                                                                                     \
  template <typename F>                                                                 \
  KPS_FUNCTOR_HD __nv_bfloat162 Name(__nv_bfloat162 a, __nv_bfloat162 b, const F& f) {  \
    (void)f;                                                                            \
    return KPS_IF_BF162_(intrinsic(a, b), Lanewise(f, a, b));                           \
  }
#define KPS_DEFINE_PACKED_UNARY_(Name, intrinsic, IF_HALF2)              \
  template <typename F>                                                  \
  KPS_FUNCTOR_HD __half2 Name(__half2 a, const F& f) {                   \
    (void)f;                                                             \
    return IF_HALF2(intrinsic(a), Lanewise(f, a));                       \
  }                                                                      \
  template <typename F>                                                  \
  KPS_FUNCTOR_HD __nv_bfloat162 Name(__nv_bfloat162 a, const F& f) {     \
    (void)f;                                                             \
    return KPS_IF_BF162_(intrinsic(a), Lanewise(f, a));                  \
  }

KPS_DEFINE_PACKED_BINARY_(PackedAdd, __hadd2_rn, KPS_IF_HALF2_)
KPS_DEFINE_PACKED_BINARY_(PackedSub, __hsub2_rn, KPS_IF_HALF2_)
KPS_DEFINE_PACKED_BINARY_(PackedMul, __hmul2_rn, KPS_IF_HALF2_)
// max.NaN / min.NaN: a NaN lane gives NaN, and +0.0 > -0.0 (cuda_fp16.h), as MaxFunctor.
KPS_DEFINE_PACKED_BINARY_(PackedMaxNan, __hmax2_nan, KPS_IF_HALF2_NAN_)
KPS_DEFINE_PACKED_BINARY_(PackedMinNan, __hmin2_nan, KPS_IF_HALF2_NAN_)
KPS_DEFINE_PACKED_UNARY_(PackedNeg, __hneg2, KPS_IF_HALF2_)
KPS_DEFINE_PACKED_UNARY_(PackedAbs, __habs2, KPS_IF_HALF2_)
// relu as max.NaN(a, +0): NaN stays NaN, -0.0 becomes +0.0, as ReluFunctor.
KPS_DEFINE_PACKED_UNARY_(PackedRelu, ReluNan2, KPS_IF_HALF2_NAN_)

#undef KPS_DEFINE_PACKED_BINARY_
#undef KPS_DEFINE_PACKED_UNARY_
#undef KPS_IF_HALF2_
#undef KPS_IF_HALF2_NAN_
#undef KPS_IF_BF162_

}  // namespace details
}  // namespace kps
