// Unary elementwise ops: one line each (a functor from functors/ and its dtypes).
#include "functors/functors.h"
#include "ops/elementwise/elementwise_op.cuh"

namespace kps {
namespace elementwise {

KPS_ELEMENTWISE_OP("neg", 1, InverseFunctor, kSameAsInput, "-x; integers wrap.", KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_OP("abs", 1, AbsFunctor, kSameAsInput, "|x|; abs(INT_MIN) wraps to INT_MIN.", KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_OP("exp", 1, ExpFunctor, kSameAsInput, "e^x.", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("log", 1, LogFunctor, kSameAsInput, "ln x (x < 0: NaN, 0: -inf).", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("sqrt", 1, SqrtFunctor, kSameAsInput, "sqrt(x), correctly rounded.", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("relu", 1, ReluFunctor, kSameAsInput, "max(x, 0); NaN stays NaN.", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("sigmoid", 1, SigmoidFunctor, kSameAsInput, "1 / (1 + e^-x).", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("tanh", 1, TanhFunctor, kSameAsInput, "tanh x.", KPS_FLOAT_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
