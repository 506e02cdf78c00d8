// The dtype-independent CUDA parts of index_add: the index check fused with the count
// of sources per destination, the scan of those counts (CUB) into run starts, the
// scatter of positions into runs, the stable (CUB) radix sort of (index, position) pairs
// for long runs, and the post of the device-side flags to host-mapped memory that the
// call waits for.
//
// The kernels' tiles (a thread per element: NX = 1) move through ReadData and
// WriteData, the iota through InitWithDataIndex; the loads and stores through an index
// (start[k], positions[...], a run's positions) and the atomics are kernel logic. The
// scan and the radix sort stay CUB device-wide calls: KPS's Cumsum and Sort are
// block-wide primitives with no device-wide form.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "ops/common/element_bits.cuh"
#include "ops/index/index_add_ops.h"
#include "primitives/datamover.cuh"
#include "registry/cuda_launch.h"
#include "registry/status.h"

namespace kps {
namespace indexing {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // grid-stride loops take the rest

template <typename IndexT>
__global__ void __launch_bounds__(kBlock) IndexCountKernel(const IndexT* __restrict__ index, int64_t count,
                                                          int64_t dim_size, uint32_t* __restrict__ keys,
                                                          uint32_t* __restrict__ slot, uint32_t* counts,
                                                          uint32_t long_limit, IndexFlags* flags) {
  for (int64_t i = static_cast<int64_t>(KPS_BLOCK_ID_X) * kBlock + KPS_THREAD_ID_X; i < count;
       i += static_cast<int64_t>(KPS_GRID_NUM_X) * kBlock) {
    const int64_t tile = i - KPS_THREAD_ID_X;
    IndexT raw[1];
    ReadData<IndexT, 1, 1, false>(raw, index + tile, 1);
    const int64_t v = static_cast<int64_t>(raw[0]);
    const bool bad = v < 0 || v >= dim_size;
    if (bad) atomicMax(&flags->bad, ~static_cast<unsigned long long>(i));
    const uint32_t key[1] = {bad ? 0xFFFFFFFFu : static_cast<uint32_t>(v)};
    WriteData<uint32_t, 1, 1, false>(keys + tile, key, 1);
    if (bad || counts == nullptr) continue;
    const uint32_t s[1] = {atomicAdd(counts + v, 1u)};
    WriteData<uint32_t, 1, 1, false>(slot + tile, s, 1);
    if (s[0] == long_limit) flags->long_run = 1;  // exactly one arrival per destination sees it
  }
}

__global__ void __launch_bounds__(kBlock) ScatterPositionsKernel(const uint32_t* __restrict__ keys,
                                                                const uint32_t* __restrict__ slot, int count,
                                                                const uint32_t* __restrict__ start,
                                                                uint32_t* __restrict__ positions) {
  for (int64_t i = static_cast<int64_t>(KPS_BLOCK_ID_X) * kBlock + KPS_THREAD_ID_X; i < count;
       i += static_cast<int64_t>(KPS_GRID_NUM_X) * kBlock) {
    const int64_t tile = i - KPS_THREAD_ID_X;
    uint32_t k[1], s[1];
    ReadData<uint32_t, 1, 1, false>(k, keys + tile, 1);
    if (k[0] == 0xFFFFFFFFu) continue;
    ReadData<uint32_t, 1, 1, false>(s, slot + tile, 1);
    positions[start[k[0]] + s[0]] = static_cast<uint32_t>(i);  // a scatter: kernel logic
  }
}

// A thread per destination: a run of 2 to kShortRun positions is put in ascending order
// (an insertion sort in registers; longer runs are left to the radix sort).
__global__ void __launch_bounds__(kBlock) OrderShortRunsKernel(const uint32_t* __restrict__ start, int64_t dim_size,
                                                              uint32_t* __restrict__ positions,
                                                              const IndexFlags* flags) {
  if (flags->bad != 0) return;
  for (int64_t r = static_cast<int64_t>(KPS_BLOCK_ID_X) * kBlock + KPS_THREAD_ID_X; r < dim_size;
       r += static_cast<int64_t>(KPS_GRID_NUM_X) * kBlock) {
    // Run r is [start[r], start[r + 1]): the tile of starts and the same tile one further.
    const int64_t tile = r - KPS_THREAD_ID_X;
    uint32_t lo[1], hi[1];
    ReadData<uint32_t, 1, 1, false>(lo, start + tile, 1);
    ReadData<uint32_t, 1, 1, false>(hi, start + tile + 1, 1);
    const uint32_t s = lo[0], n = hi[0] - s;
    if (n < 2 || n > kShortRun) continue;
    uint32_t run[kShortRun];
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t v = positions[s + j];
      uint32_t k = j;
      for (; k > 0 && run[k - 1] > v; --k) run[k] = run[k - 1];
      run[k] = v;
    }
    for (uint32_t j = 0; j < n; ++j) positions[s + j] = run[j];
  }
}

__global__ void PostFlagsKernel(const IndexFlags* flags, FlagMailbox* box, unsigned long long token) {
  box->bad = flags->bad;
  box->long_run = flags->long_run;
  __threadfence_system();  // the fields reach the host before the token
  box->token = token;
}

// Slots of host-mapped pinned memory, 64 per allocation, reused and never freed (a
// process holds as many as calls ever ran at once).
struct MailboxPool {
  std::mutex mu;
  std::vector<FlagPost> free;
};

MailboxPool& Pool() {
  static MailboxPool* pool = new MailboxPool;
  return *pool;
}

absl::StatusOr<FlagPost> TakeMailbox() {
  MailboxPool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mu);
  if (pool.free.empty()) {
    constexpr int kSlots = 64;
    void* host = nullptr;
    KPS_CUDA_RETURN_IF_ERROR(
        cudaHostAlloc(&host, kSlots * sizeof(FlagMailbox), cudaHostAllocMapped | cudaHostAllocPortable),
        "cudaHostAlloc (index_add's flag slots)");
    void* device = nullptr;
    KPS_CUDA_RETURN_IF_ERROR(cudaHostGetDevicePointer(&device, host, 0),
                             "cudaHostGetDevicePointer (index_add's flag slots)");
    for (int i = 0; i < kSlots; ++i) {
      FlagPost p;
      p.host = static_cast<FlagMailbox*>(host) + i;
      p.device = static_cast<FlagMailbox*>(device) + i;
      p.host->token = 0;
      pool.free.push_back(p);
    }
  }
  FlagPost p = pool.free.back();
  pool.free.pop_back();
  return p;
}

