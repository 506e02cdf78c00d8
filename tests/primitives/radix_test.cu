// Device tests of the radix primitives (primitives/radix.cuh): ReadDataStriped (block-
// and warp-striped runs, partial runs, `full`, widening loads), WarpRadixRank (ballots and
// match, every digit position, seeded counts, skewed digits), the block's digit slots
// (RadixWarpCountsTotal + RadixWarpCountsToSlots: a stable counting sort of a tile,
// partial tiles), BlockRadixHistogram (1, 2 and 4 passes: 8-, 16- and 32-bit keys, partial
// tiles, several blocks adding to existing counts) and the look-back (many tiles, two
// passes over one status array). Every result is checked against a host reference.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "primitives/primitives.cuh"
#include "primitives/radix.cuh"
#include "tests/support/device_array.cuh"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::DeviceArray;
using ::kps::testing::FreshSeed;

constexpr int kBins = 256;
constexpr uint32_t kPoison = 0xdeadbeefu;

// Keys with `bits` significant bits; with `skewed`, only a handful of distinct digits.
std::vector<uint32_t> RandomKeys(int64_t n, int bits, bool skewed, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<uint32_t> v(static_cast<size_t>(n));
  const uint32_t mask = bits >= 32 ? ~0u : (1u << bits) - 1u;
  const uint32_t few[] = {0u, 0x01010101u, 0x7f7f7f7fu, 0xffffffffu, 0x80808080u};
  for (auto& x : v) x = skewed ? few[gen() % 5] & mask : static_cast<uint32_t>(gen()) & mask;
  return v;
}

uint32_t HostDigit(uint32_t key, int shift) { return (key >> shift) & 255u; }

// --- ReadDataStriped -------------------------------------------------------------------

// Block-striped (first = threadIdx.x, stride = blockDim.x) or warp-striped (first = warp
// * 32 * NX + lane, stride 32) loads of a tile of uint8 widened to uint32, stored
// thread-major: out[t * NX + j].
template <int NX>
__global__ void StripedKernel(const uint8_t* in, uint32_t* out, int num, bool warp_striped, bool full) {
  const int t = static_cast<int>(threadIdx.x);
  const int first = warp_striped ? (t / 32) * 32 * NX + t % 32 : t;
  const int stride = warp_striped ? 32 : static_cast<int>(blockDim.x);
  uint32_t v[NX];
  ReadDataStriped<uint8_t, uint32_t, NX>(v, in, first, stride, num, 0xfeu + 0x100u, full);
  for (int j = 0; j < NX; ++j) out[t * NX + j] = v[j];
}

TEST(RadixReadDataStriped, BlockAndWarpStriped) {
  KPS_SKIP_WITHOUT_GPU();
  constexpr int kNX = 5, kThreads = 64, kTile = kNX * kThreads;
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  std::vector<uint8_t> in(kTile);
  for (auto& x : in) x = static_cast<uint8_t>(gen());
  DeviceArray<uint8_t> d_in(in);
  for (bool warp_striped : {false, true}) {
    for (int num : {0, 1, 31, 33, kTile / 2 + 7, kTile - 1, kTile}) {
      for (bool full : {false, true}) {
        if (full && num != kTile) continue;  // `full` promises every item is in range
        SCOPED_TRACE(::testing::Message() << "warp_striped=" << warp_striped << " num=" << num << " full=" << full
                                          << " seed=" << seed);
        DeviceArray<uint32_t> d_out(kTile);  // poisoned
        StripedKernel<kNX><<<1, kThreads>>>(d_in.get(), d_out.get(), num, warp_striped, full);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<uint32_t> got = d_out.ToHost();
        for (int t = 0; t < kThreads; ++t) {
          for (int j = 0; j < kNX; ++j) {
            const int p = warp_striped ? (t / 32) * 32 * kNX + t % 32 + j * 32 : t + j * kThreads;
            const uint32_t want = p < num ? in[p] : 0x1feu;
            ASSERT_EQ(got[t * kNX + j], want) << "thread " << t << " item " << j;
          }
        }
      }
    }
  }
}

// --- WarpRadixRank ---------------------------------------------------------------------

