// The reduction ops' host side: the schema helper, how a call builds its reducer, and the
// CPU loop. KPS_REDUCE_OP (reduce_cuda.cuh) registers an op's schema and its CPU and CUDA
// kernels in one statement.
//
// Adding a reduction op takes a reducer (a combiner, reducers.h) and one KPS_REDUCE_OP
// line in a reduce_cuda_*.cu file; a reducer that needs the call's attributes or the
// reduced count gets a Maker here (MeanMaker, VarMaker).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "registry/data_type.h"  // KPS_ALL_CPP_TYPES, AllDataTypes()
#include "ops/common/maker.h"
#include "ops/reduce/reduce_plan.h"
#include "ops/reduce/reducers.h"
#include "registry/kernel.h"

namespace kps {
namespace reduce {

#define KPS_REDUCE_FLOAT_CPP_TYPES KPS_FLOAT_CPP_TYPES

// The output dtype of an op from x's dtype.
enum class OutRule {
  kSame,       // max, min
  kSumLike,    // sum, prod: bool and integers -> int64, floats keep their dtype
  kFloatOnly,  // mean, logsumexp, var, std: floats keep their dtype, others are an error
  kBool,       // any, all
  kIndex,      // argmax, argmin: int64
  kCount,      // int64 counts
};

// A schema with input x, output out, attributes dims and keepdim, and the inference of
// `rule`. `needs_identity`: reducing an empty extent is an error (max, argmax, ...).
OpSchemaBuilder& ReduceSchema(OpSchemaBuilder&& builder, OutRule rule, bool needs_identity);

// ---- The reducer of one call ------------------------------------------------------------

// One name per reducer, for KPS_REDUCE_OP (which takes a template of the element type).
template <typename T>
using MaxReducer = MaxMinReducer<T, true>;
template <typename T>
using MinReducer = MaxMinReducer<T, false>;
template <typename T>
using AnyReducer = AnyAllReducer<T, true>;
template <typename T>
using AllReducer = AnyAllReducer<T, false>;
template <typename T>
using ArgMaxReducer = ArgReducer<T, true>;
template <typename T>
using ArgMinReducer = ArgReducer<T, false>;

// Makers: reducers built from the call (an attribute) or the plan (the reduced count).
// KPS_REDUCE_OP takes either a Maker or a reducer, which is then default-constructed
// (internal::MakeOrConstruct, ops/common/maker.h).
template <typename T>
struct MeanMaker {
  static SumReducer<T> Make(const CallView&, const ReducePlan& plan) {
    SumReducer<T> r;
    r.mean = true;
    r.divisor = static_cast<typename SumReducer<T>::Acc>(plan.reduce_size);  // 0: NaN, as documented
    return r;
  }
};
template <typename T, bool kSqrt>
struct WelfordMaker {
  static WelfordReducer<T> Make(const CallView& call, const ReducePlan&) {
    WelfordReducer<T> r;
    r.correction = call.Attr<double>("correction");
    r.sqrt = kSqrt;
    return r;
  }
};
template <typename T>
using VarMaker = WelfordMaker<T, false>;
template <typename T>
using StdMaker = WelfordMaker<T, true>;

// ---- Kernels --------------------------------------------------------------------------

// The CPU loop: each output folds its reduced elements in index order, in blocks of
// kCpuBlock whose states are then combined. Blocking keeps float sums (and Welford's
// moments) accurate over long extents: the rounding error grows with the block length
// plus the block count, not with R.
inline constexpr int64_t kCpuBlock = 4096;

template <typename Reducer>
void CpuReduce(const CombinerIn<Reducer>* x, const ReducePlan& plan, const Reducer& r, CombinerOut<Reducer>* out) {
  const int64_t R = plan.reduce_size;
  for (int64_t o = 0; o < plan.num_outputs; ++o) {
    CombinerAcc<Reducer> acc = r.initial();
    if (R > 0) {
      const CombinerIn<Reducer>* base = x + plan.out.Offset(o);
      const bool linear = plan.red.rank <= 1;
      const int64_t stride = plan.red.rank == 1 ? plan.red.strides[0] : 0;
      for (int64_t begin = 0; begin < R; begin += kCpuBlock) {
        const int64_t end = std::min(R, begin + kCpuBlock);
        CombinerAcc<Reducer> part = r.initial();
        for (int64_t i = begin; i < end; ++i) {
          part = CombinerAccumulate(r, part, base[linear ? i * stride : plan.red.Offset(i)], i);
        }
        acc = r(acc, part);
      }
    }
    out[o] = CombinerFinalize(r, acc);
  }
}

// The device part of a reduction: ReduceOn<D>::Run(x, plan, reducer, out, stream) folds
// x into out as the plan says. The CUDA part is in reduce_dispatch.cuh.
template <DeviceType D>
struct ReduceOn;

template <>
struct ReduceOn<DeviceType::kCpu> {
  template <typename Reducer>
  static absl::Status Run(const CombinerIn<Reducer>* x, const ReducePlan& plan, const Reducer& r,
                          CombinerOut<Reducer>* out, const Stream&) {
    CpuReduce(x, plan, r, out);
    return absl::OkStatus();
  }
};

// Every reduction op's kernel, on either device: the call's plan and its reducer
// (Maker<T>, or the reducer itself), resolved once, then the device's part.
template <template <typename> class Maker>
struct ReduceKernel {
  template <DeviceType D, typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      const Tensor& x = ctx->input(0);
      KPS_ASSIGN_OR_RETURN(const uint32_t mask, ReducedDimMask(*ctx));
      const ReducePlan plan = MakeReducePlan(x, mask);
      const auto reducer = ::kps::internal::MakeOrConstruct<Maker<T>>(static_cast<const CallView&>(*ctx), plan);
      using Out = typename decltype(reducer)::Out;
      return ReduceOn<D>::Run(x.data<T>(), plan, reducer, ctx->output(0).template data<Out>(), ctx->stream());
    }
  };
};

}  // namespace reduce
}  // namespace kps
