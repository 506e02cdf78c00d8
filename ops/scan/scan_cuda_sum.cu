// The ops cumsum and cumprod (scan_dispatch.cuh).
#include "ops/scan/scan_dispatch.cuh"

namespace kps {
namespace scan {

KPS_SCAN_OP("cumsum", kSumLike, SumScanner, KPS_ALL_CPP_TYPES)
    .Doc("Running sum along `dim`. float16/bfloat16/float32 accumulate in float, float64 in double, bool and "
         "integers in int64 (wrapping). Deterministic.");
KPS_SCAN_OP("cumprod", kSumLike, ProdScanner, KPS_ALL_CPP_TYPES)
    .Doc("Running product along `dim`; floats accumulate in double, bool and integers in int64 (wrapping).");

}  // namespace scan
}  // namespace kps
