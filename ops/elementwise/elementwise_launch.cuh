// The same-shape elementwise launcher: out[i] = f(in_0[i], ..., in_{Arity-1}[i]) over
// contiguous tensors, built from the ReadData / Elementwise* / WriteData primitives.
//
// Speed comes from three choices (see PERF.md): 16-byte accesses when every pointer is
// aligned (a scalar path otherwise); a grid sized to fill every SM once, each block
// striding over full tiles with no bounds checks in the loop; and the one partial tile
// handled after the loop by a single block.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "primitives/primitives.cuh"
#include "registry/device.h"
#include "registry/status.h"
#include "registry/stream.h"
#include "ops/elementwise/elementwise_launch.h"

namespace kps {
namespace elementwise {

// 256 threads x 8 blocks fill an SM (2048 threads); with one 16-byte vector per input
// per thread that is 32 KiB in flight per SM per input, what CUB sizes for H100.
inline constexpr int kBlockSize = 256;

template <typename T, int N>
struct PointerArray {
  const T* p[N];
};

template <int Arity>
struct ApplyFunctor;
template <>
struct ApplyFunctor<1> {
  template <typename InT, typename OutT, int NX, typename F>
  static KPS_DEVICE void Run(OutT* out, InT (*in)[NX], F f) {
    ElementwiseUnary<InT, OutT, NX, 1>(out, in[0], f);
  }
};
template <>
struct ApplyFunctor<2> {
  template <typename InT, typename OutT, int NX, typename F>
  static KPS_DEVICE void Run(OutT* out, InT (*in)[NX], F f) {
    ElementwiseBinary<InT, OutT, NX, 1>(out, in[0], in[1], f);
  }
};

// Each iteration moves one tile of KPS_BLOCK_NUM_X * VecSize * Unroll elements: every
// thread issues Unroll vector loads per input before it computes, so Unroll * 16 bytes
// per input are in flight per thread. Full tiles first with no bounds checks, then the
// one partial tile (IsBoundary) in the block whose turn it would have been.
template <typename InT, typename OutT, int Arity, int VecSize, int Unroll, typename Functor>
__global__ void __launch_bounds__(kBlockSize)
    ElementwiseSameShapeKernel(PointerArray<InT, Arity> ins, OutT* out, int64_t n, Functor f) {
  const int64_t sub = static_cast<int64_t>(KPS_BLOCK_NUM_X) * VecSize;  // one vector per thread
  const int64_t tile = sub * Unroll;
  const int64_t num_full = n / tile;
  InT args[Unroll][Arity][VecSize];
  OutT result[Unroll][VecSize];
  for (int64_t t = KPS_BLOCK_ID_X; t < num_full; t += KPS_GRID_NUM_X) {
    const int64_t base = t * tile;
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
#pragma unroll
      for (int a = 0; a < Arity; ++a) {
        ReadData<InT, VecSize, 1, false>(args[u][a], ins.p[a] + base + u * sub, static_cast<int>(sub));
      }
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      ApplyFunctor<Arity>::template Run<InT, OutT, VecSize>(result[u], args[u], f);
      WriteData<OutT, VecSize, 1, false>(out + base + u * sub, result[u], static_cast<int>(sub));
    }
  }
  const int64_t rem = n - num_full * tile;
  if (rem > 0 && KPS_BLOCK_ID_X == num_full % KPS_GRID_NUM_X) {
    // The tail: at most Unroll sub-tiles, each bounds-checked.
    for (int64_t done = 0; done < rem; done += sub) {
      const int64_t base = num_full * tile + done;
      const int num = static_cast<int>(rem - done < sub ? rem - done : sub);
#pragma unroll
      for (int a = 0; a < Arity; ++a) {
        Init<InT, VecSize>(args[0][a], InT{});  // lanes past the end compute on defined values
        ReadData<InT, VecSize, 1, true>(args[0][a], ins.p[a] + base, num);
      }
      ApplyFunctor<Arity>::template Run<InT, OutT, VecSize>(result[0], args[0], f);
      WriteData<OutT, VecSize, 1, true>(out + base, result[0], num);
    }
  }
}

// Launch policy under measurement (temporary): KPS_EW_UNROLL = 1|2|4, KPS_EW_GRID =
// sm (grid = SMs x resident blocks, blocks stride) or full (one tile per block).

template <typename InT, typename OutT, int Arity, int VecSize, int Unroll, typename Functor>
absl::Status LaunchSameShape(const PointerArray<InT, Arity>& ins, OutT* out, int64_t n, Functor f,
                             bool full_grid, cudaStream_t stream, absl::string_view name) {
  auto kernel = ElementwiseSameShapeKernel<InT, OutT, Arity, VecSize, Unroll, Functor>;
  static const int blocks_per_sm = [&] {
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kBlockSize, 0) != cudaSuccess || b < 1) {
      cudaGetLastError();
      b = 1;
    }
    return b;
  }();
  const int64_t tile = int64_t{kBlockSize} * VecSize * Unroll;
  const int64_t tiles = (n + tile - 1) / tile;
  const int64_t max_grid = full_grid ? int64_t{1} << 30 : int64_t{CudaMultiprocessorCount()} * blocks_per_sm;
  const int grid = static_cast<int>(tiles < max_grid ? tiles : max_grid);
  kernel<<<grid, kBlockSize, 0, stream>>>(ins, out, n, f);
  KPS_RETURN_IF_LAUNCH_ERROR(name);
  return absl::OkStatus();
}

template <typename InT, typename OutT, int Arity, int VecSize, typename Functor>
absl::Status LaunchWithPolicy(const PointerArray<InT, Arity>& ins, OutT* out, int64_t n, Functor f,
                              cudaStream_t stream, absl::string_view name) {
  const LaunchPolicy p = GetLaunchPolicy();
  switch (p.unroll) {
    case 2: return LaunchSameShape<InT, OutT, Arity, VecSize, 2>(ins, out, n, f, p.full_grid, stream, name);
    case 4: return LaunchSameShape<InT, OutT, Arity, VecSize, 4>(ins, out, n, f, p.full_grid, stream, name);
    default: return LaunchSameShape<InT, OutT, Arity, VecSize, 1>(ins, out, n, f, p.full_grid, stream, name);
  }
}

// out[i] = f(ins[0][i], ...) for i < n, on `stream`. Picks 16-byte vectors when every
// pointer allows them, else the scalar path. n == 0 launches nothing.
template <typename InT, typename OutT, int Arity, typename Functor>
absl::Status LaunchElementwiseSameShape(const PointerArray<InT, Arity>& ins, OutT* out, int64_t n,
                                        Functor f, const Stream& stream, absl::string_view name) {
  if (n == 0) return absl::OkStatus();
  constexpr int kVec = details::MaxVectorSize<InT>();
  constexpr int kOutVecBytes = details::VectorSizeFor<OutT, kVec>() * sizeof(OutT);
  bool aligned = reinterpret_cast<uintptr_t>(out) % kOutVecBytes == 0;
  for (int a = 0; a < Arity; ++a) {
    aligned = aligned && reinterpret_cast<uintptr_t>(ins.p[a]) % (kVec * sizeof(InT)) == 0;
  }
  if (aligned) return LaunchWithPolicy<InT, OutT, Arity, kVec>(ins, out, n, f, stream.cuda_stream(), name);
  return LaunchSameShape<InT, OutT, Arity, 1, 4>(ins, out, n, f, false, stream.cuda_stream(), name);
}

}  // namespace elementwise
}  // namespace kps
