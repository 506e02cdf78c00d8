// The kernels of the 1-D count's device exchange (dist/triangle_cuda.h): grid-stride loops of
// kSparseBlock threads, a thread per entry or id, a warp per row where rows are copied.
#include "dist/triangle_cuda.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "ops/sparse/sparse_launch.h"
#include "registry/cuda_launch.h"
#include "registry/data_type.h"
#include "registry/status.h"

namespace kps {
namespace dist {
namespace gpu {
namespace {

using sparse::GridFor;
using sparse::LowerBound;
constexpr int kBlock = sparse::kSparseBlock;

// A warp per item w of [0, count); lane is the thread's lane.
#define KPS_DIST_WARP_STRIDE(w, lane, count)                                                                   \
  const int lane = threadIdx.x & 31;                                                                           \
  for (int64_t w = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; w < (count);            \
       w += (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5)

template <typename I>
__global__ void __launch_bounds__(kBlock) MarkHeadsKernel(const I* __restrict__ idx, int64_t nnz, int64_t n,
                                                         uint8_t* __restrict__ mark, unsigned long long* fault) {
  KPS_SPARSE_GRID_STRIDE(e, nnz) {
    const int64_t v = static_cast<int64_t>(idx[e]);
    if (v < 0 || v >= n) {
      atomicMin(fault, static_cast<unsigned long long>(e));
    } else {
      mark[v] = 1;
    }
  }
}

template <typename I>
__global__ void __launch_bounds__(kBlock) RootKindsKernel(const int64_t* __restrict__ ptr, const I* __restrict__ idx,
                                                         int64_t rows, int64_t nnz, int64_t begin, int64_t end,
                                                         unsigned long long* roots, unsigned long long* fault) {
  unsigned long long local = 0, remote = 0;
  KPS_SPARSE_GRID_STRIDE(u, rows) {
    const int64_t lo = ptr[u], hi = ptr[u + 1];
    if (lo < 0 || hi < lo || hi > nnz) {
      atomicMin(fault, static_cast<unsigned long long>(u));
      continue;
    }
    bool any_local = false, any_remote = false;
    for (int64_t k = lo; k < hi && !(any_local && any_remote); ++k) {
      const int64_t v = static_cast<int64_t>(idx[k]);
      if (v >= begin && v < end) {
        any_local = true;
      } else {
        any_remote = true;
      }
    }
    local += any_local ? 1 : 0;
    remote += any_remote ? 1 : 0;
  }
  // A warp's sum, then one atomic per warp: a thread per row would put millions of atomics
  // on two words.
  for (int d = 16; d > 0; d >>= 1) {
    local += __shfl_down_sync(0xffffffffu, local, d);
    remote += __shfl_down_sync(0xffffffffu, remote, d);
  }
  if ((threadIdx.x & 31) == 0) {
    if (local != 0) atomicAdd(roots, local);
    if (remote != 0) atomicAdd(roots + 1, remote);
  }
}

__global__ void __launch_bounds__(kBlock) NarrowKernel(const int64_t* __restrict__ in, int64_t count,
                                                      int32_t* __restrict__ out) {
  KPS_SPARSE_GRID_STRIDE(i, count) { out[i] = static_cast<int32_t>(in[i]); }
}

__global__ void __launch_bounds__(kBlock) CountPerOwnerKernel(const int64_t* __restrict__ ids, int64_t count,
                                                             const int64_t* __restrict__ splits, int ranks,
                                                             int64_t* __restrict__ counts) {
  KPS_SPARSE_GRID_STRIDE(r, ranks) {
    counts[r] = LowerBound(ids, count, splits[r + 1]) - LowerBound(ids, count, splits[r]);
  }
}

template <typename I>
__global__ void __launch_bounds__(kBlock) AskedRowLengthsKernel(const I* __restrict__ asked, int64_t count,
                                                               const int64_t* __restrict__ ptr, int64_t begin,
                                                               int64_t end, int64_t* __restrict__ lengths,
                                                               unsigned long long* fault) {
  KPS_SPARSE_GRID_STRIDE(i, count + 1) {
    if (i == count) {
      lengths[i] = 0;
      continue;
    }
    const int64_t x = static_cast<int64_t>(asked[i]);
    if (x < begin || x >= end) {
      atomicMin(fault, static_cast<unsigned long long>(i));
      lengths[i] = 0;
    } else {
      lengths[i] = ptr[x - begin + 1] - ptr[x - begin];
    }
  }
}

__global__ void SumsPerRankKernel(const int64_t* __restrict__ offsets, const int64_t* __restrict__ counts, int ranks,
                                  int64_t* __restrict__ sums) {
  int64_t at = 0;
  for (int r = 0; r < ranks; ++r) {
    const int64_t next = at + counts[r];
    sums[r] = offsets[next] - offsets[at];
    at = next;
  }
}

template <typename I>
__global__ void __launch_bounds__(kBlock) GatherAskedRowsKernel(const I* __restrict__ asked, int64_t count,
                                                               const int64_t* __restrict__ ptr,
                                                               const I* __restrict__ idx, int64_t begin, int64_t end,
                                                               const int64_t* __restrict__ offsets,
                                                               I* __restrict__ served) {
  KPS_DIST_WARP_STRIDE(i, lane, count) {
    const int64_t x = static_cast<int64_t>(asked[i]);
    if (x < begin || x >= end) continue;
    const int64_t lo = ptr[x - begin], len = ptr[x - begin + 1] - lo;
    I* out = served + offsets[i];
    for (int64_t t = lane; t < len; t += 32) out[t] = idx[lo + t];
  }
}

__global__ void __launch_bounds__(kBlock) CheckedLengthsKernel(const int64_t* __restrict__ lengths, int64_t count,
                                                              int64_t n, int64_t* __restrict__ out,
                                                              unsigned long long* fault) {
  KPS_SPARSE_GRID_STRIDE(j, count + 1) {
    if (j == count) {
      out[j] = 0;
      continue;
    }
    const int64_t len = lengths[j];
    if (len < 0 || (len > 0 && len > n - 1)) {
      atomicMin(fault, static_cast<unsigned long long>(j));
      out[j] = 0;
    } else {
      out[j] = len;
    }
  }
}

__global__ void __launch_bounds__(kBlock) ScatterRowLengthsKernel(const int64_t* __restrict__ ptr, int64_t own,
                                                                 int64_t begin, const int64_t* __restrict__ ids,
                                                                 const int64_t* __restrict__ offsets, int64_t count,
                                                                 int64_t* __restrict__ row_lengths) {
  KPS_SPARSE_GRID_STRIDE(r, own + count) {
    if (r < own) {
      row_lengths[begin + r] = ptr[r + 1] - ptr[r];
    } else {
      const int64_t j = r - own;
      row_lengths[ids[j]] = offsets[j + 1] - offsets[j];
    }
  }
}

template <typename I, typename C>
__global__ void __launch_bounds__(kBlock) AssembleRowsKernel(const int64_t* __restrict__ ptr,
                                                            const I* __restrict__ idx, int64_t own, int64_t begin,
                                                            const int64_t* __restrict__ ids,
                                                            const int64_t* __restrict__ offsets,
                                                            const I* __restrict__ fetched, int64_t count,
                                                            const int64_t* __restrict__ indptr, int64_t n,
                                                            C* __restrict__ out, unsigned long long* fault) {
  KPS_DIST_WARP_STRIDE(r, lane, own + count) {
    if (r < own) {
      const int64_t lo = ptr[r], len = ptr[r + 1] - lo;
      C* dst = out + indptr[begin + r];
      for (int64_t t = lane; t < len; t += 32) dst[t] = static_cast<C>(idx[lo + t]);
    } else {
      const int64_t j = r - own, lo = offsets[j], len = offsets[j + 1] - lo;
      C* dst = out + indptr[ids[j]];
      for (int64_t t = lane; t < len; t += 32) {
        const int64_t w = static_cast<int64_t>(fetched[lo + t]);
        if (w < 0 || w >= n) atomicMin(fault, static_cast<unsigned long long>(lo + t));
        dst[t] = static_cast<C>(w);
      }
    }
  }
}

// Calls f(I{}) for an int32 or int64 dtype.
template <typename F>
absl::Status VisitIndex(DataType dtype, const char* what, F&& f) {
  if (dtype == DataType::kInt32) return f(int32_t{});
  if (dtype == DataType::kInt64) return f(int64_t{});
  return absl::InvalidArgumentError(absl::StrCat(what, " must be int32 or int64, got ", DataTypeName(dtype)));
}

// A tensor's typed address, null when it holds nothing (an empty tensor may have no storage).
template <typename T>
const T* Data(const Tensor& t) {
  return t.defined() && t.numel() > 0 ? t.data<T>() : nullptr;
}

template <typename T>
T* MutableData(const Tensor& t) {
  return t.defined() && t.numel() > 0 ? t.data<T>() : nullptr;
}

// Blocks for a warp per item.
unsigned WarpGrid(int64_t items) { return GridFor(items * 32); }

}  // namespace

absl::Status MarkHeads(const Tensor& indices, int64_t n, uint8_t* mark, unsigned long long* fault,
                       const Stream& stream) {
  const int64_t nnz = indices.numel();
  if (nnz == 0) return absl::OkStatus();
  return VisitIndex(indices.dtype(), "the block's indices", [&](auto tag) {
    using I = decltype(tag);
    return LaunchKernel<&MarkHeadsKernel<I>>("MarkHeadsKernel", GridFor(nnz), kBlock, 0, stream.cuda_stream(),
                                             Data<I>(indices), nnz, n, mark, fault);
  });
}

absl::Status CountRootKinds(const Tensor& ptr, const Tensor& indices, int64_t rows_begin, int64_t rows_end,
                            unsigned long long* roots, unsigned long long* fault, const Stream& stream) {
  const int64_t rows = ptr.numel() - 1;
  if (rows <= 0) return absl::OkStatus();
  return VisitIndex(indices.dtype(), "the block's indices", [&](auto tag) {
    using I = decltype(tag);
    return LaunchKernel<&RootKindsKernel<I>>("RootKindsKernel", GridFor(rows), kBlock, 0, stream.cuda_stream(),
                                             Data<int64_t>(ptr), Data<I>(indices), rows, indices.numel(),
                                             rows_begin, rows_end, roots, fault);
  });
}

absl::Status NarrowToInt32(const int64_t* in, int64_t count, int32_t* out, const Stream& stream) {
  if (count == 0) return absl::OkStatus();
  return LaunchKernel<&NarrowKernel>("NarrowKernel", GridFor(count), kBlock, 0, stream.cuda_stream(), in, count,
                                     out);
}

absl::Status CountPerOwner(const int64_t* ids, int64_t count, const int64_t* splits, int ranks, int64_t* counts,
                           const Stream& stream) {
  return LaunchKernel<&CountPerOwnerKernel>("CountPerOwnerKernel", GridFor(ranks), kBlock, 0, stream.cuda_stream(),
                                            ids, count, splits, ranks, counts);
}

absl::Status AskedRowLengths(const Tensor& asked, const Tensor& ptr, int64_t rows_begin, int64_t rows_end,
                             int64_t* lengths, unsigned long long* fault, const Stream& stream) {
  const int64_t count = asked.numel();
  return VisitIndex(asked.dtype(), "the asked ids", [&](auto tag) {
    using I = decltype(tag);
    return LaunchKernel<&AskedRowLengthsKernel<I>>("AskedRowLengthsKernel", GridFor(count + 1), kBlock, 0,
                                                   stream.cuda_stream(), Data<I>(asked), count, Data<int64_t>(ptr),
                                                   rows_begin, rows_end, lengths, fault);
  });
}

absl::Status SumsPerRank(const int64_t* offsets, const int64_t* counts, int ranks, int64_t* sums,
                         const Stream& stream) {
  return LaunchKernel<&SumsPerRankKernel>("SumsPerRankKernel", 1, 1, 0, stream.cuda_stream(), offsets, counts, ranks,
                                          sums);
}

absl::Status GatherAskedRows(const Tensor& asked, const Tensor& ptr, const Tensor& indices, int64_t rows_begin,
                             int64_t rows_end, const int64_t* offsets, const Tensor& served, const Stream& stream) {
  const int64_t count = asked.numel();
  if (count == 0 || served.numel() == 0) return absl::OkStatus();
  if (asked.dtype() != indices.dtype() || served.dtype() != indices.dtype()) {
    return absl::InternalError(absl::StrCat("GatherAskedRows: ids ", DataTypeName(asked.dtype()), ", block ",
                                            DataTypeName(indices.dtype()), ", pieces ",
                                            DataTypeName(served.dtype())));
  }
  return VisitIndex(indices.dtype(), "the block's indices", [&](auto tag) {
    using I = decltype(tag);
    return LaunchKernel<&GatherAskedRowsKernel<I>>("GatherAskedRowsKernel", WarpGrid(count), kBlock, 0,
                                                   stream.cuda_stream(), Data<I>(asked), count, Data<int64_t>(ptr),
                                                   Data<I>(indices), rows_begin, rows_end, offsets,
                                                   MutableData<I>(served));
  });
}

absl::Status CheckedLengths(const int64_t* lengths, int64_t count, int64_t n, int64_t* out,
                            unsigned long long* fault, const Stream& stream) {
  return LaunchKernel<&CheckedLengthsKernel>("CheckedLengthsKernel", GridFor(count + 1), kBlock, 0,
                                             stream.cuda_stream(), lengths, count, n, out, fault);
}

absl::Status ScatterRowLengths(const Tensor& ptr, int64_t rows_begin, const int64_t* ids, const int64_t* offsets,
                               int64_t count, int64_t* row_lengths, const Stream& stream) {
  const int64_t own = ptr.numel() - 1;
  if (own + count <= 0) return absl::OkStatus();
  return LaunchKernel<&ScatterRowLengthsKernel>("ScatterRowLengthsKernel", GridFor(own + count), kBlock, 0,
                                                stream.cuda_stream(), Data<int64_t>(ptr), own, rows_begin, ids,
                                                offsets, count, row_lengths);
}

absl::Status AssembleRows(const Tensor& ptr, const Tensor& indices, int64_t rows_begin, const int64_t* ids,
                          const int64_t* offsets, const Tensor& fetched, int64_t count, const int64_t* indptr,
                          int64_t n, const Tensor& out, unsigned long long* fault, const Stream& stream) {
  const int64_t own = ptr.numel() - 1;
  if (own + count <= 0 || out.numel() == 0) return absl::OkStatus();
  if (fetched.defined() && fetched.numel() > 0 && fetched.dtype() != indices.dtype()) {
    return absl::InternalError(absl::StrCat("AssembleRows: block ", DataTypeName(indices.dtype()), ", fetched ",
                                            DataTypeName(fetched.dtype())));
  }
  return VisitIndex(indices.dtype(), "the block's indices", [&](auto itag) {
    using I = decltype(itag);
    return VisitIndex(out.dtype(), "the counted CSR's indices", [&](auto ctag) {
      using C = decltype(ctag);
      return LaunchKernel<&AssembleRowsKernel<I, C>>("AssembleRowsKernel", WarpGrid(own + count), kBlock, 0,
                                                     stream.cuda_stream(), Data<int64_t>(ptr), Data<I>(indices), own,
                                                     rows_begin, ids, offsets, Data<I>(fetched), count, indptr, n,
                                                     MutableData<C>(out), fault);
    });
  });
}

}  // namespace gpu
}  // namespace dist
}  // namespace kps
