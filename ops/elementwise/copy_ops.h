// Shared by copy's CPU and CUDA kernels.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "registry/data_type.h"

namespace kps {
namespace elementwise {

// The unsigned integer of T's width: kernels instantiate per width, not per dtype.
template <typename T>
using BitsOf = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

// Views of more dimensions than this are copied as an error, not silently wrong.
inline constexpr int kMaxCopyRank = 8;

}  // namespace elementwise
}  // namespace kps
