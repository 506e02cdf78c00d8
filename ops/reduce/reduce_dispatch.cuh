// The host side of a reduction's CUDA launch: picks the kernel (reduce_kernels.cuh) for the
// merged plan (reduce_plan.h), sizes its grid and split from the device's occupancy and
// the knobs (reduce_tuning.h), and launches it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <mutex>
#include <utility>

#include "ops/reduce/reduce_kernels.cuh"
#include "ops/reduce/reduce_plan.h"
#include "ops/reduce/reduce_tuning.h"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/device.h"
#include "registry/scratch.h"
#include "registry/status.h"

namespace kps {
namespace reduce {

namespace internal {

// How many blocks of `kernel` with `threads` threads the device holds at once. The
// occupancy query is cached per (kernel, block size): it is not free on the eager path.
inline int64_t ResidentBlocks(const void* kernel, int threads, int device) {
  static std::mutex mu;
  static auto* cache = new std::map<std::pair<const void*, int>, int>();
  int per_sm = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache->find({kernel, threads});
    if (it != cache->end()) per_sm = it->second;
  }
  if (per_sm == 0) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess || per_sm < 1) {
      cudaGetLastError();  // clear it: the launch reports real problems
      per_sm = 1;
    }
    std::lock_guard<std::mutex> lock(mu);
    (*cache)[{kernel, threads}] = per_sm;
  }
  return int64_t{per_sm} * CudaMultiprocessorCount(device);
}

// How many blocks to split each output's reduced extent over: enough for the grid to
// fill the device once (never more, so no half-empty second wave), keeping at least
// `min_units` loads per thread.
inline int64_t SplitCount(int64_t units, int64_t out_blocks, int64_t resident, int64_t min_units_per_block) {
  resident *= GetTuning().waves;
  if (out_blocks * 2 > resident) return 1;
  const int64_t s = std::min(resident / out_blocks, units / min_units_per_block);
  return std::max<int64_t>(1, std::min(s, kMaxSplit));
}

template <typename Reducer>
absl::Status LaunchEmpty(const Reducer& reducer, int64_t num_outputs, CombinerOut<Reducer>* out, cudaStream_t stream,
                         int device) {
  const int64_t blocks = std::min<int64_t>(CeilDiv(num_outputs, 256), 4 * CudaMultiprocessorCount(device));
  return LaunchKernelOnDevice<&ReduceEmptyKernel<Reducer>>(device, "ReduceEmptyKernel",
                                                          dim3(static_cast<unsigned>(blocks)), dim3(256), 0, stream,
                                                          reducer, num_outputs, out);
}

inline bool Aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace internal