void GiveBackMailbox(const FlagPost& p) {
  MailboxPool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mu);
  pool.free.push_back(p);
}

__global__ void __launch_bounds__(kBlock) IotaKernel(uint32_t* __restrict__ positions, int count) {
  for (int64_t tile = static_cast<int64_t>(KPS_BLOCK_ID_X) * kBlock; tile < count;
       tile += static_cast<int64_t>(KPS_GRID_NUM_X) * kBlock) {
    uint32_t v[1];
    InitWithDataIndex<uint32_t, 1>(v, tile);
    WriteData<uint32_t, 1, 1, true>(positions + tile, v, static_cast<int>(count - tile));
  }
}

}  // namespace

absl::Status LaunchIndexCount(const Tensor& index, int64_t count, int64_t dim_size, uint32_t* keys, uint32_t* slot,
                              uint32_t* counts, uint32_t long_limit, IndexFlags* flags, cudaStream_t stream) {
  if (index.dtype() == DataType::kInt32) {
    KPS_RETURN_IF_ERROR(LaunchKernel<&IndexCountKernel<int32_t>>("IndexCountKernel",
                                                                 BlocksFor(count, kBlock, kMaxBlocks), kBlock, 0,
                                                                 stream, index.data<int32_t>(), count, dim_size, keys,
                                                                 slot, counts, long_limit, flags));
  } else {
    KPS_RETURN_IF_ERROR(LaunchKernel<&IndexCountKernel<int64_t>>("IndexCountKernel",
                                                                 BlocksFor(count, kBlock, kMaxBlocks), kBlock, 0,
                                                                 stream, index.data<int64_t>(), count, dim_size, keys,
                                                                 slot, counts, long_limit, flags));
  }
  return absl::OkStatus();
}

absl::Status ScanRunCounts(void* temp, size_t& temp_bytes, const uint32_t* counts, uint32_t* start, int64_t n,
                           cudaStream_t stream) {
  KPS_CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, counts, start, n, stream),
                           "cub::DeviceScan::ExclusiveSum (index_add's run starts)");
  return absl::OkStatus();
}

