// The CPU and CUDA kernels of index_add and index_add_ for the floating dtypes (index_add_cuda.cuh).
#include "ops/index/index_add_cuda.cuh"

namespace kps {
namespace indexing {

KPS_REGISTER_DEVICE_KERNELS("index_add", IndexAddKernel<false>::Kernel, KPS_INDEX_ADD_FLOAT_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS("index_add_", IndexAddKernel<true>::Kernel, KPS_INDEX_ADD_FLOAT_CPP_TYPES);

}  // namespace indexing
}  // namespace kps
