// index_add and index_add_: the call's geometry and checks, and the ops' kernel (one class
// template over the device, IndexAddKernel, with its CPU part here; the CUDA part and the
// registrations are in index_add_cuda*.cu).
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "absl/status/statusor.h"
#include "functors/mp_type.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"

namespace kps {
namespace indexing {

// index_add is defined for every numeric dtype (not bool).
#define KPS_INDEX_ADD_FLOAT_CPP_TYPES KPS_FLOAT_CPP_TYPES
#define KPS_INDEX_ADD_INT_CPP_TYPES KPS_INT_CPP_TYPES

// x viewed as [outer, dim_size, inner] around `dim`; source as [outer, count, inner],
// count = the index's length: out[o, index[i], k] += alpha * source[o, i, k].
struct IndexAddGeometry {
  int dim = 0;
  int64_t outer = 1, dim_size = 0, inner = 1, count = 0;
};

// Checks the call's inputs (x, index, source) and attributes (dim, alpha) and returns
// the geometry; every error names the op and the argument.
absl::StatusOr<IndexAddGeometry> ResolveIndexAdd(const CallView& call);

// A call's operands made ready for the kernels: the geometry; x contiguous (in place: x
// itself, which the schema requires contiguous); index and source contiguous; out, the
// tensor written (in place: x; else output 0, which still has to receive x).
struct IndexAddOperands {
  IndexAddGeometry g;
  Tensor x, index, source, out;
};
absl::StatusOr<IndexAddOperands> PrepareIndexAdd(const KernelContext& ctx, bool in_place);

// Sums accumulate in int64 for integers (wrapping when stored), in float for 16-bit
// floats, else in the dtype itself.
template <typename T>
using IndexAcc = std::conditional_t<std::is_integral_v<T>, int64_t, MPType<T>>;

// The error for index value `value` found at `position` (outside [0, dim_size)).
absl::Status BadIndexError(const CallView& call, int64_t position, int64_t value, const IndexAddGeometry& g);

// The device part: IndexAddOn<D>::Run<T>(ctx, operands, in_place) writes out = x (unless
// in place), then adds alpha times each destination's sources, in position order.
template <DeviceType D>
struct IndexAddOn;

// The CPU part: every index checked first, then a stable counting sort of the positions by
// index, then each destination sums its sources in position order (in IndexAcc) and adds
// alpha times the sum once; destinations without sources are copied.
template <>
struct IndexAddOn<DeviceType::kCpu> {
  template <typename T>
  static absl::Status Run(const KernelContext& ctx, const IndexAddOperands& a, bool in_place) {
    using Acc = IndexAcc<T>;
    const IndexAddGeometry& g = a.g;
    std::vector<int64_t> idx(g.count);
    for (int64_t i = 0; i < g.count; ++i) {
      idx[i] = a.index.dtype() == DataType::kInt32 ? a.index.data<int32_t>()[i] : a.index.data<int64_t>()[i];
      if (idx[i] < 0 || idx[i] >= g.dim_size) return BadIndexError(ctx, i, idx[i], g);
    }
    T* out = a.out.data<T>();
    if (!in_place && a.x.numel() > 0) std::memcpy(out, a.x.data<T>(), a.x.nbytes());
    if (g.count == 0 || g.outer == 0 || g.inner == 0) return absl::OkStatus();
    const T* src = a.source.data<T>();
    std::vector<int64_t> first(g.dim_size + 1, 0), order(g.count);
    for (int64_t i = 0; i < g.count; ++i) ++first[idx[i] + 1];
    for (int64_t r = 0; r < g.dim_size; ++r) first[r + 1] += first[r];
    {
      std::vector<int64_t> fill(first.begin(), first.end() - 1);
      for (int64_t i = 0; i < g.count; ++i) order[fill[idx[i]]++] = i;
    }
    const Acc alpha = static_cast<Acc>(ctx.Attr<double>("alpha"));
    std::vector<Acc> sum(g.inner);
    for (int64_t o = 0; o < g.outer; ++o) {
      for (int64_t r = 0; r < g.dim_size; ++r) {
        if (first[r] == first[r + 1]) continue;
        std::fill(sum.begin(), sum.end(), Acc(0));
        for (int64_t j = first[r]; j < first[r + 1]; ++j) {
          const T* s = src + (o * g.count + order[j]) * g.inner;
          for (int64_t k = 0; k < g.inner; ++k) sum[k] += static_cast<Acc>(s[k]);
        }
        T* d = out + (o * g.dim_size + r) * g.inner;
        for (int64_t k = 0; k < g.inner; ++k) d[k] = static_cast<T>(static_cast<Acc>(d[k]) + alpha * sum[k]);
      }
    }
    return absl::OkStatus();
  }
};

// The kernel of index_add (kInPlace false) and index_add_ on device D: the call's operands
// resolved once, then the device's part.
template <bool kInPlace>
struct IndexAddKernel {
  template <DeviceType D, typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      KPS_ASSIGN_OR_RETURN(const IndexAddOperands a, PrepareIndexAdd(*ctx, kInPlace));
      return IndexAddOn<D>::template Run<T>(*ctx, a, kInPlace);
    }
  };
};

