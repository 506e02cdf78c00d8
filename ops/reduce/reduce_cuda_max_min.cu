// The ops max and min (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REDUCE_OP("max", kSame, true, MaxReducer, KPS_ALL_CPP_TYPES)
    .Doc("Maximum over `dims`; any NaN gives NaN, +0.0 beats -0.0. Empty extent: an error (no identity).");
KPS_REDUCE_OP("min", kSame, true, MinReducer, KPS_ALL_CPP_TYPES)
    .Doc("Minimum over `dims`; any NaN gives NaN, -0.0 beats +0.0. Empty extent: an error (no identity).");

}  // namespace reduce
}  // namespace kps
