// The generator ops (fill, arange, uniform, normal) on every device and dtype: values
// against double references over the edge sizes (outputs are poisoned, so an element a
// kernel skips fails), the random stream's contract (functors/random.h) element by
// element, statistics with bounds from the standard error, CPU against CUDA, and the
// errors a caller can make.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "functors/random.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "registry/call.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::Contains;
using ::kps::testing::EdgeSizes;
using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

using ::kps::testing::kAllDataTypes;
const DataType kFloats[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};

absl::StatusOr<Tensor> RunFill(DeviceType device, const std::vector<int64_t>& shape, double value, DataType dtype) {
  return Call("fill").Attr("shape", shape).Attr("value", value).Attr("dtype", dtype).OnDevice(device).RunOne();
}
absl::StatusOr<Tensor> RunArange(DeviceType device, double start, double end, double step, DataType dtype) {
  return Call("arange")
      .Attr("start", start)
      .Attr("end", end)
      .Attr("step", step)
      .Attr("dtype", dtype)
      .OnDevice(device)
      .RunOne();
}
absl::StatusOr<Tensor> RunUniform(DeviceType device, const std::vector<int64_t>& shape, DataType dtype, double low,
                                  double high, uint64_t seed, uint64_t offset = 0) {
  return Call("uniform")
      .Attr("shape", shape)
      .Attr("dtype", dtype)
      .Attr("low", low)
      .Attr("high", high)
      .Attr("seed", seed)
      .Attr("offset", offset)
      .OnDevice(device)
      .RunOne();
}
absl::StatusOr<Tensor> RunNormal(DeviceType device, const std::vector<int64_t>& shape, DataType dtype, double mean,
                                 double stddev, uint64_t seed, uint64_t offset = 0) {
  return Call("normal")
      .Attr("shape", shape)
      .Attr("dtype", dtype)
      .Attr("mean", mean)
      .Attr("std", stddev)
      .Attr("seed", seed)
      .Attr("offset", offset)
      .OnDevice(device)
      .RunOne();
}

// The tensor's bytes, on the host: for bitwise comparisons.
std::vector<uint8_t> Bytes(const Tensor& t) {
  auto host = t.To(DeviceType::kCpu);
  EXPECT_TRUE(host.ok()) << host.status();
  const uint8_t* p = static_cast<const uint8_t*>(host->raw_data());
  return std::vector<uint8_t>(p, p + host->nbytes());
}

// The error's message, or a note that the call succeeded.
std::string ErrorOf(const absl::StatusOr<Tensor>& r) {
  if (r.ok()) return "(the call succeeded)";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  return std::string(r.status().message());
}

// Spacing of dtype's values just below 1 (what a value rounding to 1 steps down by).
double StepBelowOne(DataType dt) {
  switch (dt) {
    case DataType::kFloat16: return 0x1p-11;
    case DataType::kBFloat16: return 0x1p-8;
    case DataType::kFloat32: return 0x1p-24;
    default: return 0x1p-53;
  }
}

// Element i of uniform(low 0, high 1) in dt, from the contract in functors/random.h
// written out independently: lane i % 4 of group i / 4 (float64: words 2 (i % 2),
// 2 (i % 2) + 1 of group i / 2), the word's top 24 (53) bits over 2^24 (2^53), rounded
// to dt, and a value that rounds to 1 replaced by the largest value below 1.
double UnitUniformReference(DataType dt, uint64_t seed, uint64_t offset, int64_t i) {
  const uint2 key = PhiloxKey(seed);
  if (dt == DataType::kFloat64) {
    const uint4 w = Philox4x32_10(PhiloxCounter(static_cast<uint64_t>(i / 2), offset), key);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    const int k = 2 * static_cast<int>(i % 2);
    const uint64_t bits = ((static_cast<uint64_t>(words[k]) << 32) | words[k + 1]) >> 11;
    return std::ldexp(static_cast<double>(bits), -53);
  }
  const uint4 w = Philox4x32_10(PhiloxCounter(static_cast<uint64_t>(i / 4), offset), key);
  const uint32_t words[4] = {w.x, w.y, w.z, w.w};
  const double r = testing::RoundTo(dt, std::ldexp(static_cast<double>(words[i % 4] >> 8), -24));
  return r >= 1.0 ? 1.0 - StepBelowOne(dt) : r;
}

// Element i of normal(0, 1) in dt before its final rounding, from the contract, in long
// double: Box-Muller on words (2p, 2p + 1) with p = (i % 4) / 2 of group i / 4, cosine
// for even i and sine for odd i (float64: one pair per group of two elements, 53-bit
// uniforms). The angle is rounded as the kernel computes it (2 pi u2 in float, or in
// double for float64), whose rounding would otherwise dominate near 2 pi.
double StandardNormalReference(DataType dt, uint64_t seed, uint64_t offset, int64_t i) {
  const uint2 key = PhiloxKey(seed);
  const long double two_pi = 6.283185307179586476925286766559L;
  long double u1, theta;
  if (dt == DataType::kFloat64) {
    const uint4 w = Philox4x32_10(PhiloxCounter(static_cast<uint64_t>(i / 2), offset), key);
    u1 = 1.0L - std::ldexp(static_cast<long double>((((static_cast<uint64_t>(w.x) << 32) | w.y) >> 11)), -53);
    const double u2 = std::ldexp(static_cast<double>((((static_cast<uint64_t>(w.z) << 32) | w.w) >> 11)), -53);
    theta = static_cast<double>(two_pi) * u2;
  } else {
    const uint4 w = Philox4x32_10(PhiloxCounter(static_cast<uint64_t>(i / 4), offset), key);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    const int p = static_cast<int>(i % 4) / 2;
    u1 = 1.0L - std::ldexp(static_cast<long double>(words[2 * p] >> 8), -24);
    const float u2 = std::ldexp(static_cast<float>(words[2 * p + 1] >> 8), -24);
    theta = static_cast<float>(static_cast<float>(two_pi) * u2);
  }
  const long double r = std::sqrt(-2.0L * std::log(u1));
  return static_cast<double>(i % 2 == 0 ? r * std::cos(theta) : r * std::sin(theta));
}

