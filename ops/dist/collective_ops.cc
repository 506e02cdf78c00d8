// The NCCL collectives as ops: all_reduce, broadcast, reduce, all_gather, reduce_scatter,
// all_to_all, send, recv. Each picks its communicator by the string attribute `group`
// (dist/communicator.h; "world" from kps::dist::InitWorld) and enqueues one NCCL call (or
// group) on the call's stream, so it is ordered with the ops around it and can be captured
// in a CUDA graph where NCCL allows. CUDA tensors only; the checks that need no
// communicator (attributes, dtypes, the device) come first, so they hold without a GPU.
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dist/communicator.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"

namespace kps {
namespace collectives {
namespace {

using dist::Communicator;
using dist::ReduceOp;

constexpr char kGroupDoc[] = "communicator group (kps::dist::SetGroup; kps::dist::InitWorld sets 'world')";
constexpr char kReduceDoc[] = "reduction: sum, prod, max, min or avg";

absl::Status WithOp(const CallView& ctx, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("op '", ctx.schema().name(), "': ", s.message()));
}

absl::Status RequireCuda(const CallView& ctx) {
  if (ctx.device() == DeviceType::kCuda) return absl::OkStatus();
  if (ctx.num_inputs() == 0) {
    return ctx.Error("runs on CUDA only (NCCL moves GPU memory) but the call is on ", DeviceTypeName(ctx.device()),
                     ": give it OnDevice(DeviceType::kCuda) or a CUDA stream");
  }
  return ctx.Error("input 'x' is on ", DeviceTypeName(ctx.device()),
                   "; collectives run on CUDA tensors only (NCCL moves GPU memory): move it with "
                   "To(DeviceType::kCuda)");
}

absl::StatusOr<ReduceOp> ReduceOpAttr(const CallView& ctx) {
  const std::string& name = ctx.Attr<std::string>("op");
  absl::StatusOr<ReduceOp> op = dist::ParseReduceOp(name);
  if (!op.ok()) return ctx.Error("attribute 'op' = '", name, "' is not a reduction: sum, prod, max, min or avg");
  return op;
}

// The communicator of attribute `group`. When it is missing and NCCL cannot be used at all,
// that is the more useful error.
absl::StatusOr<std::shared_ptr<Communicator>> GroupOf(const CallView& ctx) {
  const std::string& name = ctx.Attr<std::string>("group");
  absl::StatusOr<std::shared_ptr<Communicator>> g = dist::GetGroup(name);
  if (g.ok()) return g;
  absl::StatusOr<dist::NcclLibraryInfo> nccl = dist::NcclLibrary();
  if (!nccl.ok()) return WithOp(ctx, nccl.status());
  return absl::Status(g.status().code(),
                      absl::StrCat("op '", ctx.schema().name(), "': attribute 'group': ", g.status().message()));
}

// Attribute `attr` (root, peer) names a rank of the group: 0 <= value < size.
absl::Status CheckRankAttr(const CallView& ctx, const char* attr, const Communicator& comm) {
  const int64_t v = ctx.Attr<int64_t>(attr);
  if (v < 0 || v >= comm.size()) {
    return ctx.Error("attribute '", attr, "' = ", v, " is not a rank of group '", ctx.Attr<std::string>("group"),
                     "' (", comm.size(), " ranks: expected 0..", comm.size() - 1, ")");
  }
  return absl::OkStatus();
}

absl::Status CheckNonNegative(const CallView& ctx, const char* attr) {
  const int64_t v = ctx.Attr<int64_t>(attr);
  if (v < 0) return ctx.Error("attribute '", attr, "' = ", v, " is negative; it is a rank");
  return absl::OkStatus();
}

// Checks in the order that needs the least: attributes alone, the device, then the group.
struct Resolved {
  std::shared_ptr<Communicator> comm;
  ReduceOp op = ReduceOp::kSum;
};
absl::StatusOr<Resolved> Resolve(const CallView& ctx, bool reduces, DataType dtype) {
  Resolved r;
  if (reduces) {
    KPS_ASSIGN_OR_RETURN(r.op, ReduceOpAttr(ctx));
  }
  KPS_RETURN_IF_ERROR(dist::CheckNcclDataType(ctx.schema().name(), dtype, reduces, r.op));
  KPS_RETURN_IF_ERROR(RequireCuda(ctx));
  KPS_ASSIGN_OR_RETURN(r.comm, GroupOf(ctx));
  return r;
}

// Resolve, for a kernel about to move `on` (its input, or recv's output): the tensor must be
// on the communicator's GPU, whose memory NCCL reads and writes.
absl::StatusOr<Resolved> ResolveOn(const KernelContext& ctx, bool reduces, const Tensor& on) {
  KPS_ASSIGN_OR_RETURN(Resolved r, Resolve(ctx, reduces, on.dtype()));
  if (on.device_index() != r.comm->cuda_device()) {
    return ctx.Error(ctx.num_inputs() > 0 ? "input 'x'" : "output 'out'", " is on cuda:", on.device_index(),
                     " but group '", ctx.Attr<std::string>("group"), "' (", r.comm->Describe(), ") is on cuda:",
                     r.comm->cuda_device());
  }
  return r;
}

int64_t RowElements(const Tensor& x) {
  int64_t row = 1;
  for (int d = 1; d < x.rank(); ++d) row *= x.shape()[d];
  return row;
}

// x's shape with dim 0 replaced.
Shape WithDim0(const Tensor& x, int64_t dim0) {
  std::vector<int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
  dims[0] = dim0;
  return Shape(dims);
}

// ---- all_reduce -------------------------------------------------------------------------

absl::Status InferAllReduce(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  KPS_RETURN_IF_ERROR(Resolve(ctx, true, x.dtype()).status());
  ctx.SetOutput(0, x.shape(), x.dtype());
  return absl::OkStatus();
}

class AllReduceKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(Resolved r, ResolveOn(*ctx, true, ctx->input(0)));
    const Tensor& x = ctx->input(0);
    if (x.numel() == 0) return absl::OkStatus();
    return WithOp(*ctx, r.comm->AllReduce(x.raw_data(), ctx->output(0).raw_data(), x.numel(), x.dtype(), r.op,
                                          ctx->cuda_stream()));
  }
};

