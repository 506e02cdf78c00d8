// The CPU and CUDA kernels of cast for integer inputs, every output dtype (CastKernel,
// cast_ops.h).
#include "ops/elementwise/cast_ops.h"
#include "ops/elementwise/elementwise_launch.cuh"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {

KPS_REGISTER_DEVICE_KERNELS("cast", CastKernel, KPS_CAST_INT_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
