// The reduction ops: which reducer each op runs (a Maker per op, shared by its CPU and
// CUDA kernels), the kernel template both devices instantiate, and the schema helper.
//
// Adding a reduction op takes a reducer (reducers.h), a Maker, one KPS_REDUCE_OP line in
// reduce_op.cc (schema and CPU kernel) and one registration in a reduce_cuda_*.cu file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "registry/data_type.h"  // KPS_ALL_CPP_TYPES, AllDataTypes()
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
};

// A schema with input x, output out, attributes dims and keepdim, and the inference of
// `rule`. `needs_identity`: reducing an empty extent is an error (max, argmax, ...).
OpSchemaBuilder& ReduceSchema(OpSchemaBuilder&& builder, OutRule rule, bool needs_identity);

#define KPS_REDUCE_OP(name, rule, needs_identity)                                                   \
  static ::kps::internal::OpRegistrationTrigger KPS_CONCAT(kps_reduce_op_, __COUNTER__) =           \
      ::kps::reduce::ReduceSchema(::kps::OpSchemaBuilder(name, __FILE__, __LINE__), ::kps::reduce::OutRule::rule, \
                                   needs_identity)

// ---- Makers: the reducer of one call --------------------------------------------------

template <typename T>
struct SumMaker {
  static SumReducer<T> Make(const CallView&, const ReducePlan&) { return {}; }
};
template <typename T>
struct MeanMaker {
  static SumReducer<T> Make(const CallView&, const ReducePlan& plan) {
    SumReducer<T> r;
    r.mean = true;
    r.divisor = static_cast<typename SumReducer<T>::Acc>(plan.reduce_size);  // 0: NaN, as documented
    return r;
  }
};
template <typename T>
struct ProdMaker {
  static ProdReducer<T> Make(const CallView&, const ReducePlan&) { return {}; }
};
template <typename T>
struct MaxMaker {
  static MaxMinReducer<T, true> Make(const CallView&, const ReducePlan&) { return {}; }
};
template <typename T>
struct MinMaker {
  static MaxMinReducer<T, false> Make(const CallView&, const ReducePlan&) { return {}; }
};
template <typename T>
struct AnyMaker {
  static AnyAllReducer<T, true> Make(const CallView&, const ReducePlan&) { return {}; }
};
template <typename T>
struct AllMaker {
  static AnyAllReducer<T, false> Make(const CallView&, const ReducePlan&) { return {}; }
};
template <typename T>
struct ArgMaxMaker {
  static ArgReducer<T, true> Make(const CallView&, const ReducePlan&) { return {}; }
};
template <typename T>
struct ArgMinMaker {
  static ArgReducer<T, false> Make(const CallView&, const ReducePlan&) { return {}; }
};
template <typename T>
struct LogSumExpMaker {
  static LogSumExpReducer<T> Make(const CallView&, const ReducePlan&) { return {}; }
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

// The plan and reducer of the call in `ctx`, handed to run(x, plan, reducer, out).
template <template <typename> class Maker, typename T, typename Run>
absl::Status RunReduce(KernelContext* ctx, Run&& run) {
  const Tensor& x = ctx->input(0);
  KPS_ASSIGN_OR_RETURN(const uint32_t mask, ReducedDimMask(*ctx));
  const ReducePlan plan = MakeReducePlan(x, mask);
  const auto reducer = Maker<T>::Make(*ctx, plan);
  using Out = typename decltype(reducer)::Out;
  return run(x.data<T>(), plan, reducer, ctx->output(0).template data<Out>());
}

// The CPU loop: each output folds its reduced elements in index order, in blocks of
// kCpuBlock whose states are then combined. Blocking keeps float sums (and Welford's
// moments) accurate over long extents: the rounding error grows with the block length
// plus the block count, not with R.
inline constexpr int64_t kCpuBlock = 4096;

template <typename Reducer>
void CpuReduce(const typename Reducer::In* x, const ReducePlan& plan, const Reducer& r, typename Reducer::Out* out) {
  const int64_t R = plan.reduce_size;
  for (int64_t o = 0; o < plan.num_outputs; ++o) {
    typename Reducer::Acc acc = r.Identity();
    if (R > 0) {
      const typename Reducer::In* base = x + plan.out.Offset(o);
      const bool linear = plan.red.rank <= 1;
      const int64_t stride = plan.red.rank == 1 ? plan.red.strides[0] : 0;
      for (int64_t begin = 0; begin < R; begin += kCpuBlock) {
        const int64_t end = std::min(R, begin + kCpuBlock);
        typename Reducer::Acc part = r.Identity();
        for (int64_t i = begin; i < end; ++i) {
          part = r.Accumulate(part, base[linear ? i * stride : plan.red.Offset(i)], i);
        }
        acc = r.Combine(acc, part);
      }
    }
    out[o] = r.Finalize(acc);
  }
}

template <template <typename> class Maker>
struct CpuReduceKernel {
  template <typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      return RunReduce<Maker, T>(ctx, [](const T* x, const ReducePlan& plan, const auto& reducer, auto* out) {
        CpuReduce(x, plan, reducer, out);
        return absl::OkStatus();
      });
    }
  };
};

}  // namespace reduce
}  // namespace kps
