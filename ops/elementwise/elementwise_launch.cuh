// The elementwise launcher: out[i] = f(in_0[...], ..., in_{k-1}[...]) over a contiguous
// output, each input of its own type, contiguous, broadcast or strided, built from the
// ReadData / WriteData primitives.
//
// One kernel template serves every layout. A thread owns VecSize consecutive outputs per sub-tile
// and Unroll sub-tiles per tile; each input is loaded per vector by one of:
//   - like the output (same walk): ReadData at the output's index, 16-byte vectors;
//   - broadcast or strided: the input offset of the vector's first element through the
//     merged layout's FastDivMod chain (once per vector, not per element), then one of
//     a single broadcast load (inner stride 0), a vector load (inner stride 1, aligned)
//     or VecSize strided loads. Vectors never cross the innermost dim: the host picks
//     VecSize > 1 only when it divides that dim.
// Which of these an input takes is decided once on the host, so the branch is uniform.
//
// Speed comes from: 16-byte accesses when every pointer allows them (a scalar
// instantiation otherwise); Unroll vectors per input in flight per thread; and no bounds
// checks except in the one partial tile, which a single block handles last.
//
// Grid: one block per tile, which beat a grid of SMs x resident blocks striding over
// tiles at every unroll. Beyond 2^30 tiles the blocks stride, so any size still launches.
// add_f32_256M, H100: one tile per block 3008 GB/s, grid-stride 2872.
//
// Instantiations per (functor, types): three kernels whatever the layouts met later:
//   same-shape vector (kWalk = false: no offset code, 32 registers, 8 blocks per SM),
//   walk vector (32-bit offsets only) and walk scalar (any walk, the 64-bit path, and
//   unaligned same-shape inputs, read like the output without offset math).
// The same-shape instantiation is separate because the walk code costs registers even
// where it never runs.
// add_f16_256M, H100: separate 2979 GB/s, one kernel for both (62 registers) 2722.
#pragma once

#include <cuda/std/tuple>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "functors/apply2.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/elementwise_on.h"
#include "primitives/primitives.cuh"
#include "registry/cuda_launch.h"
#include "registry/status.h"
#include "registry/stream.h"
#include "registry/tuning.h"

namespace kps {
namespace elementwise {

// 256 threads x 8 blocks fill an SM (2048 threads); with two 16-byte vectors per input
// per thread that is 64 KiB in flight per SM per input, over the 32 KiB CUB sizes for
// the H100.
inline constexpr int kBlockSize = 256;
// Vectors per input each thread loads before computing: 2 helps 16-bit types, ties on
// 32-bit ones; 4 is slower.
// add_f16_256M, H100: unroll 2 2985 GB/s, unroll 1 2960.
inline constexpr int kUnroll = 2;
// Grid cap: past it blocks stride over tiles (gridDim.x allows 2^31 - 1).
inline constexpr int64_t kMaxGrid = int64_t{1} << 30;

// The inputs of one launch: a pointer per input, each of its own element type.
template <typename... InTs>
using Inputs = cuda::std::tuple<const InTs*...>;

template <typename... InTs>
Inputs<InTs...> MakeInputs(const InTs*... p) {
  return Inputs<InTs...>(p...);
}

// Elements per vector for a launch over these types: 16 bytes of the widest.
template <typename OutT, typename... InTs>
constexpr int LaunchVectorSize() {
  constexpr size_t kWidest = std::max({sizeof(OutT), sizeof(InTs)...});
  return kWidest >= details::kMaxVectorBytes ? 1 : static_cast<int>(details::kMaxVectorBytes / kWidest);
}

namespace internal {

template <typename T, int N>
struct Regs {
  T v[N];
};

template <typename F, int... I>
KPS_DEVICE void StaticForImpl(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>()), ...);
}
// f(integral_constant<int, I>()) for I in [0, N), unrolled at compile time.
template <int N, typename F>
KPS_DEVICE void StaticFor(F&& f) {
  StaticForImpl(f, std::make_integer_sequence<int, N>());
}

// True when F has an Apply2 for T's two-lane type (T: float16 or bfloat16).
template <typename T, typename F, typename = void>
struct UsesApply2 : std::false_type {};
template <typename T, typename F>
struct UsesApply2<T, F, std::void_t<typename Packed2TypeTrait<T>::Type>>
    : std::bool_constant<HasApply2<F, typename Packed2TypeTrait<T>::Type>> {};

template <typename OutT, int N, typename F, typename Args, int... I>
KPS_DEVICE void ApplyImpl(OutT* out, const Args& args, const F& f, std::integer_sequence<int, I...>) {
  using First = std::remove_cv_t<std::remove_reference_t<decltype(cuda::std::get<0>(args).v[0])>>;
  if constexpr (sizeof...(I) == 2 && N % 2 == 0 &&
                std::is_same_v<cuda::std::tuple<Regs<First, N>, Regs<First, N>>, Args> &&
                std::is_same_v<First, OutT> && UsesApply2<First, F>::value) {
    // 16-bit pairs through the packed instructions (half2 / bfloat162 math), which give
    // the scalar path's results (functors/apply2.h) at half the instructions.
    using P = Packed2Type<First>;
    const auto& a = cuda::std::get<0>(args).v;
    const auto& b = cuda::std::get<1>(args).v;
    KPS_PRAGMA_UNROLL
    for (int i = 0; i < N; i += 2) {
      const P r = f.Apply2(P(a[i], a[i + 1]), P(b[i], b[i + 1]));
      out[i] = r.x;
      out[i + 1] = r.y;
    }
  } else {
    KPS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) out[i] = static_cast<OutT>(f(cuda::std::get<I>(args).v[i]...));
  }
}

