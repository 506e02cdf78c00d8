// cast: CastFunctor<In, Out> (functors/cast.h) over any (strided) input, for every pair
// of the ten dtypes. The kernels are keyed by the input dtype and pick the output type
// at run time; the CUDA ones are split across two files (float and integer inputs) so
// the hundred pairs build in parallel.
#pragma once

#include "functors/cast.h"
#include "ops/elementwise/broadcast.h"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {

#define KPS_CAST_FLOAT_CPP_TYPES KPS_FLOAT_CPP_TYPES
#define KPS_CAST_INT_CPP_TYPES bool, KPS_INT_CPP_TYPES

// Calls run(CastFunctor<In, Out>(), out_pointer) for the call's output dtype.
template <typename In, typename Run>
absl::Status DispatchCast(KernelContext& ctx, Run&& run) {
  Tensor& out = ctx.output(0);
  return VisitDataType(out.dtype(), [&](auto tag) -> absl::Status {
    using Out = decltype(tag);
    return run(CastFunctor<In, Out>(), out.data<Out>());
  });
}

}  // namespace elementwise
}  // namespace kps
