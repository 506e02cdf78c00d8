// Device tests of Cumsum: inclusive and exclusive block scans, NX items per thread in the
// blocked arrangement, block sizes 1..1024, the block aggregate, padded partial tiles, a
// non-commutative functor (index order), type-widening scans. Every element of every tile
// is checked against a host scan.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
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

using ::kps::testing::Affine;
using ::kps::testing::ComposeAffine;
using ::kps::testing::DeviceArray;
using ::kps::testing::Epsilon;
using ::kps::testing::FreshSeed;
using ::kps::testing::TestSum;
using ::kps::testing::ToDouble;
using ::kps::testing::Widen;

// Running maximum (cummax); initial() is the lowest value of the test inputs' range.
template <typename T>
struct TestMax {
  __host__ __device__ T initial() const { return static_cast<T>(-100000.0f); }
  __host__ __device__ T operator()(T a, T b) const { return Widen(b) > Widen(a) ? b : a; }
};

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

// Each block scans one tile of BlockSize * NX items; the last tile is padded with the
// identity. Three scans back to back: exclusive (into other registers), inclusive (in
// place when the types allow), inclusive without an aggregate pointer. Every thread
// stores the aggregates it received.
template <typename InT, typename OutT, int NX, int BlockSize, class Op>
__global__ void __launch_bounds__(BlockSize)
    CumsumKernel(const InT* in, OutT* inclusive, OutT* exclusive, OutT* plain, OutT* aggregates, int64_t n) {
  constexpr int kTile = BlockSize * NX;
  const int64_t base = static_cast<int64_t>(KPS_BLOCK_ID_X) * kTile;
  const int valid = static_cast<int>(n - base < kTile ? n - base : kTile);
  const Op op{};
  InT x[NX];
  Init<InT, NX>(x, static_cast<InT>(op.initial()));
  ReadData<InT, NX, 1, true>(x, in + base, valid);

  OutT ex[NX], ex_total;
  Cumsum<InT, OutT, NX, BlockSize>(ex, x, op, /*exclusive=*/true, &ex_total);
  WriteData<OutT, NX, 1, true>(exclusive + base, ex, valid);

  OutT in_total;
  if constexpr (std::is_same_v<InT, OutT>) {
    InT copy[NX];
    for (int i = 0; i < NX; ++i) copy[i] = x[i];
    Cumsum<InT, OutT, NX, BlockSize>(copy, copy, op, false, &in_total);  // out aliases in
    WriteData<OutT, NX, 1, true>(inclusive + base, copy, valid);
  } else {
    OutT inc[NX];
    Cumsum<InT, OutT, NX, BlockSize>(inc, x, op, false, &in_total);
    WriteData<OutT, NX, 1, true>(inclusive + base, inc, valid);
  }

  OutT again[NX];
  Cumsum<InT, OutT, NX, BlockSize>(again, x, op);
  WriteData<OutT, NX, 1, true>(plain + base, again, valid);

  const int64_t t = static_cast<int64_t>(KPS_BLOCK_ID_X) * BlockSize + KPS_THREAD_ID_X;
  aggregates[2 * t] = ex_total;
  aggregates[2 * t + 1] = in_total;
}

// got == the host's running combination of x[0..count) under Op in OutT. Sums of floating
// types allow the rounding of the scan's combination tree: an item goes through at most
// NX (thread) + 5 (warp) + 5 (warp totals) + 2 (prefixes) roundings, each at most eps *
// (sum of |items| under it).
template <typename InT, typename OutT, class Op>
class ScanReference {
 public:
  explicit ScanReference(int nx) : nx_(nx) {}
  void Reset() {
    acc_ = Op().initial();
    sum_ = 0.0;
    abs_sum_ = 0.0;
  }
  void Add(InT v) {
    acc_ = Op()(acc_, static_cast<OutT>(v));
    if constexpr (!std::is_same_v<OutT, Affine>) {
      sum_ += ToDouble(static_cast<OutT>(v));
      abs_sum_ += std::fabs(ToDouble(static_cast<OutT>(v)));
    }
  }
  ::testing::AssertionResult Matches(const OutT& got) const {
    if constexpr (std::is_same_v<OutT, Affine>) {
      if (got.m == acc_.m && got.c == acc_.c) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure()
             << "got {" << got.m << ", " << got.c << "}, want {" << acc_.m << ", " << acc_.c << "}";
    } else if constexpr (std::is_same_v<Op, TestSum<OutT>> && !std::is_integral_v<OutT>) {
      const double tol = Epsilon<OutT>() * (nx_ + 13) * abs_sum_ + 1e-300;
      if (std::fabs(ToDouble(got) - sum_) <= tol) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "got " << ToDouble(got) << ", want " << sum_ << " +- " << tol;
    } else {
      if (ToDouble(got) == ToDouble(acc_)) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "got " << ToDouble(got) << ", want " << ToDouble(acc_);
    }
  }

 private:
  int nx_;
  OutT acc_ = Op().initial();
  double sum_ = 0.0;
  double abs_sum_ = 0.0;
};

