// Device tests of Reduce (kLocalMode, kGlobalMode along x and y), WarpReduce,
// BlockXReduce, BlockYReduce, and the fast forms ShortRowReduce, RowOfWarpsReduce and
// FoldRowsIntoRowZero. Each runs in a small test kernel over many block shapes
// (blockDim.x not a multiple of 32, rows straddling warps, partial last warps), checks
// every thread's result against a host reference, and uses a non-commutative functor to
// prove that values are combined in index order.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "primitives/primitives.cuh"
#include "registry/tensor.h"
#include "tests/support/device_array.cuh"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::Affine;
using ::kps::testing::ComposeAffine;
using ::kps::testing::DeviceArray;
using ::kps::testing::Epsilon;
using ::kps::testing::FreshSeed;
using ::kps::testing::TestSum;
using ::kps::testing::ToDouble;
using ::kps::testing::Widen;

// ---- Test functors (tiny, local: the library functors are not what is under test) ----

template <typename T>
struct TestMax {
  __host__ __device__ T operator()(T a, T b) const { return Widen(b) > Widen(a) ? b : a; }
};

template <typename T>
struct TestMin {
  __host__ __device__ T operator()(T a, T b) const { return Widen(b) < Widen(a) ? b : a; }
};

// ---- Host helpers ----

// Random inputs: floats uniform in [-4, 4) (rounded to T), integers in [-1000, 1000],
// Affine maps with odd multipliers.
template <typename T>
std::vector<T> RandomValues(int64_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, Affine>) {
      x = Affine{static_cast<uint32_t>(gen()) | 1u, static_cast<uint32_t>(gen())};
    } else if constexpr (std::is_integral_v<T>) {
      x = static_cast<T>(std::uniform_int_distribution<int64_t>(-1000, 1000)(gen));
    } else {
      x = static_cast<T>(static_cast<float>(std::uniform_real_distribution<double>(-4.0, 4.0)(gen)));
    }
  }
  return v;
}

// Checks got against the exact combination of `terms` (in order) under Op. Sums of
// floating types allow the rounding of a combination tree of the given depth: every
// rounding is at most eps * (sum of |terms| below it), and a term sits under at most
// `depth` roundings. Everything else (integers, max, min, Affine) must match exactly.
template <typename T, class Op>
::testing::AssertionResult MatchesReduction(const T& got, const std::vector<T>& terms, int depth) {
  if constexpr (std::is_same_v<Op, TestSum<T>> && !std::is_integral_v<T>) {
    double ref = 0.0, abs_sum = 0.0;
    for (const T& t : terms) {
      ref += ToDouble(t);
      abs_sum += std::fabs(ToDouble(t));
    }
    const double tol = Epsilon<T>() * depth * abs_sum + 1e-300;
    if (std::fabs(ToDouble(got) - ref) <= tol) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << ToDouble(got) << ", want " << ref << " +- " << tol;
  } else {
    Op op;
    T ref = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) ref = op(ref, terms[i]);
    if constexpr (std::is_same_v<T, Affine>) {
      if (got == ref) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure()
             << "got {" << got.m << ", " << got.c << "}, want {" << ref.m << ", " << ref.c << "}";
    } else {
      if (ToDouble(got) == ToDouble(ref)) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "got " << ToDouble(got) << ", want " << ToDouble(ref);
    }
  }
}

int CeilLog2(int n) {
  int lg = 0;
  while ((1 << lg) < n) ++lg;
  return lg;
}

// ---- kLocalMode ----

// Thread g folds its NY rows of NX inputs into NY accumulators that start from `init`.
template <typename T, int NX, int NY, class Op>
__global__ void __launch_bounds__(1024) LocalReduceKernel(const T* in, const T* init, T* out) {
  const int64_t g = static_cast<int64_t>(KPS_BLOCK_ID_X) * KPS_BLOCK_NUM_X + KPS_THREAD_ID_X;
  T acc[NY], reg[NY * NX];
  for (int i = 0; i < NY; ++i) acc[i] = init[g * NY + i];
  for (int k = 0; k < NY * NX; ++k) reg[k] = in[g * NY * NX + k];
  Reduce<T, NX, NY, Op, details::kLocalMode>(acc, reg, Op(), false);
  for (int i = 0; i < NY; ++i) out[g * NY + i] = acc[i];
}

