// The kernels of the 1-D count's device exchange (DistributedCountOptions::device_exchange),
// defined in dist/triangle_cuda.cu for dist/triangle.cc; internal to the distributed count.
//
// Every function queues its kernel on `stream` and returns without waiting. The rank's block
// is `ptr` (int64 [rows + 1], from 0, relative to the first row `rows_begin`) and `indices`
// (the partition's index dtype, int32 or int64); ids exchanged are in that dtype too, lengths,
// offsets and counts are int64. A fault word is one unsigned 64-bit value that the caller
// sets to all ones (kNoFault); a kernel that finds a bad value lowers it to the smallest
// position found bad (atomicMin), so one read per step tells whether a peer sent something
// wrong and which position, from which the caller names the rank.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace kps {
namespace dist {
namespace gpu {

inline constexpr uint64_t kNoFault = ~uint64_t{0};

// mark[v] = 1 for each entry v of `indices` in [0, n) (mark: n bytes, zeroed by the caller);
// an entry outside lowers *fault to its position.
absl::Status MarkHeads(const Tensor& indices, int64_t n, uint8_t* mark, unsigned long long* fault,
                       const Stream& stream);

// Over the block's rows: roots[0] += the rows with a head in [rows_begin, rows_end) (1-D's
// local roots), roots[1] += the rows with a head outside (its remote roots); roots holds two
// zeroed words. A row whose ptr range is not inside [0, nnz) or decreases lowers *fault to
// its index (the block is malformed) and is skipped.
absl::Status CountRootKinds(const Tensor& ptr, const Tensor& indices, int64_t rows_begin, int64_t rows_end,
                            unsigned long long* roots, unsigned long long* fault, const Stream& stream);

// out[i] = in[i] as int32 (ids below 2^31) for i in [0, count).
absl::Status NarrowToInt32(const int64_t* in, int64_t count, int32_t* out, const Stream& stream);

// counts[r] = how many of the ascending ids[0, count) lie in [splits[r], splits[r + 1]), for
// r in [0, ranks) (splits: ranks + 1 device values).
absl::Status CountPerOwner(const int64_t* ids, int64_t count, const int64_t* splits, int ranks, int64_t* counts,
                           const Stream& stream);

// lengths[i] = the length of row asked[i] of the block (asked: the index dtype, [count]),
// lengths[count] = 0 (so an exclusive cumsum of count + 1 values ends with the total). An id
// outside [rows_begin, rows_end) gets length 0 and lowers *fault to its position.
absl::Status AskedRowLengths(const Tensor& asked, const Tensor& ptr, int64_t rows_begin, int64_t rows_end,
                             int64_t* lengths, unsigned long long* fault, const Stream& stream);

// sums[r] = offsets[at + counts[r]] - offsets[at], at = counts[0] + ... + counts[r - 1]: the
// entries of the rows of each rank's block of ids (offsets: an exclusive cumsum over them,
// with its total last). One thread: ranks is small.
absl::Status SumsPerRank(const int64_t* offsets, const int64_t* counts, int ranks, int64_t* sums,
                         const Stream& stream);

// The pieces served: row asked[i] of the block copied to served[offsets[i] ...], a warp per
// row (served: the index dtype). Ids outside [rows_begin, rows_end) are skipped (the caller
// has refused them through AskedRowLengths' fault).
absl::Status GatherAskedRows(const Tensor& asked, const Tensor& ptr, const Tensor& indices, int64_t rows_begin,
                             int64_t rows_end, const int64_t* offsets, const Tensor& served, const Stream& stream);

// out[j] = lengths[j] for j in [0, count), out[count] = 0. A length outside [0, n - 1] (a row
// of an oriented graph has at most n - 1 entries) becomes 0 and lowers *fault to its position.
absl::Status CheckedLengths(const int64_t* lengths, int64_t count, int64_t n, int64_t* out,
                            unsigned long long* fault, const Stream& stream);

// row_lengths[rows_begin + u] = the length of the block's row u, row_lengths[ids[j]] =
// offsets[j + 1] - offsets[j] for the fetched rows j in [0, count) (ids: int64, in [0, n),
// none of the block's, no repeats). row_lengths is zeroed by the caller.
absl::Status ScatterRowLengths(const Tensor& ptr, int64_t rows_begin, const int64_t* ids, const int64_t* offsets,
                               int64_t count, int64_t* row_lengths, const Stream& stream);

// The entries of the counted CSR `out` (int32 or int64) over [0, n) with row starts `indptr`
// (int64 [n + 1]): a warp per row copies the block's row u to out[indptr[rows_begin + u] ...]
// and the fetched row j (fetched[offsets[j] .. offsets[j + 1]), the index dtype) to
// out[indptr[ids[j]] ...]. A fetched entry outside [0, n) lowers *fault to its position in
// `fetched`.
absl::Status AssembleRows(const Tensor& ptr, const Tensor& indices, int64_t rows_begin, const int64_t* ids,
                          const int64_t* offsets, const Tensor& fetched, int64_t count, const int64_t* indptr,
                          int64_t n, const Tensor& out, unsigned long long* fault, const Stream& stream);

}  // namespace gpu
}  // namespace dist
}  // namespace kps
