// The eager call API: run an op by name.
//
//   absl::StatusOr<std::vector<Tensor>> out =
//       kps::Call("add").Input("x", a).Input("y", b).Attr("alpha", 2.0).OnStream(s).Run();
//
// Run() validates the call against the op's schema (input names and count, attribute
// names, types and required values, devices, contiguity), infers and allocates the
// outputs on the call's stream, looks up the kernel (cached per op), and launches it.
// All CUDA tensors of a call are on one GPU (cuda:N); the kernel runs with that GPU
// current, and the caller's current device is restored when Run() returns.
// Kernels never synchronize: outputs are ready once the stream reaches them.
#pragma once

#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "registry/attr.h"
#include "registry/op_schema.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace kps {

class Call {
 public:
  explicit Call(absl::string_view op_name);

  // Binds input `name`. Errors (unknown name, bound twice) surface from Run().
  Call& Input(absl::string_view name, const Tensor& tensor);
  // Writes output `name` into `tensor` instead of allocating it (like PyTorch's out=):
  // it must be contiguous, on the call's device, of the inferred shape and dtype. Saves
  // the allocation on the eager path. Overlap with an input is the caller's affair:
  // elementwise ops allow `out` to be exactly one of their inputs (in place).
  Call& Output(absl::string_view name, const Tensor& tensor);
  // Sets attribute `name`. Integers convert to float attributes; nothing else converts.
  template <typename T>
  Call& Attr(absl::string_view name, T&& value) {
    return SetAttr(name, MakeAttrValue(std::forward<T>(value)));
  }
  Call& SetAttr(absl::string_view name, AttrValue value);
  // The stream to run on (default: the default stream of the inputs' device).
  Call& OnStream(const Stream& stream);
  // The device, for ops without inputs (default: the inputs' device, else the CPU).
  // Device(kCuda, 1) runs on GPU 1; a plain kCuda on the stream's GPU, else the current one.
  Call& OnDevice(Device device);

  absl::StatusOr<std::vector<Tensor>> Run();
  // What Run() would make, without allocating or launching: each output's shape and
  // dtype after the same checks (a `dynamic` output's shape depends on the input values
  // and is known only once the kernel runs). Reads no input data, so inputs may be views
  // of memory that holds none (shape inference for tracing frameworks).
  struct OutputSpec {
    Shape shape;
    DataType dtype;
    bool dynamic = false;
  };
  absl::StatusOr<std::vector<OutputSpec>> Infer();
  // Run() for single-output ops.
  absl::StatusOr<Tensor> RunOne();

 private:
  const OpSchema* schema_ = nullptr;
  absl::Status error_;  // the first problem found while building
  absl::InlinedVector<Tensor, 4> inputs_;
  absl::InlinedVector<Tensor, 1> given_outputs_;  // empty, or one slot per output
  absl::InlinedVector<AttrValue, 4> attr_values_;
  absl::InlinedVector<int, 4> attr_slots_;  // schema index of each attr_values_ entry
  Stream stream_;
  bool stream_set_ = false;
  bool device_set_ = false;
  Device device_;
};

}  // namespace kps
