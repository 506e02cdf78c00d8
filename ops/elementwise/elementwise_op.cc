#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/elementwise_schema.h"
#include "registry/op_schema.h"

namespace kps {
namespace elementwise {

absl::Status InferElementwise(InferContext& ctx, OutDtype out) {
  const Tensor& x = ctx.input(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    if (t.dtype() != x.dtype()) {
      return ctx.Error("inputs '", ctx.schema().inputs()[0].name, "' (", DataTypeName(x.dtype()), ") and '",
                       ctx.schema().inputs()[i].name, "' (", DataTypeName(t.dtype()),
                       ") have different dtypes; cast one first (mixed-dtype promotion is not done)");
    }
  }
  KPS_ASSIGN_OR_RETURN(Shape shape, BroadcastShape(ctx));
  ctx.SetOutput(0, std::move(shape), out == OutDtype::kBool ? DataType::kBool : x.dtype());
  return absl::OkStatus();
}

OpSchemaBuilder& ElementwiseSchema(OpSchemaBuilder&& builder, int arity, OutDtype out, const char* doc) {
  builder.Input("x", arity >= 2 ? "first operand" : "the operand");
  if (arity >= 2) builder.Input("y", "second operand: x's dtype, a shape that broadcasts with x's");
  if (arity >= 3) builder.Input("z", "third operand: x's dtype, a shape that broadcasts with x's");
  builder.Output("out", out == OutDtype::kBool ? "bool, contiguous, of the inputs' broadcast shape"
                                               : "x's dtype, contiguous, of the inputs' broadcast shape");
  builder.SetInferFn([out](InferContext& ctx) { return InferElementwise(ctx, out); });
  builder.Doc(doc);
  return builder;
}

absl::Status CheckScalarFits(const InferContext& ctx, const char* attr, double value, DataType dtype) {
  if (IsFloatingPoint(dtype)) return absl::OkStatus();
  if (dtype == DataType::kBool) {
    if (value == 0.0 || value == 1.0) return absl::OkStatus();
    return ctx.Error("attribute '", attr, "' = ", value, " is not a bool value (0 or 1) for a bool input");
  }
  // Integer dtypes: the range as doubles; both bounds are exact powers of two.
  const int bits = 8 * static_cast<int>(DataTypeSize(dtype));
  const bool is_signed = dtype != DataType::kUInt8;
  const double hi = std::ldexp(1.0, is_signed ? bits - 1 : bits);  // exclusive
  const double lo = is_signed ? -hi : 0.0;
  if (value != std::trunc(value) || !(value >= lo && value < hi)) {
    return ctx.Error("attribute '", attr, "' = ", value, " is not representable in ", DataTypeName(dtype),
                     " (a whole number in [", lo, ", ", hi, ") is needed); cast the tensor to a float dtype first");
  }
  return absl::OkStatus();
}

OpSchemaBuilder& ElementwiseScalarSchema(OpSchemaBuilder&& builder, OutDtype out, const char* doc) {
  builder.Input("x", "the tensor operand");
  builder.RequiredAttr<double>("other", "the scalar operand, converted to x's dtype (exactly, for integer dtypes)");
  builder.Output("out", out == OutDtype::kBool ? "bool, contiguous, of x's shape" : "x's dtype, contiguous, of x's shape");
  builder.SetInferFn([out](InferContext& ctx) {
    KPS_RETURN_IF_ERROR(CheckScalarFits(ctx, "other", ctx.Attr<double>("other"), ctx.input(0).dtype()));
    return InferElementwise(ctx, out);
  });
  builder.Doc(doc);
  return builder;
}

}  // namespace elementwise
}  // namespace kps