// |got - want| allowed for normal values of dt near z (in units of std): the kernels'
// log / sin / cos against long double. float32: 2^-20 * max(1, |z|) (8 ulps at 1; the
// device's sinf / cosf are within 2 ulps, logf 1); float64: 2^-48 * max(1, |z|); 16-bit
// types: one rounding of the type on top (the float value may sit at a rounding tie).
double NormalTolerance(DataType dt, double z) {
  const double mag = std::max(1.0, std::fabs(z));
  switch (dt) {
    case DataType::kFloat32: return 0x1p-20 * mag;
    case DataType::kFloat64: return 0x1p-48 * mag;
    default: return testing::Tolerance(dt, z) + 0x1p-20 * mag;
  }
}

class GeneratorTest : public ::kps::testing::PerDeviceTest {};

// ---- fill ----------------------------------------------------------------------------

// A value of dt that is not zero, different each run: in range and integral for
// integer dtypes, 1 for bool (poison is 0xFF: nonzero, so also check 0 elsewhere).
double FillValueFor(DataType dt, std::mt19937_64& rng) {
  switch (dt) {
    case DataType::kBool: return 1;
    case DataType::kUInt8: return static_cast<double>(1 + rng() % 254);
    case DataType::kInt8: return -static_cast<double>(1 + rng() % 127);
    case DataType::kInt16: return -static_cast<double>(1 + rng() % 32000);
    case DataType::kInt32: return -static_cast<double>(1 + rng() % 2000000000);
    case DataType::kInt64: return -static_cast<double>(1 + rng() % (uint64_t{1} << 52));
    // A float: the 16-bit types then round it the same way from double or from float.
    default: return static_cast<float>(std::uniform_real_distribution<double>(-100.0, 100.0)(rng));
  }
}

TEST_P(GeneratorTest, FillEveryDtypeAndEdgeSize) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  std::mt19937_64 rng(seed);
  for (DataType dt : kAllDataTypes) {
    const double value = FillValueFor(dt, rng);
    const double want = testing::RoundTo(dt, value);
    for (int64_t n : EdgeSizes()) {
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " n=" << n << " value=" << value);
      auto out = RunFill(GetParam(), {n}, value, dt);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->dtype(), dt);
      ASSERT_EQ(out->device(), GetParam());
      ASSERT_EQ(out->shape(), Shape{n});
      const std::vector<double> got = ToDoubles(*out);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want) << "element " << i;
    }
  }
}

TEST_P(GeneratorTest, FillShapesZeroAndLimits) {
  struct Case {
    std::vector<int64_t> shape;
    DataType dtype;
    double value;
  } cases[] = {
      {{2, 3, 4}, DataType::kFloat32, 1.5},
      {{}, DataType::kFloat64, -2.25},  // a scalar: one element
      {{0, 5}, DataType::kInt32, 7},
      {{3, 0}, DataType::kFloat16, 7},
      {{1000}, DataType::kBool, 0},  // false over 0xFF poison
      {{1000}, DataType::kInt8, -128},
      {{1000}, DataType::kInt8, 127},
      {{1000}, DataType::kUInt8, 255},
      {{1000}, DataType::kUInt8, 0},
      {{1000}, DataType::kInt16, -32768},
      {{1000}, DataType::kInt32, -2147483648.0},
      {{1000}, DataType::kInt32, 2147483647.0},
      {{1000}, DataType::kInt64, -0x1p63},
      {{1000}, DataType::kInt64, 0x1p62},
      {{1000}, DataType::kFloat16, 65504},
      {{1000}, DataType::kBFloat16, 0.1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << DataTypeName(c.dtype) << " " << DimsToString(c.shape) << " value=" << c.value);
    auto out = RunFill(GetParam(), c.shape, c.value, c.dtype);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->shape(), Shape(c.shape));
    const std::vector<double> got = ToDoubles(*out);
    ASSERT_EQ(static_cast<int64_t>(got.size()), Shape(c.shape).numel());
    for (double g : got) ASSERT_EQ(g, testing::RoundTo(c.dtype, c.value));
  }
  // int64 exactly, beyond double's integers' spacing of 1 (2^62 is exact in double).
  auto big = RunFill(GetParam(), {5}, 0x1p62, DataType::kInt64);
  ASSERT_TRUE(big.ok()) << big.status();
  const std::vector<int64_t> values = *big->ToVector<int64_t>();
  ASSERT_EQ(values.size(), 5u);
  for (int64_t v : values) EXPECT_EQ(v, int64_t{1} << 62);
}

