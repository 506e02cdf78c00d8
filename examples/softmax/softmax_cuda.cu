// The CUDA kernel of example_softmax, built from the KPS primitives: a row is read once
// into registers, its max and its sum of exp(x - max) meet in block reductions, and the
// row is written back; rows too long for the registers take two passes.
#include <algorithm>
#include <cstdint>

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

// Values a thread keeps in registers, as float: 16, so that 1024 threads hold a row of
// 16384 and the kernel fits launch_bounds(1024)'s 64 registers per thread.
constexpr int kMaxValues = 16;
constexpr int kMaxThreads = 1024;
// Tiles a thread holds at most: 4 of float, 2 of bfloat16 (8 per 16-byte vector).
template <typename T>
constexpr int kMaxTiles = kMaxValues / kVec<T>;

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
__global__ void __launch_bounds__(kMaxThreads)
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

// Rows longer than the registers hold: one block of 1-D threads per row, in chunks of
// blockDim.x * kMaxValues elements. The first pass keeps a running max m and the sum s of
// exp(x - m), rescaling s when m grows (online softmax); the second reads the row again
// and writes exp(x - m) / s. Three row transfers instead of two.
template <typename T>
__global__ void __launch_bounds__(kMaxThreads)
    SoftmaxLongRowTwoPass(const T* x, T* out, int64_t rows, int64_t cols, bool vectorized) {
  constexpr int kN = kMaxValues;
  constexpr int kTiles = kMaxTiles<T>;
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
  int tiles;            // tiles per thread (1, 2 or 4); 0: two passes (SoftmaxLongRowTwoPass)
};

// The block shape for rows of `cols` elements, `vec` to a 16-byte vector, with at most
// max_tiles tiles per thread.
RowPlan PlanRows(int64_t cols, int vec, int max_tiles) {
  const int64_t vectors = (cols + vec - 1) / vec;  // one per thread and tile
  if (vectors > int64_t{kMaxThreads} * max_tiles) return {kMaxThreads, 1, 0};
  if (vectors <= 32) {
    // Short rows: a power-of-two group of lanes per row, so that no row straddles a warp
    // and the reductions are shuffles alone; 128 threads per block.
    int bx = 1;
    while (bx < vectors) bx *= 2;
    return {bx, 128 / bx, 1};
  }
  // As few threads as hold the row in max_tiles tiles (more loads in flight per thread),
  // but 4 warps at least when the row has that many vectors, so that a short row still
  // gets a block of useful size; whole warps.
  const auto round_up_32 = [](int64_t n) { return static_cast<int>((n + 31) / 32 * 32); };
  const int bx = std::max(round_up_32((vectors + max_tiles - 1) / max_tiles),
                          std::min(128, round_up_32(vectors)));
  const int tiles = static_cast<int>((vectors + bx - 1) / bx);
  return {bx, std::max(1, 128 / bx), tiles == 3 ? 4 : tiles};
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
    const RowPlan plan = PlanRows(cols, kVec<T>, kMaxTiles<T>);
    cudaStream_t stream = ctx->cuda_stream();
    constexpr int64_t kMaxGrid = 0x7fffffff;  // gridDim.x; the kernels stride past it
    if (plan.tiles == 0) {
      const auto grid = static_cast<unsigned>(std::min(rows, kMaxGrid));
      SoftmaxLongRowTwoPass<T><<<grid, kMaxThreads, 0, stream>>>(in, out, rows, cols, vectorized);
      KPS_RETURN_IF_LAUNCH_ERROR("SoftmaxLongRowTwoPass");
      return absl::OkStatus();
    }
    const dim3 block(plan.threads_per_row, plan.rows_per_block);
    const auto grid = static_cast<unsigned>(std::min((rows + plan.rows_per_block - 1) / plan.rows_per_block, kMaxGrid));
    const int c = static_cast<int>(cols);
    if (plan.tiles == 1) {
      SoftmaxRowInRegisters<T, 1><<<grid, block, 0, stream>>>(in, out, rows, c, vectorized);
    } else if (plan.tiles == 2) {
      SoftmaxRowInRegisters<T, 2><<<grid, block, 0, stream>>>(in, out, rows, c, vectorized);
    } else if constexpr (kMaxTiles<T> >= 4) {
      SoftmaxRowInRegisters<T, 4><<<grid, block, 0, stream>>>(in, out, rows, c, vectorized);
    }
    KPS_RETURN_IF_LAUNCH_ERROR("SoftmaxRowInRegisters");
    return absl::OkStatus();
  }
};

}  // namespace

KPS_REGISTER_KERNEL_FOR_TYPES("example_softmax", kps::DeviceType::kCuda, SoftmaxCudaKernel, float, kps::bfloat16);

}  // namespace example
