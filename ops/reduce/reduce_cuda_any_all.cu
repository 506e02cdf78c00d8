// The ops any, all and count_nonzero (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REDUCE_OP("any", kBool, false, AnyReducer, KPS_ALL_CPP_TYPES)
    .Doc("Whether any element over `dims` is nonzero (NaN counts as nonzero). Empty extent: false.");
KPS_REDUCE_OP("all", kBool, false, AllReducer, KPS_ALL_CPP_TYPES)
    .Doc("Whether every element over `dims` is nonzero (NaN counts as nonzero). Empty extent: true.");
KPS_REDUCE_OP("count_nonzero", kCount, false, CountNonzeroReducer, KPS_ALL_CPP_TYPES)
    .Doc("How many elements over `dims` are nonzero (NaN counts as nonzero, -0.0 does not), as int64. Empty "
         "extent: 0.");

}  // namespace reduce
}  // namespace kps
