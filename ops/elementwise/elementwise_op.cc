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
  builder.Output("out", out == OutDtype::kBool ? "bool, contiguous, of the inputs' broadcast shape"
                                               : "x's dtype, contiguous, of the inputs' broadcast shape");
  builder.SetInferFn([out](InferContext& ctx) { return InferElementwise(ctx, out); });
  builder.Doc(doc);
  return builder;
}

}  // namespace elementwise
}  // namespace kps
