// The kernels of every reduction (the host code that picks one and sizes its launch is
// reduce_dispatch.cuh; its knobs, reduce_tuning.h).
//
// - ReduceRowKernel, when x's innermost dim is reduced (row sums, full reductions, the
//   H*W of NCHW): blockDim.x lanes cooperate along one output's reduced extent, 4 loads
//   per lane in flight at once (Tuning::row_loads), with 16-byte vector loads when rows
//   are contiguous and aligned; blockDim.y outputs per block of 512 threads. The lanes
//   (whole warps) meet through RowOfWarpsReduce.
// - Every kernel's loads along a vector or one stride skip L1 (LoadStreaming): x is
//   read once.
// - ReduceShortRowKernel, for contiguous rows of at most 32 vectors (a row of 32 floats
//   is 8 lanes): a warp segment per row, four rows per lane in flight, shuffles only.
// - ReduceColKernel, when the innermost dim is kept (column sums, reducing a middle dim):
//   each lane owns kVec neighbouring outputs and loads them as one vector per reduced
//   step; blockDim.y lanes split the reduced extent and meet in ColBlockReduce.
// - ReduceColTallKernel, the column kernel in blocks of 1024 threads that each take the
//   whole reduced extent, where a wave of about one such block per SM covers the outputs
//   (sum_first_f32_8Kx8K): no split, so no fold at the end.
// - ReduceEmptyKernel, when the reduced extent is empty: the identity everywhere.
// - When the outputs alone cannot fill the GPU, the row and column kernels split the
//   reduced extent across gridDim.y blocks (interleaved, so the grid sweeps x front to
//   back) that write partial states to the stream's scratch (registry/scratch.h) and take
//   a ticket; the block that takes a group's last ticket folds the group's partials in a
//   fixed order (TakeLastTicket and the fold after it). One launch: a second kernel for
//   the fold costs its launch gap and ramp (H100: 2-5 us of a 90 us column sum). No
//   float atomics (the only atomic is the integer ticket, which picks who folds, not the
//   order), and every launch shape is a function of the problem and the device only, so
//   results are bitwise reproducible.
// Offsets are 64-bit throughout (tensors past 2^31 elements); index walks through more
// than one dim use FastDivMod while their extent fits 32 bits.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "ops/reduce/reduce_plan.h"
#include "ops/reduce/reduce_tuning.h"
#include "ops/reduce/reducers.h"
#include "primitives/details/fast_divmod.cuh"
#include "primitives/datamover.cuh"
#include "primitives/details/vector_type.cuh"
#include "primitives/reduce.cuh"

namespace kps {
namespace reduce {

// DimWalk on the device: Offset(i) of the i-th element of a row-major walk.
struct DeviceWalk {
  int rank = 0;
  bool narrow = true;  // every index < 2^32: divide with FastDivMod
  ::kps::details::FastDivMod div[kMaxReduceRank];
  int64_t sizes[kMaxReduceRank];
  int64_t strides[kMaxReduceRank];

  DeviceWalk() = default;
  explicit DeviceWalk(const DimWalk& w) : rank(w.rank), narrow(w.numel() <= int64_t{0xffffffff}) {
    for (int d = 0; d < kMaxReduceRank; ++d) {
      sizes[d] = d < rank ? w.sizes[d] : 1;
      strides[d] = d < rank ? w.strides[d] : 0;
      // Offset divides by dims 1..rank-1 only; the others keep the default (divide by 1).
      // Building a FastDivMod takes a 64-bit division, on the eager call's host path.
      if (d > 0 && d < rank && narrow && sizes[d] > 1) {
        div[d] = ::kps::details::FastDivMod(static_cast<uint32_t>(sizes[d]));
      }
    }
  }

