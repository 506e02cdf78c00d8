// nonzero and masked_select on every device: every dtype, shapes of rank 0 to 4 with
// size-0 dims, lengths across the CUDA tile (4096) and its edges, strided and broadcast
// inputs, NaN and -0.0 (NaN is non-zero, -0.0 is zero), dense and sparse predicates,
// against a host reference; bad arguments name the op and the argument.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
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

TEST(CompactionTest, NonzeroEveryDtypeAndShape) {
  const std::vector<Shape> shapes = {Shape{},        Shape{1},    Shape{0},       Shape{7},
                                     Shape{4095},    Shape{4096}, Shape{4097},    Shape{3, 0, 2},
                                     Shape{13, 331}, Shape{2, 3, 5, 7}, Shape{100003}};
  for (DeviceType dev : testing::TestDevices()) {
    for (DataType dt : kAllDataTypes) {
      for (const Shape& shape : shapes) {
        for (double zeros : {0.5, 0.0, 1.0, 0.999}) {
          CheckNonzero(*Sparse(shape, dt, FreshSeed(), zeros).To(dev));
        }
      }
    }
  }
}

TEST(CompactionTest, MaskedSelectEveryDtypeAndBroadcast) {
  struct Case {
    Shape x, mask;
  };
  const std::vector<Case> cases = {{Shape{}, Shape{}},           {Shape{0}, Shape{0}},
                                   {Shape{4097}, Shape{4097}},   {Shape{5, 9000}, Shape{5, 9000}},
                                   {Shape{6, 70}, Shape{70}},    {Shape{6, 1}, Shape{6, 70}},
                                   {Shape{3, 1, 5}, Shape{4, 1}}, {Shape{2, 3}, Shape{}},
                                   {Shape{100003}, Shape{100003}}};
  for (DeviceType dev : testing::TestDevices()) {
    for (DataType dt : kAllDataTypes) {
      for (const Case& c : cases) {
        for (double zeros : {0.5, 0.0, 0.97}) {
          const Tensor x = *Sparse(c.x, dt, FreshSeed(), 0.1).To(dev);
          const Tensor mask = *Sparse(c.mask, DataType::kBool, FreshSeed(), zeros).To(dev);
          CheckMaskedSelect(x, mask);
        }
      }
    }
  }
}

TEST(CompactionTest, StridedInputs) {
  for (DeviceType dev : testing::TestDevices()) {
    const Tensor x = *Sparse(Shape{300, 41}, DataType::kFloat32, FreshSeed(), 0.5).To(dev);
    const Tensor xt = *x.Transpose(0, 1);
    CheckNonzero(xt);
    CheckNonzero(*x.Slice(1, 3, 40));
    const Tensor m = *Sparse(Shape{41, 300}, DataType::kBool, FreshSeed(), 0.5).To(dev);
    CheckMaskedSelect(xt, m);
    CheckMaskedSelect(*x.Slice(0, 1, 299), *(*m.Transpose(0, 1)).Slice(0, 2, 300));
  }
}

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
