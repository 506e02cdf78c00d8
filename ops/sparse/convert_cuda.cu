// The CUDA parts of coo_to_csr, graph_from_edges and csr_transpose (ConvertOn<kCuda>), the
// CSR check on either device (CheckCsr), and the registration of the four ops' kernels.
//
// The conversions are KPS's sort and cumsum ops, called by name, with a thread per entry
// or row around them:
//   COO -> CSR: keys r * n + c (CooKeysKernel) -> sort (stable, with positions) -> run
//   heads (HeadsKernel) -> cumsum: each run's output slot -> one thread per run writes
//   its column and sums its values in position order (EmitRunsKernel) -> each row's start
//   is the slot of its first key, found by binary search (RowStartsKernel).
//   Transpose: the columns sorted with their positions -> each entry's row
//   (RowIdsKernel, a warp per row) gathered by position (GatherKernel) -> each column's
//   start by binary search.
// Both are deterministic: the sort is stable and each run is summed in position order.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "ops/sparse/convert_ops.h"
#include "ops/sparse/sparse_launch.h"
#include "ops/sparse/csr_check.h"
#include "registry/allocator.h"
#include "registry/call.h"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace sparse {
namespace {

constexpr int kBlock = kSparseBlock;

// The first fault of a CSR matrix, as (kind << 58 | position) through atomicMin: a thread
// per row end (kinds 0-2) and per entry (3-5). An entry's row (for the sorted and diagonal
// rules) is found by binary search over indptr; when indptr itself is malformed, its own
// fault is the smaller code.
template <typename P, typename I>
__global__ void __launch_bounds__(kBlock) CsrCheckKernel(const P* __restrict__ ptr, const I* __restrict__ idx,
                                                        int64_t m, int64_t nnz, int64_t n, bool sorted,
                                                        bool no_diagonal, unsigned long long* bad) {
  KPS_SPARSE_GRID_STRIDE(i, (m + 1 > nnz ? m + 1 : nnz)) {
    unsigned long long code = ~0ull;
    if (i <= m) {
      const int64_t v = static_cast<int64_t>(ptr[i]);
      if (i == 0 && v != 0) code = 0;
      if (code == ~0ull && i > 0 && v < static_cast<int64_t>(ptr[i - 1])) code = (1ull << 58) | i;
      if (code == ~0ull && i == m && v != nnz) code = (2ull << 58) | i;
    }
    if (code == ~0ull && i < nnz) {
      const int64_t c = static_cast<int64_t>(idx[i]);
      if (c < 0 || c >= n) {
        code = (3ull << 58) | i;
      } else if (sorted || no_diagonal) {
        int64_t lo = 0, hi = m;  // the row: the last r with ptr[r] <= i
        while (lo < hi) {
          const int64_t mid = (lo + hi + 1) >> 1;
          if (static_cast<int64_t>(ptr[mid]) <= i) {
            lo = mid;
          } else {
            hi = mid - 1;
          }
        }
        if (sorted && i > static_cast<int64_t>(ptr[lo]) && c <= static_cast<int64_t>(idx[i - 1])) {
          code = (4ull << 58) | i;
        } else if (no_diagonal && c == lo) {
          code = (5ull << 58) | i;
        }
      }
    }
    if (code != ~0ull) atomicMin(bad, code);
  }
}

template <typename I>
__global__ void __launch_bounds__(kBlock) CooKeysKernel(const I* __restrict__ rows, const I* __restrict__ cols,
                                                       int64_t count, int64_t m, int64_t n, bool symmetric,
                                                       int64_t* __restrict__ keys, unsigned long long* bad) {
  KPS_SPARSE_GRID_STRIDE(i, count) {
    const int64_t r = static_cast<int64_t>(rows[i]), c = static_cast<int64_t>(cols[i]);
    const bool out = r < 0 || r >= m || c < 0 || c >= n;
    if (out) atomicMin(bad, static_cast<unsigned long long>(i));
    if (symmetric) {
      const bool drop = out || r == c;
      keys[2 * i] = drop ? kNoKey : r * n + c;
      keys[2 * i + 1] = drop ? kNoKey : c * n + r;
    } else {
      keys[i] = out ? kNoKey : r * n + c;
    }
  }
}

// head[k] = 1 where a run of equal keys starts (every entry when duplicates stay), 0
// elsewhere and for dropped entries.
__global__ void __launch_bounds__(kBlock) HeadsKernel(const int64_t* __restrict__ keys, int64_t count, bool dedupe,
                                                     int64_t* __restrict__ head) {
  KPS_SPARSE_GRID_STRIDE(k, count) {
    const int64_t key = keys[k];
    head[k] = key != kNoKey && (k == 0 || !dedupe || key != keys[k - 1]) ? 1 : 0;
  }
}

// A thread per run: its column, and its values summed in position order (perm holds the
// sorted keys' input positions; `width` input keys per value: 2 for symmetric plans).
template <typename I, typename T>
__global__ void __launch_bounds__(kBlock) EmitRunsKernel(const int64_t* __restrict__ keys,
                                                        const int64_t* __restrict__ slot, int64_t count, bool dedupe,
                                                        int64_t n, const int64_t* __restrict__ perm,
                                                        const T* __restrict__ values, I* __restrict__ out_idx,
                                                        T* __restrict__ out_val) {
  KPS_SPARSE_GRID_STRIDE(k, count) {
    const int64_t key = keys[k];
    if (key == kNoKey || (dedupe && k > 0 && key == keys[k - 1])) continue;
    const int64_t u = slot[k] - 1;
    out_idx[u] = static_cast<I>(key % n);
    if (values == nullptr) continue;
    DupSum<T> s = static_cast<DupSum<T>>(values[perm[k]]);
    for (int64_t j = k + 1; dedupe && j < count && keys[j] == key; ++j) s += static_cast<DupSum<T>>(values[perm[j]]);
    out_val[u] = static_cast<T>(s);
  }
}

// ptr[r] for r in [0, rows]: the slots before row r's first key (keys r * n + c).
__global__ void __launch_bounds__(kBlock) RowStartsKernel(const int64_t* __restrict__ keys,
                                                         const int64_t* __restrict__ slot, int64_t count,
                                                         int64_t rows, int64_t n, int64_t* __restrict__ ptr) {
  KPS_SPARSE_GRID_STRIDE(r, rows + 1) {
    const int64_t p = LowerBound(keys, count, r * n);
    ptr[r] = p == 0 ? 0 : slot[p - 1];
  }
}

// A warp per row: each of its entries' positions gets the row.
template <typename P, typename I>
__global__ void __launch_bounds__(kBlock) RowIdsKernel(const P* __restrict__ ptr, int64_t m, I* __restrict__ row_of) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; r < m;
       r += (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5) {
    const int64_t lo = static_cast<int64_t>(ptr[r]), hi = static_cast<int64_t>(ptr[r + 1]);
    for (int64_t k = lo + lane; k < hi; k += 32) row_of[k] = static_cast<I>(r);
  }
}

