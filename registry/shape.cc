#include "registry/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "registry/checked_math.h"

namespace kps {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

bool IsValidShape(absl::Span<const int64_t> dims) {
  for (int64_t d : dims) {
    if (d < 0) return false;
  }
  int64_t extent = 0;
  return StridedExtent(dims.data(), dims.size(), &extent);
}

absl::Status ValidateShape(absl::Span<const int64_t> dims, const std::string& what) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": shape ", DimsToString(dims),
                                                     " has a negative dimension (", dims[i], " at index ", i, ")"));
    }
  }
  int64_t extent = 0;
  if (!StridedExtent(dims.data(), dims.size(), &extent)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": shape ", DimsToString(dims), " is too large: the product of its dims",
        " (zero dims counted as 1) exceeds 2^60 elements"));
  }
  return absl::OkStatus();
}

std::string Shape::ToString() const { return DimsToString(dims_); }

std::string DimsToString(absl::Span<const int64_t> dims) {
  return "[" + absl::StrJoin(dims, ", ") + "]";
}

DimVector ContiguousStrides(const Shape& shape) {
  DimVector strides(shape.rank());
  int64_t s = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

bool IsContiguous(const Shape& shape, absl::Span<const int64_t> strides) {
  int64_t expected = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    if (shape[i] == 1) continue;
    if (shape[i] == 0) return true;  // no elements: any layout is contiguous
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

}  // namespace kps
