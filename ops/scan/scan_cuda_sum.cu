// CUDA kernels of cumsum and cumprod (scan_launch.cuh).
#include "ops/scan/scan_launch.cuh"

namespace kps {
namespace scan {

KPS_REGISTER_KERNEL_FOR_TYPES("cumsum", DeviceType::kCuda, CudaScanKernel<SumMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("cumprod", DeviceType::kCuda, CudaScanKernel<ProdMaker>::Kernel, KPS_ALL_CPP_TYPES);

}  // namespace scan
}  // namespace kps
