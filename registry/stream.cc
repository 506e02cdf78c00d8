#include "registry/stream.h"

#include "registry/allocator.h"
#include "registry/scratch.h"
#include "registry/status.h"

namespace kps {

absl::Status Stream::Synchronize() const {
  if (device_ == DeviceType::kCpu) return absl::OkStatus();
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(handle_), "cudaStreamSynchronize");
  return absl::OkStatus();
}

absl::StatusOr<OwnedCudaStream> OwnedCudaStream::Create(int device_index) {
  CudaDeviceGuard guard;
  if (device_index >= 0) {
    KPS_RETURN_IF_ERROR(guard.Set(device_index));
  } else {
    KPS_ASSIGN_OR_RETURN(device_index, CurrentCudaDevice());
  }
  cudaStream_t h = nullptr;
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&h, cudaStreamNonBlocking),
                           "cudaStreamCreateWithFlags");
  internal::RegisterOwnedCudaStream(h);
  return OwnedCudaStream(h, device_index);
}

OwnedCudaStream::~OwnedCudaStream() {
  if (handle_ == nullptr) return;
  // Scratch is looked up per (device, stream): release it with the stream's device current.
  CudaDeviceGuard guard;
  if (!guard.Set(device_index_).ok()) cudaGetLastError();
  // Both free in the stream's order, after its work, before it goes.
  ReleaseStreamScratch(handle_);
  internal::ForgetOwnedCudaStream(handle_);
  cudaStreamDestroy(handle_);
}

}  // namespace kps
