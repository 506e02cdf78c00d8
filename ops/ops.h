// Typed convenience functions over the eager call API: kps::ops::Add(x, y) is
// kps::Call("add").Input("x", x).Input("y", y).RunOne().
#pragma once

#include "absl/status/statusor.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace kps {
namespace ops {

// x + alpha * y (same shape and dtype). `stream`: null means the device's default.
absl::StatusOr<Tensor> Add(const Tensor& x, const Tensor& y, double alpha = 1.0,
                           const Stream* stream = nullptr);
// x * y (same shape and dtype).
absl::StatusOr<Tensor> Mul(const Tensor& x, const Tensor& y, const Stream* stream = nullptr);
// A contiguous copy of x (of any layout) on x's device.
absl::StatusOr<Tensor> Contiguous(const Tensor& x, const Stream* stream = nullptr);

}  // namespace ops
}  // namespace kps