template <typename T, int NX, int NY, class Op>
void CheckLocal() {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " NY=" << NY << " seed=" << seed);
  constexpr int kBlock = 96, kGrid = 3;
  const int64_t threads = kBlock * kGrid;
  const std::vector<T> in = RandomValues<T>(threads * NY * NX, seed);
  const std::vector<T> init = RandomValues<T>(threads * NY, seed + 1);
  DeviceArray<T> d_in(in), d_init(init), d_out(threads * NY);
  LocalReduceKernel<T, NX, NY, Op><<<kGrid, kBlock>>>(d_in.get(), d_init.get(), d_out.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> got = d_out.ToHost();
  for (int64_t g = 0; g < threads; ++g) {
    for (int i = 0; i < NY; ++i) {
      std::vector<T> terms = {init[g * NY + i]};
      for (int j = 0; j < NX; ++j) terms.push_back(in[(g * NY + i) * NX + j]);
      ASSERT_TRUE((MatchesReduction<T, Op>(got[g * NY + i], terms, NX + 1)))
          << "thread " << g << " row " << i;
    }
  }
}

TEST(ReduceLocalMode, FoldsEachRowIntoItsAccumulator) {
  KPS_SKIP_WITHOUT_GPU();
  CheckLocal<float, 1, 1, TestSum<float>>();
  CheckLocal<float, 4, 2, TestSum<float>>();
  CheckLocal<double, 8, 1, TestSum<double>>();
  CheckLocal<int32_t, 2, 4, TestSum<int32_t>>();
  CheckLocal<int64_t, 4, 1, TestMax<int64_t>>();
  CheckLocal<__half, 4, 2, TestSum<__half>>();
  CheckLocal<__nv_bfloat16, 8, 1, TestMin<__nv_bfloat16>>();
  CheckLocal<Affine, 4, 3, ComposeAffine>();  // order: accumulator first, then j = 0..NX-1
}

// ---- kGlobalMode ----

// Each thread of a (bx, by) block reduces its NX * NY values across the block; every
// thread writes all its results, so the host sees which threads received them.
template <typename T, int NX, int NY, class Op>
__global__ void __launch_bounds__(1024) GlobalReduceKernel(const T* in, T* out, bool reduce_last_dim) {
  const int threads = static_cast<int>(KPS_BLOCK_NUM_X * KPS_BLOCK_NUM_Y);
  const int tid = static_cast<int>(KPS_THREAD_ID_Y * KPS_BLOCK_NUM_X + KPS_THREAD_ID_X);
  const int64_t g = static_cast<int64_t>(KPS_BLOCK_ID_X) * threads + tid;
  T reg[NX * NY], res[NX * NY];
  for (int k = 0; k < NX * NY; ++k) reg[k] = in[g * NX * NY + k];
  Reduce<T, NX, NY, Op, details::kGlobalMode>(res, reg, Op(), reduce_last_dim);
  for (int k = 0; k < NX * NY; ++k) out[g * NX * NY + k] = res[k];
}

struct BlockShape {
  int x;
  int y;
};

// Shapes that stress the paths: full warps, rows inside warps (32 % bx == 0), rows
// straddling warps (bx not a divisor of 32), a partial last warp, bx == 1, by == 1, 1024.
const std::vector<BlockShape>& GlobalShapes() {
  static const std::vector<BlockShape> shapes = {
      {32, 1},  {64, 1}, {1024, 1}, {1000, 1}, {1023, 1}, {48, 1},  {33, 1},  {7, 1},   {1, 1},
      {2, 1},   {16, 8}, {4, 256},  {8, 3},    {32, 32},  {64, 16}, {128, 8}, {96, 10}, {100, 3},
      {7, 5},   {3, 10}, {3, 11},   {5, 200},  {33, 31},  {31, 33}, {17, 60}, {40, 25}, {511, 2},
      {65, 15}, {1, 64}, {1, 1024}, {2, 512},  {6, 170},  {257, 3}, {12, 85}};
  return shapes;
}

