// Independent references for elementwise ops: computed in double (floats) or in int64
// narrowed with two's-complement wrap (integers), from the ops' documented semantics,
// not from the KPS functors.
#pragma once

#include <cstdint>

#include "registry/data_type.h"
#include "testing/support.h"

namespace kps {
namespace reference {

// Narrows an int64 to `dtype`'s width the way two's complement hardware does.
inline double WrapTo(DataType dtype, int64_t v) {
  switch (dtype) {
    case DataType::kInt8: return static_cast<int8_t>(static_cast<uint8_t>(v));
    case DataType::kUInt8: return static_cast<uint8_t>(v);
    case DataType::kInt16: return static_cast<int16_t>(static_cast<uint16_t>(v));
    case DataType::kInt32: return static_cast<int32_t>(static_cast<uint32_t>(v));
    default: return static_cast<double>(v);
  }
}

// x + alpha * y, stored in dtype.
inline double Add(DataType dtype, double x, double y, double alpha) {
  if (IsIntegral(dtype)) {
    const uint64_t r = static_cast<uint64_t>(static_cast<int64_t>(x)) +
                       static_cast<uint64_t>(static_cast<int64_t>(alpha)) * static_cast<uint64_t>(static_cast<int64_t>(y));
    return WrapTo(dtype, static_cast<int64_t>(r));
  }
  return testing::RoundTo(dtype, x + alpha * y);
}

// x * y, stored in dtype.
inline double Mul(DataType dtype, double x, double y) {
  if (IsIntegral(dtype)) {
    const uint64_t r = static_cast<uint64_t>(static_cast<int64_t>(x)) * static_cast<uint64_t>(static_cast<int64_t>(y));
    return WrapTo(dtype, static_cast<int64_t>(r));
  }
  return testing::RoundTo(dtype, x * y);
}

}  // namespace reference
}  // namespace kps
