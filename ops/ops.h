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
// A contiguous copy of x (of any layout) on x's device. (Kernels that need packed
// inputs call internal::AsContiguous, ops/common/contiguous.h, instead of this.)
absl::StatusOr<Tensor> Contiguous(const Tensor& x, const Stream* stream = nullptr);

// Generators (no inputs; ops/elementwise/generator_ops.cu). Each runs on `device`, on
// `stream` when given (then a stream of `device`; null means the device's default).
//
// A tensor of `shape` with every element `value` (integer dtypes: an integer in range;
// bool: 0 or 1).
absl::StatusOr<Tensor> Fill(const std::vector<int64_t>& shape, double value, DataType dtype = DataType::kFloat32,
                            DeviceType device = DeviceType::kCpu, const Stream* stream = nullptr);
// start, start + step, ... below end (NumPy's arange); any dtype but bool.
absl::StatusOr<Tensor> Arange(double start, double end, double step = 1.0, DataType dtype = DataType::kFloat32,
                              DeviceType device = DeviceType::kCpu, const Stream* stream = nullptr);
// Uniform values in [low, high) from the Philox stream (seed, offset) of functors/random.h.
absl::StatusOr<Tensor> Uniform(const std::vector<int64_t>& shape, double low, double high, uint64_t seed,
                               uint64_t offset = 0, DataType dtype = DataType::kFloat32,
                               DeviceType device = DeviceType::kCpu, const Stream* stream = nullptr);
// Normal values mean + stddev * z (Box-Muller on the Philox stream (seed, offset)).
absl::StatusOr<Tensor> Normal(const std::vector<int64_t>& shape, double mean, double stddev, uint64_t seed,
                              uint64_t offset = 0, DataType dtype = DataType::kFloat32,
                              DeviceType device = DeviceType::kCpu, const Stream* stream = nullptr);

}  // namespace ops
}  // namespace kps
