#include "registry/status.h"

#include "absl/strings/str_cat.h"

namespace kps {

absl::Status CudaErrorToStatus(cudaError_t error, absl::string_view what) {
  std::string msg = absl::StrCat(what, " failed: ", cudaGetErrorName(error), " (",
                                 cudaGetErrorString(error), ")");
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(msg);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return absl::FailedPreconditionError(msg);
    case cudaErrorInvalidValue:
    case cudaErrorInvalidConfiguration:
      return absl::InvalidArgumentError(msg);
    default:
      return absl::InternalError(msg);
  }
}

}  // namespace kps
