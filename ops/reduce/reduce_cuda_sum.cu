// CUDA kernels of sum and mean (one reducer: mean is the sum over the count) (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REGISTER_KERNEL_FOR_TYPES("sum", DeviceType::kCuda, CudaReduceKernel<SumMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("mean", DeviceType::kCuda, CudaReduceKernel<MeanMaker>::Kernel, KPS_REDUCE_FLOAT_CPP_TYPES);

}  // namespace reduce
}  // namespace kps
