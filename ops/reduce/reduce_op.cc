// The reductions' schema (ReduceSchema: inputs, attributes, output inference by OutRule).
// The ops themselves are registered, schema and kernels, by KPS_REDUCE_OP lines in
// reduce_cuda_*.cu.
#include <utility>

#include "ops/reduce/reduce_ops.h"
#include "registry/op_schema.h"

namespace kps {
namespace reduce {
namespace {

const char* RuleOutputDoc(OutRule rule) {
  switch (rule) {
    case OutRule::kSame: return "x's dtype, contiguous, of x's shape without the reduced dims";
    case OutRule::kSumLike:
      return "int64 for bool and integer x (wrapping), else x's dtype; contiguous, of x's shape without the reduced dims";
    case OutRule::kFloatOnly: return "x's (floating) dtype, contiguous, of x's shape without the reduced dims";
    case OutRule::kBool: return "bool, contiguous, of x's shape without the reduced dims";
    case OutRule::kIndex: return "int64 positions within the reduced extent (row-major over the reduced dims)";
    case OutRule::kCount: return "int64 counts, contiguous, of x's shape without the reduced dims";
  }
  return "";
}

std::vector<DataType> RuleDataTypes(OutRule rule) {
  if (rule == OutRule::kFloatOnly) {
    return {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
  }
  return AllDataTypes();
}

absl::Status InferReduce(InferContext& ctx, OutRule rule, bool needs_identity) {
  const Tensor& x = ctx.input(0);
  KPS_ASSIGN_OR_RETURN(const uint32_t mask, ReducedDimMask(ctx));
  const Shape shape = ReducedShape(x.shape(), mask, ctx.Attr<bool>("keepdim"));
  DataType out = x.dtype();
  switch (rule) {
    case OutRule::kSame: break;
    case OutRule::kSumLike: out = IsFloatingPoint(x.dtype()) ? x.dtype() : DataType::kInt64; break;
    case OutRule::kFloatOnly:
      if (!IsFloatingPoint(x.dtype())) {
        return ctx.Error("input 'x' has dtype ", DataTypeName(x.dtype()), "; ", ctx.schema().name(),
                         " needs a floating dtype (float16, bfloat16, float32, float64): cast x first");
      }
      break;
    case OutRule::kBool: out = DataType::kBool; break;
    case OutRule::kIndex:
    case OutRule::kCount: out = DataType::kInt64; break;
  }
  if (needs_identity && shape.numel() > 0) {
    int64_t reduced = 1;
    for (int d = 0; d < x.rank(); ++d) {
      if (mask & (1u << d)) reduced *= x.shape()[d];
    }
    if (reduced == 0) {
      return ctx.Error("cannot reduce an empty extent: dims ", MaskToString(mask, x.rank()), " of input 'x' ",
                       x.shape().ToString(), " hold no elements, and ", ctx.schema().name(), " has no identity");
    }
  }
  ctx.SetOutput(0, shape, out);
  return absl::OkStatus();
}

}  // namespace

OpSchemaBuilder& ReduceSchema(OpSchemaBuilder&& builder, OutRule rule, bool needs_identity) {
  builder.Input("x", "the tensor to reduce (contiguous or a strided view, rank <= 8)");
  builder.Output("out", RuleOutputDoc(rule));
  builder.Attr<std::vector<int64_t>>("dims", {}, "the dims to reduce, negative counting from the end; empty: all");
  builder.Attr<bool>("keepdim", false, "keep the reduced dims as size 1");
  builder.SetInferFn([rule, needs_identity](InferContext& ctx) { return InferReduce(ctx, rule, needs_identity); });
  builder.Kernels({DeviceType::kCpu, DeviceType::kCuda}, RuleDataTypes(rule));
  return builder;
}

}  // namespace reduce
}  // namespace kps
