// Packing inputs for kernels that need them contiguous, without the eager API: the copy
// op's own loops (ops/elementwise/copy_*), called directly.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace kps {
namespace internal {

// Copies x (any layout, rank <= 8) into `out`: contiguous, x's shape and dtype, on x's
// device. CUDA copies are ordered on `stream`.
absl::Status CopyInto(const Tensor& x, Tensor& out, const Stream& stream);

// x itself when it is contiguous, else a contiguous copy of it allocated and written on
// `stream`: what a kernel that needs packed inputs calls on each of them.
absl::StatusOr<Tensor> AsContiguous(const Tensor& x, const Stream& stream);

// The CPU and CUDA halves of CopyInto (copy_cuda.cu).
absl::Status CopyIntoCpu(const Tensor& x, Tensor& out);
absl::Status CopyIntoCuda(const Tensor& x, Tensor& out, const Stream& stream);

}  // namespace internal
}  // namespace kps
