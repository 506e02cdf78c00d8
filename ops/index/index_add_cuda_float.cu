// CUDA kernels of index_add and index_add_ for the floating dtypes (index_add_cuda.cuh).
#include "ops/index/index_add_cuda.cuh"

namespace kps {
namespace indexing {

KPS_REGISTER_KERNEL_FOR_TYPES("index_add", DeviceType::kCuda, CudaIndexAdd<false>::Kernel,
                              KPS_INDEX_ADD_FLOAT_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("index_add_", DeviceType::kCuda, CudaIndexAdd<true>::Kernel,
                              KPS_INDEX_ADD_FLOAT_CPP_TYPES);

}  // namespace indexing
}  // namespace kps
