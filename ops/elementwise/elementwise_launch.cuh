// The same-shape elementwise launcher: out[i] = f(in_0[i], ..., in_{Arity-1}[i]) over
// contiguous tensors, built from the ReadData / Elementwise* / WriteData primitives.
//
// Speed comes from three choices (see PERF.md): 16-byte accesses when every pointer is
// aligned (a scalar path otherwise); two vectors per input in flight per thread; and no
// bounds checks except in the one partial tile, which a single block handles last.
//
// Grid: one block per tile. Measured on the H100 (2026-11-21, add_f32_256M / add_f16 /
// copy_f32): a grid of SMs x resident blocks striding over tiles reached 2872 / 2833 /
// 2783 GB/s whatever the unroll (1, 2, 4); one tile per block reached 3008 / 2985 /
// 2950. Unroll 2 beat 1 on 16-bit types (2985 vs 2960) and tied on 32-bit ones; 4 was
// worse. Beyond 2^30 tiles the blocks stride, so any size still launches.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "functors/apply2.h"
#include "ops/elementwise/broadcast.h"
#include "primitives/primitives.cuh"
#include "registry/device.h"
#include "registry/status.h"
#include "registry/stream.h"

namespace kps {
namespace elementwise {

// 256 threads x 8 blocks fill an SM (2048 threads); with two 16-byte vectors per input
// per thread that is 64 KiB in flight per SM per input, over the 32 KiB CUB sizes for
// the H100.
inline constexpr int kBlockSize = 256;
// Vectors per input each thread loads before computing (see the measurement above).
inline constexpr int kUnroll = 2;
// Grid cap: past it blocks stride over tiles (gridDim.x allows 2^31 - 1).
inline constexpr int64_t kMaxGrid = int64_t{1} << 30;

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
// True when F has an Apply2 for T's two-lane type (T: float16 or bfloat16).
template <typename T, typename F, typename = void>
struct UsesApply2 : std::false_type {};
template <typename T, typename F>
struct UsesApply2<T, F, std::void_t<typename Packed2TypeTrait<T>::Type>>
    : std::bool_constant<HasApply2<F, typename Packed2TypeTrait<T>::Type>> {};

template <>
struct ApplyFunctor<2> {
  template <typename InT, typename OutT, int NX, typename F>
  static KPS_DEVICE void Run(OutT* out, InT (*in)[NX], F f) {
    if constexpr (std::is_same_v<InT, OutT> && NX % 2 == 0 && UsesApply2<InT, F>::value) {
      // 16-bit pairs through the packed instructions (half2 / bfloat162 math), which
      // give the scalar path's results (functors/apply2.h) at half the instructions.
      using P = Packed2Type<InT>;
#pragma unroll
      for (int i = 0; i < NX; i += 2) {
        const P r = f.Apply2(P(in[0][i], in[0][i + 1]), P(in[1][i], in[1][i + 1]));
        out[i] = r.x;
        out[i + 1] = r.y;
      }
    } else {
      ElementwiseBinary<InT, OutT, NX, 1>(out, in[0], in[1], f);
    }
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

template <typename InT, typename OutT, int Arity, int VecSize, int Unroll, typename Functor>
absl::Status LaunchSameShape(const PointerArray<InT, Arity>& ins, OutT* out, int64_t n, Functor f,
                             cudaStream_t stream, absl::string_view name) {
  const int64_t tile = int64_t{kBlockSize} * VecSize * Unroll;
  const int64_t tiles = (n + tile - 1) / tile;
  const int grid = static_cast<int>(tiles < kMaxGrid ? tiles : kMaxGrid);
  ElementwiseSameShapeKernel<InT, OutT, Arity, VecSize, Unroll, Functor>
      <<<grid, kBlockSize, 0, stream>>>(ins, out, n, f);
  KPS_RETURN_IF_LAUNCH_ERROR(name);
  return absl::OkStatus();
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
  if (aligned) return LaunchSameShape<InT, OutT, Arity, kVec, kUnroll>(ins, out, n, f, stream.cuda_stream(), name);
  // Scalar path: four scalars per input in flight per thread, still coalesced per load.
  return LaunchSameShape<InT, OutT, Arity, 1, 4>(ins, out, n, f, stream.cuda_stream(), name);
}

// ---- broadcast and strided inputs ------------------------------------------------------

template <int Arity>
struct ConfigArray {
  details::BroadcastConfig c[Arity];
};

// out[i] = f(ins[0][offset_0(i)], ...) where offset_a comes from input a's broadcast
// config; one tile of KPS_BLOCK_NUM_X * VecSize output elements per block iteration, the
// output stored in vectors, the last partial tile bounds-checked.
template <typename InT, typename OutT, int Arity, int VecSize, typename Functor>
__global__ void __launch_bounds__(kBlockSize)
    ElementwiseBroadcastKernel(PointerArray<InT, Arity> ins, ConfigArray<Arity> cfgs, OutT* out, int64_t n,
                               Functor f) {
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_NUM_X) * VecSize;
  InT args[Arity][VecSize];
  OutT result[VecSize];
  for (int64_t base = static_cast<int64_t>(KPS_BLOCK_ID_X) * tile; base < n;
       base += static_cast<int64_t>(KPS_GRID_NUM_X) * tile) {
    const int64_t rem = n - base;
    if (rem >= tile) {
#pragma unroll
      for (int a = 0; a < Arity; ++a) ReadDataBc<InT, VecSize, 1, false>(args[a], ins.p[a], base, cfgs.c[a], n);
      ApplyFunctor<Arity>::template Run<InT, OutT, VecSize>(result, args, f);
      WriteData<OutT, VecSize, 1, false>(out + base, result, static_cast<int>(tile));
    } else {
#pragma unroll
      for (int a = 0; a < Arity; ++a) {
        Init<InT, VecSize>(args[a], InT{});
        ReadDataBc<InT, VecSize, 1, true>(args[a], ins.p[a], base, cfgs.c[a], n);
      }
      ApplyFunctor<Arity>::template Run<InT, OutT, VecSize>(result, args, f);
      WriteData<OutT, VecSize, 1, true>(out + base, result, static_cast<int>(rem));
    }
  }
}

template <typename InT, typename OutT, int Arity, int VecSize, typename Functor>
absl::Status LaunchBroadcast(const PointerArray<InT, Arity>& ins, const ConfigArray<Arity>& cfgs, OutT* out,
                             int64_t n, Functor f, cudaStream_t stream, absl::string_view name) {
  const int64_t tile = int64_t{kBlockSize} * VecSize;
  const int64_t tiles = (n + tile - 1) / tile;
  const int grid = static_cast<int>(tiles < kMaxGrid ? tiles : kMaxGrid);
  ElementwiseBroadcastKernel<InT, OutT, Arity, VecSize, Functor><<<grid, kBlockSize, 0, stream>>>(ins, cfgs, out, n, f);
  KPS_RETURN_IF_LAUNCH_ERROR(name);
  return absl::OkStatus();
}

// out = f(ins...) over `layout` (from MakeElementwiseLayout; operand 0 is `out`, which
// must be contiguous): the vectorized same-shape path when every input walks like the
// output, else each input read through its broadcast config (FastDivMod index math).
template <typename InT, typename OutT, int Arity, typename Functor>
absl::Status LaunchElementwise(const PointerArray<InT, Arity>& ins, const ElementwiseLayout& layout, OutT* out,
                               int64_t n, Functor f, const Stream& stream, absl::string_view name) {
  if (n == 0) return absl::OkStatus();
  if (layout.AllLikeOutput()) return LaunchElementwiseSameShape<InT, OutT, Arity>(ins, out, n, f, stream, name);
  if (layout.rank() > details::kMaxBroadcastRank) {
    return absl::InvalidArgumentError(absl::StrCat("op '", name, "': the inputs' layout needs ", layout.rank(),
                                                   " dims after merging; at most ", details::kMaxBroadcastRank,
                                                   " are supported (make an input contiguous first)"));
  }
  ConfigArray<Arity> cfgs;
  for (int a = 0; a < Arity; ++a) {
    cfgs.c[a] = details::BroadcastConfig(layout.dims.data(), layout.strides[a + 1].data(), layout.rank());
  }
  // Four outputs per thread: the index math is per element, so wider vectors buy little.
  constexpr int kVec = 4;
  constexpr int kOutVecBytes = details::VectorSizeFor<OutT, kVec>() * sizeof(OutT);
  if (reinterpret_cast<uintptr_t>(out) % kOutVecBytes == 0) {
    return LaunchBroadcast<InT, OutT, Arity, kVec>(ins, cfgs, out, n, f, stream.cuda_stream(), name);
  }
  return LaunchBroadcast<InT, OutT, Arity, 1>(ins, cfgs, out, n, f, stream.cuda_stream(), name);
}

}  // namespace elementwise
}  // namespace kps
