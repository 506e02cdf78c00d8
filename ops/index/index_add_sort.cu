// The dtype-independent CUDA parts of index_add: the index check and key preparation,
// the stable (CUB) radix sort of (index, position) pairs, the run bounds of each
// destination, and the read-back of the device-side index check.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include <cub/device/device_radix_sort.cuh>

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
__global__ void __launch_bounds__(kBlock) IndexPrepKernel(const IndexT* __restrict__ index, int64_t count,
                                                         int64_t dim_size, uint32_t* __restrict__ keys,
                                                         uint32_t* __restrict__ positions,
                                                         unsigned long long* first_bad) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * kBlock) {
    const int64_t v = static_cast<int64_t>(index[i]);
    const bool ok = v >= 0 && v < dim_size;
    if (!ok) atomicMin(first_bad, static_cast<unsigned long long>(i));
    keys[i] = ok ? static_cast<uint32_t>(v) : 0xFFFFFFFFu;
    if (positions != nullptr) positions[i] = static_cast<uint32_t>(i);
  }
}

__global__ void __launch_bounds__(kBlock) SegmentBoundsKernel(const uint32_t* __restrict__ keys, int count,
                                                             uint32_t dim_size, uint32_t* __restrict__ start,
                                                             uint32_t* __restrict__ end) {
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; j < count;
       j += static_cast<int64_t>(gridDim.x) * kBlock) {
    const uint32_t k = keys[j];
    if (k >= dim_size) continue;  // a bad index: the call fails, and nothing may be written out of bounds
    if (j == 0 || keys[j - 1] != k) start[k] = static_cast<uint32_t>(j);
    if (j == count - 1 || keys[j + 1] != k) end[k] = static_cast<uint32_t>(j + 1);
  }
}

}  // namespace

absl::Status LaunchIndexPrep(const Tensor& index, int64_t count, int64_t dim_size, uint32_t* keys,
                             uint32_t* positions, unsigned long long* first_bad, cudaStream_t stream) {
  if (index.dtype() == DataType::kInt32) {
    IndexPrepKernel<int32_t><<<GridFor(count), kBlock, 0, stream>>>(index.data<int32_t>(), count, dim_size, keys,
                                                                   positions, first_bad);
  } else {
    IndexPrepKernel<int64_t><<<GridFor(count), kBlock, 0, stream>>>(index.data<int64_t>(), count, dim_size, keys,
                                                                   positions, first_bad);
  }
  KPS_RETURN_IF_LAUNCH_ERROR("IndexPrepKernel");
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

absl::Status LaunchSegmentBounds(const uint32_t* sorted_keys, int count, uint32_t dim_size, uint32_t* start,
                                 uint32_t* end, cudaStream_t stream) {
  SegmentBoundsKernel<<<GridFor(count), kBlock, 0, stream>>>(sorted_keys, count, dim_size, start, end);
  KPS_RETURN_IF_LAUNCH_ERROR("SegmentBoundsKernel");
  return absl::OkStatus();
}

absl::Status CheckIndexStatus(const CallView& call, const Tensor& index, const unsigned long long* first_bad,
                              const IndexAddGeometry& g, cudaStream_t stream) {
  unsigned long long bad = kNoBadIndex;
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&bad, first_bad, sizeof(bad), cudaMemcpyDeviceToHost, stream),
                           "cudaMemcpyAsync (index_add's index check)");
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "cudaStreamSynchronize (index_add's index check)");
  if (bad == kNoBadIndex) return absl::OkStatus();
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