namespace internal {

// The partial states and tickets of a split launch, from the stream's scratch (nulls
// when split == 1): split * O states, a ticket per group of outputs.
template <typename Acc>
absl::StatusOr<ScratchSpace> SplitScratch(int64_t split, int64_t num_outputs, int64_t groups, const Stream& stream,
                                          int device) {
  if (split == 1) return ScratchSpace{};
  return GetStreamScratch(stream, static_cast<size_t>(split * num_outputs) * sizeof(Acc), static_cast<size_t>(groups),
                          device);
}

// Launches kKernel on a grid of out_blocks x `split` blocks (OutBlocksGrid).
template <auto kKernel, typename... A>
absl::Status LaunchOutBlocks(const char* name, int64_t out_blocks, int64_t split, dim3 block, const Stream& stream,
                             int device, A&&... args) {
  KPS_ASSIGN_OR_RETURN(const dim3 grid, OutBlocksGrid(name, out_blocks, split));
  return LaunchKernelOnDevice<kKernel>(device, name, grid, block, 0, stream.cuda_stream(), std::forward<A>(args)...);
}

// The end of RunRows and RunCols: the split's scratch, and the launch of kKernel (the row
// or the column kernel, which take the same arguments) on args.out_blocks x `split` blocks.
template <auto kKernel, typename Reducer>
absl::Status LaunchSplit(const char* name, int64_t split, dim3 block, const CombinerIn<Reducer>* x,
                         const Reducer& reducer, const ReduceArgs& args, CombinerOut<Reducer>* out,
                         const Stream& stream, int device) {
  using Acc = CombinerAcc<Reducer>;
  KPS_ASSIGN_OR_RETURN(const ScratchSpace scratch,
                       SplitScratch<Acc>(split, args.num_outputs, args.out_blocks, stream, device));
  return LaunchOutBlocks<kKernel>(name, args.out_blocks, split, block, stream, device, x, reducer, args, out,
                                  static_cast<Acc*>(scratch.data), scratch.tickets);
}

// kVec > 1: rows are contiguous; `whole` when every row is whole aligned vectors (R, x's
// alignment and every row start multiples of kVec), else RowSpan splits each row.
template <typename Reducer, int kVec>
absl::Status RunRows(const CombinerIn<Reducer>* x, const Reducer& reducer, ReduceArgs args,
                     CombinerOut<Reducer>* out, const Stream& stream, int device, bool whole) {
  const int64_t units = CeilDiv(args.reduce_size, kVec);  // loads per output
  if constexpr (kVec > 1) {
   if (args.reduce_size / kVec <= 32 && GetTuning().short_rows && args.run_vecs == 0) {
    // Short rows: a warp segment per row, its lanes covering the row's aligned vectors and
    // its unaligned ends, four rows per lane at a time, a block per 4 x by rows (rather
    // than one or two waves of resident blocks that loop).
    // 1M rows of 32 floats, H100: a block per 4 x by rows 2852 GB/s, looping waves 2787.
    const int64_t lanes =
        whole ? units : std::max<int64_t>(args.reduce_size / kVec, std::min<int64_t>(args.reduce_size, kVec - 1));
    const int bx = Pow2Ceil(lanes), by = 256 / bx;
    args.out_blocks = CeilDiv(args.num_outputs, int64_t{by} * 4);
    if (whole) {
      return LaunchOutBlocks<&ReduceShortRowKernel<Reducer, kVec, true>>("ReduceShortRowKernel", args.out_blocks, 1,
                                                                        dim3(bx, by), stream, device, x, reducer,
                                                                        args, out);
    }
    return LaunchOutBlocks<&ReduceShortRowKernel<Reducer, kVec, false>>("ReduceShortRowKernel", args.out_blocks, 1,
                                                                dim3(bx, by), stream, device, x, reducer, args, out);
   }
  }
  // Long rows: at most row_loads loads per lane (batches of 4 in the kernel), from one
  // warp up to 512 lanes per row; longer rows loop, or split across blocks. Blocks of
  // row_threads (512) threads: several rows each when they have fewer lanes.
  // States of more than 8 bytes (Welford's, argmax's) cost a lane more to merge with its
  // neighbours than a float sum, so their lanes take more loads each.
  const int row_loads = sizeof(CombinerAcc<Reducer>) > 8 ? GetTuning().row_loads_heavy : GetTuning().row_loads;
  const int bx = std::min<int64_t>(512, std::max<int64_t>(32, Pow2Ceil(CeilDiv(units, std::max(1, row_loads)))));
  const int by = std::max(1, GetTuning().row_threads / bx);
  args.out_blocks = CeilDiv(args.num_outputs, by);
  // Whole rows in one run take the instantiation without the ends' and runs' code.
  constexpr auto kWholeKernel = &ReduceRowKernel<Reducer, kVec, true>;
  constexpr auto kSpanKernel = &ReduceRowKernel<Reducer, kVec, kVec == 1>;
  const bool plain = kVec == 1 || (whole && args.run_vecs == 0);
  const int64_t resident = ResidentBlocks(
      reinterpret_cast<const void*>(plain ? kWholeKernel : kSpanKernel), bx * by, device);
  const int64_t split = SplitCount(units, args.out_blocks, resident, int64_t{bx} * 16);
  if (plain) {
    return LaunchSplit<kWholeKernel>("ReduceRowKernel", split, dim3(bx, by), x, reducer, args, out, stream, device);
  }
  return LaunchSplit<kSpanKernel>("ReduceRowKernel", split, dim3(bx, by), x, reducer, args, out, stream, device);
}

template <typename Reducer, int kVec>
absl::Status RunCols(const CombinerIn<Reducer>* x, const Reducer& reducer, ReduceArgs args,
                     CombinerOut<Reducer>* out, const Stream& stream, int device) {
  const int64_t groups = CeilDiv(args.num_outputs, kVec);  // kVec outputs per lane
  const int sms = CudaMultiprocessorCount(device);  // a lookup under a mutex: once per launch
  int bx = std::min(32, Pow2Ceil(groups));
  int by = std::min(std::max(1, std::min(GetTuning().col_by, 256 / bx)), Pow2Ceil(args.reduce_size));
  if (GetTuning().col_solo > 0 && groups >= int64_t{sms} * GetTuning().col_solo) {
    // Outputs enough for col_solo lanes per SM: each lane folds its whole column alone, in
    // blocks of 256 lanes (no fold in shared memory; short columns such as [16, 1M] over
    // dim 0 gave each lane 2 loads and a two-barrier fold).
    bx = 256;
    by = 1;
  }
  args.out_blocks = CeilDiv(groups, bx);
  // Split to fill the device at half occupancy (1024 threads per SM), not at full.
  // sum_first_f32_8Kx8K (64 groups), H100: 8 blocks of 256 per group 2964 GB/s, 16 2912.
  const int64_t fill = std::max<int64_t>(1, int64_t{sms} * 1024 / (bx * by)) * GetTuning().col_fill / 2;
  const int64_t split = SplitCount(args.reduce_size, args.out_blocks, fill, int64_t{by} * GetTuning().col_min);
  if constexpr (kTallFits<Reducer, kVec>) {
    const int tall_bx = TallColumnLanes(groups, args.reduce_size, split, sms);
    if (tall_bx > 0) {
      args.out_blocks = CeilDiv(groups, tall_bx);
      return LaunchOutBlocks<&ReduceColTallKernel<Reducer, kVec>>("ReduceColTallKernel", args.out_blocks, 1,
                                                                 dim3(tall_bx, kTallThreads / tall_bx), stream,
                                                                 device, x, reducer, args, out);
    }
  }
  return LaunchSplit<&ReduceColKernel<Reducer, kVec>>("ReduceColKernel", split, dim3(bx, by), x, reducer, args, out,
                                                     stream, device);
}

// A contiguous [R, C] block reduced over its rows, C of a few elements: the narrow column
// kernel (ReduceNarrowColKernel). kVec > 1: x is aligned to a vector (C need not be a
// multiple of kVec).
template <typename Reducer, int kVec>
absl::Status RunNarrowCols(const CombinerIn<Reducer>* x, const Reducer& reducer, int64_t rows, int cols,
                           CombinerOut<Reducer>* out, const Stream& stream, int device) {
  using Acc = CombinerAcc<Reducer>;
  constexpr int kThreads = kNarrowThreads<Reducer, kVec>;
  NarrowArgs a;
  a.cols = cols;
  a.rows = rows;
  // The largest multiple of lcm(C, kVec) that kThreads vectors hold (the host checked it
  // holds one).
  const int l = cols / std::gcd(cols, kVec) * kVec;
  a.step = kThreads * kVec / l * l;
  a.steps = CeilDiv(rows * cols, a.step);
  // Enough blocks for one wave, each with at least narrow_steps steps (so the fold at its
  // end stays small beside its loads).
  const int64_t resident =
      ResidentBlocks(reinterpret_cast<const void*>(&ReduceNarrowColKernel<Reducer, kVec>), kThreads, device);
  const int64_t blocks =
      std::max<int64_t>(1, std::min(resident, a.steps / std::max(1, GetTuning().narrow_steps)));
  a.per_block = CeilDiv(a.steps, blocks);
  const int64_t grid = CeilDiv(a.steps, a.per_block);
  KPS_ASSIGN_OR_RETURN(const ScratchSpace scratch, SplitScratch<Acc>(grid, cols, 1, stream, device));
  return LaunchKernelOnDevice<&ReduceNarrowColKernel<Reducer, kVec>>(
      device, "ReduceNarrowColKernel", dim3(static_cast<unsigned>(grid)), dim3(kThreads), 0, stream.cuda_stream(), x,
      reducer, a, out, static_cast<Acc*>(scratch.data), scratch.tickets);
}

}  // namespace internal

