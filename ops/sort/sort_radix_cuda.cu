// Lines longer than a block can sort, by radix sort over the whole device:
//   - one line of 1- to 4-byte keys (fewer than 2^28): KPS's onesweep (sort_onesweep.cuh),
//     which reads x and writes the outputs itself;
//   - a few long lines (SortsLineByLine: at most sort.per_line of them, each at least
//     sort.per_line_keys times the line count long): every line sorted on its own by the
//     device-wide sort, one after the other, so each line gets the whole GPU: the onesweep
//     per line where its keys are 1 to 4 bytes and the lines contiguous (inner == 1), else
//     CUB's device radix sort per line between one encode and one decode of all lines;
//   - otherwise (many lines, or lines too short for the per-line launches to pay off):
//     CUB's segmented radix sort over all lines at once, which gives each line (segment)
//     one block: with fewer lines than SMs most of the GPU idles ([4, 2^22] float32: 28.5
//     ms, 4 SMs busy), but many lines fill it and one launch serves them all;
//   - one line of more than 2^31 - 1 elements (LongLineSort): CUB's device radix sort with
//     a 64-bit item count and int64 positions. Several lines that long are Unimplemented.
// CUB's sorts run over KPS's radix keys (sort_keys.cuh) with the line position as payload
// (int32, int64 past 2^31 - 1), as follows.
//
// Why CUB here: a long sort is bound by its passes over memory, and CUB's onesweep
// (one pass per 8-bit digit, decoupled look-back on the digit offsets) is the fastest
// published GPU radix sort; it ships with the toolkit (no new dependency). KPS adds what
// CUB's own float ordering lacks: NaN as the largest value whatever its sign, -0.0 equal
// to +0.0, descending order as complemented keys so ties stay in position order (CUB's
// SortPairsDescending would also keep them stable, but the key transform is needed
// anyway), and the dtype-generic encode and decode around it (two streaming passes).
// Only the key's significant bits are sorted: 16-bit dtypes take 2 passes, not 4.
//
// CUB stays for these cases because KPS has no device-wide sort primitive: its
// primitives are block-level, and a sort of several lines (segments) or of 64-bit keys
// over the whole device needs CUB's dispatch (tile sizes, look-back, segment offsets).
// The onesweep path is built from KPS's radix primitives
// (primitives/radix.cuh). The encode and decode around CUB's sort move their contiguous
// keys, positions and line offsets with kps::ReadData/WriteData/InitWithDataIndex; the
// element reads and writes through LineIndexer (a line's elements are `inner` apart) are
// gathers and scatters, which no primitive covers.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "ops/sort/sort_cuda.h"
#include "ops/sort/sort_keys.cuh"
#include "ops/sort/sort_onesweep.cuh"
#include "primitives/datamover.cuh"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/device.h"
#include "registry/status.h"
#include "registry/tuning.h"

