// More unary elementwise ops (math, rounding, predicates): one line each.
#include "functors/functors.h"
#include "registry/data_type.h"
#include "ops/elementwise/elementwise_op.cuh"

namespace kps {
namespace elementwise {

KPS_ELEMENTWISE_OP("rsqrt", 1, RsqrtFunctor, kSameAsInput, "1 / sqrt(x).", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("reciprocal", 1, ReciprocalFunctor, kSameAsInput, "1 / x (IEEE).", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("square", 1, SquareFunctor, kSameAsInput, "x * x; integers wrap.", KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_OP("sign", 1, SignFunctor, kSameAsInput, "-1, 0 or 1 (NaN stays NaN).", KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_OP("sin", 1, SinFunctor, kSameAsInput, "sin x.", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("cos", 1, CosFunctor, kSameAsInput, "cos x.", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("floor", 1, FloorFunctor, kSameAsInput, "largest integral value <= x.", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("ceil", 1, CeilFunctor, kSameAsInput, "smallest integral value >= x.", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("round", 1, RoundFunctor, kSameAsInput, "nearest integral value, halves to even.",
                   KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("gelu", 1, GeluFunctor, kSameAsInput, "x * Phi(x) (erf form).", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("silu", 1, SiluFunctor, kSameAsInput, "x * sigmoid(x).", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("logical_not", 1, LogicalNotFunctor, kBool, "x == 0.", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_OP("isnan", 1, IsNanFunctor, kBool, "x is NaN.", KPS_FLOAT_CPP_TYPES);
KPS_ELEMENTWISE_OP("isinf", 1, IsInfFunctor, kBool, "x is +inf or -inf.", KPS_FLOAT_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
