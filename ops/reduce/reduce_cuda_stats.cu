// The ops logsumexp, var and std (var and std share the Welford reducer) (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REDUCE_OP("logsumexp", kFloatOnly, false, LogSumExpReducer, KPS_REDUCE_FLOAT_CPP_TYPES)
    .Doc("log(sum(exp(x))) over `dims` in one stable pass (a running max rescales the running sum): no overflow "
         "for large x; all -inf gives -inf, +inf gives +inf, NaN gives NaN. Empty extent: -inf.");
KPS_REDUCE_OP("var", kFloatOnly, false, VarMaker, KPS_REDUCE_FLOAT_CPP_TYPES)
    .Attr<double>("correction", 1.0, "the divisor is N - correction (1: the sample variance)")
    .Doc("Variance over `dims` by Welford's algorithm: M2 / (N - correction); NaN when N - correction <= 0.");
KPS_REDUCE_OP("std", kFloatOnly, false, StdMaker, KPS_REDUCE_FLOAT_CPP_TYPES)
    .Attr<double>("correction", 1.0, "the divisor is N - correction (1: the sample standard deviation)")
    .Doc("Standard deviation over `dims`: sqrt of var (Welford); NaN when N - correction <= 0.");

}  // namespace reduce
}  // namespace kps