// How one input is read (chosen on the host; see the file comment).
struct InputWalk {
  details::BroadcastConfig cfg;  // output index -> input offset (unused when like_out)
  int64_t inner_stride = 1;      // the input's stride along the innermost merged dim
  bool like_out = true;          // same walk as the output: read at the output's index
  bool vector = false;           // inner stride 1 and aligned for a VecSize load
};

template <int Arity>
struct Walks {
  InputWalk in[Arity > 0 ? Arity : 1];
};

// This thread's VecSize elements of sub-tile `base` (tile index < num when IsBoundary)
// of one input into dst.
template <int VecSize, bool IsBoundary, typename T>
KPS_DEVICE void LoadInput(T* dst, const T* p, const InputWalk& w, int64_t base, int num) {
  if (w.like_out) {
    ReadData<T, VecSize, 1, IsBoundary>(dst, p + base, num);
    return;
  }
  // The vector instantiation only ever sees 32-bit walks (LaunchWalk routes 64-bit ones
  // to the scalar one), which keeps the 64-bit divisions and their registers out of it.
  ReadDataBcRun<T, VecSize, IsBoundary, (VecSize > 1)>(dst, p, base, w.cfg, w.inner_stride, w.vector, num);
}

// kWalk == false: every input is read like the output (the same-shape instantiation,
// which carries none of the offset code and so fewer registers).
template <int VecSize, bool IsBoundary, bool kWalk, typename Args, typename... InTs>
KPS_DEVICE void LoadInputs(Args& args, const Inputs<InTs...>& ins, const Walks<sizeof...(InTs)>& walks, int64_t base,
                           int num) {
  StaticFor<static_cast<int>(sizeof...(InTs))>([&](auto a) {
    constexpr int kA = decltype(a)::value;
    if constexpr (kWalk) {
      LoadInput<VecSize, IsBoundary>(cuda::std::get<kA>(args).v, cuda::std::get<kA>(ins), walks.in[kA], base, num);
    } else {
      using T = cuda::std::tuple_element_t<kA, cuda::std::tuple<InTs...>>;
      ReadData<T, VecSize, 1, IsBoundary>(cuda::std::get<kA>(args).v, cuda::std::get<kA>(ins) + base, num);
    }
  });
}

