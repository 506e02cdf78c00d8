// Schemas and kernel registrations of sort, argsort and topk. The kernels are in
// sort_ops.h (with their CPU parts); the CUDA line sorts they call are in
// sort_block_cuda.cu (lines that fit a block), sort_radix_cuda.cu (longer lines) and
// topk_cuda.cu (selection without a full sort for k <= 16); sort_cuda.h says how.
//
// Order: NaN is the largest value (NumPy's rule): last when ascending, first when
// descending. Sorts are stable in both directions (equal values keep their order, -0.0
// and +0.0 are equal), so `stable` is accepted and always honoured. topk takes the k
// largest (or smallest) in that order: ties go to the lower index, and `sorted` = false
// returns the same k elements in ascending index order instead. The CPU kernels compare
// in the element type (float for the 16-bit floats), never through double, which would
// merge int64 values past 2^53; the CUDA kernels compare exact radix keys (sort_keys.cuh).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "functors/mp_type.h"
#include "ops/common/axis.h"
#include "registry/data_type.h"
#include "ops/common/contiguous.h"
#include "ops/sort/sort_ops.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"

namespace kps {
namespace sort {
namespace {

int64_t DimSize(const Tensor& x, int dim) { return x.rank() == 0 ? 1 : x.shape()[dim]; }

absl::Status InferSort(InferContext& ctx, bool with_values) {
  const Tensor& x = ctx.input(0);
  KPS_RETURN_IF_ERROR(ResolveDimAttr(ctx).status());
  if (with_values) ctx.SetOutput(0, x.shape(), x.dtype());
  ctx.SetOutput(with_values ? 1 : 0, x.shape(), DataType::kInt64);
  return absl::OkStatus();
}

// A rank-0 x is one line of one element, so k is 0 or 1: k = 1 gives rank-0 outputs
// holding that element (index 0), and k = 0 gives empty outputs of shape [0], as k = 0
// does for every other rank (a rank-0 tensor always holds one element, so it cannot be
// the empty result).
absl::Status InferTopk(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  KPS_ASSIGN_OR_RETURN(const int dim, ResolveDimAttr(ctx));
  const int64_t k = ctx.Attr<int64_t>("k");
  const int64_t n = DimSize(x, dim);
  if (x.rank() == 0 && (k < 0 || k > 1)) {
    return ctx.Error("attribute 'k' = ", k, " is out of range for the rank-0 input 'x' (one element): expected 0 or 1");
  }
  if (k < 0 || k > n) {
    return ctx.Error("attribute 'k' = ", k, " is out of range: dim ", dim, " of input 'x' ", x.shape().ToString(),
                     " has ", n, " elements (expected 0..", n, ")");
  }
  Shape shape = x.shape();
  if (shape.rank() > 0) {
    shape[dim] = k;
  } else if (k == 0) {
    shape = Shape{0};
  }
  ctx.SetOutput(0, shape, x.dtype());
  ctx.SetOutput(1, shape, DataType::kInt64);
  return absl::OkStatus();
}

}  // namespace

KPS_REGISTER_OP("sort")
    .Input("x", "the tensor to sort (contiguous or a strided view, rank <= 8)")
    .Output("values", "x's dtype, contiguous, x's shape: the lines along dim in order")
    .Output("indices", "int64: the position along dim each value came from")
    .Attr<int64_t>("dim", -1, "the dim to sort along, negative counting from the end")
    .Attr<bool>("descending", false, "largest first")
    .Attr<bool>("stable", true, "keep equal values in their order (KPS sorts are always stable)")
    .SetInferFn([](InferContext& ctx) { return InferSort(ctx, true); })
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes())
    .Doc("Sorts along `dim`, stably; NaN is the largest value (last ascending, first descending).");
KPS_REGISTER_OP("argsort")
    .Input("x", "the tensor to order (contiguous or a strided view, rank <= 8)")
    .Output("indices", "int64, x's shape: the positions along dim that sort x")
    .Attr<int64_t>("dim", -1, "the dim to sort along, negative counting from the end")
    .Attr<bool>("descending", false, "largest first")
    .Attr<bool>("stable", true, "keep equal values in their order (KPS sorts are always stable)")
    .SetInferFn([](InferContext& ctx) { return InferSort(ctx, false); })
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes())
    .Doc("The indices of sort (stable; NaN largest).");
KPS_REGISTER_OP("topk")
    .Input("x", "the tensor to select from (contiguous or a strided view, rank <= 8)")
    .Output("values", "x's dtype: x's shape with dim of size k (rank-0 x: rank 0 for k = 1, [0] for k = 0)")
    .Output("indices", "int64: the positions along dim of the values")
    .RequiredAttr<int64_t>("k", "how many elements per line, 0..the size of dim (0 or 1 for a rank-0 x)")
    .Attr<int64_t>("dim", -1, "the dim to select along, negative counting from the end")
    .Attr<bool>("largest", true, "the k largest (else the k smallest)")
    .Attr<bool>("sorted", true, "in order, largest (smallest) first; false: in ascending index order")
    .SetInferFn(InferTopk)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes())
    .Doc("The k largest (or smallest) elements along `dim` and their positions; NaN is the largest value, ties "
         "go to the lower index.");

KPS_REGISTER_DEVICE_KERNELS("sort", SortKernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS("argsort", SortKernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS("topk", TopkKernel, KPS_ALL_CPP_TYPES);

}  // namespace sort
}  // namespace kps
