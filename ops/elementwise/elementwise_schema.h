// The schema and inference shared by the one-line elementwise ops (elementwise_op.cuh).
#pragma once

#include "absl/status/status.h"
#include "registry/op_schema.h"

namespace kps {
namespace elementwise {

enum class OutDtype { kSameAsInput, kBool };

// Inputs share one dtype (else an error suggesting cast); the output has their broadcast
// shape and the input dtype or bool.
absl::Status InferElementwise(InferContext& ctx, OutDtype out);

// The schema of an elementwise op of `arity` inputs (x; x and y; x, y and z): one
// output, the inference above, and `doc`.
OpSchemaBuilder& ElementwiseSchema(OpSchemaBuilder&& builder, int arity, OutDtype out, const char* doc);

// OK when `value` (attribute `attr` of the call) converts to `dtype` exactly: any value
// for floating dtypes (rounded, overflow to inf), a whole number in range for integer
// dtypes, 0 or 1 for bool. Else an error naming the op, the attribute and the dtype,
// suggesting a cast of the tensor.
absl::Status CheckScalarFits(const InferContext& ctx, const char* attr, double value, DataType dtype);

// The scalar form of a binary op: input x, float attribute `other` (checked with
// CheckScalarFits against x's dtype), out = f(x, other) of x's shape.
OpSchemaBuilder& ElementwiseScalarSchema(OpSchemaBuilder&& builder, OutDtype out, const char* doc);

}  // namespace elementwise
}  // namespace kps