namespace kps {
namespace sort {
namespace {

constexpr int kThreads = 256;

// Element e of the line-major key array (line = e / length, position e % length) and
// its place in the [outer, length, inner] tensor.
struct LineIndexer {
  int64_t length, inner;
  __device__ int64_t Offset(int64_t e) const {
    const int64_t line = e / length;
    const int64_t p = e - line * length;
    const int64_t o = line / inner;
    return (o * length + p) * inner + (line - o * inner);
  }
};

// The grid strides over block-sized tiles of one element per thread; a tile starts at
// e0 and holds `num` elements.
__device__ __forceinline__ int TileCount(int64_t n, int64_t e0) {
  return n - e0 < static_cast<int64_t>(blockDim.x) ? static_cast<int>(n - e0) : static_cast<int>(blockDim.x);
}

// P, the position type: int for lines of up to 2^31 - 1 elements, int64_t beyond.
template <typename K, typename P>
__global__ void EncodeKernel(const void* x, DataType dtype, int64_t n, LineIndexer ix, K flip, K* keys, P* pos) {
  for (int64_t e0 = blockIdx.x * static_cast<int64_t>(blockDim.x); e0 < n;
       e0 += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int num = TileCount(n, e0);
    const int64_t e = e0 + threadIdx.x;
    K key[1] = {K(0)};
    P p[1] = {0};
    if (e < n) {
      const int64_t src = ix.inner == 1 ? e : ix.Offset(e);
      key[0] = LoadKey<K>(x, src, dtype) ^ flip;
      p[0] = static_cast<P>(n == ix.length ? e : e % ix.length);  // one line: no division
    }
    WriteData<K, 1, 1, true>(keys + e0, key, num);
    WriteData<P, 1, 1, true>(pos + e0, p, num);
  }
}

// Values come back from the keys where a key names one value; NaNs and zeros (whose
// payload or sign the key dropped) are read from x at their source position. Each
// thread reads keys[e] and pos[e] before it writes element e of the outputs and touches
// no other element of them, so `keys` may be `values` and `pos` may be `indices`.
template <typename K, typename P>
__global__ void DecodeKernel(const void* x, DataType dtype, int elem_size, int64_t n, LineIndexer ix, K flip,
                             const K* keys, const P* pos, void* values, int64_t* indices) {
  for (int64_t e0 = blockIdx.x * static_cast<int64_t>(blockDim.x); e0 < n;
       e0 += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int num = TileCount(n, e0);
    const int64_t e = e0 + threadIdx.x;
    K key[1];
    P pos_e[1];
    ReadData<K, 1, 1, true>(key, keys + e0, num);
    ReadData<P, 1, 1, true>(pos_e, pos + e0, num);
    if (e >= n) continue;
    const int64_t dst = ix.inner == 1 ? e : ix.Offset(e);
    const int64_t p = pos_e[0];
    if (indices != nullptr) indices[dst] = p;
    if (values != nullptr) {
      uint64_t bits;
      if (KeyToBits<K>(key[0] ^ flip, dtype, &bits)) {
        StoreBits(values, dst, bits, elem_size);
      } else {
        const int64_t line_start = e - e % ix.length;  // the source: same line, position p
        const int64_t src = ix.inner == 1 ? line_start + p : ix.Offset(line_start + p);
        CopyElement(values, dst, x, src, elem_size);
      }
    }
  }
}

// offsets[j] = j * length for j <= count: where each line (CUB's segment) starts.
__global__ void LineOffsetsKernel(int64_t count, int length, int* offsets) {
  for (int64_t j0 = blockIdx.x * static_cast<int64_t>(blockDim.x); j0 <= count;
       j0 += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t j[1];
    InitWithDataIndex<int64_t, 1>(j, j0);
    const int off[1] = {static_cast<int>(j[0] * length)};
    WriteData<int, 1, 1, true>(offsets + j0, off, TileCount(count + 1, j0));
  }
}

// CUB's radix sort of every line between one encode and one decode pass over all lines:
// a device-wide sort per line when `per_line` (or there is one line), else one segmented
// sort (a block per line) of batches of whole lines.
template <typename K>
absl::Status RadixSort(const Lines& x, bool descending, bool per_line, void* values, int64_t* indices,
                       const Stream& stream) {
  cudaStream_t s = stream.cuda_stream();
  const int bits = KeyBits(x.dtype);
  const K flip = descending ? KeyMask<K>(bits) : K(0);
  const int64_t n = x.count() * x.length;
  const bool segmented = !per_line && x.count() > 1;
  // Segments of whole lines, at most 2^31 - 1 elements each (CUB's segmented count is an int).
  const int64_t lines_per_batch = std::min<int64_t>(x.count(), std::numeric_limits<int>::max() / x.length);
  const LineIndexer ix{x.length, x.inner};

  // Scratch: keys and positions twice (CUB's ping-pong), the line offsets (segmented
  // only), CUB's own (sized for one line, or for one batch of lines).
  size_t cub_bytes = 0;
  const int64_t batch_n = lines_per_batch * x.length;
  if (!segmented) {
    KPS_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(nullptr, cub_bytes, static_cast<const K*>(nullptr),
                                                             static_cast<K*>(nullptr), static_cast<const int*>(nullptr),
                                                             static_cast<int*>(nullptr), static_cast<int>(x.length), 0,
                                                             bits, s),
                             "cub::DeviceRadixSort::SortPairs");
  } else {
    KPS_CUDA_RETURN_IF_ERROR(cub::DeviceSegmentedRadixSort::SortPairs(
                                 nullptr, cub_bytes, static_cast<const K*>(nullptr), static_cast<K*>(nullptr),
                                 static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
                                 static_cast<int>(batch_n), static_cast<int>(lines_per_batch),
                                 static_cast<const int*>(nullptr), static_cast<const int*>(nullptr), 0, bits, s),
                             "cub::DeviceSegmentedRadixSort::SortPairs");
  }
  auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t key_bytes = align(static_cast<size_t>(n) * sizeof(K));
  const size_t pos_bytes = align(static_cast<size_t>(n) * sizeof(int));
  const size_t off_bytes = segmented ? align(static_cast<size_t>(lines_per_batch + 1) * sizeof(int)) : 0;
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> scratch,
                       Storage::Allocate(2 * key_bytes + 2 * pos_bytes + off_bytes + cub_bytes, DeviceType::kCuda,
                                         stream));
  char* p = static_cast<char*>(scratch->data());
  K* keys_in = reinterpret_cast<K*>(p);
  K* keys_out = reinterpret_cast<K*>(p + key_bytes);
  int* pos_in = reinterpret_cast<int*>(p + 2 * key_bytes);
  int* pos_out = reinterpret_cast<int*>(p + 2 * key_bytes + pos_bytes);
  int* offsets = reinterpret_cast<int*>(p + 2 * key_bytes + 2 * pos_bytes);
  void* cub_tmp = p + 2 * key_bytes + 2 * pos_bytes + off_bytes;

