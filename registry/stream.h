// Stream: where a call's work is ordered. Non-owning and cheap to copy.
#pragma once

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "registry/device.h"

namespace kps {

class Stream {
 public:
  // The CPU "stream": work runs inline on the calling thread.
  Stream() = default;
  static Stream Cpu() { return Stream(); }
  // A CUDA stream the caller owns; nullptr is the legacy default stream.
  static Stream Cuda(cudaStream_t handle = nullptr) { return Stream(DeviceType::kCuda, handle); }
  // The default stream of `device`.
  static Stream Default(DeviceType device) { return Stream(device, nullptr); }

  DeviceType device() const { return device_; }
  cudaStream_t cuda_stream() const { return handle_; }
  // Waits for the work queued so far (a no-op on the CPU).
  absl::Status Synchronize() const;

 private:
  Stream(DeviceType device, cudaStream_t handle) : device_(device), handle_(handle) {}
  DeviceType device_ = DeviceType::kCpu;
  cudaStream_t handle_ = nullptr;
};

// Owns a CUDA stream created with cudaStreamNonBlocking; destroys it when dropped.
class OwnedCudaStream {
 public:
  static absl::StatusOr<OwnedCudaStream> Create();
  OwnedCudaStream(OwnedCudaStream&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  OwnedCudaStream& operator=(OwnedCudaStream&&) = delete;
  OwnedCudaStream(const OwnedCudaStream&) = delete;
  ~OwnedCudaStream();
  Stream stream() const { return Stream::Cuda(handle_); }

 private:
  explicit OwnedCudaStream(cudaStream_t h) : handle_(h) {}
  cudaStream_t handle_;
};

}  // namespace kps
