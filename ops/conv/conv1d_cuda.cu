// CUDA kernels of conv1d.
//
// - Conv1dTiledKernel (filters of at most kMaxConstTaps taps, outputs of at least
//   kTiledMinLength): a block computes a tile of 1024 outputs, 4 neighbouring ones per
//   thread, stored with the 1-D WriteData (vectors where `out` is aligned, the boundary
//   form for the last tile). The block stages the input tile (1024 + m - 1 elements, zero
//   outside x) in shared memory, converted to the accumulator type, with the strided
//   (coalesced) ReadData and WriteData forms; the filter sits in constant memory
//   (copied device to device, in the accumulator type, on the call's stream) and is read
//   with warp-uniform addresses, a broadcast from the constant cache. Each thread slides a
//   register window over the tile: 16 taps need 19 tile values, loaded as five 16-byte
//   shared-memory loads (the tile starts at a pad that makes them aligned), for 64 FMAs;
//   the last, partial group of taps uses the same window with the missing taps left out.
//   The constant buffer is one per device: a call's copy into it waits (an event) for the
//   previous tiled call's kernel, whatever its stream, so concurrent calls cannot
//   overwrite each other's filter.
// - Conv1dDirectKernel (everything else): a thread per output sums its terms from global
//   memory (the filter and the input stay in L1/L2) and stores it with WriteData.
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
#include "functors/unary.h"
#include "primitives/compute.cuh"
#include "primitives/datamover.cuh"
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
// Tile values each thread stages: the longest tile, kTile + kMaxConstTaps - 1, over kBlock.
constexpr int kStagePerThread = (kTile + kMaxConstTaps - 1 + kBlock - 1) / kBlock;

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

