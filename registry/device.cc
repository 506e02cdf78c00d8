#include "registry/device.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

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