  // The loops are unrolled over kMaxReduceRank with a rank test, so every array index is
  // a constant and the walk stays in the kernel's parameter space (a run-time index makes
  // the compiler copy the arrays to local memory).
  __device__ __forceinline__ int64_t Offset(int64_t i) const {
    if (rank <= 1) return rank == 0 ? 0 : i * strides[0];
    int64_t off = 0;
    if (narrow) {
      uint32_t j = static_cast<uint32_t>(i);
#pragma unroll
      for (int d = kMaxReduceRank - 1; d > 0; --d) {
        if (d < rank) {
          const auto qr = div[d].Divmod(j);
          off += static_cast<int64_t>(qr.remainder) * strides[d];
          j = qr.quotient;
        }
      }
      return off + static_cast<int64_t>(j) * strides[0];
    }
#pragma unroll
    for (int d = kMaxReduceRank - 1; d > 0; --d) {
      if (d < rank) {
        off += (i % sizes[d]) * strides[d];
        i /= sizes[d];
      }
    }
    return off + i * strides[0];
  }
};

struct ReduceArgs {
  DeviceWalk out, red;
  int64_t num_outputs;  // O
  int64_t reduce_size;  // R
  int64_t out_blocks;   // blocks it takes to cover the outputs once (internal::OutBlocksGrid)
  // Rows of runs (the row kernel's vector loop only): when run_vecs > 0, an output's
  // reduced extent is R / (run_vecs * kVec) contiguous runs of run_vecs whole vectors,
  // run_stride elements apart (sum over dims 0 and 2 of [64, 256, 1024]); run_div
  // divides by run_vecs.
  int64_t run_vecs = 0;
  int64_t run_stride = 0;
  ::kps::details::FastDivMod run_div;
};

// The output block of this block: grids of more than kMaxGridX blocks continue along z
// (internal::OutBlocksGrid), whose last x row may run past args.out_blocks.
__device__ __forceinline__ int64_t OutBlock() { return static_cast<int64_t>(blockIdx.z) * gridDim.x + blockIdx.x; }

// Registers. Each block of the row, short-row and column kernels takes one output block
// (a grid past kMaxGridX blocks goes on along z) and does not loop: a grid-stride loop
// keeps its state live across the body, and ptxas gives the row kernel 56-64 registers,
// so 4 blocks of 256 per SM; without it, and with each vector folded on its own (one
// lane state, not kVec), sum and max take 32 (8 blocks).
// mean_hw, H100: no loop 2860 GB/s, grid-stride loop 2694.
// The row kernel still allows up to 64 registers (2 blocks of 512), for the wider states
// (argmax, Welford, int64). The column kernel asks for 4 resident blocks of 256 (up to 64
// registers), which its split fills (RunCols): capped at 32, ptxas keeps only two of its
// four loads in flight.
// sum_mid, H100: 64 registers 2958 GB/s, 32 registers 2914.
// The row kernel loads 4 vectors a lane at a time, in as many batches as the row needs,
// the last one padded with loads it does not use; lanes are sized so that rows of up to
// 2048 vectors take one batch (mean_hw: 392 vectors over 128 lanes).
inline constexpr int kRowMinBlocks = 2;  // of 512 threads
inline constexpr int kColMinBlocks = 4;  // of 256 threads

// Writes an output's state: the final value, or its partial when the extent is split
// across gridDim.y blocks.
template <typename Reducer>
__device__ __forceinline__ void Store(const Reducer& reducer, CombinerAcc<Reducer> acc, int64_t o,
                                      const ReduceArgs& args, CombinerOut<Reducer>* out,
                                      CombinerAcc<Reducer>* partial) {
  if (gridDim.y == 1) {
    out[o] = CombinerFinalize(reducer, acc);
  } else {
    partial[static_cast<int64_t>(blockIdx.y) * args.num_outputs + o] = acc;
  }
}

// The end of a split block: its partial states are stored; it publishes them and takes a
// ticket of its group (`count` blocks). True, block-uniformly, for the block that took the
// last one: every partial of the group is then visible to it. That block also sets the
// ticket back to 0 (every other block has taken its own), as the scratch requires.
// One thread fences, after the barrier that orders the block's stores before it (a fence
// is cumulative), as cooperative groups' grid sync does: the fold is the last thing a
// split kernel does, all its blocks ending at once, so the fence is on the critical path.
// sum_first_f32_8Kx8K, H100: a fence in every thread costs 0.2-0.4 us more.
__device__ __forceinline__ bool TakeLastTicket(unsigned* ticket, unsigned count) {
  __shared__ bool last;
  __syncthreads();  // the block's partial stores before thread 0's fence
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    __threadfence();  // release: the block's partials before its ticket
    const bool is_last = atomicAdd(ticket, 1u) == count - 1;
    if (is_last) {
      *ticket = 0;
      __threadfence();  // acquire: the group's partials before this block's loads
    }
    last = is_last;
  }
  __syncthreads();
  return last;
}

// A contiguous row of a vector kernel: `head` elements before its first kVec-aligned
// one, `n` whole aligned vectors, `tail` elements after them. Rows of any length and
// start (an odd row length puts every row at another offset) load whole aligned vectors
// and fold at most 2 (kVec - 1) elements one by one; x's address is a multiple of the
// element size.
template <typename In, int kVec>
struct RowSpan {
  int head, n, tail;
  __device__ __forceinline__ RowSpan(const In* row, int64_t len) {
    const auto at = static_cast<unsigned>(reinterpret_cast<uintptr_t>(row) / sizeof(In));
    head = static_cast<int>(min(static_cast<int64_t>((kVec - at % kVec) % kVec), len));
    n = static_cast<int>((len - head) / kVec);
    tail = static_cast<int>(len - head - static_cast<int64_t>(n) * kVec);
  }
  __device__ __forceinline__ int64_t TailStart() const { return head + static_cast<int64_t>(n) * kVec; }
};

// Lanes along the reduced extent, blockDim.x of them a multiple of 32; the gridDim.y
// blocks of a split interleave their lanes (lane blockIdx.y * bx + tx of gridDim.y * bx),
// so together they sweep x front to back. kVec > 1: rows are contiguous (red stride 1),
// each loaded as RowSpan says, at most 2^30 vectors.
// Each loaded vector is folded into a state of its own (CombinerMakeN: Accumulate in
// turn, or the reducer's MakeN), which then joins the lane's one state.
// kWhole: every row is whole aligned vectors in one run (no ends, no runs), which keeps
// their code and registers out of the common case (kVec = 1 takes only kWhole = true).
// mean_hw_f16_64x256x56x56, H200 (run R2): with the ends' and runs' code 0.0298 ms, the
// kernel before them 0.0255.
template <typename Reducer, int kVec, bool kWhole>
__global__ void __launch_bounds__(512, kRowMinBlocks) ReduceRowKernel(const CombinerIn<Reducer>* __restrict__ x,
                                                      Reducer reducer, ReduceArgs args,
                                                      CombinerOut<Reducer>* __restrict__ out,
                                                      CombinerAcc<Reducer>* __restrict__ partial,
                                                      unsigned* __restrict__ tickets) {
  using In = CombinerIn<Reducer>;
  using Acc = CombinerAcc<Reducer>;
  constexpr int kBatch = 4;
  const int64_t lane = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t lanes = static_cast<int64_t>(gridDim.y) * blockDim.x;
  const int64_t ob = OutBlock();
  if (ob >= args.out_blocks) return;  // the whole block
  const int64_t o = ob * blockDim.y + threadIdx.y;
  Acc acc = reducer.initial();
  if (o < args.num_outputs) {
    const In* row = x + args.out.Offset(o);
    if constexpr (kVec > 1) {
      // Vector indices within a row fit 32 bits (the host sends longer rows to kVec = 1),
      // which keeps the loop in few registers.
      using Vec = ::kps::details::VectorType<In, kVec>;
      RowSpan<In, kVec> span(row, args.reduce_size);
      const bool runs = !kWhole && args.run_vecs > 0;  // the same in every thread
      if (kWhole || runs) {
        span.head = span.tail = 0;
        span.n = static_cast<int>(args.reduce_size / kVec);
      }
      const Vec* vrow = reinterpret_cast<const Vec*>(row + span.head);
      const int n = span.n;
      const int step = static_cast<int>(lanes);
      // The i-th vector of the row: of its one run, or of run i / run_vecs.
      const int64_t run_stride_vecs = args.run_stride / kVec;
      auto at = [&](int i) -> const Vec* {
        if (!runs) return vrow + i;
        const auto qr = args.run_div.Divmod(static_cast<uint32_t>(i));
        return vrow + static_cast<int64_t>(qr.quotient) * run_stride_vecs + qr.remainder;
      };
      auto add = [&](const Vec& v, int i) {
        acc = reducer(acc, CombinerMakeN<kVec>(reducer, v.val, span.head + static_cast<int64_t>(i) * kVec));
      };
      // The unaligned ends, one element per lane (lanes >= 32 > kVec - 1 of them).
      if constexpr (!kWhole) {
        if (lane < span.head) acc = CombinerAccumulate(reducer, acc, ::kps::LoadStreaming(row + lane), lane);
        if (lane < span.tail) {
          const int64_t at = span.TailStart() + lane;
          acc = CombinerAccumulate(reducer, acc, ::kps::LoadStreaming(row + at), at);
        }
      }
      // Every lane runs the same batches, each of kBatch loads issued before any add: the
      // full ones, then, if the row has more, one padded batch loaded unconditionally (a
      // lane past the row's end loads its last vector again and does not use it). Lanes
      // that ran different counts would split their warp, which then waits for two
      // rounds of loads (mean_hw, H100: 2454 GB/s that way; rows of 392 vectors over 128
      // lanes, lanes 0-7 of a row have a fourth vector). `base`, a batch's first vector, is
      // the same in every lane, and no division precedes the first loads: a block's
      // threads run this setup before any byte is in flight.
      const int me = static_cast<int>(lane);
      int base = 0;
      for (; base + kBatch * step <= n; base += kBatch * step) {
        Vec v[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) v[u] = ::kps::LoadStreaming(at(base + me + u * step));
#pragma unroll
        for (int u = 0; u < kBatch; ++u) add(v[u], base + me + u * step);
      }
      if (base < n) {
        const int i = base + me;
        Vec v[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) v[u] = ::kps::LoadStreaming(at(min(i + u * step, n - 1)));
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          if (i + u * step < n) add(v[u], i + u * step);
        }
      }
    } else {
      for (int64_t r = lane; r < args.reduce_size; r += lanes) {
        acc = CombinerAccumulate(reducer, acc, row[args.red.Offset(r)], r);
      }
    }
  }
  acc = ::kps::RowOfWarpsReduce(acc, reducer);
  if (threadIdx.x == 0 && o < args.num_outputs) Store(reducer, acc, o, args, out, partial);
  if (gridDim.y > 1 && TakeLastTicket(tickets + ob, gridDim.y)) {
    // The fold: lane tx takes the partials s = tx, tx + bx, ... in order, then the lanes
    // meet in RowOfWarpsReduce.
    Acc f = reducer.initial();
    if (o < args.num_outputs) {
      for (unsigned s = threadIdx.x; s < gridDim.y; s += blockDim.x) {
        f = reducer(f, ::kps::LoadFromL2(partial + s * args.num_outputs + o));
      }
    }
    f = ::kps::RowOfWarpsReduce(f, reducer);
    if (threadIdx.x == 0 && o < args.num_outputs) out[o] = CombinerFinalize(reducer, f);
  }
}

