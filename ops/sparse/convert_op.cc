// Schemas of coo_to_csr, graph_from_edges, csr_transpose and csr_validate, and the
// messages of a malformed CSR matrix or edge list. Their kernels (convert_ops.h) are
// registered in convert_cuda.cu.
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "ops/sparse/convert_ops.h"
#include "ops/sparse/csr_check.h"
#include "registry/op_schema.h"

namespace kps {
namespace sparse {

absl::Status CsrFaultStatus(const CallView& call, CsrFault kind, int64_t pos, int64_t value, int64_t row, int64_t m,
                            int64_t nnz, const CsrRules& rules) {
  switch (kind) {
    case CsrFault::kBadStart:
      return call.Error("input 'indptr' starts at ", value, "; a CSR matrix's indptr starts at 0");
    case CsrFault::kDecreasing:
      return call.Error("input 'indptr' decreases at ", pos, " (indptr[", pos, "] = ", value, " is below indptr[",
                        pos - 1, "]); it must be non-decreasing");
    case CsrFault::kBadEnd:
      return call.Error("input 'indptr' ends at ", value, " (indptr[", m, "]) but input 'indices' has ", nnz,
                        " entries; they must agree");
    case CsrFault::kColumnRange:
      return call.Error("input 'indices' has ", value, " at ", pos, " (row ", row, "), outside [0, ", rules.n, ") (",
                        rules.n_from, ")");
    case CsrFault::kUnsorted:
      return call.Error("input 'indices' is not strictly increasing in row ", row, " (", value, " at ", pos,
                        " follows a column >= it); sort each row and drop duplicates (coo_to_csr, "
                        "graph_from_edges)");
    default:
      return call.Error("input 'indices' has a self loop at ", pos, " (row ", row, " has column ", value,
                        "); drop self loops first (graph_from_edges)");
  }
}

absl::Status ConvertOn<DeviceType::kCpu>::EntryOutOfRange(const CallView& call, const CooPlan& plan, int64_t i,
                                                          int64_t r, int64_t c) {
  if (plan.symmetric) {
    return call.Error("edge ", i, " (", r, ", ", c, ") has a vertex outside [0, ", plan.n,
                      ") (attribute 'num_vertices')");
  }
  if (r < 0 || r >= plan.m) {
    return call.Error("input 'rows' has ", r, " at ", i, ", outside [0, ", plan.m, ") (attribute 'num_rows')");
  }
  return call.Error("input 'cols' has ", c, " at ", i, ", outside [0, ", plan.n, ") (attribute 'num_cols')");
}

absl::Status ConvertOn<DeviceType::kCpu>::NegativeVertex(const CallView& call, int side, int64_t i, int64_t v) {
  return call.Error("input '", side == 0 ? "src" : "dst", "' has ", v, " at ", i, "; vertex ids are >= 0");
}

namespace {

absl::Status CheckIndexInput(InferContext& ctx, int i, const char* name) {
  const Tensor& t = ctx.input(i);
  if (t.rank() != 1) return ctx.Error("input '", name, "' has rank ", t.rank(), "; it must be 1-D");
  if (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64) {
    return ctx.Error("input '", name, "' has dtype ", DataTypeName(t.dtype()), "; it must be int32 or int64");
  }
  return absl::OkStatus();
}

absl::Status CheckValuesInput(InferContext& ctx, int i, int64_t count, const char* against) {
  const Tensor& v = ctx.input(i);
  if (!v.defined()) return absl::OkStatus();
  if (v.rank() != 1 || v.numel() != count) {
    return ctx.Error("input 'values' has shape ", v.shape().ToString(), " but input '", against, "' has ", count,
                     " entries; they must agree");
  }
  if (!IsFloatingPoint(v.dtype()) && v.dtype() != DataType::kInt32 && v.dtype() != DataType::kInt64) {
    return ctx.Error("input 'values' has dtype ", DataTypeName(v.dtype()),
                     "; it must be float16, bfloat16, float32, float64, int32 or int64");
  }
  return absl::OkStatus();
}

absl::Status CheckSize(InferContext& ctx, const char* name, int64_t v) {
  if (v < 0) return ctx.Error("attribute '", name, "' = ", v, "; it must be >= 0");
  if (v >= (int64_t{1} << 40)) return ctx.Error("attribute '", name, "' = ", v, "; it must be below 2^40");
  return absl::OkStatus();
}

absl::Status InferCooToCsr(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(CheckIndexInput(ctx, 0, "rows"));
  KPS_RETURN_IF_ERROR(CheckIndexInput(ctx, 1, "cols"));
  const Tensor& rows = ctx.input(0);
  const Tensor& cols = ctx.input(1);
  if (rows.dtype() != cols.dtype() || rows.numel() != cols.numel()) {
    return ctx.Error("inputs 'rows' (", DataTypeName(rows.dtype()), " ", rows.shape().ToString(), ") and 'cols' (",
                     DataTypeName(cols.dtype()), " ", cols.shape().ToString(), ") must have one dtype and one length");
  }
  KPS_RETURN_IF_ERROR(CheckValuesInput(ctx, 2, rows.numel(), "rows"));
  const int64_t m = ctx.Attr<int64_t>("num_rows"), n = ctx.Attr<int64_t>("num_cols");
  KPS_RETURN_IF_ERROR(CheckSize(ctx, "num_rows", m));
  KPS_RETURN_IF_ERROR(CheckSize(ctx, "num_cols", n));
  if (m > 0 && n > 0 && m > (int64_t{1} << 62) / n) {
    return ctx.Error("attributes 'num_rows' * 'num_cols' = ", m, " * ", n, " passes 2^62");
  }
  if (cols.dtype() == DataType::kInt32 && n > INT32_MAX) {
    return ctx.Error("attribute 'num_cols' = ", n, " does not fit input 'cols''s int32");
  }
  ctx.SetOutput(0, Shape{m + 1}, DataType::kInt64);
  ctx.SetDynamicOutput(1, cols.dtype());
  const Tensor& values = ctx.input(2);
  ctx.SetDynamicOutput(2, values.defined() ? values.dtype() : DataType::kFloat32);
  return absl::OkStatus();
}

absl::Status InferGraphFromEdges(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(CheckIndexInput(ctx, 0, "src"));
  KPS_RETURN_IF_ERROR(CheckIndexInput(ctx, 1, "dst"));
  const Tensor& src = ctx.input(0);
  const Tensor& dst = ctx.input(1);
  if (src.dtype() != dst.dtype() || src.numel() != dst.numel()) {
    return ctx.Error("inputs 'src' (", DataTypeName(src.dtype()), " ", src.shape().ToString(), ") and 'dst' (",
                     DataTypeName(dst.dtype()), " ", dst.shape().ToString(), ") must have one dtype and one length");
  }
  const int64_t nv = ctx.Attr<int64_t>("num_vertices");
  if (nv < -1) return ctx.Error("attribute 'num_vertices' = ", nv, "; it must be >= 0, or -1 (the largest id + 1)");
  if (nv > (int64_t{1} << 31)) return ctx.Error("attribute 'num_vertices' = ", nv, "; it must be at most 2^31");
  if (src.numel() > (int64_t{1} << 38)) {
    return ctx.Error("inputs 'src' and 'dst' have ", src.numel(), " edges; graph_from_edges takes fewer than 2^38");
  }
  if (nv >= 0) {
    ctx.SetOutput(0, Shape{nv + 1}, DataType::kInt64);
  } else {
    ctx.SetDynamicOutput(0, DataType::kInt64);
  }
  ctx.SetDynamicOutput(1, src.dtype());
  return absl::OkStatus();
}

absl::Status InferCsrInputs(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(CheckIndexInput(ctx, 0, "indptr"));
  KPS_RETURN_IF_ERROR(CheckIndexInput(ctx, 1, "indices"));
  if (ctx.input(0).numel() < 1) {
    return ctx.Error("input 'indptr' is empty; a matrix of m rows has m + 1 offsets (a 0-row matrix: [0])");
  }
  return CheckSize(ctx, "num_cols", ctx.Attr<int64_t>("num_cols"));
}

absl::Status InferCsrTranspose(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(InferCsrInputs(ctx));
  const Tensor& indices = ctx.input(1);
  KPS_RETURN_IF_ERROR(CheckValuesInput(ctx, 2, indices.numel(), "indices"));
  const int64_t m = ctx.input(0).numel() - 1, n = ctx.Attr<int64_t>("num_cols");
  if (indices.dtype() == DataType::kInt32 && m > INT32_MAX) {
    return ctx.Error("the matrix has ", m, " rows; its transpose's int32 indices cannot hold them");
  }
  ctx.SetOutput(0, Shape{n + 1}, DataType::kInt64);
  ctx.SetOutput(1, Shape{indices.numel()}, indices.dtype());
  const Tensor& values = ctx.input(2);
  ctx.SetOutput(2, Shape{values.defined() ? values.numel() : 0},
                values.defined() ? values.dtype() : DataType::kFloat32);
  return absl::OkStatus();
}

absl::Status InferCsrValidate(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(InferCsrInputs(ctx));
  ctx.SetOutput(0, Shape{}, DataType::kInt64);
  return absl::OkStatus();
}

const std::vector<DataType> kIndexTypes = {DataType::kInt32, DataType::kInt64};

}  // namespace

KPS_REGISTER_OP("coo_to_csr")
    .Input("rows", "each entry's row [count], int32 or int64, in [0, num_rows)")
    .Input("cols", "each entry's column [count], rows' dtype, in [0, num_cols)")
    .OptionalInput("values", "each entry's value [count] (float16, bfloat16, float32, float64, int32, int64)")
    .Output("indptr", "int64 [num_rows + 1]")
    .Output("indices", "cols' dtype [nnz]: columns ascending in each row")
    .Output("values", "values' dtype [nnz] (duplicates summed), or float32 [0] without values")
    .RequiredAttr<int64_t>("num_rows", "the matrix's row count")
    .RequiredAttr<int64_t>("num_cols", "the matrix's column count")
    .Attr<bool>("sum_duplicates", true,
                "entries at one (row, column) become one, their values summed in input order (float for "
                "16-bit values, int64 for integers); false keeps each, in input order")
    .SetInferFn(InferCooToCsr)
    .KeyDataTypeFrom("cols")
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, kIndexTypes)
    .Doc(
        "A COO matrix (entries in any order) as CSR, rows in order and columns ascending within each row. "
        "On CUDA: keys row * num_cols + col sorted by KPS's (stable) sort, the runs of equal keys numbered by "
        "its cumsum; deterministic. The entry count depends on the duplicates, so the CUDA call waits for it. "
        "An entry outside the shape is an error naming it.");

KPS_REGISTER_OP("graph_from_edges")
    .Input("src", "each edge's first vertex [edges], int32 or int64, >= 0")
    .Input("dst", "each edge's second vertex [edges], src's dtype")
    .Output("indptr", "int64 [num_vertices + 1]")
    .Output("indices", "src's dtype: each vertex's neighbours, ascending, once each")
    .Attr<int64_t>("num_vertices", int64_t{-1}, "the vertex count; -1: the largest id + 1")
    .SetInferFn(InferGraphFromEdges)
    .KeyDataTypeFrom("src")
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, kIndexTypes)
    .Doc(
        "An edge list (in any order, directed or not, with duplicates and self loops, as R-MAT makes them) "
        "as the CSR adjacency of the undirected simple graph it spans: each edge both ways, self loops and "
        "duplicates dropped, neighbours ascending. The first step of triangle counting (then graph_orient). "
        "Built like coo_to_csr; the CUDA call waits for the edge count.");

