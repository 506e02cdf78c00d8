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

// log2(e): Exp2ScaledFunctor's arguments are prescaled by it.
inline constexpr float kLog2e = 1.4426950408889634f;

// 2^(x * log2(e) - shift) = e^x / 2^shift, rounded once to Out, with KPS's
// Exp2ApproxFunctor (the hardware's approximate exponential): one fused multiply-add and
// one MUFU.EX2 on the GPU. With shift = max * log2(e) it is exp(x - max); with
// shift = max * log2(e) + log2(sum) it is the softmax itself, so the output needs no
// multiply. For bfloat16 rows, which compute exp(x - max) twice per element (see
// SoftmaxRowInRegistersRaw): expf's range reduction (about ten instructions) held that
// kernel below a bfloat16 row sum's bandwidth. The error is the exponential's (about 2 ulp
// of float) plus the rounding of shift and of the fused x * log2(e) - shift, about
// (|max| + |x - max|) ulp of float: far below bfloat16's 2^-9 for any max below 2^10 or so.
// NaN stays NaN, x = -inf gives 0, and a row of -inf (shift = -inf) gives NaN, as
// exp(x - max) does.
template <typename Out = float>
struct Exp2ScaledFunctor {
  float shift;
  KPS_FUNCTOR_HD Out operator()(float x) const {
    return static_cast<Out>(kps::Exp2ApproxFunctor<float>()(x * kLog2e - shift));
  }
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