TEST_P(GeneratorTest, FillSpecialFloatValues) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DataType dt : kFloats) {
    SCOPED_TRACE(DataTypeName(dt));
    for (double v : {inf, -inf}) {
      auto out = RunFill(GetParam(), {33}, v, dt);
      ASSERT_TRUE(out.ok()) << out.status();
      for (double g : ToDoubles(*out)) EXPECT_EQ(g, v);
    }
    auto nan = RunFill(GetParam(), {33}, std::nan(""), dt);
    ASSERT_TRUE(nan.ok()) << nan.status();
    for (double g : ToDoubles(*nan)) EXPECT_TRUE(std::isnan(g));
    auto neg_zero = RunFill(GetParam(), {33}, -0.0, dt);
    ASSERT_TRUE(neg_zero.ok()) << neg_zero.status();
    for (double g : ToDoubles(*neg_zero)) EXPECT_TRUE(g == 0 && std::signbit(g));
  }
  // Floating dtypes just convert: too large for float16 is inf.
  auto big = RunFill(GetParam(), {3}, 1e6, DataType::kFloat16);
  ASSERT_TRUE(big.ok()) << big.status();
  for (double g : ToDoubles(*big)) EXPECT_EQ(g, inf);
}

// A given output that starts one element into its storage: the CUDA kernels take their
// unaligned (scalar) paths. The element before it must stay untouched.
TEST_P(GeneratorTest, GivenMisalignedOutputs) {
  for (DataType dt : {DataType::kUInt8, DataType::kInt16, DataType::kFloat32, DataType::kFloat64}) {
    for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{1025}, int64_t{65537}}) {
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " n=" << n);
      auto storage = Tensor::Empty(Shape{n + 1}, dt, GetParam());
      ASSERT_TRUE(storage.ok()) << storage.status();
      Tensor out = *storage->AsStrided(Shape{n}, {1}, 1);
      const double before = ToDoubles(*storage)[0];  // the poison
      ASSERT_TRUE(Call("fill").Attr("shape", std::vector<int64_t>{n}).Attr("value", 3).Attr("dtype", dt)
                      .Output("out", out).OnDevice(GetParam()).Run().ok());
      std::vector<double> got = ToDoubles(*storage);
      EXPECT_TRUE(got[0] == before || (std::isnan(got[0]) && std::isnan(before)));
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i + 1], 3) << "fill element " << i;

      ASSERT_TRUE(Call("arange").Attr("end", static_cast<double>(std::min<int64_t>(n, 100))).Attr("dtype", dt)
                      .Output("out", *storage->AsStrided(Shape{std::min<int64_t>(n, 100)}, {1}, 1))
                      .OnDevice(GetParam()).Run().ok());
      got = ToDoubles(*storage);
      for (int64_t i = 0; i < std::min<int64_t>(n, 100); ++i) ASSERT_EQ(got[i + 1], i) << "arange element " << i;

      if (dt == DataType::kFloat32 || dt == DataType::kFloat64) {
        const uint64_t seed = FreshSeed();
        SCOPED_TRACE(::testing::Message() << "seed=" << seed);
        ASSERT_TRUE(Call("uniform").Attr("shape", std::vector<int64_t>{n}).Attr("dtype", dt).Attr("seed", seed)
                        .Output("out", out).OnDevice(GetParam()).Run().ok());
        got = ToDoubles(*storage);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i + 1], UnitUniformReference(dt, seed, 0, i)) << i;
      }
    }
  }
}

TEST_P(GeneratorTest, FillErrors) {
  const DeviceType d = GetParam();
  std::string e = ErrorOf(RunFill(d, {4}, 2.5, DataType::kInt32));
  EXPECT_TRUE(Contains(e, "op 'fill': attribute 'value' 2.5 is not an integer, so int32 cannot represent it exactly"));
  e = ErrorOf(RunFill(d, {4}, 300, DataType::kInt8));
  EXPECT_TRUE(Contains(e, "op 'fill': attribute 'value' 300 is out of the range of int8 [-128, 127]"));
  e = ErrorOf(RunFill(d, {4}, -1, DataType::kUInt8));
  EXPECT_TRUE(Contains(e, "'value' -1 is out of the range of uint8 [0, 255]"));
  e = ErrorOf(RunFill(d, {4}, 0x1p63, DataType::kInt64));
  EXPECT_TRUE(Contains(e, "is out of the range of int64"));
  e = ErrorOf(RunFill(d, {4}, 2, DataType::kBool));
  EXPECT_TRUE(Contains(e, "op 'fill': attribute 'value' 2 cannot be represented as bool (only 0 and 1 can)"));
  e = ErrorOf(RunFill(d, {4}, std::nan(""), DataType::kInt16));
  EXPECT_TRUE(Contains(e, "is not an integer, so int16 cannot represent it exactly"));
  e = ErrorOf(RunFill(d, {2, -3}, 1, DataType::kFloat32));
  EXPECT_TRUE(Contains(e, "op 'fill': attribute 'shape': shape [2, -3] has a negative dimension (-3 at index 1)"));
  e = ErrorOf(RunFill(d, {int64_t{1} << 40, int64_t{1} << 40}, 1, DataType::kFloat32));
  EXPECT_TRUE(Contains(e, "op 'fill': attribute 'shape': shape [1099511627776, 1099511627776] is too large"));
  // A zero dim does not excuse the others (the one shape rule): refused in any order.
  e = ErrorOf(RunFill(d, {0, int64_t{1} << 62, int64_t{1} << 62}, 1, DataType::kFloat32));
  EXPECT_TRUE(Contains(e, "op 'fill': attribute 'shape': shape [0, 4611686018427387904, 4611686018427387904] is too large"));
  e = ErrorOf(RunFill(d, {int64_t{1} << 62, int64_t{1} << 62, 0}, 1, DataType::kFloat32));
  EXPECT_TRUE(Contains(e, "is too large"));
  e = ErrorOf(Call("fill").Attr("shape", std::vector<int64_t>{2}).OnDevice(d).RunOne());
  EXPECT_TRUE(Contains(e, "op 'fill': missing required attribute 'value'"));
}

// ---- arange --------------------------------------------------------------------------