// Each iteration moves one tile of KPS_BLOCK_NUM_X * VecSize * Unroll outputs: every
// thread issues Unroll vector loads per input before it computes. Full tiles first with
// no bounds checks, then the one partial tile (IsBoundary) in the block whose turn it
// would have been.
template <typename OutT, int VecSize, int Unroll, bool kWalk, int MinBlocks, typename Functor, typename... InTs>
__global__ void __launch_bounds__(kBlockSize, MinBlocks)
    ElementwiseKernel(Inputs<InTs...> ins, Walks<sizeof...(InTs)> walks, OutT* out, int64_t n, Functor f) {
  using Args = cuda::std::tuple<Regs<InTs, VecSize>...>;
  using Seq = std::make_integer_sequence<int, static_cast<int>(sizeof...(InTs))>;
  const int64_t sub = static_cast<int64_t>(KPS_BLOCK_NUM_X) * VecSize;  // one vector per thread
  const int64_t tile = sub * Unroll;
  const int64_t num_full = n / tile;
  Args args[Unroll];
  OutT result[Unroll][VecSize];
  for (int64_t t = KPS_BLOCK_ID_X; t < num_full; t += KPS_GRID_NUM_X) {
    const int64_t base = t * tile;
    KPS_PRAGMA_UNROLL
    for (int u = 0; u < Unroll; ++u) LoadInputs<VecSize, false, kWalk>(args[u], ins, walks, base + u * sub, static_cast<int>(sub));
    KPS_PRAGMA_UNROLL
    for (int u = 0; u < Unroll; ++u) {
      ApplyImpl<OutT, VecSize>(result[u], args[u], f, Seq());
      WriteData<OutT, VecSize, 1, false>(out + base + u * sub, result[u], static_cast<int>(sub));
    }
  }
  const int64_t rem = n - num_full * tile;
  if (rem > 0 && KPS_BLOCK_ID_X == num_full % KPS_GRID_NUM_X) {
    // The tail: at most Unroll sub-tiles, each bounds-checked. Lanes past the end
    // compute on value-initialized inputs and are not stored.
    for (int64_t done = 0; done < rem; done += sub) {
      const int64_t base = num_full * tile + done;
      const int num = static_cast<int>(rem - done < sub ? rem - done : sub);
      args[0] = Args();
      LoadInputs<VecSize, true, kWalk>(args[0], ins, walks, base, num);
      ApplyImpl<OutT, VecSize>(result[0], args[0], f, Seq());
      WriteData<OutT, VecSize, 1, true>(out + base, result[0], num);
    }
  }
}

template <typename OutT, int VecSize, int Unroll, bool kWalk, int MinBlocks, typename Functor, typename... InTs>
absl::Status Launch(const Inputs<InTs...>& ins, const Walks<sizeof...(InTs)>& walks, OutT* out, int64_t n, Functor f,
                    cudaStream_t stream, absl::string_view name) {
  const int64_t tile = int64_t{kBlockSize} * VecSize * Unroll;
  const int64_t tiles = (n + tile - 1) / tile;
  const int grid = static_cast<int>(tiles < kMaxGrid ? tiles : kMaxGrid);
  KPS_RETURN_IF_ERROR((LaunchKernel<&ElementwiseKernel<OutT, VecSize, Unroll, kWalk, MinBlocks, Functor, InTs...>>(
      name, grid, kBlockSize, 0, stream, ins, walks, out, n, f)));
  return absl::OkStatus();
}

template <typename T>
bool AlignedFor(const T* p, int vec) {
  return reinterpret_cast<uintptr_t>(p) % (static_cast<size_t>(vec) * sizeof(T)) == 0;
}

// The vectorized walk instantiation's (unroll, least resident blocks). Broadcast inputs
// are often one big stream plus a small cached one, so 4-byte types keep 4 vectors of
// the big one in flight per thread (add_bcast_col_f32, H100: unroll 4 2806 GB/s, 2 2783).
// 16-bit floats (8 per vector, packed math) are bound by occupancy instead: at unroll 2
// their walk kernel takes 48-64 registers (5 blocks per SM); one vector per input per
// tile, capped at 32 registers (8 blocks), moves the same bytes per SM with more threads.
// add_bcast_nchw_f16, H100, back to back: unroll 1 capped 2844 GB/s, unroll 2 2531.
// The cap is kept where ptxas fits it (at most 8 bytes of spills, in gelu): one or two
// 16-bit float inputs. Three inputs (where, clip, addcmul), int16 (max/min spill 72
// bytes) and 8-bit types (16 per vector, about 200 bytes) spill under it, so they keep
// unroll 2 uncapped.
template <int VecSize, typename... InTs>
inline constexpr bool kWalkCapped =
    VecSize == 8 && sizeof...(InTs) <= 2 && (... && (sizeof(InTs) == 2 && !std::is_integral_v<InTs>));