// ---- broadcast, reduce -----------------------------------------------------------------

absl::Status InferBroadcast(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  KPS_RETURN_IF_ERROR(CheckNonNegative(ctx, "root"));
  KPS_ASSIGN_OR_RETURN(Resolved r, Resolve(ctx, false, x.dtype()));
  KPS_RETURN_IF_ERROR(CheckRankAttr(ctx, "root", *r.comm));
  ctx.SetOutput(0, x.shape(), x.dtype());
  return absl::OkStatus();
}

class BroadcastKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(Resolved r, ResolveOn(*ctx, false, ctx->input(0)));
    const Tensor& x = ctx->input(0);
    if (x.numel() == 0) return absl::OkStatus();
    return WithOp(*ctx, r.comm->Broadcast(x.raw_data(), ctx->output(0).raw_data(), x.numel(), x.dtype(),
                                          static_cast<int>(ctx->Attr<int64_t>("root")), ctx->cuda_stream()));
  }
};

absl::Status InferReduce(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  KPS_RETURN_IF_ERROR(CheckNonNegative(ctx, "root"));
  KPS_ASSIGN_OR_RETURN(Resolved r, Resolve(ctx, true, x.dtype()));
  KPS_RETURN_IF_ERROR(CheckRankAttr(ctx, "root", *r.comm));
  ctx.SetOutput(0, x.shape(), x.dtype());
  return absl::OkStatus();
}

class ReduceKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(Resolved r, ResolveOn(*ctx, true, ctx->input(0)));
    const Tensor& x = ctx->input(0);
    if (x.numel() == 0) return absl::OkStatus();
    return WithOp(*ctx, r.comm->Reduce(x.raw_data(), ctx->output(0).raw_data(), x.numel(), x.dtype(), r.op,
                                       static_cast<int>(ctx->Attr<int64_t>("root")), ctx->cuda_stream()));
  }
};

// ---- all_gather, reduce_scatter ---------------------------------------------------------

absl::Status InferAllGather(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  KPS_ASSIGN_OR_RETURN(Resolved r, Resolve(ctx, false, x.dtype()));
  const int64_t n = r.comm->size();
  ctx.SetOutput(0, x.rank() == 0 ? Shape{n} : WithDim0(x, x.shape()[0] * n), x.dtype());
  return absl::OkStatus();
}

class AllGatherKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(Resolved r, ResolveOn(*ctx, false, ctx->input(0)));
    const Tensor& x = ctx->input(0);
    if (x.numel() == 0) return absl::OkStatus();
    return WithOp(*ctx, r.comm->AllGather(x.raw_data(), ctx->output(0).raw_data(), x.numel(), x.dtype(),
                                          ctx->cuda_stream()));
  }
};

absl::Status InferReduceScatter(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) return ctx.Error("input 'x' is a scalar; reduce_scatter splits dim 0 among the ranks");
  KPS_ASSIGN_OR_RETURN(Resolved r, Resolve(ctx, true, x.dtype()));
  const int64_t n = r.comm->size();
  if (x.shape()[0] % n != 0) {
    return ctx.Error("dim 0 of input 'x' ", x.shape().ToString(), " has ", x.shape()[0],
                     " rows, not a multiple of the ", n, " ranks of group '", ctx.Attr<std::string>("group"), "'");
  }
  ctx.SetOutput(0, WithDim0(x, x.shape()[0] / n), x.dtype());
  return absl::OkStatus();
}

class ReduceScatterKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(Resolved r, ResolveOn(*ctx, true, ctx->input(0)));
    const Tensor& out = ctx->output(0);
    if (out.numel() == 0) return absl::OkStatus();
    return WithOp(*ctx, r.comm->ReduceScatter(ctx->input(0).raw_data(), out.raw_data(), out.numel(), out.dtype(),
                                              r.op, ctx->cuda_stream()));
  }
};

// ---- all_to_all -------------------------------------------------------------------------

// Rows (of dim 0) per rank on one side: the split sizes, or dim 0 / ranks when empty.
absl::StatusOr<std::vector<int64_t>> Splits(const CallView& ctx, const char* attr, int64_t rows, int64_t n,
                                            bool rows_known) {
  const std::vector<int64_t>& s = ctx.Attr<std::vector<int64_t>>(attr);
  if (s.empty()) {
    if (rows % n != 0) {
      return ctx.Error("dim 0 of input 'x' has ", rows, " rows, not a multiple of the ", n, " ranks of group '",
                       ctx.Attr<std::string>("group"), "'; give '", attr, "' for unequal splits");
    }
    return std::vector<int64_t>(static_cast<size_t>(n), rows / n);
  }
  if (static_cast<int64_t>(s.size()) != n) {
    return ctx.Error("attribute '", attr, "' has ", s.size(), " entries [", absl::StrJoin(s, ", "),
                     "]; it needs one per rank of group '", ctx.Attr<std::string>("group"), "' (", n, ")");
  }
  int64_t sum = 0;
  for (int64_t v : s) {
    if (v < 0) return ctx.Error("attribute '", attr, "' [", absl::StrJoin(s, ", "), "] has a negative size ", v);
    sum += v;
  }
  if (rows_known && sum != rows) {
    return ctx.Error("attribute '", attr, "' [", absl::StrJoin(s, ", "), "] adds up to ", sum,
                     " but dim 0 of input 'x' has ", rows, " rows");
  }
  return s;
}

struct AllToAllPlan {
  Resolved r;
  std::vector<int64_t> in_rows, out_rows;
};

