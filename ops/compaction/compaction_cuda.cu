// nonzero and masked_select on CUDA: a scan of the predicate, then a scatter, in order.
//
//   1. CountKernel: a block per tile of 4096 positions counts the kept ones;
//   2. ScanTilesKernel: one block turns the tile counts into int64 tile offsets (in a
//      fixed order: the result and its placement are the same on every run);
// (the block scans are kps::Cumsum with AddFunctor)
//   3. the total goes to the host, which allocates the output;
//   4. ScatterKernel: each tile recounts, ranks its kept positions with a block scan and
//      writes them at its offset (ReadDataIf / StoreSelected for masked_select's values).
// The predicate is read twice (it is 1 byte per element for a mask; ReadData), the values
// once, only where kept. The kernels are instantiated per predicate width (1, 2, 4, 8
// bytes): the test is on the element's bits.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "functors/binary.h"
#include "ops/compaction/compaction.h"
#include "registry/data_type.h"
#include "primitives/cumsum.cuh"
#include "primitives/datamover.cuh"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace compaction {
namespace {

constexpr int kThreads = 256;
constexpr int kItems = 16;  // consecutive positions per lane
constexpr int kTile = kThreads * kItems;
constexpr int kMaxRank = 8;

// This lane's kept flags (bit j: position tile_start + lane * kItems + j) for the tile:
// its kItems predicate elements of P (the predicate's width) loaded with the boundary
// ReadData (one scalar load per position below n, as every tile's count and rank need
// the same positions), tested on their bits.
template <typename P>
__device__ __forceinline__ unsigned LaneFlags(const P* pred, int64_t n, bool is_float) {
  const int64_t tile_start = static_cast<int64_t>(blockIdx.x) * kTile;
  const int num = static_cast<int>(min(n - tile_start, static_cast<int64_t>(kTile)));
  P bits[kItems];
  Init<P, kItems>(bits, P(0));  // positions past n: zero bits, never kept
  ReadData<P, kItems, 1, true>(bits, pred + tile_start, num);
  unsigned flags = 0;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    if (BitsNonzero(bits[j], sizeof(P), is_float)) flags |= 1u << j;
  }
  return flags;
}

template <typename P>
__global__ void __launch_bounds__(kThreads) CountKernel(const P* pred, int64_t n, bool is_float, int* tile_counts) {
  const int count = __popc(LaneFlags(pred, n, is_float));
  int prefix, total;
  Cumsum<int, int, 1, kThreads>(&prefix, &count, AddFunctor<int>(), /*exclusive=*/true, &total);
  if (threadIdx.x == 0) tile_counts[blockIdx.x] = total;
}

// One block: offsets[t] = sum of counts[0..t), offsets[tiles] = the total. Each lane
// sums a run of tiles, the block scans the run sums, each lane writes its run. The runs
// stay plain loops: their length (tiles / kThreads) has no compile-time bound, and a
// loop of block-wide ReadData + Cumsum steps over kThreads * NX counts would serialize a
// load latency and two barriers per step (hundreds of steps at 2^31 positions).
__global__ void __launch_bounds__(kThreads) ScanTilesKernel(const int* counts, int64_t tiles, int64_t* offsets) {
  const int64_t chunk = (tiles + kThreads - 1) / kThreads;
  const int64_t begin = min(tiles, static_cast<int64_t>(threadIdx.x) * chunk), end = min(tiles, begin + chunk);
  int64_t sum = 0;
  for (int64_t t = begin; t < end; ++t) sum += counts[t];
  int64_t before, total;
  Cumsum<int64_t, int64_t, 1, kThreads>(&before, &sum, AddFunctor<int64_t>(), /*exclusive=*/true, &total);
  for (int64_t t = begin; t < end; ++t) {
    offsets[t] = before;
    before += counts[t];
  }
  if (threadIdx.x == 0) offsets[tiles] = total;
}

struct Unravel {
  int rank;
  int64_t dims[kMaxRank];
};

// masked_select's values of this lane's kept positions, read (ReadDataIf: only the kept
// ones) and written in order from rank r on (StoreSelected).
template <typename V>
__device__ __forceinline__ void ScatterValues(const void* values, int64_t tile_start, unsigned flags, void* out,
                                              int64_t r) {
  V v[kItems];
  ReadDataIf<V, kItems>(v, static_cast<const V*>(values) + tile_start, flags);
  StoreSelected<V, kItems>(static_cast<V*>(out) + r, v, flags);
}