template <int VecSize, typename... InTs>
inline constexpr int kWalkUnroll = kWalkCapped<VecSize, InTs...> ? 1 : VecSize >= 8 ? 2 : 4;
template <int VecSize, typename... InTs>
inline constexpr int kWalkMinBlocks = kWalkCapped<VecSize, InTs...> ? 8 : 1;

inline bool AnyWalk64(const InputWalk* w, int n) {
  for (int a = 0; a < n; ++a) {
    if (!w[a].like_out && w[a].cfg.use_64bit) return true;
  }
  return false;
}

// The walk instantiations (vector and scalar) and the choice between them.
template <typename OutT, typename Functor, typename... InTs>
absl::Status LaunchWalk(const Inputs<InTs...>& ins, const Walks<sizeof...(InTs)>& walks, bool vector_ok, OutT* out,
                        int64_t n, Functor f, const Stream& stream, absl::string_view name) {
  constexpr int kVec = LaunchVectorSize<OutT, InTs...>();
  if (kVec > 1 && vector_ok && !AnyWalk64(walks.in, static_cast<int>(sizeof...(InTs)))) {
    return Launch<OutT, kVec, kWalkUnroll<kVec, InTs...>, true, kWalkMinBlocks<kVec, InTs...>>(ins, walks, out, n, f, stream.cuda_stream(), name);
  }
  // Scalar: four elements per input in flight per thread, still coalesced per load.
  // Every walk stays valid: VecSize 1 needs no alignment and crosses no dim.
  return Launch<OutT, 1, 4, true, 1>(ins, walks, out, n, f, stream.cuda_stream(), name);
}

// The tiled path: inputs read across their contiguous dim (a transposed view added to
// anything, or copied). The walk kernels read such an input with one element per 32-byte
// sector a warp touches (add of two transposed f32 [8192, 8192], H200: 844 GB/s against
// 4089 for PyTorch, whose output takes the inputs' layout). Here a block takes a tile of
// kT x kT outputs over two dims, m (the dim along which a staged input is contiguous)
// and n (the innermost): each staged input is read into shared memory with lanes along
// m, and every output is written with lanes along n. Other inputs are read in place at
// m * s_m + n * s_n, coalesced when s_n is 0 or 1. The other dims form the batch, one
// BroadcastConfig per operand mapping a batch index to its offset.
// kT: 32 for 4- and 8-byte types; 64 for narrower ones, so that a thread moves 16
// elements, not 4, and a warp's rows are 64 elements wide.
inline constexpr int kTileThreads = 256;  // 32 lanes x 8 rows

template <typename OutT, typename... InTs>
inline constexpr int kTileSize = (sizeof(OutT) <= 2 && ... && (sizeof(InTs) <= 2)) ? 64 : 32;

struct TileWalk {
  details::BroadcastConfig batch;  // batch index -> offset of the (0, 0) element
  int64_t s_m = 0;                 // stride along m
  int64_t s_n = 0;                 // stride along n
  bool staged = false;             // s_m == 1: read through shared memory
};

template <int Arity>
struct TileWalks {
  TileWalk in[Arity > 0 ? Arity : 1];
  TileWalk out;
  // Tile index -> (batch, tile along m, tile along n): 32-bit when the tiles number
  // fewer than 2^32, which keeps 64-bit divisions out of every thread's tile setup.
  details::FastDivMod per_batch, tiles_n;
  bool use_32bit = true;
};

// Byte offset of input a's [kT][kT + 1] buffer (the + 1 staggers the column reads across
// banks) in the kernel's shared memory; a = arity gives the total.
template <int kT, typename... Ts>
KPS_HOST_DEVICE constexpr int TileBufferOffset(int a) {
  constexpr int kSizes[] = {static_cast<int>(sizeof(Ts))..., 0};
  int offset = 0;
  for (int i = 0; i < a; ++i) offset += (kT * (kT + 1) * kSizes[i] + 15) / 16 * 16;
  return offset;
}

