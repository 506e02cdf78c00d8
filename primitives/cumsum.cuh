// Cumsum: block-wide inclusive or exclusive prefix scan of register values with any
// combiner (functors/combiner.h: `initial()` and an associative `operator()`), from a
// binary functor such as AddFunctor to the scan ops' stateful scanners.
//
//   // One tile of 256 * 4 elements per block; the last tile is padded with the identity,
//   // so the valid prefix sums and the block total are unaffected.
//   const SumFunctor<float> op{};  // operator() and initial() (the identity)
//   float x[4], y[4], total;
//   kps::Init<float, 4>(x, op.initial());
//   kps::ReadData<float, 4, 1, true>(x, in + tile_start, valid);
//   kps::Cumsum<float, float, 4, 256>(y, x, op, /*exclusive=*/false, &total);
//   kps::WriteData<float, 4, 1, true>(out + tile_start, y, valid);
#pragma once

#include "primitives/details/macros.cuh"
#include "primitives/details/warp_shuffle.cuh"

namespace kps {
namespace details {
struct CumsumTag {};
}  // namespace details

// Scans the BlockSize * NX values of a 1-D block in the blocked arrangement: thread t
// holds items [t * NX, t * NX + NX) in in[0..NX). With x[p] the item at position p and
// (+) the functor `op`:
//   inclusive (exclusive == false): out[p] = x[0] (+) x[1] (+) ... (+) x[p]
//   exclusive (exclusive == true):  out[0] = op.initial(), out[p] = x[0] (+) ... (+) x[p-1]
// and, when block_aggregate is not null, every thread receives the block total
// x[0] (+) ... (+) x[BlockSize * NX - 1] in *block_aggregate (what a decoupled look-back
// scan publishes for the next tiles).
//
// The scan runs in OutT: each input is converted to OutT first, and op is a functor on
// OutT (`OutT operator()(OutT, OutT) const`, associative, not necessarily commutative;
// `OutT initial() const`, its identity, used by the exclusive scan). Wider OutT than InT
// accumulates in the wider type (e.g. __half in, float out; int32 in, int64 out).
// A partial tile: fill the missing items with op.initial() (see the file comment).
//
// Preconditions: blockDim.x == BlockSize, a power of two in [1, 1024]; blockDim.y ==
// blockDim.z == 1; every thread calls it. `out` may alias `in`.
//
// Deterministic: the order of combination is fixed and keeps item order (a sequential
// scan in each thread, Kogge-Stone scans over the threads of a warp and over the warp
// totals). Data stays in registers and moves by shuffles; shared memory holds only one
// value per warp (<= 32), written and read by consecutive lanes, so there are no bank
// conflicts to pad away. Two barriers when BlockSize > 32, none otherwise.
template <typename InT, typename OutT, int NX, int BlockSize, class OpFunc>
KPS_DEVICE void Cumsum(OutT* out, const InT* in, OpFunc op, bool exclusive = false,
                       OutT* block_aggregate = nullptr) {
  static_assert(NX > 0, "Cumsum: NX must be positive");
  static_assert(BlockSize >= 1 && BlockSize <= 1024 && (BlockSize & (BlockSize - 1)) == 0,
                "Cumsum: BlockSize must be a power of two in [1, 1024]");
  using details::kWarpSize;
  constexpr int kWarps = (BlockSize + kWarpSize - 1) / kWarpSize;
  constexpr int kWarpLanes = BlockSize < kWarpSize ? BlockSize : kWarpSize;
  constexpr unsigned kMask = BlockSize >= kWarpSize ? details::kFullWarpMask : ((1u << kWarpLanes) - 1u);
  const int tid = static_cast<int>(KPS_THREAD_ID_X);
  const int lane = tid & (kWarpSize - 1);
  const int warp = tid / kWarpSize;

  // 1. Each thread scans its own items.
  OutT local[NX];
  local[0] = static_cast<OutT>(in[0]);
#pragma unroll
  for (int i = 1; i < NX; ++i) local[i] = op(local[i - 1], static_cast<OutT>(in[i]));

  // 2. Inclusive scan of the thread totals within the warp: lane l gets lanes [0, l].
  OutT warp_inclusive = local[NX - 1];
#pragma unroll
  for (int offset = 1; offset < kWarpLanes; offset <<= 1) {
    const OutT up = details::ShuffleUp(kMask, warp_inclusive, offset);
    if (lane >= offset) warp_inclusive = op(up, warp_inclusive);
  }
  // What precedes this thread: lanes [0, l - 1] of its warp (none for lane 0) ...
  OutT prefix = details::ShuffleUp(kMask, warp_inclusive, 1);
  bool has_prefix = lane > 0;
  OutT total;

  if constexpr (kWarps == 1) {
    total = details::ShuffleIdx(kMask, warp_inclusive, kWarpLanes - 1);
  } else {
    // 3. ... and the warps before it. Every warp scans the warp totals itself (32 values
    // at most), which saves the barrier a single scanning warp would need.
    OutT* warp_totals = details::SharedScratch<OutT, kWarps, details::CumsumTag>();
    __syncthreads();  // readers of a previous call's warp_totals are done
    if (lane == kWarpSize - 1) warp_totals[warp] = warp_inclusive;
    __syncthreads();
    OutT w = warp_totals[lane < kWarps ? lane : kWarps - 1];
#pragma unroll
    for (int offset = 1; offset < kWarps; offset <<= 1) {
      const OutT up = details::ShuffleUp(details::kFullWarpMask, w, offset);
      if (lane >= offset) w = op(up, w);
    }
    // Lane k of w now holds warps [0, k] combined.
    const OutT warps_before = details::ShuffleIdx(details::kFullWarpMask, w, warp > 0 ? warp - 1 : 0);
    total = details::ShuffleIdx(details::kFullWarpMask, w, kWarps - 1);
    if (warp > 0) {
      prefix = has_prefix ? op(warps_before, prefix) : warps_before;
      has_prefix = true;
    }
  }

  // 4. Combine the prefix with the thread's own scan (out may alias in: in is not read
  // past step 1).
  if (exclusive) {
    out[0] = has_prefix ? prefix : op.initial();
#pragma unroll
    for (int i = 1; i < NX; ++i) out[i] = has_prefix ? op(prefix, local[i - 1]) : local[i - 1];
  } else {
#pragma unroll
    for (int i = 0; i < NX; ++i) out[i] = has_prefix ? op(prefix, local[i]) : local[i];
  }
  if (block_aggregate != nullptr) *block_aggregate = total;
}

}  // namespace kps