// out[k] = in[perm[k]].
template <typename T>
__global__ void __launch_bounds__(kBlock) GatherKernel(const T* __restrict__ in, const int64_t* __restrict__ perm,
                                                      int64_t count, T* __restrict__ out) {
  KPS_SPARSE_GRID_STRIDE(k, count) { out[k] = in[perm[k]]; }
}

// The start of each column c in [0, n] among sorted columns.
template <typename I>
__global__ void __launch_bounds__(kBlock) ColumnStartsKernel(const I* __restrict__ cols, int64_t nnz, int64_t n,
                                                            int64_t* __restrict__ ptr) {
  KPS_SPARSE_GRID_STRIDE(c, n + 1) {
    int64_t lo = 0, hi = nnz;
    while (lo < hi) {
      const int64_t mid = (lo + hi) >> 1;
      if (static_cast<int64_t>(cols[mid]) < c) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    ptr[c] = lo;
  }
}

template <typename I>
__global__ void __launch_bounds__(kBlock) MaxVertexKernel(const I* __restrict__ a, const I* __restrict__ b,
                                                         int64_t count, unsigned long long* most,
                                                         unsigned long long* negative) {
  unsigned long long local = 0;  // id + 1
  KPS_SPARSE_GRID_STRIDE(i, count) {
    const int64_t x = static_cast<int64_t>(a[i]), y = static_cast<int64_t>(b[i]);
    if (x < 0 || y < 0) atomicMin(negative, static_cast<unsigned long long>(i));
    const int64_t v = x > y ? x : y;
    if (v + 1 > static_cast<int64_t>(local)) local = static_cast<unsigned long long>(v + 1);
  }
  if (local != 0) atomicMax(most, local);
}

// Reads one device value of type V into the host.
template <typename V>
absl::StatusOr<int64_t> ReadOne(const V* p, cudaStream_t s) {
  V v{};
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&v, p, sizeof(V), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return static_cast<int64_t>(v);
}

// A device buffer of `count` unsigned 64-bit flags, all ones (no fault yet).
absl::StatusOr<std::shared_ptr<Storage>> FaultFlags(int count, const Stream& stream, unsigned char fill) {
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> flag,
                       Storage::Allocate(sizeof(unsigned long long) * count, DeviceType::kCuda, stream));
  KPS_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(flag->data(), fill, sizeof(unsigned long long) * count, stream.cuda_stream()),
      "cudaMemsetAsync (a fault flag)");
  return flag;
}

