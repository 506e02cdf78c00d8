// CUDA kernels of any and all (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REGISTER_KERNEL_FOR_TYPES("any", DeviceType::kCuda, CudaReduceKernel<AnyMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("all", DeviceType::kCuda, CudaReduceKernel<AllMaker>::Kernel, KPS_ALL_CPP_TYPES);

}  // namespace reduce
}  // namespace kps
