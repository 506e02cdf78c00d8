// The dtype-independent CUDA parts of index_add: the index check fused with the count
// of sources per destination, the scan of those counts (CUB) into run starts, the
// scatter of positions into runs, the stable (CUB) radix sort of (index, position) pairs
// for long runs, and the read-back of the device-side flags.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "ops/index/index_add_ops.h"
#include "registry/status.h"

namespace kps {
namespace indexing {
namespace {

constexpr int kBlock = 256;

unsigned GridFor(int64_t work) {
  return static_cast<unsigned>(std::min<int64_t>((work + kBlock - 1) / kBlock, int64_t{1} << 20));
}

template <typename IndexT>
__global__ void __launch_bounds__(kBlock) IndexCountKernel(const IndexT* __restrict__ index, int64_t count,
                                                          int64_t dim_size, uint32_t* __restrict__ keys,
                                                          uint32_t* __restrict__ slot, uint32_t* counts,
                                                          uint32_t long_limit, IndexFlags* flags) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    const int64_t v = static_cast<int64_t>(index[i]);
    if (v < 0 || v >= dim_size) {
      atomicMax(&flags->bad, ~static_cast<unsigned long long>(i));
      keys[i] = 0xFFFFFFFFu;
      continue;
    }
    keys[i] = static_cast<uint32_t>(v);
    if (counts != nullptr) {
      const uint32_t s = atomicAdd(counts + v, 1u);
      slot[i] = s;
      if (s == long_limit) flags->long_run = 1;  // exactly one arrival per destination sees it
    }
  }
}

__global__ void __launch_bounds__(kBlock) ScatterPositionsKernel(const uint32_t* __restrict__ keys,
                                                                const uint32_t* __restrict__ slot, int count,
                                                                const uint32_t* __restrict__ start,
                                                                uint32_t* __restrict__ positions) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    const uint32_t k = keys[i];
    if (k != 0xFFFFFFFFu) positions[start[k] + slot[i]] = static_cast<uint32_t>(i);
  }
}

__global__ void __launch_bounds__(kBlock) IotaKernel(uint32_t* __restrict__ positions, int count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    positions[i] = static_cast<uint32_t>(i);
  }
}

}  // namespace

absl::Status LaunchIndexCount(const Tensor& index, int64_t count, int64_t dim_size, uint32_t* keys, uint32_t* slot,
                              uint32_t* counts, uint32_t long_limit, IndexFlags* flags, cudaStream_t stream) {
  if (index.dtype() == DataType::kInt32) {
    IndexCountKernel<int32_t><<<GridFor(count), kBlock, 0, stream>>>(index.data<int32_t>(), count, dim_size, keys,
                                                                    slot, counts, long_limit, flags);
  } else {
    IndexCountKernel<int64_t><<<GridFor(count), kBlock, 0, stream>>>(index.data<int64_t>(), count, dim_size, keys,
                                                                    slot, counts, long_limit, flags);
  }
  KPS_RETURN_IF_LAUNCH_ERROR("IndexCountKernel");
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
  ScatterPositionsKernel<<<GridFor(count), kBlock, 0, stream>>>(keys, slot, count, start, positions);
  KPS_RETURN_IF_LAUNCH_ERROR("ScatterPositionsKernel");
  return absl::OkStatus();
}

absl::Status LaunchIota(uint32_t* positions, int count, cudaStream_t stream) {
  IotaKernel<<<GridFor(count), kBlock, 0, stream>>>(positions, count);
  KPS_RETURN_IF_LAUNCH_ERROR("IotaKernel");
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

absl::StatusOr<bool> ReadIndexFlags(const CallView& call, const Tensor& index, const IndexFlags* flags,
                                    const IndexAddGeometry& g, cudaStream_t stream) {
  IndexFlags host{};
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&host, flags, sizeof(host), cudaMemcpyDeviceToHost, stream),
                           "cudaMemcpyAsync (index_add's index check)");
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "cudaStreamSynchronize (index_add's index check)");
  if (host.bad == 0) return host.long_run != 0;
  const unsigned long long bad = ~host.bad;
  const size_t elem = DataTypeSize(index.dtype());
  int64_t value = 0;
  int32_t value32 = 0;
  void* dst = elem == 4 ? static_cast<void*>(&value32) : static_cast<void*>(&value);
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, static_cast<const char*>(index.raw_data()) + bad * elem, elem,
                                      cudaMemcpyDeviceToHost),
                           "cudaMemcpy (index_add's bad index)");
  if (elem == 4) value = value32;
  return BadIndexError(call, static_cast<int64_t>(bad), value, g);
}

}  // namespace indexing
}  // namespace kps