  KPS_RETURN_IF_ERROR((LaunchKernel<&EncodeKernel<K, int>>("EncodeKernel", GridStrideBlocks(n, kThreads), kThreads, 0,
                                                           s, x.data, x.dtype, n, ix, flip, keys_in, pos_in)));
  if (!segmented) {
    // The encoded lines lie one after the other, each with its positions 0..length-1, so
    // line j is the contiguous run at j * length; the sorts run in stream order and share
    // CUB's scratch.
    for (int64_t line = 0; line < x.count(); ++line) {
      const int64_t at = line * x.length;
      KPS_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(cub_tmp, cub_bytes, keys_in + at, keys_out + at,
                                                               pos_in + at, pos_out + at, static_cast<int>(x.length),
                                                               0, bits, s),
                               "cub::DeviceRadixSort::SortPairs");
    }
  } else {
    KPS_RETURN_IF_ERROR(LaunchKernel<&LineOffsetsKernel>("LineOffsetsKernel",
                                                         GridStrideBlocks(lines_per_batch + 1, kThreads), kThreads, 0,
                                                         s, lines_per_batch, static_cast<int>(x.length), offsets));
    for (int64_t first = 0; first < x.count(); first += lines_per_batch) {
      const int64_t lines = std::min(lines_per_batch, x.count() - first);
      const int64_t at = first * x.length;
      KPS_CUDA_RETURN_IF_ERROR(
          cub::DeviceSegmentedRadixSort::SortPairs(cub_tmp, cub_bytes, keys_in + at, keys_out + at, pos_in + at,
                                                   pos_out + at, static_cast<int>(lines * x.length),
                                                   static_cast<int>(lines), offsets, offsets + 1, 0, bits, s),
          "cub::DeviceSegmentedRadixSort::SortPairs");
    }
  }
  KPS_RETURN_IF_ERROR((LaunchKernel<&DecodeKernel<K, int>>("DecodeKernel", GridStrideBlocks(n, kThreads), kThreads, 0,
                                                           s, x.data, x.dtype, static_cast<int>(DataTypeSize(x.dtype)),
                                                           n, ix, flip, keys_out, pos_out, values, indices)));
  return absl::OkStatus();  // `scratch` is freed in stream order, after the kernels
}

// Whether the byte ranges [a, a + bytes) and [b, b + bytes) share a byte.
bool Overlap(const void* a, const void* b, size_t bytes) {
  const auto ua = reinterpret_cast<uintptr_t>(a), ub = reinterpret_cast<uintptr_t>(b);
  return ua < ub + bytes && ub < ua + bytes;
}

