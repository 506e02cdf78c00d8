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
#include "registry/kernel.h"
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
// count x rank int64s), and fills it in order: on the host (compaction_op.cc) and on the
// GPU (compaction_cuda.cu).
absl::Status CompactCpu(const CompactArgs& args, const std::function<absl::StatusOr<void*>(int64_t)>& allocate);
absl::Status CompactCuda(const CompactArgs& args, const std::function<absl::StatusOr<void*>(int64_t)>& allocate,
                         const Stream& stream);

}  // namespace compaction
}  // namespace kps

namespace kps {
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

// The device part of both ops: CompactOn<D>::Run(args, allocate, stream).
template <DeviceType D>
struct CompactOn;
template <>
struct CompactOn<DeviceType::kCpu> {
  static absl::Status Run(const CompactArgs& a, const std::function<absl::StatusOr<void*>(int64_t)>& allocate,
                          const Stream&) {
    return CompactCpu(a, allocate);
  }
};
template <>
struct CompactOn<DeviceType::kCuda> {
  static absl::Status Run(const CompactArgs& a, const std::function<absl::StatusOr<void*>(int64_t)>& allocate,
                          const Stream& stream) {
    return CompactCuda(a, allocate, stream);
  }
};

// The kernels of nonzero and masked_select on device D. The predicate is tested on its
// bits and values move as bits, so one class per element width serves every dtype
// (KPS_REGISTER_DEVICE_KERNELS_BY_WIDTH).
template <DeviceType D, typename Bits>
class NonzeroKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const Prepared p, PrepareNonzero(*ctx));
    CompactArgs a;
    a.pred = p.pred.raw_data();
    a.pred_size = static_cast<int>(DataTypeSize(p.pred.dtype()));
    a.pred_float = IsFloatingPoint(p.pred.dtype());
    a.n = p.pred.numel();
    a.dims = p.shape.dims();
    const int64_t rank = p.shape.rank();
    return CompactOn<D>::Run(
        a,
        [&](int64_t count) -> absl::StatusOr<void*> {
          KPS_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0, Shape{count, rank}, DataType::kInt64));
          return out->raw_data();
        },
        ctx->stream());
  }
};

template <DeviceType D, typename Bits>
class MaskedSelectKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const Prepared p, PrepareMaskedSelect(*ctx));
    CompactArgs a;
    a.pred = p.pred.raw_data();
    a.pred_size = 1;
    a.n = p.pred.numel();
    a.values = p.values.raw_data();
    a.value_size = static_cast<int>(DataTypeSize(p.values.dtype()));
    const DataType dtype = p.values.dtype();
    return CompactOn<D>::Run(
        a,
        [&](int64_t count) -> absl::StatusOr<void*> {
          KPS_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0, Shape{count}, dtype));
          return out->raw_data();
        },
        ctx->stream());
  }
};

}  // namespace compaction
}  // namespace kps
