// Schema of spmv. Its kernel (SpmvKernel, spmv_ops.h) is registered in spmv_cuda.cu; a
// malformed CSR matrix is reported by the sparse ops' shared check (csr_check.h).
#include <string>

#include "ops/sparse/spmv_ops.h"
#include "registry/op_schema.h"

namespace kps {
namespace sparse {

namespace {

absl::Status InferSpmv(InferContext& ctx) {
  const Tensor& indptr = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& values = ctx.input(2);
  const Tensor& x = ctx.input(3);
  const Tensor& y = ctx.input(4);
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
  if (x.rank() != 1) return ctx.Error("input 'x' has rank ", x.rank(), "; it must be 1-D");
  if (!IsFloatingPoint(x.dtype())) {
    return ctx.Error("input 'x' has dtype ", DataTypeName(x.dtype()),
                     "; spmv takes float16, bfloat16, float32 or float64 (cast integers first)");
  }
  if (values.defined()) {
    if (values.rank() != 1 || values.numel() != indices.numel()) {
      return ctx.Error("input 'values' has shape ", values.shape().ToString(), " but input 'indices' has ",
                       indices.numel(), " entries; they must agree");
    }
    if (values.dtype() != x.dtype()) {
      return ctx.Error("input 'values' has dtype ", DataTypeName(values.dtype()), " but input 'x' has ",
                       DataTypeName(x.dtype()), "; cast one of them");
    }
  }
  const int64_t m = indptr.numel() - 1;
  if (y.defined()) {
    if (y.rank() != 1 || y.numel() != m) {
      return ctx.Error("input 'y' has shape ", y.shape().ToString(), " but the matrix has ", m,
                       " rows (indptr's length - 1)");
    }
    if (y.dtype() != x.dtype()) {
      return ctx.Error("input 'y' has dtype ", DataTypeName(y.dtype()), " but input 'x' has ",
                       DataTypeName(x.dtype()), "; cast one of them");
    }
  }
  Semiring s;
  const std::string& name = ctx.Attr<std::string>("semiring");
  if (!ParseSemiring(name, &s)) {
    return ctx.Error("attribute 'semiring' = '", name, "'; expected 'plus_times', 'min_plus', 'max_times' or 'or_and'");
  }
  if (s != Semiring::kPlusTimes && (ctx.Attr<double>("alpha") != 1 || ctx.Attr<double>("beta") != 0)) {
    return ctx.Error("attributes 'alpha' and 'beta' scale in the plus_times semiring only; semiring '", name,
                     "' adds y with its own addition");
  }
  ctx.SetOutput(0, Shape{m}, x.dtype());
  return absl::OkStatus();
}

}  // namespace

KPS_REGISTER_OP("spmv")
    .Input("indptr", "CSR row offsets [m + 1], int32 or int64: row r's entries are [indptr[r], indptr[r + 1])")
    .Input("indices", "CSR column of each entry [nnz], int32 or int64, each in [0, n)")
    .OptionalInput("values", "each entry's value [nnz], x's dtype; absent: a pattern matrix (every entry 1)")
    .Input("x", "the dense vector [n]; its length is the matrix's column count")
    .OptionalInput("y", "[m], x's dtype: added to the product (scaled by beta in plus_times)")
    .Output("out", "[m], x's dtype")
    .Attr<std::string>("semiring", "plus_times",
                       "plus_times, min_plus, max_times or or_and (nonzero is true; out is 0 or 1)")
    .Attr<double>("alpha", 1.0, "plus_times: scales A x")
    .Attr<double>("beta", 0.0, "plus_times: scales y")
    .Attr<bool>("check", true,
                "validate the CSR first (indptr starts at 0, never decreases, ends at nnz; indices in [0, n)); "
                "on CUDA this waits for the device. Unchecked, a malformed matrix never reads or writes out of "
                "bounds: entries outside are skipped")
    .SetInferFn(InferSpmv)
    .KeyDataTypeFrom("x")
    .Kernels({DeviceType::kCpu, DeviceType::kCuda},
             {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64})
    .Doc("Sparse matrix (CSR) times dense vector: out = alpha * A x + beta * y (plus_times), or A x (+) y in "
         "another semiring. Sums in float for 16-bit values, double for float64. Deterministic (no atomics): on "
         "CUDA a merge-path split gives each thread the same number of rows plus entries, so a row of a million "
         "entries and a million empty rows are both balanced; rows that cross threads or blocks are completed "
         "in a fixed order. Empty rows give the semiring's zero (0, +inf for min_plus, -inf for max_times).");

}  // namespace sparse
}  // namespace kps
