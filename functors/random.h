// Counter-based random numbers for host and device: the Philox4x32-10 block function
// (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011)
// and the transforms the generator ops (ops/elementwise/generator_ops.cu) apply to its
// words. CPU and CUDA kernels call the same functions, so a tensor's numbers depend
// only on (seed, offset, element index), never on the device or the launch shape:
//
//   const uint2 key = kps::PhiloxKey(seed);
//   const uint4 words = kps::Philox4x32_10(kps::PhiloxCounter(group, offset), key);
//
// THE STREAM (the contract of the ops uniform and normal; tests/functors/random_test.cu
// checks the block function against Random123's known answers and against curand):
//
//   key     = {lo32(seed), hi32(seed)}              seed and offset: the int64 attributes
//   counter = {lo32(g), hi32(g), lo32(offset), hi32(offset)}   for Philox group g
//   words   = Philox4x32_10(counter, key)           4 x uint32, w[0..3]
//
// This is curand's Philox stream: curand_init(seed, /*subsequence=*/offset,
// /*offset=*/4 * g, &s); curand4(&s) returns the same four words.
//
//   float16, bfloat16, float32: element i (row-major) takes lane i % 4 of group i / 4.
//   float64: element i takes words 2 * (i % 2) and 2 * (i % 2) + 1 of group i / 2.
//
// Uniform bits: UnitFloat(w) = (w >> 8) * 2^-24 in [0, 1) (24 bits: exact in float);
// UnitDouble(a, b) = ((a << 32 | b) >> 11) * 2^-53 in [0, 1) (53 bits, `a` high).
//
// uniform (UniformFunctor): the bounds are first rounded to the output dtype (lo, hi);
// v = fma(hi - lo, u, lo) in the compute type M (float for the 16-bit types and
// float32, double for float64), then rounded to the dtype; a result that rounds to hi
// or above is replaced by the largest value of the dtype below hi (which keeps every
// value's share proportional to its rounding cell). So values lie in [lo, hi), and
// CPU and CUDA agree bit for bit (fma rounds once on both).
//
// normal (NormalFunctor): Box-Muller on the two uniforms of a pair of words,
// u1 = 1 - u (in (0, 1]) and u2 = u (in [0, 1)): r = sqrt(-2 log u1),
// z0 = r cos(2 pi u2), z1 = r sin(2 pi u2), out = fma(std, z, mean) in M, then rounded.
// 32-bit-or-narrower: lanes (0, 1) come from words (0, 1) and lanes (2, 3) from words
// (2, 3) (lane 2k is z0 of its pair, 2k + 1 is z1). float64: one pair per group, u1 from
// UnitDouble(w0, w1), u2 from UnitDouble(w2, w3), element 2g is z0 and 2g + 1 is z1.
// log / sin / cos come from the device's math library on CUDA and <cmath> on the host,
// so normal values may differ between CPU and CUDA by a few ulps (see the tests).
#pragma once

#include <vector_types.h>  // uint2, uint4, float4, double2: plain structs on the host too

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "functors/macros.h"
#include "functors/math.h"
#include "functors/mp_type.h"

namespace kps {

// Philox4x32 constants (Salmon et al.): the round multipliers and the Weyl key bumps
// (the golden ratio and sqrt(3) - 1, as 32-bit fractions).
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

namespace details {

// The high 32 bits of the 64-bit product a * b.
KPS_FUNCTOR_HD uint32_t MulHi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// One Philox round: two 32x32 -> 64 multiplications, their halves crossed and mixed
// with the key.
KPS_FUNCTOR_HD uint4 PhiloxRound(uint4 c, uint2 k) {
  const uint32_t hi0 = MulHi32(kPhiloxM0, c.x);
  const uint32_t lo0 = kPhiloxM0 * c.x;
  const uint32_t hi1 = MulHi32(kPhiloxM1, c.z);
  const uint32_t lo1 = kPhiloxM1 * c.z;
  uint4 r;
  r.x = hi1 ^ c.y ^ k.x;
  r.y = lo1;
  r.z = hi0 ^ c.w ^ k.y;
  r.w = lo0;
  return r;
}

// a * b + c rounded once, on host and device alike (<cmath> is correctly rounded): the
// generators use it so that CPU and CUDA kernels give the same bits.
#if defined(__CUDA_ARCH__)
KPS_FUNCTOR_HD float FusedMulAdd(float a, float b, float c) { return ::fmaf(a, b, c); }
KPS_FUNCTOR_HD double FusedMulAdd(double a, double b, double c) { return ::fma(a, b, c); }
#else
KPS_FUNCTOR_HD float FusedMulAdd(float a, float b, float c) { return std::fma(a, b, c); }
KPS_FUNCTOR_HD double FusedMulAdd(double a, double b, double c) { return std::fma(a, b, c); }
#endif

}  // namespace details

// Philox4x32-10: ten rounds of PhiloxRound over `counter`, the key bumped by
// (kPhiloxW0, kPhiloxW1) between rounds. A bijection of the counter for each key.
KPS_FUNCTOR_HD uint4 Philox4x32_10(uint4 counter, uint2 key) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 9; ++round) {
    counter = details::PhiloxRound(counter, key);
    key.x += kPhiloxW0;
    key.y += kPhiloxW1;
  }
  return details::PhiloxRound(counter, key);
}

