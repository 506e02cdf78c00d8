#include "ops/reduce/reduce_plan.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "registry/logging.h"

namespace kps {
namespace reduce {

absl::StatusOr<uint32_t> ReducedDimMask(const CallView& call) {
  const Tensor& x = call.input(0);
  const int rank = x.rank();
  if (rank > kMaxReduceRank) {
    return call.Error("input 'x' has rank ", rank, "; reductions support at most ", kMaxReduceRank, " dims");
  }
  const std::vector<int64_t>& dims = call.Attr<std::vector<int64_t>>("dims");
  if (dims.empty()) return rank == 0 ? 0u : (1u << rank) - 1;
  uint32_t mask = 0;
  for (int64_t d : dims) {
    if (d < -rank || d >= rank) {
      return call.Error("attribute 'dims' has ", d, ", out of range for input 'x' of rank ", rank,
                        rank == 0 ? " (a rank-0 tensor has no dims: pass dims = [])"
                                  : absl::StrCat(" (expected ", -rank, "..", rank - 1, ")"));
    }
    const int dim = static_cast<int>(d < 0 ? d + rank : d);
    if (mask & (1u << dim)) {
      return call.Error("attribute 'dims' lists dim ", dim, " more than once (", DimsToString(dims), ")");
    }
    mask |= 1u << dim;
  }
  return mask;
}

Shape ReducedShape(const Shape& x, uint32_t mask, bool keepdim) {
  DimVector dims;
  for (int d = 0; d < x.rank(); ++d) {
    if (!(mask & (1u << d))) {
      dims.push_back(x[d]);
    } else if (keepdim) {
      dims.push_back(1);
    }
  }
  return Shape(absl::Span<const int64_t>(dims.data(), dims.size()));
}

std::string MaskToString(uint32_t mask, int rank) {
  std::vector<int64_t> dims;
  for (int d = 0; d < rank; ++d) {
    if (mask & (1u << d)) dims.push_back(d);
  }
  return DimsToString(dims);
}

ReducePlan MakeReducePlan(const Tensor& x, uint32_t mask) {
  KPS_CHECK(x.rank() <= kMaxReduceRank);  // ReducedDimMask rejects higher ranks first
  ReducePlan plan;
  const Shape& shape = x.shape();
  for (int d = 0; d < x.rank(); ++d) {
    if (mask & (1u << d)) {
      plan.reduce_size *= shape[d];
    } else {
      plan.num_outputs *= shape[d];
    }
  }
  if (plan.num_outputs == 0 || plan.reduce_size == 0) {
    // Nothing is read: the walks only need the right sizes.
    plan.out = {plan.num_outputs == 1 ? 0 : 1, {plan.num_outputs}, {0}};
    plan.red = {plan.reduce_size == 1 ? 0 : 1, {plan.reduce_size}, {0}};
    return plan;
  }
  // Dims of size 1 take no part; neighbours of the same kind merge where x steps through
  // them as one.
  struct Dim {
    int64_t size, stride;
    bool reduced;
  };
  Dim merged[kMaxReduceRank];  // on the stack: this runs on every eager call
  int num_merged = 0;
  for (int d = 0; d < x.rank(); ++d) {
    if (shape[d] == 1) continue;
    const Dim dim{shape[d], x.strides()[d], (mask & (1u << d)) != 0};
    Dim* last = num_merged > 0 ? &merged[num_merged - 1] : nullptr;
    if (last != nullptr && last->reduced == dim.reduced && last->stride == dim.stride * dim.size) {
      last->size *= dim.size;
      last->stride = dim.stride;
    } else {
      merged[num_merged++] = dim;
    }
  }
  int64_t smallest = -1;
  for (int i = 0; i < num_merged; ++i) {
    const Dim& dim = merged[i];
    DimWalk& walk = dim.reduced ? plan.red : plan.out;
    walk.sizes[walk.rank] = dim.size;
    walk.strides[walk.rank] = dim.stride;
    ++walk.rank;
    const int64_t s = std::llabs(dim.stride);
    if (smallest < 0 || s <= smallest) {
      smallest = s;
      plan.reduce_inner = dim.reduced;
    }
  }
  return plan;
}

}  // namespace reduce
}  // namespace kps