// Short contiguous rows (at most one aligned vector per lane, blockDim.x <= 32 dividing
// 32, 256 threads): each lane loads one vector of kRows rows before reducing any, so
// several loads are in flight per thread, and the lanes of a row meet in a shuffle
// butterfly. A row's unaligned ends (RowSpan) take one element per lane, so blockDim.x
// covers min(R, kVec - 1) lanes too.
// kWhole: every row is whole aligned vectors (no ends: the host checked R, x's alignment
// and the row starts), which keeps the ends' registers and loads out of the common case.
// sum_last_f32_1Mx32, H200: with the ends' code 0.0647 ms, without 0.0394.
template <typename Reducer, int kVec, bool kWhole>
__global__ void __launch_bounds__(256) ReduceShortRowKernel(const CombinerIn<Reducer>* __restrict__ x,
                                                           Reducer reducer, ReduceArgs args,
                                                           CombinerOut<Reducer>* __restrict__ out) {
  using In = CombinerIn<Reducer>;
  using Acc = CombinerAcc<Reducer>;
  using Vec = ::kps::details::VectorType<In, kVec>;
  constexpr int kRows = 4;
  const int tx = threadIdx.x;
  const int64_t ob = OutBlock();
  if (ob >= args.out_blocks) return;  // the whole block
  const int64_t o0 = ob * kRows * blockDim.y + threadIdx.y;
  // Every lane loads its vector unconditionally: lanes past a row's end, or rows past the
  // last, load the row's last vector or the last row again (their values are not used).
  // Loads under a branch let ptxas move the first add up next to each, so a lane waits for
  // every load in turn. sum_last_f32_1Mx32, H100: unconditional 45.5 us, under a branch 54.4.
  // (A row shorter than 2 kVec - 1 elements may hold no aligned vector: it loads none.)
  Vec v[kRows];
  In ends[kRows][2];  // this lane's element of the row's head and of its tail
  int head[kRows];
  int64_t tail_at[kRows];
  bool in_head[kRows], in_tail[kRows], in_body[kRows];
#pragma unroll
  for (int k = 0; k < kRows; ++k) {
    const In* row = x + args.out.Offset(min(o0 + k * blockDim.y, args.num_outputs - 1));
    RowSpan<In, kVec> span(row, args.reduce_size);
    if constexpr (kWhole) {
      // At least one vector: a whole row is never empty here. No branch around the load
      // (see above).
      span.head = span.tail = 0;
      span.n = static_cast<int>(args.reduce_size / kVec);
      v[k] = ::kps::LoadStreaming(reinterpret_cast<const Vec*>(row) + min(tx, span.n - 1));
    } else if (span.n > 0) {
      v[k] = ::kps::LoadStreaming(reinterpret_cast<const Vec*>(row + span.head) + min(tx, span.n - 1));
    }
    head[k] = span.head;
    tail_at[k] = span.TailStart() + tx;
    in_body[k] = tx < span.n;
    in_head[k] = !kWhole && tx < span.head;
    in_tail[k] = !kWhole && tx < span.tail;
    if (in_head[k]) ends[k][0] = ::kps::LoadStreaming(row + tx);
    if (in_tail[k]) ends[k][1] = ::kps::LoadStreaming(row + tail_at[k]);
  }
#pragma unroll
  for (int k = 0; k < kRows; ++k) {
    const int64_t o = o0 + k * blockDim.y;
    Acc acc = reducer.initial();
    if (o < args.num_outputs) {
      if (in_body[k]) {
        const int64_t at = head[k] + int64_t{tx} * kVec;
#pragma unroll
        for (int j = 0; j < kVec; ++j) acc = CombinerAccumulate(reducer, acc, v[k].val[j], at + j);
      }
      if (in_head[k]) acc = CombinerAccumulate(reducer, acc, ends[k][0], tx);
      if (in_tail[k]) acc = CombinerAccumulate(reducer, acc, ends[k][1], tail_at[k]);
    }
    acc = ::kps::ShortRowReduce(acc, reducer);
    if (tx == 0 && o < args.num_outputs) out[o] = CombinerFinalize(reducer, acc);
  }
}

