// The scan ops' host side: the schema helper, the [outer, length, inner] view of a call,
// how a call builds its scanner, and the CPU loop. KPS_SCAN_OP (scan_dispatch.cuh)
// registers an op's schema and its CPU and CUDA kernels in one statement: adding a scan
// takes a scanner (a combiner, scanners.h) and that line.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "ops/common/axis.h"
#include "registry/data_type.h"  // KPS_ALL_CPP_TYPES, AllDataTypes()
#include "ops/common/contiguous.h"
#include "ops/common/maker.h"
#include "ops/scan/scanners.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"

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

// The output rule of a scan op: kSumLike (int64 for bool and integers, else x's dtype),
// kExtreme (values in x's dtype and int64 indices), kFloatOnly (floating x only).
enum class ScanRule { kSumLike, kExtreme, kFloatOnly };

// A schema with input x, the outputs of `rule`, and attributes dim, exclusive, reverse.
OpSchemaBuilder& ScanSchema(OpSchemaBuilder&& builder, ScanRule rule);

// One name per scanner, for KPS_SCAN_OP (which takes a template of the element type).
template <typename T>
using MaxScanner = ExtremeScanner<T, true>;
template <typename T>
using MinScanner = ExtremeScanner<T, false>;

// A Maker builds a scanner from the call (an attribute); KPS_SCAN_OP takes either a Maker
// or a scanner, which is then default-constructed (internal::MakeOrConstruct,
// ops/common/maker.h).
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

// The device part of a scan: ScanOn<D>::Run(x, shape, scanner, out, index, stream) scans
// the contiguous x into out (and the positions into index for cummax/cummin). The CUDA
// part is in scan_dispatch.cuh.
template <DeviceType D>
struct ScanOn;

template <>
struct ScanOn<DeviceType::kCpu> {
  template <typename Scanner>
  static absl::Status Run(const CombinerIn<Scanner>* x, const ScanShape& sh, const Scanner& s,
                          CombinerOut<Scanner>* out, int64_t* index, const Stream&) {
    CpuScan(x, sh, s, out, index);
    return absl::OkStatus();
  }
};

// Every scan op's kernel, on either device: the call's shape and its scanner (Maker<T>,
// or the scanner itself) resolved once, the input made contiguous, then the device's part.
template <template <typename> class Maker>
struct ScanKernel {
  template <DeviceType D, typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      const Tensor& in = ctx->input(0);
      KPS_ASSIGN_OR_RETURN(const int dim, ResolveDimAttr(*ctx));
      const ScanShape sh = MakeScanShape(*ctx, dim);
      const auto scanner = ::kps::internal::MakeOrConstruct<Maker<T>>(static_cast<const CallView&>(*ctx));
      using S = std::remove_cv_t<decltype(scanner)>;
      if (in.numel() == 0) return absl::OkStatus();
      KPS_ASSIGN_OR_RETURN(const Tensor x, internal::AsContiguous(in, ctx->stream()));
      int64_t* index = nullptr;
      if constexpr (S::kHasIndex) index = ctx->output(1).data<int64_t>();
      return ScanOn<D>::Run(x.data<T>(), sh, scanner, ctx->output(0).data<typename S::Out>(), index, ctx->stream());
    }
  };
};

}  // namespace scan
}  // namespace kps
