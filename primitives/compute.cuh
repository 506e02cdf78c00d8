// Compute primitives: apply a functor to the values a thread holds in registers.
//
//   kps::ElementwiseBinary<float, float, 4, 1>(out, x, y, kps::AddFunctor<float>());
#pragma once

#include "primitives/details/macros.cuh"

namespace kps {

// out[i] = compute(in[i]) for the NX * NY values of this thread.
template <typename InT, typename OutT, int NX, int NY, class OpFunc>
KPS_DEVICE void ElementwiseUnary(OutT* out, const InT* in, OpFunc compute) {
#pragma unroll
  for (int i = 0; i < NX * NY; ++i) out[i] = static_cast<OutT>(compute(in[i]));
}

// out[i] = compute(in1[i], in2[i]) for the NX * NY values of this thread.
template <typename InT, typename OutT, int NX, int NY, class OpFunc>
KPS_DEVICE void ElementwiseBinary(OutT* out, const InT* in1, const InT* in2, OpFunc compute) {
#pragma unroll
  for (int i = 0; i < NX * NY; ++i) out[i] = static_cast<OutT>(compute(in1[i], in2[i]));
}

}  // namespace kps