// One line of more than 2^31 - 1 elements (x.count() == 1, so inner == 1): CUB's device
// radix sort of the keys with int64 positions as the payload, between the same encode and
// decode as RadixSort. The count goes to CUB as int64_t: its NumItemsT then selects
// unsigned long long offsets (cub::detail::choose_offset_t, CCCL's
// cub/detail/choose_offset.cuh), and the onesweep runs the line in portions of fewer than
// 2^28 items, int offsets within a portion and 64-bit ones across them
// (DispatchRadixSort::InvokeOnesweep). This adds one CUB instantiation per key width, the
// same one for the sizing call and the sort.
//
// Memory: CUB's DoubleBuffer form (is_overwrite_okay) ping-pongs between the two buffers
// of keys and of positions given to it; the form with separate in and out arrays would
// add two more of n items in its own scratch. One of each pair is an output where it can
// be: `indices` (n int64) always, when asked; `values` where the dtype is as wide as the
// key and does not overlap x (the decode reads NaNs and zeros back from x). So with both
// outputs and 4- or 8-byte keys the scratch is n * (sizeof(K) + 8) bytes plus CUB's few MB,
// and the peak beside x and the outputs is that.
template <typename K>
absl::Status LongLineSort(const Lines& x, bool descending, void* values, int64_t* indices, const Stream& stream) {
  cudaStream_t s = stream.cuda_stream();
  const int bits = KeyBits(x.dtype);
  const K flip = descending ? KeyMask<K>(bits) : K(0);
  const int64_t n = x.length;
  const size_t elem_size = DataTypeSize(x.dtype);
  const LineIndexer ix{n, 1};
  const bool keys_in_values =
      values != nullptr && elem_size == sizeof(K) && !Overlap(values, x.data, static_cast<size_t>(n) * elem_size);
  const bool pos_in_indices = indices != nullptr;

  size_t cub_bytes = 0;
  {
    cub::DoubleBuffer<K> keys(nullptr, nullptr);
    cub::DoubleBuffer<int64_t> pos(nullptr, nullptr);
    KPS_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(nullptr, cub_bytes, keys, pos, n, 0, bits, s),
                             "cub::DeviceRadixSort::SortPairs");
  }
  auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t key_bytes = align(static_cast<size_t>(n) * sizeof(K));
  const size_t pos_bytes = align(static_cast<size_t>(n) * sizeof(int64_t));
  const int key_buffers = keys_in_values ? 1 : 2, pos_buffers = pos_in_indices ? 1 : 2;
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> scratch,
                       Storage::Allocate(key_buffers * key_bytes + pos_buffers * pos_bytes + cub_bytes,
                                         DeviceType::kCuda, stream));
  char* p = static_cast<char*>(scratch->data());
  K* key_scratch = reinterpret_cast<K*>(p);
  int64_t* pos_scratch = reinterpret_cast<int64_t*>(p + key_buffers * key_bytes);
  void* cub_tmp = p + key_buffers * key_bytes + pos_buffers * pos_bytes;
  cub::DoubleBuffer<K> keys(key_scratch, keys_in_values ? static_cast<K*>(values)
                                                         : reinterpret_cast<K*>(p + key_bytes));
  cub::DoubleBuffer<int64_t> pos(pos_scratch, pos_in_indices ? indices
                                                             : reinterpret_cast<int64_t*>(p + key_buffers * key_bytes +
                                                                                          pos_bytes));

  KPS_RETURN_IF_ERROR((LaunchKernel<&EncodeKernel<K, int64_t>>("EncodeKernel", GridStrideBlocks(n, kThreads),
                                                               kThreads, 0, s, x.data, x.dtype, n, ix, flip,
                                                               keys.Current(), pos.Current())));
  KPS_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortPairs(cub_tmp, cub_bytes, keys, pos, n, 0, bits, s),
                           "cub::DeviceRadixSort::SortPairs");
  // CUB left the sorted keys and positions in whichever buffer of each pair it says is
  // current now; where that is the output itself, the decode rewrites it element by element.
  KPS_RETURN_IF_ERROR((LaunchKernel<&DecodeKernel<K, int64_t>>("DecodeKernel", GridStrideBlocks(n, kThreads),
                                                               kThreads, 0, s, x.data, x.dtype,
                                                               static_cast<int>(elem_size), n, ix, flip,
                                                               keys.Current(), pos.Current(), values, indices)));
  return absl::OkStatus();  // `scratch` is freed in stream order, after the kernels
}

