// Comparison ops: bool results, every dtype, one line each.
#include "functors/functors.h"
#include "registry/data_type.h"
#include "ops/elementwise/elementwise_op.cuh"

namespace kps {
namespace elementwise {

KPS_ELEMENTWISE_OP("eq", 2, EqualFunctor, kBool, "x == y (NaN != NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_OP("ne", 2, NotEqualFunctor, kBool, "x != y (NaN != NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_OP("lt", 2, LessThanFunctor, kBool, "x < y (false with NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_OP("le", 2, LessEqualFunctor, kBool, "x <= y (false with NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_OP("gt", 2, GreaterThanFunctor, kBool, "x > y (false with NaN).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_OP("ge", 2, GreaterEqualFunctor, kBool, "x >= y (false with NaN).", KPS_ALL_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
