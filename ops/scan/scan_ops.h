// The scan ops: which scanner each op runs (a Maker per op, shared by its CPU and CUDA
// kernels), the [outer, length, inner] view of a call, the CPU loop, and the kernel
// template both devices instantiate.
#pragma once

#include <cstdint>

#include "ops/axis.h"
#include "registry/data_type.h"  // KPS_ALL_CPP_TYPES, AllDataTypes()
#include "ops/ops.h"
#include "ops/scan/scanners.h"
#include "registry/kernel.h"

namespace kps {
namespace scan {

#define KPS_SCAN_FLOAT_CPP_TYPES KPS_FLOAT_CPP_TYPES

// A scan of a contiguous tensor along one dim is `outer` independent problems of
// `inner` interleaved columns of `length` elements: element (o, p, i) lives at
// (o * length + p) * inner + i.
struct ScanShape {
  int64_t outer = 1, length = 1, inner = 1;
  bool exclusive = false, reverse = false;
};

// The call's lines along `dim` (ops/axis.h) and its exclusive/reverse flags.
ScanShape MakeScanShape(const CallView& call, int dim);

template <typename T>
struct SumMaker {
  static SumScanner<T> Make(const CallView&) { return {}; }
};
template <typename T>
struct ProdMaker {
  static ProdScanner<T> Make(const CallView&) { return {}; }
};
template <typename T>
struct MaxMaker {
  static ExtremeScanner<T, true> Make(const CallView&) { return {}; }
};
template <typename T>
struct MinMaker {
  static ExtremeScanner<T, false> Make(const CallView&) { return {}; }
};
template <typename T>
struct LogSumExpMaker {
  static LogSumExpScanner<T> Make(const CallView&) { return {}; }
};
template <typename T>
struct DiscountMaker {
  static DiscountScanner<T> Make(const CallView& call) {
    DiscountScanner<T> s;
    s.gamma = static_cast<typename DiscountScanner<T>::M>(call.Attr<double>("gamma"));
    return s;
  }
};

// The scan of one column, in order, on the host.
template <typename Scanner>
void CpuScan(const typename Scanner::In* x, const ScanShape& sh, const Scanner& s, typename Scanner::Out* out,
             int64_t* index) {
  for (int64_t o = 0; o < sh.outer; ++o) {
    for (int64_t i = 0; i < sh.inner; ++i) {
      const int64_t base = o * sh.length * sh.inner + i;
      typename Scanner::Acc acc = s.Identity();
      for (int64_t p = 0; p < sh.length; ++p) {
        const int64_t e = sh.reverse ? sh.length - 1 - p : p;
        const int64_t off = base + e * sh.inner;
        const typename Scanner::Acc prefix = acc;
        acc = s.Combine(acc, s.Make(x[off], e));
        const typename Scanner::Acc& shown = sh.exclusive ? prefix : acc;
        out[off] = sh.exclusive ? s.ExclusiveValue(shown) : s.Value(shown);
        if constexpr (Scanner::kHasIndex) index[off] = s.Index(shown);
      }
    }
  }
}

// Runs run(x, shape, scanner, out, index) on the call's input made contiguous.
template <template <typename> class Maker, typename T, typename Run>
absl::Status RunScan(KernelContext* ctx, Run&& run) {
  const Tensor& in = ctx->input(0);
  KPS_ASSIGN_OR_RETURN(const int dim, ResolveDimAttr(*ctx));
  const ScanShape sh = MakeScanShape(*ctx, dim);
  const auto scanner = Maker<T>::Make(*ctx);
  using S = std::remove_cv_t<decltype(scanner)>;
  if (in.numel() == 0) return absl::OkStatus();
  KPS_ASSIGN_OR_RETURN(const Tensor x, ops::AsContiguous(in, ctx->stream()));
  int64_t* index = nullptr;
  if constexpr (S::kHasIndex) index = ctx->output(1).data<int64_t>();
  return run(x.data<T>(), sh, scanner, ctx->output(0).data<typename S::Out>(), index);
}

template <template <typename> class Maker>
struct CpuScanKernel {
  template <typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      return RunScan<Maker, T>(ctx, [](const T* x, const ScanShape& sh, const auto& s, auto* out, int64_t* index) {
        CpuScan(x, sh, s, out, index);
        return absl::OkStatus();
      });
    }
  };
};

}  // namespace scan
}  // namespace kps
