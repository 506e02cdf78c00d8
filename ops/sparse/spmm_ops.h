// spmm: shared by its schema (spmm_op.cc) and its kernel, one class template over the
// device (SpmmKernel, registered in spmm_cuda.cu), with the CPU part here and the CUDA
// part (SpmmOn<kCuda>) in spmm_cuda.cu.
//
// A CSR matrix A [m, n] (indptr, indices, values?, as spmv takes it) times a dense b
// [n, k] (row-major; other layouts are packed first): out [m, k] = alpha * (A b) + beta * c
// in the plus-times semiring; in the others, out = (A b) (+) c with (+) the semiring's
// addition. The semirings, their zeros and the parameters (SpmvParams: has_y is "c is
// given") are spmv's (spmv_ops.h), so the two ops agree row for row: column j of spmm's
// result is spmv of column j of b.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "functors/mp_type.h"
#include "ops/sparse/contiguous_inputs.h"
#include "ops/sparse/csr_check.h"
#include "ops/sparse/spmv_ops.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace sparse {

#define KPS_SPMM_CPP_TYPES KPS_FLOAT_CPP_TYPES

template <DeviceType D>
struct SpmmOn;

template <>
struct SpmmOn<DeviceType::kCpu> {
  template <typename T, typename P, typename I>
  static absl::Status Run(const KernelContext& ctx, const SpmvParams& p, const Tensor& indptr, const Tensor& indices,
                          const Tensor* values, const Tensor& b, const Tensor* c) {
    using Acc = MPType<T>;
    const int64_t m = indptr.numel() - 1, nnz = indices.numel(), n = b.shape()[0], k = b.shape()[1];
    const P* ptr = indptr.data<P>();
    const I* idx = indices.data<I>();
    if (k == 0) return absl::OkStatus();
    const T* val = values != nullptr ? values->data<T>() : nullptr;
    const T* bv = b.data<T>();
    const T* cv = c != nullptr ? c->data<T>() : nullptr;
    T* out = ctx.output(0).data<T>();
    std::vector<Acc> acc(static_cast<size_t>(k));
    for (int64_t r = 0; r < m; ++r) {
      std::fill(acc.begin(), acc.end(), SemiringZero<Acc>(p.semiring));
      // Unchecked calls stay in bounds: entries outside [0, nnz) or columns outside
      // [0, n) are skipped.
      const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(ptr[r]));
      const int64_t hi = std::min<int64_t>(nnz, static_cast<int64_t>(ptr[r + 1]));
      for (int64_t e = lo; e < hi; ++e) {
        const int64_t col = static_cast<int64_t>(idx[e]);
        if (col < 0 || col >= n) continue;
        const Acc a = val != nullptr ? static_cast<Acc>(val[e]) : Acc(1);
        const T* brow = bv + col * k;
        for (int64_t j = 0; j < k; ++j) {
          acc[j] = SemiringAdd(p.semiring, acc[j], SemiringMul(p.semiring, a, static_cast<Acc>(brow[j])));
        }
      }
      for (int64_t j = 0; j < k; ++j) {
        const Acc cj = cv != nullptr ? static_cast<Acc>(cv[r * k + j]) : Acc(0);
        out[r * k + j] = static_cast<T>(SpmvFinish(p, acc[j], cj));
      }
    }
    return absl::OkStatus();
  }
};

// spmm's kernel on either device: the attributes read, the inputs made contiguous, the CSR
// checked (CheckCsr, unless check=false), the index dtypes dispatched, then the device's
// part.
template <DeviceType D, typename T>
class SpmmKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    SpmvParams p;
    ParseSemiring(ctx->Attr<std::string>("semiring"), &p.semiring);  // checked by the schema
    p.alpha = ctx->Attr<double>("alpha");
    p.beta = ctx->Attr<double>("beta");
    KPS_ASSIGN_OR_RETURN(const std::vector<Tensor> in, ContiguousInputs(*ctx));
    const Tensor &indptr = in[0], &indices = in[1], &values = in[2], &b = in[3], &c = in[4];
    p.has_values = values.defined();
    p.has_y = c.defined();
    if (ctx->Attr<bool>("check")) {
      CsrRules rules;
      rules.n = b.shape()[0];
      rules.n_from = "b's row count is the matrix's column count";
      KPS_RETURN_IF_ERROR(CheckCsr(*ctx, indptr, indices, rules));
    }
    const Tensor* vp = p.has_values ? &values : nullptr;
    const Tensor* cp = p.has_y ? &c : nullptr;
    const bool p64 = indptr.dtype() == DataType::kInt64, i64 = indices.dtype() == DataType::kInt64;
    if (p64 && i64) return SpmmOn<D>::template Run<T, int64_t, int64_t>(*ctx, p, indptr, indices, vp, b, cp);
    if (p64) return SpmmOn<D>::template Run<T, int64_t, int32_t>(*ctx, p, indptr, indices, vp, b, cp);
    if (i64) return SpmmOn<D>::template Run<T, int32_t, int64_t>(*ctx, p, indptr, indices, vp, b, cp);
    return SpmmOn<D>::template Run<T, int32_t, int32_t>(*ctx, p, indptr, indices, vp, b, cp);
  }
};

}  // namespace sparse
}  // namespace kps