struct ArangeCase {
  double start, end, step;
  int64_t length;
};

TEST_P(GeneratorTest, ArangeFloatsAgainstDoubleReference) {
  const ArangeCase cases[] = {
      {0, 10, 1, 10},        {0, 1, 0.1, 10},        {0, 10, 0.1, 100},  // NumPy's lengths
      {-3.5, 7.25, 0.75, 15}, {10, -10, -0.3, 67},    {1, 1, 1, 0},
      {5, 0, -1, 5},          {0, 1000003, 1, 1000003}, {0.5, 1e4, 3.3, 3031},
      {-1e-3, 1e-3, 1e-5, 200}, {0, 1, 0.3, 4},        {0, -1, -0.3, 4},
  };
  for (DataType dt : kFloats) {
    for (const ArangeCase& c : cases) {
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " arange(" << c.start << ", " << c.end << ", "
                                        << c.step << ")");
      auto out = RunArange(GetParam(), c.start, c.end, c.step, dt);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->shape(), Shape{c.length});
      ASSERT_EQ(c.length, static_cast<int64_t>(std::ceil((c.end - c.start) / c.step)));
      const std::vector<double> got = ToDoubles(*out);
      for (int64_t i = 0; i < c.length; ++i) {
        // The kernels round start + i * step once (fma) where this rounds twice: one
        // rounding of dt apart at most.
        const double want = testing::RoundTo(dt, c.start + static_cast<double>(i) * c.step);
        ASSERT_TRUE(got[i] == want || std::fabs(got[i] - want) <= testing::Tolerance(dt, want))
            << "element " << i << ": got " << got[i] << ", want " << want;  // equal: +-inf past float16's range
      }
    }
  }
}

TEST_P(GeneratorTest, ArangeIntegersExactly) {
  const struct {
    DataType dtype;
    ArangeCase c;
  } cases[] = {
      {DataType::kInt32, {0, 100, 7, 15}},         {DataType::kInt32, {-50, 50, 3, 34}},
      {DataType::kInt16, {100, -100, -9, 23}},     {DataType::kInt8, {-128, 128, 1, 256}},
      {DataType::kUInt8, {0, 256, 1, 256}},        {DataType::kUInt8, {255, -1, -1, 256}},
      {DataType::kInt64, {0, 1000003, 1, 1000003}}, {DataType::kInt32, {7, 7, -2, 0}},
      {DataType::kInt64, {-5, 6, 5, 3}},
  };
  for (const auto& [dt, c] : cases) {
    SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " arange(" << c.start << ", " << c.end << ", " << c.step
                                      << ")");
    auto out = RunArange(GetParam(), c.start, c.end, c.step, dt);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->shape(), Shape{c.length});
    const std::vector<double> got = ToDoubles(*out);
    for (int64_t i = 0; i < c.length; ++i) ASSERT_EQ(got[i], c.start + static_cast<double>(i) * c.step) << i;
  }
  // int64 beyond 2^53, exactly: 2^60 + i * 2^40 + ... and the whole int64 range in 4 steps.
  auto big = RunArange(GetParam(), 0x1p60, 0x1p60 + 10 * 0x1p40, 0x1p40, DataType::kInt64);
  ASSERT_TRUE(big.ok()) << big.status();
  std::vector<int64_t> v = *big->ToVector<int64_t>();
  ASSERT_EQ(v.size(), 10u);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(v[i], (int64_t{1} << 60) + i * (int64_t{1} << 40));
  auto whole = RunArange(GetParam(), -0x1p63, 0x1p63 - 1024, 0x1p62, DataType::kInt64);
  ASSERT_TRUE(whole.ok()) << whole.status();
  v = *whole->ToVector<int64_t>();
  const std::vector<int64_t> want = {std::numeric_limits<int64_t>::lowest(), -(int64_t{1} << 62), 0,
                                     int64_t{1} << 62};
  EXPECT_EQ(v, want);
  // Odd integer steps near the top of int64 (wrapping intermediate products stay exact).
  auto top = RunArange(GetParam(), 0x1p62, -0x1p62, -0x1p61 - 0x1p40, DataType::kInt64);
  ASSERT_TRUE(top.ok()) << top.status();
  v = *top->ToVector<int64_t>();
  ASSERT_EQ(v.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(v[i], (int64_t{1} << 62) - i * ((int64_t{1} << 61) + (int64_t{1} << 40)));
}

TEST_P(GeneratorTest, ArangeEdgeLengths) {
  for (int64_t n : EdgeSizes()) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    auto f = RunArange(GetParam(), 0, static_cast<double>(n), 1, DataType::kFloat32);
    ASSERT_TRUE(f.ok()) << f.status();
    const std::vector<double> got = ToDoubles(*f);
    ASSERT_EQ(static_cast<int64_t>(got.size()), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<double>(i));
    auto h = RunArange(GetParam(), 0, static_cast<double>(n), 1, DataType::kFloat16);
    ASSERT_TRUE(h.ok()) << h.status();
    const std::vector<double> half = ToDoubles(*h);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(half[i], testing::RoundTo(DataType::kFloat16, static_cast<double>(i)));
  }
}

