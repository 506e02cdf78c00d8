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

// The schema of an elementwise op of `arity` inputs (x, or x and y): one output, the
// inference above, and `doc`.
OpSchemaBuilder& ElementwiseSchema(OpSchemaBuilder&& builder, int arity, OutDtype out, const char* doc);

}  // namespace elementwise
}  // namespace kps
