// CUDA kernels of cummax and cummin (scan_launch.cuh).
#include "ops/scan/scan_launch.cuh"

namespace kps {
namespace scan {

KPS_REGISTER_KERNEL_FOR_TYPES("cummax", DeviceType::kCuda, CudaScanKernel<MaxMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("cummin", DeviceType::kCuda, CudaScanKernel<MinMaker>::Kernel, KPS_ALL_CPP_TYPES);

}  // namespace scan
}  // namespace kps
