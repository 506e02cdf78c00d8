// Device tests of Sort (block bitonic sort): keys only and keys with an index payload,
// ascending and descending, NaN ordered as the largest value, -0.0 / +0.0 and many
// duplicates, partial tiles (num < BlockSize * NX), NX in {1, 2, 4, 8}, block sizes
// 1..1024, and the details helpers (GetLastPow2, Comparator). Every tile is checked
// against std::stable_sort on the host; with indices the permutation must match exactly
// (ties broken by index make the block sort stable) and keys must keep their bits.
// InsertSorted: each thread keeps the NX smallest (key, index) pairs of a stream, checked
// against a host sort.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "primitives/primitives.cuh"
#include "registry/tensor.h"
#include "tests/support/device_array.cuh"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::DeviceArray;
using ::kps::testing::FreshSeed;
using ::kps::testing::ToDouble;

// GetLastPow2 is host + device and usable in constant expressions.
static_assert(details::GetLastPow2(-3) == 1);
static_assert(details::GetLastPow2(0) == 1);
static_assert(details::GetLastPow2(1) == 1);
static_assert(details::GetLastPow2(2) == 2);
static_assert(details::GetLastPow2(3) == 2);
static_assert(details::GetLastPow2(1023) == 512);
static_assert(details::GetLastPow2(1024) == 1024);
static_assert(details::GetLastPow2(1025) == 1024);
static_assert(details::GetLastPow2(std::numeric_limits<int>::max()) == (1 << 30));

template <typename T>
constexpr bool kIsHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;