// A lane's kVec partial states are contiguous (partial[s * O + g * kVec + j]): stored and
// loaded as 16-byte words when they tile them (float states of 4 or 8 outputs).
template <typename Acc, int kVec>
inline constexpr bool kStatesTile16 = (kVec * sizeof(Acc)) % 16 == 0 && alignof(Acc) <= 16;
template <typename Acc, int kVec>
__device__ __forceinline__ void StoreStates(Acc* dst, const Acc (&v)[kVec]) {
  if constexpr (kStatesTile16<Acc, kVec>) {
    uint4 w[kVec * sizeof(Acc) / 16];
    memcpy(w, v, sizeof(w));
#pragma unroll
    for (size_t i = 0; i < sizeof(w) / 16; ++i) reinterpret_cast<uint4*>(dst)[i] = w[i];
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) dst[j] = v[j];
  }
}
template <typename Acc, int kVec>
__device__ __forceinline__ void LoadStatesFromL2(const Acc* src, Acc (&v)[kVec]) {
  if constexpr (kStatesTile16<Acc, kVec>) {
    uint4 w[kVec * sizeof(Acc) / 16];
#pragma unroll
    for (size_t i = 0; i < sizeof(w) / 16; ++i) w[i] = __ldcg(reinterpret_cast<const uint4*>(src) + i);
    memcpy(v, w, sizeof(w));
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = ::kps::LoadFromL2(src + j);
  }
}

