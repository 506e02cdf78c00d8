// nonzero and masked_select on every device: every dtype, shapes of rank 0 to 4 and 8
// with size-0 dims, lengths across the CUDA kernels' edges (the 4096-position tile, the
// count kernel's 16 KiB blocks: 16384 bools, 8192 halves) and their multiples, primes,
// densities 0, ~1%, ~50% and ~100%, unaligned data pointers (contiguous views at an odd
// offset, which the CUDA count kernel loads element by element), strided and broadcast
// inputs, NaN and -0.0 (NaN is non-zero, -0.0 is zero), against a host reference that
// tests values (as doubles), not bits. Fresh allocations are poisoned (0xFF) so that an
// output element the kernel skips fails; each case's seed is in its trace. The CUDA
// instances skip without a GPU (or fail with KPS_REQUIRE_GPU=1).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/allocator.h"
#include "registry/call.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

using ::kps::testing::kAllDataTypes;

// Random values of which about `zero_share` are zero (+0.0 or -0.0 for floats), with
// NaN and inf sprinkled in for floats; the rest are random non-zero integers or
// fractions.
Tensor Sparse(const Shape& shape, DataType dt, uint64_t seed, double zero_share) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<int> v(1, 100);
  Tensor t = *Tensor::Empty(shape, dt, DeviceType::kCpu);
  VisitDataType(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < shape.numel(); ++i) {
      double x = (u(gen) < 0.5 ? -1 : 1) * v(gen);
      if (dt == DataType::kBool || dt == DataType::kUInt8) x = std::abs(x);
      if (IsFloatingPoint(dt)) {
        x /= 8;
        const double r = u(gen);
        if (r < 0.02) x = std::nan("");
        if (r > 0.98) x = INFINITY;
      }
      if (u(gen) < zero_share) x = IsFloatingPoint(dt) && u(gen) < 0.5 ? -0.0 : 0.0;
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        p[i] = static_cast<T>(static_cast<float>(x));
      } else {
        p[i] = static_cast<T>(x);
      }
    }
  });
  return t;
}

// The row-major positions of the non-zero elements of a host tensor, by its doubles.
std::vector<int64_t> RefKept(const Tensor& t) {
  const std::vector<double> v = ToDoubles(t);
  std::vector<int64_t> kept;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i]) || v[i] != 0) kept.push_back(static_cast<int64_t>(i));
  }
  return kept;
}

void CheckNonzero(const Tensor& x) {
  SCOPED_TRACE(::testing::Message() << "nonzero " << DataTypeName(x.dtype()) << " " << DeviceTypeName(x.device())
                                    << " " << x.shape().ToString());
  auto out = Call("nonzero").Input("x", x).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor host_x = *x.To(DeviceType::kCpu);  // contiguous
  const std::vector<int64_t> kept = RefKept(host_x);
  const int rank = x.rank();
  ASSERT_EQ(out->dtype(), DataType::kInt64);
  ASSERT_EQ(out->shape(), (Shape{static_cast<int64_t>(kept.size()), rank}));
  const std::vector<int64_t> got = *out->ToVector<int64_t>();
  for (size_t r = 0; r < kept.size(); ++r) {
    int64_t e = kept[r];
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t want = e % x.shape()[d];
      e /= x.shape()[d];
      if (got[r * rank + d] != want) {
        FAIL() << "row " << r << " dim " << d << ": " << got[r * rank + d] << ", want " << want;
      }
    }
  }
}

void CheckMaskedSelect(const Tensor& x, const Tensor& mask) {
  SCOPED_TRACE(::testing::Message() << "masked_select " << DataTypeName(x.dtype()) << " "
                                    << DeviceTypeName(x.device()) << " x=" << x.shape().ToString()
                                    << " mask=" << mask.shape().ToString());
  auto out = Call("masked_select").Input("x", x).Input("mask", mask).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  // Reference: walk the broadcast shape with both operands' host copies.
  const Tensor hx = *x.To(DeviceType::kCpu), hm = *mask.To(DeviceType::kCpu);
  const int rank = std::max(hx.rank(), hm.rank());
  std::vector<int64_t> shape(rank);
  for (int d = 0; d < rank; ++d) {
    const int dx = d - (rank - hx.rank()), dm = d - (rank - hm.rank());
    const int64_t sx = dx >= 0 ? hx.shape()[dx] : 1, sm = dm >= 0 ? hm.shape()[dm] : 1;
    shape[d] = sx == 1 ? sm : sx;
  }
  const std::vector<double> xv = ToDoubles(hx), mv = ToDoubles(hm);
  std::vector<double> want;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e, ix = 0, im = 0, stride_x = 1, stride_m = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = rest % shape[d];
      rest /= shape[d];
      const int dx = d - (rank - hx.rank()), dm = d - (rank - hm.rank());
      if (dx >= 0) {
        if (hx.shape()[dx] != 1) ix += c * stride_x;
        stride_x *= hx.shape()[dx];
      }
      if (dm >= 0) {
        if (hm.shape()[dm] != 1) im += c * stride_m;
        stride_m *= hm.shape()[dm];
      }
    }
    if (mv[im] != 0) want.push_back(xv[ix]);
  }
  ASSERT_EQ(out->dtype(), x.dtype());
  ASSERT_EQ(out->shape(), (Shape{static_cast<int64_t>(want.size())}));
  const std::vector<double> got = ToDoubles(*out);
  for (size_t r = 0; r < want.size(); ++r) {
    const bool same = (std::isnan(got[r]) && std::isnan(want[r])) ||
                      (got[r] == want[r] && std::signbit(got[r]) == std::signbit(want[r]));
    if (!same) FAIL() << "element " << r << ": " << got[r] << ", want " << want[r];
  }
}

