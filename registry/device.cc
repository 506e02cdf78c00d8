#include "registry/device.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "registry/status.h"

namespace kps {

absl::string_view DeviceTypeName(DeviceType device) {
  return device == DeviceType::kCuda ? "cuda" : "cpu";
}

absl::StatusOr<DeviceType> ParseDeviceType(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "cpu") return DeviceType::kCpu;
  if (lower == "cuda" || lower == "gpu") return DeviceType::kCuda;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown device '", name, "'; known devices: cpu, cuda"));
}

std::string DeviceName(Device device) {
  if (device.type != DeviceType::kCuda) return "cpu";
  if (device.index < 0) return "cuda";
  return absl::StrCat("cuda:", device.index);
}

absl::StatusOr<Device> ParseDevice(absl::string_view name) {
  const size_t colon = name.find(':');
  if (colon == absl::string_view::npos) {
    KPS_ASSIGN_OR_RETURN(DeviceType type, ParseDeviceType(name));
    return Device(type);
  }
  const absl::string_view type_name = name.substr(0, colon);
  const absl::string_view index_text = name.substr(colon + 1);
  absl::StatusOr<DeviceType> type = ParseDeviceType(type_name);
  if (!type.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown device '", name, "'; known devices: cpu, cuda, cuda:N"));
  }
  if (*type != DeviceType::kCuda) {
    return absl::InvalidArgumentError(absl::StrCat("device '", name, "': only CUDA devices take an index"));
  }
  // Digits only: SimpleAtoi would also take a sign and surrounding spaces.
  int index = -1;
  const bool digits = !index_text.empty() && index_text.find_first_not_of("0123456789") == absl::string_view::npos;
  if (!digits || !absl::SimpleAtoi(index_text, &index) || index >= kMaxCudaDevices) {
    return absl::InvalidArgumentError(absl::StrCat("device '", name, "': the index must be an integer in [0, ",
                                                   kMaxCudaDevices, ")"));
  }
  return Device(DeviceType::kCuda, index);
}

int CudaDeviceCount() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky "no driver" error
      return 0;
    }
    return n;
  }();
  return count;
}

absl::Status CheckCudaDevice(int index) {
  const int count = CudaDeviceCount();
  if (index >= 0 && index < count) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("device cuda:", index, " does not exist: this process sees ", count,
                                                 count == 1 ? " CUDA device" : " CUDA devices",
                                                 count > 0 ? absl::StrCat(" (cuda:0 to cuda:", count - 1, ")") : ""));
}

absl::StatusOr<int> CurrentCudaDevice() {
  int device = 0;
  KPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

absl::Status CudaDeviceGuard::Set(int index) {
  KPS_RETURN_IF_ERROR(CheckCudaDevice(index));
  // One GPU: device 0 is the only one that can be current, so there is nothing to ask.
  if (CudaDeviceCount() == 1) return absl::OkStatus();
  if (current_ < 0) {
    KPS_ASSIGN_OR_RETURN(current_, CurrentCudaDevice());
  }
  if (current_ == index) return absl::OkStatus();
  KPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(index), absl::StrCat("cudaSetDevice(", index, ")"));
  if (original_ < 0) original_ = current_;
  current_ = index;
  return absl::OkStatus();
}

CudaDeviceGuard::~CudaDeviceGuard() {
  if (original_ >= 0 && current_ != original_ && cudaSetDevice(original_) != cudaSuccess) {
    cudaGetLastError();  // the device went away (process exit): nothing to restore
  }
}

int CudaMultiprocessorCount() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 1;
  return CudaMultiprocessorCount(dev);
}

int CudaMultiprocessorCount(int dev) {
  static std::mutex mu;
  static std::vector<int> counts;
  if (dev < 0) return 1;
  std::lock_guard<std::mutex> lock(mu);
  if (dev >= static_cast<int>(counts.size())) counts.resize(dev + 1, 0);
  if (counts[dev] == 0) {
    int sms = 1;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) sms = 1;
    counts[dev] = sms;
  }
  return counts[dev];
}

}  // namespace kps