// FoldRowsIntoRowZero for the column kernel (at most 256 threads), whose split calls it
// twice: once for its rows' states, once in the fold. Where the block's states exceed
// kColStateBytes of shared memory, a tree per value (BlockYReduce).
inline constexpr size_t kColStateBytes = 16384;
template <typename Reducer, int kVec>
__device__ __forceinline__ void ColBlockReduce(const Reducer& reducer, CombinerAcc<Reducer> (&part)[kVec]) {
  using Acc = CombinerAcc<Reducer>;
  if (blockDim.y == 1) return;  // lanes that fold their whole columns alone (RunCols)
  if constexpr (256 * kVec * sizeof(Acc) <= kColStateBytes) {
    __shared__ Acc states[256 * kVec];
    __syncthreads();  // the previous call's readers are done
    ::kps::FoldRowsIntoRowZero(part, reducer, states);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) part[j] = ::kps::details::BlockYReduce(part[j], reducer);
  }
}

// One lane's share of a column kernel: folds the reduced rows r, r + step, ... (below
// args.reduce_size) of its kVec outputs, at x + args.out.Offset(g * kVec), into part.
template <typename Reducer, int kVec>
__device__ __forceinline__ void ColAccumulate(const CombinerIn<Reducer>* __restrict__ x, const Reducer& reducer,
                                              const ReduceArgs& args, int64_t g, int64_t r, const int64_t step,
                                              CombinerAcc<Reducer> (&part)[kVec]) {
  using In = CombinerIn<Reducer>;
  using Vec = ::kps::details::VectorType<In, kVec>;
  constexpr int kUnroll = 4;
  const int64_t end = args.reduce_size;
  const In* base = x + args.out.Offset(g * kVec);
  // By value: through a reference, a dereferenced pointer became kVec scalar loads.
  auto accumulate = [&](const Vec v, int64_t at) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) part[j] = CombinerAccumulate(reducer, part[j], v.val[j], at);
  };
  // One reduced dim, the usual case once dims are merged: a strided walk. The vector
  // kernels take only this case (the host sends the others to kVec = 1), because
  // the index walk's registers would count against this loop too.
  if (kVec > 1 || args.red.rank <= 1) {
    const int64_t stride = args.red.rank == 0 ? 0 : args.red.strides[0];
    if (end + kUnroll * step < INT32_MAX && stride < INT32_MAX) {
      // 32-bit row numbers and stride (every x of fewer than 2^31 reduced rows): the
      // 64-bit walk below takes the registers of two of the four loads in flight.
      const int e = static_cast<int>(end), st = static_cast<int>(step), sd = static_cast<int>(stride);
      int ri = static_cast<int>(r);
      for (; ri + (kUnroll - 1) * st < e; ri += kUnroll * st) {
        Vec v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          v[u] = ::kps::LoadStreaming(reinterpret_cast<const Vec*>(base + static_cast<int64_t>(ri + u * st) * sd));
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) accumulate(v[u], ri + u * st);
      }
      for (; ri < e; ri += st) {
        accumulate(::kps::LoadStreaming(reinterpret_cast<const Vec*>(base + static_cast<int64_t>(ri) * sd)), ri);
      }
    } else {
      const In* p = base + r * stride;
      const int64_t p_step = step * stride;
      for (; r + (kUnroll - 1) * step < end; r += kUnroll * step, p += kUnroll * p_step) {
        Vec v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = ::kps::LoadStreaming(reinterpret_cast<const Vec*>(p + u * p_step));
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) accumulate(v[u], r + u * step);
      }
      for (; r < end; r += step, p += p_step) accumulate(::kps::LoadStreaming(reinterpret_cast<const Vec*>(p)), r);
    }
  } else if constexpr (kVec == 1) {
    for (; r + (kUnroll - 1) * step < end; r += kUnroll * step) {
      Vec v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = *reinterpret_cast<const Vec*>(base + args.red.Offset(r + u * step));
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) accumulate(v[u], r + u * step);
    }
    for (; r < end; r += step) accumulate(*reinterpret_cast<const Vec*>(base + args.red.Offset(r)), r);
  }
}

