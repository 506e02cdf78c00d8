// The CUDA kernel every reduction op registers: the op's Maker builds the reducer and
// LaunchReduce (reduce_launch.cuh) runs it. The registrations are spread over the
// reduce_cuda_*.cu files so their instantiations compile in parallel.
#pragma once

#include "ops/reduce/reduce_launch.cuh"
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