template <typename InT, typename OutT, int NX, int BlockSize, class Op>
void CheckCumsum(int64_t n) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " BlockSize=" << BlockSize << " n=" << n
                                    << " seed=" << seed);
  constexpr int64_t kTile = int64_t{BlockSize} * NX;
  const int64_t tiles = (n + kTile - 1) / kTile;
  const std::vector<InT> in = RandomValues<InT>(n, seed);
  DeviceArray<InT> d_in(in);
  DeviceArray<OutT> inc(n), exc(n), plain(n), agg(tiles * BlockSize * 2);
  CumsumKernel<InT, OutT, NX, BlockSize, Op>
      <<<tiles, BlockSize>>>(d_in.get(), inc.get(), exc.get(), plain.get(), agg.get(), n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<OutT> gi = inc.ToHost(), ge = exc.ToHost(), gp = plain.ToHost(), ga = agg.ToHost();
  ScanReference<InT, OutT, Op> ref(NX);
  for (int64_t t = 0; t < tiles; ++t) {
    ref.Reset();
    const int64_t end = std::min(n, (t + 1) * kTile);
    for (int64_t p = t * kTile; p < end; ++p) {
      ASSERT_TRUE(ref.Matches(ge[p])) << "exclusive, element " << p << " (tile " << t << ")";
      ref.Add(in[p]);
      ASSERT_TRUE(ref.Matches(gi[p])) << "inclusive, element " << p << " (tile " << t << ")";
      ASSERT_TRUE(ref.Matches(gp[p]))
          << "inclusive without aggregate, element " << p << " (tile " << t << ")";
    }
    // Identity padding leaves the total unchanged: every thread got the tile's total.
    for (int64_t th = 0; th < BlockSize; ++th) {
      ASSERT_TRUE(ref.Matches(ga[2 * (t * BlockSize + th)]))
          << "exclusive aggregate, tile " << t << " thread " << th;
      ASSERT_TRUE(ref.Matches(ga[2 * (t * BlockSize + th) + 1]))
          << "inclusive aggregate, tile " << t << " thread " << th;
    }
  }
}

// Sizes: one item, a partial single tile, exact tiles, one over, an odd count of tiles.
template <typename InT, typename OutT, int NX, int BlockSize, class Op>
void CheckCumsumSizes() {
  constexpr int64_t kTile = int64_t{BlockSize} * NX;
  for (int64_t n :
       {int64_t{1}, int64_t{7}, kTile / 2 + 3, kTile - 1, kTile, kTile + 1, 3 * kTile, 5 * kTile + 13}) {
    if (n > 0) CheckCumsum<InT, OutT, NX, BlockSize, Op>(n);
  }
}

template <typename InT, typename OutT, int NX, class Op>
void CheckCumsumAllBlockSizes() {
  CheckCumsumSizes<InT, OutT, NX, 32, Op>();
  CheckCumsumSizes<InT, OutT, NX, 64, Op>();
  CheckCumsumSizes<InT, OutT, NX, 128, Op>();
  CheckCumsumSizes<InT, OutT, NX, 256, Op>();
  CheckCumsumSizes<InT, OutT, NX, 512, Op>();
  CheckCumsumSizes<InT, OutT, NX, 1024, Op>();
}

TEST(Cumsum, FloatSumEveryNXAndBlockSize) {
  KPS_SKIP_WITHOUT_GPU();
  CheckCumsumAllBlockSizes<float, float, 1, TestSum<float>>();
  CheckCumsumAllBlockSizes<float, float, 2, TestSum<float>>();
  CheckCumsumAllBlockSizes<float, float, 4, TestSum<float>>();
  CheckCumsumAllBlockSizes<float, float, 8, TestSum<float>>();
}

TEST(Cumsum, NonCommutativeFunctorKeepsItemOrder) {
  KPS_SKIP_WITHOUT_GPU();
  CheckCumsumAllBlockSizes<Affine, Affine, 1, ComposeAffine>();
  CheckCumsumAllBlockSizes<Affine, Affine, 8, ComposeAffine>();
  CheckCumsumSizes<Affine, Affine, 2, 128, ComposeAffine>();
  CheckCumsumSizes<Affine, Affine, 4, 512, ComposeAffine>();
}

TEST(Cumsum, SubWarpBlocks) {
  KPS_SKIP_WITHOUT_GPU();
  CheckCumsumSizes<float, float, 4, 1, TestSum<float>>();
  CheckCumsumSizes<int32_t, int32_t, 2, 8, TestSum<int32_t>>();
  CheckCumsumSizes<Affine, Affine, 2, 16, ComposeAffine>();
}

TEST(Cumsum, DoubleAndIntegers) {
  KPS_SKIP_WITHOUT_GPU();
  CheckCumsumSizes<double, double, 1, 32, TestSum<double>>();
  CheckCumsumSizes<double, double, 8, 1024, TestSum<double>>();
  CheckCumsumSizes<int32_t, int32_t, 2, 64, TestSum<int32_t>>();
  CheckCumsumSizes<int32_t, int32_t, 4, 1024, TestSum<int32_t>>();
  CheckCumsumSizes<int64_t, int64_t, 1, 128, TestSum<int64_t>>();
  CheckCumsumSizes<int64_t, int64_t, 8, 1024, TestSum<int64_t>>();
  CheckCumsumSizes<int32_t, int64_t, 4, 256, TestSum<int64_t>>();  // widening
}

TEST(Cumsum, SixteenBitFloats) {
  KPS_SKIP_WITHOUT_GPU();
  CheckCumsumSizes<__half, float, 2, 256, TestSum<float>>();  // accumulate in float
  CheckCumsumSizes<__half, float, 8, 1024, TestSum<float>>();
  CheckCumsumSizes<__nv_bfloat16, float, 4, 512, TestSum<float>>();
  CheckCumsumSizes<__half, __half, 4, 128, TestSum<__half>>();  // rounds to half per step
  CheckCumsumSizes<__nv_bfloat16, __nv_bfloat16, 1, 64, TestSum<__nv_bfloat16>>();
}

TEST(Cumsum, RunningMaximumExact) {
  KPS_SKIP_WITHOUT_GPU();
  CheckCumsumSizes<int32_t, int32_t, 4, 128, TestMax<int32_t>>();
  CheckCumsumSizes<float, float, 2, 1024, TestMax<float>>();
  CheckCumsumSizes<__half, __half, 8, 256, TestMax<__half>>();
}

}  // namespace
}  // namespace kps