template <typename T, int NX, int NY, class Op>
void CheckGlobal(BlockShape shape, bool reduce_last_dim) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " NY=" << NY << " block=(" << shape.x << ", " << shape.y
                                    << ") reduce_last_dim=" << reduce_last_dim << " seed=" << seed);
  constexpr int kGrid = 3;
  constexpr int K = NX * NY;
  const int threads = shape.x * shape.y;
  const int64_t total = int64_t{threads} * kGrid;
  const std::vector<T> in = RandomValues<T>(total * K, seed);
  DeviceArray<T> d_in(in), d_out(total * K);
  GlobalReduceKernel<T, NX, NY, Op>
      <<<kGrid, dim3(shape.x, shape.y)>>>(d_in.get(), d_out.get(), reduce_last_dim);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> got = d_out.ToHost();
  // Depth of the combination tree: a segmented warp tree (5), then the chain over the
  // warps a row spans (<= 33), for x; a doubling tree over rows for y.
  const int depth = reduce_last_dim ? 5 + 2 + shape.x / 32 + 1 : CeilLog2(shape.y) + 1;
  for (int b = 0; b < kGrid; ++b) {
    for (int y = 0; y < shape.y; ++y) {
      for (int x = 0; x < shape.x; ++x) {
        const int64_t g = int64_t{b} * threads + y * shape.x + x;
        for (int k = 0; k < K; ++k) {
          std::vector<T> terms;
          if (reduce_last_dim) {
            for (int xx = 0; xx < shape.x; ++xx)
              terms.push_back(in[(int64_t{b} * threads + y * shape.x + xx) * K + k]);
          } else {
            for (int yy = 0; yy < shape.y; ++yy)
              terms.push_back(in[(int64_t{b} * threads + yy * shape.x + x) * K + k]);
          }
          ASSERT_TRUE((MatchesReduction<T, Op>(got[g * K + k], terms, depth)))
              << "block " << b << " thread (" << x << ", " << y << ") value " << k;
        }
      }
    }
  }
}

template <typename T, int NX, int NY, class Op>
void CheckGlobalAllShapes() {
  for (const BlockShape& s : GlobalShapes()) {
    for (bool last_dim : {true, false}) CheckGlobal<T, NX, NY, Op>(s, last_dim);
  }
}

TEST(ReduceGlobalMode, SumFloat) {
  KPS_SKIP_WITHOUT_GPU();
  CheckGlobalAllShapes<float, 1, 1, TestSum<float>>();
  CheckGlobalAllShapes<float, 2, 2, TestSum<float>>();  // 4 back-to-back block reductions
}

TEST(ReduceGlobalMode, SumDouble) {
  KPS_SKIP_WITHOUT_GPU();
  CheckGlobalAllShapes<double, 1, 1, TestSum<double>>();
}

TEST(ReduceGlobalMode, SumIntegersExact) {
  KPS_SKIP_WITHOUT_GPU();
  CheckGlobalAllShapes<int32_t, 2, 1, TestSum<int32_t>>();
  CheckGlobalAllShapes<int64_t, 1, 1, TestSum<int64_t>>();
}

TEST(ReduceGlobalMode, Sum16BitFloats) {
  KPS_SKIP_WITHOUT_GPU();
  CheckGlobalAllShapes<__half, 1, 1, TestSum<__half>>();
  CheckGlobalAllShapes<__nv_bfloat16, 1, 1, TestSum<__nv_bfloat16>>();
}

TEST(ReduceGlobalMode, MaxMinExact) {
  KPS_SKIP_WITHOUT_GPU();
  CheckGlobalAllShapes<float, 1, 1, TestMax<float>>();
  CheckGlobalAllShapes<int32_t, 1, 1, TestMin<int32_t>>();
  CheckGlobalAllShapes<__half, 1, 1, TestMax<__half>>();
  CheckGlobalAllShapes<__nv_bfloat16, 1, 1, TestMin<__nv_bfloat16>>();
  CheckGlobalAllShapes<double, 1, 1, TestMin<double>>();
  CheckGlobalAllShapes<int64_t, 1, 1, TestMax<int64_t>>();
}

TEST(ReduceGlobalMode, NonCommutativeFunctorCombinesInIndexOrder) {
  KPS_SKIP_WITHOUT_GPU();
  CheckGlobalAllShapes<Affine, 1, 1, ComposeAffine>();
  CheckGlobalAllShapes<Affine, 2, 1, ComposeAffine>();
}

// Two launches on the same input give bitwise identical float sums.
TEST(ReduceGlobalMode, Deterministic) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  for (BlockShape s : {BlockShape{1024, 1}, BlockShape{48, 20}, BlockShape{16, 64}}) {
    for (bool last_dim : {true, false}) {
      const int64_t total = int64_t{s.x} * s.y * 4;
      const std::vector<float> in = RandomValues<float>(total, seed);
      DeviceArray<float> d_in(in), a(total), b(total);
      GlobalReduceKernel<float, 1, 1, TestSum<float>><<<4, dim3(s.x, s.y)>>>(d_in.get(), a.get(), last_dim);
      GlobalReduceKernel<float, 1, 1, TestSum<float>><<<4, dim3(s.x, s.y)>>>(d_in.get(), b.get(), last_dim);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> ra = a.ToHost(), rb = b.ToHost();
      ASSERT_EQ(std::memcmp(ra.data(), rb.data(), ra.size() * sizeof(float)), 0);
    }
  }
}

