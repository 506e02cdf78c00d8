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
  // A CUDA stream the caller owns; nullptr is the legacy default stream (of whichever
  // device is current when work is queued). `device_index`: the device the stream was
  // created on, if the caller knows it (-1: not known; a call then asks the runtime).
  static Stream Cuda(cudaStream_t handle = nullptr, int device_index = -1) {
    return Stream(DeviceType::kCuda, handle, device_index);
  }
  // The default stream of `device`.
  static Stream Default(DeviceType device) { return Stream(device, nullptr, -1); }

  DeviceType device() const { return device_; }
  // The CUDA device the stream belongs to, when recorded (OwnedCudaStream, or given to
  // Cuda()); -1 otherwise, and always on the CPU and for the legacy default stream,
  // which belongs to whichever device is current.
  int device_index() const { return device_index_; }
  cudaStream_t cuda_stream() const { return handle_; }
  // Waits for the work queued so far (a no-op on the CPU).
  absl::Status Synchronize() const;

 private:
  Stream(DeviceType device, cudaStream_t handle, int device_index)
      : device_(device), device_index_(handle == nullptr ? -1 : device_index), handle_(handle) {}
  DeviceType device_ = DeviceType::kCpu;
  int device_index_ = -1;
  cudaStream_t handle_ = nullptr;
};

// Owns a CUDA stream created with cudaStreamNonBlocking; destroys it when dropped.
class OwnedCudaStream {
 public:
  // A stream on CUDA device `device_index` (-1: the current device), which its Stream
  // records, so that a call on another device's tensors is refused.
  static absl::StatusOr<OwnedCudaStream> Create(int device_index = -1);
  OwnedCudaStream(OwnedCudaStream&& other) noexcept : handle_(other.handle_), device_index_(other.device_index_) {
    other.handle_ = nullptr;
  }
  OwnedCudaStream& operator=(OwnedCudaStream&&) = delete;
  OwnedCudaStream(const OwnedCudaStream&) = delete;
  ~OwnedCudaStream();
  Stream stream() const { return Stream::Cuda(handle_, device_index_); }
  int device_index() const { return device_index_; }

 private:
  OwnedCudaStream(cudaStream_t h, int device_index) : handle_(h), device_index_(device_index) {}
  cudaStream_t handle_;
  int device_index_;
};

}  // namespace kps
