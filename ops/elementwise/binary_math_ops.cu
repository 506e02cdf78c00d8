// Binary arithmetic ops without attributes: one line each.
#include "functors/functors.h"
#include "ops/elementwise/elementwise_op.cuh"

namespace kps {
namespace elementwise {

KPS_ELEMENTWISE_OP("maximum", 2, MaxFunctor, kSameAsInput, "max(x, y); NaN if either is NaN.", KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_OP("minimum", 2, MinFunctor, kSameAsInput, "min(x, y); NaN if either is NaN.", KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_OP("div", 2, DivFunctor, kSameAsInput,
                   "x / y; floats IEEE, integers truncate and x / 0 == 0.", KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_OP("floor_divide", 2, FloorDivFunctor, kSameAsInput,
                   "floor of the exact x / y (Python's //: floor_divide(1.0, 0.1) == 9.0); floats: x / 0 is "
                   "+-inf or NaN; integers round toward -inf and x // 0 == 0.",
                   KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_OP("remainder", 2, RemainderFunctor, kSameAsInput,
                   "x - floor_divide(x, y) * y with the sign of y (Python's %); floats: x % 0 is NaN; "
                   "integers: x % 0 == 0.",
                   KPS_SIGNED_CPP_TYPES);
KPS_ELEMENTWISE_OP("pow", 2, PowFunctor, kSameAsInput, "x ** y; integers exact modulo 2^bits.",
                   KPS_SIGNED_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
