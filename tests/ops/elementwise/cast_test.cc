// cast between every pair of the ten dtypes on every device: random values plus the
// edge values of each source type (NaN, +-inf, -0, out-of-range, wrapping integers),
// contiguous, unaligned and transposed sources, against a reference written from the
// documented rules (functors/cast.h), computed in double and int64.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/reference/elementwise.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

class CastTest : public ::kps::testing::PerDeviceTest {};

// The integer range of `dt` as doubles: [lo, hi].
void IntRange(DataType dt, double* lo, double* hi) {
  const int bits = 8 * static_cast<int>(DataTypeSize(dt));
  if (dt == DataType::kUInt8) {
    *lo = 0;
    *hi = 255;
  } else {
    *lo = -std::ldexp(1.0, bits - 1);
    *hi = std::ldexp(1.0, bits - 1) - 1;  // int64: 2^63 - 1 is not a double; saturation compares >= 2^63
  }
}

// v rounded to a 16-bit float once, from its exact value. Rounding through float first
// (testing::RoundTo) can round twice: a double just past a float16 midpoint may land
// on it as a float. Round-to-odd into float keeps the sticky bit (float has more than
// two bits beyond float16's and bfloat16's precision), so the second rounding is exact.
double RoundOnceTo16(DataType to, double v) {
  if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max()) return testing::RoundTo(to, v);
  float f = static_cast<float>(v);
  if (static_cast<double>(f) != v) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);  // truncate
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits |= 1u;  // odd: inexact
    std::memcpy(&f, &bits, sizeof bits);
  }
  return testing::RoundTo(to, f);
}

// v (a value of `from`, exact in double except int64 beyond 2^53) converted to `to`.
double CastRef(DataType from, DataType to, double v, int64_t exact_int) {
  if (to == DataType::kBool) return v != 0 || std::isnan(v) ? 1.0 : 0.0;
  if (from == DataType::kBool) return v;
  if (IsFloatingPoint(to)) {
    if (from == DataType::kInt64) v = static_cast<double>(exact_int);
    if (to == DataType::kFloat16 || to == DataType::kBFloat16) return RoundOnceTo16(to, v);
    return testing::RoundTo(to, v);
  }
  // To an integer type.
  if (IsIntegral(from)) return reference::WrapTo(to, exact_int);
  if (std::isnan(v)) return 0;
  double lo, hi;
  IntRange(to, &lo, &hi);
  const double t = std::trunc(v);
  if (to == DataType::kInt64) {
    if (t >= std::ldexp(1.0, 63)) return static_cast<double>(std::numeric_limits<int64_t>::max());
    if (t <= lo) return lo;
    return t;
  }
  return t < lo ? lo : (t > hi ? hi : t);
}

// Edge values of `from`, as a CPU tensor.
Tensor EdgeValues(DataType from) {
  std::vector<double> v;
  if (IsFloatingPoint(from)) {
    const double inf = std::numeric_limits<double>::infinity();
    v = {std::nan(""), inf, -inf, -0.0, 0.0, 0.5, -0.5, 1.5, -1.5, 127.9, 128.0, -128.5, 255.5, 256.0,
         -129.0, 32767.5, 32768.0, -32769.0, 65504.0, 1e10, -1e10, 3e38, -3e38, 2147483647.0, -2147483649.0,
         9.3e18, -9.3e18, 1e-40, 3.0e-8};
  } else if (from == DataType::kBool) {
    v = {0, 1, 1, 0};
  } else {
    v = {0, 0, 0, -1, 1, 127, 128, -129, 255, 256, 32767, 32768, 65535, 65536, 16777217};
  }
  Tensor t = *Tensor::Empty(Shape{static_cast<int64_t>(v.size())}, from, DeviceType::kCpu);
  VisitDataType(from, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < v.size(); ++i) {
      double x = v[i];
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        // Wrap the literal into the type, as a C++20 conversion would; the type's
        // limits come first.
        t.data<T>()[i] = i == 0 ? std::numeric_limits<T>::lowest()
                         : i == 1 ? std::numeric_limits<T>::max()
                                  : static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(x)));
      } else if constexpr (std::is_same_v<T, bool>) {
        t.data<T>()[i] = x != 0;
      } else if constexpr (sizeof(T) == 8) {
        t.data<T>()[i] = static_cast<T>(x);
      } else {
        t.data<T>()[i] = static_cast<T>(static_cast<float>(x));
      }
    }
  });
  return t;
}

