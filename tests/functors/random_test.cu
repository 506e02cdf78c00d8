// functors/random.h: Philox4x32-10 against Random123's known answers (host and device)
// and against curand's Philox on the device (an independent implementation of the same
// stream); the uniform and normal transforms against long-double references on the
// host, and device against host.
#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "functors/random.h"
#include "gtest/gtest.h"
#include "registry/data_type.h"
#include "tests/support/device_array.cuh"
#include "testing/support.h"

namespace kps {
namespace testing {
namespace {

constexpr int kBlock = 256;

uint4 U4(uint32_t x, uint32_t y, uint32_t z, uint32_t w) {
  uint4 r;
  r.x = x;
  r.y = y;
  r.z = z;
  r.w = w;
  return r;
}
uint2 U2(uint32_t x, uint32_t y) {
  uint2 r;
  r.x = x;
  r.y = y;
  return r;
}

::testing::AssertionResult SameWords(const uint4& got, const uint4& want) {
  if (got.x == want.x && got.y == want.y && got.z == want.z && got.w == want.w) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << std::hex << "got {" << got.x << ", " << got.y << ", " << got.z << ", "
                                       << got.w << "}, want {" << want.x << ", " << want.y << ", " << want.z
                                       << ", " << want.w << "}";
}

// Random123's known-answer tests for philox4x32_10 (kat_vectors).
struct Kat {
  uint4 counter;
  uint2 key;
  uint4 want;
};
const Kat kKats[] = {
    {U4(0, 0, 0, 0), U2(0, 0), U4(0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)},
    {U4(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), U2(0xffffffff, 0xffffffff),
     U4(0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)},
    {U4(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), U2(0xa4093822, 0x299f31d0),
     U4(0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)},
};

TEST(PhiloxTest, KnownAnswersOnHost) {
  for (const Kat& k : kKats) EXPECT_TRUE(SameWords(Philox4x32_10(k.counter, k.key), k.want));
}

TEST(PhiloxTest, CounterAndKeyLayout) {
  const uint64_t seed = 0x0123456789abcdefull, g = 0xfedcba9876543210ull, offset = 0x1122334455667788ull;
  const uint2 key = PhiloxKey(seed);
  EXPECT_EQ(key.x, 0x89abcdefu);
  EXPECT_EQ(key.y, 0x01234567u);
  EXPECT_TRUE(SameWords(PhiloxCounter(g, offset), U4(0x76543210u, 0xfedcba98u, 0x55667788u, 0x11223344u)));
}

__global__ void PhiloxKernel(const uint4* counters, const uint2* keys, uint4* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Philox4x32_10(counters[i], keys[i]);
}

TEST(PhiloxTest, KnownAnswersOnDevice) {
  KPS_SKIP_WITHOUT_GPU();
  std::vector<uint4> counters;
  std::vector<uint2> keys;
  for (const Kat& k : kKats) {
    counters.push_back(k.counter);
    keys.push_back(k.key);
  }
  const int n = static_cast<int>(counters.size());
  DeviceArray<uint4> d_counters(counters), d_out(n);
  DeviceArray<uint2> d_keys(keys);
  PhiloxKernel<<<1, kBlock>>>(d_counters.get(), d_keys.get(), d_out.get(), n);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint4> got = d_out.ToHost();
  for (int i = 0; i < n; ++i) EXPECT_TRUE(SameWords(got[i], kKats[i].want)) << "KAT " << i;
}

// curand's Philox: curand_init(seed, subsequence = offset, offset = 4 * g) positions
// the state at the first word of counter {g, offset}; curand4 returns that group.
__global__ void CurandKernel(const uint64_t* seeds, const uint64_t* groups, const uint64_t* offsets,
                             uint4* from_curand, uint4* from_kps, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  curandStatePhilox4_32_10_t state;
  curand_init(seeds[i], offsets[i], 4 * groups[i], &state);
  from_curand[i] = curand4(&state);
  from_kps[i] = Philox4x32_10(PhiloxCounter(groups[i], offsets[i]), PhiloxKey(seeds[i]));
}

TEST(PhiloxTest, MatchesCurandOnDevice) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> seeds, groups, offsets;
  // Edge values (group counters whose low word carries, the top of the offset range)
  // and random ones; 4 * g must fit in 64 bits for curand's element offset.
  const uint64_t edge_groups[] = {0, 1, 0xffffffffull, 0x100000000ull, (uint64_t{1} << 62) - 1};
  const uint64_t edge_offsets[] = {0, 1, 0xffffffffull, ~uint64_t{0}};
  for (uint64_t g : edge_groups) {
    for (uint64_t o : edge_offsets) {
      seeds.push_back(rng());
      groups.push_back(g);
      offsets.push_back(o);
    }
  }
  for (int i = 0; i < 4096; ++i) {
    seeds.push_back(rng());
    groups.push_back(i < 2048 ? rng() % 100000 : rng() >> 2);
    offsets.push_back(i % 3 == 0 ? rng() % 16 : rng());
  }
  const int n = static_cast<int>(seeds.size());
  DeviceArray<uint64_t> d_seeds(seeds), d_groups(groups), d_offsets(offsets);
  DeviceArray<uint4> d_curand(n), d_kps(n);
  CurandKernel<<<(n + kBlock - 1) / kBlock, kBlock>>>(d_seeds.get(), d_groups.get(), d_offsets.get(), d_curand.get(),
                                                      d_kps.get(), n);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint4> from_curand = d_curand.ToHost(), from_kps = d_kps.ToHost();
  for (int i = 0; i < n; ++i) {
    SCOPED_TRACE(::testing::Message() << std::hex << "seed " << seeds[i] << " group " << groups[i] << " offset "
                                      << offsets[i]);
    ASSERT_TRUE(SameWords(from_kps[i], from_curand[i]));
    ASSERT_TRUE(SameWords(Philox4x32_10(PhiloxCounter(groups[i], offsets[i]), PhiloxKey(seeds[i])), from_curand[i]));
  }
}

// ---- transforms ------------------------------------------------------------------------

TEST(RandomTransformTest, UnitFloatAndDoubleAreExactAndInRange) {
  EXPECT_EQ(UnitFloat(0), 0.0f);
  EXPECT_EQ(UnitFloat(0xff), 0.0f);  // the low 8 bits are dropped
  EXPECT_EQ(UnitFloat(0x100), 0x1p-24f);
  EXPECT_EQ(UnitFloat(0x80000000u), 0.5f);
  EXPECT_EQ(UnitFloat(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_EQ(UnitDouble(0, 0), 0.0);
  EXPECT_EQ(UnitDouble(0, 0x7ff), 0.0);  // the low 11 bits are dropped
  EXPECT_EQ(UnitDouble(0, 0x800), 0x1p-53);
  EXPECT_EQ(UnitDouble(0x80000000u, 0), 0.5);
  EXPECT_EQ(UnitDouble(0xffffffffu, 0xffffffffu), 1.0 - 0x1p-53);
  EXPECT_EQ(UnitDouble(1, 0), 0x1p-32);  // the first word is the high half
}

template <typename T>
UniformFunctor<T> MakeUniformFunctor(float lo, float hi, float below_hi) {
  UniformFunctor<T> f;
  f.lo = lo;
  f.hi = hi;
  f.range = hi - lo;
  f.below_hi = below_hi;
  return f;
}

TEST(RandomTransformTest, UniformFloatFollowsTheContract) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  const float lo = -2.5f, hi = 3.0f;
  const UniformFunctor<float> f = MakeUniformFunctor<float>(lo, hi, std::nextafter(hi, 0.0f));
  for (int i = 0; i < 100000; ++i) {
    const uint4 w = U4(rng(), rng(), rng(), rng());
    const float4 v = f(w);
    const float got[4] = {v.x, v.y, v.z, v.w};
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    for (int j = 0; j < 4; ++j) {
      // One rounding of the exact lo + (hi - lo) * u (hi - lo = 5.5 is exact).
      const float want = static_cast<float>(static_cast<double>(lo) + 5.5 * ((words[j] >> 8) * 0x1p-24));
      ASSERT_EQ(got[j], want) << std::hex << words[j];
      ASSERT_GE(got[j], lo);
      ASSERT_LT(got[j], hi);
    }
  }
  // [0, 1): the value is u itself.
  const UniformFunctor<float> unit = MakeUniformFunctor<float>(0.0f, 1.0f, std::nextafter(1.0f, 0.0f));
  EXPECT_EQ(unit(U4(0, 0x100, 0x80000000u, 0xffffffffu)).x, 0.0f);
  EXPECT_EQ(unit(U4(0, 0x100, 0x80000000u, 0xffffffffu)).y, 0x1p-24f);
  EXPECT_EQ(unit(U4(0, 0x100, 0x80000000u, 0xffffffffu)).z, 0.5f);
  EXPECT_EQ(unit(U4(0, 0x100, 0x80000000u, 0xffffffffu)).w, 1.0f - 0x1p-24f);
}

TEST(RandomTransformTest, UniformRoundingToHighGivesTheValueBelowHigh) {
  // float16 in [0, 1): u = 1 - 2^-24 rounds to 1.0 in float16, which becomes 1 - 2^-11.
  const UniformFunctor<float16> h = MakeUniformFunctor<float16>(0.0f, 1.0f, 1.0f - 0x1p-11f);
  const float4 v = h(U4(0xffffffffu, 0xfff00000u, 0xffe00000u, 0x80000000u));
  EXPECT_EQ(v.x, 1.0f - 0x1p-11f);  // 1 - 2^-24 -> 1.0 -> below
  EXPECT_EQ(v.y, 1.0f - 0x1p-11f);  // 1 - 2^-12 (a tie) -> 1.0 (even) -> below
  EXPECT_EQ(v.z, 1.0f - 0x1p-11f);  // 1 - 2^-11 exactly
  EXPECT_EQ(v.w, 0.5f);
  // bfloat16 in [-1, 1): 8 significant bits.
  const UniformFunctor<bfloat16> b = MakeUniformFunctor<bfloat16>(-1.0f, 1.0f, 1.0f - 0x1p-8f);
  const float4 u = b(U4(0xffffffffu, 0, 0x80000000u, 0xc0000000u));
  EXPECT_EQ(u.x, 1.0f - 0x1p-8f);
  EXPECT_EQ(u.y, -1.0f);
  EXPECT_EQ(u.z, 0.0f);
  EXPECT_EQ(u.w, 0.5f);
  // float64: 53 bits, [0, 1): u itself, never 1.
  UniformFunctor<double> d;
  d.lo = 0;
  d.hi = 1;
  d.range = 1;
  d.below_hi = std::nextafter(1.0, 0.0);
  const double2 dv = d(U4(0xffffffffu, 0xffffffffu, 0x80000000u, 0x00000001u));
  EXPECT_EQ(dv.x, 1.0 - 0x1p-53);
  EXPECT_EQ(dv.y, 0.5);  // the second word's low bit is below the 53 taken
}

// The Box-Muller pair of two words in long double.
void ReferencePair(uint32_t w1, uint32_t w2, long double* z0, long double* z1) {
  const long double u1 = 1.0L - static_cast<long double>(w1 >> 8) * 0x1p-24L;
  const long double u2 = static_cast<long double>(w2 >> 8) * 0x1p-24L;
  const long double two_pi = 6.283185307179586476925286766559L;
  const long double r = std::sqrt(-2.0L * std::log(u1));
  // theta as the float kernel computes it (one float rounding of 2 pi u2): its error
  // would otherwise dominate the comparison near theta = 2 pi.
  const long double theta = static_cast<float>(static_cast<float>(two_pi) * static_cast<float>(u2));
  *z0 = r * std::cos(theta);
  *z1 = r * std::sin(theta);
}

TEST(RandomTransformTest, NormalFloatAgainstLongDouble) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  const NormalFunctor<float> f{0.0f, 1.0f};
  double max_abs = 0;
  for (int i = 0; i < 100000; ++i) {
    const uint4 w = U4(rng(), rng(), rng(), rng());
    const float4 v = f(w);
    long double z[4];
    ReferencePair(w.x, w.y, &z[0], &z[1]);
    ReferencePair(w.z, w.w, &z[2], &z[3]);
    const float got[4] = {v.x, v.y, v.z, v.w};
    for (int j = 0; j < 4; ++j) {
      // A few float ulps of the magnitude (log, sqrt, sin / cos and the product round).
      const double tol = 0x1p-21 * std::max(1.0, std::fabs(static_cast<double>(z[j])));
      ASSERT_NEAR(got[j], static_cast<double>(z[j]), tol) << std::hex << w.x << " " << w.y << " " << w.z << " " << w.w;
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(got[j])));
    }
  }
  // 24-bit uniforms bound |z| by sqrt(-2 log 2^-24) = 5.768.
  EXPECT_LE(max_abs, 5.7682);
  // Edges: u1 = 1 gives 0; u1 = 2^-24 the largest radius.
  const float4 zero = f(U4(0, 0x12345678, 0, 0));
  EXPECT_EQ(zero.x, 0.0f);
  EXPECT_EQ(zero.y, 0.0f);
  const float4 top = f(U4(0xffffffffu, 0, 0xffffffffu, 0x40000000u));  // theta 0 and pi / 2
  EXPECT_NEAR(top.x, std::sqrt(48.0 * std::log(2.0)), 1e-5);
  EXPECT_EQ(top.y, 0.0f);
  EXPECT_NEAR(top.z, 0.0, 1e-5);
  EXPECT_NEAR(top.w, std::sqrt(48.0 * std::log(2.0)), 1e-5);
  // mean and std: fma(std, z, mean).
  const NormalFunctor<float> shifted{10.0f, 2.0f};
  const uint4 w = U4(0x9abcdef0u, 0x12345678u, 0x0fedcba9u, 0x87654321u);
  const float4 a = f(w), b = shifted(w);
  EXPECT_EQ(b.x, std::fma(2.0f, a.x, 10.0f));
  EXPECT_EQ(b.w, std::fma(2.0f, a.w, 10.0f));
}

