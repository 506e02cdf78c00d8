// Status helpers: propagation macros and the CUDA-error-to-Status conversion.
#pragma once

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#define KPS_CONCAT_INNER_(a, b) a##b
#define KPS_CONCAT(a, b) KPS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define KPS_RETURN_IF_ERROR(expr)                  \
  do {                                             \
    ::absl::Status kps_status_ = (expr);           \
    if (!kps_status_.ok()) return kps_status_;     \
  } while (0)

// `lhs = value of expr` (a StatusOr), or returns its error.
#define KPS_ASSIGN_OR_RETURN(lhs, expr) \
  KPS_ASSIGN_OR_RETURN_IMPL_(KPS_CONCAT(kps_statusor_, __LINE__), lhs, expr)
#define KPS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

namespace kps {

// Turns a CUDA error into a Status that says what failed: `what` names the call or
// kernel ("cudaMallocAsync", "kernel ElementwiseSameShape<float, Add>").
absl::Status CudaErrorToStatus(cudaError_t error, absl::string_view what);

// The Status code for a CUDA error number, runtime (cudaError_t) or driver (CUresult):
// the two enums give the codes listed here the same numbers (cudaErrorMemoryAllocation
// and CUDA_ERROR_OUT_OF_MEMORY are 2, invalid value 1, invalid handle 400, no device 100),
// so launches through the driver (registry/cuda_launch.h) map their errors here too.
absl::StatusCode CudaErrorCode(int error);

}  // namespace kps

// Returns a Status naming `what` if the CUDA runtime call `expr` fails.
#define KPS_CUDA_RETURN_IF_ERROR(expr, what)                           \
  do {                                                                 \
    cudaError_t kps_cuda_error_ = (expr);                              \
    if (kps_cuda_error_ != cudaSuccess)                                \
      return ::kps::CudaErrorToStatus(kps_cuda_error_, (what));        \
  } while (0)

// After a <<<...>>> launch: returns a Status naming the kernel if the launch failed (or
// if an earlier error is still pending: it reads cudaGetLastError). For code outside the
// library (examples/); ops/ and registry/ launch with LaunchKernel (cuda_launch.h).
#define KPS_RETURN_IF_LAUNCH_ERROR(kernel_name) \
  KPS_CUDA_RETURN_IF_ERROR(cudaGetLastError(), absl::StrCat("kernel ", kernel_name))