// Runs `reducer` over x (its element pointer) as `plan` describes, writing plan.num_outputs
// contiguous values to `out`. The partial states of a split launch live in the stream's
// scratch (registry/scratch.h): no allocation on this path beyond the caller's output.
template <typename Reducer>
absl::Status LaunchReduce(const CombinerIn<Reducer>* x, const ReducePlan& plan, const Reducer& reducer,
                          CombinerOut<Reducer>* out, const Stream& stream) {
  using In = CombinerIn<Reducer>;
  constexpr int kVec = ::kps::details::MaxVectorSize<In>();
  const int64_t O = plan.num_outputs, R = plan.reduce_size;
  if (O == 0) return absl::OkStatus();
  // The current device, asked once for the launch's occupancy, scratch and function handle.
  int device = 0;
  KPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  if (R == 0) return internal::LaunchEmpty(reducer, O, out, stream.cuda_stream(), device);

  ReduceArgs args;
  args.out = DeviceWalk(plan.out);
  args.red = DeviceWalk(plan.red);
  args.num_outputs = O;
  args.reduce_size = R;
  const bool aligned = internal::Aligned(x, sizeof(In) * kVec);
  auto multiples = [](const DimWalk& w, int skip_last) {
    for (int d = 0; d < w.rank - skip_last; ++d) {
      if (w.strides[d] % kVec != 0) return false;
    }
    return true;
  };
  if (R == 1) {
    args.out_blocks = internal::CeilDiv(O, int64_t{kOneItems} * 256);
    return internal::LaunchOutBlocks<&ReduceOneKernel<Reducer>>("ReduceOneKernel", args.out_blocks, 1, dim3(256),
                                                                stream, device, x, reducer, args, out);
  }
  // Tiny rows back to back: staged through shared memory, a thread per row.
  if (plan.reduce_inner && plan.red.rank == 1 && plan.red.strides[0] == 1 && plan.out.rank == 1 &&
      plan.out.strides[0] == R && R * static_cast<int64_t>(sizeof(In)) <= internal::GetTuning().tiny_bytes &&
      R * static_cast<int64_t>(sizeof(In)) <= kTinyMaxBytes) {
    args.out_blocks = internal::CeilDiv(O, int64_t{kTinyRows});
    return internal::LaunchOutBlocks<&ReduceTinyRowKernel<Reducer>>("ReduceTinyRowKernel", args.out_blocks, 1,
                                                                    dim3(kTinyRows), stream, device, x, reducer,
                                                                    args, out);
  }
  if (plan.reduce_inner || O == 1) {
    // Contiguous rows take the vector kernels whatever their length and start (RowSpan).
    const bool contiguous = plan.red.rank == 1 && plan.red.strides[0] == 1;
    const bool vec = kVec > 1 && internal::Aligned(x, sizeof(In)) && contiguous && R / kVec < (int64_t{1} << 30);
    const bool whole = aligned && R % kVec == 0 && multiples(plan.out, 0);
    if (vec) return internal::RunRows<Reducer, kVec>(x, reducer, args, out, stream, device, whole);
    // Two reduced dims, the inner one contiguous whole vectors (dims 0 and 2 of [64, 256,
    // 1024]): runs of vectors, run_stride apart, in the row kernel's vector loop.
    if (kVec > 1 && aligned && plan.red.rank == 2 && plan.red.strides[1] == 1 && plan.red.sizes[1] % kVec == 0 &&
        plan.red.strides[0] % kVec == 0 && plan.red.strides[0] > 0 && multiples(plan.out, 0) &&
        R / kVec < (int64_t{1} << 30)) {
      args.run_vecs = plan.red.sizes[1] / kVec;
      args.run_stride = plan.red.strides[0];
      args.run_div = ::kps::details::FastDivMod(static_cast<uint32_t>(args.run_vecs));
      return internal::RunRows<Reducer, kVec>(x, reducer, args, out, stream, device, true);
    }
    return internal::RunRows<Reducer, 1>(x, reducer, args, out, stream, device, true);
  }
  // A contiguous [R, C] block over its rows, with rows of at most reduce.narrow bytes.
  if (plan.out.rank == 1 && plan.red.rank == 1 && plan.out.strides[0] == 1 && plan.red.strides[0] == O &&
      O * static_cast<int64_t>(sizeof(In)) <= internal::GetTuning().narrow_bytes &&
      O <= kNarrowThreads<Reducer, 1>) {
    const int cols = static_cast<int>(O);
    return kVec > 1 && aligned && cols / std::gcd(cols, kVec) * kVec <= kNarrowThreads<Reducer, kVec> * kVec
               ? internal::RunNarrowCols<Reducer, kVec>(x, reducer, R, cols, out, stream, device)
               : internal::RunNarrowCols<Reducer, 1>(x, reducer, R, cols, out, stream, device);
  }
  const bool vec = kVec > 1 && aligned && plan.out.rank >= 1 && plan.out.strides[plan.out.rank - 1] == 1 &&
                   plan.out.sizes[plan.out.rank - 1] % kVec == 0 && multiples(plan.out, 1) && plan.red.rank <= 1 &&
                   multiples(plan.red, 0);
  return vec ? internal::RunCols<Reducer, kVec>(x, reducer, args, out, stream, device)
             : internal::RunCols<Reducer, 1>(x, reducer, args, out, stream, device);
}

}  // namespace reduce
}  // namespace kps
