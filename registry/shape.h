// Shape and strides of a tensor, in elements.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

namespace kps {

// Dims stay inline up to rank 6, so building a shape on the eager path does not allocate.
using DimVector = absl::InlinedVector<int64_t, 6>;

class Shape {
 public:
  Shape() = default;  // rank 0: a scalar, one element.
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(absl::Span<const int64_t> dims) : dims_(dims.begin(), dims.end()) {}
  explicit Shape(const std::vector<int64_t>& dims) : dims_(dims.begin(), dims.end()) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  const DimVector& dims() const { return dims_; }
  // Product of the dims (1 for rank 0).
  int64_t numel() const;
  bool operator==(const Shape& other) const { return dims_ == other.dims_; }
  bool operator!=(const Shape& other) const { return !(*this == other); }
  // "[2, 3, 4]"; "[]" for a scalar.
  std::string ToString() const;

 private:
  DimVector dims_;
};

// The one rule for shapes, applied wherever a shape enters KPS (Tensor::Empty, views,
// inferred outputs, .npy headers, --shape, generator and scale attributes): every dim is
// >= 0 and the product of the dims, zero dims counted as one, is at most kMaxNumel (2^60).
// A zero dim makes a tensor empty but does not excuse the other dims: their product sizes
// the strides. On failure the message starts with `what` (e.g. "op 'add': output 'out'").
absl::Status ValidateShape(absl::Span<const int64_t> dims, const std::string& what);
// The same rule as a test, for hot paths that build the message only on failure.
bool IsValidShape(absl::Span<const int64_t> dims);
inline absl::Status ValidateShape(const Shape& shape, const std::string& what) {
  return ValidateShape(absl::MakeConstSpan(shape.dims()), what);
}

// Row-major strides of a contiguous tensor of `shape`.
DimVector ContiguousStrides(const Shape& shape);
// True when `strides` lay out `shape` contiguously (dims of size 1 may have any stride).
bool IsContiguous(const Shape& shape, absl::Span<const int64_t> strides);
std::string DimsToString(absl::Span<const int64_t> dims);

}  // namespace kps