TEST(RandomTransformTest, NormalDoubleUsesOnePairOfFiftyThreeBitUniforms) {
  const NormalFunctor<double> f{0.0, 1.0};
  const uint4 w = U4(0x9abcdef0u, 0x12345678u, 0x0fedcba9u, 0x87654321u);
  const double2 v = f(w);
  const long double u1 = 1.0L - static_cast<long double>(UnitDouble(w.x, w.y));
  const long double u2 = UnitDouble(w.z, w.w);
  const long double r = std::sqrt(-2.0L * std::log(u1));
  const long double theta = static_cast<double>(6.283185307179586476925286766559) * static_cast<double>(u2);
  const double z0 = static_cast<double>(r * std::cos(theta)), z1 = static_cast<double>(r * std::sin(theta));
  // A few double ulps of the magnitude (glibc's log, sin and cos are within 1 ulp).
  EXPECT_NEAR(v.x, z0, 0x1p-49 * std::max(1.0, std::fabs(z0)));
  EXPECT_NEAR(v.y, z1, 0x1p-49 * std::max(1.0, std::fabs(z1)));
}

// ---- device against host ---------------------------------------------------------------

template <typename F, typename V>
__global__ void TransformKernel(F f, const uint4* words, V* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = f(words[i]);
}

template <typename F, typename V>
std::vector<V> TransformOnDevice(const F& f, const std::vector<uint4>& words) {
  const int n = static_cast<int>(words.size());
  DeviceArray<uint4> d_words(words);
  DeviceArray<V> d_out(n);
  TransformKernel<F, V><<<(n + kBlock - 1) / kBlock, kBlock>>>(f, d_words.get(), d_out.get(), n);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return d_out.ToHost();
}

