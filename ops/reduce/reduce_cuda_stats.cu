// CUDA kernels of logsumexp, var and std (var and std share the Welford reducer) (reduce_cuda.cuh).
#include "ops/reduce/reduce_cuda.cuh"

namespace kps {
namespace reduce {

KPS_REGISTER_KERNEL_FOR_TYPES("logsumexp", DeviceType::kCuda, CudaReduceKernel<LogSumExpMaker>::Kernel, KPS_REDUCE_FLOAT_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("var", DeviceType::kCuda, CudaReduceKernel<VarMaker>::Kernel, KPS_REDUCE_FLOAT_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("std", DeviceType::kCuda, CudaReduceKernel<StdMaker>::Kernel, KPS_REDUCE_FLOAT_CPP_TYPES);

}  // namespace reduce
}  // namespace kps
