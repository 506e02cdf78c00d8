// CUDA kernels of max and min (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REGISTER_KERNEL_FOR_TYPES("max", DeviceType::kCuda, CudaReduceKernel<MaxMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("min", DeviceType::kCuda, CudaReduceKernel<MinMaker>::Kernel, KPS_ALL_CPP_TYPES);

}  // namespace reduce
}  // namespace kps
