// The rank limit of strided copies, shared by copy, cast and the internal contiguous copy
// (ops/common/contiguous.h).
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
