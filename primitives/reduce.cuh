// Block and warp reductions: combine values with a combiner (functors/combiner.h: an
// identity `initial()` and an associative `operator()`), within a thread's registers or
// across the threads of a block.
//
// - Reduce (kLocalMode, kGlobalMode), Paddle's API: any block shape, every thread gets
//   its row's (column's) result. Built on the details:: warp and block folds below.
// - The fast forms the reduce ops are made of, each for one layout of lanes:
//     ShortRowReduce      rows of blockDim.x <= 32 lanes (a power of two): shuffles only,
//                         every lane gets its row's result;
//     RowOfWarpsReduce    rows of whole warps (blockDim.x a multiple of 32): shuffles and
//                         one barrier, the result in the row's first lane only;
//     FoldRowsIntoRowZero the values of each column (threadIdx.y) of the block, kVec per
//                         thread, into row 0, through caller-given shared memory: one or
//                         two barriers for any blockDim.y.
//   Where a kernel's layout fits one of them it pays less than Reduce's general path:
//   no broadcast of the result, fewer barriers.
//
// The simplest combiner is a binary reduce functor:
//
//   template <typename T>
//   struct SumFunctor {
//     __device__ T initial() const { return T(0); }
//     __device__ T operator()(T a, T b) const { return a + b; }
//   };
//
// Every reduction here combines values in a fixed order that keeps their index order
// (a tree over contiguous ranges, never a swap of operands), so results are bitwise
// identical run to run and a functor need not be commutative. No atomics are used.
//
//   // Row sums of a [rows, cols] matrix: row r = blockIdx.x * blockDim.y + threadIdx.y
//   // is summed by the blockDim.x threads of one block row.
//   const SumFunctor<float> op{};
//   float acc[1] = {op.initial()};
//   for (int c = threadIdx.x; c < cols; c += blockDim.x) {
//     float v[1] = {row[c]};
//     kps::Reduce<float, 1, 1, SumFunctor<float>, kps::details::kLocalMode>(acc, v, op, true);
//   }
//   kps::Reduce<float, 1, 1, SumFunctor<float>, kps::details::kGlobalMode>(acc, acc, op, true);
//   // every thread of the row now holds the row's sum in acc[0]
#pragma once

#include "primitives/details/macros.cuh"
#include "primitives/details/warp_shuffle.cuh"

