// graph_orient and triangle_count: the kernels (one class template over the device each),
// the CPU parts here, the CUDA parts (GraphOn<kCuda>) in triangle_cuda.cu, where both
// register.
//
// A graph is a CSR adjacency: indptr [n + 1] (int32 or int64), indices (int32 or int64),
// each vertex's neighbours ascending. "Symmetric" means each undirected edge is stored
// both ways (graph_from_edges makes it); "oriented" means once, from the lower to the
// higher rank (graph_orient makes it): a DAG in which each triangle {u, v, w} with
// rank u < v < w is found exactly once, as w in N+(u) and in N+(v) for v in N+(u).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "ops/sparse/contiguous_inputs.h"
#include "ops/sparse/csr_check.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace sparse {

// Whether u comes before v in graph_orient's order: by degree, ties by id (the
// orientation that bounds every out-degree by O(sqrt(edges))), or by id alone.
inline bool RankBefore(int64_t du, int64_t u, int64_t dv, int64_t v, bool by_degree) {
  if (by_degree && du != dv) return du < dv;
  return u < v;
}

template <DeviceType D>
struct GraphOn;

template <>
struct GraphOn<DeviceType::kCpu> {
  // Numbers the vertices by ascending degree, ties by id: output 0 (indptr, int64 [n + 1]),
  // output 1 (indices, I [nnz]: each new row's neighbours under the new ids, ascending),
  // output 2 (perm, int64 [n]: the old id of each new id). Columns outside [0, n)
  // (unchecked input) are kept as they are.
  template <typename P, typename I>
  static absl::Status Relabel(KernelContext* ctx, const Tensor& indptr, const Tensor& indices) {
    const int64_t n = indptr.numel() - 1;
    const P* ptr = indptr.data<P>();
    const I* idx = indices.data<I>();
    int64_t* out_ptr = ctx->output(0).data<int64_t>();
    I* out_idx = ctx->output(1).data<I>();
    int64_t* perm = ctx->output(2).data<int64_t>();
    auto degree = [&](int64_t u) { return static_cast<int64_t>(ptr[u + 1]) - static_cast<int64_t>(ptr[u]); };
    std::iota(perm, perm + n, int64_t{0});
    std::stable_sort(perm, perm + n, [&](int64_t a, int64_t b) { return degree(a) < degree(b); });
    std::vector<int64_t> inv(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) inv[perm[i]] = i;
    out_ptr[0] = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t old = perm[i], start = out_ptr[i];
      int64_t at = start;
      for (int64_t k = static_cast<int64_t>(ptr[old]); k < static_cast<int64_t>(ptr[old + 1]); ++k) {
        const int64_t c = static_cast<int64_t>(idx[k]);
        out_idx[at++] = static_cast<I>(c >= 0 && c < n ? inv[c] : c);
      }
      std::sort(out_idx + start, out_idx + at);
      out_ptr[i + 1] = at;
    }
    return absl::OkStatus();
  }

  // Keeps each edge u -> v with u before v: output 0 (indptr, int64 [n + 1]) and output 1
  // (indices, I; dynamic).
  template <typename P, typename I>
  static absl::Status Orient(KernelContext* ctx, const Tensor& indptr, const Tensor& indices, bool by_degree) {
    const int64_t n = indptr.numel() - 1;
    const P* ptr = indptr.data<P>();
    const I* idx = indices.data<I>();
    int64_t* out_ptr = ctx->output(0).data<int64_t>();
    std::vector<I> kept;
    out_ptr[0] = 0;
    for (int64_t u = 0; u < n; ++u) {
      const int64_t du = static_cast<int64_t>(ptr[u + 1] - ptr[u]);
      for (int64_t k = static_cast<int64_t>(ptr[u]); k < static_cast<int64_t>(ptr[u + 1]); ++k) {
        const int64_t v = static_cast<int64_t>(idx[k]);
        const int64_t dv = static_cast<int64_t>(ptr[v + 1] - ptr[v]);
        if (RankBefore(du, u, dv, v, by_degree)) kept.push_back(idx[k]);
      }
      out_ptr[u + 1] = static_cast<int64_t>(kept.size());
    }
    KPS_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(1, Shape{static_cast<int64_t>(kept.size())},
                                                           indices.dtype()));
    std::copy(kept.begin(), kept.end(), out->data<I>());
    return absl::OkStatus();
  }

  // Counts triangles: out is int64, a scalar (the total) or [n] (per vertex: the
  // triangles each vertex is in). Symmetric input counts through the neighbours above
  // each vertex's id; oriented input through all.
  template <typename P, typename I>
  static absl::Status Count(KernelContext* ctx, const Tensor& indptr, const Tensor& indices, bool oriented,
                            bool per_vertex, int64_t root_begin, int64_t root_end) {
    const int64_t n = indptr.numel() - 1;
    const P* ptr = indptr.data<P>();
    const I* idx = indices.data<I>();
    // begin[u]: the first neighbour counted from u.
    std::vector<int64_t> begin(static_cast<size_t>(n));
    for (int64_t u = 0; u < n; ++u) {
      const I* lo = idx + static_cast<int64_t>(ptr[u]);
      const I* hi = idx + static_cast<int64_t>(ptr[u + 1]);
      begin[u] = oriented ? static_cast<int64_t>(ptr[u]) : std::upper_bound(lo, hi, static_cast<I>(u)) - idx;
    }
    std::vector<char> mark(static_cast<size_t>(n), 0);
    int64_t* out = ctx->output(0).data<int64_t>();
    if (per_vertex) std::fill(out, out + n, int64_t{0});
    int64_t total = 0;
    for (int64_t u = root_begin; u < root_end; ++u) {
      const int64_t end_u = static_cast<int64_t>(ptr[u + 1]);
      for (int64_t k = begin[u]; k < end_u; ++k) mark[idx[k]] = 1;
      for (int64_t k = begin[u]; k < end_u; ++k) {
        const int64_t v = static_cast<int64_t>(idx[k]);
        for (int64_t j = begin[v]; j < static_cast<int64_t>(ptr[v + 1]); ++j) {
          const int64_t w = static_cast<int64_t>(idx[j]);
          if (!mark[w]) continue;
          ++total;
          if (per_vertex) {
            ++out[u];
            ++out[v];
            ++out[w];
          }
        }
      }
      for (int64_t k = begin[u]; k < end_u; ++k) mark[idx[k]] = 0;
    }
    if (!per_vertex) out[0] = total;
    return absl::OkStatus();
  }
};

