// coo_to_csr, graph_from_edges, csr_transpose and csr_validate: the kernels (one class
// template over the device each), with the CPU parts here and the CUDA parts
// (ConvertOn<kCuda>) in convert_cuda.cu, where all four register.
//
// The CPU parts are plain loops (a stable sort of (key, position) pairs, a counting sort
// for the transpose); the CUDA parts are built on KPS's own sort and cumsum ops, called
// by name, with small kernels around them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "functors/mp_type.h"
#include "ops/sparse/contiguous_inputs.h"
#include "ops/sparse/csr_check.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace sparse {

// The value dtypes of coo_to_csr and csr_transpose.
#define KPS_SPARSE_VALUE_CPP_TYPES KPS_FLOAT_CPP_TYPES, int32_t, int64_t

// The type duplicates are summed in: float for 16-bit floats, the type itself for
// float32 and float64, int64 for integers (wrapping back to the dtype).
template <typename T>
using DupSum = std::conditional_t<std::is_integral<T>::value, int64_t, MPType<T>>;

// Calls f(T{}) with T the C++ type of `dt`, a KPS_SPARSE_VALUE_CPP_TYPES dtype.
template <typename F>
absl::Status VisitSparseValueType(DataType dt, F&& f) {
  switch (dt) {
    case DataType::kFloat16:
      return f(float16{});
    case DataType::kBFloat16:
      return f(bfloat16{});
    case DataType::kFloat32:
      return f(float{});
    case DataType::kFloat64:
      return f(double{});
    case DataType::kInt32:
      return f(int32_t{});
    case DataType::kInt64:
      return f(int64_t{});
    default:
      return absl::InternalError("sparse: unexpected value dtype");  // the schema admits no other
  }
}

// The job of the COO-to-CSR kernels, coo_to_csr's and graph_from_edges'.
struct CooPlan {
  int64_t m = 0, n = 0;        // the output's shape (graph_from_edges: n x n)
  bool symmetric = false;      // graph_from_edges: every edge both ways, self loops dropped
  bool sum_duplicates = true;  // false: duplicates stay, in input order
};

// The sort key of entry (r, c): r * n + c, so key order is row-major order. The plan's
// m * n is checked to stay below kNoKey.
constexpr int64_t kNoKey = INT64_MAX;  // a dropped entry (a self loop): sorts last

template <DeviceType D>
struct ConvertOn;

