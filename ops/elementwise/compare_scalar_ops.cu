// The scalar forms of the comparison and logical ops (x op other), bool out.
#include "functors/functors.h"
#include "registry/data_type.h"
#include "ops/elementwise/elementwise_op.cuh"

namespace kps {
namespace elementwise {

KPS_ELEMENTWISE_SCALAR_OP("eq", EqualFunctor, kBool, "x == other (NaN != NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("ne", NotEqualFunctor, kBool, "x != other (NaN != NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("lt", LessThanFunctor, kBool, "x < other (false with NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("le", LessEqualFunctor, kBool, "x <= other (false with NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("gt", GreaterThanFunctor, kBool, "x > other (false with NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("ge", GreaterEqualFunctor, kBool, "x >= other (false with NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("logical_and", LogicalAndFunctor, kBool, "x && other (nonzero is true).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("logical_or", LogicalOrFunctor, kBool, "x || other (nonzero is true).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("logical_xor", LogicalXorFunctor, kBool, "exactly one of x, other nonzero.",
                          KPS_ALL_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