std::vector<uint4> RandomWords(uint64_t seed, int n) {
  std::mt19937 rng(static_cast<uint32_t>(seed ^ (seed >> 32)));
  std::vector<uint4> w;
  w.push_back(U4(0, 0, 0, 0));
  w.push_back(U4(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu));
  while (static_cast<int>(w.size()) < n) w.push_back(U4(rng(), rng(), rng(), rng()));
  return w;
}

// Uniform is bitwise the same on the device (fma rounds once on both sides).
template <typename T>
void CheckUniformDeviceMatchesHost(const UniformFunctor<T>& f, uint64_t seed) {
  using V = PhiloxValues<T>;
  const std::vector<uint4> words = RandomWords(seed, 1 << 16);
  const std::vector<V> dev = TransformOnDevice<UniformFunctor<T>, V>(f, words);
  for (size_t i = 0; i < words.size(); ++i) {
    const V host = f(words[i]);
    ASSERT_EQ(std::memcmp(&host, &dev[i], sizeof(V)), 0) << "word group " << i;
  }
}

TEST(RandomTransformTest, UniformOnDeviceMatchesHostBitwise) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  CheckUniformDeviceMatchesHost(MakeUniformFunctor<float>(-2.5f, 3.0f, std::nextafter(3.0f, 0.0f)), seed);
  CheckUniformDeviceMatchesHost(MakeUniformFunctor<float>(0.1f, 0.7f, std::nextafter(0.7f, 0.0f)), seed);
  CheckUniformDeviceMatchesHost(MakeUniformFunctor<float16>(0.0f, 1.0f, 1.0f - 0x1p-11f), seed);
  CheckUniformDeviceMatchesHost(MakeUniformFunctor<bfloat16>(-1.0f, 1.0f, 1.0f - 0x1p-8f), seed);
  UniformFunctor<double> d;
  d.lo = -0.3;
  d.hi = 1.7;
  d.range = d.hi - d.lo;
  d.below_hi = std::nextafter(1.7, 0.0);
  CheckUniformDeviceMatchesHost(d, seed);
}