TEST_P(GeneratorTest, ArangeErrors) {
  const DeviceType d = GetParam();
  std::string e = ErrorOf(RunArange(d, 0, 10, 0, DataType::kFloat32));
  EXPECT_TRUE(Contains(e, "op 'arange': attribute 'step' must not be 0"));
  e = ErrorOf(RunArange(d, 0, 10, -1, DataType::kFloat32));
  EXPECT_TRUE(Contains(e, "op 'arange': attributes 'start' (0), 'end' (10) and 'step' (-1) give a negative length"));
  EXPECT_TRUE(Contains(e, "step must have the sign of end - start"));
  e = ErrorOf(RunArange(d, 5, 0, 1, DataType::kInt32));
  EXPECT_TRUE(Contains(e, "attributes 'start' (5), 'end' (0) and 'step' (1) give a negative length"));
  e = ErrorOf(RunArange(d, 0, 10, 0.5, DataType::kInt32));
  EXPECT_TRUE(Contains(e, "op 'arange': attribute 'step' (0.5) must be an integer (within int64) for dtype int32"));
  e = ErrorOf(RunArange(d, 0.5, 10, 1, DataType::kInt64));
  EXPECT_TRUE(Contains(e, "attribute 'start' (0.5) must be an integer"));
  e = ErrorOf(RunArange(d, 0, 300, 1, DataType::kInt8));
  EXPECT_TRUE(Contains(e, "op 'arange': the values from 0 to 299 do not fit in int8 [-128, 127]"));
  e = ErrorOf(RunArange(d, 0, 10, 1, DataType::kBool));
  EXPECT_TRUE(Contains(e, "op 'arange': attribute 'dtype' is bool; arange makes every dtype but bool"));
  e = ErrorOf(RunArange(d, 0, std::numeric_limits<double>::infinity(), 1, DataType::kFloat32));
  EXPECT_TRUE(Contains(e, "attribute 'end' is inf; start, end and step must be finite"));
  e = ErrorOf(RunArange(d, 0, 1e300, 1e-300, DataType::kFloat32));
  EXPECT_TRUE(Contains(e, "is too large"));
  e = ErrorOf(Call("arange").OnDevice(d).RunOne());
  EXPECT_TRUE(Contains(e, "op 'arange': missing required attribute 'end'"));
}

// ---- uniform -------------------------------------------------------------------------

// Element by element against the contract, over the edge sizes (poisoned outputs).
TEST_P(GeneratorTest, UniformFollowsTheStreamContract) {
  for (DataType dt : kFloats) {
    for (int64_t n : EdgeSizes()) {
      const uint64_t seed = FreshSeed(), offset = FreshSeed() % 3 == 0 ? 0 : FreshSeed();
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " n=" << n << " seed=" << seed << " offset=" << offset);
      auto out = RunUniform(GetParam(), {n}, dt, 0, 1, seed, offset);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->dtype(), dt);
      ASSERT_EQ(out->shape(), Shape{n});
      const std::vector<double> got = ToDoubles(*out);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], UnitUniformReference(dt, seed, offset, i)) << "element " << i;
    }
  }
}

// Mean and variance within 6 standard errors (a false failure about once in 10^9 runs),
// every value in [low, high), and 16 equal bins within 6 binomial standard deviations.
TEST_P(GeneratorTest, UniformRangeAndStatistics) {
  const int64_t n = int64_t{1} << 20;
  for (DataType dt : kFloats) {
    for (const auto& [low, high] : {std::pair<double, double>{-2, 3}, {0.1, 0.7}}) {
      const uint64_t seed = FreshSeed();
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " [" << low << ", " << high << ") seed=" << seed);
      auto out = RunUniform(GetParam(), {n}, dt, low, high, seed);
      ASSERT_TRUE(out.ok()) << out.status();
      const std::vector<double> x = ToDoubles(*out);
      const double lo = testing::RoundTo(dt, low), hi = testing::RoundTo(dt, high), width = hi - lo;
      double sum = 0;
      for (double v : x) {
        ASSERT_GE(v, lo);
        ASSERT_LT(v, hi);
        sum += v;
      }
      const double mean = sum / n;
      double m2 = 0;
      for (double v : x) m2 += (v - mean) * (v - mean);
      const double var = m2 / (n - 1);
      // Uniform: variance w^2 / 12, fourth central moment w^4 / 80; the variance estimate's
      // standard error is sqrt((mu4 - sigma^4) / n). Rounding to the dtype is unbiased but
      // at the two ends (a few ulps^2 / w: below 1e-4 here).
      const double se_mean = width / std::sqrt(12.0 * n);
      const double sigma2 = width * width / 12, mu4 = std::pow(width, 4) / 80;
      const double se_var = std::sqrt((mu4 - sigma2 * sigma2) / n);
      EXPECT_NEAR(mean, (lo + hi) / 2, 6 * se_mean + 1e-4 * width);
      EXPECT_NEAR(var, sigma2, 6 * se_var + 1e-4 * width * width);
      // bfloat16's rounding moves whole ulps (up to 1/32 of the width here) across bin
      // edges, so its bins are not equal: skip them.
      if (dt == DataType::kBFloat16) continue;
      constexpr int kBins = 16;
      std::vector<int64_t> bins(kBins, 0);
      for (double v : x) ++bins[std::min(kBins - 1, static_cast<int>((v - lo) / width * kBins))];
      const double expect = static_cast<double>(n) / kBins, sd = std::sqrt(n * (1.0 / kBins) * (1 - 1.0 / kBins));
      // float16's rounding shifts at most half an ulp (2^-11 of 4 at most) across each edge.
      const double shift = dt == DataType::kFloat16 ? n * 0x1p-10 / width : 0;
      for (int b = 0; b < kBins; ++b) EXPECT_NEAR(bins[b], expect, 6 * sd + shift) << "bin " << b;
    }
  }
}

