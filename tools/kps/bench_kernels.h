// The one hand-written kernel `kps bench` needs: an empty kernel whose <<<>>> launch is
// the floor that an eager kps::Call is compared against. It lives in its own .cu file so
// the rest of the tool is plain C++ and the tool costs one tiny nvcc compile.
#pragma once

#include <cuda_runtime_api.h>

namespace kps {
namespace cli {

// Launches an empty kernel <<<1, 1, 0, stream>>> once. Does not check for errors, so
// that a loop of these measures the launch alone: call cudaGetLastError() after the loop.
void LaunchEmptyKernel(cudaStream_t stream);

}  // namespace cli
}  // namespace kps
