// The scan ops: which scanner each op runs (a Maker per op, shared by its CPU and CUDA
// kernels), the [outer, length, inner] view of a call, the CPU loop, and the kernel
// template both devices instantiate.
#pragma once

#include <cstdint>

#include "ops/common/axis.h"
#include "registry/data_type.h"  // KPS_ALL_CPP_TYPES, AllDataTypes()
#include "ops/common/contiguous.h"
#include "ops/scan/scanners.h"
#include "registry/kernel.h"

namespace kps {
namespace scan {

#define KPS_SCAN_FLOAT_CPP_TYPES KPS_FLOAT_CPP_TYPES

// A scan of a contiguous tensor along one dim is `outer` independent problems of
// `inner` interleaved columns of `length` elements (AxisLines: element (o, p, i) lives at
// (o * length + p) * inner + i), and the call's flags.
struct ScanShape : AxisLines {
  bool exclusive = false, reverse = false;
};

// The call's lines along `dim` (ops/common/axis.h) and its exclusive/reverse flags.
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
void CpuScan(const CombinerIn<Scanner>* x, const ScanShape& sh, const Scanner& s, CombinerOut<Scanner>* out,
             int64_t* index) {
  for (int64_t o = 0; o < sh.outer; ++o) {
    for (int64_t i = 0; i < sh.inner; ++i) {
      const int64_t base = o * sh.length * sh.inner + i;
      CombinerAcc<Scanner> acc = s.initial();
      for (int64_t p = 0; p < sh.length; ++p) {
        const int64_t e = sh.reverse ? sh.length - 1 - p : p;
        const int64_t off = base + e * sh.inner;
        const CombinerAcc<Scanner> prefix = acc;
        acc = s(acc, CombinerMake(s, x[off], e));
        const CombinerAcc<Scanner>& shown = sh.exclusive ? prefix : acc;
        out[off] = sh.exclusive ? s.ExclusiveValue(shown) : CombinerFinalize(s, shown);
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
  KPS_ASSIGN_OR_RETURN(const Tensor x, internal::AsContiguous(in, ctx->stream()));
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
