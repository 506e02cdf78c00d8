// Kernel launches through the driver's cuLaunchKernel on a function handle cached per
// kernel and device.
//
//   KPS_RETURN_IF_ERROR(LaunchKernel<&MyKernel<float>>("MyKernel", grid, block, 0, stream, x, n, out));
//
// A <<<>>> launch goes through the runtime, which finds the device function of the host
// stub on every call. Here the handle is looked up once (cudaGetFuncBySymbol) and the
// driver's entry point is called directly. An eager call's launch is the last host work
// before its kernel starts, so this time is part of every single call's latency.
// 300 bytes of parameters, H100 host: 2.77-2.81 us a launch, <<<>>> 3.01-3.07.
// libcuda is reached through the runtime's entry-point lookup: nothing links against it.
// Arguments convert to the kernel's parameter types as they would for <<<>>>.
// Every kernel launch in ops/ and registry/ goes through LaunchKernel or LaunchKernelOnDevice.
#pragma once

#include <cuda.h>  // CUfunction, CUresult, CUstream (types only)
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "registry/device.h"

namespace kps {
namespace internal {

using CuLaunchKernelFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, CUstream, void**, void**);
// The driver's cuLaunchKernel, fetched once; null where the driver does not offer it
// (then LaunchKernel takes cudaLaunchKernel).
CuLaunchKernelFn DriverLaunchKernel();
// The device function of `kernel` (a __global__ function's address) for the current
// device; null if the runtime cannot give it.
CUfunction LookUpFunction(const void* kernel);
// A failed launch as a Status naming the kernel.
absl::Status DriverLaunchError(CUresult result, absl::string_view kernel_name);
absl::Status RuntimeLaunchError(cudaError_t error, absl::string_view kernel_name);

// One slot per device for each kernel (each kKernel instantiates its own).
template <auto kKernel>
CUfunction CachedFunction(int device) {
  static std::atomic<CUfunction> slots[kMaxCudaDevices];
  if (device < 0 || device >= kMaxCudaDevices) return nullptr;
  CUfunction f = slots[device].load(std::memory_order_acquire);
  if (f == nullptr) {
    f = LookUpFunction(reinterpret_cast<const void*>(kKernel));
    slots[device].store(f, std::memory_order_release);
  }
  return f;
}

// `device`: the current device, or -1 to ask the runtime (cudaGetDevice).
template <auto kKernel, typename... P, typename... A>
absl::Status LaunchWithParams(void (*)(P...), int device, absl::string_view name, dim3 grid, dim3 block,
                              size_t smem, cudaStream_t stream, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "LaunchKernel: argument count differs from the kernel's");
  // The kernel's parameters, by value and of its own types: the driver copies each from
  // the address given, by the size the kernel declares.
  std::tuple<std::remove_cv_t<P>...> params(std::forward<A>(args)...);
  return std::apply(
      [&](auto&... p) -> absl::Status {
        void* ptrs[sizeof...(P) + 1] = {const_cast<void*>(static_cast<const void*>(&p))...};
        CuLaunchKernelFn launch = DriverLaunchKernel();
        CUfunction f = nullptr;
        if (launch != nullptr && (device >= 0 || cudaGetDevice(&device) == cudaSuccess)) {
          f = CachedFunction<kKernel>(device);
        }
        if (f != nullptr) {
          const CUresult r = launch(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                    static_cast<unsigned>(smem), reinterpret_cast<CUstream>(stream), ptrs, nullptr);
          return r == CUDA_SUCCESS ? absl::OkStatus() : DriverLaunchError(r, name);
        }
        cudaGetLastError();  // a failed lookup leaves nothing for the launch to report
        const cudaError_t e =
            cudaLaunchKernel(reinterpret_cast<const void*>(kKernel), grid, block, ptrs, smem, stream);
        return e == cudaSuccess ? absl::OkStatus() : RuntimeLaunchError(e, name);
      },
      params);
}

}  // namespace internal

// Launches kKernel (a __global__ function: LaunchKernel<&Kernel<T>>) on `stream`; a
// launch error (bad configuration, too much shared memory, ...) comes back as a Status
// naming `name`. Asynchronous, as <<<>>>: errors of the kernel's run surface later.
template <auto kKernel, typename... A>
absl::Status LaunchKernel(absl::string_view name, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                          A&&... args) {
  return internal::LaunchWithParams<kKernel>(kKernel, -1, name, grid, block, smem, stream, std::forward<A>(args)...);
}
// LaunchKernel for a launcher that has already asked for the current device (`device`):
// one cudaGetDevice less on the call's host path.
template <auto kKernel, typename... A>
absl::Status LaunchKernelOnDevice(int device, absl::string_view name, dim3 grid, dim3 block, size_t smem,
                                  cudaStream_t stream, A&&... args) {
  return internal::LaunchWithParams<kKernel>(kKernel, device, name, grid, block, smem, stream,
                                             std::forward<A>(args)...);
}

}  // namespace kps
