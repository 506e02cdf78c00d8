// The CUDA part of dot (DotOn<kCuda>): two passes, deterministic (no atomics); and the
// registration of dot's kernel (DotKernel, dot_ops.h) on both devices.
//
// DotPartialKernel: a grid of at most one full wave of resident blocks (sized by the
// length and the device only); each thread walks an interleaved share of 16-byte vectors of x and y,
// four vector pairs in flight (8 x 16 bytes per thread, 32 KiB per 256-thread block),
// into four accumulators folded in a fixed order, then the block meets in a fixed tree
// (kps::details::BlockXReduce) and writes one partial. DotFinalKernel folds the
// partials in index order. Misaligned inputs (views at an odd offset) take the same
// kernel with one-element loads.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "ops/linalg/dot_ops.h"
#include "ops/common/contiguous.h"
#include "primitives/reduce.cuh"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/device.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace linalg {
namespace {

constexpr int kBlock = 256;
constexpr int kUnroll = 4;
constexpr int kFinalBlock = 1024;

template <typename T, int K>
struct alignas(sizeof(T) * K) DotPack {
  T v[K];
};

template <typename Acc>
struct SumOp {
  __device__ __forceinline__ Acc operator()(Acc a, Acc b) const { return a + b; }
};

template <typename T, int VEC>
__global__ void __launch_bounds__(kBlock) DotPartialKernel(const T* __restrict__ x, const T* __restrict__ y,
                                                          int64_t nvec, int64_t n, DotAcc<T>* __restrict__ partials) {
  using Acc = DotAcc<T>;
  using V = DotPack<T, VEC>;
  const V* xv = reinterpret_cast<const V*>(x);
  const V* yv = reinterpret_cast<const V*>(y);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlock;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x;
  Acc acc[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) acc[u] = Acc(0);
  int64_t i = tid;
  for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
    V a[kUnroll], b[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      a[u] = xv[i + u * stride];
      b[u] = yv[i + u * stride];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) acc[u] += static_cast<Acc>(a[u].v[k]) * static_cast<Acc>(b[u].v[k]);
    }
  }
  for (; i < nvec; i += stride) {  // at most kUnroll - 1 vectors left
    const V a = xv[i], b = yv[i];
#pragma unroll
    for (int k = 0; k < VEC; ++k) acc[0] += static_cast<Acc>(a.v[k]) * static_cast<Acc>(b.v[k]);
  }
  const int64_t rest = nvec * VEC + tid;  // the elements after the last whole vector
  if (rest < n) acc[0] += static_cast<Acc>(x[rest]) * static_cast<Acc>(y[rest]);
  Acc total = acc[0];
#pragma unroll
  for (int u = 1; u < kUnroll; ++u) total += acc[u];
  total = details::BlockXReduce(total, SumOp<Acc>());
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <typename T>
__global__ void __launch_bounds__(kFinalBlock) DotFinalKernel(const DotAcc<T>* __restrict__ partials, int count,
                                                             T* __restrict__ out) {
  using Acc = DotAcc<T>;
  Acc acc = Acc(0);
  for (int i = threadIdx.x; i < count; i += kFinalBlock) acc += partials[i];
  acc = details::BlockXReduce(acc, SumOp<Acc>());
  if (threadIdx.x == 0) out[0] = static_cast<T>(acc);
}

// Blocks of DotPartialKernel<T, VEC> resident per SM (at most 8): one full wave, so no
// SM waits on a second round of blocks. Asked once per instantiation.
template <typename T, int VEC>
int ResidentBlocks() {
  static const int blocks = [] {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, DotPartialKernel<T, VEC>, kBlock, 0) != cudaSuccess || n < 1) {
      cudaGetLastError();
      n = 1;
    }
    return std::min(n, 8);
  }();
  return blocks;
}

}  // namespace

template <>
struct DotOn<DeviceType::kCuda> {
  template <typename T>
  static absl::Status Run(const KernelContext& ctx, const Tensor& x, const Tensor& y) {
    using Acc = DotAcc<T>;
    constexpr int kVec = 16 / sizeof(T);
    const Stream& stream = ctx.stream();
    const int64_t n = x.numel();
    const bool vec = reinterpret_cast<uintptr_t>(x.raw_data()) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(y.raw_data()) % 16 == 0;
    const int64_t nvec = vec ? n / kVec : n;
    // The grid depends only on the length and the device, so the sum order does too. The
    // tail (n - nvec * kVec < kVec elements) goes one element per thread of block 0.
    const int64_t wanted = (nvec + int64_t{kBlock} * kUnroll - 1) / (int64_t{kBlock} * kUnroll);
    const int64_t wave = int64_t{vec ? ResidentBlocks<T, kVec>() : ResidentBlocks<T, 1>()} * CudaMultiprocessorCount();
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(wanted, wave));
    KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> partials,
                         Storage::Allocate(blocks * sizeof(Acc), DeviceType::kCuda, stream));
    Acc* p = static_cast<Acc*>(partials->data());
    const cudaStream_t cs = ctx.cuda_stream();
    if (vec) {
      KPS_RETURN_IF_ERROR((LaunchKernel<&DotPartialKernel<T, kVec>>(
          "DotPartialKernel", static_cast<unsigned>(blocks), kBlock, 0, cs, x.data<T>(), y.data<T>(), nvec, n, p)));
    } else {
      KPS_RETURN_IF_ERROR((LaunchKernel<&DotPartialKernel<T, 1>>(
          "DotPartialKernel", static_cast<unsigned>(blocks), kBlock, 0, cs, x.data<T>(), y.data<T>(), nvec, n, p)));
    }
    KPS_RETURN_IF_ERROR(LaunchKernel<&DotFinalKernel<T>>("DotFinalKernel", 1, kFinalBlock, 0, cs, p,
                                                         static_cast<int>(blocks), ctx.output(0).data<T>()));
    return absl::OkStatus();
  }
};

KPS_REGISTER_DEVICE_KERNELS("dot", DotKernel, KPS_DOT_CPP_TYPES);

}  // namespace linalg
}  // namespace kps
