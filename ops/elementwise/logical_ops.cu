// Logical binary ops over every dtype (nonzero is true), bool out.
#include "functors/functors.h"
#include "registry/data_type.h"
#include "ops/elementwise/elementwise_op.cuh"

namespace kps {
namespace elementwise {

KPS_ELEMENTWISE_OP("logical_and", 2, LogicalAndFunctor, kBool, "x && y (nonzero is true).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_OP("logical_or", 2, LogicalOrFunctor, kBool, "x || y (nonzero is true).", KPS_ALL_CPP_TYPES);
KPS_ELEMENTWISE_OP("logical_xor", 2, LogicalXorFunctor, kBool, "exactly one of x, y nonzero.", KPS_ALL_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
