// Reading Matrix Market files (.mtx, the format of the SuiteSparse collection) into the
// three tensors of KPS's CSR convention (docs/sparse.md):
//
//   absl::StatusOr<kps::io::CsrMatrix> a = kps::io::ReadMatrixMarket("pores_1.mtx");
//   kps::Call("spmv").Input("indptr", a->indptr).Input("indices", a->indices)
//       .Input("values", a->values).Input("x", x).Run();
//
// Supported: the coordinate format with real, integer or pattern fields and general,
// symmetric or skew-symmetric symmetry (a symmetric file stores one triangle; the other
// is mirrored, the diagonal once). Entries are sorted by row, then column, within each
// row; duplicate entries are summed. Not supported, each with an error naming it: the
// array (dense) format and complex fields.
//
// Files are untrusted input: sizes are checked (entry count, dimensions below 2^31 by
// default) before anything is allocated, every entry's row and column against the
// header, and text from the file reaches an error message only through QuoteForMessage.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "registry/tensor.h"

namespace kps {
namespace io {

// A CSR matrix on the CPU: indptr [rows + 1] int64, indices [nnz] int32 (int64 when the
// column count needs it), values [nnz] float64 (undefined for a pattern file).
struct CsrMatrix {
  int64_t rows = 0, cols = 0;
  Tensor indptr, indices, values;
  bool symmetric = false;  // stored as one triangle in the file
};

// Parses `text`, the contents of a Matrix Market file; `name` names it in errors.
absl::StatusOr<CsrMatrix> ParseMatrixMarket(absl::string_view text, const std::string& name);

// Reads and parses the file at `path`.
absl::StatusOr<CsrMatrix> ReadMatrixMarket(const std::string& path);

}  // namespace io
}  // namespace kps
