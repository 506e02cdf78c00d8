// The device code `kps bench` needs to take an eager call apart: an empty kernel whose
// <<<>>> launch is the floor, and add's kernel launched without the runtime. It lives in
// its own .cu file so the rest of the tool is plain C++.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"

namespace kps {
namespace cli {

// Launches an empty kernel <<<1, 1, 0, stream>>> once. Does not check for errors, so
// that a loop of these measures the launch alone: call cudaGetLastError() after the loop.
void LaunchEmptyKernel(cudaStream_t stream);

// Launches add's CUDA kernel through the elementwise launcher directly (out = x + y over
// n floats), with the launch check, but none of the runtime: the floor of an eager add.
absl::Status LaunchAddDirect(const float* x, const float* y, float* out, int64_t n, cudaStream_t stream);

}  // namespace cli
}  // namespace kps