// Warp w ranks keys[w * 32 * NX + j * 32 + lane] (item j of the lane), with its counts
// seeded from seed_counts[w]; writes rank[position] and the counts after.
template <int NX>
__global__ void WarpRankKernel(const uint32_t* keys, const uint32_t* seed_counts, int shift, bool match,
                               uint32_t* rank_out, uint32_t* counts_out) {
  constexpr int kMaxWarps = 4;
  __shared__ uint32_t counts[kMaxWarps][kBins];
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
  const int warps = static_cast<int>(blockDim.x) / 32;
  for (int i = t; i < warps * kBins; i += blockDim.x) (&counts[0][0])[i] = seed_counts[i];
  __syncthreads();
  uint32_t key[NX], rank[NX];
  ReadDataStriped<uint32_t, uint32_t, NX>(key, keys, warp * 32 * NX + lane, 32, warps * 32 * NX, 0u, true);
  WarpRadixRank<NX>(key, shift, match, counts[warp], rank);
  for (int j = 0; j < NX; ++j) rank_out[warp * 32 * NX + j * 32 + lane] = rank[j];
  __syncthreads();
  for (int i = t; i < warps * kBins; i += blockDim.x) counts_out[i] = (&counts[0][0])[i];
}

template <int NX>
void CheckWarpRank(int warps, int shift, bool match, bool skewed) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " warps=" << warps << " shift=" << shift << " match=" << match
                                    << " skewed=" << skewed << " seed=" << seed);
  const int n = warps * 32 * NX;
  const std::vector<uint32_t> keys = RandomKeys(n, 32, skewed, seed);
  std::mt19937_64 gen(seed + 1);
  std::vector<uint32_t> seeds(static_cast<size_t>(warps) * kBins);
  for (auto& s : seeds) s = static_cast<uint32_t>(gen() % 1000);
  DeviceArray<uint32_t> d_keys(keys), d_seeds(seeds), d_rank(n), d_counts(warps * kBins);
  WarpRankKernel<NX><<<1, warps * 32>>>(d_keys.get(), d_seeds.get(), shift, match, d_rank.get(), d_counts.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint32_t> rank = d_rank.ToHost(), counts = d_counts.ToHost();
  for (int w = 0; w < warps; ++w) {
    std::vector<uint32_t> running(seeds.begin() + w * kBins, seeds.begin() + (w + 1) * kBins);
    for (int p = 0; p < 32 * NX; ++p) {  // the warp's keys in position order
      const int e = w * 32 * NX + p;
      const uint32_t d = HostDigit(keys[e], shift);
      ASSERT_EQ(rank[e], running[d]) << "warp " << w << " position " << p;
      ++running[d];
    }
    for (int d = 0; d < kBins; ++d) ASSERT_EQ(counts[w * kBins + d], running[d]) << "warp " << w << " digit " << d;
  }
}

TEST(RadixWarpRank, BallotAndMatchEveryShift) {
  KPS_SKIP_WITHOUT_GPU();
  for (bool match : {false, true}) {
    for (int shift : {0, 8, 16, 24}) {
      for (bool skewed : {false, true}) {
        CheckWarpRank<1>(1, shift, match, skewed);
        CheckWarpRank<12>(4, shift, match, skewed);
        CheckWarpRank<16>(2, shift, match, skewed);
      }
    }
  }
}

// --- The block's digit slots: a stable counting sort of one tile ---------------------

// One tile of the block: warp-striped keys (past num: 0xffffffff, as the onesweep pads),
// ranked, then placed by slot. Writes the tile in digit order (keys and positions), the
// per-digit counts and tile starts.
template <int kThreads, int NX>
__global__ void __launch_bounds__(kThreads) TileSlotsKernel(const uint32_t* keys, int num, int shift, bool match,
                                                            uint32_t* out_keys, int* out_pos, uint32_t* out_count,
                                                            uint32_t* out_start) {
  constexpr int kWarps = kThreads / 32;
  __shared__ uint32_t warp_counts[kWarps][kBins];
  const int t = static_cast<int>(threadIdx.x), warp = t / 32, lane = t % 32;
  for (int i = t; i < kWarps * kBins; i += kThreads) (&warp_counts[0][0])[i] = 0;
  __syncthreads();
  const int first = warp * 32 * NX + lane;
  uint32_t key[NX], rank[NX];
  ReadDataStriped<uint32_t, uint32_t, NX>(key, keys, first, 32, num, 0xffffffffu);
  WarpRadixRank<NX>(key, shift, match, warp_counts[warp], rank);
  __syncthreads();
  const uint32_t total = RadixWarpCountsTotal<kWarps>(warp_counts);
  uint32_t tile_start = kPoison;
  RadixWarpCountsToSlots<kThreads, kWarps>(warp_counts, total, &tile_start);
  __syncthreads();
  if (t < kBins) {
    out_count[t] = total;
    out_start[t] = tile_start;
  }
  for (int j = 0; j < NX; ++j) {
    const uint32_t slot = warp_counts[warp][RadixDigit(key[j], shift)] + rank[j];
    if (slot < static_cast<uint32_t>(num)) {  // padding takes the last slots
      out_keys[slot] = key[j];
      out_pos[slot] = first + j * 32;
    }
  }
}

