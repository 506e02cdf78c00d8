// The ops argmax and argmin (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REDUCE_OP("argmax", kIndex, true, ArgMaxReducer, KPS_ALL_CPP_TYPES)
    .Doc("Position of the maximum within the reduced extent (row-major over `dims`; the flat index when dims "
         "is empty): the first NaN if any, else the first maximum. Empty extent: an error.");
KPS_REDUCE_OP("argmin", kIndex, true, ArgMinReducer, KPS_ALL_CPP_TYPES)
    .Doc("Position of the minimum within the reduced extent (see argmax): the first NaN if any, else the first "
         "minimum. Empty extent: an error.");

}  // namespace reduce
}  // namespace kps