template <int kT, typename OutT, typename Functor, typename... InTs, int... I>
KPS_DEVICE OutT ApplyTileAt(const Functor& f, const Inputs<InTs...>& ins, const TileWalks<sizeof...(InTs)>& w,
                            const unsigned char* smem, const int64_t (&base)[sizeof...(InTs) + 1], int64_t m, int64_t n,
                            int tile_index, std::integer_sequence<int, I...>) {
  auto arg = [&](auto a) {
    constexpr int kA = decltype(a)::value;
    using T = cuda::std::tuple_element_t<kA, cuda::std::tuple<InTs...>>;
    if (w.in[kA].staged) return reinterpret_cast<const T*>(smem + TileBufferOffset<kT, InTs...>(kA))[tile_index];
    return cuda::std::get<kA>(ins)[base[kA] + m * w.in[kA].s_m + n * w.in[kA].s_n];
  };
  return static_cast<OutT>(f(arg(std::integral_constant<int, I>())...));
}

template <typename OutT, typename Functor, typename... InTs>
__global__ void __launch_bounds__(kTileThreads)
    ElementwiseTileKernel(Inputs<InTs...> ins, TileWalks<sizeof...(InTs)> w, OutT* out, int64_t m_size,
                          int64_t n_size, int64_t tiles_m, int64_t tiles_n, int64_t num_tiles, Functor f) {
  constexpr int kArity = static_cast<int>(sizeof...(InTs));
  constexpr int kT = kTileSize<OutT, InTs...>;
  constexpr int kSmemBytes = TileBufferOffset<kT, InTs...>(kArity);
  __shared__ alignas(16) unsigned char smem[kSmemBytes > 0 ? kSmemBytes : 16];
  const int tx = static_cast<int>(KPS_THREAD_ID_X) % 32;
  const int ty = static_cast<int>(KPS_THREAD_ID_X) / 32;
  for (int64_t t = KPS_BLOCK_ID_X; t < num_tiles; t += KPS_GRID_NUM_X) {
    int64_t b, tm, tn;
    if (w.use_32bit) {
      const auto q = w.per_batch.Divmod(static_cast<uint32_t>(t));
      const auto r = w.tiles_n.Divmod(q.remainder);
      b = q.quotient;
      tm = r.quotient;
      tn = r.remainder;
    } else {
      b = t / (tiles_m * tiles_n);
      const int64_t r = t - b * (tiles_m * tiles_n);
      tm = r / tiles_n;
      tn = r - tm * tiles_n;
    }
    const int64_t m0 = tm * kT, n0 = tn * kT;
    int64_t base[kArity + 1];
    StaticFor<kArity>([&](auto a) {
      constexpr int kA = decltype(a)::value;
      using T = cuda::std::tuple_element_t<kA, cuda::std::tuple<InTs...>>;
      base[kA] = w.in[kA].batch.Offset(b);
      if (!w.in[kA].staged) return;
      // Lanes along m, where the input is contiguous; rows of the buffer are n.
      T* tile = reinterpret_cast<T*>(smem + TileBufferOffset<kT, InTs...>(kA));
      const T* p = cuda::std::get<kA>(ins) + base[kA];
      KPS_PRAGMA_UNROLL
      for (int i = ty; i < kT; i += kTileThreads / 32) {
        const int64_t n = n0 + i;
        KPS_PRAGMA_UNROLL
        for (int j = tx; j < kT; j += 32) {
          const int64_t m = m0 + j;
          if (m < m_size && n < n_size) tile[i * (kT + 1) + j] = p[m + n * w.in[kA].s_n];
        }
      }
    });
    base[kArity] = w.out.batch.Offset(b);
    __syncthreads();
    // Lanes along n, where the output is contiguous.
    KPS_PRAGMA_UNROLL
    for (int i = ty; i < kT; i += kTileThreads / 32) {
      const int64_t m = m0 + i;
      KPS_PRAGMA_UNROLL
      for (int j = tx; j < kT; j += 32) {
        const int64_t n = n0 + j;
        if (m < m_size && n < n_size) {
          out[base[kArity] + m * w.out.s_m + n] = ApplyTileAt<kT, OutT>(f, ins, w, smem, base, m, n, j * (kT + 1) + i,
                                                                        std::make_integer_sequence<int, kArity>());
        }
      }
    }
    __syncthreads();
  }
}