KPS_REGISTER_OP("csr_transpose")
    .Input("indptr", "CSR row offsets [m + 1], int32 or int64")
    .Input("indices", "CSR columns [nnz], int32 or int64, in [0, num_cols)")
    .OptionalInput("values", "each entry's value [nnz]; absent for a pattern matrix")
    .Output("indptr_t", "int64 [num_cols + 1]: the transpose's row offsets (the matrix's column offsets: CSC)")
    .Output("indices_t",
            "indices' dtype [nnz]: the rows of each column, ascending for a matrix whose rows hold "
            "each column once")
    .Output("values_t", "values' dtype [nnz], or float32 [0] without values")
    .RequiredAttr<int64_t>("num_cols", "the matrix's column count")
    .Attr<bool>("check", true, "validate the CSR first (on CUDA this waits for the device)")
    .SetInferFn(InferCsrTranspose)
    .KeyDataTypeFrom("indices")
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, kIndexTypes)
    .Doc(
        "The transpose of an m x num_cols CSR matrix, as CSR (equivalently the matrix in CSC). Entries of "
        "one column keep their row order (stable). On CUDA: the columns sorted by KPS's sort with their "
        "positions, the column starts found by binary search, rows and values gathered.");

KPS_REGISTER_OP("csr_validate")
    .Input("indptr", "CSR row offsets [m + 1], int32 or int64")
    .Input("indices", "CSR columns [nnz], int32 or int64")
    .Output("nnz", "int64 scalar: the entry count, when the matrix is well formed")
    .RequiredAttr<int64_t>("num_cols", "the matrix's column count")
    .Attr<bool>("sorted", false, "also require columns strictly increasing in each row (no duplicates)")
    .Attr<bool>("no_self_loops", false, "also require no diagonal entry (a graph without self loops)")
    .SetInferFn(InferCsrValidate)
    .KeyDataTypeFrom("indices")
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, kIndexTypes)
    .Doc(
        "Checks a CSR matrix: indptr starts at 0, never decreases and ends at nnz; every column is in "
        "[0, num_cols); with the attributes, rows sorted and no self loops. The first fault (in that order, "
        "then by position) is an error naming the input, the position, the row and the value. On CUDA one "
        "kernel checks rows and entries and the call waits for its verdict.");

}  // namespace sparse
}  // namespace kps