// out[j] = Acc(w[j]) for j < m: one converting load and one store per thread and pass.
template <typename T>
__global__ void ConvertTapsKernel(const T* __restrict__ w, int m, MPType<T>* __restrict__ out) {
  using Acc = MPType<T>;
  for (int base = 0; base < m; base += KPS_BLOCK_NUM_X) {
    Acc v[1];
    ReadData<T, Acc, 1, 1, true>(v, w + base, m - base, 1, 0, 0);
    WriteData<Acc, Acc, 1, 1, true>(out + base, v, m - base, 1, 0, 0);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock) Conv1dDirectKernel(const T* __restrict__ x, const T* __restrict__ w,
                                                            T* __restrict__ out, int64_t n, int64_t m,
                                                            int64_t length, int64_t offset) {
  using Acc = MPType<T>;
  // A thread per output of tiles of kBlock (the 1-D layout with NX = 1), grid-strided.
  for (int64_t i = static_cast<int64_t>(KPS_BLOCK_ID_X) * kBlock + KPS_THREAD_ID_X; i < length;
       i += static_cast<int64_t>(KPS_GRID_NUM_X) * kBlock) {
    const int64_t k = i + offset;
    const int64_t jlo = k - (n - 1) > 0 ? k - (n - 1) : 0;
    const int64_t jhi = k < m - 1 ? k : m - 1;
    Acc acc = Acc(0);
    for (int64_t j = jlo; j <= jhi; ++j) acc += static_cast<Acc>(w[j]) * static_cast<Acc>(x[k - j]);
    const T res[1] = {static_cast<T>(acc)};
    WriteData<T, 1, 1, false>(out + (i - KPS_THREAD_ID_X), res, 1);
  }
}

// The window of 16 taps j0 .. j0 + 15 for a thread's 4 outputs: tile values
// win[q] = window[4 * threadIdx.x + q], q in [0, 20), `window` 16-byte aligned, loaded as
// five 1-D ReadData tiles of 4 values a thread (16-byte shared-memory loads); tap j0 + jj
// of output r uses q = r - jj + 15. `taps` < 16 (the last group) leaves the later taps out.
template <typename Acc, bool kFull>
__device__ __forceinline__ void SlideWindow(const Acc* window, int j0, int taps, Acc (&acc)[kOutPerThread]) {
  constexpr int kWindow = kTapStep + kOutPerThread;
  Acc win[kWindow];
#pragma unroll
  for (int q = 0; q < kWindow; q += kOutPerThread) {
    ReadData<Acc, kOutPerThread, 1, false>(win + q, window + q, kTile);
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
  const Acc zero[1] = {Acc(0)};
  WriteData<Acc, Acc, 1, 1, true>(xs, zero, lead, 1, 0, 0);
  // The output vectors need out aligned to them; else every tile stores element-wise.
  const bool vec_out =
      reinterpret_cast<uintptr_t>(out) % (sizeof(T) * details::VectorSizeFor<T, kOutPerThread>()) == 0;
  for (int64_t tile = KPS_BLOCK_ID_X; tile * kTile < length; tile += KPS_GRID_NUM_X) {
    const int64_t k0 = offset + tile * kTile;
    // Tile value i is x[first + i]. The lo values before x's start (first tile(s) only)
    // are zeros stored on their own; the strided load starts at x[first + lo], so its
    // boundary (the count it may read) is x's end, and the registers past it stay zero.
    const int64_t first = k0 - (m - 1);
    const int lo = first < 0 ? static_cast<int>(-first) : 0;
    const int64_t in_x = n - (first + lo);
    const int reads = in_x < span - lo ? static_cast<int>(in_x) : span - lo;
    Acc staged[kStagePerThread];
    Init<Acc, kStagePerThread>(staged, Acc(0));
    ReadData<T, Acc, kStagePerThread, 1, true>(staged, x + first + lo, reads, 1, kBlock, 0);
    __syncthreads();  // the previous tile's readers are done
    WriteData<Acc, Acc, kStagePerThread, 1, true>(xs + lead + lo, staged, span - lo, 1, kBlock, 0);
    if (lo > 0) WriteData<Acc, Acc, 1, 1, true>(xs + lead, zero, lo, 1, 0, 0);
    __syncthreads();
    Acc acc[kOutPerThread];
#pragma unroll
    for (int r = 0; r < kOutPerThread; ++r) acc[r] = Acc(0);
    // Taps j .. j + 15 of outputs 4t .. 4t + 3 read xs[lead + 4t + m - 1 - j - 15 + q].
    int j = 0;
    const Acc* window = xs + lead + m - kTapStep;
    for (; j + kTapStep <= m; j += kTapStep, window -= kTapStep) {
      SlideWindow<Acc, true>(window, j, kTapStep, acc);
    }
    if (j < m) SlideWindow<Acc, false>(window, j, m - j, acc);
    T res[kOutPerThread];
    ElementwiseUnary<Acc, T, kOutPerThread, 1>(res, acc, IdentityFunctor<Acc, T>());
    const int64_t left = length - tile * kTile;
    if (vec_out && left >= kTile) {
      WriteData<T, kOutPerThread, 1, false>(out + tile * kTile, res, kTile);
    } else {
      WriteData<T, kOutPerThread, 1, true>(out + tile * kTile, res, left < kTile ? static_cast<int>(left) : kTile);
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

}  // namespace

template <>
struct Conv1dOn<DeviceType::kCuda> {
  template <typename T>
  static absl::Status Run(const KernelContext& ctx, const Conv1dGeometry& g, const Tensor& x, const Tensor& w) {
    using Acc = MPType<T>;
    const Stream stream = ctx.stream();
    // The longer signal plays x: the sum is symmetric in (x, w), and the tiled kernel
    // wants the short one as its filter.
    const Tensor& sig = g.n >= g.m ? x : w;
    const Tensor& fil = g.n >= g.m ? w : x;
    const int64_t n = std::max(g.n, g.m), m = std::min(g.n, g.m);
    T* out = ctx.output(0).data<T>();
    const cudaStream_t cs = ctx.cuda_stream();
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
      if (device >= kMaxCudaDevices) return ctx.Error("the tiled CUDA kernel supports devices 0..", kMaxCudaDevices - 1);
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

KPS_REGISTER_DEVICE_KERNELS("conv1d", Conv1dKernel, KPS_CONV1D_CPP_TYPES);

}  // namespace conv
}  // namespace kps
