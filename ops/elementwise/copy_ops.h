// Shared by copy's CPU and CUDA kernels.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "registry/data_type.h"

namespace kps {
namespace elementwise {

// Views of more dimensions than this are copied as an error, not silently wrong.
inline constexpr int kMaxCopyRank = 8;

}  // namespace elementwise
}  // namespace kps
