// The ops cummax and cummin (scan_dispatch.cuh).
#include "ops/scan/scan_dispatch.cuh"

namespace kps {
namespace scan {

KPS_SCAN_OP("cummax", kExtreme, MaxScanner, KPS_ALL_CPP_TYPES)
    .Doc("Running maximum along `dim` and the position that supplied it: ties go to the latest position, NaN "
         "beats every number (values stay NaN from the first NaN on; the index is the latest NaN's).");
KPS_SCAN_OP("cummin", kExtreme, MinScanner, KPS_ALL_CPP_TYPES)
    .Doc("Running minimum along `dim` and its position (ties: the latest; NaN propagates as in cummax).");

}  // namespace scan
}  // namespace kps
