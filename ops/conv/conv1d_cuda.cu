// CUDA kernels of conv1d.
//
// - Conv1dTiledKernel (filters of at most kMaxConstTaps taps, outputs of at least
//   kTiledMinLength): a block computes a tile of 1024 outputs, 4 neighbouring ones per
//   thread. The block stages the input tile (1024 + m - 1 elements, zero outside x) in
//   shared memory, converted to the accumulator type; the filter sits in constant memory
//   (copied device to device, in the accumulator type, on the call's stream) and is read
//   with warp-uniform addresses, a broadcast from the constant cache. Each thread slides a
//   register window over the tile: 16 taps need 19 tile values, loaded as five 16-byte
//   shared-memory loads (the tile starts at a pad that makes them aligned), for 64 FMAs;
//   the last, partial group of taps uses the same window with the missing taps left out.
//   The constant buffer is one per device: a call's copy into it waits (an event) for the
//   previous tiled call's kernel, whatever its stream, so concurrent calls cannot
//   overwrite each other's filter.
// - Conv1dDirectKernel (everything else): a thread per output sums its terms from global
//   memory (the filter and the input stay in L1/L2).
// Both sum each output's terms in increasing j. They differ only where an input is
// infinite or NaN next to the signal's ends: the tiled kernel multiplies the zeros
// outside x by the filter (0 * inf = NaN), the direct kernel skips those terms.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>

#include "ops/conv/conv1d_ops.h"
#include "ops/common/element_bits.cuh"
#include "ops/common/contiguous.h"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace conv {
namespace {

constexpr int kBlock = 256;
constexpr int kOutPerThread = 4;
constexpr int kTile = kBlock * kOutPerThread;
constexpr int kTapStep = 16;
constexpr int kMaxConstTaps = 256;
constexpr int64_t kTiledMinLength = 2048;

__constant__ float c_taps_float[kMaxConstTaps];
__constant__ double c_taps_double[kMaxConstTaps];

template <typename Acc>
__device__ __forceinline__ Acc Tap(int j) {
  if constexpr (sizeof(Acc) == sizeof(double)) {
    return c_taps_double[j];
  } else {
    return c_taps_float[j];
  }
}

template <typename T>
__global__ void ConvertTapsKernel(const T* __restrict__ w, int m, MPType<T>* __restrict__ out) {
  for (int j = threadIdx.x; j < m; j += blockDim.x) out[j] = static_cast<MPType<T>>(w[j]);
}

template <typename Acc>
struct alignas(16) Quad {
  Acc v[4];
};

template <typename T>
__global__ void __launch_bounds__(kBlock) Conv1dDirectKernel(const T* __restrict__ x, const T* __restrict__ w,
                                                            T* __restrict__ out, int64_t n, int64_t m,
                                                            int64_t length, int64_t offset) {
  using Acc = MPType<T>;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < length;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    const int64_t k = i + offset;
    const int64_t jlo = k - (n - 1) > 0 ? k - (n - 1) : 0;
    const int64_t jhi = k < m - 1 ? k : m - 1;
    Acc acc = Acc(0);
    for (int64_t j = jlo; j <= jhi; ++j) acc += static_cast<Acc>(w[j]) * static_cast<Acc>(x[k - j]);
    out[i] = static_cast<T>(acc);
  }
}