// The key of a 64-bit seed: {lo32(seed), hi32(seed)}.
KPS_FUNCTOR_HD uint2 PhiloxKey(uint64_t seed) {
  uint2 k;
  k.x = static_cast<uint32_t>(seed);
  k.y = static_cast<uint32_t>(seed >> 32);
  return k;
}

// The counter of Philox group `group` of the stream `offset`:
// {lo32(group), hi32(group), lo32(offset), hi32(offset)}.
KPS_FUNCTOR_HD uint4 PhiloxCounter(uint64_t group, uint64_t offset) {
  uint4 c;
  c.x = static_cast<uint32_t>(group);
  c.y = static_cast<uint32_t>(group >> 32);
  c.z = static_cast<uint32_t>(offset);
  c.w = static_cast<uint32_t>(offset >> 32);
  return c;
}

// Values one Philox call yields for dtype T: 4 (one per 32-bit word) for the 16- and
// 32-bit types, 2 for 64-bit ones (two words each).
template <typename T>
inline constexpr int kPhiloxValuesPer = sizeof(T) == 8 ? 2 : 4;

// (w >> 8) * 2^-24: the top 24 bits of w as a float in [0, 1), exactly.
KPS_FUNCTOR_HD float UnitFloat(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }

// The top 53 bits of (hi << 32 | lo) as a double in [0, 1), exactly.
KPS_FUNCTOR_HD double UnitDouble(uint32_t hi, uint32_t lo) {
  const uint64_t bits = ((static_cast<uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(bits) * 0x1p-53;
}

// What a generator functor returns for one Philox group: float4 (4 values) for the
// types computing in float, double2 for double.
template <typename T>
using PhiloxValues = std::conditional_t<std::is_same_v<MPType<T>, double>, double2, float4>;

// Uniform values of dtype T in [lo, hi) from one group's words (see the file comment).
// Build with Make: lo, hi and below_hi are values of T (held in M), lo < hi.
template <typename T>
struct UniformFunctor {
  using M = MPType<T>;
  static_assert(std::is_same_v<M, float> || std::is_same_v<M, double>, "UniformFunctor: floating types only");
  M lo;        // the lower bound, as T holds it
  M range;     // hi - lo in M (finite)
  M hi;        // the upper bound, as T holds it (excluded)
  M below_hi;  // the largest T below hi: what a value rounding to hi becomes

  // One value from u in [0, 1): rounded to T, then back to M exactly.
  KPS_FUNCTOR_HD M Value(M u) const {
    const M v = static_cast<M>(static_cast<T>(details::FusedMulAdd(range, u, lo)));
    return v < hi ? v : below_hi;
  }

  KPS_FUNCTOR_HD PhiloxValues<T> operator()(uint4 w) const {
    PhiloxValues<T> r;
    if constexpr (std::is_same_v<M, double>) {
      r.x = Value(UnitDouble(w.x, w.y));
      r.y = Value(UnitDouble(w.z, w.w));
    } else {
      r.x = Value(UnitFloat(w.x));
      r.y = Value(UnitFloat(w.y));
      r.z = Value(UnitFloat(w.z));
      r.w = Value(UnitFloat(w.w));
    }
    return r;
  }
};

// Normal values of dtype T (mean + std * z, z standard normal by Box-Muller) from one
// group's words (see the file comment). Values are in M; the caller rounds them to T.
template <typename T>
struct NormalFunctor {
  using M = MPType<T>;
  static_assert(std::is_same_v<M, float> || std::is_same_v<M, double>, "NormalFunctor: floating types only");
  M mean;
  M stddev;

  // mean + stddev * (z0, z1) for the uniforms u1 in (0, 1], u2 in [0, 1).
  KPS_FUNCTOR_HD void Pair(M u1, M u2, M* a, M* b) const {
    constexpr M kTwoPi = static_cast<M>(6.283185307179586476925286766559);
    const M r = details::Sqrt(static_cast<M>(-2) * details::Log(u1));
    const M theta = kTwoPi * u2;
    *a = details::FusedMulAdd(stddev, r * details::Cos(theta), mean);
    *b = details::FusedMulAdd(stddev, r * details::Sin(theta), mean);
  }

  KPS_FUNCTOR_HD PhiloxValues<T> operator()(uint4 w) const {
    PhiloxValues<T> r;
    if constexpr (std::is_same_v<M, double>) {
      Pair(1.0 - UnitDouble(w.x, w.y), UnitDouble(w.z, w.w), &r.x, &r.y);
    } else {
      Pair(1.0f - UnitFloat(w.x), UnitFloat(w.y), &r.x, &r.y);
      Pair(1.0f - UnitFloat(w.z), UnitFloat(w.w), &r.z, &r.w);
    }
    return r;
  }
};

}  // namespace kps