template <>
struct GraphOn<DeviceType::kCuda> {
  template <typename P, typename I>
  static absl::Status Relabel(KernelContext* ctx, const Tensor& indptr, const Tensor& indices);
  template <typename P, typename I>
  static absl::Status Orient(KernelContext* ctx, const Tensor& indptr, const Tensor& indices, bool by_degree);
  template <typename P, typename I>
  static absl::Status Count(KernelContext* ctx, const Tensor& indptr, const Tensor& indices, bool oriented,
                            bool per_vertex, int64_t root_begin, int64_t root_end);
};

// The rules a graph op's input meets: square (the column count is the vertex count),
// neighbours strictly ascending, no self loops.
inline CsrRules GraphRules(const Tensor& indptr) {
  CsrRules rules;
  rules.n = indptr.numel() - 1;
  rules.sorted = true;
  rules.no_diagonal = true;
  rules.n_from = "the vertex count, indptr's length - 1";
  return rules;
}

template <DeviceType D, typename I>
class GraphOrientKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const std::vector<Tensor> in, ContiguousInputs(*ctx));
    const Tensor &indptr = in[0], &indices = in[1];
    if (ctx->Attr<bool>("check")) KPS_RETURN_IF_ERROR(CheckCsr(*ctx, indptr, indices, GraphRules(indptr)));
    const bool by_degree = ctx->Attr<std::string>("order") == "degree";
    if (indptr.dtype() == DataType::kInt64) {
      return GraphOn<D>::template Orient<int64_t, I>(ctx, indptr, indices, by_degree);
    }
    return GraphOn<D>::template Orient<int32_t, I>(ctx, indptr, indices, by_degree);
  }
};

template <DeviceType D, typename I>
class GraphRelabelKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const std::vector<Tensor> in, ContiguousInputs(*ctx));
    if (ctx->Attr<bool>("check")) KPS_RETURN_IF_ERROR(CheckCsr(*ctx, in[0], in[1], GraphRules(in[0])));
    if (in[0].dtype() == DataType::kInt64) return GraphOn<D>::template Relabel<int64_t, I>(ctx, in[0], in[1]);
    return GraphOn<D>::template Relabel<int32_t, I>(ctx, in[0], in[1]);
  }
};

template <DeviceType D, typename I>
class TriangleCountKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const std::vector<Tensor> in, ContiguousInputs(*ctx));
    const Tensor &indptr = in[0], &indices = in[1];
    if (ctx->Attr<bool>("check")) KPS_RETURN_IF_ERROR(CheckCsr(*ctx, indptr, indices, GraphRules(indptr)));
    const bool oriented = ctx->Attr<bool>("oriented"), per_vertex = ctx->Attr<bool>("per_vertex");
    // The roots counted from (checked by the schema's infer function; -1: through the last vertex).
    const int64_t root_begin = ctx->Attr<int64_t>("root_begin");
    const int64_t root_end = ctx->Attr<int64_t>("root_end") < 0 ? indptr.numel() - 1 : ctx->Attr<int64_t>("root_end");
    if (indptr.dtype() == DataType::kInt64) {
      return GraphOn<D>::template Count<int64_t, I>(ctx, indptr, indices, oriented, per_vertex, root_begin, root_end);
    }
    return GraphOn<D>::template Count<int32_t, I>(ctx, indptr, indices, oriented, per_vertex, root_begin, root_end);
  }
};

}  // namespace sparse
}  // namespace kps