template <>
struct ConvertOn<DeviceType::kCpu> {
  // COO to CSR: outputs 0 (indptr, int64 [m + 1]), 1 (indices, I; dynamic) and, when
  // out_values >= 0, that output (values' dtype; dynamic).
  template <typename I>
  static absl::Status CooToCsr(KernelContext* ctx, const CooPlan& plan, const Tensor& rows, const Tensor& cols,
                               const Tensor* values, int out_values) {
    const int64_t count = rows.numel();
    const I* r = rows.data<I>();
    const I* c = cols.data<I>();
    const int64_t width = plan.symmetric ? 2 : 1;
    std::vector<int64_t> keys(static_cast<size_t>(count * width));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t a = static_cast<int64_t>(r[i]), b = static_cast<int64_t>(c[i]);
      if (a < 0 || a >= plan.m || b < 0 || b >= plan.n) return EntryOutOfRange(*ctx, plan, i, a, b);
      if (plan.symmetric) {
        keys[2 * i] = a == b ? kNoKey : a * plan.n + b;
        keys[2 * i + 1] = a == b ? kNoKey : b * plan.n + a;
      } else {
        keys[i] = a * plan.n + b;
      }
    }
    std::vector<int64_t> order(keys.size());
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return keys[x] < keys[y]; });
    // The runs of equal keys (each entry its own run when duplicates stay).
    std::vector<int64_t> run_start;
    for (size_t k = 0; k < order.size(); ++k) {
      const int64_t key = keys[order[k]];
      if (key == kNoKey) break;
      if (k == 0 || !plan.sum_duplicates || key != keys[order[k - 1]]) run_start.push_back(static_cast<int64_t>(k));
    }
    const int64_t nnz = static_cast<int64_t>(run_start.size());
    KPS_ASSIGN_OR_RETURN(Tensor * indices, ctx->AllocateOutput(1, Shape{nnz}, cols.dtype()));
    int64_t* ptr = ctx->output(0).data<int64_t>();
    std::fill(ptr, ptr + plan.m + 1, int64_t{0});
    I* idx = indices->data<I>();
    for (int64_t u = 0; u < nnz; ++u) {
      const int64_t key = keys[order[run_start[u]]];
      idx[u] = static_cast<I>(key % plan.n);
      ++ptr[key / plan.n + 1];
    }
    std::partial_sum(ptr, ptr + plan.m + 1, ptr);
    if (out_values < 0) return absl::OkStatus();
    const int64_t total = static_cast<int64_t>(order.size());
    return VisitSparseValueType(values->dtype(), [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      KPS_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(out_values, Shape{nnz}, values->dtype()));
      const T* v = values->data<T>();
      T* o = out->data<T>();
      for (int64_t u = 0; u < nnz; ++u) {
        const int64_t end = u + 1 < nnz ? run_start[u + 1] : total;
        DupSum<T> s = DupSum<T>(0);
        for (int64_t k = run_start[u]; k < end && keys[order[k]] != kNoKey; ++k) {
          s += static_cast<DupSum<T>>(v[order[k] / width]);
        }
        o[u] = static_cast<T>(s);
      }
      return absl::OkStatus();
    });
  }

  // The transpose of an m x n CSR matrix (a counting sort by column; rows stay in order
  // within each column): outputs 0 (indptr, int64 [n + 1]), 1 (indices, I [nnz]) and
  // 2 (values [nnz], or [0] for a pattern).
  template <typename P, typename I>
  static absl::Status Transpose(KernelContext* ctx, int64_t n, const Tensor& indptr, const Tensor& indices,
                                const Tensor* values) {
    const int64_t m = indptr.numel() - 1, nnz = indices.numel();
    const P* ptr = indptr.data<P>();
    const I* idx = indices.data<I>();
    int64_t* tptr = ctx->output(0).data<int64_t>();
    I* tidx = ctx->output(1).data<I>();
    std::fill(tptr, tptr + n + 1, int64_t{0});
    for (int64_t k = 0; k < nnz; ++k) ++tptr[static_cast<int64_t>(idx[k]) + 1];
    std::partial_sum(tptr, tptr + n + 1, tptr);
    std::vector<int64_t> next(tptr, tptr + n);
    std::vector<int64_t> dest(static_cast<size_t>(nnz));
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t k = static_cast<int64_t>(ptr[r]); k < static_cast<int64_t>(ptr[r + 1]); ++k) {
        const int64_t d = next[static_cast<size_t>(idx[k])]++;
        tidx[d] = static_cast<I>(r);
        dest[k] = d;
      }
    }
    if (values == nullptr) return absl::OkStatus();
    return VisitSparseValueType(values->dtype(), [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      const T* v = values->data<T>();
      T* o = ctx->output(2).data<T>();
      for (int64_t k = 0; k < nnz; ++k) o[dest[k]] = v[k];
      return absl::OkStatus();
    });
  }

  // The largest vertex id of an edge list (-1 for none); a negative id is an error.
  template <typename I>
  static absl::StatusOr<int64_t> MaxVertex(const CallView& call, const Tensor& src, const Tensor& dst) {
    int64_t most = -1;
    for (int side = 0; side < 2; ++side) {
      const Tensor& t = side == 0 ? src : dst;
      const I* p = t.data<I>();
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (p[i] < 0) return NegativeVertex(call, side, i, static_cast<int64_t>(p[i]));
        most = std::max(most, static_cast<int64_t>(p[i]));
      }
    }
    return most;
  }

  static absl::Status EntryOutOfRange(const CallView& call, const CooPlan& plan, int64_t i, int64_t r, int64_t c);
  static absl::Status NegativeVertex(const CallView& call, int side, int64_t i, int64_t v);
};

template <>
struct ConvertOn<DeviceType::kCuda> {
  template <typename I>
  static absl::Status CooToCsr(KernelContext* ctx, const CooPlan& plan, const Tensor& rows, const Tensor& cols,
                               const Tensor* values, int out_values);
  template <typename P, typename I>
  static absl::Status Transpose(KernelContext* ctx, int64_t n, const Tensor& indptr, const Tensor& indices,
                                const Tensor* values);
  template <typename I>
  static absl::StatusOr<int64_t> MaxVertex(const CallView& call, const Tensor& src, const Tensor& dst,
                                           const Stream& stream);
};