// int64 values of an int64 tensor, exact (ToDoubles rounds beyond 2^53).
std::vector<int64_t> ExactInts(const Tensor& t) {
  std::vector<int64_t> r(static_cast<size_t>(t.numel()));
  Tensor c = *Call("copy").Input("x", t).RunOne()->To(DeviceType::kCpu);
  VisitDataType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      for (int64_t i = 0; i < t.numel(); ++i) r[i] = static_cast<int64_t>(c.data<T>()[i]);
    }
  });
  return r;
}

void CheckCast(const Tensor& x, DataType to) {
  auto out = Call("cast").Input("x", x).Attr("dtype", to).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->dtype(), to);
  ASSERT_EQ(out->shape(), x.shape());
  const std::vector<double> xv = ToDoubles(x), got = ToDoubles(*out);
  const std::vector<int64_t> xi = ExactInts(x);
  if (to == DataType::kInt64) {
    const std::vector<int64_t> gi = ExactInts(*out);
    for (size_t i = 0; i < got.size(); ++i) {
      if (IsIntegral(x.dtype())) {
        ASSERT_EQ(gi[i], xi[i]) << i;
      } else {
        ASSERT_EQ(static_cast<double>(gi[i]), CastRef(x.dtype(), to, xv[i], 0)) << i << ": " << xv[i];
      }
    }
    return;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = CastRef(x.dtype(), to, xv[i], xi[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got[i])) << i << ": " << xv[i];
    } else {
      ASSERT_EQ(got[i], want) << i << ": " << xv[i] << " (" << DataTypeName(x.dtype()) << " -> "
                              << DataTypeName(to) << ")";
    }
  }
}

TEST_P(CastTest, EveryPairRandomAndEdgeValues) {
  for (int f = 0; f < kNumDataTypes; ++f) {
    const DataType from = static_cast<DataType>(f);
    const uint64_t seed = FreshSeed();
    Tensor random = *testing::RandomTensor(Shape{1031}, from, seed).To(GetParam());
    Tensor edges = *EdgeValues(from).To(GetParam());
    for (int t = 0; t < kNumDataTypes; ++t) {
      const DataType to = static_cast<DataType>(t);
      SCOPED_TRACE(::testing::Message() << DataTypeName(from) << " -> " << DataTypeName(to) << " seed=" << seed);
      CheckCast(random, to);
      CheckCast(edges, to);
    }
  }
}

TEST_P(CastTest, StridedAndUnalignedSources) {
  for (DataType from : {DataType::kFloat32, DataType::kInt8, DataType::kFloat16, DataType::kFloat64}) {
    for (DataType to : {DataType::kFloat16, DataType::kInt32, DataType::kBool, DataType::kFloat64}) {
      const uint64_t seed = FreshSeed();
      SCOPED_TRACE(::testing::Message() << DataTypeName(from) << " -> " << DataTypeName(to) << " seed=" << seed);
      CheckCast(*testing::RandomTensorAtOffset(Shape{1029}, from, seed, 1).To(GetParam()), to);
      CheckCast(*testing::RandomTensor(Shape{37, 29}, from, seed).To(GetParam())->Transpose(0, 1), to);
    }
  }
}

TEST_P(CastTest, EmptyAndScalarShapes) {
  for (const Shape& s : {Shape{0}, Shape{}, Shape{3, 0, 2}}) {
    Tensor x = *testing::RandomTensor(s, DataType::kFloat32, 3).To(GetParam());
    auto out = Call("cast").Input("x", x).Attr("dtype", DataType::kInt16).RunOne();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->shape(), s);
  }
  auto missing = Call("cast").Input("x", *testing::RandomTensor(Shape{2}, DataType::kFloat32, 3).To(GetParam())).RunOne();
  EXPECT_TRUE(testing::Contains(std::string(missing.status().message()), "dtype"));
}

KPS_INSTANTIATE_ON_DEVICES(CastTest);

}  // namespace
}  // namespace kps
