// The ops sum and mean (one reducer: mean is the sum over the count) (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REDUCE_OP("sum", kSumLike, false, SumReducer, KPS_ALL_CPP_TYPES)
    .Doc("Sum over `dims`. float16/bfloat16/float32 accumulate in float, float64 in double, bool and integers "
         "in int64 (wrapping). Empty extent: 0. Deterministic: the same input gives the same bits every run.");
KPS_REDUCE_OP("mean", kFloatOnly, false, MeanMaker, KPS_REDUCE_FLOAT_CPP_TYPES)
    .Doc("Mean over `dims` (the sum, accumulated as for sum, over the count). Empty extent: NaN.");

}  // namespace reduce
}  // namespace kps
