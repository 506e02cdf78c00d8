// Helpers shared by the upsample, index_add, dot and conv1d tests: inputs on a device
// (contiguous, at a misaligned offset, or as a strided view), values from doubles, and an
// element-by-element comparison that reports the first few mismatches.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "registry/data_type.h"
#include "registry/tensor.h"
#include "testing/support.h"

namespace kps {
namespace op_check {

// How an input is laid out in memory.
enum class Layout {
  kContiguous,
  kOffset,   // contiguous, one element into its buffer (misaligned for 16-byte loads)
  kStrided,  // every other element of a buffer twice as long in the last dim
};

inline const char* LayoutName(Layout l) {
  switch (l) {
    case Layout::kContiguous: return "contiguous";
    case Layout::kOffset: return "offset";
    case Layout::kStrided: return "strided";
  }
  return "?";
}

using ::kps::testing::HostFromDoubles;

// `values` as a tensor of `shape` on `dev`, laid out as `layout`.
inline Tensor Place(const std::vector<double>& values, const Shape& shape, DataType dt, DeviceType dev,
                    Layout layout) {
  Tensor result;
  if (layout == Layout::kContiguous) {
    result = HostFromDoubles(values, shape, dt);
  } else if (layout == Layout::kOffset) {
    std::vector<double> padded(values.size() + 1, 7.0);
    for (size_t i = 0; i < values.size(); ++i) padded[i + 1] = values[i];
    Tensor buf = HostFromDoubles(padded, Shape{static_cast<int64_t>(padded.size())}, dt);
    auto v = buf.AsStrided(shape, ContiguousStrides(shape), 1);
    EXPECT_TRUE(v.ok()) << v.status();
    result = *v;
  } else {
    // [..., last] viewed from [..., 2 * last]: strides double in the last dim.
    std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
    if (dims.empty()) dims.push_back(1);
    std::vector<int64_t> wide = dims;
    wide.back() *= 2;
    std::vector<double> spread(static_cast<size_t>(Shape(wide).numel()), -7.0);
    for (size_t i = 0; i < values.size(); ++i) spread[2 * i] = values[i];
    Tensor buf = HostFromDoubles(spread, Shape(wide), dt);
    DimVector strides = ContiguousStrides(Shape(wide));
    strides.back() = 2;
    auto v = buf.AsStrided(shape, absl::Span<const int64_t>(strides.data(), static_cast<size_t>(shape.rank())), 0);
    EXPECT_TRUE(v.ok()) << v.status();
    result = *v;
  }
  if (dev == DeviceType::kCpu) return result;
  // A CUDA copy of the same layout: copy the whole buffer, then the same view.
  const std::vector<int64_t> unit = {1};
  auto storage = Tensor::FromStorage(result.storage(), dt,
                                     Shape{static_cast<int64_t>(result.storage()->bytes() / DataTypeSize(dt))}, unit, 0);
  EXPECT_TRUE(storage.ok()) << storage.status();
  auto on_dev = storage->To(dev);
  EXPECT_TRUE(on_dev.ok()) << on_dev.status();
  auto view = on_dev->AsStrided(result.shape(), result.strides(), result.offset());
  EXPECT_TRUE(view.ok()) << view.status();
  return *view;
}

// Random values in [-4, 4) (floats, rounded to dt), integers in [-int_range, int_range]
// ([0, int_range] for uint8), or bools half true; never all zero.
inline std::vector<double> RandomValues(int64_t n, DataType dt, uint64_t seed, int64_t int_range = 50) {
  std::mt19937_64 gen(seed);
  std::vector<double> v(static_cast<size_t>(n));
  if (dt == DataType::kBool) {
    std::bernoulli_distribution d(0.5);
    for (double& x : v) x = d(gen) ? 1.0 : 0.0;
  } else if (IsFloatingPoint(dt)) {
    std::uniform_real_distribution<double> d(-4.0, 4.0);
    for (double& x : v) x = testing::RoundTo(dt, d(gen));
  } else {
    std::uniform_int_distribution<int64_t> d(dt == DataType::kUInt8 ? 0 : -int_range, int_range);
    for (double& x : v) x = static_cast<double>(d(gen));
  }
  if (n > 0 && v[0] == 0) v[0] = 1;
  return v;
}

// Compares got[i] with want[i] within tol[i]; NaN matches NaN. Reports at most 5.
inline ::testing::AssertionResult AllClose(const std::vector<double>& got, const std::vector<double>& want,
                                           const std::vector<double>& tol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "got " << got.size() << " elements, want " << want.size();
  }
  int64_t bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i] ||
                    std::fabs(got[i] - want[i]) <= tol[i];
    if (!ok) {
      if (bad < 5) msg << "\n  [" << i << "] got " << got[i] << ", want " << want[i] << " (tol " << tol[i] << ")";
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ:" << msg.str();
}

// Unit roundoff of the accumulator of dtype (float for 16-bit and float32, else double).
inline double AccEps(DataType dt) { return dt == DataType::kFloat64 ? 0x1p-53 : 0x1p-24; }

// Wraps an int64 into the range of integer dtype dt (two's complement).
inline double WrapTo(DataType dt, double v) {
  const int64_t i = static_cast<int64_t>(v);
  switch (dt) {
    case DataType::kInt8: return static_cast<int8_t>(i);
    case DataType::kUInt8: return static_cast<uint8_t>(i);
    case DataType::kInt16: return static_cast<int16_t>(i);
    case DataType::kInt32: return static_cast<int32_t>(i);
    default: return static_cast<double>(i);
  }
}

}  // namespace op_check
}  // namespace kps
