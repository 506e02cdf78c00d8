// CUDA kernels of cast for float inputs, every output dtype (cast_cuda.cuh).
#include "ops/elementwise/cast_cuda.cuh"

namespace kps {
namespace elementwise {

KPS_REGISTER_KERNEL_FOR_TYPES("cast", DeviceType::kCuda, CastCudaKernel, KPS_CAST_FLOAT_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
