#include "registry/status.h"

#include "absl/strings/str_cat.h"

namespace kps {

absl::StatusCode CudaErrorCode(int error) {
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::StatusCode::kResourceExhausted;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return absl::StatusCode::kFailedPrecondition;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidResourceHandle:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status CudaErrorToStatus(cudaError_t error, absl::string_view what) {
  return absl::Status(CudaErrorCode(error), absl::StrCat(what, " failed: ", cudaGetErrorName(error), " (",
                                                          cudaGetErrorString(error), ")"));
}

}  // namespace kps