template <typename P>
__global__ void __launch_bounds__(kThreads)
    ScatterKernel(const P* pred, int64_t n, bool is_float, const int64_t* offsets, const void* values, int value_size,
                  Unravel u, void* out) {
  const unsigned flags = LaneFlags(pred, n, is_float);
  const int count = __popc(flags);
  int prefix;
  Cumsum<int, int, 1, kThreads>(&prefix, &count, AddFunctor<int>(), /*exclusive=*/true, nullptr);
  int64_t r = offsets[blockIdx.x] + prefix;
  const int64_t tile_start = static_cast<int64_t>(blockIdx.x) * kTile;
  if (values != nullptr) {
    switch (value_size) {  // uniform over the grid
      case 1:
        ScatterValues<uint8_t>(values, tile_start, flags, out, r);
        break;
      case 2:
        ScatterValues<uint16_t>(values, tile_start, flags, out, r);
        break;
      case 4:
        ScatterValues<uint32_t>(values, tile_start, flags, out, r);
        break;
      default:
        ScatterValues<uint64_t>(values, tile_start, flags, out, r);
        break;
    }
    return;
  }
  // nonzero: the coordinates of each kept position, computed here, rank int64s a row.
  const int64_t first = tile_start + threadIdx.x * kItems;
#pragma unroll
  for (int j = 0; j < kItems; ++j) {
    if (!(flags & (1u << j))) continue;
    const int64_t e = first + j;
    int64_t* coords = static_cast<int64_t*>(out) + r * u.rank;
    int64_t rest = e;
    for (int d = u.rank - 1; d >= 0; --d) {
      const int64_t q = rest / u.dims[d];
      coords[d] = rest - q * u.dims[d];
      rest = q;
    }
    ++r;
  }
}

// Steps 1 to 4 for a predicate of element type P (its width: the test is on bits).
template <typename P>
absl::Status CompactWithPredicate(const CompactArgs& a, const Unravel& u, int64_t tiles, int* counts,
                                  int64_t* offsets, const std::function<absl::StatusOr<void*>(int64_t)>& allocate,
                                  cudaStream_t s) {
  const P* pred = static_cast<const P*>(a.pred);
  KPS_RETURN_IF_ERROR(LaunchKernel<&CountKernel<P>>("CountKernel", static_cast<unsigned>(tiles), kThreads, 0, s, pred,
                                                    a.n, a.pred_float, counts));
  KPS_RETURN_IF_ERROR(LaunchKernel<&ScanTilesKernel>("ScanTilesKernel", 1, kThreads, 0, s, counts, tiles, offsets));
  int64_t total = 0;
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&total, offsets + tiles, sizeof(total), cudaMemcpyDeviceToHost, s),
                           "cudaMemcpyAsync");
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  KPS_ASSIGN_OR_RETURN(void* out, allocate(total));
  if (total == 0) return absl::OkStatus();
  KPS_RETURN_IF_ERROR(LaunchKernel<&ScatterKernel<P>>("ScatterKernel", static_cast<unsigned>(tiles), kThreads, 0, s,
                                                      pred, a.n, a.pred_float, offsets, a.values, a.value_size, u,
                                                      out));
  return absl::OkStatus();
}

}  // namespace

absl::Status CompactCuda(const CompactArgs& a, const std::function<absl::StatusOr<void*>(int64_t)>& allocate,
                         const Stream& stream) {
  cudaStream_t s = stream.cuda_stream();
  const int64_t tiles = (a.n + kTile - 1) / kTile;
  if (tiles == 0) return allocate(0).status();
  if (tiles > int64_t{0x7fffffff}) {
    return absl::InvalidArgumentError(absl::StrCat("compaction: ", a.n, " elements exceed the CUDA grid"));
  }
  Unravel u{static_cast<int>(a.dims.size()), {}};
  if (a.values == nullptr && u.rank > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat("nonzero: rank ", u.rank, " exceeds ", kMaxRank));
  }
  for (int d = 0; d < u.rank && a.values == nullptr; ++d) u.dims[d] = a.dims[d];
  const size_t count_bytes = (static_cast<size_t>(tiles) * sizeof(int) + 255) / 256 * 256;
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> scratch,
                       Storage::Allocate(count_bytes + static_cast<size_t>(tiles + 1) * sizeof(int64_t),
                                         DeviceType::kCuda, stream));
  int* counts = static_cast<int*>(scratch->data());
  int64_t* offsets = reinterpret_cast<int64_t*>(static_cast<char*>(scratch->data()) + count_bytes);
  switch (a.pred_size) {
    case 1:
      return CompactWithPredicate<uint8_t>(a, u, tiles, counts, offsets, allocate, s);
    case 2:
      return CompactWithPredicate<uint16_t>(a, u, tiles, counts, offsets, allocate, s);
    case 4:
      return CompactWithPredicate<uint32_t>(a, u, tiles, counts, offsets, allocate, s);
    default:
      return CompactWithPredicate<uint64_t>(a, u, tiles, counts, offsets, allocate, s);
  }
}

KPS_REGISTER_DEVICE_KERNELS_BY_WIDTH("nonzero", NonzeroKernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS_BY_WIDTH("masked_select", MaskedSelectKernel, KPS_ALL_CPP_TYPES);

}  // namespace compaction
}  // namespace kps