// The dim m for the tiled path, or -1: the first input read across its contiguous dim
// (inner stride neither 0 nor 1) whose stride is 1 along a dim d < rank - 1, where both d
// and the innermost dim span at least elementwise.tile_min elements (below that the walk
// kernels' reads share sectors within a warp).
inline int TileDim(const ElementwiseLayout& layout, int arity) {
  // Not measured at the switch: below 16 a warp of the walk kernels reads runs of at
  // least 32 / 16 contiguous elements along m, which share their sectors.
  static const int64_t tile_min = TuneInt("elementwise.tile_min", 16);
  const int rank = layout.rank();
  if (tile_min <= 0 || rank < 2 || layout.dims[rank - 1] < tile_min) return -1;
  for (int a = 1; a <= arity; ++a) {
    const DimVector& s = layout.strides[a];
    if (s[rank - 1] == 0 || s[rank - 1] == 1) continue;
    for (int d = 0; d + 1 < rank; ++d) {
      if (s[d] == 1 && layout.dims[d] >= tile_min) return d;
    }
  }
  return -1;
}

template <typename OutT, typename Functor, typename... InTs>
absl::Status LaunchTile(const Inputs<InTs...>& ins, const ElementwiseLayout& layout, int m_dim, OutT* out, Functor f,
                        const Stream& stream, absl::string_view name) {
  constexpr int kArity = static_cast<int>(sizeof...(InTs));
  const int rank = layout.rank();
  const int n_dim = rank - 1;
  DimVector batch_dims;
  for (int d = 0; d < rank; ++d) {
    if (d != m_dim && d != n_dim) batch_dims.push_back(layout.dims[d]);
  }
  auto walk = [&](const DimVector& s) {
    TileWalk w;
    DimVector batch_strides;
    for (int d = 0; d < rank; ++d) {
      if (d != m_dim && d != n_dim) batch_strides.push_back(s[d]);
    }
    w.batch = details::BroadcastConfig(batch_dims.data(), batch_strides.data(), static_cast<int>(batch_dims.size()));
    w.s_m = s[m_dim];
    w.s_n = s[n_dim];
    w.staged = s[m_dim] == 1 && s[n_dim] != 0 && s[n_dim] != 1;
    return w;
  };
  TileWalks<kArity> walks;
  walks.out = walk(layout.strides[0]);
  for (int a = 0; a < kArity; ++a) walks.in[a] = walk(layout.strides[a + 1]);
  int64_t batches = 1;
  for (int64_t d : batch_dims) batches *= d;
  constexpr int kT = kTileSize<OutT, InTs...>;
  const int64_t m_size = layout.dims[m_dim], n_size = layout.dims[n_dim];
  const int64_t tiles_m = (m_size + kT - 1) / kT, tiles_n = (n_size + kT - 1) / kT;
  const int64_t num_tiles = batches * tiles_m * tiles_n;
  walks.use_32bit = num_tiles <= int64_t{0xFFFFFFFF};
  if (walks.use_32bit) {
    walks.per_batch = details::FastDivMod(static_cast<uint32_t>(tiles_m * tiles_n));
    walks.tiles_n = details::FastDivMod(static_cast<uint32_t>(tiles_n));
  }
  const int grid = static_cast<int>(num_tiles < kMaxGrid ? num_tiles : kMaxGrid);
  return LaunchKernel<&ElementwiseTileKernel<OutT, Functor, InTs...>>(name, grid, kTileThreads, 0, stream.cuda_stream(),
                                                                      ins, walks, out, m_size, n_size, tiles_m,
                                                                      tiles_n, num_tiles, f);
}

}  // namespace internal

