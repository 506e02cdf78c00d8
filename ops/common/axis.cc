#include "ops/common/axis.h"

namespace kps {

absl::StatusOr<int> ResolveDimAttr(const CallView& call) {
  const int rank = call.input(0).rank();
  if (rank > kMaxAxisOpRank) {
    return call.Error("input 'x' has rank ", rank, "; at most ", kMaxAxisOpRank, " dims are supported");
  }
  const int64_t d = call.Attr<int64_t>("dim");
  const int r = rank == 0 ? 1 : rank;  // a rank-0 input is one element along one dim
  if (d < -r || d >= r) {
    return call.Error("attribute 'dim' = ", d, " is out of range for input 'x' of rank ", rank, " (expected ", -r,
                      "..", r - 1, ")");
  }
  return static_cast<int>(d < 0 ? d + r : d);
}

AxisLines LinesAlong(const Shape& shape, int dim) {
  AxisLines l;
  for (int d = 0; d < shape.rank(); ++d) {
    if (d < dim) l.outer *= shape[d];
    if (d == dim) l.length = shape[d];
    if (d > dim) l.inner *= shape[d];
  }
  return l;
}

}  // namespace kps