template <typename T>
T FromDouble(double v) {
  if constexpr (kIsHalfLike<T> || std::is_same_v<T, float>) {
    return static_cast<T>(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// The reference order, written independently of the library: NaN is the largest value.
bool HostBefore(double a, double b, bool ascending) {
  const bool a_nan = std::isnan(a), b_nan = std::isnan(b);
  if (ascending) {
    if (a_nan) return false;
    return b_nan || a < b;
  }
  if (b_nan) return false;
  return a_nan || a > b;
}

bool SameValue(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(SortDetails, GetLastPow2OnDeviceAndComparatorOnHost) {
  for (int n : {1, 2, 3, 5, 64, 100, 4097}) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    EXPECT_EQ(details::GetLastPow2(n), p) << n;
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float a = nan, b = 1.0f;
  details::Comparator(&a, &b, /*ascending=*/true);
  EXPECT_EQ(a, 1.0f);
  EXPECT_TRUE(std::isnan(b));
  details::Comparator(&a, &b, /*ascending=*/false);
  EXPECT_TRUE(std::isnan(a));
  EXPECT_EQ(b, 1.0f);
  float c = 2.0f, d = 2.0f;
  int ic = 7, id = 3;
  details::ComparatorWithIndex(&c, &d, &ic, &id, true);  // equal keys: smaller index first
  EXPECT_EQ(ic, 3);
  EXPECT_EQ(id, 7);
  details::ComparatorWithIndex(&c, &d, &ic, &id, false);  // in both directions
  EXPECT_EQ(ic, 3);
  EXPECT_EQ(id, 7);
  EXPECT_TRUE(details::SortsBefore(-0.0f, 1.0f, true));
  EXPECT_FALSE(details::SortsBefore(-0.0f, 0.0f, true));
  EXPECT_FALSE(details::SortsBefore(0.0f, -0.0f, true));
  EXPECT_FALSE(details::SortsBefore(nan, nan, true));
  EXPECT_FALSE(details::SortsBefore(nan, nan, false));
  EXPECT_TRUE(details::SortsBefore(__float2half(-1.0f), __float2half(nan), true));
  EXPECT_TRUE(details::SortsBefore(int64_t{5}, int64_t{-5}, false));
}

__global__ void GetLastPow2Kernel(const int* in, int* out, int n) {
  const int i = static_cast<int>(KPS_BLOCK_ID_X * KPS_BLOCK_NUM_X + KPS_THREAD_ID_X);
  if (i < n) out[i] = details::GetLastPow2(in[i]);
}

TEST(SortDetails, GetLastPow2Device) {
  KPS_SKIP_WITHOUT_GPU();
  std::vector<int> in = {
      -5, 0, 1, 2, 3, 4, 5, 7, 8, 9, 511, 512, 513, 1 << 20, (1 << 20) + 1, std::numeric_limits<int>::max()};
  const int n = static_cast<int>(in.size());
  Tensor d_in = *Tensor::FromVector(in, Shape{n})->To(DeviceType::kCuda);
  Tensor d_out = *Tensor::Empty(Shape{n}, DataType::kInt32, DeviceType::kCuda);
  GetLastPow2Kernel<<<1, 32>>>(d_in.data<int>(), d_out.data<int>(), n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<int> got = *d_out.ToVector<int>();
  for (int i = 0; i < n; ++i) EXPECT_EQ(got[i], details::GetLastPow2(in[i])) << in[i];
}

// Each block sorts one tile of BlockSize * NX keys (num = the valid count of the tile),
// in place where the types allow, and stores the whole tile: positions past num must
// come back as they went in (`fill` keys, their own positions as indices).
// __launch_bounds__: a block of 1024 threads leaves each at most 64 registers.
template <typename K, typename OutT, typename I, int NX, int BlockSize, bool kWithIndex>
__global__ void __launch_bounds__(BlockSize)
    SortKernel(const K* in, OutT* out, I* out_index, int64_t n, bool ascending, K fill) {
  constexpr int kTile = BlockSize * NX;
  const int64_t base = static_cast<int64_t>(KPS_BLOCK_ID_X) * kTile;
  const int valid = static_cast<int>(n - base < kTile ? n - base : kTile);
  K key[NX];
  Init<K, NX>(key, fill);
  ReadData<K, NX, 1, true>(key, in + base, valid);
  OutT res[NX];
  I idx[NX] = {};
  if constexpr (kWithIndex) {
    for (int j = 0; j < NX; ++j) idx[j] = static_cast<I>(KPS_THREAD_ID_X * NX + j);
  }
  if constexpr (std::is_same_v<K, OutT>) {
    if constexpr (kWithIndex) {
      Sort<K, OutT, NX, BlockSize>(key, idx, key, idx, valid, ascending);
    } else {
      Sort<K, OutT, NX, BlockSize>(key, key, valid, ascending);
    }
    for (int j = 0; j < NX; ++j) res[j] = key[j];
  } else {
    if constexpr (kWithIndex) {
      Sort<K, OutT, NX, BlockSize>(res, idx, key, idx, valid, ascending);
    } else {
      Sort<K, OutT, NX, BlockSize>(res, key, valid, ascending);
    }
  }
  WriteData<OutT, NX, 1, false>(out + base, res, kTile);
  if constexpr (kWithIndex) WriteData<I, NX, 1, false>(out_index + base, idx, kTile);
}

enum class Keys { kWide, kDuplicates };

// Wide: floats in [-4, 4) with ~1/8 NaN (both signs) and some +-0.0; integers in
// [-1000, 1000]. Duplicates: a handful of distinct values (NaN, -0.0 and +0.0 among them).
template <typename K>
std::vector<K> RandomKeys(int64_t n, Keys kind, uint64_t seed) {
  std::mt19937_64 gen(seed);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<K> v(static_cast<size_t>(n));
  for (auto& x : v) {
    const int r = static_cast<int>(gen() % 16);
    if constexpr (std::is_integral_v<K>) {
      x = kind == Keys::kWide ? static_cast<K>(std::uniform_int_distribution<int64_t>(-1000, 1000)(gen))
                              : static_cast<K>(r % 7 - 3);
    } else if (kind == Keys::kWide) {
      if (r == 0) {
        x = FromDouble<K>(nan);
      } else if (r == 1) {
        x = FromDouble<K>(-nan);
      } else if (r == 2) {
        x = FromDouble<K>(gen() % 2 ? 0.0 : -0.0);
      } else {
        x = FromDouble<K>(std::uniform_real_distribution<double>(-4.0, 4.0)(gen));
      }
    } else {
      const double pick[] = {nan, -0.0, 0.0, 1.0, -1.0, 2.5, -nan, 1.0};
      x = FromDouble<K>(pick[r % 8]);
    }
  }
  return v;
}

template <typename K, typename OutT, typename I, int NX, int BlockSize, bool kWithIndex>
void CheckSort(int64_t n, bool ascending, Keys kind) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " BlockSize=" << BlockSize << " n=" << n
                                    << " ascending=" << ascending << " with_index=" << kWithIndex << " keys="
                                    << (kind == Keys::kWide ? "wide" : "duplicates") << " seed=" << seed);
  constexpr int64_t kTile = int64_t{BlockSize} * NX;
  const int64_t tiles = (n + kTile - 1) / kTile;
  const std::vector<K> in = RandomKeys<K>(n, kind, seed);
  const K fill = FromDouble<K>(42.0);
  DeviceArray<K> d_in(in);
  DeviceArray<OutT> d_out(tiles * kTile);
  DeviceArray<I> d_idx(tiles * kTile);
  SortKernel<K, OutT, I, NX, BlockSize, kWithIndex>
      <<<tiles, BlockSize>>>(d_in.get(), d_out.get(), d_idx.get(), n, ascending, fill);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<OutT> got = d_out.ToHost();
  const std::vector<I> got_idx = kWithIndex ? d_idx.ToHost() : std::vector<I>();
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t base = t * kTile;
    const int64_t valid = std::min(kTile, n - base);
    std::vector<int64_t> perm(static_cast<size_t>(valid));
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
      return HostBefore(ToDouble(in[base + a]), ToDouble(in[base + b]), ascending);
    });
    for (int64_t p = 0; p < valid; ++p) {
      const K& want = in[base + perm[p]];
      ASSERT_TRUE(SameValue(ToDouble(got[base + p]), ToDouble(want)))
          << "tile " << t << " position " << p << ": got " << ToDouble(got[base + p]) << ", want "
          << ToDouble(want);
      if constexpr (kWithIndex) {
        ASSERT_EQ(static_cast<int64_t>(got_idx[base + p]), perm[p]) << "tile " << t << " position " << p;
        if constexpr (std::is_same_v<K, OutT>) {  // the key moved with its index, bits intact
          ASSERT_EQ(std::memcmp(&got[base + p], &want, sizeof(K)), 0) << "tile " << t << " position " << p;
        }
      }
    }
    for (int64_t p = valid; p < kTile; ++p) {  // past num: untouched
      ASSERT_EQ(ToDouble(got[base + p]), 42.0) << "tile " << t << " padding position " << p;
      if constexpr (kWithIndex) {
        ASSERT_EQ(static_cast<int64_t>(got_idx[base + p]), p) << "tile " << t << " padding position " << p;
      }
    }
  }
}