// Lanes own outputs. kVec > 1: the kVec outputs of a lane are contiguous in x (innermost
// kept stride 1, its size and every other stride multiples of kVec), x is aligned, and
// the reduced dims have merged into one.
// The gridDim.y blocks of a split interleave their rows of the reduced extent.
template <typename Reducer, int kVec>
__global__ void __launch_bounds__(256, kColMinBlocks) ReduceColKernel(const CombinerIn<Reducer>* __restrict__ x,
                                                      Reducer reducer, ReduceArgs args,
                                                      CombinerOut<Reducer>* __restrict__ out,
                                                      CombinerAcc<Reducer>* __restrict__ partial,
                                                      unsigned* __restrict__ tickets) {
  using Acc = CombinerAcc<Reducer>;
  const int64_t groups = (args.num_outputs + kVec - 1) / kVec;
  const int64_t gb = OutBlock();
  if (gb >= args.out_blocks) return;  // the whole block
  const int64_t g = gb * blockDim.x + threadIdx.x;
  Acc part[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) part[j] = reducer.initial();
  if (g < groups) {
    ColAccumulate<Reducer, kVec>(x, reducer, args, g, static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y,
                                 static_cast<int64_t>(gridDim.y) * blockDim.y, part);
  }
  ColBlockReduce<Reducer, kVec>(reducer, part);
  if (threadIdx.y == 0 && g < groups) {
    if (gridDim.y == 1) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) out[g * kVec + j] = CombinerFinalize(reducer, part[j]);
    } else {
      StoreStates(partial + static_cast<int64_t>(blockIdx.y) * args.num_outputs + g * kVec, part);
    }
  }
  if (gridDim.y > 1 && TakeLastTicket(tickets + gb, gridDim.y)) {
    // The fold: row ty takes the partials s = ty, ty + by, ... in order, then the rows
    // meet in ColBlockReduce. (kVec > 1 only when O is a multiple of kVec.)
#pragma unroll
    for (int j = 0; j < kVec; ++j) part[j] = reducer.initial();
    if (g < groups) {
      for (unsigned s = threadIdx.y; s < gridDim.y; s += blockDim.y) {
        Acc v[kVec];
        LoadStatesFromL2(partial + s * args.num_outputs + g * kVec, v);
#pragma unroll
        for (int j = 0; j < kVec; ++j) part[j] = reducer(part[j], v[j]);
      }
    }
    ColBlockReduce<Reducer, kVec>(reducer, part);
    if (threadIdx.y == 0 && g < groups) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) out[g * kVec + j] = CombinerFinalize(reducer, part[j]);
    }
  }
}

// The tall column kernel: blocks of 1024 threads (blockDim.x 16 or 32 lanes, blockDim.y
// 64 or 32 rows of them) that each take a column block's whole reduced extent, so that
// no split and no fold are needed where about one such block per SM covers the outputs
// (the fold costs a fence, the ticket and the partials' loads, one after another, after
// the last load). sum_first_f32_8Kx8K (2048 lanes of float4) takes 128 blocks of 16 x 64.
// sum_first_f32_8Kx8K, H100: tall 88.5 us, split 8 blocks of 32 x 8 per group 90.1-90.8.
// Its states meet in shared memory (FoldRowsIntoRowZero: two barriers).
// Vector kernels only, with states of at most 32 bytes a lane and at most 8 outputs a
// lane: at 16 (byte max/min) ptxas spills under the 64 registers of 1024 threads.
inline constexpr size_t kTallStateBytes = 32768;
template <typename Reducer, int kVec>
inline constexpr bool kTallFits = kVec > 1 && kVec <= 8 && internal::kTallThreads * kVec * sizeof(CombinerAcc<Reducer>) <= kTallStateBytes;

template <typename Reducer, int kVec>
__global__ void __launch_bounds__(internal::kTallThreads, 1) ReduceColTallKernel(const CombinerIn<Reducer>* __restrict__ x,
                                                                     Reducer reducer, ReduceArgs args,
                                                                     CombinerOut<Reducer>* __restrict__ out) {
  using Acc = CombinerAcc<Reducer>;
  static_assert(kTallFits<Reducer, kVec>, "the tall kernel's states exceed its shared memory");
  const int64_t groups = (args.num_outputs + kVec - 1) / kVec;
  const int64_t gb = OutBlock();
  if (gb >= args.out_blocks) return;  // the whole block
  const int bx = blockDim.x, tx = threadIdx.x, ty = threadIdx.y;
  const int64_t g = gb * bx + tx;
  Acc part[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) part[j] = reducer.initial();
  if (g < groups) ColAccumulate<Reducer, kVec>(x, reducer, args, g, ty, blockDim.y, part);
  __shared__ Acc states[internal::kTallThreads * kVec];
  ::kps::FoldRowsIntoRowZero(part, reducer, states);
  if (ty == 0 && g < groups) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) out[g * kVec + j] = CombinerFinalize(reducer, part[j]);
  }
}

// Narrow columns: x is one contiguous [R, C] block reduced over its rows, with rows of
// a few elements (sum_first_f32_1Mx3, _1Mx16), where the column kernel's lanes, one per
// kVec outputs, would leave warps mostly empty. The block instead reads x as a flat
// array: a step is P elements (NarrowArgs::step, a multiple of lcm(C, kVec)), thread t
// loads the kVec elements at kVec * t of each step, so its kVec states keep their columns
// ((kVec * t + i) % C) from step to step and every warp's load is 32 contiguous vectors.
// The block's P states meet per column in a fixed tree over shared memory (FoldColumns);
// the gridDim.x blocks (each a contiguous run of steps) leave C partial states each, and
// the block that takes the last ticket folds them the same way.
struct NarrowArgs {
  int cols;           // C
  int step;           // P elements per step, P / kVec threads load
  int64_t rows;       // R
  int64_t steps;      // ceil(R * C / P)
  int64_t per_block;  // steps per block
};

