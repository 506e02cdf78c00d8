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

// out[i] = compute(in1[i], in2[i], in3[i]) for the NX * NY values of this thread.
template <typename InT, typename OutT, int NX, int NY, class OpFunc>
KPS_DEVICE void ElementwiseTernary(OutT* out, const InT* in1, const InT* in2, const InT* in3, OpFunc compute) {
#pragma unroll
  for (int i = 0; i < NX * NY; ++i) out[i] = static_cast<OutT>(compute(in1[i], in2[i], in3[i]));
}

// out[i] = compute(args) where args[a] = ins[a][i], for any number of inputs (Arity):
// `compute` takes a pointer to Arity values, e.g. `T operator()(const T* args) const`.
template <typename InT, typename OutT, int NX, int NY, class OpFunc, int Arity>
KPS_DEVICE void ElementwiseAny(OutT* out, InT (*ins)[NX * NY], OpFunc compute) {
#pragma unroll
  for (int i = 0; i < NX * NY; ++i) {
    InT args[Arity];
#pragma unroll
    for (int a = 0; a < Arity; ++a) args[a] = ins[a][i];
    out[i] = static_cast<OutT>(compute(args));
  }
}

// One row against NY rows: out[idy * NX + idx] = compute(in1[idx], in2[idy * NX + idx]).
// `in1` holds NX values (e.g. a bias row), `in2` and `out` NX * NY.
template <typename InT, typename OutT, int NX, int NY, class OpFunc>
KPS_DEVICE void CycleBinary(OutT* out, const InT* in1, const InT* in2, OpFunc compute) {
#pragma unroll
  for (int idy = 0; idy < NY; ++idy) {
#pragma unroll
    for (int idx = 0; idx < NX; ++idx) {
      out[idy * NX + idx] = static_cast<OutT>(compute(in1[idx], in2[idy * NX + idx]));
    }
  }
}

// out[i] = compute() for the NX * NY values of this thread (fill with a constant, or any
// functor without inputs).
template <typename InT, typename OutT, int NX, int NY, class OpFunc>
KPS_DEVICE void ElementwiseConstant(OutT* out, OpFunc compute) {
#pragma unroll
  for (int i = 0; i < NX * NY; ++i) out[i] = static_cast<OutT>(compute());
}

// Draws ReturnsCount random values with one call of `func(rand)` (e.g. curand_uniform4
// on a curandStatePhilox4_32_10_t, which returns a float4) and stores them in
// out[0 .. ReturnsCount): Philox yields 4 values per call, so a thread consumes its
// state 4 values at a time. The caller initializes the state (curand_init with a seed,
// the element's subsequence and an offset), so the stream of numbers depends on the
// seed and offset, not on the launch shape.
template <typename StateType, typename OutT, int ReturnsCount, int BlockSize, class OpFunc>
KPS_DEVICE void ElementwiseRandom(OutT* out, OpFunc func, StateType* rand) {
  const auto values = func(rand);  // float4, double2, uint4 ...: members x, y, ...
  using Element = decltype(values.x);
  const Element* v = reinterpret_cast<const Element*>(&values);
#pragma unroll
  for (int i = 0; i < ReturnsCount; ++i) out[i] = static_cast<OutT>(v[i]);
}

}  // namespace kps