// Sizes: 1..3, a small odd count, half a tile plus one, one short, exact, and three tiles
// whose last is partial; ascending and descending; wide and duplicate-heavy keys.
template <typename K, typename OutT, typename I, int NX, int BlockSize, bool kWithIndex>
void CheckSortSweep() {
  constexpr int64_t kTile = int64_t{BlockSize} * NX;
  std::vector<int64_t> sizes = {1, 2, 3, 13, kTile / 2 + 1, kTile - 1, kTile, 2 * kTile + kTile / 3 + 1};
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (int64_t n : sizes) {
    if (n <= 0) continue;
    for (bool ascending : {true, false}) {
      for (Keys kind : {Keys::kWide, Keys::kDuplicates}) {
        CheckSort<K, OutT, I, NX, BlockSize, kWithIndex>(n, ascending, kind);
      }
    }
  }
}

template <typename K, typename I, int NX, int BlockSize>
void CheckSortBoth() {
  CheckSortSweep<K, K, I, NX, BlockSize, false>();
  CheckSortSweep<K, K, I, NX, BlockSize, true>();
}

// Every NX on a warp-sized, a middle and the largest block; the other block sizes below.
template <int NX>
void CheckFloatBlockSizes() {
  CheckSortBoth<float, int, NX, 32>();
  CheckSortBoth<float, int, NX, 128>();
  CheckSortBoth<float, int, NX, 1024>();
}

TEST(Sort, FloatNX1) {
  KPS_SKIP_WITHOUT_GPU();
  CheckFloatBlockSizes<1>();
}
TEST(Sort, FloatNX2) {
  KPS_SKIP_WITHOUT_GPU();
  CheckFloatBlockSizes<2>();
}
TEST(Sort, FloatNX4) {
  KPS_SKIP_WITHOUT_GPU();
  CheckFloatBlockSizes<4>();
}
TEST(Sort, FloatNX8) {
  KPS_SKIP_WITHOUT_GPU();
  CheckFloatBlockSizes<8>();
}
TEST(Sort, FloatOtherBlockSizes) {
  KPS_SKIP_WITHOUT_GPU();
  CheckSortBoth<float, int, 4, 64>();
  CheckSortBoth<float, int, 2, 256>();
  CheckSortBoth<float, int, 8, 512>();
}

TEST(Sort, SubWarpBlocks) {
  KPS_SKIP_WITHOUT_GPU();
  CheckSortBoth<float, int, 4, 1>();
  CheckSortBoth<float, int, 2, 2>();
  CheckSortBoth<float, int, 8, 8>();
  CheckSortBoth<float, int, 1, 16>();
}

TEST(Sort, Double) {
  KPS_SKIP_WITHOUT_GPU();
  CheckSortBoth<double, int64_t, 2, 32>();
  CheckSortBoth<double, int64_t, 4, 128>();
  // 16 bytes per slot * 1024 threads: the shared-memory exchange goes one slot at a time.
  CheckSortBoth<double, int64_t, 8, 1024>();
}

