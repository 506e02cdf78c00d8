#include "ops/elementwise/broadcast.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "registry/checked_math.h"

namespace kps {
namespace elementwise {

absl::StatusOr<Shape> BroadcastShape(const CallView& call) {
  DimVector out;
  int first = -1;  // the input whose dims `out` has so far, for the message
  for (int i = 0; i < call.num_inputs(); ++i) {
    const Tensor& t = call.input(i);
    if (!t.defined()) continue;
    const DimVector& dims = t.shape().dims();
    if (first < 0) {
      out = dims;
      first = i;
      continue;
    }
    const int rank = std::max<int>(out.size(), dims.size());
    DimVector merged(rank);
    for (int d = 1; d <= rank; ++d) {  // from the innermost dim
      const int64_t a = d <= static_cast<int>(out.size()) ? out[out.size() - d] : 1;
      const int64_t b = d <= static_cast<int>(dims.size()) ? dims[dims.size() - d] : 1;
      if (a != b && a != 1 && b != 1) {
        return call.Error("inputs '", call.schema().inputs()[first].name, "' ", DimsToString(out), " and '",
                          call.schema().inputs()[i].name, "' ", t.shape().ToString(),
                          " do not broadcast: dim -", d, " is ", a, " vs ", b);
      }
      merged[rank - d] = a == 1 ? b : a;
    }
    out = std::move(merged);
  }
  // Small inputs can broadcast to more elements than int64 counts ([2^32, 1] and [1, 2^32]):
  // refused here, before a kernel sizes anything from it, also for dynamic outputs.
  if (!IsValidShape(out)) {
    return ValidateShape(out, absl::StrCat("op '", call.schema().name(), "': the broadcast of its inputs"));
  }
  return Shape(absl::MakeConstSpan(out));
}

bool ElementwiseLayout::AllLikeOutput() const {
  for (int k = 1; k < num_operands; ++k) {
    if (strides[k] != strides[0]) return false;
  }
  return true;
}

ElementwiseLayout MakeElementwiseLayout(const Shape& out_shape, absl::Span<const Tensor* const> inputs) {
  ElementwiseLayout l;
  l.num_operands = 1 + static_cast<int>(inputs.size());
  const int rank = out_shape.rank();
  const DimVector out_strides = ContiguousStrides(out_shape);
  // Expand every operand to the output's rank (leading and size-1 dims: stride 0).
  std::array<DimVector, kMaxElementwiseInputs + 1> full;
  full[0] = out_strides;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = *inputs[k];
    DimVector s(rank, 0);
    const int offset = rank - t.rank();
    for (int d = 0; d < t.rank(); ++d) {
      s[offset + d] = t.shape()[d] == 1 ? 0 : t.strides()[d];
    }
    full[k + 1] = std::move(s);
  }
  // Keep dims of size > 1, merging each into the previous kept one when every operand
  // steps through the pair as one dim.
  for (int d = 0; d < rank; ++d) {
    const int64_t size = out_shape[d];
    if (size == 1) continue;
    bool merge = !l.dims.empty();
    for (int k = 0; merge && k < l.num_operands; ++k) {
      // A view's stride times a dim can exceed int64 (a huge stride over a dim the view
      // never steps through to its end); such a pair never merges.
      int64_t step = 0;
      merge = !MulOverflow(full[k][d], size, &step) && l.strides[k].back() == step;
    }
    if (merge) {
      l.dims.back() *= size;
      for (int k = 0; k < l.num_operands; ++k) l.strides[k].back() = full[k][d];
    } else {
      l.dims.push_back(size);
      for (int k = 0; k < l.num_operands; ++k) l.strides[k].push_back(full[k][d]);
    }
  }
  return l;
}

}  // namespace elementwise
}  // namespace kps