// Contiguous lines (inner == 1) of 1- to 4-byte keys, fewer than 2^28 each: KPS's own
// onesweep with the encode and decode fused into its first and last passes
// (sort_onesweep.cuh), over each line in turn. A line's sort sees only that line (x,
// values and indices from its start), so its positions are already the line's own; the
// lines share one scratch, in stream order (the counts and look-back words are zeroed
// again for each).
absl::Status OnesweepSort(const Lines& x, bool descending, void* values, int64_t* indices, int rank_mode,
                          const Stream& stream) {
  namespace os = onesweep;
  cudaStream_t s = stream.cuda_stream();
  const int bits = KeyBits(x.dtype);
  const int passes = bits / 8;
  const uint32_t flip = descending ? KeyMask<uint32_t>(bits) : 0u;
  const int64_t n = x.length;
  const size_t elem_size = DataTypeSize(x.dtype);
  // Scratch: the digit counts and the look-back words (zeroed together), the digit
  // starts, then keys and positions once (two passes) or twice (more).
  auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t counts_bytes = passes * os::kBins * sizeof(uint32_t);
  const size_t status_bytes = static_cast<size_t>(os::LookbackTiles(n)) * os::kBins * sizeof(uint32_t);
  const size_t zeroed = align(counts_bytes + status_bytes);
  const size_t starts_bytes = align(counts_bytes + os::kMaxPasses * sizeof(uint32_t));
  const size_t key_bytes = align(static_cast<size_t>(n) * sizeof(uint32_t));
  const size_t pos_bytes = align(static_cast<size_t>(n) * sizeof(int));
  const int buffers = passes >= 3 ? 2 : passes == 2 ? 1 : 0;
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> scratch,
                       Storage::Allocate(zeroed + starts_bytes + buffers * (key_bytes + pos_bytes), DeviceType::kCuda,
                                         stream));
  char* p = static_cast<char*>(scratch->data());
  auto* counts = reinterpret_cast<uint32_t*>(p);
  auto* status = reinterpret_cast<uint32_t*>(p + counts_bytes);
  auto* starts = reinterpret_cast<uint32_t*>(p + zeroed);
  uint32_t* occupied = starts + passes * os::kBins;
  uint32_t* keys[2] = {reinterpret_cast<uint32_t*>(p + zeroed + starts_bytes),
                       reinterpret_cast<uint32_t*>(p + zeroed + starts_bytes + key_bytes)};
  int* pos[2] = {reinterpret_cast<int*>(p + zeroed + starts_bytes + buffers * key_bytes),
                 reinterpret_cast<int*>(p + zeroed + starts_bytes + buffers * key_bytes + pos_bytes)};
  const unsigned hist_grid = BlocksFor(n, os::kThreads, int64_t{CudaMultiprocessorCount()} * 8);

  for (int64_t line = 0; line < x.count(); ++line) {
    const int64_t at = line * n;  // the line's first element in x and in the outputs
    const void* line_x = static_cast<const char*>(x.data) + at * elem_size;
    KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0, zeroed, s), "cudaMemsetAsync of the sort's counts");
    if (passes == 4) {
      KPS_RETURN_IF_ERROR(LaunchKernel<&os::HistogramKernel<4>>("HistogramKernel", hist_grid, os::kThreads, 0, s,
                                                                line_x, x.dtype, n, flip, counts));
    } else if (passes == 2) {
      KPS_RETURN_IF_ERROR(LaunchKernel<&os::HistogramKernel<2>>("HistogramKernel", hist_grid, os::kThreads, 0, s,
                                                                line_x, x.dtype, n, flip, counts));
    } else {
      KPS_RETURN_IF_ERROR(LaunchKernel<&os::HistogramKernel<1>>("HistogramKernel", hist_grid, os::kThreads, 0, s,
                                                                line_x, x.dtype, n, flip, counts));
    }
    KPS_RETURN_IF_ERROR(LaunchKernel<&os::DigitStartsKernel>("DigitStartsKernel", 1, os::kBins, 0, s, counts, passes,
                                                             starts, occupied));
    os::PassArgs args;
    args.x = line_x;
    args.dtype = x.dtype;
    args.elem_size = static_cast<int>(elem_size);
    args.n = static_cast<int>(n);
    args.flip = flip;
    args.values = values != nullptr ? static_cast<char*>(values) + at * elem_size : nullptr;
    args.indices = indices != nullptr ? indices + at : nullptr;
    args.rank_mode = rank_mode;
    for (int pass = 0; pass < passes; ++pass) {
      const bool first = pass == 0, last = pass == passes - 1;
      // Pass k reads buffer (k - 1) % 2 and writes buffer k % 2.
      args.pass = pass;
      args.shift = 8 * pass;
      args.keys_in = first ? nullptr : keys[(pass - 1) % 2];
      args.pos_in = first ? nullptr : pos[(pass - 1) % 2];
      args.keys_out = last ? nullptr : keys[pass % 2];
      args.pos_out = last ? nullptr : pos[pass % 2];
      args.digit_starts = starts + pass * os::kBins;
      args.occupied = occupied + pass;
      args.status = status;
      KPS_RETURN_IF_ERROR(os::LaunchPass(args, pass, passes, s));
    }
  }
  return absl::OkStatus();  // `scratch` is freed in stream order, after the kernels
}

