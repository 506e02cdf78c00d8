// CUDA kernels of argmax and argmin (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REGISTER_KERNEL_FOR_TYPES("argmax", DeviceType::kCuda, CudaReduceKernel<ArgMaxMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("argmin", DeviceType::kCuda, CudaReduceKernel<ArgMinMaker>::Kernel, KPS_ALL_CPP_TYPES);

}  // namespace reduce
}  // namespace kps