// out[i] = f(ins[0][i], ...) for i < n, every input contiguous like the output, on
// `stream`: 16-byte vectors when every pointer allows them, else the scalar path.
// n == 0 launches nothing.
template <typename OutT, typename Functor, typename... InTs>
absl::Status LaunchElementwiseSameShape(const Inputs<InTs...>& ins, OutT* out, int64_t n, Functor f,
                                        const Stream& stream, absl::string_view name) {
  if (n == 0) return absl::OkStatus();
  constexpr int kVec = LaunchVectorSize<OutT, InTs...>();
  bool aligned = internal::AlignedFor(out, kVec);
  cuda::std::apply([&](auto... p) { ((aligned = aligned && internal::AlignedFor(p, kVec)), ...); }, ins);
  if (kVec > 1 && aligned) {
    return internal::Launch<OutT, kVec, kUnroll, false, 1>(ins, internal::Walks<sizeof...(InTs)>(), out, n, f,
                                                        stream.cuda_stream(), name);
  }
  // Unaligned: the scalar walk instantiation, every input read like the output (no
  // offset math), so no third kernel is compiled for this rare case.
  return internal::LaunchWalk(ins, internal::Walks<sizeof...(InTs)>(), false, out, n, f, stream, name);
}

// out = f(ins...) over `layout` (from MakeElementwiseLayout; operand 0 is `out`, which
// must be contiguous, operand a + 1 is ins[a]): any mix of same-shape, broadcast and
// strided inputs.
template <typename OutT, typename Functor, typename... InTs>
absl::Status LaunchElementwise(const Inputs<InTs...>& ins, const ElementwiseLayout& layout, OutT* out, int64_t n,
                               Functor f, const Stream& stream, absl::string_view name) {
  if (n == 0) return absl::OkStatus();
  if (layout.AllLikeOutput()) return LaunchElementwiseSameShape(ins, out, n, f, stream, name);
  const int rank = layout.rank();
  if (rank > details::kMaxBroadcastRank) {
    return absl::InvalidArgumentError(absl::StrCat("op '", name, "': the inputs' layout needs ", rank,
                                                   " dims after merging; at most ", details::kMaxBroadcastRank,
                                                   " are supported (make an input contiguous first)"));
  }
  const int m_dim = internal::TileDim(layout, static_cast<int>(sizeof...(InTs)));
  if (m_dim >= 0) return internal::LaunchTile(ins, layout, m_dim, out, f, stream, name);
  constexpr int kVec = LaunchVectorSize<OutT, InTs...>();
  // Vectors must not cross the innermost dim (rank >= 1 here: a rank-0 layout is all
  // like the output).
  bool vector_ok = internal::AlignedFor(out, kVec) && layout.dims[rank - 1] % kVec == 0;
  internal::Walks<sizeof...(InTs)> walks;
  int a = 0;
  cuda::std::apply(
      [&](auto... p) {
        auto one = [&](auto* ptr) {
          internal::InputWalk& w = walks.in[a];
          const DimVector& s = layout.strides[a + 1];
          w.inner_stride = s[rank - 1];
          bool outer_aligned = true;
          for (int d = 0; d + 1 < rank; ++d) outer_aligned = outer_aligned && s[d] % kVec == 0;
          const bool aligned = internal::AlignedFor(ptr, kVec) && outer_aligned;
          // Read like the output only where that path's vector loads are legal; the
          // scalar instantiation needs no alignment.
          w.like_out = s == layout.strides[0] && (aligned || !vector_ok);
          w.vector = w.inner_stride == 1 && aligned;
          w.cfg = details::BroadcastConfig(layout.dims.data(), s.data(), rank);
          ++a;
        };
        (one(p), ...);
      },
      ins);
  return internal::LaunchWalk(ins, walks, vector_ok, out, n, f, stream, name);
}

// The CUDA part of every elementwise kernel (elementwise_on.h).
template <>
struct ElementwiseOn<DeviceType::kCuda> {
  template <typename OutT, typename F, typename... InTs>
  static absl::Status Run(const KernelContext& ctx, const ElementwiseLayout& layout, OutT* out, const F& f,
                          const InTs*... ins) {
    return LaunchElementwise(MakeInputs(ins...), layout, out, ctx.output(0).numel(), f, ctx.stream(),
                             ctx.schema().name());
  }
};

}  // namespace elementwise
}  // namespace kps