// In place (in == out), then a second reduction with another functor right after it:
// the shared scratch of back-to-back calls must not race.
__global__ void __launch_bounds__(1024)
    InPlaceBackToBackKernel(const int32_t* in, int32_t* sums, int32_t* maxes, bool reduce_last_dim) {
  const int threads = static_cast<int>(KPS_BLOCK_NUM_X * KPS_BLOCK_NUM_Y);
  const int tid = static_cast<int>(KPS_THREAD_ID_Y * KPS_BLOCK_NUM_X + KPS_THREAD_ID_X);
  const int64_t g = static_cast<int64_t>(KPS_BLOCK_ID_X) * threads + tid;
  int32_t v[1] = {in[g]};
  int32_t m[1] = {in[g]};
  Reduce<int32_t, 1, 1, TestSum<int32_t>, details::kGlobalMode>(v, v, TestSum<int32_t>(), reduce_last_dim);
  Reduce<int32_t, 1, 1, TestMax<int32_t>, details::kGlobalMode>(m, m, TestMax<int32_t>(), reduce_last_dim);
  sums[g] = v[0];
  maxes[g] = m[0];
}

TEST(ReduceGlobalMode, InPlaceAndBackToBack) {
  KPS_SKIP_WITHOUT_GPU();
  for (const BlockShape& s : GlobalShapes()) {
    for (bool last_dim : {true, false}) {
      const uint64_t seed = FreshSeed();
      SCOPED_TRACE(::testing::Message() << "block=(" << s.x << ", " << s.y << ") reduce_last_dim=" << last_dim
                                        << " seed=" << seed);
      const int threads = s.x * s.y;
      const std::vector<int32_t> in = RandomValues<int32_t>(int64_t{threads} * 2, seed);
      DeviceArray<int32_t> d_in(in), sums(int64_t{threads} * 2), maxes(int64_t{threads} * 2);
      InPlaceBackToBackKernel<<<2, dim3(s.x, s.y)>>>(d_in.get(), sums.get(), maxes.get(), last_dim);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<int32_t> gs = sums.ToHost(), gm = maxes.ToHost();
      for (int b = 0; b < 2; ++b) {
        for (int y = 0; y < s.y; ++y) {
          for (int x = 0; x < s.x; ++x) {
            int64_t sum = 0;
            int32_t mx = INT32_MIN;
            for (int k = 0; k < (last_dim ? s.x : s.y); ++k) {
              const int32_t v = in[b * threads + (last_dim ? y * s.x + k : k * s.x + x)];
              sum += v;
              mx = std::max(mx, v);
            }
            const int g = b * threads + y * s.x + x;
            ASSERT_EQ(gs[g], sum) << "block " << b << " thread (" << x << ", " << y << ")";
            ASSERT_EQ(gm[g], mx) << "block " << b << " thread (" << x << ", " << y << ")";
          }
        }
      }
    }
  }
}

// ---- details::WarpReduce ----

template <typename T, class Op>
__global__ void __launch_bounds__(1024) WarpReduceKernel(const T* in, T* out) {
  const int threads = static_cast<int>(KPS_BLOCK_NUM_X * KPS_BLOCK_NUM_Y);
  const int tid = static_cast<int>(KPS_THREAD_ID_Y * KPS_BLOCK_NUM_X + KPS_THREAD_ID_X);
  const int64_t g = static_cast<int64_t>(KPS_BLOCK_ID_X) * threads + tid;
  out[g] = details::WarpReduce(in[g], Op());
}

template <typename T, class Op>
void CheckWarpReduce(BlockShape shape) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "block=(" << shape.x << ", " << shape.y << ") seed=" << seed);
  const int threads = shape.x * shape.y;
  ASSERT_EQ(threads % 32, 0);
  const int64_t total = int64_t{threads} * 2;
  const std::vector<T> in = RandomValues<T>(total, seed);
  DeviceArray<T> d_in(in), d_out(total);
  WarpReduceKernel<T, Op><<<2, dim3(shape.x, shape.y)>>>(d_in.get(), d_out.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> got = d_out.ToHost();
  for (int64_t g = 0; g < total; ++g) {
    const int64_t first = g / 32 * 32;  // warps are 32 consecutive linear thread ids
    const std::vector<T> terms(in.begin() + first, in.begin() + first + 32);
    ASSERT_TRUE((MatchesReduction<T, Op>(got[g], terms, 6))) << "thread " << g;
  }
}