template <typename Reducer, int kVec>
inline constexpr int kNarrowThreads =
    256 * kVec * sizeof(CombinerAcc<Reducer>) <= 32768 ? 256 : 128 * kVec * sizeof(CombinerAcc<Reducer>) <= 32768 ? 128 : 64;

// Folds the `rows` x `cols` states of s (row-major) into row 0, column by column, in a
// fixed tree (row r meets row r + half). Every thread of the block calls it.
template <typename Reducer>
__device__ __forceinline__ void FoldColumns(const Reducer& reducer, CombinerAcc<Reducer>* s, int rows, int cols) {
  const int tid = threadIdx.x, threads = blockDim.x;
  while (rows > 1) {
    const int half = (rows + 1) / 2;
    const int pairs = (rows - half) * cols;
    __syncthreads();
    for (int i = tid; i < pairs; i += threads) {
      const int r = i / cols, c = i - r * cols;
      s[r * cols + c] = reducer(s[r * cols + c], s[(r + half) * cols + c]);
    }
    rows = half;
  }
  __syncthreads();
}

template <typename Reducer, int kVec>
__global__ void __launch_bounds__((kNarrowThreads<Reducer, kVec>)) ReduceNarrowColKernel(
    const CombinerIn<Reducer>* __restrict__ x, Reducer reducer, NarrowArgs a, CombinerOut<Reducer>* __restrict__ out,
    CombinerAcc<Reducer>* __restrict__ partial, unsigned* __restrict__ tickets) {
  using In = CombinerIn<Reducer>;
  using Acc = CombinerAcc<Reducer>;
  using Vec = ::kps::details::VectorType<In, kVec>;
  constexpr int kThreads = kNarrowThreads<Reducer, kVec>;
  constexpr int kUnroll = 4;
  __shared__ Acc states[kThreads * kVec];
  const int t = threadIdx.x;
  const int p0 = t * kVec;  // this thread's first element within a step
  const int step_rows = a.step / a.cols;
  const int64_t total = a.rows * a.cols;
  Acc part[kVec];
  int row_in_step[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    part[i] = reducer.initial();
    row_in_step[i] = (p0 + i) / a.cols;
  }
  if (p0 < a.step) {
    const int64_t first = static_cast<int64_t>(blockIdx.x) * a.per_block;
    const int64_t last = min(first + a.per_block, a.steps);
    auto add = [&](const Vec& v, int64_t s) {
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        part[i] = CombinerAccumulate(reducer, part[i], v.val[i], s * step_rows + row_in_step[i]);
      }
    };
    int64_t s = first;
    // Whole steps, kUnroll loads in flight; the last step of x may be partial.
    const int64_t whole_end = min(last, total / a.step);
    for (; s + kUnroll <= whole_end; s += kUnroll) {
      Vec v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        v[u] = ::kps::LoadStreaming(reinterpret_cast<const Vec*>(x + (s + u) * a.step + p0));
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) add(v[u], s + u);
    }
    for (; s < last; ++s) {
      const int64_t at = s * a.step + p0;
      if (at + kVec <= total) {
        add(::kps::LoadStreaming(reinterpret_cast<const Vec*>(x + at)), s);
      } else {
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          if (at + i < total) {
            part[i] = CombinerAccumulate(reducer, part[i], ::kps::LoadStreaming(x + at + i), s * step_rows + row_in_step[i]);
          }
        }
      }
    }
  }
  // The step's P states, row-major [step_rows][C], fold into the C of row 0.
  if (p0 < a.step) {
#pragma unroll
    for (int i = 0; i < kVec; ++i) states[p0 + i] = part[i];
  }
  FoldColumns(reducer, states, step_rows, a.cols);
  if (gridDim.x == 1) {
    for (int c = t; c < a.cols; c += kThreads) out[c] = CombinerFinalize(reducer, states[c]);
    return;
  }
  for (int c = t; c < a.cols; c += kThreads) partial[static_cast<int64_t>(blockIdx.x) * a.cols + c] = states[c];
  if (!TakeLastTicket(tickets, gridDim.x)) return;
  // The fold of the blocks' partials: row j of the shared states folds partials j, j +
  // rows, ... of every column, then the rows meet in FoldColumns.
  const int rows = static_cast<int>(min(static_cast<int64_t>(kThreads * kVec / a.cols), static_cast<int64_t>(gridDim.x)));
  for (int q = t; q < rows * a.cols; q += kThreads) {
    const int j = q / a.cols, c = q - j * a.cols;
    Acc f = reducer.initial();
    for (unsigned b = j; b < gridDim.x; b += rows) f = reducer(f, ::kps::LoadFromL2(partial + b * a.cols + c));
    states[q] = f;
  }
  FoldColumns(reducer, states, rows, a.cols);
  for (int c = t; c < a.cols; c += kThreads) out[c] = CombinerFinalize(reducer, states[c]);
}