TEST_P(GeneratorTest, UniformIsReproducibleAndPrefixStable) {
  for (DataType dt : kFloats) {
    const uint64_t seed = FreshSeed(), offset = FreshSeed();
    SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " seed=" << seed << " offset=" << offset);
    auto a = RunUniform(GetParam(), {4099}, dt, -1, 1, seed, offset);
    auto b = RunUniform(GetParam(), {4099}, dt, -1, 1, seed, offset);
    ASSERT_TRUE(a.ok() && b.ok());
    const std::vector<uint8_t> full = Bytes(*a);
    EXPECT_EQ(full, Bytes(*b));
    const size_t esize = DataTypeSize(dt);
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{7}, int64_t{1025}}) {
      auto prefix = RunUniform(GetParam(), {n}, dt, -1, 1, seed, offset);
      ASSERT_TRUE(prefix.ok()) << prefix.status();
      EXPECT_EQ(Bytes(*prefix), std::vector<uint8_t>(full.begin(), full.begin() + n * esize)) << "n=" << n;
    }
    // The shape does not matter, only the row-major index: [3, 5, 7] is the first 105.
    auto shaped = RunUniform(GetParam(), {3, 5, 7}, dt, -1, 1, seed, offset);
    ASSERT_TRUE(shaped.ok()) << shaped.status();
    EXPECT_EQ(Bytes(*shaped), std::vector<uint8_t>(full.begin(), full.begin() + 105 * esize));
  }
}

// Another seed, or another offset, gives another stream: about as many equal elements as
// two independent streams have (2^-24 per float32 pair), not all of them.
TEST_P(GeneratorTest, UniformSeedAndOffsetSelectTheStream) {
  const uint64_t seed = FreshSeed(), offset = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed << " offset=" << offset);
  const int64_t n = 100000;
  auto count_equal = [&](const absl::StatusOr<Tensor>& a, const absl::StatusOr<Tensor>& b) {
    EXPECT_TRUE(a.ok() && b.ok());
    const std::vector<double> x = ToDoubles(*a), y = ToDoubles(*b);
    int64_t same = 0;
    for (int64_t i = 0; i < n; ++i) same += x[i] == y[i];
    return same;
  };
  const auto base = RunUniform(GetParam(), {n}, DataType::kFloat32, 0, 1, seed, offset);
  EXPECT_LE(count_equal(base, RunUniform(GetParam(), {n}, DataType::kFloat32, 0, 1, seed + 1, offset)), 5);
  EXPECT_LE(count_equal(base, RunUniform(GetParam(), {n}, DataType::kFloat32, 0, 1, seed, offset + 1)), 5);
  EXPECT_LE(count_equal(base, RunUniform(GetParam(), {n}, DataType::kFloat32, 0, 1, seed ^ (uint64_t{1} << 63),
                                         offset)), 5);
  EXPECT_LE(count_equal(base, RunUniform(GetParam(), {n}, DataType::kFloat32, 0, 1, seed,
                                         offset ^ (uint64_t{1} << 63))), 5);
  // The default seed and offset (0, 0) work and are a stream of their own.
  auto defaults = Call("uniform").Attr("shape", std::vector<int64_t>{n}).OnDevice(GetParam()).RunOne();
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  const std::vector<double> d = ToDoubles(*defaults);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(d[i], UnitUniformReference(DataType::kFloat32, 0, 0, i));
}

TEST_P(GeneratorTest, UniformErrors) {
  const DeviceType d = GetParam();
  std::string e = ErrorOf(RunUniform(d, {4}, DataType::kFloat32, 1, 1, 0));
  EXPECT_TRUE(Contains(e, "op 'uniform': attribute 'low' (1) must be less than 'high' (1)"));
  e = ErrorOf(RunUniform(d, {4}, DataType::kFloat32, 2, -1, 0));
  EXPECT_TRUE(Contains(e, "op 'uniform': attribute 'low' (2) must be less than 'high' (-1)"));
  e = ErrorOf(RunUniform(d, {4}, DataType::kFloat16, 1, 1.0001, 0));
  EXPECT_TRUE(Contains(e, "round to the same float16 value (1); uniform needs low < high in the output dtype"));
  e = ErrorOf(RunUniform(d, {4}, DataType::kFloat32, -std::numeric_limits<double>::infinity(), 0, 0));
  EXPECT_TRUE(Contains(e, "must be finite"));
  e = ErrorOf(RunUniform(d, {4}, DataType::kFloat16, 0, 1e5, 0));
  EXPECT_TRUE(Contains(e, "must be finite in float16"));
  e = ErrorOf(RunUniform(d, {4}, DataType::kFloat32, -3e38, 3e38, 0));
  EXPECT_TRUE(Contains(e, "high - low overflows float"));
  e = ErrorOf(RunUniform(d, {4}, DataType::kInt32, 0, 1, 0));
  EXPECT_TRUE(
      Contains(e, "op 'uniform': attribute 'dtype' is int32; uniform makes float16, bfloat16, float32 or float64"));
  e = ErrorOf(RunUniform(d, {-1}, DataType::kFloat32, 0, 1, 0));
  EXPECT_TRUE(Contains(e, "op 'uniform': attribute 'shape': shape [-1] has a negative dimension"));
  e = ErrorOf(Call("uniform").OnDevice(d).RunOne());
  EXPECT_TRUE(Contains(e, "op 'uniform': missing required attribute 'shape'"));
}

// ---- normal --------------------------------------------------------------------------

TEST_P(GeneratorTest, NormalFollowsTheStreamContract) {
  for (DataType dt : kFloats) {
    for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{7}, int64_t{257}, int64_t{65537}}) {
      const uint64_t seed = FreshSeed(), offset = FreshSeed();
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " n=" << n << " seed=" << seed << " offset=" << offset);
      auto out = RunNormal(GetParam(), {n}, dt, 0, 1, seed, offset);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->shape(), Shape{n});
      const std::vector<double> got = ToDoubles(*out);
      for (int64_t i = 0; i < n; ++i) {
        const double z = StandardNormalReference(dt, seed, offset, i);
        ASSERT_NEAR(got[i], z, NormalTolerance(dt, z)) << "element " << i;
      }
    }
  }
}

