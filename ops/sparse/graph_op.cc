// Schemas of graph_orient, graph_relabel and triangle_count. Their kernels (graph_ops.h) are
// registered in triangle_cuda.cu and relabel_cuda.cu.
#include <cstdint>
#include <string>
#include <vector>

#include "ops/sparse/graph_ops.h"
#include "registry/op_schema.h"

namespace kps {
namespace sparse {
namespace {

absl::Status CheckGraphInputs(InferContext& ctx) {
  for (int i = 0; i < 2; ++i) {
    const Tensor& t = ctx.input(i);
    const char* name = i == 0 ? "indptr" : "indices";
    if (t.rank() != 1) return ctx.Error("input '", name, "' has rank ", t.rank(), "; it must be 1-D");
    if (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64) {
      return ctx.Error("input '", name, "' has dtype ", DataTypeName(t.dtype()), "; it must be int32 or int64");
    }
  }
  if (ctx.input(0).numel() < 1) {
    return ctx.Error("input 'indptr' is empty; a graph of n vertices has n + 1 offsets (no vertices: [0])");
  }
  if (ctx.input(0).numel() - 1 > (int64_t{1} << 31)) {
    return ctx.Error("the graph has ", ctx.input(0).numel() - 1, " vertices; graph ops take at most 2^31");
  }
  return absl::OkStatus();
}

absl::Status InferGraphOrient(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(CheckGraphInputs(ctx));
  const std::string& order = ctx.Attr<std::string>("order");
  if (order != "degree" && order != "id") {
    return ctx.Error("attribute 'order' = '", order, "'; expected 'degree' or 'id'");
  }
  ctx.SetOutput(0, Shape{ctx.input(0).numel()}, DataType::kInt64);
  ctx.SetDynamicOutput(1, ctx.input(1).dtype());
  return absl::OkStatus();
}

absl::Status InferGraphRelabel(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(CheckGraphInputs(ctx));
  const std::string& order = ctx.Attr<std::string>("order");
  if (order != "degree") return ctx.Error("attribute 'order' = '", order, "'; expected 'degree'");
  ctx.SetOutput(0, Shape{ctx.input(0).numel()}, DataType::kInt64);
  ctx.SetOutput(1, Shape{ctx.input(1).numel()}, ctx.input(1).dtype());
  ctx.SetOutput(2, Shape{ctx.input(0).numel() - 1}, DataType::kInt64);
  return absl::OkStatus();
}

absl::Status InferTriangleCount(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(CheckGraphInputs(ctx));
  const int64_t n = ctx.input(0).numel() - 1;
  const int64_t root_begin = ctx.Attr<int64_t>("root_begin"), root_end = ctx.Attr<int64_t>("root_end");
  if (root_begin < 0 || root_begin > n) {
    return ctx.Error("attribute 'root_begin' = ", root_begin, " is outside [0, ", n, "] (n = ", n, " vertices)");
  }
  if (root_end != -1 && (root_end < root_begin || root_end > n)) {
    return ctx.Error("attribute 'root_end' = ", root_end, " is outside [root_begin = ", root_begin, ", ", n,
                     "] (n = ", n, " vertices; -1: n)");
  }
  if (ctx.Attr<bool>("per_vertex")) {
    ctx.SetOutput(0, Shape{ctx.input(0).numel() - 1}, DataType::kInt64);
  } else {
    ctx.SetOutput(0, Shape{}, DataType::kInt64);
  }
  return absl::OkStatus();
}

const std::vector<DataType> kIndexTypes = {DataType::kInt32, DataType::kInt64};

constexpr char kGraphCheckDoc[] =
    "validate the graph first: a CSR of n vertices (indices in [0, n)), neighbours strictly ascending, no self "
    "loops; on CUDA this waits for the device. Symmetry (or acyclicity) is not checked";

}  // namespace

KPS_REGISTER_OP("graph_orient")
    .Input("indptr", "the symmetric graph's offsets [n + 1], int32 or int64")
    .Input("indices", "each vertex's neighbours, ascending, int32 or int64")
    .Output("indptr_out", "int64 [n + 1]")
    .Output("indices_out", "indices' dtype: each vertex's neighbours after it in the order, ascending by id")
    .Attr<std::string>("order", "degree", "degree (ties by id) or id")
    .Attr<bool>("check", true, kGraphCheckDoc)
    .SetInferFn(InferGraphOrient)
    .KeyDataTypeFrom("indices")
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, kIndexTypes)
    .Doc("Orients a symmetric simple graph (graph_from_edges' output) into a DAG: edge {u, v} is kept once, "
         "as u -> v where u comes first by (degree, id) (or by id). By degree, no vertex keeps more than "
         "sqrt(2 * edges) out-neighbours, which bounds triangle_count's work per vertex. On CUDA a warp per "
         "vertex keeps its neighbours in order (ballot and popcount), the row starts by KPS's cumsum; the call "
         "waits for the edge count.");

KPS_REGISTER_OP("graph_relabel")
    .Input("indptr", "the graph's offsets [n + 1], int32 or int64")
    .Input("indices", "each vertex's neighbours, ascending, int32 or int64")
    .Output("indptr_out", "int64 [n + 1]")
    .Output("indices_out", "indices' dtype and length: each new vertex's neighbours under the new ids, ascending")
    .Output("perm", "int64 [n]: the old id of each new id")
    .Attr<std::string>("order", "degree", "degree: ascending degree, ties by id")
    .Attr<bool>("check", true, kGraphCheckDoc)
    .SetInferFn(InferGraphRelabel)
    .KeyDataTypeFrom("indices")
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, kIndexTypes)
    .Doc("Numbers a graph's vertices by ascending degree (ties by id) and rewrites its CSR under the new ids. "
         "Counting triangles on the relabelled graph keeps the busiest rows (the high-degree vertices, whose "
         "out-lists every two-hop walk reads) together in memory; orientation by degree then equals orientation "
         "by id. Per-vertex results map back through perm. On CUDA: KPS's sort of degree * n + id for the new "
         "ids, a warp per row to map the neighbours, and one sort of row * n + column to order every row.");