absl::Status LaunchScatterPositions(const uint32_t* keys, const uint32_t* slot, int count, const uint32_t* start,
                                    uint32_t* positions, cudaStream_t stream) {
  KPS_RETURN_IF_ERROR(LaunchKernel<&ScatterPositionsKernel>("ScatterPositionsKernel",
                                                            BlocksFor(count, kBlock, kMaxBlocks), kBlock, 0, stream,
                                                            keys, slot, count, start, positions));
  return absl::OkStatus();
}

absl::Status LaunchOrderShortRuns(const uint32_t* start, int64_t dim_size, uint32_t* positions,
                                  const IndexFlags* flags, cudaStream_t stream) {
  KPS_RETURN_IF_ERROR(LaunchKernel<&OrderShortRunsKernel>("OrderShortRunsKernel",
                                                          BlocksFor(dim_size, kBlock, kMaxBlocks), kBlock, 0, stream,
                                                          start, dim_size, positions, flags));
  return absl::OkStatus();
}

absl::Status LaunchIota(uint32_t* positions, int count, cudaStream_t stream) {
  KPS_RETURN_IF_ERROR(LaunchKernel<&IotaKernel>("IotaKernel", BlocksFor(count, kBlock, kMaxBlocks), kBlock, 0, stream,
                                                positions, count));
  return absl::OkStatus();
}

absl::StatusOr<size_t> SortIndexPairsTempBytes(int count, int end_bit) {
  size_t bytes = 0;
  KPS_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const uint32_t*>(nullptr),
                                                           static_cast<uint32_t*>(nullptr),
                                                           static_cast<const uint32_t*>(nullptr),
                                                           static_cast<uint32_t*>(nullptr), count, 0, end_bit),
                           "cub::DeviceRadixSort::SortPairs (size query)");
  return bytes;
}

absl::Status SortIndexPairs(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out,
                            const uint32_t* positions_in, uint32_t* positions_out, int count, int end_bit,
                            cudaStream_t stream) {
  KPS_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, positions_in,
                                                           positions_out, count, 0, end_bit, stream),
                           "cub::DeviceRadixSort::SortPairs");
  return absl::OkStatus();
}

absl::StatusOr<FlagPost> PostIndexFlags(const IndexFlags* flags, cudaStream_t stream) {
  static std::atomic<unsigned long long> next_token{1};
  KPS_ASSIGN_OR_RETURN(FlagPost post, TakeMailbox());
  post.token = next_token.fetch_add(1, std::memory_order_relaxed);
  KPS_RETURN_IF_ERROR(
      LaunchKernel<&PostFlagsKernel>("PostFlagsKernel", 1, 1, 0, stream, flags, post.device, post.token));
  return post;
}

absl::StatusOr<bool> AwaitIndexFlags(const CallView& call, const Tensor& index, const FlagPost& post,
                                     const IndexAddGeometry& g, cudaStream_t stream) {
  for (int spin = 1; post.host->token != post.token; ++spin) {
    if (spin % 256 != 0) continue;
    // Now and then ask whether the stream has drained (or failed) without the token.
    const cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaErrorNotReady) continue;
    if (post.host->token == post.token) break;
    KPS_CUDA_RETURN_IF_ERROR(q, "cudaStreamQuery (index_add's index check)");
    return absl::InternalError("index_add: the stream drained without posting the index check");
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  const unsigned long long bad_flag = post.host->bad;
  const bool long_run = post.host->long_run != 0;
  GiveBackMailbox(post);
  if (bad_flag == 0) return long_run;
  const unsigned long long bad = ~bad_flag;
  const size_t elem = DataTypeSize(index.dtype());
  int64_t value = 0;
  int32_t value32 = 0;
  void* dst = elem == 4 ? static_cast<void*>(&value32) : static_cast<void*>(&value);
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, static_cast<const char*>(index.raw_data()) + bad * elem, elem,
                                           cudaMemcpyDeviceToHost, stream),
                           "cudaMemcpyAsync (index_add's bad index)");
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "cudaStreamSynchronize (index_add's bad index)");
  if (elem == 4) value = value32;
  return BadIndexError(call, static_cast<int64_t>(bad), value, g);
}

}  // namespace indexing
}  // namespace kps