// Mean, variance and the share within one std, each within 6 standard errors (plus the
// 16-bit types' rounding); |x - mean| within the Box-Muller bound of 24-bit (53-bit)
// uniforms, sqrt(-2 log 2^-24) = 5.77 (8.57) std.
TEST_P(GeneratorTest, NormalStatistics) {
  const int64_t n = int64_t{1} << 20;
  const double mu = 1.5, sigma = 2;
  for (DataType dt : kFloats) {
    const uint64_t seed = FreshSeed();
    SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " seed=" << seed);
    auto out = RunNormal(GetParam(), {n}, dt, mu, sigma, seed);
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<double> x = ToDoubles(*out);
    double sum = 0, max_dev = 0;
    int64_t within = 0;
    for (double v : x) {
      ASSERT_TRUE(std::isfinite(v));
      sum += v;
      max_dev = std::max(max_dev, std::fabs(v - mu));
      within += std::fabs(v - mu) < sigma;
    }
    const double mean = sum / n;
    double m2 = 0;
    for (double v : x) m2 += (v - mean) * (v - mean);
    const double var = m2 / (n - 1);
    // 16-bit rounding: unbiased for the mean; adds about ulp^2 / 12 to the variance and
    // moves up to density * ulp / 2 of the mass across each 1-std edge.
    const double ulp_rel = dt == DataType::kBFloat16 ? 0x1p-8 : dt == DataType::kFloat16 ? 0x1p-11 : 0;
    EXPECT_NEAR(mean, mu, 6 * sigma / std::sqrt(static_cast<double>(n)));
    EXPECT_NEAR(var, sigma * sigma, 6 * sigma * sigma * std::sqrt(2.0 / n) + 0.01 * ulp_rel);
    const double p = 0.6826894921370859;  // P(|z| < 1)
    EXPECT_NEAR(static_cast<double>(within) / n, p, 6 * std::sqrt(p * (1 - p) / n) + 0.25 * ulp_rel * 4);
    const double bound = dt == DataType::kFloat64 ? 8.5711 : 5.7682;
    EXPECT_LE(max_dev, sigma * bound * (1 + 2 * ulp_rel) + 1e-5);
    EXPECT_GT(max_dev, sigma * 4);  // P(no |z| > 4 in 2^20 draws) is about e^-66
  }
}

TEST_P(GeneratorTest, NormalReproducibleZeroStdAndPrefix) {
  for (DataType dt : kFloats) {
    const uint64_t seed = FreshSeed();
    SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " seed=" << seed);
    auto a = RunNormal(GetParam(), {1031}, dt, -1, 3, seed, 7);
    auto b = RunNormal(GetParam(), {1031}, dt, -1, 3, seed, 7);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(Bytes(*a), Bytes(*b));
    auto prefix = RunNormal(GetParam(), {5}, dt, -1, 3, seed, 7);
    ASSERT_TRUE(prefix.ok());
    const std::vector<uint8_t> full = Bytes(*a);
    EXPECT_EQ(Bytes(*prefix), std::vector<uint8_t>(full.begin(), full.begin() + 5 * DataTypeSize(dt)));
    auto other = RunNormal(GetParam(), {1031}, dt, -1, 3, seed, 8);
    ASSERT_TRUE(other.ok());
    EXPECT_NE(Bytes(*other), full);
    auto zero = RunNormal(GetParam(), {1031}, dt, 0.25, 0, seed);
    ASSERT_TRUE(zero.ok()) << zero.status();
    for (double v : ToDoubles(*zero)) ASSERT_EQ(v, 0.25);
  }
}

TEST_P(GeneratorTest, NormalErrors) {
  const DeviceType d = GetParam();
  std::string e = ErrorOf(RunNormal(d, {4}, DataType::kFloat32, 0, -1, 0));
  EXPECT_TRUE(Contains(e, "op 'normal': attribute 'std' (-1) must be >= 0"));
  e = ErrorOf(RunNormal(d, {4}, DataType::kFloat32, 0, std::nan(""), 0));
  EXPECT_TRUE(Contains(e, "attribute 'std' (nan) must be >= 0"));
  e = ErrorOf(RunNormal(d, {4}, DataType::kFloat32, std::numeric_limits<double>::infinity(), 1, 0));
  EXPECT_TRUE(Contains(e, "op 'normal': attribute 'mean' (inf) must be finite"));
  e = ErrorOf(RunNormal(d, {4}, DataType::kUInt8, 0, 1, 0));
  EXPECT_TRUE(
      Contains(e, "op 'normal': attribute 'dtype' is uint8; normal makes float16, bfloat16, float32 or float64"));
}

// ---- the typed wrappers ----------------------------------------------------------------

