// DeviceType and what the process can see of the CUDA devices.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kps {

enum class DeviceType : int8_t { kCpu = 0, kCuda = 1 };
inline constexpr int kNumDeviceTypes = 2;

absl::string_view DeviceTypeName(DeviceType device);  // "cpu" or "cuda"
absl::StatusOr<DeviceType> ParseDeviceType(absl::string_view name);

// Number of CUDA devices usable by this process; 0 when there is no driver or GPU
// (cudaGetDeviceCount's error is swallowed: no GPU is a normal configuration).
int CudaDeviceCount();
inline bool CudaAvailable() { return CudaDeviceCount() > 0; }

// Streaming multiprocessors of the current CUDA device, or of `device` (cached per
// device). A launcher that already knows its device passes it: cudaGetDevice costs
// 0.06-0.09 us of host time a call on the H100 machine, before the kernel's launch.
int CudaMultiprocessorCount();
int CudaMultiprocessorCount(int device);

// Device ordinals that KPS's per-device caches (launch handles, shared-memory opt-ins,
// pool set-up) have room for; a call on a device past it fails with a clear error.
inline constexpr int kMaxCudaDevices = 64;

}  // namespace kps
