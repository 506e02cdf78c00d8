// conv1d: the call's geometry, shared by the schema and CPU kernel (conv1d_op.cc) and
// the CUDA kernels (conv1d_cuda.cu).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "functors/mp_type.h"
#include "registry/op_schema.h"

namespace kps {
namespace conv {

#define KPS_CONV1D_CPP_TYPES KPS_FLOAT_CPP_TYPES

// out[i] = full[i + offset], i < length, where full[k] = sum_j w[j] * x[k - j] over the j
// with 0 <= j < m and 0 <= k - j < n (true convolution: the filter is flipped, as in
// numpy.convolve). full: length n + m - 1, offset 0; same: max(n, m), offset
// (min(n, m) - 1) / 2 (numpy's centring); valid: max(n, m) - min(n, m) + 1, offset
// min(n, m) - 1. An empty x or w gives an empty output in every mode.
struct Conv1dGeometry {
  int64_t n = 0, m = 0, length = 0, offset = 0;
};

// Checks the call (1-D x and w of one floating dtype; mode full/same/valid).
absl::StatusOr<Conv1dGeometry> ResolveConv1d(const CallView& call);

}  // namespace conv
}  // namespace kps
