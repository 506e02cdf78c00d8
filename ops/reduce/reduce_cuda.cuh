// The CUDA kernel every reduction op registers (the op's reducer, built by
// MakeReducer, run by LaunchReduce in reduce_dispatch.cuh), and KPS_REDUCE_OP, which
// registers an op's schema, CPU kernel and CUDA kernel. The ops are spread over the
// reduce_cuda_*.cu files so that their instantiations compile in parallel.
#pragma once

#include "ops/reduce/reduce_dispatch.cuh"
#include "ops/reduce/reduce_ops.h"

namespace kps {
namespace reduce {

template <template <typename> class Maker>
struct CudaReduceKernel {
  template <typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      return RunReduce<Maker, T>(ctx, [ctx](const T* x, const ReducePlan& plan, const auto& reducer, auto* out) {
        return LaunchReduce(x, plan, reducer, out, ctx->stream());
      });
    }
  };
};

}  // namespace reduce
}  // namespace kps

// Registers reduction op `name`: its schema (input x; attributes dims and keepdim; the
// output dtype by OutRule `rule`; with `needs_identity`, reducing an empty extent is an
// error), and CPU and CUDA kernels for the element types `...`, both running
// `ReducerOrMaker<T>` (a reducer, or a Maker that builds one from the call). The schema
// builder is the expression's value, so that .Attr(...) and .Doc(...) follow:
//
//   KPS_REDUCE_OP("sum", kSumLike, false, SumReducer, KPS_ALL_CPP_TYPES)
//       .Doc("Sum over `dims`.");
#define KPS_REDUCE_OP(name, rule, needs_identity, ReducerOrMaker, ...)                                          \
  KPS_REGISTER_KERNEL_FOR_TYPES(name, ::kps::DeviceType::kCpu,                                                   \
                                ::kps::reduce::CpuReduceKernel<ReducerOrMaker>::Kernel, __VA_ARGS__);           \
  KPS_REGISTER_KERNEL_FOR_TYPES(name, ::kps::DeviceType::kCuda,                                                  \
                                ::kps::reduce::CudaReduceKernel<ReducerOrMaker>::Kernel, __VA_ARGS__);          \
  static ::kps::internal::OpRegistrationTrigger KPS_CONCAT(kps_reduce_op_, __COUNTER__) =                        \
      ::kps::reduce::ReduceSchema(::kps::OpSchemaBuilder(name, __FILE__, __LINE__), ::kps::reduce::OutRule::rule, \
                                   needs_identity)
