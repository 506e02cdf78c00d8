// Schemas of the same-shape binary ops add and mul.
#include <cmath>

#include "ops/elementwise/binary_ops.h"
#include "registry/op_schema.h"

namespace kps {
namespace elementwise {

std::vector<DataType> AddMulDataTypes() {
  return {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
          DataType::kFloat64, DataType::kInt32,    DataType::kInt64};
}

namespace {

// Same dtype and shape in, same out. Broadcasting arrives with the full elementwise
// family; until then a shape mismatch is an error that says so.
absl::Status InferSameShapeBinary(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  if (x.dtype() != y.dtype()) {
    return ctx.Error("inputs 'x' (", DataTypeName(x.dtype()), ") and 'y' (", DataTypeName(y.dtype()),
                     ") have different dtypes; cast one first (mixed-dtype promotion is not done)");
  }
  if (x.shape() != y.shape()) {
    return ctx.Error("inputs 'x' ", x.shape().ToString(), " and 'y' ", y.shape().ToString(),
                     " have different shapes; broadcasting is not supported yet, so shapes must "
                     "match exactly");
  }
  ctx.SetOutput(0, x.shape(), x.dtype());
  return absl::OkStatus();
}

absl::Status InferAdd(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(InferSameShapeBinary(ctx));
  const double alpha = ctx.Attr<double>("alpha");
  if (IsIntegral(ctx.input(0).dtype()) && alpha != std::trunc(alpha)) {
    return ctx.Error("attribute 'alpha' = ", alpha, " must be a whole number for ",
                     DataTypeName(ctx.input(0).dtype()), " inputs");
  }
  return absl::OkStatus();
}

}  // namespace

KPS_REGISTER_OP("add")
    .Input("x", "first operand")
    .Input("y", "second operand: same shape and dtype as x")
    .Output("out", "x + alpha * y, contiguous")
    .Attr<double>("alpha", 1.0, "multiplier of y; a whole number for integer inputs")
    .SetInferFn(InferAdd)
    .RequireContiguousInputs()
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AddMulDataTypes())
    .Doc("Elementwise x + alpha * y. 16-bit floats compute in float; integers wrap on overflow.");

KPS_REGISTER_OP("mul")
    .Input("x", "first operand")
    .Input("y", "second operand: same shape and dtype as x")
    .Output("out", "x * y, contiguous")
    .SetInferFn(InferSameShapeBinary)
    .RequireContiguousInputs()
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AddMulDataTypes())
    .Doc("Elementwise x * y. 16-bit floats compute in float; integers wrap on overflow.");

}  // namespace elementwise
}  // namespace kps
