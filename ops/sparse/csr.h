// kps::SparseCsr: a CSR matrix as the three tensors KPS's sparse ops take (docs/sparse.md),
// with its shape, and the common calls on it. Each call is one op called by name on the
// matrix's device (the CPU or CUDA, on the given stream or the device's default one), so
// the type adds no kernel of its own:
//
//   KPS_ASSIGN_OR_RETURN(kps::SparseCsr a, kps::SparseCsr::FromCoo(rows, cols, values, m, n));
//   KPS_RETURN_IF_ERROR(a.Validate());
//   KPS_ASSIGN_OR_RETURN(kps::Tensor y, a.Matvec(x));       // spmv
//   KPS_ASSIGN_OR_RETURN(kps::SparseCsr t, a.Transpose());  // csr_transpose
//
// io::CsrMatrix (a Matrix Market file) converts by its fields:
// SparseCsr{m.rows, m.cols, m.indptr, m.indices, m.values}.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace kps {

struct SparseCsr {
  int64_t rows = 0, cols = 0;
  Tensor indptr;   // [rows + 1], int32 or int64
  Tensor indices;  // [nnz], int32 or int64, each in [0, cols)
  Tensor values;   // [nnz]; undefined for a pattern matrix (every stored entry 1)

  int64_t nnz() const { return indices.numel(); }
  DeviceType device() const { return indptr.device(); }

  // The matrix of three existing tensors; checks their ranks, dtypes and lengths (cheap),
  // not their contents (Validate does).
  static absl::StatusOr<SparseCsr> FromTensors(Tensor indptr, Tensor indices, Tensor values, int64_t cols);

  // coo_to_csr: entries (rows[i], cols[i]) in any order, duplicates summed (or kept);
  // `values` may be undefined (a pattern matrix).
  static absl::StatusOr<SparseCsr> FromCoo(const Tensor& row_ids, const Tensor& col_ids, const Tensor& values,
                                           int64_t rows, int64_t cols, bool sum_duplicates = true,
                                           const Stream* stream = nullptr);

  // csr_validate: indptr from 0, non-decreasing, ending at nnz; columns in [0, cols); with
  // `sorted`, strictly increasing columns in each row. On CUDA this waits for the device.
  absl::Status Validate(bool sorted = false, const Stream* stream = nullptr) const;

  // csr_transpose: the cols x rows transpose (int64 indptr).
  absl::StatusOr<SparseCsr> Transpose(const Stream* stream = nullptr) const;

  // spmv: A x for x [cols] (plus_times; call the op by name for the other semirings,
  // alpha, beta and y). check=false: Validate once instead of at every product.
  absl::StatusOr<Tensor> Matvec(const Tensor& x, bool check = true, const Stream* stream = nullptr) const;

  // spmm: A b for b [cols, k].
  absl::StatusOr<Tensor> Matmul(const Tensor& b, bool check = true, const Stream* stream = nullptr) const;

  // The same matrix on `device` (copies ordered on `stream` when given).
  absl::StatusOr<SparseCsr> To(DeviceType device, const Stream* stream = nullptr) const;
};

}  // namespace kps
