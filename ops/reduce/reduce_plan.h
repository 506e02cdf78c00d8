// The shape side of a reduction, shared by the schemas, the CPU loop and the CUDA
// launcher: which dims a call reduces, the output shape, and the loop a reduction runs
// after merging dims.
//
// Every reduction is run as O independent outputs, each folding R inputs. The input
// offset of (output o, reduced element r) is out.Offset(o) + red.Offset(r), where `out`
// walks the kept dims and `red` the reduced dims (each row-major, in x's dim order).
// Merging first makes the common cases rank 1 on each side: a row sum of a contiguous
// [M, N] matrix is out = {M: stride N}, red = {N: stride 1}.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "registry/op_schema.h"
#include "registry/shape.h"
#include "registry/tensor.h"

namespace kps {
namespace reduce {

// Inputs of higher rank are rejected with an error (merging makes real shapes smaller).
inline constexpr int kMaxReduceRank = 8;

// A row-major walk over `rank` dims with the given element strides.
struct DimWalk {
  int rank = 0;
  int64_t sizes[kMaxReduceRank] = {};
  int64_t strides[kMaxReduceRank] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= sizes[d];
    return n;
  }
  int64_t Offset(int64_t i) const {  // host only (the CUDA side has a FastDivMod version)
    int64_t off = 0;
    for (int d = rank - 1; d > 0; --d) {
      off += (i % sizes[d]) * strides[d];
      i /= sizes[d];
    }
    return rank > 0 ? off + i * strides[0] : 0;
  }
};

struct ReducePlan {
  int64_t num_outputs = 1;  // O
  int64_t reduce_size = 1;  // R
  DimWalk out;              // the kept dims (rank 0 when O == 1)
  DimWalk red;              // the reduced dims (rank 0 when R == 1)
  // The innermost (smallest-stride) dim of x is reduced: lanes should cooperate along
  // the reduced extent. Otherwise they should own neighbouring outputs.
  bool reduce_inner = true;
};

// The call's `dims` attribute as a bit mask over x's dims (bit d: dim d is reduced).
// Empty dims means every dim. Errors name the op and 'dims': a dim out of range, a
// repeated dim; and x's rank above kMaxReduceRank.
absl::StatusOr<uint32_t> ReducedDimMask(const CallView& call);

// x's shape without the reduced dims, or with them as 1 when keepdim.
Shape ReducedShape(const Shape& x, uint32_t mask, bool keepdim);

// The merged loop for reducing x over `mask`.
ReducePlan MakeReducePlan(const Tensor& x, uint32_t mask);

// "[1, 2]": the reduced dims of a mask, for messages.
std::string MaskToString(uint32_t mask, int rank);

}  // namespace reduce
}  // namespace kps
