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

absl::StatusOr<OwnedCudaStream> OwnedCudaStream::Create() {
  cudaStream_t h = nullptr;
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&h, cudaStreamNonBlocking),
                           "cudaStreamCreateWithFlags");
  internal::RegisterOwnedCudaStream(h);
  return OwnedCudaStream(h);
}

OwnedCudaStream::~OwnedCudaStream() {
  if (handle_ == nullptr) return;
  // Both free in the stream's order, after its work, before it goes.
  ReleaseStreamScratch(handle_);
  internal::ForgetOwnedCudaStream(handle_);
  cudaStreamDestroy(handle_);
}

}  // namespace kps