// Reducers whose result is the position of an element (argmax, argmin: Reducer::kIndexOnly).
template <typename Reducer, typename = void>
inline constexpr bool kIndexOnly = false;
template <typename Reducer>
inline constexpr bool kIndexOnly<Reducer, std::void_t<decltype(Reducer::kIndexOnly)>> = Reducer::kIndexOnly;

// One element per output (R == 1): a map, out[o] = the reducer's value of the element at
// out.Offset(o). Each block takes kOneItems x 256 outputs, thread t those at t, t + 256,
// ...: every warp's loads and stores are contiguous runs (a vector per thread, then kVec
// separate stores per thread, wrote each warp's outputs 16 to 64 bytes apart:
// argmax_last_f32_16Mx1, H200: 0.124 ms, 1 TB/s of int64 outputs). Rows of one element in
// the row or column kernels left most lanes idle.
inline constexpr int kOneItems = 4;
template <typename Reducer>
__global__ void __launch_bounds__(256) ReduceOneKernel(const CombinerIn<Reducer>* __restrict__ x, Reducer reducer,
                                                       ReduceArgs args, CombinerOut<Reducer>* __restrict__ out) {
  using In = CombinerIn<Reducer>;
  const int64_t base = (OutBlock() * kOneItems) * 256 + threadIdx.x;
  In v[kOneItems];
  if constexpr (!kIndexOnly<Reducer>) {
#pragma unroll
    for (int j = 0; j < kOneItems; ++j) {
      const int64_t o = base + j * 256;
      if (o < args.num_outputs) v[j] = ::kps::LoadStreaming(x + args.out.Offset(o));
    }
  } else {
    // The position of a one-element extent is 0 whatever its value: nothing to read.
#pragma unroll
    for (int j = 0; j < kOneItems; ++j) v[j] = In{};
  }
#pragma unroll
  for (int j = 0; j < kOneItems; ++j) {
    const int64_t o = base + j * 256;
    if (o < args.num_outputs) {
      out[o] = CombinerFinalize(reducer, CombinerAccumulate(reducer, reducer.initial(), v[j], 0));
    }
  }
}

// Tiny contiguous rows back to back (x is [O, R], R * sizeof(In) <= kTinyMaxBytes): a
// block stages the kTinyRows rows it reduces, one contiguous run of x, into shared memory
// with coalesced loads (kTinyMaxBytes / sizeof(In) per thread, all in flight before the
// first store), then each thread folds one row from there. The short-row kernel gave such
// rows a warp segment each, whose lanes mostly loaded one element of an unaligned end and
// met in a shuffle butterfly (var over bfloat16 rows of 7, H200: 113 GB/s vs PyTorch 335).
inline constexpr int kTinyRows = 256;
inline constexpr int kTinyMaxBytes = 64;
template <typename Reducer>
__global__ void __launch_bounds__(kTinyRows) ReduceTinyRowKernel(const CombinerIn<Reducer>* __restrict__ x,
                                                                Reducer reducer, ReduceArgs args,
                                                                CombinerOut<Reducer>* __restrict__ out) {
  using In = CombinerIn<Reducer>;
  using Acc = CombinerAcc<Reducer>;
  constexpr int kPerThread = kTinyMaxBytes / static_cast<int>(sizeof(In)) > 0 ? kTinyMaxBytes / sizeof(In) : 1;
  __shared__ In rows[kTinyRows * kPerThread];
  const int64_t o0 = OutBlock() * kTinyRows;
  if (o0 >= args.num_outputs) return;  // the whole block
  const int r = static_cast<int>(args.reduce_size);
  const int count = static_cast<int>(min(int64_t{kTinyRows}, args.num_outputs - o0));
  const int n = count * r;
  const In* src = x + o0 * args.reduce_size;
  In v[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kTinyRows;
    if (i < n) v[k] = ::kps::LoadStreaming(src + i);
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = threadIdx.x + k * kTinyRows;
    if (i < n) rows[i] = v[k];
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) >= count) return;
  const In* row = rows + threadIdx.x * r;
  Acc acc = reducer.initial();
  for (int j = 0; j < r; ++j) acc = CombinerAccumulate(reducer, acc, row[j], j);
  out[o0 + threadIdx.x] = CombinerFinalize(reducer, acc);
}

// An empty reduced extent: every output is the reducer's identity, finalized (sum 0,
// prod 1, mean NaN, ...). A grid-stride loop: a few blocks fill any output.
template <typename Reducer>
__global__ void __launch_bounds__(256) ReduceEmptyKernel(Reducer reducer, int64_t num_outputs,
                                                         CombinerOut<Reducer>* __restrict__ out) {
  const CombinerOut<Reducer> v = CombinerFinalize(reducer, reducer.initial());
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < num_outputs;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[o] = v;
  }
}

}  // namespace reduce
}  // namespace kps