KPS_REGISTER_OP("triangle_count")
    .Input("indptr", "the graph's offsets [n + 1], int32 or int64")
    .Input("indices", "each vertex's neighbours, ascending, int32 or int64")
    .Output("count", "int64: the number of triangles (a scalar), or with per_vertex the triangles each vertex is "
                     "in [n]")
    .Attr<bool>("oriented", false,
                "false: the graph is symmetric (each edge both ways); true: oriented (each edge once, acyclic: "
                "graph_orient's output, the faster input)")
    .Attr<bool>("per_vertex", false, "count per vertex instead of the total")
    .Attr<int64_t>("root_begin", 0,
                   "count only the triangles whose first vertex u (the one they are found from) is in "
                   "[root_begin, root_end): a share of the count, e.g. one rank's vertex range; every row stays "
                   "readable as a second hop")
    .Attr<int64_t>("root_end", -1, "the end of the root range; -1: n")
    .Attr<bool>("check", true, kGraphCheckDoc)
    .SetInferFn(InferTriangleCount)
    .KeyDataTypeFrom("indices")
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, kIndexTypes)
    .Doc("Counts the triangles of an undirected simple graph. Each triangle u < v < w (by id for symmetric "
         "input, by the orientation otherwise) is found once, as w in both N+(u) and N+(v) for v in N+(u). On "
         "CUDA, vertices are taken by warps (out-degree up to 256: the list in shared memory) and by blocks "
         "(longer lists) from a work counter; the lanes share the flattened two-hop lists N+(v) of 32 v at a "
         "time and look each w up in N+(u), a hash table in shared memory (or by binary search). Integer atomics "
         "only: the counts are exact and deterministic.");

}  // namespace sparse
}  // namespace kps
