// NumPy broadcasting for elementwise ops: the output shape of several inputs, and the
// merged loop layout (dims plus each operand's strides) that CPU loops and CUDA
// broadcast configs are built from.
#pragma once

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "registry/op_schema.h"
#include "registry/shape.h"
#include "registry/tensor.h"

namespace kps {
namespace elementwise {

// At most this many inputs per elementwise op (where/addcmul take three).
inline constexpr int kMaxElementwiseInputs = 4;

// The broadcast shape of the call's defined inputs (NumPy rules: align trailing dims;
// each pair must match or one be 1). The error names the op, both inputs and the
// dimension: "op 'add': inputs 'x' [2, 3] and 'y' [4] do not broadcast: dim -1 is 3 vs 4".
absl::StatusOr<Shape> BroadcastShape(const CallView& call);

// The loop over an elementwise op's output, reduced to the fewest dims: broadcast dims
// get stride 0, size-1 dims are dropped, and neighbouring dims merge wherever every
// operand steps through them as one (stride[d] == stride[d + 1] * dims[d + 1]). Operand 0
// is the (contiguous) output, 1.. the inputs, in element strides.
struct ElementwiseLayout {
  int num_operands = 0;
  DimVector dims;  // innermost last; empty for a single element
  std::array<DimVector, kMaxElementwiseInputs + 1> strides;

  int rank() const { return static_cast<int>(dims.size()); }
  // True when every input walks exactly like the output (contiguous, same shape): the
  // vectorized same-shape path applies.
  bool AllLikeOutput() const;
};

// Layout of `inputs` broadcast to `out_shape` (inputs must broadcast to it).
ElementwiseLayout MakeElementwiseLayout(const Shape& out_shape, absl::Span<const Tensor* const> inputs);

}  // namespace elementwise
}  // namespace kps