// ---- CUDA helpers (index_add_sort.cu), shared by the dtype files --------------------

// The call's device-side flags, zeroed before the first kernel. `bad` holds ~position of
// the first out-of-range index (an atomicMax of ~i keeps the lowest i; 0 = none), so the
// flags and the run counts after them are cleared by one memset. `long_run` is set when a
// destination has more than kShortRun sources (see index_add_cuda.cuh).
struct IndexFlags {
  unsigned long long bad;
  unsigned int long_run;
  unsigned int pad;
};
static_assert(sizeof(IndexFlags) == 16, "the counts after the flags stay 16-byte aligned");

// A run of sources of at most this many elements is put in position order by a thread
// (LaunchOrderShortRuns); longer runs go through a stable radix sort.
inline constexpr uint32_t kShortRun = 16;

// Checks `index` (a contiguous int32 or int64 CUDA tensor of `count` elements): keys[i] =
// index[i] as uint32 (0xFFFFFFFF where out of range; the first such position goes to
// flags->bad). With `counts` (dim_size entries, zeroed): slot[i] = the number of earlier
// arrivals at the same destination (an integer atomicAdd, so the order among equal keys
// varies from run to run), and flags->long_run is set when a slot reaches `long_limit`.
absl::Status LaunchIndexCount(const Tensor& index, int64_t count, int64_t dim_size, uint32_t* keys, uint32_t* slot,
                              uint32_t* counts, uint32_t long_limit, IndexFlags* flags, cudaStream_t stream);
// start[0..n] = exclusive prefix sums of counts[0..n] (CUB); temp_bytes from a call
// with temp = nullptr.
absl::Status ScanRunCounts(void* temp, size_t& temp_bytes, const uint32_t* counts, uint32_t* start, int64_t n,
                           cudaStream_t stream);
// positions[start[keys[i]] + slot[i]] = i for every valid key: each destination's run,
// its positions in arrival order.
absl::Status LaunchScatterPositions(const uint32_t* keys, const uint32_t* slot, int count, const uint32_t* start,
                                    uint32_t* positions, cudaStream_t stream);
// Puts every run of 2 to kShortRun positions in ascending order (runs from `start`,
// dim_size + 1 entries); does nothing once flags->bad is set.
absl::Status LaunchOrderShortRuns(const uint32_t* start, int64_t dim_size, uint32_t* positions,
                                  const IndexFlags* flags, cudaStream_t stream);
// positions[i] = i.
absl::Status LaunchIota(uint32_t* positions, int count, cudaStream_t stream);
// Bytes of temporary storage SortIndexPairs needs for `count` pairs.
absl::StatusOr<size_t> SortIndexPairsTempBytes(int count, int end_bit);
// Stable radix sort (CUB) of (key, position) pairs by the low `end_bit` bits of key.
absl::Status SortIndexPairs(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out,
                            const uint32_t* positions_in, uint32_t* positions_out, int count, int end_bit,
                            cudaStream_t stream);
// The host learns the flags without waiting for the rest of the call: PostIndexFlags
// enqueues a one-thread kernel that copies them into a slot of host-mapped pinned memory
// with a token unique to the call, and AwaitIndexFlags spins until that token arrives
// (checking the stream, so a failed stream cannot hang it). The kernels queued between
// the two keep running after the call returns.
struct FlagMailbox {
  volatile unsigned long long token;
  unsigned long long bad;
  unsigned int long_run;
};
struct FlagPost {
  FlagMailbox* host = nullptr;
  FlagMailbox* device = nullptr;
  unsigned long long token = 0;
};
absl::StatusOr<FlagPost> PostIndexFlags(const IndexFlags* flags, cudaStream_t stream);
// BadIndexError for a bad index, else whether some destination has a long run. Gives
// the slot back (a post that is never awaited keeps its slot: its kernel may still run).
absl::StatusOr<bool> AwaitIndexFlags(const CallView& call, const Tensor& index, const FlagPost& post,
                                     const IndexAddGeometry& g, cudaStream_t stream);

}  // namespace indexing
}  // namespace kps
