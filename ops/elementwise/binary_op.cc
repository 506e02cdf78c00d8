// Schemas of the same-shape binary ops add and mul.
#include <cmath>

#include "ops/elementwise/binary_ops.h"
#include "ops/elementwise/broadcast.h"
#include "registry/op_schema.h"

namespace kps {
namespace elementwise {

std::vector<DataType> AddMulDataTypes() {
  return {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kInt8,
          DataType::kUInt8,   DataType::kInt16,    DataType::kInt32,   DataType::kInt64};
}

namespace {

// One dtype in, the same out (mixed dtypes are an error that suggests a cast); the
// output has the inputs' NumPy broadcast shape. Inputs may be strided views.
absl::Status InferBroadcastBinary(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  if (x.dtype() != y.dtype()) {
    return ctx.Error("inputs 'x' (", DataTypeName(x.dtype()), ") and 'y' (", DataTypeName(y.dtype()),
                     ") have different dtypes; cast one first (mixed-dtype promotion is not done)");
  }
  KPS_ASSIGN_OR_RETURN(Shape shape, BroadcastShape(ctx));
  ctx.SetOutput(0, std::move(shape), x.dtype());
  return absl::OkStatus();
}

absl::Status InferAdd(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(InferBroadcastBinary(ctx));
  const double alpha = ctx.Attr<double>("alpha");
  if (IsIntegral(ctx.input(0).dtype()) && (alpha != std::trunc(alpha) || !(std::fabs(alpha) < 0x1p63))) {
    return ctx.Error("attribute 'alpha' = ", alpha, " must be a whole number for ",
                     DataTypeName(ctx.input(0).dtype()), " inputs");
  }
  return absl::OkStatus();
}

}  // namespace

KPS_REGISTER_OP("add")
    .Input("x", "first operand")
    .Input("y", "second operand: x's dtype, a shape that broadcasts with x's")
    .Output("out", "x + alpha * y, contiguous, of the broadcast shape")
    .Attr<double>("alpha", 1.0, "multiplier of y; a whole number for integer inputs")
    .SetInferFn(InferAdd)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AddMulDataTypes())
    .Doc("Elementwise x + alpha * y. 16-bit floats compute in float; integers wrap on overflow.");

KPS_REGISTER_OP("sub")
    .Input("x", "first operand")
    .Input("y", "second operand: x's dtype, a shape that broadcasts with x's")
    .Output("out", "x - alpha * y, contiguous, of the broadcast shape")
    .Attr<double>("alpha", 1.0, "multiplier of y; a whole number for integer inputs")
    .SetInferFn(InferAdd)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AddMulDataTypes())
    .Doc("Elementwise x - alpha * y. 16-bit floats compute in float; integers wrap on overflow.");

KPS_REGISTER_OP("mul")
    .Input("x", "first operand")
    .Input("y", "second operand: x's dtype, a shape that broadcasts with x's")
    .Output("out", "x * y, contiguous, of the broadcast shape")
    .SetInferFn(InferBroadcastBinary)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AddMulDataTypes())
    .Doc("Elementwise x * y. 16-bit floats compute in float; integers wrap on overflow.");

}  // namespace elementwise
}  // namespace kps
