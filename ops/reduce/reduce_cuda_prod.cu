// The ops prod (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REDUCE_OP("prod", kSumLike, false, ProdReducer, KPS_ALL_CPP_TYPES)
    .Doc("Product over `dims`, accumulated like sum. Empty extent: 1.");

}  // namespace reduce
}  // namespace kps
