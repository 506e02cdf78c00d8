// The CUDA part of every reduction op's kernel (ReduceKernel in reduce_ops.h: LaunchReduce
// in reduce_dispatch.cuh), and KPS_REDUCE_OP, which registers an op's schema and its CPU
// and CUDA kernels. The ops are spread over the reduce_cuda_*.cu files so that their
// instantiations compile in parallel.
#pragma once

#include "ops/reduce/reduce_dispatch.cuh"
#include "ops/reduce/reduce_ops.h"

namespace kps {
namespace reduce {

template <>
struct ReduceOn<DeviceType::kCuda> {
  template <typename Reducer>
  static absl::Status Run(const CombinerIn<Reducer>* x, const ReducePlan& plan, const Reducer& r,
                          CombinerOut<Reducer>* out, const Stream& stream) {
    return LaunchReduce(x, plan, r, out, stream);
  }
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
  KPS_REGISTER_DEVICE_KERNELS(name, ::kps::reduce::ReduceKernel<ReducerOrMaker>::Kernel, __VA_ARGS__);          \
  static ::kps::internal::OpRegistrationTrigger KPS_CONCAT(kps_reduce_op_, __COUNTER__) =                        \
      ::kps::reduce::ReduceSchema(::kps::OpSchemaBuilder(name, __FILE__, __LINE__), ::kps::reduce::OutRule::rule, \
                                   needs_identity)
