// Schemas of index_add (out of place) and index_add_ (in place on x), their checks and
// the operands' preparation. The kernels: index_add_ops.h (with the CPU part) and
// index_add_cuda*.cu.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/common/axis.h"
#include "ops/index/index_add_ops.h"
#include "ops/common/contiguous.h"
#include "registry/kernel.h"

namespace kps {
namespace indexing {

absl::StatusOr<IndexAddGeometry> ResolveIndexAdd(const CallView& call) {
  const Tensor& x = call.input(0);
  const Tensor& index = call.input(1);
  const Tensor& source = call.input(2);
  if (x.rank() == 0) return call.Error("input 'x' is a scalar (rank 0); it needs at least one dim");
  if (x.dtype() == DataType::kBool) {
    return call.Error("input 'x' has dtype bool, which has no addition; cast it to an integer dtype first");
  }
  KPS_ASSIGN_OR_RETURN(const int dim, ResolveDimAttr(call));
  if (index.rank() != 1) {
    return call.Error("input 'index' has rank ", index.rank(), " (shape ", index.shape().ToString(),
                      "); it must be 1-D");
  }
  if (index.dtype() != DataType::kInt32 && index.dtype() != DataType::kInt64) {
    return call.Error("input 'index' has dtype ", DataTypeName(index.dtype()), "; it must be int32 or int64");
  }
  if (source.dtype() != x.dtype()) {
    return call.Error("input 'source' has dtype ", DataTypeName(source.dtype()), " but input 'x' has ",
                      DataTypeName(x.dtype()), "; cast one of them");
  }
  if (source.rank() != x.rank()) {
    return call.Error("input 'source' has rank ", source.rank(), " (shape ", source.shape().ToString(),
                      ") but input 'x' has rank ", x.rank(), " (shape ", x.shape().ToString(), ")");
  }
  for (int d = 0; d < x.rank(); ++d) {
    const int64_t want = d == dim ? index.numel() : x.shape()[d];
    if (source.shape()[d] != want) {
      return call.Error("input 'source' has shape ", source.shape().ToString(), "; its dim ", d, " must be ", want,
                        d == dim ? " (the length of input 'index')" : absl::StrCat(" (as input 'x' ", x.shape().ToString(), ")"));
    }
  }
  const double alpha = call.Attr<double>("alpha");
  if (IsIntegral(x.dtype()) && (alpha != std::floor(alpha) || std::fabs(alpha) >= 9.2e18)) {
    return call.Error("attribute 'alpha' = ", alpha, " is not an integer, and input 'x' has integer dtype ",
                      DataTypeName(x.dtype()));
  }
  IndexAddGeometry g;
  g.dim = dim;
  const AxisLines l = LinesAlong(x.shape(), dim);
  g.outer = l.outer;
  g.dim_size = l.length;
  g.inner = l.inner;
  g.count = index.numel();
  return g;
}

absl::StatusOr<IndexAddOperands> PrepareIndexAdd(const KernelContext& ctx, bool in_place) {
  IndexAddOperands a;
  KPS_ASSIGN_OR_RETURN(a.g, ResolveIndexAdd(ctx));
  if (in_place) {
    a.x = ctx.input(0);  // contiguous: the schema checked it
    a.out = a.x;
  } else {
    KPS_ASSIGN_OR_RETURN(a.x, internal::AsContiguous(ctx.input(0), ctx.stream()));
    a.out = ctx.output(0);
  }
  KPS_ASSIGN_OR_RETURN(a.index, internal::AsContiguous(ctx.input(1), ctx.stream()));
  KPS_ASSIGN_OR_RETURN(a.source, internal::AsContiguous(ctx.input(2), ctx.stream()));
  return a;
}

absl::Status BadIndexError(const CallView& call, int64_t position, int64_t value, const IndexAddGeometry& g) {
  return call.Error("input 'index' holds ", value, " at position ", position, ", outside [0, ", g.dim_size,
                    "): dim ", g.dim, " of input 'x' has size ", g.dim_size,
                    value < 0 ? " (negative indices are not allowed)" : "");
}

namespace {

absl::Status InferIndexAdd(InferContext& ctx, bool in_place) {
  KPS_RETURN_IF_ERROR(ResolveIndexAdd(ctx).status());
  const Tensor& x = ctx.input(0);
  if (in_place) {
    if (!x.is_contiguous()) {
      return ctx.Error("input 'x' is updated in place and must be contiguous (shape ", x.shape().ToString(),
                       ", strides ", DimsToString(x.strides()), "); use index_add, which takes any view");
    }
  } else {
    ctx.SetOutput(0, x.shape(), x.dtype());
  }
  return absl::OkStatus();
}

std::vector<DataType> IndexAddDataTypes() {
  return {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kInt8,
          DataType::kUInt8,   DataType::kInt16,    DataType::kInt32,   DataType::kInt64};
}

OpSchemaBuilder& IndexAddSchema(OpSchemaBuilder&& b, bool in_place) {
  b.Input("x", in_place ? "the tensor to add into, in place (contiguous)" : "the tensor to add into (any view)");
  b.Input("index", "1-D int32 or int64: the positions along dim of x that receive source's slices, each in "
                   "[0, x.shape[dim]); repeats accumulate");
  b.Input("source", "x's dtype and rank; source.shape[dim] == len(index), its other dims as x's");
  if (!in_place) b.Output("out", "x's dtype and shape, contiguous: x with alpha * source added at index");
  b.Attr<int64_t>("dim", 0, "the dim of x that index selects along, negative counting from the end");
  b.Attr<double>("alpha", 1.0, "scale of source (an integer for integer dtypes)");
  b.Attr<bool>("deterministic", false,
               "true: no floating-point atomics; every destination sums its sources in index-position order, so "
               "results are bitwise reproducible");
  b.SetInferFn([in_place](InferContext& ctx) { return InferIndexAdd(ctx, in_place); });
  b.Kernels({DeviceType::kCpu, DeviceType::kCuda}, IndexAddDataTypes());
  return b;
}

#define KPS_INDEX_ADD_OP(name, in_place)                                                         \
  static ::kps::internal::OpRegistrationTrigger KPS_CONCAT(kps_index_add_op_, __COUNTER__) =     \
      IndexAddSchema(::kps::OpSchemaBuilder(name, __FILE__, __LINE__), in_place)

}  // namespace

KPS_INDEX_ADD_OP("index_add", false)
    .Doc("out = x, then out[..., index[i], ...] += alpha * source[..., i, ...] along `dim` for every i (PyTorch's "
         "index_add). Repeated indices accumulate. An index outside [0, x.shape[dim]) is an error naming it; on "
         "CUDA the check runs on the device and the call waits for it (see docs/semantics.md).");
KPS_INDEX_ADD_OP("index_add_", true)
    .Doc("index_add in place: x[..., index[i], ...] += alpha * source[..., i, ...]; no outputs. x must be "
         "contiguous. With a bad index x is left unchanged and the call returns the error.");

}  // namespace indexing
}  // namespace kps