// The window of 16 taps j0 .. j0 + 15 for a thread's 4 outputs: tile values
// xs[base + q], q in [0, 20), base = 16-byte aligned; tap j0 + jj of output r uses
// q = r - jj + 15. `taps` < 16 (the last group) leaves the later taps out.
template <typename Acc, bool kFull>
__device__ __forceinline__ void SlideWindow(const Acc* base, int j0, int taps, Acc (&acc)[kOutPerThread]) {
  const Quad<Acc>* q4 = reinterpret_cast<const Quad<Acc>*>(base);
  Acc win[20];
#pragma unroll
  for (int q = 0; q < 5; ++q) {
    const Quad<Acc> v = q4[q];
#pragma unroll
    for (int e = 0; e < 4; ++e) win[4 * q + e] = v.v[e];
  }
#pragma unroll
  for (int jj = 0; jj < kTapStep; ++jj) {
    if (kFull || jj < taps) {
      const Acc wj = Tap<Acc>(j0 + jj);
#pragma unroll
      for (int r = 0; r < kOutPerThread; ++r) acc[r] += wj * win[r - jj + kTapStep - 1];
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock) Conv1dTiledKernel(const T* __restrict__ x, T* __restrict__ out, int64_t n,
                                                           int m, int64_t length, int64_t offset) {
  using Acc = MPType<T>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Acc* xs = reinterpret_cast<Acc*>(smem_raw);
  // xs[lead + i] = x[k0 - (m - 1) + i]. lead = kTapStep (room for the last group's window,
  // which starts up to 15 values before the tile; those values meet no tap) plus a pad
  // that makes every window start 16-byte aligned.
  const int lead = kTapStep + (4 - m % 4) % 4;
  const int span = kTile + m - 1;
  const int lb = kOutPerThread * threadIdx.x;
  if (threadIdx.x < lead) xs[threadIdx.x] = Acc(0);
  for (int64_t tile = blockIdx.x; tile * kTile < length; tile += gridDim.x) {
    const int64_t k0 = offset + tile * kTile;
    __syncthreads();  // the previous tile's readers are done
    for (int i = threadIdx.x; i < span; i += kBlock) {
      const int64_t src = k0 - (m - 1) + i;
      xs[lead + i] = src >= 0 && src < n ? static_cast<Acc>(x[src]) : Acc(0);
    }
    __syncthreads();
    Acc acc[kOutPerThread];
#pragma unroll
    for (int r = 0; r < kOutPerThread; ++r) acc[r] = Acc(0);
    // Taps j .. j + 15 of outputs lb .. lb + 3 read xs[lead + lb + m - 1 - j - 15 + q].
    int j = 0;
    for (; j + kTapStep <= m; j += kTapStep) {
      SlideWindow<Acc, true>(xs + lead + lb + m - kTapStep - j, j, kTapStep, acc);
    }
    if (j < m) SlideWindow<Acc, false>(xs + lead + lb + m - kTapStep - j, j, m - j, acc);
#pragma unroll
    for (int r = 0; r < kOutPerThread; ++r) {
      const int64_t i = tile * kTile + lb + r;
      if (i < length) out[i] = static_cast<T>(acc[r]);
    }
  }
}

// One guard for every dtype: the float buffer serves float16, bfloat16 and float32 alike.
struct TapsGuard {
  std::mutex mu;
  cudaEvent_t done[kMaxCudaDevices] = {};  // the last tiled kernel queued on each device
};
TapsGuard& Guard() {
  static TapsGuard* const guard = new TapsGuard;  // never destroyed: kernels may outlive exit
  return *guard;
}

template <typename T>
class Conv1dCudaKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    using Acc = MPType<T>;
    KPS_ASSIGN_OR_RETURN(const Conv1dGeometry g, ResolveConv1d(*ctx));
    if (g.length == 0) return absl::OkStatus();
    const Stream stream = ctx->stream();
    KPS_ASSIGN_OR_RETURN(const Tensor x, internal::AsContiguous(ctx->input(0), stream));
    KPS_ASSIGN_OR_RETURN(const Tensor w, internal::AsContiguous(ctx->input(1), stream));
    // The longer signal plays x: the sum is symmetric in (x, w), and the tiled kernel
    // wants the short one as its filter.
    const Tensor& sig = g.n >= g.m ? x : w;
    const Tensor& fil = g.n >= g.m ? w : x;
    const int64_t n = std::max(g.n, g.m), m = std::min(g.n, g.m);
    T* out = ctx->output(0).data<T>();
    const cudaStream_t cs = ctx->cuda_stream();
    if (m <= kMaxConstTaps && g.length >= kTiledMinLength) {
      // The filter in the accumulator type, then into constant memory: after the previous
      // tiled call's kernel on this device (any stream) has finished with it.
      const Acc* taps = nullptr;
      std::shared_ptr<Storage> converted;
      if constexpr (std::is_same_v<T, Acc>) {
        taps = fil.data<T>();
      } else {
        KPS_ASSIGN_OR_RETURN(converted, Storage::Allocate(m * sizeof(Acc), DeviceType::kCuda, stream));
        KPS_RETURN_IF_ERROR(LaunchKernel<&ConvertTapsKernel<T>>("ConvertTapsKernel", 1, kBlock, 0, cs, fil.data<T>(),
                                                                static_cast<int>(m),
                                                                static_cast<Acc*>(converted->data())));
        taps = static_cast<const Acc*>(converted->data());
      }
      TapsGuard& guard = Guard();
      cudaEvent_t* done = guard.done;
      int device = 0;
      KPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
      if (device >= kMaxCudaDevices) return ctx->Error("the tiled CUDA kernel supports devices 0..", kMaxCudaDevices - 1);
      std::lock_guard<std::mutex> lock(guard.mu);
      if (done[device] == nullptr) {
        KPS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&done[device], cudaEventDisableTiming), "cudaEventCreate");
      } else {
        KPS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(cs, done[device], 0), "cudaStreamWaitEvent (conv1d's filter)");
      }
      if constexpr (sizeof(Acc) == sizeof(double)) {
        KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyToSymbolAsync(c_taps_double, taps, m * sizeof(Acc), 0,
                                                         cudaMemcpyDeviceToDevice, cs),
                                 "cudaMemcpyToSymbolAsync (conv1d's filter)");
      } else {
        KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyToSymbolAsync(c_taps_float, taps, m * sizeof(Acc), 0,
                                                         cudaMemcpyDeviceToDevice, cs),
                                 "cudaMemcpyToSymbolAsync (conv1d's filter)");
      }
      const size_t smem = (kTile + kMaxConstTaps + 2 * kTapStep + 4) * sizeof(Acc);
      KPS_RETURN_IF_ERROR(LaunchKernelOnDevice<&Conv1dTiledKernel<T>>(
          device, "Conv1dTiledKernel", BlocksFor(g.length, kTile, int64_t{1} << 30), kBlock, smem, cs, sig.data<T>(),
          out, n, static_cast<int>(m), g.length, g.offset));
      KPS_CUDA_RETURN_IF_ERROR(cudaEventRecord(done[device], cs), "cudaEventRecord (conv1d's filter)");
    } else {
      KPS_RETURN_IF_ERROR(LaunchKernel<&Conv1dDirectKernel<T>>("Conv1dDirectKernel",
                                                               BlocksFor(g.length, kBlock, int64_t{1} << 30), kBlock,
                                                               0, cs, sig.data<T>(), fil.data<T>(), out, n, m,
                                                               g.length, g.offset));
    }
    return absl::OkStatus();
  }
};

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("conv1d", DeviceType::kCuda, Conv1dCudaKernel, KPS_CONV1D_CPP_TYPES);

}  // namespace conv
}  // namespace kps