TEST(Sort, Integers) {
  KPS_SKIP_WITHOUT_GPU();
  CheckSortBoth<int32_t, int, 1, 64>();
  CheckSortBoth<int32_t, int, 4, 512>();
  CheckSortBoth<int64_t, int, 2, 128>();
  CheckSortBoth<int64_t, int64_t, 8, 1024>();
}

TEST(Sort, SixteenBitFloats) {
  KPS_SKIP_WITHOUT_GPU();
  CheckSortBoth<__half, int, 1, 32>();
  CheckSortBoth<__half, int, 4, 128>();
  CheckSortBoth<__half, int, 8, 1024>();
  CheckSortBoth<__nv_bfloat16, int, 2, 256>();
}

TEST(Sort, ConvertsOnOutput) {
  KPS_SKIP_WITHOUT_GPU();
  CheckSortSweep<__half, float, int, 4, 64, false>();
  CheckSortSweep<__half, float, int, 4, 64, true>();
  CheckSortSweep<int32_t, double, int, 2, 256, true>();
}

// Thread t streams the keys[t * len .. t * len + len) into an empty list of NX (key,
// index) pairs with InsertSorted (index: the position in the stream) and stores the list.
template <typename K, int NX>
__global__ void InsertSortedKernel(const K* keys, int len, K* out_key, int* out_index) {
  const int t = static_cast<int>(KPS_BLOCK_ID_X * KPS_BLOCK_NUM_X + KPS_THREAD_ID_X);
  K key[NX];
  int index[NX];
  for (int j = 0; j < NX; ++j) {
    key[j] = static_cast<K>(~K(0));
    index[j] = INT_MAX;
  }
  for (int p = 0; p < len; ++p) InsertSorted<K, int, NX>(key, index, keys[static_cast<int64_t>(t) * len + p], p);
  // The 1-D WriteData takes the block's tile and adds this thread's offset itself.
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_ID_X) * KPS_BLOCK_NUM_X * NX;
  WriteData<K, NX, 1, false>(out_key + tile, key, static_cast<int>(KPS_BLOCK_NUM_X) * NX);
  WriteData<int, NX, 1, false>(out_index + tile, index, static_cast<int>(KPS_BLOCK_NUM_X) * NX);
}

template <typename K, int NX>
void CheckInsertSorted(int len, K key_range) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " len=" << len << " key_range=" << +key_range
                                    << " seed=" << seed);
  constexpr int kThreads = 64, kBlocks = 3, kStreams = kThreads * kBlocks;
  std::mt19937_64 gen(seed);
  std::vector<K> keys(static_cast<size_t>(std::max(1, kStreams * len)));
  for (auto& k : keys) k = static_cast<K>(gen() % key_range);  // many ties
  DeviceArray<K> d_keys(keys), d_key(kStreams * NX);
  DeviceArray<int> d_index(kStreams * NX);
  InsertSortedKernel<K, NX><<<kBlocks, kThreads>>>(d_keys.get(), len, d_key.get(), d_index.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<K> got_key = d_key.ToHost();
  const std::vector<int> got_index = d_index.ToHost();
  for (int t = 0; t < kStreams; ++t) {
    std::vector<int> order(static_cast<size_t>(len));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return keys[static_cast<size_t>(t) * len + a] < keys[static_cast<size_t>(t) * len + b];
    });
    for (int j = 0; j < NX; ++j) {
      const size_t g = static_cast<size_t>(t) * NX + j;
      if (j < len) {
        ASSERT_EQ(got_index[g], order[j]) << "stream " << t << " slot " << j;
        ASSERT_EQ(got_key[g], keys[static_cast<size_t>(t) * len + order[j]]) << "stream " << t << " slot " << j;
      } else {  // fewer elements than slots: the rest stays empty
        ASSERT_EQ(got_index[g], std::numeric_limits<int>::max()) << "stream " << t << " slot " << j;
        ASSERT_EQ(got_key[g], static_cast<K>(~K(0))) << "stream " << t << " slot " << j;
      }
    }
  }
}

TEST(InsertSorted, KeepsTheSmallestInOrder) {
  KPS_SKIP_WITHOUT_GPU();
  for (int len : {0, 1, 7, 8, 9, 16, 17, 300}) {
    CheckInsertSorted<uint32_t, 8>(len, 1000000u);
    CheckInsertSorted<uint32_t, 8>(len, 3u);  // nearly all ties: the smallest indices win
    CheckInsertSorted<uint32_t, 16>(len, 50u);
    CheckInsertSorted<uint64_t, 8>(len, uint64_t{1} << 40);
    CheckInsertSorted<uint16_t, 4>(len, uint16_t{9});
  }
}

}  // namespace
}  // namespace kps
