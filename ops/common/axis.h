// One dim of a tensor, as ops that work along a single axis see it (scans, sorts): the
// call's `dim` attribute resolved against the input's rank, and the tensor viewed as
// [outer, length, inner] around that dim.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "registry/op_schema.h"
#include "registry/shape.h"

namespace kps {

// Inputs of higher rank are an error (the same bound as copy's strided views).
inline constexpr int kMaxAxisOpRank = 8;

// The call's int attribute `dim` for input 0, negative counting from the end; a rank-0
// input counts as one dim of size 1 (dim 0 or -1). Errors name the op, the attribute
// and the valid range, and reject inputs of rank above kMaxAxisOpRank.
absl::StatusOr<int> ResolveDimAttr(const CallView& call);

// A contiguous tensor of `shape` along `dim`: element (o, p, i) lives at
// (o * length + p) * inner + i.
// Scans (scan::ScanShape) and sorts (sort::Lines) extend it.
struct AxisLines {
  int64_t outer = 1, length = 1, inner = 1;
  int64_t count() const { return outer * inner; }  // the number of lines
};
AxisLines LinesAlong(const Shape& shape, int dim);

}  // namespace kps