template <int kThreads, int NX>
void CheckTileSlots(int num, int shift, bool match, bool skewed) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "threads=" << kThreads << " NX=" << NX << " num=" << num << " shift=" << shift
                                    << " match=" << match << " skewed=" << skewed << " seed=" << seed);
  constexpr int kTile = kThreads * NX;
  const std::vector<uint32_t> keys = RandomKeys(std::max(num, 1), 32, skewed, seed);
  DeviceArray<uint32_t> d_keys(keys), d_out_keys(kTile), d_count(kBins), d_start(kBins);
  DeviceArray<int> d_out_pos(kTile);
  TileSlotsKernel<kThreads, NX><<<1, kThreads>>>(d_keys.get(), num, shift, match, d_out_keys.get(), d_out_pos.get(),
                                                 d_count.get(), d_start.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint32_t> out_keys = d_out_keys.ToHost(), count = d_count.ToHost(), start = d_start.ToHost();
  const std::vector<int> out_pos = d_out_pos.ToHost();
  // Host: positions stably sorted by digit; padding (digit 255 keys past num) counted.
  std::vector<int> perm(static_cast<size_t>(num));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int a, int b) { return HostDigit(keys[a], shift) < HostDigit(keys[b], shift); });
  for (int s = 0; s < num; ++s) {
    ASSERT_EQ(out_pos[s], perm[s]) << "slot " << s;
    ASSERT_EQ(out_keys[s], keys[perm[s]]) << "slot " << s;
  }
  // Outputs start poisoned (all bytes 0xFF: position -1; a key of 0xffffffff is also the
  // padding's, so the positions tell written from unwritten).
  for (int s = num; s < kTile; ++s) ASSERT_EQ(out_pos[s], -1) << "slot " << s << " past num was written";
  std::vector<uint32_t> hist(kBins, 0);
  for (int p = 0; p < num; ++p) ++hist[HostDigit(keys[p], shift)];
  hist[255] += static_cast<uint32_t>(kTile - num);
  uint32_t run = 0;
  for (int d = 0; d < kBins; ++d) {
    ASSERT_EQ(count[d], hist[d]) << "digit " << d;
    ASSERT_EQ(start[d], run) << "digit " << d;
    run += hist[d];
  }
}

TEST(RadixBlockSlots, StableCountingSortOfATile) {
  KPS_SKIP_WITHOUT_GPU();
  for (bool match : {false, true}) {
    for (bool skewed : {false, true}) {
      for (int shift : {0, 24}) {
        for (int num : {1, 33, 256 * 4 - 1, 256 * 4}) CheckTileSlots<256, 4>(num, shift, match, skewed);
        for (int num : {512 * 12 / 3 + 5, 512 * 12}) CheckTileSlots<512, 12>(num, shift, match, skewed);
      }
    }
  }
}

// --- BlockRadixHistogram ---------------------------------------------------------------

// A grid striding over tiles of kThreads * NX keys (block-striped), counting every pass's
// digits into counts (which holds earlier values).
template <int kThreads, int NX, int kPasses>
__global__ void __launch_bounds__(kThreads) HistogramTestKernel(const uint32_t* keys, int64_t n, uint32_t* counts) {
  using Histogram = BlockRadixHistogram<kThreads, kPasses>;
  __shared__ typename Histogram::TempStorage storage;
  Histogram hist(storage);
  hist.Zero();
  constexpr int kTile = kThreads * NX;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kTile; base < n; base += int64_t{gridDim.x} * kTile) {
    const int num = n - base < kTile ? static_cast<int>(n - base) : kTile;
    uint32_t key[NX];
    // Past num: a key whose digits would show if counted.
    ReadDataStriped<uint32_t, uint32_t, NX>(key, keys + base, static_cast<int>(threadIdx.x), kThreads, num, 0x5a5a5a5au);
    hist.template Count<NX>(key, num);
  }
  hist.AddTo(counts);
}

