// The CPU and CUDA kernels of add, sub and mul (BinaryKernel, binary_ops.h).
#include "ops/elementwise/binary_ops.h"
#include "ops/elementwise/elementwise_launch.cuh"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {

KPS_REGISTER_DEVICE_KERNELS("add", BinaryKernel<AddOp>::Kernel, KPS_ADD_MUL_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS("sub", BinaryKernel<SubOp>::Kernel, KPS_ADD_MUL_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS("mul", BinaryKernel<MulOp>::Kernel, KPS_ADD_MUL_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
