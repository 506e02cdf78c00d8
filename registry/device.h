// DeviceType and what the process can see of the CUDA devices.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kps {

enum class DeviceType : int8_t { kCpu = 0, kCuda = 1 };
inline constexpr int kNumDeviceTypes = 2;

absl::string_view DeviceTypeName(DeviceType device);  // "cpu" or "cuda"
// "cpu", "cuda" or "gpu" (any case); an index ("cuda:1") is ParseDevice's.
absl::StatusOr<DeviceType> ParseDeviceType(absl::string_view name);

// A device type with an index: where a tensor lives, or where one is asked for.
// DeviceType stays the dispatch key (kernels register per DeviceType); the index says
// which GPU. `index` is the CUDA device ordinal; -1 on the CPU (always), and for CUDA
// "the current device" when asking (a CUDA tensor's own index is always >= 0). Converts
// implicitly from a DeviceType, so every API taking a Device takes DeviceType::kCuda
// meaning the current GPU, as before.
struct Device {
  constexpr Device(DeviceType type = DeviceType::kCpu, int index = -1)  // NOLINT: implicit on purpose
      : type(type), index(type == DeviceType::kCuda ? index : -1) {}
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }

  DeviceType type;
  int index;
};

// "cpu", "cuda:1", or "cuda" for a CUDA device of index -1 (the current one).
std::string DeviceName(Device device);
// "cpu", "cuda", "gpu" or "cuda:N" / "gpu:N" (N a decimal ordinal; any case) as a Device.
// Only the syntax is checked: whether device N exists is CheckCudaDevice's (a tensor
// asked for on it gets that error).
absl::StatusOr<Device> ParseDevice(absl::string_view name);

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

// OK when CUDA device `index` exists in this process (0 <= index < CudaDeviceCount());
// otherwise InvalidArgument naming "cuda:<index>" and the device count. Needs no GPU.
absl::Status CheckCudaDevice(int index);

// The current CUDA device of the calling thread (cudaGetDevice), or the runtime's error.
absl::StatusOr<int> CurrentCudaDevice();

// Makes a CUDA device current for a scope and restores the thread's previous device when
// it ends, like c10::cuda::CUDAGuard. Set() may be called several times (a copy between
// two GPUs switches back and forth); the device current before the first switch is the
// one restored. Nothing is switched (nor asked) when only one GPU exists.
//
//   CudaDeviceGuard guard;
//   KPS_RETURN_IF_ERROR(guard.Set(tensor.device_index()));
//   ... allocate and launch on that device ...
class CudaDeviceGuard {
 public:
  CudaDeviceGuard() = default;
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;
  ~CudaDeviceGuard();

  // Makes `index` current (CheckCudaDevice's error for one that does not exist).
  absl::Status Set(int index);

 private:
  int original_ = -1;  // the device to restore; -1: nothing was switched
  int current_ = -1;   // what this guard last made current; -1: not known
};

}  // namespace kps