template <int kPasses>
void CheckHistogram(int64_t n, int blocks, bool skewed) {
  constexpr int kThreads = 256, kNX = 16;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "passes=" << kPasses << " n=" << n << " blocks=" << blocks
                                    << " skewed=" << skewed << " seed=" << seed);
  const std::vector<uint32_t> keys = RandomKeys(std::max<int64_t>(n, 1), 8 * kPasses, skewed, seed);
  std::mt19937_64 gen(seed + 1);
  std::vector<uint32_t> init(kPasses * kBins);
  for (auto& c : init) c = static_cast<uint32_t>(gen() % 100000);
  DeviceArray<uint32_t> d_keys(keys), d_counts(init);
  HistogramTestKernel<kThreads, kNX, kPasses><<<blocks, kThreads>>>(d_keys.get(), n, d_counts.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint32_t> got = d_counts.ToHost();
  std::vector<uint32_t> want = init;
  for (int64_t e = 0; e < n; ++e) {
    for (int p = 0; p < kPasses; ++p) ++want[p * kBins + HostDigit(keys[e], 8 * p)];
  }
  for (int i = 0; i < kPasses * kBins; ++i) ASSERT_EQ(got[i], want[i]) << "pass " << i / kBins << " digit " << i % kBins;
}

TEST(RadixBlockHistogram, OneTwoFourPasses) {
  KPS_SKIP_WITHOUT_GPU();
  constexpr int64_t kTile = 256 * 16;
  for (bool skewed : {false, true}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{13}, kTile - 1, kTile, 3 * kTile + 5, 40 * kTile + 1001}) {
      for (int blocks : {1, 7}) {
        CheckHistogram<1>(n, blocks, skewed);
        CheckHistogram<2>(n, blocks, skewed);
        CheckHistogram<4>(n, blocks, skewed);
      }
    }
  }
}

// --- The look-back -----------------------------------------------------------------------

// Block = tile; thread d publishes counts[tile][d] for pass `pass`, then looks back.
// before[tile][d] receives the earlier tiles' total.
__global__ void LookBackKernel(const uint32_t* counts, uint32_t* status, int pass, uint32_t* before) {
  const int tile = static_cast<int>(blockIdx.x), d = static_cast<int>(threadIdx.x);
  const uint32_t c = counts[static_cast<int64_t>(tile) * kBins + d];
  RadixLookBackPublish(status, pass, tile, d, c);
  before[static_cast<int64_t>(tile) * kBins + d] = RadixLookBack(status, pass, tile, d, c);
}

TEST(RadixLookBack, ExclusiveCountsOverTilesTwoPasses) {
  KPS_SKIP_WITHOUT_GPU();
  for (int tiles : {1, 2, 5, 3001}) {
    const uint64_t seed = FreshSeed();
    SCOPED_TRACE(::testing::Message() << "tiles=" << tiles << " seed=" << seed);
    std::mt19937_64 gen(seed);
    DeviceArray<uint32_t> d_status(static_cast<int64_t>(tiles) * kBins);
    ASSERT_EQ(cudaMemset(d_status.get(), 0, static_cast<size_t>(tiles) * kBins * sizeof(uint32_t)), cudaSuccess);
    for (int pass = 0; pass < 2; ++pass) {  // the second pass reuses the first's words
      std::vector<uint32_t> counts(static_cast<size_t>(tiles) * kBins);
      for (auto& c : counts) c = gen() % 4 == 0 ? 0u : static_cast<uint32_t>(gen() % 5000);
      DeviceArray<uint32_t> d_counts(counts), d_before(static_cast<int64_t>(tiles) * kBins);
      LookBackKernel<<<tiles, kBins>>>(d_counts.get(), d_status.get(), pass, d_before.get());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<uint32_t> before = d_before.ToHost(), status = d_status.ToHost();
      for (int d = 0; d < kBins; ++d) {
        uint32_t run = 0;
        for (int t = 0; t < tiles; ++t) {
          const size_t i = static_cast<size_t>(t) * kBins + d;
          ASSERT_EQ(before[i], run) << "pass " << pass << " tile " << t << " digit " << d;
          run += counts[i];
          // Every tile ends inclusive for this pass.
          ASSERT_EQ(status[i] >> kRadixLookBackCountBits, 2u * pass + 2u) << "tile " << t << " digit " << d;
          ASSERT_EQ(status[i] & kRadixLookBackCountMask, run) << "tile " << t << " digit " << d;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kps