namespace kps {
namespace details {

// kLocalMode: a thread folds its own registers. kGlobalMode: the block combines, value by
// value, the registers of all its threads (along threadIdx.x or threadIdx.y).
// Unscoped, so both details::kLocalMode and details::ReduceMode::kLocalMode work.
enum ReduceMode { kLocalMode, kGlobalMode };

// Suffix reduction within contiguous lane segments of one warp: each lane returns, in lane
// order, reducer(v[lane], v[lane + 1], ..., v[last_lane]) where v[i] is lane i's `val`;
// so the first lane of a segment holds the whole segment's result.
//
// Preconditions: called convergently by every lane in `member_mask` (the lanes that exist,
// see WarpMemberMask); `last_lane` (lane <= last_lane <= 31) is the last lane of the
// calling lane's segment, the same for all lanes of a segment, and all lanes of a segment
// are in member_mask. Five shuffles, no shared memory, no barrier.
template <typename T, class ReduceOp>
KPS_DEVICE T WarpSegmentReduce(T val, ReduceOp reducer, unsigned member_mask, int lane, int last_lane) {
  // Invariant: after the step with offset o, lane l holds lanes [l, min(l + 2o - 1, last)].
#pragma unroll
  for (int offset = 1; offset < kWarpSize; offset <<= 1) {
    const T other = ShuffleDown(member_mask, val, offset);
    if (lane + offset <= last_lane) val = reducer(val, other);
  }
  return val;
}

// Reduces `val` over the 32 lanes of a full warp, in lane order; every lane returns the
// result. Precondition: all 32 lanes call it convergently (blockDim a multiple of 32, or
// a warp known to be full). Six shuffles, no shared memory.
//
//   float warp_sum = kps::details::WarpReduce(x, SumFunctor<float>());
template <typename T, class ReduceOp>
KPS_DEVICE T WarpReduce(T val, ReduceOp reducer) {
  const int lane = static_cast<int>(KPS_THREAD_ID_X +
                                    KPS_BLOCK_NUM_X * (KPS_THREAD_ID_Y + KPS_BLOCK_NUM_Y * KPS_THREAD_ID_Z)) &
                   (kWarpSize - 1);
  val = WarpSegmentReduce(val, reducer, kFullWarpMask, lane, kWarpSize - 1);
  return ShuffleIdx(kFullWarpMask, val, 0);
}

struct BlockXReduceTag {};
struct BlockYReduceTag {};

// Reduces `val` along threadIdx.x: every thread returns reducer over the values of the
// threads (0..blockDim.x-1, threadIdx.y) of its row, in threadIdx.x order.
//
// Any block shape with blockDim.z == 1 and up to 1024 threads; blockDim.x need not be a
// multiple of 32 or a power of two (rows may straddle warps and share them).
// Precondition: every thread of the block calls it (it may contain __syncthreads()).
// Cost: a segmented warp reduce (5 shuffles) plus a broadcast shuffle when 32 is a
// multiple of blockDim.x; otherwise also two barriers and 2 * 32 values of shared memory.
// Back-to-back calls need no barrier in between.
template <typename T, class ReduceOp>
KPS_DEVICE T BlockXReduce(T val, ReduceOp reducer) {
  const int bx = static_cast<int>(KPS_BLOCK_NUM_X);
  if (bx == 1) return val;
  const int threads = bx * static_cast<int>(KPS_BLOCK_NUM_Y);
  const int tid = static_cast<int>(KPS_THREAD_ID_Y) * bx + static_cast<int>(KPS_THREAD_ID_X);
  const int lane = tid & (kWarpSize - 1);
  const int warp = tid / kWarpSize;
  const unsigned mask = WarpMemberMask(threads, warp);
  const int row_first = tid - static_cast<int>(KPS_THREAD_ID_X);
  const int row_last = row_first + bx - 1;
  const int warp_first = warp * kWarpSize;
  // The part of this row inside this warp is lanes [seg_first, seg_last].
  const int seg_first = row_first > warp_first ? row_first - warp_first : 0;
  const int seg_last = row_last - warp_first < kWarpSize - 1 ? row_last - warp_first : kWarpSize - 1;
  val = WarpSegmentReduce(val, reducer, mask, lane, seg_last);
  // Rows inside one warp: their first lane holds the result.
  const T in_warp = ShuffleIdx(mask, val, seg_first);
  // Some row straddles a warp boundary unless rows tile warps exactly (32 % bx == 0) or
  // the block is one warp. The test is the same in every thread, so barriers below are safe.
  if (threads <= kWarpSize || kWarpSize % bx == 0) return in_warp;

  T* scratch = SharedScratch<T, 2 * kWarpSize, BlockXReduceTag>();
  // lane0_part[w]: lane 0 of warp w holds the part of its row that lies in warp w.
  T* lane0_part = scratch;
  // spanning[w]: the result of the one row (at most) that starts in warp w and ends in a
  // later warp.
  T* spanning = scratch + kWarpSize;
  if (lane == 0) lane0_part[warp] = val;
  __syncthreads();
  const int first_warp = row_first / kWarpSize;
  const int last_warp = row_last / kWarpSize;
  if (first_warp != last_warp && tid == row_first) {
    T acc = val;  // lanes [row_first, end of first_warp]
    for (int w = first_warp + 1; w <= last_warp; ++w) acc = reducer(acc, lane0_part[w]);
    spanning[first_warp] = acc;
  }
  __syncthreads();
  // A later call writes lane0_part only after its own first barrier, which every thread
  // reaches after this read, and spanning only after its second: no trailing barrier.
  return first_warp != last_warp ? spanning[first_warp] : in_warp;
}

// Reduces `val` along threadIdx.y: every thread returns reducer over the values of the
// threads (threadIdx.x, 0..blockDim.y-1) of its column, in threadIdx.y order.
//
// Any block shape with blockDim.z == 1 and up to 1024 threads. Precondition: every
// thread of the block calls it. Cost: ceil(log2(blockDim.y)) + 2 barriers and 1024
// values of shared memory (a tree over rows, row r combining row r + stride).
template <typename T, class ReduceOp>
KPS_DEVICE T BlockYReduce(T val, ReduceOp reducer) {
  const int bx = static_cast<int>(KPS_BLOCK_NUM_X);
  const int by = static_cast<int>(KPS_BLOCK_NUM_Y);
  if (by == 1) return val;
  const int x = static_cast<int>(KPS_THREAD_ID_X);
  const int y = static_cast<int>(KPS_THREAD_ID_Y);
  T* shared = SharedScratch<T, 1024, BlockYReduceTag>();
  __syncthreads();  // every thread has read the previous call's result from shared
  shared[y * bx + x] = val;
  for (int stride = 1; stride < by; stride <<= 1) {
    __syncthreads();
    // Rows that are multiples of 2 * stride absorb the row stride below them: row 0 ends
    // with rows 0..by-1 combined in order.
    if ((y & (2 * stride - 1)) == 0 && y + stride < by) {
      val = reducer(val, shared[(y + stride) * bx + x]);
      shared[y * bx + x] = val;
    }
  }
  __syncthreads();
  return shared[x];
}

}  // namespace details

// Reduces register values with `reducer` (an associative functor; see the file comment).
//
// Mode == details::kLocalMode: folds this thread's registers, row by row. `in` holds
// NY rows of NX values (in[i * NX + j]); for each i < NY,
//   out[i] = reducer(...reducer(reducer(out[i], in[i*NX]), in[i*NX + 1])..., in[i*NX + NX-1]),
// so `out` is an accumulator of NY values: initialize it (e.g. with reducer.initial())
// before the first call, then call once per tile. No other thread is involved;
// reduce_last_dim is ignored. `in` and `out` must not overlap.
//
// Mode == details::kGlobalMode: combines across the block, for each of the NX * NY
// values separately: out[i] = reduction of in[i] over
//   - the threads of this thread's row (threadIdx.x = 0..blockDim.x-1) when
//     reduce_last_dim is true (details::BlockXReduce), or
//   - the threads of this thread's column (threadIdx.y = 0..blockDim.y-1) otherwise
//     (details::BlockYReduce; with blockDim.y == 1 that is out[i] = in[i]).
// Every thread of the block receives the result of its row (column): no broadcast
// needed afterwards. `in` may equal `out`. Preconditions: every thread of the block calls
// it with the same reduce_last_dim; blockDim.z == 1; any blockDim.x, blockDim.y with at
// most 1024 threads in all. The order of combination is fixed (index order), so the
// result is deterministic.
template <typename T, int NX, int NY, class ReduceFunctor, details::ReduceMode Mode>
KPS_DEVICE void Reduce(T* out, const T* in, ReduceFunctor reducer, bool reduce_last_dim) {
  static_assert(NX > 0 && NY > 0, "Reduce: NX and NY must be positive");
  if constexpr (Mode == details::kLocalMode) {
#pragma unroll
    for (int i = 0; i < NY; ++i) {
#pragma unroll
      for (int j = 0; j < NX; ++j) out[i] = reducer(out[i], in[i * NX + j]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < NX * NY; ++i) {
      const T v = in[i];
      out[i] = reduce_last_dim ? details::BlockXReduce<T, ReduceFunctor>(v, reducer)
                               : details::BlockYReduce<T, ReduceFunctor>(v, reducer);
    }
  }
}

// Combines `v` across the blockDim.x lanes of each row of the block, where blockDim.x is a
// power of two of at most 32 (so rows tile warps): an xor butterfly of log2(blockDim.x)
// shuffles, no shared memory, no barrier. Every lane returns its row's result, the same
// bits in every lane (each pair of values meets with the lower lane's value first, so a
// non-commutative combiner sees index order within each pair).
//
//   // 8 lanes per row, 32 rows per block of 256: each row's sum in all 8 lanes.
//   float s = kps::ShortRowReduce(x, kps::AddFunctor<float>());
//
// Precondition: every lane of each warp calls it (full warps: blockDim.x * blockDim.y a
// multiple of 32).
template <typename T, class Combiner>
KPS_DEVICE T ShortRowReduce(T v, Combiner f) {
  const int lane = static_cast<int>(KPS_THREAD_ID_X);
  for (int offset = static_cast<int>(KPS_BLOCK_NUM_X) >> 1; offset > 0; offset >>= 1) {
    const T other = details::ShuffleXor(details::kFullWarpMask, v, offset);
    v = (lane & offset) ? f(other, v) : f(v, other);
  }
  return v;
}

struct RowOfWarpsTag {};

// Combines `v` across the blockDim.x lanes of each row of the block, where blockDim.x is a
// multiple of 32 (rows of whole warps): an xor butterfly in each warp (the lower lane's
// value first), then the row's first lane folds its row's warps in order. The result is
// in threadIdx.x == 0 only (other lanes return partial values). Uses 32 values of shared
// memory and, when a row has more than one warp, one barrier.
//
//   // A block of 4 rows of 128 lanes, each lane having folded its share of a long row:
//   acc = kps::RowOfWarpsReduce(acc, reducer);
//   if (threadIdx.x == 0) out[row] = kps::CombinerFinalize(reducer, acc);
//
// Preconditions: every thread of the block calls it; blockDim.x * blockDim.y <= 1024. A
// second call needs a barrier between the two (the first's readers of its shared values
// may still be reading): the usual single call at a kernel's end pays no barrier at its
// start.
template <typename T, class Combiner>
KPS_DEVICE T RowOfWarpsReduce(T v, Combiner f) {
  const int lane = static_cast<int>(KPS_THREAD_ID_X) & (details::kWarpSize - 1);
#pragma unroll
  for (int offset = details::kWarpSize / 2; offset > 0; offset >>= 1) {
    const T other = details::ShuffleXor(details::kFullWarpMask, v, offset);
    v = (lane & offset) ? f(other, v) : f(v, other);
  }
  const int warps = static_cast<int>(KPS_BLOCK_NUM_X) >> 5;
  if (warps == 1) return v;
  T* part = details::SharedScratch<T, details::kWarpSize, RowOfWarpsTag>();
  const int warp = static_cast<int>(KPS_THREAD_ID_Y * KPS_BLOCK_NUM_X + KPS_THREAD_ID_X) >> 5;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (KPS_THREAD_ID_X == 0) {
    for (int w = 1; w < warps; ++w) v = f(v, part[warp + w]);
  }
  return v;
}

// The rows that FoldRowsIntoRowZero folds in its first step.
inline constexpr int kFoldFirstRows = 8;

// Combines each thread's kVec values along threadIdx.y into the threads of row 0 (their
// `part` holds the results; other rows keep partial values), in a fixed order: rows
// y < 8 fold rows y + 8, y + 16, ... in turn, then row 0 folds rows 1..7. `states` is
// shared memory for blockDim.x * blockDim.y * kVec values. One barrier for up to 8 rows,
// two for more, and blockDim.y / 8 + 6 dependent reads: against a tree per value
// (Reduce along y: ceil(log2(blockDim.y)) + 2 barriers per value, 16 for a float4 of sums)
// it is what makes a column sum's last step cheap, where all blocks end at once.
//
//   // Column sums: 32 columns x 8 rows of lanes, 4 outputs (one float4) per lane.
//   __shared__ float states[256 * 4];
//   kps::FoldRowsIntoRowZero(part, kps::AddFunctor<float>(), states);
//   if (threadIdx.y == 0) { /* part[0..3] are this lane's 4 column sums */ }
//
// Preconditions: every thread of the block calls it; blockDim.z == 1; the caller orders
// any earlier use of `states` before the call (a barrier), and any later one after it.
template <typename T, int kVec, class Combiner>
KPS_DEVICE void FoldRowsIntoRowZero(T (&part)[kVec], Combiner f, T* states) {
  const int bx = static_cast<int>(KPS_BLOCK_NUM_X), by = static_cast<int>(KPS_BLOCK_NUM_Y);
  const int x = static_cast<int>(KPS_THREAD_ID_X), y = static_cast<int>(KPS_THREAD_ID_Y);
  auto at = [&](int row, int j) -> T& { return states[(row * bx + x) * kVec + j]; };
  if (by > kFoldFirstRows) {
    if (y >= kFoldFirstRows) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) at(y, j) = part[j];
    }
    __syncthreads();
    if (y < kFoldFirstRows) {
      for (int row = y + kFoldFirstRows; row < by; row += kFoldFirstRows) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) part[j] = f(part[j], at(row, j));
      }
    }
  }
  if (y > 0 && y < kFoldFirstRows) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) at(y, j) = part[j];
  }
  __syncthreads();
  if (y == 0) {
    for (int row = 1; row < min(by, kFoldFirstRows); ++row) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) part[j] = f(part[j], at(row, j));
    }
  }
}

}  // namespace kps