TEST_P(GeneratorTest, TypedWrappersMatchTheCalls) {
  const DeviceType d = GetParam();
  auto f = ops::Fill({2, 3}, 4.0, DataType::kInt16, d);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->shape(), (Shape{2, 3}));
  EXPECT_EQ(f->device(), d);
  EXPECT_EQ(ToDoubles(*f), std::vector<double>(6, 4.0));
  auto a = ops::Arange(1, 4, 1, DataType::kInt64, d);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(ToDoubles(*a), (std::vector<double>{1, 2, 3}));
  const uint64_t seed = FreshSeed();
  auto u = ops::Uniform({100}, -1, 1, seed, 3, DataType::kFloat32, d);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(Bytes(*u), Bytes(*RunUniform(d, {100}, DataType::kFloat32, -1, 1, seed, 3)));
  auto n = ops::Normal({100}, 0, 1, seed, 3, DataType::kFloat64, d);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(Bytes(*n), Bytes(*RunNormal(d, {100}, DataType::kFloat64, 0, 1, seed, 3)));
  // A stream of another device is an error, not a silent move.
  if (d == DeviceType::kCuda) {
    const Stream cpu = Stream::Default(DeviceType::kCpu);
    auto wrong = ops::Fill({2}, 1.0, DataType::kFloat32, d, &cpu);
    EXPECT_FALSE(wrong.ok());
  }
}

KPS_INSTANTIATE_ON_DEVICES(GeneratorTest);

// ---- CPU against CUDA ------------------------------------------------------------------

class GeneratorCpuCudaTest : public ::testing::Test {
 protected:
  void SetUp() override { KPS_SKIP_WITHOUT_GPU(); }
};

TEST_F(GeneratorCpuCudaTest, FillArangeAndUniformAreBitwiseEqual) {
  for (DataType dt : kFloats) {
    for (int64_t n : EdgeSizes()) {
      const uint64_t seed = FreshSeed(), offset = FreshSeed();
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " n=" << n << " seed=" << seed << " offset=" << offset);
      auto cpu = RunUniform(DeviceType::kCpu, {n}, dt, -0.3, 1.7, seed, offset);
      auto cuda = RunUniform(DeviceType::kCuda, {n}, dt, -0.3, 1.7, seed, offset);
      ASSERT_TRUE(cpu.ok() && cuda.ok());
      ASSERT_EQ(Bytes(*cpu), Bytes(*cuda));
      auto acpu = RunArange(DeviceType::kCpu, -0.7, -0.7 + 0.013 * n, 0.013, dt);
      auto acuda = RunArange(DeviceType::kCuda, -0.7, -0.7 + 0.013 * n, 0.013, dt);
      ASSERT_TRUE(acpu.ok() && acuda.ok());
      ASSERT_EQ(Bytes(*acpu), Bytes(*acuda));
    }
  }
  for (DataType dt : kAllDataTypes) {
    auto cpu = RunFill(DeviceType::kCpu, {1000003}, 1, dt);
    auto cuda = RunFill(DeviceType::kCuda, {1000003}, 1, dt);
    ASSERT_TRUE(cpu.ok() && cuda.ok());
    ASSERT_EQ(Bytes(*cpu), Bytes(*cuda)) << DataTypeName(dt);
  }
}

TEST_F(GeneratorCpuCudaTest, NormalAgreesWithinAFewUlps) {
  for (DataType dt : kFloats) {
    for (int64_t n : EdgeSizes()) {
      const uint64_t seed = FreshSeed(), offset = FreshSeed();
      SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " n=" << n << " seed=" << seed << " offset=" << offset);
      auto cpu = RunNormal(DeviceType::kCpu, {n}, dt, 0, 1, seed, offset);
      auto cuda = RunNormal(DeviceType::kCuda, {n}, dt, 0, 1, seed, offset);
      ASSERT_TRUE(cpu.ok() && cuda.ok());
      const std::vector<double> x = ToDoubles(*cpu), y = ToDoubles(*cuda);
      for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], x[i], NormalTolerance(dt, x[i])) << "element " << i;
    }
  }
}

// More than 2^31 elements: the kernels' 64-bit indexing (skipped where memory is short).
TEST_F(GeneratorCpuCudaTest, BeyondTwoToThe31Elements) {
  const int64_t n = (int64_t{1} << 31) + 13;
  // Reads elements [begin, end) back to the host.
  auto slice = [](const Tensor& t, int64_t begin, int64_t end) { return ToDoubles(*t.Slice(0, begin, end)); };
  {
    auto out = RunFill(DeviceType::kCuda, {n}, 7, DataType::kUInt8);
    if (!out.ok() && out.status().code() != absl::StatusCode::kInvalidArgument) GTEST_SKIP() << out.status();
    ASSERT_TRUE(out.ok()) << out.status();
    for (int64_t begin : {int64_t{0}, (int64_t{1} << 31) - 100, n - 100}) {
      for (double v : slice(*out, begin, begin + 100)) ASSERT_EQ(v, 7);
    }
  }
  {
    auto out = RunUniform(DeviceType::kCuda, {n}, DataType::kFloat32, 0, 1, 12345, 6);
    if (!out.ok() && out.status().code() != absl::StatusCode::kInvalidArgument) GTEST_SKIP() << out.status();
    ASSERT_TRUE(out.ok()) << out.status();
    for (int64_t begin : {int64_t{0}, (int64_t{1} << 31) - 100, n - 100}) {
      const std::vector<double> got = slice(*out, begin, begin + 100);
      for (int64_t i = 0; i < 100; ++i) {
        ASSERT_EQ(got[i], UnitUniformReference(DataType::kFloat32, 12345, 6, begin + i)) << begin + i;
      }
    }
  }
  {
    auto out = RunArange(DeviceType::kCuda, 0, static_cast<double>(n), 1, DataType::kFloat32);
    if (!out.ok() && out.status().code() != absl::StatusCode::kInvalidArgument) GTEST_SKIP() << out.status();
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<double> got = slice(*out, n - 100, n);
    for (int64_t i = 0; i < 100; ++i) {
      ASSERT_EQ(got[i], testing::RoundTo(DataType::kFloat32, static_cast<double>(n - 100 + i)));
    }
  }
}

}  // namespace
}  // namespace kps