absl::StatusOr<AllToAllPlan> PlanAllToAll(const CallView& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() == 0) return ctx.Error("input 'x' is a scalar; all_to_all splits dim 0 among the ranks");
  AllToAllPlan p;
  for (const char* attr : {"input_split_sizes", "output_split_sizes"}) {
    for (int64_t v : ctx.Attr<std::vector<int64_t>>(attr)) {
      if (v < 0) return ctx.Error("attribute '", attr, "' has a negative size ", v);
    }
  }
  KPS_ASSIGN_OR_RETURN(p.r, Resolve(ctx, false, x.dtype()));
  const int64_t n = p.r.comm->size();
  KPS_ASSIGN_OR_RETURN(p.in_rows, Splits(ctx, "input_split_sizes", x.shape()[0], n, true));
  KPS_ASSIGN_OR_RETURN(p.out_rows, Splits(ctx, "output_split_sizes", x.shape()[0], n, false));
  return p;
}

absl::Status InferAllToAll(InferContext& ctx) {
  KPS_ASSIGN_OR_RETURN(AllToAllPlan p, PlanAllToAll(ctx));
  const int64_t rows = std::accumulate(p.out_rows.begin(), p.out_rows.end(), int64_t{0});
  ctx.SetOutput(0, WithDim0(ctx.input(0), rows), ctx.input(0).dtype());
  return absl::OkStatus();
}

class AllToAllKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(AllToAllPlan p, PlanAllToAll(*ctx));
    const Tensor& x = ctx->input(0);
    const size_t row = static_cast<size_t>(RowElements(x));
    const size_t n = p.in_rows.size();
    std::vector<size_t> sc(n), so(n), rc(n), ro(n);
    size_t s_at = 0, r_at = 0;
    for (size_t i = 0; i < n; ++i) {
      sc[i] = static_cast<size_t>(p.in_rows[i]) * row;
      so[i] = s_at;
      s_at += sc[i];
      rc[i] = static_cast<size_t>(p.out_rows[i]) * row;
      ro[i] = r_at;
      r_at += rc[i];
    }
    return WithOp(*ctx, p.r.comm->AllToAll(x.raw_data(), sc, so, ctx->output(0).raw_data(), rc, ro, x.dtype(),
                                           ctx->cuda_stream()));
  }
};

// ---- send, recv -------------------------------------------------------------------------

absl::Status CheckPeer(const CallView& ctx, const Communicator& comm) {
  KPS_RETURN_IF_ERROR(CheckRankAttr(ctx, "peer", comm));
  if (ctx.Attr<int64_t>("peer") == comm.rank()) {
    return ctx.Error("attribute 'peer' = ", comm.rank(), " is this rank; a rank cannot ", ctx.schema().name(),
                     " to itself (it would wait for itself)");
  }
  return absl::OkStatus();
}

absl::Status InferSend(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(CheckNonNegative(ctx, "peer"));
  KPS_ASSIGN_OR_RETURN(Resolved r, Resolve(ctx, false, ctx.input(0).dtype()));
  return CheckPeer(ctx, *r.comm);
}

class SendKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(Resolved r, ResolveOn(*ctx, false, ctx->input(0)));
    KPS_RETURN_IF_ERROR(CheckPeer(*ctx, *r.comm));
    const Tensor& x = ctx->input(0);
    if (x.numel() == 0) return absl::OkStatus();
    return WithOp(*ctx, r.comm->Send(x.raw_data(), x.numel(), x.dtype(), static_cast<int>(ctx->Attr<int64_t>("peer")),
                                     ctx->cuda_stream()));
  }
};

absl::Status InferRecv(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(CheckNonNegative(ctx, "peer"));
  const std::vector<int64_t>& dims = ctx.Attr<std::vector<int64_t>>("shape");
  KPS_RETURN_IF_ERROR(WithOp(ctx, ValidateShape(dims, "attribute 'shape'")));
  const DataType dtype = ctx.Attr<DataType>("dtype");
  KPS_ASSIGN_OR_RETURN(Resolved r, Resolve(ctx, false, dtype));
  KPS_RETURN_IF_ERROR(CheckPeer(ctx, *r.comm));
  ctx.SetOutput(0, Shape(dims), dtype);
  return absl::OkStatus();
}

class RecvKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    const Tensor& out = ctx->output(0);
    KPS_ASSIGN_OR_RETURN(Resolved r, ResolveOn(*ctx, false, out));
    KPS_RETURN_IF_ERROR(CheckPeer(*ctx, *r.comm));
    if (out.numel() == 0) return absl::OkStatus();
    return WithOp(*ctx, r.comm->Recv(out.raw_data(), out.numel(), out.dtype(),
                                     static_cast<int>(ctx->Attr<int64_t>("peer")), ctx->cuda_stream()));
  }
};

// One kernel class serves every dtype (NCCL takes the dtype as an argument).
template <typename K>
struct AnyDtype {
  template <typename T>
  using Of = K;
};

}  // namespace

#define KPS_COLLECTIVE_KERNELS_(name, Kernel) \
  KPS_REGISTER_KERNEL_FOR_TYPES(name, DeviceType::kCuda, AnyDtype<Kernel>::template Of, KPS_ALL_CPP_TYPES)

KPS_REGISTER_OP("all_reduce")
    .Input("x", "CUDA tensor, the same shape and dtype on every rank")
    .Output("out", "x's shape: the reduction over the ranks (may be x itself, given with Call::Output)")
    .Attr<std::string>("op", "sum", kReduceDoc)
    .Attr<std::string>("group", "world", kGroupDoc)
    .SetInferFn(InferAllReduce)
    .RequireContiguousInputs()
    .Kernels({DeviceType::kCuda}, AllDataTypes())
    .Doc("NCCL all-reduce on the call's stream: every rank gets op over the ranks' x. int16 cannot reduce (cast to "
         "int32), bool only with max (or) and min (and); avg of integers rounds as NCCL does.");
KPS_COLLECTIVE_KERNELS_("all_reduce", AllReduceKernel);

KPS_REGISTER_OP("broadcast")
    .Input("x", "CUDA tensor, the same shape and dtype on every rank (read on the root only)")
    .Output("out", "x's shape: root's x on every rank")
    .Attr<int64_t>("root", 0, "the rank whose x is sent")
    .Attr<std::string>("group", "world", kGroupDoc)
    .SetInferFn(InferBroadcast)
    .RequireContiguousInputs()
    .Kernels({DeviceType::kCuda}, AllDataTypes())
    .Doc("NCCL broadcast on the call's stream: every rank's out gets the root's x.");
KPS_COLLECTIVE_KERNELS_("broadcast", BroadcastKernel);

KPS_REGISTER_OP("reduce")
    .Input("x", "CUDA tensor, the same shape and dtype on every rank")
    .Output("out", "x's shape: the reduction on the root; not written on the other ranks")
    .Attr<std::string>("op", "sum", kReduceDoc)
    .Attr<int64_t>("root", 0, "the rank that gets the result")
    .Attr<std::string>("group", "world", kGroupDoc)
    .SetInferFn(InferReduce)
    .RequireContiguousInputs()
    .Kernels({DeviceType::kCuda}, AllDataTypes())
    .Doc("NCCL reduce on the call's stream: the root gets op over the ranks' x. Dtypes as all_reduce.");
KPS_COLLECTIVE_KERNELS_("reduce", ReduceKernel);

KPS_REGISTER_OP("all_gather")
    .Input("x", "CUDA tensor, the same shape and dtype on every rank")
    .Output("out", "[ranks * x.shape[0], ...] (a scalar x gives [ranks]): rank i's x at rows i * x.shape[0]")
    .Attr<std::string>("group", "world", kGroupDoc)
    .SetInferFn(InferAllGather)
    .RequireContiguousInputs()
    .Kernels({DeviceType::kCuda}, AllDataTypes())
    .Doc("NCCL all-gather on the call's stream: the ranks' x concatenated along dim 0, in rank order.");
