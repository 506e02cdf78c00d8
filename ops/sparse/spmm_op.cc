// Schema of spmm. Its kernel (SpmmKernel, spmm_ops.h) is registered in spmm_cuda.cu; a
// malformed CSR matrix is reported by the sparse ops' shared check (csr_check.h).
#include <string>

#include "ops/sparse/spmm_ops.h"
#include "ops/sparse/spmv_ops.h"
#include "registry/op_schema.h"

namespace kps {
namespace sparse {

namespace {

absl::Status InferSpmm(InferContext& ctx) {
  const Tensor& indptr = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& values = ctx.input(2);
  const Tensor& b = ctx.input(3);
  const Tensor& c = ctx.input(4);
  for (int i = 0; i < 2; ++i) {
    const Tensor& t = ctx.input(i);
    const char* name = i == 0 ? "indptr" : "indices";
    if (t.rank() != 1) return ctx.Error("input '", name, "' has rank ", t.rank(), "; it must be 1-D");
    if (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64) {
      return ctx.Error("input '", name, "' has dtype ", DataTypeName(t.dtype()), "; it must be int32 or int64");
    }
  }
  if (indptr.numel() < 1) {
    return ctx.Error("input 'indptr' is empty; a matrix of m rows has m + 1 offsets (a 0-row matrix: [0])");
  }
  if (b.rank() != 2) {
    return ctx.Error("input 'b' has shape ", b.shape().ToString(), "; it must be 2-D [n, k] (n: the matrix's "
                     "column count; a vector is spmv's x, or b of shape [n, 1])");
  }
  if (!IsFloatingPoint(b.dtype())) {
    return ctx.Error("input 'b' has dtype ", DataTypeName(b.dtype()),
                     "; spmm takes float16, bfloat16, float32 or float64 (cast integers first)");
  }
  if (values.defined()) {
    if (values.rank() != 1 || values.numel() != indices.numel()) {
      return ctx.Error("input 'values' has shape ", values.shape().ToString(), " but input 'indices' has ",
                       indices.numel(), " entries; they must agree");
    }
    if (values.dtype() != b.dtype()) {
      return ctx.Error("input 'values' has dtype ", DataTypeName(values.dtype()), " but input 'b' has ",
                       DataTypeName(b.dtype()), "; cast one of them");
    }
  }
  const int64_t m = indptr.numel() - 1, k = b.shape()[1];
  if (c.defined()) {
    if (c.rank() != 2 || c.shape()[0] != m || c.shape()[1] != k) {
      return ctx.Error("input 'c' has shape ", c.shape().ToString(), " but the result is [", m, ", ", k,
                       "] (the matrix's rows, indptr's length - 1, by b's columns)");
    }
    if (c.dtype() != b.dtype()) {
      return ctx.Error("input 'c' has dtype ", DataTypeName(c.dtype()), " but input 'b' has ",
                       DataTypeName(b.dtype()), "; cast one of them");
    }
  }
  Semiring s;
  const std::string& name = ctx.Attr<std::string>("semiring");
  if (!ParseSemiring(name, &s)) {
    return ctx.Error("attribute 'semiring' = '", name, "'; expected 'plus_times', 'min_plus', 'max_times' or 'or_and'");
  }
  if (s != Semiring::kPlusTimes && (ctx.Attr<double>("alpha") != 1 || ctx.Attr<double>("beta") != 0)) {
    return ctx.Error("attributes 'alpha' and 'beta' scale in the plus_times semiring only; semiring '", name,
                     "' adds c with its own addition");
  }
  ctx.SetOutput(0, Shape{m, k}, b.dtype());
  return absl::OkStatus();
}

}  // namespace

KPS_REGISTER_OP("spmm")
    .Input("indptr", "CSR row offsets [m + 1], int32 or int64: row r's entries are [indptr[r], indptr[r + 1])")
    .Input("indices", "CSR column of each entry [nnz], int32 or int64, each in [0, n)")
    .OptionalInput("values", "each entry's value [nnz], b's dtype; absent: a pattern matrix (every entry 1)")
    .Input("b", "the dense matrix [n, k] (any strides); n is the sparse matrix's column count")
    .OptionalInput("c", "[m, k], b's dtype: added to the product (scaled by beta in plus_times)")
    .Output("out", "[m, k], b's dtype")
    .Attr<std::string>("semiring", "plus_times",
                       "plus_times, min_plus, max_times or or_and (nonzero is true; out is 0 or 1)")
    .Attr<double>("alpha", 1.0, "plus_times: scales A b")
    .Attr<double>("beta", 0.0, "plus_times: scales c")
    .Attr<bool>("check", true,
                "validate the CSR first (indptr starts at 0, never decreases, ends at nnz; indices in [0, n)); "
                "on CUDA this waits for the device. Unchecked, a malformed matrix never reads or writes out of "
                "bounds: entries outside are skipped")
    .SetInferFn(InferSpmm)
    .KeyDataTypeFrom("b")
    .Kernels({DeviceType::kCpu, DeviceType::kCuda},
             {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64})
    .Doc("Sparse matrix (CSR) times dense matrix: out = alpha * A b + beta * c (plus_times), or A b (+) c in "
         "another semiring; column j of out is spmv of column j of b. Sums in float for 16-bit values, double "
         "for float64. Deterministic (no atomics): on CUDA a merge-path split gives each warp the same number "
         "of rows plus entries, lanes across b's columns, so long rows and many empty rows are both balanced; "
         "rows that cross warps are completed in a fixed order. Empty rows give the semiring's zero (0, +inf "
         "for min_plus, -inf for max_times).");

}  // namespace sparse
}  // namespace kps