template <typename P, typename I>
absl::Status CheckCsrCuda(const KernelContext& ctx, const Tensor& indptr, const Tensor& indices,
                          const CsrRules& rules) {
  const int64_t m = indptr.numel() - 1, nnz = indices.numel();
  const cudaStream_t cs = ctx.cuda_stream();
  const P* ptr = indptr.data<P>();
  const I* idx = indices.data<I>();
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> flag, FaultFlags(1, ctx.stream(), 0xff));
  auto* bad = static_cast<unsigned long long*>(flag->data());
  KPS_RETURN_IF_ERROR((LaunchKernel<&CsrCheckKernel<P, I>>("CsrCheckKernel", GridFor(std::max(m + 1, nnz)), kBlock,
                                                            0, cs, ptr, idx, m, nnz, rules.n, rules.sorted,
                                                            rules.no_diagonal, bad)));
  KPS_ASSIGN_OR_RETURN(const int64_t raw, ReadOne(bad, cs));
  const auto code = static_cast<unsigned long long>(raw);
  if (code == ~0ull) return absl::OkStatus();
  const auto kind = static_cast<CsrFault>(code >> 58);
  const auto pos = static_cast<int64_t>(code & ((1ull << 58) - 1));
  if (kind <= CsrFault::kBadEnd) {
    KPS_ASSIGN_OR_RETURN(const int64_t value, ReadOne(ptr + pos, cs));
    return CsrFaultStatus(ctx, kind, pos, value, 0, m, nnz, rules);
  }
  KPS_ASSIGN_OR_RETURN(const int64_t value, ReadOne(idx + pos, cs));
  // The entry's row: a host binary search over a well-formed indptr, one value at a time.
  int64_t lo = 0, hi = m;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) >> 1;
    KPS_ASSIGN_OR_RETURN(const int64_t at, ReadOne(ptr + mid, cs));
    if (at <= pos) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return CsrFaultStatus(ctx, kind, pos, value, lo, m, nnz, rules);
}

}  // namespace

absl::Status CheckCsr(const KernelContext& ctx, const Tensor& indptr, const Tensor& indices, const CsrRules& rules) {
  return VisitIndexType(indptr.dtype(), [&](auto p) {
    using P = decltype(p);
    return VisitIndexType(indices.dtype(), [&](auto i) -> absl::Status {
      using I = decltype(i);
      if (indptr.device() == DeviceType::kCpu) {
        return CheckCsrCpu<P, I>(ctx, indptr.data<P>(), indptr.numel() - 1, indices.data<I>(), indices.numel(),
                                 rules);
      }
      return CheckCsrCuda<P, I>(ctx, indptr, indices, rules);
    });
  });
}