// The index dtype of a kernel (I: int32_t or int64_t) and the other's, as a call.
template <typename F>
absl::Status VisitIndexType(DataType dt, F&& f) {
  if (dt == DataType::kInt64) return f(int64_t{});
  return f(int32_t{});
}

// coo_to_csr: rows, cols (I), values? -> indptr, indices, values.
template <DeviceType D, typename I>
class CooToCsrKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    CooPlan plan;
    plan.m = ctx->Attr<int64_t>("num_rows");
    plan.n = ctx->Attr<int64_t>("num_cols");
    plan.sum_duplicates = ctx->Attr<bool>("sum_duplicates");
    KPS_ASSIGN_OR_RETURN(const std::vector<Tensor> in, ContiguousInputs(*ctx));
    const Tensor &rows = in[0], &cols = in[1], &values = in[2];
    if (!values.defined()) KPS_RETURN_IF_ERROR(ctx->AllocateOutput(2, Shape{0}, DataType::kFloat32).status());
    return ConvertOn<D>::template CooToCsr<I>(ctx, plan, rows, cols, values.defined() ? &values : nullptr,
                                              values.defined() ? 2 : -1);
  }
};

// graph_from_edges: src, dst (I) -> the symmetric simple graph's indptr, indices.
template <DeviceType D, typename I>
class GraphFromEdgesKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const std::vector<Tensor> in, ContiguousInputs(*ctx));
    const Tensor &src = in[0], &dst = in[1];
    CooPlan plan;
    plan.symmetric = true;
    plan.m = plan.n = ctx->Attr<int64_t>("num_vertices");
    if (plan.m < 0) {  // max id + 1: indptr is a dynamic output
      int64_t most = -1;
      if constexpr (D == DeviceType::kCpu) {
        KPS_ASSIGN_OR_RETURN(most, ConvertOn<D>::template MaxVertex<I>(*ctx, src, dst));
      } else {
        KPS_ASSIGN_OR_RETURN(most, ConvertOn<D>::template MaxVertex<I>(*ctx, src, dst, ctx->stream()));
      }
      plan.m = plan.n = most + 1;
      KPS_RETURN_IF_ERROR(ctx->AllocateOutput(0, Shape{plan.m + 1}, DataType::kInt64).status());
    }
    if (plan.m > (int64_t{1} << 31)) {
      return ctx->Error("the graph has ", plan.m, " vertices; graph_from_edges takes at most 2^31");
    }
    return ConvertOn<D>::template CooToCsr<I>(ctx, plan, src, dst, nullptr, -1);
  }
};

// csr_transpose: indptr (P), indices (I), values? -> the transpose's indptr, indices, values.
template <DeviceType D, typename I>
class CsrTransposeKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const std::vector<Tensor> in, ContiguousInputs(*ctx));
    const Tensor &indptr = in[0], &indices = in[1], &values = in[2];
    CsrRules rules;
    rules.n = ctx->Attr<int64_t>("num_cols");
    rules.n_from = "attribute 'num_cols'";
    if (ctx->Attr<bool>("check")) KPS_RETURN_IF_ERROR(CheckCsr(*ctx, indptr, indices, rules));
    return VisitIndexType(indptr.dtype(), [&](auto p) {
      using P = decltype(p);
      return ConvertOn<D>::template Transpose<P, I>(ctx, rules.n, indptr, indices,
                                                    values.defined() ? &values : nullptr);
    });
  }
};

// csr_validate: the checks alone; out = nnz.
template <DeviceType D, typename I>
class CsrValidateKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const std::vector<Tensor> in, ContiguousInputs(*ctx));
    const Tensor &indptr = in[0], &indices = in[1];
    CsrRules rules;
    rules.n = ctx->Attr<int64_t>("num_cols");
    rules.n_from = "attribute 'num_cols'";
    rules.sorted = ctx->Attr<bool>("sorted");
    rules.no_diagonal = ctx->Attr<bool>("no_self_loops");
    KPS_RETURN_IF_ERROR(CheckCsr(*ctx, indptr, indices, rules));
    const int64_t nnz = indices.numel();
    return CopyBytes(ctx->output(0).raw_data(), D, &nnz, DeviceType::kCpu, sizeof(nnz), ctx->stream());
  }
};

}  // namespace sparse
}  // namespace kps