KPS_COLLECTIVE_KERNELS_("all_gather", AllGatherKernel);

KPS_REGISTER_OP("reduce_scatter")
    .Input("x", "CUDA tensor [ranks * k, ...], the same shape and dtype on every rank")
    .Output("out", "[k, ...]: op over the ranks of x's rows [rank * k, (rank + 1) * k)")
    .Attr<std::string>("op", "sum", kReduceDoc)
    .Attr<std::string>("group", "world", kGroupDoc)
    .SetInferFn(InferReduceScatter)
    .RequireContiguousInputs()
    .Kernels({DeviceType::kCuda}, AllDataTypes())
    .Doc("NCCL reduce-scatter on the call's stream: x's dim 0 splits into one block per rank; each rank gets the "
         "reduction of its block. Dtypes as all_reduce.");
KPS_COLLECTIVE_KERNELS_("reduce_scatter", ReduceScatterKernel);

KPS_REGISTER_OP("all_to_all")
    .Input("x", "CUDA tensor [rows, ...]: the block for rank j is input_split_sizes[j] rows, in rank order")
    .Output("out", "[sum of output_split_sizes, ...]: the block from rank i at its place in rank order")
    .Attr<std::vector<int64_t>>("input_split_sizes", {}, "rows of x sent to each rank (empty: rows / ranks each)")
    .Attr<std::vector<int64_t>>("output_split_sizes", {},
                                "rows received from each rank (empty: x's rows / ranks each)")
    .Attr<std::string>("group", "world", kGroupDoc)
    .SetInferFn(InferAllToAll)
    .RequireContiguousInputs()
    .Kernels({DeviceType::kCuda}, AllDataTypes())
    .Doc("All-to-all on the call's stream, as torch's all_to_all_single: rank i's block j goes to rank j's block "
         "i (one NCCL group of sends and receives). Rank i's output_split_sizes[j] must equal rank j's "
         "input_split_sizes[i]; NCCL cannot check that, and a mismatch leaves the ranks waiting (the "
         "communicator's Synchronize then times out).");
KPS_COLLECTIVE_KERNELS_("all_to_all", AllToAllKernel);

KPS_REGISTER_OP("send")
    .Input("x", "CUDA tensor to send")
    .RequiredAttr<int64_t>("peer", "the rank that receives (not this rank)")
    .Attr<std::string>("group", "world", kGroupDoc)
    .SetInferFn(InferSend)
    .RequireContiguousInputs()
    .Kernels({DeviceType::kCuda}, AllDataTypes())
    .Doc("NCCL point-to-point send on the call's stream; the peer must recv the same shape and dtype. No output. "
         "A send waits (on the GPU) for its recv: two ranks that both send first to each other deadlock on large "
         "messages; order them (even ranks send first).");
KPS_COLLECTIVE_KERNELS_("send", SendKernel);

KPS_REGISTER_OP("recv")
    .Output("out", "a tensor of `shape` and `dtype`: what the peer sent")
    .RequiredAttr<int64_t>("peer", "the rank that sends (not this rank)")
    .RequiredAttr<std::vector<int64_t>>("shape", "the shape the peer sends")
    .Attr<DataType>("dtype", DataType::kFloat32, "the dtype the peer sends")
    .Attr<std::string>("group", "world", kGroupDoc)
    .SetInferFn(InferRecv)
    .Kernels({DeviceType::kCuda}, AllDataTypes())
    .Doc("NCCL point-to-point receive on the call's stream (no inputs: call it with OnDevice(DeviceType::kCuda) "
         "or a CUDA stream).");
KPS_COLLECTIVE_KERNELS_("recv", RecvKernel);

#undef KPS_COLLECTIVE_KERNELS_

}  // namespace collectives
}  // namespace kps