TEST(WarpReduce, EveryLaneGetsTheWarpResult) {
  KPS_SKIP_WITHOUT_GPU();
  for (BlockShape s : {BlockShape{32, 1}, BlockShape{256, 1}, BlockShape{1024, 1}, BlockShape{16, 4},
                       BlockShape{8, 12}, BlockShape{96, 3}}) {
    CheckWarpReduce<float, TestSum<float>>(s);
    CheckWarpReduce<int64_t, TestSum<int64_t>>(s);
    CheckWarpReduce<__half, TestMax<__half>>(s);
    CheckWarpReduce<double, TestMin<double>>(s);
    CheckWarpReduce<Affine, ComposeAffine>(s);
  }
}

// ---- ShortRowReduce, RowOfWarpsReduce, FoldRowsIntoRowZero ----
// Their combination order is fixed but not index order (butterflies, strided row folds),
// so the combiners here are commutative: exact integer sums, max and min, float sums
// within the rounding of a tree of the block's depth.

// Thread (x, y) of block b holds in[(b * by + y) * bx + x]; every lane writes its result.
template <typename T, class Op>
__global__ void __launch_bounds__(1024) ShortRowReduceKernel(const T* in, T* out) {
  const int64_t g = (static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  out[g] = ShortRowReduce(in[g], Op());
}

template <typename T, class Op>
void CheckShortRowReduce(BlockShape shape) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "block=(" << shape.x << ", " << shape.y << ") seed=" << seed);
  constexpr int kBlocks = 3;
  const int64_t total = int64_t{kBlocks} * shape.x * shape.y;
  const std::vector<T> in = RandomValues<T>(total, seed);
  DeviceArray<T> d_in(in), d_out(total);
  ShortRowReduceKernel<T, Op><<<kBlocks, dim3(shape.x, shape.y)>>>(d_in.get(), d_out.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> got = d_out.ToHost();
  for (int64_t g = 0; g < total; ++g) {
    const int64_t first = g / shape.x * shape.x;
    const std::vector<T> terms(in.begin() + first, in.begin() + first + shape.x);
    ASSERT_TRUE((MatchesReduction<T, Op>(got[g], terms, 5))) << "thread " << g;
    // Every lane of a row holds the same bits.
    ASSERT_EQ(std::memcmp(&got[g], &got[first], sizeof(T)), 0) << "thread " << g;
  }
}

TEST(ShortRowReduce, EveryLaneGetsItsRowsResult) {
  KPS_SKIP_WITHOUT_GPU();
  // Rows of 1 to 32 lanes (the powers of two), blocks of one warp to 1024 threads.
  for (BlockShape s : {BlockShape{1, 32}, BlockShape{2, 16}, BlockShape{4, 64}, BlockShape{8, 32},
                       BlockShape{16, 2}, BlockShape{16, 64}, BlockShape{32, 1}, BlockShape{32, 32}}) {
    CheckShortRowReduce<float, TestSum<float>>(s);
    CheckShortRowReduce<int64_t, TestSum<int64_t>>(s);
    CheckShortRowReduce<__half, TestMax<__half>>(s);
    CheckShortRowReduce<double, TestMin<double>>(s);
  }
}

// RowOfWarpsReduce twice (the second on the first's results plus one), with the barrier
// its contract asks for in between: out[2 * row] and out[2 * row + 1].
template <typename T, class Op>
__global__ void __launch_bounds__(1024) RowOfWarpsReduceKernel(const T* in, T* out) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const T v = RowOfWarpsReduce(in[row * blockDim.x + threadIdx.x], Op());
  if (threadIdx.x == 0) out[2 * row] = v;
  __syncthreads();
  const T w = RowOfWarpsReduce(in[row * blockDim.x + (blockDim.x - 1 - threadIdx.x)], Op());
  if (threadIdx.x == 0) out[2 * row + 1] = w;
}

