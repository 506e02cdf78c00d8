// The scans' schema (ScanSchema: input, attributes, output inference by ScanRule) and
// shape. The ops themselves are registered, schema and kernels, by KPS_SCAN_OP lines in
// scan_cuda_*.cu.
#include <vector>

#include "ops/scan/scan_ops.h"
#include "registry/op_schema.h"

namespace kps {
namespace scan {

ScanShape MakeScanShape(const CallView& call, int dim) {
  ScanShape sh{LinesAlong(call.input(0).shape(), dim)};
  sh.exclusive = call.Attr<bool>("exclusive");
  sh.reverse = call.Attr<bool>("reverse");
  return sh;
}

namespace {

using Rule = ScanRule;

absl::Status InferScan(InferContext& ctx, Rule rule) {
  const Tensor& x = ctx.input(0);
  KPS_RETURN_IF_ERROR(ResolveDimAttr(ctx).status());
  switch (rule) {
    case Rule::kSumLike:
      ctx.SetOutput(0, x.shape(), IsFloatingPoint(x.dtype()) ? x.dtype() : DataType::kInt64);
      break;
    case Rule::kExtreme:
      ctx.SetOutput(0, x.shape(), x.dtype());
      ctx.SetOutput(1, x.shape(), DataType::kInt64);
      break;
    case Rule::kFloatOnly:
      if (!IsFloatingPoint(x.dtype())) {
        return ctx.Error("input 'x' has dtype ", DataTypeName(x.dtype()), "; ", ctx.schema().name(),
                         " needs a floating dtype (float16, bfloat16, float32, float64): cast x first");
      }
      ctx.SetOutput(0, x.shape(), x.dtype());
      break;
  }
  return absl::OkStatus();
}

}  // namespace

OpSchemaBuilder& ScanSchema(OpSchemaBuilder&& b, ScanRule rule) {
  b.Input("x", "the tensor to scan (contiguous or a strided view, rank <= 8)");
  if (rule == Rule::kExtreme) {
    b.Output("values", "x's dtype, contiguous, of x's shape: the running extreme");
    b.Output("indices", "int64: the position along dim of the element that supplied each value (ties: the latest)");
  } else {
    b.Output("out", rule == Rule::kSumLike ? "int64 for bool and integer x (wrapping), else x's dtype; x's shape"
                                           : "x's (floating) dtype, contiguous, of x's shape");
  }
  b.RequiredAttr<int64_t>("dim", "the dim to scan along, negative counting from the end");
  b.Attr<bool>("exclusive", false, "out[i] combines the elements before i only (the identity at the start)");
  b.Attr<bool>("reverse", false, "scan from the end of dim towards its start");
  b.SetInferFn([rule](InferContext& ctx) { return InferScan(ctx, rule); });
  if (rule == Rule::kFloatOnly) {
    b.Kernels({DeviceType::kCpu, DeviceType::kCuda},
              {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64});
  } else {
    b.Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes());
  }
  return b;
}


}  // namespace scan
}  // namespace kps