template <typename I>
absl::StatusOr<int64_t> ConvertOn<DeviceType::kCuda>::MaxVertex(const CallView& call, const Tensor& src,
                                                                const Tensor& dst, const Stream& stream) {
  const cudaStream_t cs = stream.cuda_stream();
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> flags, FaultFlags(2, stream, 0));
  auto* most = static_cast<unsigned long long*>(flags->data());
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(most + 1, 0xff, sizeof(unsigned long long), cs), "cudaMemsetAsync");
  KPS_RETURN_IF_ERROR((LaunchKernel<&MaxVertexKernel<I>>("MaxVertexKernel", GridFor(src.numel()), kBlock, 0, cs,
                                                          src.data<I>(), dst.data<I>(), src.numel(), most,
                                                          most + 1)));
  unsigned long long host[2] = {0, 0};
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host, most, sizeof(host), cudaMemcpyDeviceToHost, cs), "cudaMemcpyAsync");
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cs), "cudaStreamSynchronize");
  if (host[1] != ~0ull) {
    const auto i = static_cast<int64_t>(host[1]);
    KPS_ASSIGN_OR_RETURN(const int64_t a, ReadOne(src.data<I>() + i, cs));
    KPS_ASSIGN_OR_RETURN(const int64_t b, ReadOne(dst.data<I>() + i, cs));
    return ConvertOn<DeviceType::kCpu>::NegativeVertex(call, a < 0 ? 0 : 1, i, a < 0 ? a : b);
  }
  return static_cast<int64_t>(host[0]) - 1;
}

template <typename I>
absl::Status ConvertOn<DeviceType::kCuda>::CooToCsr(KernelContext* ctx, const CooPlan& plan, const Tensor& rows,
                                                    const Tensor& cols, const Tensor* values, int out_values) {
  const Stream& stream = ctx->stream();
  const cudaStream_t cs = ctx->cuda_stream();
  const int64_t edges = rows.numel();
  const int64_t count = edges * (plan.symmetric ? 2 : 1);
  KPS_ASSIGN_OR_RETURN(Tensor keys, Tensor::Empty(Shape{count}, DataType::kInt64, DeviceType::kCuda, stream));
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> flag, FaultFlags(1, stream, 0xff));
  auto* bad = static_cast<unsigned long long*>(flag->data());
  if (edges > 0) {
    KPS_RETURN_IF_ERROR((LaunchKernel<&CooKeysKernel<I>>("CooKeysKernel", GridFor(edges), kBlock, 0, cs,
                                                          rows.data<I>(), cols.data<I>(), edges, plan.m, plan.n,
                                                          plan.symmetric, keys.data<int64_t>(), bad)));
  }
  KPS_ASSIGN_OR_RETURN(const int64_t first_bad, ReadOne(bad, cs));
  if (static_cast<unsigned long long>(first_bad) != ~0ull) {
    KPS_ASSIGN_OR_RETURN(const int64_t r, ReadOne(rows.data<I>() + first_bad, cs));
    KPS_ASSIGN_OR_RETURN(const int64_t c, ReadOne(cols.data<I>() + first_bad, cs));
    return ConvertOn<DeviceType::kCpu>::EntryOutOfRange(*ctx, plan, first_bad, r, c);
  }
  int64_t* ptr = ctx->output(0).data<int64_t>();
  if (count == 0) {
    KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(ptr, 0, sizeof(int64_t) * (plan.m + 1), cs), "cudaMemsetAsync");
    KPS_RETURN_IF_ERROR(ctx->AllocateOutput(1, Shape{0}, cols.dtype()).status());
    if (out_values >= 0) KPS_RETURN_IF_ERROR(ctx->AllocateOutput(out_values, Shape{0}, values->dtype()).status());
    return absl::OkStatus();
  }
  // KPS's sort (stable, so runs keep input order) and cumsum, called by name.
  KPS_ASSIGN_OR_RETURN(std::vector<Tensor> sorted, Call("sort").Input("x", keys).OnStream(stream).Run());
  keys = Tensor();
  const int64_t* sk = sorted[0].data<int64_t>();
  KPS_ASSIGN_OR_RETURN(Tensor head, Tensor::Empty(Shape{count}, DataType::kInt64, DeviceType::kCuda, stream));
  KPS_RETURN_IF_ERROR((LaunchKernel<&HeadsKernel>("HeadsKernel", GridFor(count), kBlock, 0, cs, sk, count,
                                                   plan.sum_duplicates, head.data<int64_t>())));
  KPS_ASSIGN_OR_RETURN(Tensor slot, Call("cumsum").Input("x", head).Attr("dim", int64_t{0}).OnStream(stream).RunOne());
  head = Tensor();
  const int64_t* sl = slot.data<int64_t>();
  KPS_ASSIGN_OR_RETURN(const int64_t nnz, ReadOne(sl + count - 1, cs));
  KPS_ASSIGN_OR_RETURN(Tensor * out_idx, ctx->AllocateOutput(1, Shape{nnz}, cols.dtype()));
  KPS_RETURN_IF_ERROR((LaunchKernel<&RowStartsKernel>("RowStartsKernel", GridFor(plan.m + 1), kBlock, 0, cs, sk, sl,
                                                       count, plan.m, plan.n, ptr)));
  const int64_t* perm = sorted[1].data<int64_t>();
  if (out_values < 0) {
    return LaunchKernel<&EmitRunsKernel<I, int32_t>>("EmitRunsKernel", GridFor(count), kBlock, 0, cs, sk, sl, count,
                                                     plan.sum_duplicates, plan.n, perm,
                                                     static_cast<const int32_t*>(nullptr), out_idx->data<I>(),
                                                     static_cast<int32_t*>(nullptr));
  }
  return VisitSparseValueType(values->dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    KPS_ASSIGN_OR_RETURN(Tensor * out_val, ctx->AllocateOutput(out_values, Shape{nnz}, values->dtype()));
    return LaunchKernel<&EmitRunsKernel<I, T>>("EmitRunsKernel", GridFor(count), kBlock, 0, cs, sk, sl, count,
                                               plan.sum_duplicates, plan.n, perm, values->data<T>(),
                                               out_idx->data<I>(), out_val->data<T>());
  });
}

