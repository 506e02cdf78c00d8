// CUDA kernels of logcumsumexp and discounted_cumsum (scan_launch.cuh).
#include "ops/scan/scan_launch.cuh"

namespace kps {
namespace scan {

KPS_REGISTER_KERNEL_FOR_TYPES("logcumsumexp", DeviceType::kCuda, CudaScanKernel<LogSumExpMaker>::Kernel, KPS_SCAN_FLOAT_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("discounted_cumsum", DeviceType::kCuda, CudaScanKernel<DiscountMaker>::Kernel, KPS_SCAN_FLOAT_CPP_TYPES);

}  // namespace scan
}  // namespace kps
