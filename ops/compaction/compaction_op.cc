// nonzero and masked_select: schemas, the shared input preparation, the CPU compaction.
// The kernels are in compaction.h, registered in compaction_cuda.cu.
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/common/axis.h"
#include "ops/compaction/compaction.h"
#include "ops/elementwise/broadcast.h"
#include "registry/data_type.h"
#include "ops/common/contiguous.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"
#include "registry/status.h"

namespace kps {
namespace compaction {

absl::StatusOr<Tensor> ExpandTo(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  const int rank = shape.rank(), lead = rank - t.rank();
  DimVector strides(rank, 0);
  for (int d = 0; d < t.rank(); ++d) {
    if (t.shape()[d] == shape[lead + d]) {
      strides[lead + d] = t.strides()[d];
    } else if (t.shape()[d] != 1) {
      return absl::InternalError(
          absl::StrCat("ExpandTo: ", t.shape().ToString(), " does not broadcast to ", shape.ToString()));
    }
  }
  return t.AsStrided(shape, strides, t.offset());
}

absl::StatusOr<Prepared> PrepareNonzero(const KernelContext& ctx) {
  Prepared p;
  KPS_ASSIGN_OR_RETURN(p.pred, internal::AsContiguous(ctx.input(0), ctx.stream()));
  p.shape = ctx.input(0).shape();
  return p;
}

absl::StatusOr<Prepared> PrepareMaskedSelect(const KernelContext& ctx) {
  Prepared p;
  KPS_ASSIGN_OR_RETURN(p.shape, elementwise::BroadcastShape(ctx));
  KPS_ASSIGN_OR_RETURN(Tensor x, ExpandTo(ctx.input(0), p.shape));
  KPS_ASSIGN_OR_RETURN(Tensor mask, ExpandTo(ctx.input(1), p.shape));
  KPS_ASSIGN_OR_RETURN(p.values, internal::AsContiguous(x, ctx.stream()));
  KPS_ASSIGN_OR_RETURN(p.pred, internal::AsContiguous(mask, ctx.stream()));
  return p;
}

namespace {

// The kept positions of a contiguous predicate of `size`-byte elements, in order.
std::vector<int64_t> KeptPositions(const CompactArgs& a) {
  std::vector<int64_t> kept;
  const char* pred = static_cast<const char*>(a.pred);
  for (int64_t e = 0; e < a.n; ++e) {
    uint64_t bits = 0;
    std::memcpy(&bits, pred + e * a.pred_size, a.pred_size);  // little-endian
    if (BitsNonzero(bits, a.pred_size, a.pred_float)) kept.push_back(e);
  }
  return kept;
}

}  // namespace

absl::Status CompactCpu(const CompactArgs& a, const std::function<absl::StatusOr<void*>(int64_t)>& allocate) {
  const std::vector<int64_t> kept = KeptPositions(a);
  KPS_ASSIGN_OR_RETURN(void* out, allocate(static_cast<int64_t>(kept.size())));
  if (a.values != nullptr) {  // masked_select: the kept values
    const char* x = static_cast<const char*>(a.values);
    char* o = static_cast<char*>(out);
    for (size_t r = 0; r < kept.size(); ++r) std::memcpy(o + r * a.value_size, x + kept[r] * a.value_size, a.value_size);
    return absl::OkStatus();
  }
  const int rank = static_cast<int>(a.dims.size());  // nonzero: the kept coordinates
  int64_t* o = static_cast<int64_t*>(out);
  for (int64_t e : kept) {
    for (int d = rank - 1; d >= 0; --d) {  // unravel, innermost first
      o[d] = e % a.dims[d];
      e /= a.dims[d];
    }
    o += rank;
  }
  return absl::OkStatus();
}

namespace {

absl::Status InferNonzero(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() > kMaxAxisOpRank) {
    return ctx.Error("input 'x' has rank ", x.rank(), "; at most ", kMaxAxisOpRank, " is supported");
  }
  ctx.SetDynamicOutput(0, DataType::kInt64);
  return absl::OkStatus();
}

absl::Status InferMaskedSelect(InferContext& ctx) {
  const Tensor& mask = ctx.input(1);
  if (mask.dtype() != DataType::kBool) {
    return ctx.Error("input 'mask' must be bool, got ", DataTypeName(mask.dtype()),
                     " (make one with a comparison, e.g. ne(mask, 0))");
  }
  KPS_ASSIGN_OR_RETURN(const Shape shape, elementwise::BroadcastShape(ctx));
  if (shape.rank() > kMaxAxisOpRank) {
    return ctx.Error("the broadcast shape ", shape.ToString(), " has rank ", shape.rank(), "; at most ",
                     kMaxAxisOpRank, " is supported");
  }
  ctx.SetDynamicOutput(0, ctx.input(0).dtype());
  return absl::OkStatus();
}

}  // namespace

KPS_REGISTER_OP("nonzero")
    .Input("x", "any dtype, any layout, rank <= 8")
    .Output("indices", "int64 [count, rank of x]: the coordinates of each non-zero element, in row-major order")
    .SetInferFn(InferNonzero)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes())
    .Doc("The coordinates of the elements of x that are not zero (NaN is not zero, -0.0 is), in row-major "
         "order. The output size depends on the values: on CUDA the call waits for the count.");
KPS_REGISTER_OP("masked_select")
    .Input("x", "any dtype, any layout")
    .TypedInput("mask", DataType::kBool, "bool, broadcastable with x")
    .Output("out", "x's dtype, 1-D: the elements of x (broadcast with mask) where mask is true, in row-major order")
    .SetInferFn(InferMaskedSelect)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes())
    .Doc("The elements of x where mask is true (NumPy broadcasting between the two), in row-major order. The "
         "output size depends on the mask: on CUDA the call waits for the count.");


}  // namespace compaction
}  // namespace kps
