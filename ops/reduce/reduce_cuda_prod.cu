// CUDA kernels of prod (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REGISTER_KERNEL_FOR_TYPES("prod", DeviceType::kCuda, CudaReduceKernel<ProdMaker>::Kernel, KPS_ALL_CPP_TYPES);

}  // namespace reduce
}  // namespace kps
