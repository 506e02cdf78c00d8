#include "registry/cuda_launch.h"

#include "absl/strings/str_cat.h"
#include "registry/status.h"

namespace kps {
namespace internal {
namespace {

// A driver function by name, at the ABI of CUDA 12.0 (cuLaunchKernel's and
// cuGetErrorName's have not changed since), or null.
void* DriverEntryPoint(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found);
#else
  const cudaError_t e = cudaGetDriverEntryPoint(symbol, &fn, cudaEnableDefault, &found);
#endif
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return fn;
}

using CuGetErrorNameFn = CUresult (*)(CUresult, const char**);

}  // namespace

CuLaunchKernelFn DriverLaunchKernel() {
  static const CuLaunchKernelFn fn = reinterpret_cast<CuLaunchKernelFn>(DriverEntryPoint("cuLaunchKernel"));
  return fn;
}

CUfunction LookUpFunction(const void* kernel) {
  cudaFunction_t f = nullptr;
  if (cudaGetFuncBySymbol(&f, kernel) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<CUfunction>(f);
}

absl::Status DriverLaunchError(CUresult result, absl::string_view kernel_name) {
  static const auto get_name = reinterpret_cast<CuGetErrorNameFn>(DriverEntryPoint("cuGetErrorName"));
  const char* name = nullptr;
  if (get_name == nullptr || get_name(result, &name) != CUDA_SUCCESS || name == nullptr) name = "unknown error";
  return absl::Status(CudaErrorCode(static_cast<int>(result)),
                      absl::StrCat("kernel ", kernel_name, ": cuLaunchKernel failed: ", name, " (", result, ")"));
}

absl::Status RuntimeLaunchError(cudaError_t error, absl::string_view kernel_name) {
  cudaGetLastError();  // not sticky: the next launch should not see it
  return CudaErrorToStatus(error, absl::StrCat("kernel ", kernel_name));
}

}  // namespace internal
}  // namespace kps
