// example_softmax: softmax over the last dim, out = exp(x - max) / sum(exp(x - max)) per
// row; the second example of an op written outside KPS, from its public primitives and
// functors alone.
#pragma once

#include <cmath>

#include "functors/binary.h"
#include "functors/macros.h"
#include "functors/unary.h"

namespace example {

// The op's math, shared by the CPU and CUDA kernels. Every dtype computes in float.

// exp(x - max): a row's numerators once its max is known. Subtracting the max keeps
// exp from overflowing (rows of 100s would give inf / inf = NaN otherwise).
struct ExpShiftedFunctor {
  float max;
  KPS_FUNCTOR_HD float operator()(float x) const { return kps::ExpFunctor<float>()(x - max); }
};

// exp(x - max) with KPS's ExpApproxFunctor (the hardware's approximate exponential: one
// multiply and one MUFU.EX2 on the GPU), for bfloat16 rows, whose outputs round to 8
// bits: expf's range reduction (about ten instructions), twice per element, held the
// bfloat16 kernel below the bandwidth of a row sum. x - max is exact wherever the two are
// within a factor of 2, so the error is the functor's (about 2 + |x - max| ulp of float),
// far below bfloat16's. NaN stays NaN, x = -inf gives 0, a row of -inf gives NaN, as
// exp(x - max) does.
struct ExpApproxShiftedFunctor {
  float max;
  KPS_FUNCTOR_HD float operator()(float x) const { return kps::ExpApproxFunctor<float>()(x - max); }
};

// e * (1 / sum), rounded once to the output's dtype. A multiply instead of a division per
// element: one more rounding in float (far below bfloat16's), and the division is the
// costliest step of the row once it sits in registers.
template <typename T>
struct NormalizeFunctor {
  float inv_sum;
  KPS_FUNCTOR_HD T operator()(float e) const { return static_cast<T>(e * inv_sum); }
};

}  // namespace example