// Normal: the device's logf / sinf / cosf (1-2 ulp) against glibc's (< 1 ulp): within
// 2^-20 * max(1, |z|) in float (8 ulps at magnitude 1), 2^-48 * max(1, |z|) in double.
TEST(RandomTransformTest, NormalOnDeviceMatchesHostWithinAFewUlps) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  const std::vector<uint4> words = RandomWords(seed, 1 << 16);
  const NormalFunctor<float> f{0.0f, 1.0f};
  const std::vector<float4> dev = TransformOnDevice<NormalFunctor<float>, float4>(f, words);
  for (size_t i = 0; i < words.size(); ++i) {
    const float4 host = f(words[i]);
    const float h[4] = {host.x, host.y, host.z, host.w}, d[4] = {dev[i].x, dev[i].y, dev[i].z, dev[i].w};
    for (int j = 0; j < 4; ++j) ASSERT_NEAR(d[j], h[j], 0x1p-20 * std::max(1.0f, std::fabs(h[j]))) << i;
  }
  const NormalFunctor<double> g{0.0, 1.0};
  const std::vector<double2> dev2 = TransformOnDevice<NormalFunctor<double>, double2>(g, words);
  for (size_t i = 0; i < words.size(); ++i) {
    const double2 host = g(words[i]);
    ASSERT_NEAR(dev2[i].x, host.x, 0x1p-48 * std::max(1.0, std::fabs(host.x))) << i;
    ASSERT_NEAR(dev2[i].y, host.y, 0x1p-48 * std::max(1.0, std::fabs(host.y))) << i;
  }
}

}  // namespace
}  // namespace testing
}  // namespace kps