// Whether the lines of x sort one by one, each by a device-wide sort, rather than all at
// once by CUB's segmented sort (a block per line). One by one, each line costs a few
// launches (the onesweep: a memset, a histogram, the digit starts and a kernel per digit
// pass; about 10-30 us) plus its keys at the whole GPU's rate; the segmented sort takes
// about one block's time for one line while the lines do not outnumber the SMs. So one
// by one wins where count * launches < one block's sort of a line, i.e. where the length
// is at least count times the keys a block sorts in one line's launches (sort.per_line_keys),
// and while the lines are few enough that most SMs would idle (count <= sort.per_line).
// Both defaults (sort_cuda.h) await measurement on a GPU: KPS_TUNE=sort.per_line=N,
// sort.per_line_keys=M compares them.
bool SortsLineByLine(const Lines& x) {
  static const int64_t max_lines = TuneInt("sort.per_line", kPerLineMaxLines);
  static const int64_t min_keys = TuneInt("sort.per_line_keys", kPerLineMinKeys);
  // length / count >= min_keys is length >= count * min_keys without the product's overflow.
  return x.count() > 1 && x.count() <= max_lines && x.length / x.count() >= min_keys;
}

}  // namespace

absl::Status RadixSortLinesCuda(const Lines& x, bool descending, void* values, int64_t* indices,
                                const Stream& stream) {
  if (x.count() == 0 || x.length == 0) return absl::OkStatus();
  if (x.length > std::numeric_limits<int>::max()) {
    if (x.count() > 1) {
      return absl::UnimplementedError(absl::StrCat(
          "on CUDA, ", x.count(), " lines along a dim of ", x.length,
          " elements: a dim of more than 2^31 - 1 elements sorts on CUDA only as the tensor's one line (every other "
          "dim of size 1); sort the lines one at a time, or on the CPU"));
    }
    return WideKey(x.dtype) ? LongLineSort<uint64_t>(x, descending, values, indices, stream)
                            : LongLineSort<uint32_t>(x, descending, values, indices, stream);
  }
  // KPS_TUNE's sort.radix (registry/tuning.h; read once), to compare choices in one run:
  // "cub" keeps CUB's path for one line too (and for lines sorted one by one); "ballot"
  // or "match" fixes how the onesweep ranks (by default, "auto", each pass picks by how
  // many digits occur).
  static const int radix_mode = [] {
    const std::string m = TuneWord("sort.radix", "auto");
    return m == "cub" ? -1 : m == "ballot" ? onesweep::kRankBallot : m == "match" ? onesweep::kRankMatch
                                                                                  : onesweep::kRankAuto;
  }();
  const bool per_line = SortsLineByLine(x);
  const bool onesweep_fits = !WideKey(x.dtype) && x.inner == 1 && x.length < (int64_t{1} << onesweep::kCountBits);
  if (radix_mode >= 0 && onesweep_fits && (x.count() == 1 || per_line)) {
    return OnesweepSort(x, descending, values, indices, radix_mode, stream);
  }
  return WideKey(x.dtype) ? RadixSort<uint64_t>(x, descending, per_line, values, indices, stream)
                          : RadixSort<uint32_t>(x, descending, per_line, values, indices, stream);
}

}  // namespace sort
}  // namespace kps
