// spmv: shared by its schema (spmv_op.cc) and its kernel, one class template over the
// device (SpmvKernel, registered in spmv_cuda.cu), with the CPU part here and the CUDA
// part (SpmvOn<kCuda>) in spmv_cuda.cu.
//
// A CSR matrix is three tensors: indptr [m + 1] and indices [nnz] (int32 or int64 each)
// and values [nnz] (absent for a pattern matrix: every stored entry is 1); its column
// count is x's length. out[r] = alpha * (A x)[r] + beta * y[r] in the plus-times
// semiring; in the others, out[r] = (A x)[r] (+) y[r] with (+) the semiring's addition.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "functors/mp_type.h"
#include "ops/sparse/contiguous_inputs.h"
#include "ops/sparse/csr_check.h"
#include "registry/kernel.h"
#include "registry/status.h"

#if defined(__CUDACC__)
#define KPS_SPMV_HD __host__ __device__ __forceinline__
#else
#define KPS_SPMV_HD inline
#endif

namespace kps {
namespace sparse {

#define KPS_SPMV_CPP_TYPES KPS_FLOAT_CPP_TYPES

// The semirings (add, multiply, the add's identity): plus-times, min-plus (shortest
// paths), max-times (most reliable paths), or-and (reachability: nonzero is true).
enum class Semiring : int { kPlusTimes = 0, kMinPlus = 1, kMaxTimes = 2, kOrAnd = 3 };

inline bool ParseSemiring(const std::string& s, Semiring* out) {
  if (s == "plus_times") {
    *out = Semiring::kPlusTimes;
  } else if (s == "min_plus") {
    *out = Semiring::kMinPlus;
  } else if (s == "max_times") {
    *out = Semiring::kMaxTimes;
  } else if (s == "or_and") {
    *out = Semiring::kOrAnd;
  } else {
    return false;
  }
  return true;
}

template <typename Acc>
KPS_SPMV_HD Acc SemiringZero(Semiring s) {
  switch (s) {
    case Semiring::kMinPlus:
      return static_cast<Acc>(INFINITY);  // a constant on host and device alike
    case Semiring::kMaxTimes:
      return -static_cast<Acc>(INFINITY);
    default:
      return Acc(0);
  }
}

template <typename Acc>
KPS_SPMV_HD Acc SemiringAdd(Semiring s, Acc a, Acc b) {
  switch (s) {
    case Semiring::kMinPlus:
      return b < a ? b : a;  // NaN in a stays (a NaN path length is no shorter)
    case Semiring::kMaxTimes:
      return b > a ? b : a;
    case Semiring::kOrAnd:
      return (a != Acc(0) || b != Acc(0)) ? Acc(1) : Acc(0);
    default:
      return a + b;
  }
}

template <typename Acc>
KPS_SPMV_HD Acc SemiringMul(Semiring s, Acc a, Acc x) {
  switch (s) {
    case Semiring::kMinPlus:
      return a + x;
    case Semiring::kOrAnd:
      return (a != Acc(0) && x != Acc(0)) ? Acc(1) : Acc(0);
    default:
      return a * x;
  }
}

// What the kernels read besides the tensors.
struct SpmvParams {
  Semiring semiring = Semiring::kPlusTimes;
  double alpha = 1, beta = 0;
  bool has_values = true, has_y = false;
};

// out[r] from the row's sum in the semiring.
template <typename Acc>
KPS_SPMV_HD Acc SpmvFinish(const SpmvParams& p, Acc sum, Acc y) {
  if (p.semiring == Semiring::kPlusTimes) {
    Acc v = static_cast<Acc>(p.alpha) * sum;
    if (p.has_y && p.beta != 0) v += static_cast<Acc>(p.beta) * y;
    return v;
  }
  return p.has_y ? SemiringAdd(p.semiring, sum, y) : sum;
}

template <DeviceType D>
struct SpmvOn;

template <>
struct SpmvOn<DeviceType::kCpu> {
  template <typename T, typename P, typename I>
  static absl::Status Run(const KernelContext& ctx, const SpmvParams& p, const Tensor& indptr, const Tensor& indices,
                          const Tensor* values, const Tensor& x, const Tensor* y) {
    using Acc = MPType<T>;
    const int64_t m = indptr.numel() - 1, nnz = indices.numel(), n = x.numel();
    const P* ptr = indptr.data<P>();
    const I* idx = indices.data<I>();
    const T* val = values != nullptr ? values->data<T>() : nullptr;
    const T* xv = x.data<T>();
    const T* yv = y != nullptr ? y->data<T>() : nullptr;
    T* out = ctx.output(0).data<T>();
    for (int64_t r = 0; r < m; ++r) {
      Acc sum = SemiringZero<Acc>(p.semiring);
      // Unchecked calls stay in bounds: entries outside [0, nnz) or columns outside
      // [0, n) are skipped.
      const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(ptr[r]));
      const int64_t hi = std::min<int64_t>(nnz, static_cast<int64_t>(ptr[r + 1]));
      for (int64_t k = lo; k < hi; ++k) {
        const int64_t c = static_cast<int64_t>(idx[k]);
        if (c < 0 || c >= n) continue;
        const Acc a = val != nullptr ? static_cast<Acc>(val[k]) : Acc(1);
        sum = SemiringAdd(p.semiring, sum, SemiringMul(p.semiring, a, static_cast<Acc>(xv[c])));
      }
      const Acc yr = yv != nullptr ? static_cast<Acc>(yv[r]) : Acc(0);
      out[r] = static_cast<T>(SpmvFinish(p, sum, yr));
    }
    return absl::OkStatus();
  }
};

// spmv's kernel on either device: the attributes read, the inputs made contiguous, the CSR
// checked (CheckCsr, unless check=false), the index dtypes dispatched, then the device's
// part.
template <DeviceType D, typename T>
class SpmvKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    SpmvParams p;
    ParseSemiring(ctx->Attr<std::string>("semiring"), &p.semiring);  // checked by the schema
    p.alpha = ctx->Attr<double>("alpha");
    p.beta = ctx->Attr<double>("beta");
    KPS_ASSIGN_OR_RETURN(const std::vector<Tensor> in, ContiguousInputs(*ctx));
    const Tensor &indptr = in[0], &indices = in[1], &values = in[2], &x = in[3], &y = in[4];
    p.has_values = values.defined();
    p.has_y = y.defined();
    if (ctx->Attr<bool>("check")) {
      CsrRules rules;
      rules.n = x.numel();
      rules.n_from = "x's length is the matrix's column count";
      KPS_RETURN_IF_ERROR(CheckCsr(*ctx, indptr, indices, rules));
    }
    const Tensor* vp = p.has_values ? &values : nullptr;
    const Tensor* yp = p.has_y ? &y : nullptr;
    const bool p64 = indptr.dtype() == DataType::kInt64, i64 = indices.dtype() == DataType::kInt64;
    if (p64 && i64) return SpmvOn<D>::template Run<T, int64_t, int64_t>(*ctx, p, indptr, indices, vp, x, yp);
    if (p64) return SpmvOn<D>::template Run<T, int64_t, int32_t>(*ctx, p, indptr, indices, vp, x, yp);
    if (i64) return SpmvOn<D>::template Run<T, int32_t, int64_t>(*ctx, p, indptr, indices, vp, x, yp);
    return SpmvOn<D>::template Run<T, int32_t, int32_t>(*ctx, p, indptr, indices, vp, x, yp);
  }
};

}  // namespace sparse
}  // namespace kps
