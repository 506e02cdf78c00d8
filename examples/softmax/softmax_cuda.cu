// The CUDA kernel of example_softmax, built from the KPS primitives: a row is read once
// into registers, its max and its sum of exp(x - max) meet in block reductions, and the
// row is written back; rows too long for the registers take two passes.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "primitives/compute.cuh"
#include "primitives/datamover.cuh"
#include "primitives/reduce.cuh"
#include "registry/kernel.h"
#include "registry/status.h"
#include "softmax.h"

namespace example {
namespace {

// Elements of T in one 16-byte vector. A tile is blockDim.x vectors, one per thread, so a
// warp's load of a tile is 512 contiguous bytes.
template <typename T>
constexpr int kVec = 16 / static_cast<int>(sizeof(T));

// Tiles a thread holds at most: 8 16-byte vectors, 32 registers, so that a lane has 8
// loads in flight and short rows need few lanes: a warp per row of 1024 floats or 2048
// bfloat16, whose reductions are then shuffles alone. float32 holds its 32 values as float
// (SoftmaxRowInRegisters); bfloat16 holds its 64 raw, two to a register, and converts as it
// computes (SoftmaxRowInRegistersRaw): as float it would fit only 32, a warp holding half
// the bytes of a float32 warp, too few in flight to keep up with memory. Blocks of at most
// kMaxRowThreads threads, two of them resident per SM (64 registers a thread), so that one
// block's loads overlap another's reductions.
constexpr int kMaxTiles = 8;
constexpr int kMaxRowThreads = 512;
constexpr int kBlockThreads = 256;  // threads per block when a row needs fewer
// The two-pass kernel for longer rows: 1024 threads of 16 values.
constexpr int kLongThreads = 1024;
constexpr int kLongValues = 16;

// Loads kTiles tiles of the row segment at `src` (its first `num` elements valid) into
// `v` as float. Tile k is elements [k * tile, (k + 1) * tile), tile = blockDim.x * kVec,
// and this thread holds elements [threadIdx.x * kVec, + kVec) of each. Elements past
// `num` read as -inf, which neither the max nor the sum of exp(x - max) sees. With
// `vectorized` (the segment and every tile start 16-byte aligned), a thread whose vector
// is whole takes one 16-byte load.
template <typename T, int kTiles>
__device__ __forceinline__ void LoadTiles(float* v, const T* src, int num, bool vectorized) {
  constexpr int kV = kVec<T>;
  const int tile = static_cast<int>(KPS_BLOCK_NUM_X) * kV;
  const int mine = static_cast<int>(KPS_THREAD_ID_X) * kV;
  const kps::IdentityFunctor<T, float> to_float;
#pragma unroll
  for (int k = 0; k < kTiles; ++k) {
    const int left = num - k * tile;  // valid elements from this tile's start on
    T raw[kV];
    if (vectorized && mine + kV <= left) {
      kps::ReadData<T, kV, 1, false>(raw, src + k * tile, left);
    } else {
      kps::Init<T, kV>(raw, static_cast<T>(kps::MaxFunctor<float>().initial()));
      if (left > mine) kps::ReadData<T, kV, 1, true>(raw, src + k * tile, left);
    }
    kps::ElementwiseUnary<T, float, kV, 1>(v + k * kV, raw, to_float);
  }
}

// Stores f(v) to the first `num` elements of the segment at `dst`, in LoadTiles's layout.
template <typename T, int kTiles, typename F>
__device__ __forceinline__ void StoreTiles(T* dst, const float* v, int num, bool vectorized, F f) {
  constexpr int kV = kVec<T>;
  const int tile = static_cast<int>(KPS_BLOCK_NUM_X) * kV;
  const int mine = static_cast<int>(KPS_THREAD_ID_X) * kV;
#pragma unroll
  for (int k = 0; k < kTiles; ++k) {
    const int left = num - k * tile;
    if (left <= mine) continue;
    T res[kV];
    kps::ElementwiseUnary<float, T, kV, 1>(res, v + k * kV, f);
    if (vectorized && mine + kV <= left) {
      kps::WriteData<T, kV, 1, false>(dst + k * tile, res, left);
    } else {
      kps::WriteData<T, kV, 1, true>(dst + k * tile, res, left);
    }
  }
}

// The reduction of this thread's kN values and those of the other threads of its block
// row (threadIdx.x = 0 .. blockDim.x - 1), received by every thread of the row.
// Block-wide: every thread of the block calls it.
template <int kN, typename Op>
__device__ __forceinline__ float RowReduce(const float* v, Op op) {
  float acc[1] = {op.initial()};
  kps::Reduce<float, kN, 1, Op, kps::details::kLocalMode>(acc, v, op, true);
  kps::Reduce<float, 1, 1, Op, kps::details::kGlobalMode>(acc, acc, op, true);
  return acc[0];
}

// Rows of cols <= blockDim.x * kTiles * kVec elements: blockDim.y rows per block, each
// row read once into the registers of its blockDim.x threads; the block walks the rows
// blockDim.y at a time from row blockIdx.x * blockDim.y, striding by the grid.
template <typename T, int kTiles>
__global__ void __launch_bounds__(kMaxRowThreads, 2)
    SoftmaxRowInRegisters(const T* x, T* out, int64_t rows, int cols, bool vectorized) {
  constexpr int kN = kTiles * kVec<T>;
  const kps::MaxFunctor<float> max_op;
  const kps::AddFunctor<float> add_op;
  const int64_t step = static_cast<int64_t>(KPS_GRID_NUM_X) * KPS_BLOCK_NUM_Y;
  for (int64_t first = static_cast<int64_t>(KPS_BLOCK_ID_X) * KPS_BLOCK_NUM_Y; first < rows; first += step) {
    const int64_t r = first + KPS_THREAD_ID_Y;
    const bool live = r < rows;  // the block's last group may run past the end
    float v[kN];
    kps::Init<float, kN>(v, max_op.initial());
    if (live) LoadTiles<T, kTiles>(v, x + r * cols, cols, vectorized);
    const float m = RowReduce<kN>(v, max_op);
    kps::ElementwiseUnary<float, float, kN, 1>(v, v, ExpShiftedFunctor{m});
    const float s = RowReduce<kN>(v, add_op);
    if (live) StoreTiles<T, kTiles>(out + r * cols, v, cols, vectorized, NormalizeFunctor<T>{1.0f / s});
  }
}

// A pair of raw 16-bit values (two elements of a row, the first in the low half) in one
// 32-bit register. Held as an integer so that the compiler keeps each pair in one register:
// held as 16-bit T values, each took a register of its own and the 8-tile kernel spilled.
using RawPair = uint32_t;

template <typename T>
__device__ __forceinline__ kps::Packed2Type<T> AsPacked(RawPair u) {
  kps::Packed2Type<T> p;
  memcpy(&p, &u, sizeof(u));
  return p;
}

// LoadTiles for 16-bit T, kept raw: the kTiles tiles of the segment at `src` (its first
// `num` elements valid) in `raw`, kVec / 2 pairs a tile, elements past `num` as -inf.
// Each byte is read once, so a whole vector loads through the streaming path
// (kps::LoadPolicy::kStreaming).
template <typename T, int kTiles>
__device__ __forceinline__ void LoadRawTiles(RawPair* raw, const T* src, int num, bool vectorized) {
  constexpr int kV = kVec<T>;
  constexpr int kP = kV / 2;  // pairs a tile
  const int tile = static_cast<int>(KPS_BLOCK_NUM_X) * kV;
  const int mine = static_cast<int>(KPS_THREAD_ID_X) * kV;
#pragma unroll
  for (int k = 0; k < kTiles; ++k) {
    const int left = num - k * tile;
    if (vectorized && mine + kV <= left) {
      // This thread's kP pairs are pairs [threadIdx.x * kP, + kP) of the tile.
      kps::ReadData<RawPair, kP, 1, false, kps::LoadPolicy::kStreaming>(
          raw + k * kP, reinterpret_cast<const RawPair*>(src + k * tile), left / 2);
    } else {
      T one[kV];
      kps::Init<T, kV>(one, kps::MaxFunctor<T>().initial());
      if (left > mine) kps::ReadData<T, kV, 1, true>(one, src + k * tile, left);
#pragma unroll
      for (int i = 0; i < kP; ++i) {
        const kps::Packed2Type<T> p(one[2 * i], one[2 * i + 1]);
        memcpy(&raw[k * kP + i], &p, sizeof(RawPair));
      }
    }
  }
}

// The kVec / 2 pairs of one tile of `raw` in float: kVec values, in element order.
template <typename T>
__device__ __forceinline__ void RawTileToFloat(float* f, const RawPair* raw) {
  const kps::IdentityFunctor<T, float> to_float;
#pragma unroll
  for (int i = 0; i < kVec<T> / 2; ++i) {
    const kps::Packed2Type<T> p = AsPacked<T>(raw[i]);
    f[2 * i] = to_float(p.x);
    f[2 * i + 1] = to_float(p.y);
  }
}

// The max of two lanes of 16-bit floats at once: MaxFunctor's packed form (max.NaN, which
// picks one of its inputs, so the max of the raw values is the max of their floats).
template <typename T>
struct PairMaxFunctor {
  KPS_FUNCTOR_HD RawPair initial() const {
    const kps::Packed2Type<T> p(kps::MaxFunctor<T>().initial(), kps::MaxFunctor<T>().initial());
    RawPair u;
    memcpy(&u, &p, sizeof(u));
    return u;
  }
  KPS_FUNCTOR_HD RawPair operator()(RawPair a, RawPair b) const {
    const kps::Packed2Type<T> p = kps::MaxFunctor<T>().Apply2(AsPacked<T>(a), AsPacked<T>(b));
    RawPair u;
    memcpy(&u, &p, sizeof(u));
    return u;
  }
};

// SoftmaxRowInRegisters for 16-bit T, the row held raw (64 values a thread in 32
// registers, in LoadTiles's layout) and converted to float as each pass needs it: the max
// in pairs of raw values, the sum of exp(x - max) a tile at a time without keeping it, and
// the output recomputing exp(x - max) / sum directly, rounded once. Summed in the order
// of SoftmaxRowInRegisters, with the hardware's approximate exponential on prescaled
// arguments (Exp2ScaledFunctor: one FMA and one MUFU.EX2 an element a pass, the division
// by the sum folded into the exponent). A padded element (-inf) adds 0.
template <typename T, int kTiles>
__global__ void __launch_bounds__(kMaxRowThreads, 2)
    SoftmaxRowInRegistersRaw(const T* x, T* out, int64_t rows, int cols, bool vectorized) {
  constexpr int kV = kVec<T>;
  constexpr int kP = kV / 2;  // pairs a tile
  const kps::MaxFunctor<float> max_op;
  const kps::AddFunctor<float> add_op;
  const PairMaxFunctor<T> pair_max;
  const int tile = static_cast<int>(KPS_BLOCK_NUM_X) * kV;
  const int mine = static_cast<int>(KPS_THREAD_ID_X) * kV;
  const int64_t step = static_cast<int64_t>(KPS_GRID_NUM_X) * KPS_BLOCK_NUM_Y;
  for (int64_t first = static_cast<int64_t>(KPS_BLOCK_ID_X) * KPS_BLOCK_NUM_Y; first < rows; first += step) {
    const int64_t r = first + KPS_THREAD_ID_Y;
    const bool live = r < rows;  // the block's last group may run past the end
    RawPair raw[kTiles * kP];
    kps::Init<RawPair, kTiles * kP>(raw, pair_max.initial());
    if (live) LoadRawTiles<T, kTiles>(raw, x + r * cols, cols, vectorized);

    // The max: of the pairs, lane by lane; of the two lanes, in float; of the row.
    RawPair pair_acc[1] = {pair_max.initial()};
    kps::Reduce<RawPair, kTiles * kP, 1, PairMaxFunctor<T>, kps::details::kLocalMode>(pair_acc, raw, pair_max, true);
    const kps::Packed2Type<T> lanes = AsPacked<T>(pair_acc[0]);
    const kps::IdentityFunctor<T, float> to_float;
    float m[1] = {max_op(to_float(lanes.x), to_float(lanes.y))};
    kps::Reduce<float, 1, 1, kps::MaxFunctor<float>, kps::details::kGlobalMode>(m, m, max_op, true);
    const float shift = m[0] * kLog2e;
    const Exp2ScaledFunctor<float> exp_shifted{shift};  // exp(x - max)

    // The sum of exp(x - max), a tile at a time.
    float s[1] = {add_op.initial()};
#pragma unroll
    for (int k = 0; k < kTiles; ++k) {
      float e[kV];
      RawTileToFloat<T>(e, raw + k * kP);
      kps::ElementwiseUnary<float, float, kV, 1>(e, e, exp_shifted);
      kps::Reduce<float, kV, 1, kps::AddFunctor<float>, kps::details::kLocalMode>(s, e, add_op, true);
    }
    kps::Reduce<float, 1, 1, kps::AddFunctor<float>, kps::details::kGlobalMode>(s, s, add_op, true);

    if (!live) continue;
    // The write recomputes the exponentials from the raw pairs. Without this barrier (no
    // instruction) the compiler would reuse the sum's unpacking of each pair into its two
    // 16-bit halves, keeping 64 halves in 64 registers instead of 32 pairs in 32, and spill.
#pragma unroll
    for (int i = 0; i < kTiles * kP; ++i) asm volatile("" : "+r"(raw[i]));
    const Exp2ScaledFunctor<T> softmax{shift + log2f(s[0])};  // exp(x - max) / sum
    T* dst = out + r * cols;
#pragma unroll
    for (int k = 0; k < kTiles; ++k) {
      const int left = cols - k * tile;
      if (left <= mine) continue;
      float e[kV];
      RawTileToFloat<T>(e, raw + k * kP);
      T res[kV];
      kps::ElementwiseUnary<float, T, kV, 1>(res, e, softmax);
      if (vectorized && mine + kV <= left) {
        kps::WriteData<T, kV, 1, false>(dst + k * tile, res, left);
      } else {
        kps::WriteData<T, kV, 1, true>(dst + k * tile, res, left);
      }
    }
  }
}

// Rows longer than the registers hold: one block of 1-D threads per row, in chunks of
// blockDim.x * kLongValues elements. The first pass keeps a running max m and the sum s of
// exp(x - m), rescaling s when m grows (online softmax); the second reads the row again
// and writes exp(x - m) / s. Three row transfers instead of two.
template <typename T>
__global__ void __launch_bounds__(kLongThreads)
    SoftmaxLongRowTwoPass(const T* x, T* out, int64_t rows, int64_t cols, bool vectorized) {
  constexpr int kN = kLongValues;
  constexpr int kTiles = kLongValues / kVec<T>;
  const kps::MaxFunctor<float> max_op;
  const kps::AddFunctor<float> add_op;
  const int64_t chunk = static_cast<int64_t>(KPS_BLOCK_NUM_X) * kN;
  for (int64_t r = KPS_BLOCK_ID_X; r < rows; r += KPS_GRID_NUM_X) {
    const T* in = x + r * cols;
    float m = max_op.initial(), s = add_op.initial();
    for (int64_t start = 0; start < cols; start += chunk) {
      const int num = static_cast<int>(cols - start < chunk ? cols - start : chunk);
      float v[kN];
      LoadTiles<T, kTiles>(v, in + start, num, vectorized);
      const float new_m = max_op(m, RowReduce<kN>(v, max_op));
      // Only -inf so far: nothing to add, and exp(-inf - -inf) would be NaN. new_m is the
      // same in every thread, so the block skips the reductions below together.
      if (new_m == max_op.initial()) continue;
      kps::ElementwiseUnary<float, float, kN, 1>(v, v, ExpShiftedFunctor{new_m});
      const float chunk_sum = RowReduce<kN>(v, add_op);
      s = (m == new_m ? s : s * ExpShiftedFunctor{new_m}(m)) + chunk_sum;
      m = new_m;
    }
    const ExpShiftedFunctor exp_shifted{m};
    const NormalizeFunctor<T> normalize{1.0f / s};
    for (int64_t start = 0; start < cols; start += chunk) {
      const int num = static_cast<int>(cols - start < chunk ? cols - start : chunk);
      float v[kN];
      LoadTiles<T, kTiles>(v, in + start, num, vectorized);
      kps::ElementwiseUnary<float, float, kN, 1>(v, v, exp_shifted);
      StoreTiles<T, kTiles>(out + r * cols + start, v, num, vectorized, normalize);
    }
  }
}

// How a launch covers rows of `cols` elements.
struct RowPlan {
  int threads_per_row;  // blockDim.x
  int rows_per_block;   // blockDim.y
  int tiles;            // tiles per thread (1, 2, 4 or 8); 0: two passes (SoftmaxLongRowTwoPass)
};

int Pow2Ceil(int64_t n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// The block shape for rows of `cols` elements, `vec` to a 16-byte vector, with at most
// max_tiles tiles per thread: as few lanes per row as hold it in max_tiles tiles (a power
// of two, min_lanes at least), and kBlockThreads threads per block when rows need fewer.
// Rows of at most 32 vectors take one vector per lane and share warps. float32 keeps a
// warp a row at least (min_lanes 32); bfloat16 (min_lanes 1) gives rows of 257 to 1024
// elements part of a warp, so that each lane still holds 8 tiles: a warp then has as many
// bytes in flight as a float32 warp (two rows of 1024 in a warp, 16 lanes each).
RowPlan PlanRows(int64_t cols, int vec, int max_tiles, int min_lanes) {
  const int64_t vectors = (cols + vec - 1) / vec;  // one per thread and tile
  if (vectors > int64_t{kMaxRowThreads} * max_tiles) return {kLongThreads, 1, 0};
  if (vectors <= 32) {
    const int bx = Pow2Ceil(vectors);
    return {bx, kBlockThreads / bx, 1};
  }
  const int bx = std::max(min_lanes, Pow2Ceil((vectors + max_tiles - 1) / max_tiles));
  const int tiles = Pow2Ceil((vectors + bx - 1) / bx);
  return {bx, std::max(1, kBlockThreads / bx), tiles};
}

bool IsAligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T>
class SoftmaxCudaKernel final : public kps::OpKernel {
 public:
  absl::Status Compute(kps::KernelContext* ctx) const override {
    const kps::Tensor& x = ctx->input(0);
    const int64_t n = x.numel();
    if (n == 0) return absl::OkStatus();  // no grid of 0 blocks
    const int64_t cols = x.shape()[x.rank() - 1];
    const int64_t rows = n / cols;
    const T* in = x.data<T>();
    T* out = ctx->output(0).data<T>();
    // Vector loads need every row start aligned: a view at an odd offset, or rows of a
    // length that is no multiple of the vector, take the element-wise path.
    const bool vectorized = cols % kVec<T> == 0 && IsAligned16(in) && IsAligned16(out);
    constexpr bool kRaw = !std::is_same_v<T, float>;  // bfloat16: SoftmaxRowInRegistersRaw
    const RowPlan plan = PlanRows(cols, kVec<T>, kMaxTiles, kRaw ? 1 : 32);
    cudaStream_t stream = ctx->cuda_stream();
    constexpr int64_t kMaxGrid = 0x7fffffff;  // gridDim.x; the kernels stride past it
    if (plan.tiles == 0) {
      const auto grid = static_cast<unsigned>(std::min(rows, kMaxGrid));
      SoftmaxLongRowTwoPass<T><<<grid, kLongThreads, 0, stream>>>(in, out, rows, cols, vectorized);
      KPS_RETURN_IF_LAUNCH_ERROR("SoftmaxLongRowTwoPass");
      return absl::OkStatus();
    }
    const dim3 block(plan.threads_per_row, plan.rows_per_block);
    const auto grid = static_cast<unsigned>(std::min((rows + plan.rows_per_block - 1) / plan.rows_per_block, kMaxGrid));
    const int c = static_cast<int>(cols);
    if constexpr (kRaw) {
      // Plans with min_lanes 1 take 1 tile (rows of at most 32 vectors) or 8; the 8-tile
      // kernel would hold any plan of fewer tiles as well (its tiles past the row are empty).
      if (plan.tiles == 1) {
        SoftmaxRowInRegistersRaw<T, 1><<<grid, block, 0, stream>>>(in, out, rows, c, vectorized);
      } else {
        SoftmaxRowInRegistersRaw<T, 8><<<grid, block, 0, stream>>>(in, out, rows, c, vectorized);
      }
      KPS_RETURN_IF_LAUNCH_ERROR("SoftmaxRowInRegistersRaw");
      return absl::OkStatus();
    } else {
      if (plan.tiles == 1) {
        SoftmaxRowInRegisters<T, 1><<<grid, block, 0, stream>>>(in, out, rows, c, vectorized);
      } else if (plan.tiles == 2) {
        SoftmaxRowInRegisters<T, 2><<<grid, block, 0, stream>>>(in, out, rows, c, vectorized);
      } else if (plan.tiles == 4) {
        SoftmaxRowInRegisters<T, 4><<<grid, block, 0, stream>>>(in, out, rows, c, vectorized);
      } else {
        SoftmaxRowInRegisters<T, 8><<<grid, block, 0, stream>>>(in, out, rows, c, vectorized);
      }
      KPS_RETURN_IF_LAUNCH_ERROR("SoftmaxRowInRegisters");
      return absl::OkStatus();
    }
  }
};

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("example_softmax", kps::DeviceType::kCuda, SoftmaxCudaKernel, float, kps::bfloat16);

}  // namespace example
