// index_add and index_add_: the call's geometry and checks, shared by the schemas and
// CPU kernels (index_add_op.cc) and the CUDA kernels (index_add_cuda*.cu).
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "absl/status/statusor.h"
#include "functors/mp_type.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"

namespace kps {
namespace indexing {

// index_add is defined for every numeric dtype (not bool).
#define KPS_INDEX_ADD_FLOAT_CPP_TYPES ::kps::float16, ::kps::bfloat16, float, double
#define KPS_INDEX_ADD_INT_CPP_TYPES int8_t, uint8_t, int16_t, int32_t, int64_t

// x viewed as [outer, dim_size, inner] around `dim`; source as [outer, count, inner],
// count = the index's length: out[o, index[i], k] += alpha * source[o, i, k].
struct IndexAddGeometry {
  int dim = 0;
  int64_t outer = 1, dim_size = 0, inner = 1, count = 0;
};

// Checks the call's inputs (x, index, source) and attributes (dim, alpha) and returns
// the geometry; every error names the op and the argument.
absl::StatusOr<IndexAddGeometry> ResolveIndexAdd(const CallView& call);

// Sums accumulate in int64 for integers (wrapping when stored), in float for 16-bit
// floats, else in the dtype itself.
template <typename T>
using IndexAcc = std::conditional_t<std::is_integral_v<T>, int64_t, MPType<T>>;

// The error for index value `value` found at `position` (outside [0, dim_size)).
absl::Status BadIndexError(const CallView& call, int64_t position, int64_t value, const IndexAddGeometry& g);

// ---- CUDA helpers (index_add_sort.cu), shared by the dtype files --------------------

// *first_bad holds this while no bad index has been seen.
inline constexpr unsigned long long kNoBadIndex = ~0ull;

// keys[i] = index[i] as uint32 (0xFFFFFFFF where out of range), and, when `positions`
// is not null, positions[i] = i; atomicMin of the first out-of-range position into
// *first_bad. `index` is a contiguous int32 or int64 CUDA tensor of `count` elements.
absl::Status LaunchIndexPrep(const Tensor& index, int64_t count, int64_t dim_size, uint32_t* keys,
                             uint32_t* positions, unsigned long long* first_bad, cudaStream_t stream);
// Bytes of temporary storage SortIndexPairs needs for `count` pairs.
absl::StatusOr<size_t> SortIndexPairsTempBytes(int count, int end_bit);
// Stable radix sort (CUB) of (key, position) pairs by the low `end_bit` bits of key.
absl::Status SortIndexPairs(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out,
                            const uint32_t* positions_in, uint32_t* positions_out, int count, int end_bit,
                            cudaStream_t stream);
// start[k], end[k]: the run of key k in the sorted keys (both must start zeroed).
absl::Status LaunchSegmentBounds(const uint32_t* sorted_keys, int count, uint32_t dim_size, uint32_t* start,
                                 uint32_t* end, cudaStream_t stream);
// Waits for the stream, reads *first_bad, and returns BadIndexError for it if set.
absl::Status CheckIndexStatus(const CallView& call, const Tensor& index, const unsigned long long* first_bad,
                              const IndexAddGeometry& g, cudaStream_t stream);

}  // namespace indexing
}  // namespace kps
