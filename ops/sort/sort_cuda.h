// CUDA sorting of the lines of a tensor along one dim (internal to ops/sort): the
// entry points the sort, argsort and topk kernels share.
//
// Strategies, by line length L:
//   L <= 4096: one kernel, radix keys with the line position as payload
//              (sort_block_cuda.cu): a thread per line (a bitonic network in
//              registers) for many lines of up to 32; a warp per line with the block
//              Sort primitive (bitonic, registers) up to 128; a block per line with
//              KPS's or CUB's block radix sort from 129 (4x faster than the bitonic
//              network at 4096);
//   longer:    a radix sort over the whole device (sort_radix_cuda.cu). One line of 1- to
//              4-byte keys, fewer than 2^28: KPS's onesweep radix sort with the key
//              encode and decode fused into its passes (sort_onesweep.cuh); one line
//              otherwise: CUB's device radix sort over the keys with int32 positions
//              (int64 positions and a 64-bit count past 2^31 - 1 elements: one line
//              of any length sorts; several lines that long are Unimplemented).
//              A few long lines (at most kPerLineMaxLines, each at least
//              kPerLineMinKeys times the line count long) sort one by one in the same
//              way, each with the whole GPU (the onesweep needs contiguous lines, else
//              CUB's per line); more or shorter lines go to CUB's segmented radix sort,
//              one launch for all lines but one block per line.
// Both order by (key, position), so every result is the stable order, the same for any
// launch shape.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "ops/common/axis.h"
#include "registry/data_type.h"
#include "registry/stream.h"

namespace kps {
namespace sort {

// A contiguous tensor's lines along one dim (AxisLines: element (o, p, i) lives at
// (o * length + p) * inner + i), with its elements. Outputs use the same layout.
struct Lines : AxisLines {
  const void* data = nullptr;
  DataType dtype = DataType::kFloat32;
};

// Lines shorter than this sort in one block-sort kernel; longer ones by radix sort.
inline constexpr int64_t kMaxBlockSortLength = 4096;

// The default limits of sorting a few long lines one by one (each line by a device-wide
// sort) instead of CUB's segmented sort, whose one block per line leaves most SMs idle
// when the lines are few: at most kPerLineMaxLines lines (KPS_TUNE sort.per_line; 0:
// never), each of at least kPerLineMinKeys * count elements (sort.per_line_keys), so that
// a line's own sort outlasts its few launches (about 10-30 us). Guesses that await
// measurement on a GPU.
inline constexpr int64_t kPerLineMaxLines = 16;
inline constexpr int64_t kPerLineMinKeys = 4096;

// Sorts every line: values (x's dtype; may be null) and int64 positions (may be null).
absl::Status SortLinesCuda(const Lines& x, bool descending, void* values, int64_t* indices, const Stream& stream);

// The radix-sort half of SortLinesCuda: lines of any length up to 2^31 - 1, and one line
// (x.count() == 1) of any length beyond; several lines longer than 2^31 - 1 are
// Unimplemented.
absl::Status RadixSortLinesCuda(const Lines& x, bool descending, void* values, int64_t* indices,
                                const Stream& stream);

// The k first of each line in sort order (largest first when `largest`), ties to the
// lower position; `sorted` = false lists them in ascending position instead. Outputs
// are [outer, k, inner].
absl::Status TopkLinesCuda(const Lines& x, int64_t k, bool largest, bool sorted, void* values, int64_t* indices,
                           const Stream& stream);

}  // namespace sort
}  // namespace kps
