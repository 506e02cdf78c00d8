// Stream compaction (nonzero, masked_select): the pieces the CPU and CUDA kernels share.
//
// Both ops keep the elements whose predicate is non-zero, in row-major order: nonzero's
// predicate is x itself and it writes each kept element's coordinates; masked_select's
// is the mask and it writes x's value. The predicate is tested on the element's bits,
// so one kernel serves every dtype: integers and bool are non-zero when any bit is set,
// floats when any bit but the sign is (NaN counts, -0.0 does not), as `x != 0` says.
//
// The output size depends on the values, so both outputs are dynamic (the kernel
// allocates them once it has counted); on CUDA that means one stream synchronization
// per call, to bring the count to the host.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "registry/data_type.h"
#include "registry/shape.h"
#include "registry/stream.h"
#include "registry/tensor.h"

#ifdef __CUDACC__
#define KPS_COMPACTION_HD __host__ __device__
#else
#define KPS_COMPACTION_HD
#endif

namespace kps {
namespace compaction {

// True when the `size`-byte element with these bits is non-zero.
KPS_COMPACTION_HD inline bool BitsNonzero(uint64_t bits, int size, bool is_float) {
  if (!is_float) return bits != 0;
  const uint64_t magnitude = size == 8 ? ~(uint64_t{1} << 63) : (uint64_t{1} << (size * 8 - 1)) - 1;
  return (bits & magnitude) != 0;
}

// A view of t broadcast to `shape` (stride 0 along the broadcast dims); t must broadcast.
absl::StatusOr<Tensor> ExpandTo(const Tensor& t, const Shape& shape);

// What CompactCuda writes per kept element e (a row-major position in [0, n)).
struct CompactArgs {
  const void* pred = nullptr;  // contiguous, n elements
  int pred_size = 1;
  bool pred_float = false;
  int64_t n = 0;
  const void* values = nullptr;  // contiguous, n elements of value_size bytes: masked_select
  int value_size = 0;
  DimVector dims;  // else the coordinates of e in this shape, rank() int64s each: nonzero
};

// Counts the kept elements, calls allocate(count) for the output (count values, or
// count x rank int64s), and fills it in order.
absl::Status CompactCuda(const CompactArgs& args, const std::function<absl::StatusOr<void*>(int64_t)>& allocate,
                         const Stream& stream);

}  // namespace compaction
}  // namespace kps

namespace kps {
class KernelContext;
namespace compaction {

// A call's inputs made ready for the kernels: a contiguous predicate (nonzero: x;
// masked_select: the mask broadcast to the common shape) and, for masked_select, x
// broadcast to it too, contiguous.
struct Prepared {
  Tensor pred;
  Tensor values;  // undefined for nonzero
  Shape shape;
};
absl::StatusOr<Prepared> PrepareNonzero(const KernelContext& ctx);
absl::StatusOr<Prepared> PrepareMaskedSelect(const KernelContext& ctx);

}  // namespace compaction
}  // namespace kps
