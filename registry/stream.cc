#include "registry/stream.h"

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
  return OwnedCudaStream(h);
}

OwnedCudaStream::~OwnedCudaStream() {
  if (handle_ == nullptr) return;
  ReleaseStreamScratch(handle_);  // ordered after the stream's work, before it goes
  cudaStreamDestroy(handle_);
}

}  // namespace kps
