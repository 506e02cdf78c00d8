// The CUDA part of graph_relabel (GraphOn<kCuda>::Relabel) and the registration of its
// kernels.
//
// The new ids come from KPS's sort of the keys degree * n + id (stable, so ties go by id);
// each new row's neighbours, mapped to new ids, are written as keys row * n + column and
// sorted whole by KPS's sort, which orders every row at once (rows are already grouped);
// the columns are the keys modulo n. n <= 2^31 and degrees <= n keep the keys in int64.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/sparse/graph_ops.h"
#include "ops/sparse/sparse_launch.h"
#include "registry/call.h"
#include "registry/cuda_launch.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace sparse {
namespace {

constexpr int kBlock = kSparseBlock;

// keys[u] = degree(u) * n + u.
template <typename P>
__global__ void __launch_bounds__(kBlock) RelabelKeysKernel(const P* __restrict__ ptr, int64_t n,
                                                           int64_t* __restrict__ keys) {
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    keys[u] = (static_cast<int64_t>(ptr[u + 1]) - static_cast<int64_t>(ptr[u])) * n + u;
  }
}

// inv[perm[i]] = i, and counts[i + 1] = the degree of new vertex i (counts[0] = 0).
template <typename P>
__global__ void __launch_bounds__(kBlock) RelabelInverseKernel(const P* __restrict__ ptr,
                                                              const int64_t* __restrict__ perm, int64_t n,
                                                              int64_t* __restrict__ inv, int64_t* __restrict__ counts) {
  if (blockIdx.x == 0 && threadIdx.x == 0) counts[0] = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t old = perm[i];
    inv[old] = i;
    counts[i + 1] = static_cast<int64_t>(ptr[old + 1]) - static_cast<int64_t>(ptr[old]);
  }
}

// A warp per new row i: its old row's neighbours under the new ids, as keys i * n + column
// at out_ptr[i]. Columns outside [0, n) (unchecked input) keep their value.
template <typename P, typename I>
__global__ void __launch_bounds__(kBlock) RelabelRowsKernel(const P* __restrict__ ptr, const I* __restrict__ idx,
                                                           const int64_t* __restrict__ perm,
                                                           const int64_t* __restrict__ inv,
                                                           const int64_t* __restrict__ out_ptr, int64_t n,
                                                           int64_t* __restrict__ keys) {
  const int lane = threadIdx.x & 31;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; i < n;
       i += (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5) {
    const int64_t old = perm[i];
    const int64_t lo = static_cast<int64_t>(ptr[old]), hi = static_cast<int64_t>(ptr[old + 1]);
    const int64_t at = out_ptr[i] - lo;
    for (int64_t k = lo + lane; k < hi; k += 32) {
      const int64_t c = static_cast<int64_t>(idx[k]);
      keys[at + k] = i * n + (c >= 0 && c < n ? inv[c] : c);
    }
  }
}

// out[e] = keys[e] mod n.
template <typename I>
__global__ void __launch_bounds__(kBlock) RelabelColumnsKernel(const int64_t* __restrict__ keys, int64_t nnz,
                                                              int64_t n, I* __restrict__ out) {
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < nnz;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[e] = static_cast<I>(keys[e] % n);
  }
}

}  // namespace

template <typename P, typename I>
absl::Status GraphOn<DeviceType::kCuda>::Relabel(KernelContext* ctx, const Tensor& indptr, const Tensor& indices) {
  const Stream& stream = ctx->stream();
  const cudaStream_t cs = ctx->cuda_stream();
  const int64_t n = indptr.numel() - 1, nnz = indices.numel();
  Tensor& out_ptr = ctx->output(0);
  if (n == 0) {
    KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(out_ptr.raw_data(), 0, sizeof(int64_t), cs), "cudaMemsetAsync");
    return absl::OkStatus();
  }
  const P* ptr = indptr.data<P>();
  KPS_ASSIGN_OR_RETURN(Tensor keys, Tensor::Empty(Shape{n}, DataType::kInt64, DeviceType::kCuda, stream));
  KPS_RETURN_IF_ERROR((LaunchKernel<&RelabelKeysKernel<P>>("RelabelKeysKernel", GridFor(n), kBlock, 0, cs, ptr, n,
                                                            keys.data<int64_t>())));
  Tensor& perm = ctx->output(2);
  KPS_RETURN_IF_ERROR(Call("sort").Input("x", keys).Output("indices", perm).OnStream(stream).Run().status());
  keys = Tensor();
  KPS_ASSIGN_OR_RETURN(Tensor inv, Tensor::Empty(Shape{n}, DataType::kInt64, DeviceType::kCuda, stream));
  KPS_ASSIGN_OR_RETURN(Tensor counts, Tensor::Empty(Shape{n + 1}, DataType::kInt64, DeviceType::kCuda, stream));
  KPS_RETURN_IF_ERROR((LaunchKernel<&RelabelInverseKernel<P>>("RelabelInverseKernel", GridFor(n), kBlock, 0, cs, ptr,
                                                               perm.data<int64_t>(), n, inv.data<int64_t>(),
                                                               counts.data<int64_t>())));
  KPS_RETURN_IF_ERROR(
      Call("cumsum").Input("x", counts).Output("out", out_ptr).Attr("dim", int64_t{0}).OnStream(stream).Run().status());
  if (nnz == 0) return absl::OkStatus();
  KPS_ASSIGN_OR_RETURN(Tensor row_keys, Tensor::Empty(Shape{nnz}, DataType::kInt64, DeviceType::kCuda, stream));
  KPS_RETURN_IF_ERROR((LaunchKernel<&RelabelRowsKernel<P, I>>(
      "RelabelRowsKernel", GridFor(n * 32), kBlock, 0, cs, ptr, indices.data<I>(), perm.data<int64_t>(),
      inv.data<int64_t>(), out_ptr.data<int64_t>(), n, row_keys.data<int64_t>())));
  inv = Tensor();
  KPS_ASSIGN_OR_RETURN(std::vector<Tensor> sorted, Call("sort").Input("x", row_keys).OnStream(stream).Run());
  row_keys = Tensor();
  return LaunchKernel<&RelabelColumnsKernel<I>>("RelabelColumnsKernel", GridFor(nnz), kBlock, 0, cs,
                                                sorted[0].data<int64_t>(), nnz, n, ctx->output(1).data<I>());
}

KPS_REGISTER_DEVICE_KERNELS("graph_relabel", GraphRelabelKernel, int32_t, int64_t);

}  // namespace sparse
}  // namespace kps