// The per-device tests, with allocation poisoning on for their duration.
class CompactionOnDevice : public testing::PerDeviceTest {
 protected:
  void SetUp() override {
    testing::PerDeviceTest::SetUp();
    SetAllocationPoisoning(true);
  }
  void TearDown() override { SetAllocationPoisoning(false); }
};

// One dtype per predicate (and value) width and kind: 1, 2, 4 and 8 bytes, integer and float.
constexpr DataType kWidthTypes[] = {DataType::kBool,  DataType::kInt8,    DataType::kFloat16, DataType::kBFloat16,
                                    DataType::kInt32, DataType::kFloat32, DataType::kInt64,   DataType::kFloat64};

// Shares of zeros: densities 0, ~1%, ~50%, ~100% of kept elements.
constexpr double kZeroShares[] = {1.0, 0.99, 0.5, 0.0};

// Lengths around the CUDA kernels' edges: the 4096-position tile (one below, at, above,
// multiples), the count kernel's 16 KiB block span (16384 1-byte, 8192 2-byte elements),
// warp edges and primes.
constexpr int64_t kEdgeLengths[] = {0,     1,     2,     31,    33,    4095,  4096,  4097,  8191,
                                    8192,  8193,  12287, 12289, 16383, 16384, 16385, 32768, 49157,
                                    65537, 100003};

TEST_P(CompactionOnDevice, NonzeroEveryDtypeAndShape) {
  const std::vector<Shape> shapes = {Shape{},        Shape{1},    Shape{0},       Shape{7},
                                     Shape{4095},    Shape{4096}, Shape{4097},    Shape{3, 0, 2},
                                     Shape{13, 331}, Shape{2, 3, 5, 7}, Shape{100003}};
  for (DataType dt : kAllDataTypes) {
    for (const Shape& shape : shapes) {
      for (double zeros : {0.5, 0.0, 1.0, 0.999}) {
        const uint64_t seed = FreshSeed();
        SCOPED_TRACE(::testing::Message() << "seed " << seed << ", zero share " << zeros);
        CheckNonzero(*Sparse(shape, dt, seed, zeros).To(GetParam()));
      }
    }
  }
}

