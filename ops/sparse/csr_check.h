// The CSR checks that the sparse and graph ops share: what a malformed matrix is, the
// Status that names its first fault, and the CPU check (the CUDA check, a kernel over
// rows and entries reporting the first fault through one atomicMin, is in
// convert_cuda.cu).
#pragma once

#include <cstdint>
#include <string>

#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace sparse {

// What a check asks of the matrix beyond the CSR basics (indptr starts at 0, never
// decreases, ends at nnz; every column in [0, n)).
struct CsrRules {
  int64_t n = 0;              // the column count
  bool sorted = false;        // columns strictly increasing in each row (so no duplicates)
  bool no_diagonal = false;   // no entry (r, r): a graph without self loops
  const char* n_from = "";    // where n comes from, for the message ("attribute 'num_cols'")
};

// A fault, in the order the checks run; the smallest (kind, position) is reported.
enum class CsrFault : int {
  kBadStart = 0,     // indptr[0] != 0
  kDecreasing = 1,   // indptr[pos] < indptr[pos - 1]
  kBadEnd = 2,       // indptr[m] != nnz
  kColumnRange = 3,  // indices[pos] outside [0, n)
  kUnsorted = 4,     // indices[pos] <= indices[pos - 1] within a row
  kDiagonal = 5,     // indices[pos] == its row
};

// The Status of a fault: `value` is the offending indptr or indices entry, `row` the
// row of an entry fault.
absl::Status CsrFaultStatus(const CallView& call, CsrFault kind, int64_t pos, int64_t value, int64_t row,
                            int64_t m, int64_t nnz, const CsrRules& rules);

// Checks a CPU CSR matrix (indptr of P, indices of I) against `rules`.
template <typename P, typename I>
absl::Status CheckCsrCpu(const CallView& call, const P* ptr, int64_t m, const I* idx, int64_t nnz,
                         const CsrRules& rules) {
  if (ptr[0] != 0) return CsrFaultStatus(call, CsrFault::kBadStart, 0, static_cast<int64_t>(ptr[0]), 0, m, nnz, rules);
  for (int64_t r = 0; r < m; ++r) {
    if (ptr[r + 1] < ptr[r]) {
      return CsrFaultStatus(call, CsrFault::kDecreasing, r + 1, static_cast<int64_t>(ptr[r + 1]), 0, m, nnz, rules);
    }
  }
  if (static_cast<int64_t>(ptr[m]) != nnz) {
    return CsrFaultStatus(call, CsrFault::kBadEnd, m, static_cast<int64_t>(ptr[m]), 0, m, nnz, rules);
  }
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t k = static_cast<int64_t>(ptr[r]); k < static_cast<int64_t>(ptr[r + 1]); ++k) {
      const int64_t c = static_cast<int64_t>(idx[k]);
      if (c < 0 || c >= rules.n) return CsrFaultStatus(call, CsrFault::kColumnRange, k, c, r, m, nnz, rules);
      if (rules.sorted && k > static_cast<int64_t>(ptr[r]) && c <= static_cast<int64_t>(idx[k - 1])) {
        return CsrFaultStatus(call, CsrFault::kUnsorted, k, c, r, m, nnz, rules);
      }
      if (rules.no_diagonal && c == r) return CsrFaultStatus(call, CsrFault::kDiagonal, k, c, r, m, nnz, rules);
    }
  }
  return absl::OkStatus();
}

// The same for tensors on either device (CPU: CheckCsrCpu; CUDA: one kernel, then a wait
// for its verdict). indptr and indices are contiguous, int32 or int64 each.
absl::Status CheckCsr(const KernelContext& ctx, const Tensor& indptr, const Tensor& indices, const CsrRules& rules);

}  // namespace sparse
}  // namespace kps
