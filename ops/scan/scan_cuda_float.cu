// The ops logcumsumexp and discounted_cumsum (scan_dispatch.cuh).
#include "ops/scan/scan_dispatch.cuh"

namespace kps {
namespace scan {

KPS_SCAN_OP("logcumsumexp", kFloatOnly, LogSumExpScanner, KPS_SCAN_FLOAT_CPP_TYPES)
    .Doc("log(cumsum(exp(x))) along `dim`, stable (running max rescales the running sum): no overflow for "
         "large x; a -inf prefix gives -inf, +inf gives +inf, NaN gives NaN from there on.");
KPS_SCAN_OP("discounted_cumsum", kFloatOnly, DiscountMaker, KPS_SCAN_FLOAT_CPP_TYPES)
    .RequiredAttr<double>("gamma", "the discount: out[i] = x[i] + gamma * out[i - 1]")
    .Doc("out[i] = x[i] + gamma * out[i-1] along `dim` (reverse: out[i+1]), run as a parallel scan of affine "
         "maps (value, gamma^length); exclusive gives the running value before x[i] is added, gamma * out[i-1].");

}  // namespace scan
}  // namespace kps