template <typename T, class Op>
void CheckRowOfWarpsReduce(BlockShape shape) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "block=(" << shape.x << ", " << shape.y << ") seed=" << seed);
  constexpr int kBlocks = 3;
  const int64_t rows = int64_t{kBlocks} * shape.y;
  const std::vector<T> in = RandomValues<T>(rows * shape.x, seed);
  DeviceArray<T> d_in(in), d_out(2 * rows);
  RowOfWarpsReduceKernel<T, Op><<<kBlocks, dim3(shape.x, shape.y)>>>(d_in.get(), d_out.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> got = d_out.ToHost();
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<T> terms(in.begin() + r * shape.x, in.begin() + (r + 1) * shape.x);
    // Depth: 5 shuffle steps, then up to 31 warps folded one after another.
    const int depth = 5 + shape.x / 32;
    ASSERT_TRUE((MatchesReduction<T, Op>(got[2 * r], terms, depth))) << "row " << r;
    ASSERT_TRUE((MatchesReduction<T, Op>(got[2 * r + 1], terms, depth))) << "row " << r << ", second call";
  }
}

TEST(RowOfWarpsReduce, TheFirstLaneGetsItsRowsResult) {
  KPS_SKIP_WITHOUT_GPU();
  for (BlockShape s : {BlockShape{32, 1}, BlockShape{32, 16}, BlockShape{64, 8}, BlockShape{96, 3},
                       BlockShape{128, 4}, BlockShape{512, 1}, BlockShape{512, 2}, BlockShape{1024, 1}}) {
    CheckRowOfWarpsReduce<float, TestSum<float>>(s);
    CheckRowOfWarpsReduce<int64_t, TestSum<int64_t>>(s);
    CheckRowOfWarpsReduce<__nv_bfloat16, TestMax<__nv_bfloat16>>(s);
    CheckRowOfWarpsReduce<double, TestMin<double>>(s);
  }
}

// Thread (x, y) of block b holds kVec values in[((b * by + y) * bx + x) * kVec + j]; row 0
// writes its column results to out[(b * bx + x) * kVec + j].
template <typename T, int kVec, class Op>
__global__ void __launch_bounds__(1024) FoldRowsKernel(const T* in, T* out) {
  extern __shared__ unsigned char fold_smem[];
  T* states = reinterpret_cast<T*>(fold_smem);
  const int64_t t = (static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  T part[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) part[j] = in[t * kVec + j];
  FoldRowsIntoRowZero(part, Op(), states);
  if (threadIdx.y == 0) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) out[(static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec + j] = part[j];
  }
}

template <typename T, int kVec, class Op>
void CheckFoldRows(BlockShape shape) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "block=(" << shape.x << ", " << shape.y << ") kVec=" << kVec
                                    << " seed=" << seed);
  constexpr int kBlocks = 2;
  const int bx = shape.x, by = shape.y;
  const std::vector<T> in = RandomValues<T>(int64_t{kBlocks} * by * bx * kVec, seed);
  DeviceArray<T> d_in(in), d_out(int64_t{kBlocks} * bx * kVec);
  const size_t smem = sizeof(T) * bx * by * kVec;
  FoldRowsKernel<T, kVec, Op><<<kBlocks, dim3(bx, by), smem>>>(d_in.get(), d_out.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<T> got = d_out.ToHost();
  for (int b = 0; b < kBlocks; ++b) {
    for (int x = 0; x < bx; ++x) {
      for (int j = 0; j < kVec; ++j) {
        std::vector<T> terms;
        for (int y = 0; y < by; ++y) terms.push_back(in[((int64_t{b} * by + y) * bx + x) * kVec + j]);
        ASSERT_TRUE((MatchesReduction<T, Op>(got[(int64_t{b} * bx + x) * kVec + j], terms, by / 8 + 8)))
            << "block " << b << " column " << x << " value " << j;
      }
    }
  }
}

TEST(FoldRowsIntoRowZero, RowZeroGetsEachColumnsResult) {
  KPS_SKIP_WITHOUT_GPU();
  // 1 to 64 rows: one step (<= 8 rows), two steps (9 and more), rows not a multiple of 8.
  for (BlockShape s : {BlockShape{32, 1}, BlockShape{1, 7}, BlockShape{8, 8}, BlockShape{32, 9},
                       BlockShape{16, 31}, BlockShape{32, 8}, BlockShape{16, 64}, BlockShape{3, 17}}) {
    CheckFoldRows<float, 4, TestSum<float>>(s);
    CheckFoldRows<float, 1, TestSum<float>>(s);
    CheckFoldRows<int64_t, 2, TestSum<int64_t>>(s);
    CheckFoldRows<__half, 8, TestMax<__half>>(s);
    CheckFoldRows<double, 1, TestMin<double>>(s);
  }
}

}  // namespace
}  // namespace kps
