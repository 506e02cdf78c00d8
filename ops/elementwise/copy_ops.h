// Shared by copy's CPU and CUDA kernels.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "registry/data_type.h"

namespace kps {
namespace elementwise {

// Every dtype: copy moves bits, so its kernels depend only on the element width.
#define KPS_ALL_CPP_TYPES \
  bool, int8_t, uint8_t, int16_t, int32_t, int64_t, ::kps::float16, ::kps::bfloat16, float, double
std::vector<DataType> AllDataTypes();
// Every numeric dtype (all but bool).
#define KPS_NUMERIC_CPP_TYPES \
  ::kps::float16, ::kps::bfloat16, float, double, int8_t, uint8_t, int16_t, int32_t, int64_t

// The unsigned integer of T's width: kernels instantiate per width, not per dtype.
template <typename T>
using BitsOf = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

// Views of more dimensions than this are copied as an error, not silently wrong.
inline constexpr int kMaxCopyRank = 8;

}  // namespace elementwise
}  // namespace kps