TEST_P(CompactionOnDevice, NonzeroTileEdgesAndDensities) {
  for (DataType dt : kWidthTypes) {
    for (int64_t n : kEdgeLengths) {
      for (double zeros : kZeroShares) {
        const uint64_t seed = FreshSeed();
        SCOPED_TRACE(::testing::Message() << "seed " << seed << ", zero share " << zeros);
        CheckNonzero(*Sparse(Shape{n}, dt, seed, zeros).To(GetParam()));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Ranks 1 to 4 and 8 (the CUDA limit): rows of coordinates unravelled across tiles, dims
// of 1, inner dims that are not tile multiples.
TEST_P(CompactionOnDevice, NonzeroRanks) {
  const std::vector<Shape> shapes = {
      Shape{4097},          Shape{2, 4099},       Shape{64, 64},           Shape{65, 63},
      Shape{3, 4096},       Shape{1, 9001},       Shape{7, 11, 13},        Shape{2, 3, 683},
      Shape{33, 1, 257},    Shape{4, 5, 6, 7},    Shape{2, 16, 16, 17},    Shape{1, 1, 1, 1, 1, 1, 1, 1},
      Shape{3, 1, 2, 1, 5, 1, 7, 11},             Shape{2, 3, 2, 3, 2, 3, 2, 17}};
  for (DataType dt : {DataType::kBool, DataType::kFloat16, DataType::kInt32, DataType::kFloat64}) {
    for (const Shape& shape : shapes) {
      for (double zeros : kZeroShares) {
        const uint64_t seed = FreshSeed();
        SCOPED_TRACE(::testing::Message() << "seed " << seed << ", zero share " << zeros);
        CheckNonzero(*Sparse(shape, dt, seed, zeros).To(GetParam()));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Contiguous views that start `offset` elements into their buffer: the data pointer is
// not 16-byte aligned (8-byte types at odd offsets, the rest at any offset here).
TEST_P(CompactionOnDevice, UnalignedPointers) {
  for (DataType dt : kWidthTypes) {
    for (int64_t n : {int64_t{4096}, int64_t{16385}, int64_t{3 * 16384 + 7}}) {
      for (int64_t offset : {1, 3}) {
        for (double zeros : {0.5, 0.0}) {
          const uint64_t seed = FreshSeed();
          SCOPED_TRACE(::testing::Message() << "seed " << seed << ", zero share " << zeros << ", offset " << offset);
          const Tensor x = *Sparse(Shape{n + offset}, dt, seed, zeros).To(GetParam());
          CheckNonzero(*x.Slice(0, offset, n + offset));
          const Tensor m = *Sparse(Shape{n + 5}, DataType::kBool, seed + 1, zeros).To(GetParam());
          CheckMaskedSelect(*x.Slice(0, offset, n + offset), *m.Slice(0, 5, n + 5));
          // A 2-D view: rows 1.. of 33 columns (an offset of 33 elements).
          const int64_t rows = n / 33 + 1;
          const Tensor y = *Sparse(Shape{rows + 1, 33}, dt, seed + 2, zeros).To(GetParam());
          CheckNonzero(*y.Slice(0, 1, rows + 1));
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_P(CompactionOnDevice, MaskedSelectEveryDtypeAndBroadcast) {
  struct Case {
    Shape x, mask;
  };
  const std::vector<Case> cases = {{Shape{}, Shape{}},           {Shape{0}, Shape{0}},
                                   {Shape{4097}, Shape{4097}},   {Shape{5, 9000}, Shape{5, 9000}},
                                   {Shape{6, 70}, Shape{70}},    {Shape{6, 1}, Shape{6, 70}},
                                   {Shape{3, 1, 5}, Shape{4, 1}}, {Shape{2, 3}, Shape{}},
                                   {Shape{100003}, Shape{100003}}};
  for (DataType dt : kAllDataTypes) {
    for (const Case& c : cases) {
      for (double zeros : {0.5, 0.0, 0.97}) {
        const uint64_t seed = FreshSeed();
        SCOPED_TRACE(::testing::Message() << "seed " << seed << ", zero share " << zeros);
        const Tensor x = *Sparse(c.x, dt, seed, 0.1).To(GetParam());
        const Tensor mask = *Sparse(c.mask, DataType::kBool, seed + 1, zeros).To(GetParam());
        CheckMaskedSelect(x, mask);
      }
    }
  }
}

// The values move as bits: one dtype per value width (1, 2, 4, 8 bytes).
TEST_P(CompactionOnDevice, MaskedSelectTileEdgesAndDensities) {
  for (DataType dt : {DataType::kInt8, DataType::kBFloat16, DataType::kInt32, DataType::kFloat64}) {
    for (int64_t n : kEdgeLengths) {
      for (double zeros : kZeroShares) {
        const uint64_t seed = FreshSeed();
        SCOPED_TRACE(::testing::Message() << "seed " << seed << ", zero share " << zeros);
        const Tensor x = *Sparse(Shape{n}, dt, seed, 0.1).To(GetParam());
        const Tensor mask = *Sparse(Shape{n}, DataType::kBool, seed + 1, zeros).To(GetParam());
        CheckMaskedSelect(x, mask);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(CompactionOnDevice, StridedInputs) {
  const DeviceType dev = GetParam();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const Tensor x = *Sparse(Shape{300, 41}, DataType::kFloat32, seed, 0.5).To(dev);
  const Tensor xt = *x.Transpose(0, 1);
  CheckNonzero(xt);
  CheckNonzero(*x.Slice(1, 3, 40));
  const Tensor m = *Sparse(Shape{41, 300}, DataType::kBool, seed + 1, 0.5).To(dev);
  CheckMaskedSelect(xt, m);
  CheckMaskedSelect(*x.Slice(0, 1, 299), *(*m.Transpose(0, 1)).Slice(0, 2, 300));
}

KPS_INSTANTIATE_ON_DEVICES(CompactionOnDevice);

TEST(CompactionTest, BadArguments) {
  const Tensor x = Sparse(Shape{4, 5}, DataType::kFloat32, 1, 0.5);
  auto a = Call("masked_select").Input("x", x).Input("mask", x).Run();
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(testing::Contains(std::string(a.status().message()), "op 'masked_select'"));
  EXPECT_TRUE(testing::Contains(std::string(a.status().message()), "'mask' must be bool"));
  const Tensor m = Sparse(Shape{3}, DataType::kBool, 1, 0.5);
  auto b = Call("masked_select").Input("x", x).Input("mask", m).Run();
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(testing::Contains(std::string(b.status().message()), "broadcast"));
  // A dynamic output cannot be given.
  const Tensor given = *Tensor::Empty(Shape{2, 2}, DataType::kInt64, DeviceType::kCpu);
  auto c = Call("nonzero").Input("x", x).Output("indices", given).Run();
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(testing::Contains(std::string(c.status().message()), "depends on the input values"));
}

}  // namespace
}  // namespace kps