template <typename P, typename I>
absl::Status ConvertOn<DeviceType::kCuda>::Transpose(KernelContext* ctx, int64_t n, const Tensor& indptr,
                                                     const Tensor& indices, const Tensor* values) {
  const Stream& stream = ctx->stream();
  const cudaStream_t cs = ctx->cuda_stream();
  const int64_t m = indptr.numel() - 1, nnz = indices.numel();
  int64_t* tptr = ctx->output(0).data<int64_t>();
  if (nnz == 0) {
    KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(tptr, 0, sizeof(int64_t) * (n + 1), cs), "cudaMemsetAsync");
    return absl::OkStatus();
  }
  KPS_ASSIGN_OR_RETURN(std::vector<Tensor> sorted, Call("sort").Input("x", indices).OnStream(stream).Run());
  KPS_RETURN_IF_ERROR((LaunchKernel<&ColumnStartsKernel<I>>("ColumnStartsKernel", GridFor(n + 1), kBlock, 0, cs,
                                                             sorted[0].data<I>(), nnz, n, tptr)));
  sorted[0] = Tensor();
  KPS_ASSIGN_OR_RETURN(Tensor row_of, Tensor::Empty(Shape{nnz}, indices.dtype(), DeviceType::kCuda, stream));
  if (m > 0) {
    KPS_RETURN_IF_ERROR((LaunchKernel<&RowIdsKernel<P, I>>("RowIdsKernel", GridFor(m * 32), kBlock, 0, cs,
                                                            indptr.data<P>(), m, row_of.data<I>())));
  }
  const int64_t* perm = sorted[1].data<int64_t>();
  KPS_RETURN_IF_ERROR((LaunchKernel<&GatherKernel<I>>("GatherKernel", GridFor(nnz), kBlock, 0, cs, row_of.data<I>(),
                                                       perm, nnz, ctx->output(1).data<I>())));
  if (values == nullptr) return absl::OkStatus();
  return VisitSparseValueType(values->dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    return LaunchKernel<&GatherKernel<T>>("GatherKernel", GridFor(nnz), kBlock, 0, cs, values->data<T>(), perm, nnz,
                                          ctx->output(2).data<T>());
  });
}

KPS_REGISTER_DEVICE_KERNELS("coo_to_csr", CooToCsrKernel, int32_t, int64_t);
KPS_REGISTER_DEVICE_KERNELS("graph_from_edges", GraphFromEdgesKernel, int32_t, int64_t);
KPS_REGISTER_DEVICE_KERNELS("csr_transpose", CsrTransposeKernel, int32_t, int64_t);
KPS_REGISTER_DEVICE_KERNELS("csr_validate", CsrValidateKernel, int32_t, int64_t);

}  // namespace sparse
}  // namespace kps
