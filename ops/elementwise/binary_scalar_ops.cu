// The scalar forms of the arithmetic binary ops (x op other, other a float attribute
// converted to x's dtype).
#include "functors/functors.h"
#include "ops/elementwise/binary_ops.h"
#include "ops/elementwise/elementwise_op.cuh"

namespace kps {
namespace elementwise {

KPS_ELEMENTWISE_SCALAR_OP("add", AddFunctor, kSameAsInput, "x + other; integers wrap.", KPS_ADD_MUL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("sub", SubFunctor, kSameAsInput, "x - other; integers wrap.", KPS_ADD_MUL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("mul", MulFunctor, kSameAsInput, "x * other; integers wrap.", KPS_ADD_MUL_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("maximum", MaxFunctor, kSameAsInput, "max(x, other); NaN if either is NaN.",
                          KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("minimum", MinFunctor, kSameAsInput, "min(x, other); NaN if either is NaN.",
                          KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("div", DivFunctor, kSameAsInput, "x / other; integers truncate and x / 0 == 0.",
                          KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("floor_divide", FloorDivFunctor, kSameAsInput,
                          "floor of the exact x / other (Python's //); floats: x / 0 is +-inf or NaN; integers "
                          "round toward -inf and x // 0 == 0.",
                          KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("remainder", RemainderFunctor, kSameAsInput,
                          "x - floor_divide(x, other) * other with the sign of other (Python's %); floats: x % 0 "
                          "is NaN; integers: x % 0 == 0.",
                          KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_SCALAR_OP("pow", PowFunctor, kSameAsInput, "x ** other; integers exact modulo 2^bits.",
                          KPS_SIGNED_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
