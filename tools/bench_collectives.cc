// bench_collectives: the KPS collective ops against raw NCCL calls in one program.
//
//   build/kps launch --nproc 2 -- build/tools/bench_collectives [--max-bytes 4G] [--min-bytes 8]
//       [--ops all_reduce,all_gather,reduce_scatter] [--dtype float32] [--host-calls 2000]
//       [--data-path default|nonblocking|blocking|both]
//
// For each op and size (8 B to --max-bytes, x2 steps): the time per call on the GPU
// (CUDA events around back-to-back calls on one stream, best of 3 rounds, KPS and raw
// alternating) of the op called by name (kps::Call with a preallocated output, as an
// application would) and of the same NCCL call made directly through the same dlopen table
// (dist/nccl_lib.h), with nccl-tests' bandwidths: algbw = bytes / time, where bytes is the
// larger buffer (all_gather's output, reduce_scatter's input); busbw = algbw * 2(n-1)/n for
// all_reduce, algbw * (n-1)/n for all_gather and reduce_scatter. Then the host time per
// call at small sizes: the wall time to enqueue --host-calls calls with no synchronization,
// divided by the count, for raw NCCL, the op, the Communicator method the op's kernel calls,
// and the op's Call::Infer alone (what KPS adds, split). Rank 0 prints markdown tables.
//
// --data-path picks the communicators' data path (dist/communicator.h): default follows
// KPS_NCCL_BLOCKING; both runs every table on the nonblocking world, then again on a blocking
// duplicate of it (Split(0, rank, kBlocking), set as group "world"), in one process. Each
// table's raw calls go to the communicator the ops use for data (nccl_comm()).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "dist/communicator.h"
#include "dist/nccl_lib.h"
#include "registry/call.h"
#include "registry/status.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace {

using kps::DataType;
using kps::Tensor;

struct Options {
  uint64_t min_bytes = 8;
  uint64_t max_bytes = uint64_t{4} << 30;
  std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter"};
  DataType dtype = DataType::kFloat32;
  int host_calls = 2000;
  std::string data_path = "default";  // default, nonblocking, blocking or both
};

bool ParseBytes(const std::string& s, uint64_t* out) {
  uint64_t scale = 1;
  std::string num = s;
  if (!num.empty()) {
    const char c = num.back();
    if (c == 'K' || c == 'k') scale = uint64_t{1} << 10;
    if (c == 'M' || c == 'm') scale = uint64_t{1} << 20;
    if (c == 'G' || c == 'g') scale = uint64_t{1} << 30;
    if (scale != 1) num.pop_back();
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(num, &v)) return false;
  *out = v * scale;
  return true;
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "bench_collectives: %s\nusage: bench_collectives [--min-bytes N] [--max-bytes N (K/M/G)] "
               "[--ops all_reduce,all_gather,reduce_scatter] [--dtype float32] [--host-calls N] "
               "[--data-path default|nonblocking|blocking|both]\n",
               why);
  return 2;
}

#define CHECK_OK(expr)                                                                  \
  do {                                                                                  \
    const absl::Status s_ = (expr);                                                     \
    if (!s_.ok()) {                                                                     \
      std::fprintf(stderr, "bench_collectives: %s: %s\n", #expr, s_.ToString().c_str()); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

ncclDataType_t NcclTypeOf(DataType t) {
  switch (t) {
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kInt8: return ncclInt8;
    case DataType::kUInt8: return ncclUint8;
    default: return ncclFloat32;
  }
}

// One op at one size: the buffers and the two ways to call it.
struct Case {
  std::string op;
  uint64_t bytes = 0;  // nccl-tests' size: the larger buffer
  Tensor in, out;
  std::function<absl::Status()> kps_call;
  std::function<ncclResult_t()> raw_call;  // through RawResult: a nonblocking communicator may answer in progress
  // The host-time split of what KPS adds: the same call through the Communicator method the
  // op's kernel calls (its checks and the watchdog), and the op's Call::Infer (name lookups,
  // schema and attribute checks, the group's lookup) without enqueueing anything.
  std::function<absl::Status()> comm_call;
  std::function<absl::Status()> infer_call;
};

absl::StatusOr<Case> MakeCase(const std::string& op, uint64_t bytes, DataType dtype, int n,
                              const kps::dist::NcclLib* nccl, ncclComm_t comm, const kps::Stream& stream,
                              const kps::dist::Communicator& world) {
  const int64_t esize = static_cast<int64_t>(kps::DataTypeSize(dtype));
  // Elements of the larger buffer, a multiple of n (one block per rank).
  int64_t count = std::max<int64_t>(static_cast<int64_t>(bytes) / esize / n * n, n);
  Case c;
  c.op = op;
  c.bytes = static_cast<uint64_t>(count * esize);
  const int64_t small = count / n;
  kps::Shape in_shape{count}, out_shape{count};
  if (op == "all_gather") in_shape = kps::Shape{small};
  if (op == "reduce_scatter") out_shape = kps::Shape{small};
  KPS_ASSIGN_OR_RETURN(c.in, Tensor::Empty(in_shape, dtype, kps::DeviceType::kCuda, stream));
  KPS_ASSIGN_OR_RETURN(c.out, Tensor::Empty(out_shape, dtype, kps::DeviceType::kCuda, stream));
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c.in.raw_data(), 0, c.in.nbytes(), stream.cuda_stream()), "memset");
  const ncclDataType_t t = NcclTypeOf(dtype);
  cudaStream_t s = stream.cuda_stream();
  void* in = c.in.raw_data();
  void* out = c.out.raw_data();
  Tensor tin = c.in, tout = c.out;
  c.kps_call = [op, tin, tout, stream] {
    return kps::Call(op).Input("x", tin).Output("out", tout).OnStream(stream).Run().status();
  };
  c.infer_call = [op, tin, tout, stream] {
    return kps::Call(op).Input("x", tin).Output("out", tout).OnStream(stream).Infer().status();
  };
  const kps::dist::Communicator* w = &world;
  const auto sum = kps::dist::ReduceOp::kSum;
  if (op == "all_reduce") {
    c.raw_call = [=] { return nccl->AllReduce(in, out, static_cast<size_t>(count), t, ncclSum, comm, s); };
    c.comm_call = [=] { return w->AllReduce(in, out, static_cast<size_t>(count), dtype, sum, s); };
  } else if (op == "all_gather") {
    c.raw_call = [=] { return nccl->AllGather(in, out, static_cast<size_t>(small), t, comm, s); };
    c.comm_call = [=] { return w->AllGather(in, out, static_cast<size_t>(small), dtype, s); };
  } else {
    c.raw_call = [=] { return nccl->ReduceScatter(in, out, static_cast<size_t>(small), t, ncclSum, comm, s); };
    c.comm_call = [=] { return w->ReduceScatter(in, out, static_cast<size_t>(small), dtype, sum, s); };
  }
  return c;
}

double BusFactor(const std::string& op, int n) {
  if (n <= 1) return 0.0;
  return op == "all_reduce" ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
}

// A raw call's result as the KPS ops treat it: on the nonblocking path an enqueue may answer
// ncclInProgress and is then polled until it is done (a blocking communicator never answers it).
ncclResult_t RawResult(const kps::dist::NcclLib* nccl, ncclComm_t comm, ncclResult_t r) {
  while (r == ncclInProgress) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t q = nccl->CommGetAsyncError(comm, &state);
    r = q != ncclSuccess ? q : state;
  }
  return r;
}

// Both tables (time per call by size, then host time per call) for the ops of group "world",
// which is `world`, against raw calls on its data communicator.
void RunTables(const Options& o, const kps::dist::Communicator& world, const kps::dist::NcclLib* nccl,
               const kps::Stream& stream) {
  // The communicator the ops use for data: the blocking twin on the blocking path.
  ncclComm_t comm = static_cast<ncclComm_t>(world.nccl_comm());
  const int n = world.size();
  const bool lead = world.rank() == 0;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);

  if (lead) {
    std::printf("# bench_collectives: %d ranks, NCCL %s, %s, sum, %s data path%s\n\n", n,
                kps::dist::NcclVersionString(nccl->version).c_str(), std::string(kps::DataTypeName(o.dtype)).c_str(),
                std::string(kps::dist::DataPathName(world.data_path())).c_str(),
                world.data_path() == kps::dist::DataPath::kBlocking ? " (blocking twin, the default)"
                                                                    : " (nonblocking communicator)");
    std::printf("| op | bytes | NCCL us | NCCL algbw GB/s | NCCL busbw GB/s | KPS us | KPS busbw GB/s | KPS/NCCL |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  for (const std::string& op : o.ops) {
    for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
      auto c_or = MakeCase(op, bytes, o.dtype, n, nccl, comm, stream, world);
      CHECK_OK(c_or.status());
      Case& c = *c_or;
      const int iters = c.bytes <= (uint64_t{1} << 20) ? 100 : static_cast<int>(std::max<uint64_t>(
                                                                   5, (uint64_t{100} << 20) / c.bytes));
      double best[2] = {1e30, 1e30};  // [raw, kps] seconds per call
      for (int round = 0; round < 3; ++round) {
        for (int which = 0; which < 2; ++which) {
          for (int w = 0; w < 3; ++w) {
            if (which == 0) {
              CHECK_OK(kps::dist::NcclStatus(nccl, RawResult(nccl, comm, c.raw_call()), "raw warmup", comm));
            } else {
              CHECK_OK(c.kps_call());
            }
          }
          cudaEventRecord(start, stream.cuda_stream());
          for (int it = 0; it < iters; ++it) {
            if (which == 0) {
              CHECK_OK(kps::dist::NcclStatus(nccl, RawResult(nccl, comm, c.raw_call()), "raw call", comm));
            } else {
              CHECK_OK(c.kps_call());
            }
          }
          cudaEventRecord(stop, stream.cuda_stream());
          CHECK_OK(world.Synchronize(stream));
          float ms = 0;
          cudaEventElapsedTime(&ms, start, stop);
          best[which] = std::min(best[which], ms * 1e-3 / iters);
        }
      }
      if (lead) {
        const double alg_raw = c.bytes / best[0] / 1e9, alg_kps = c.bytes / best[1] / 1e9;
        const double f = BusFactor(op, n);
        std::printf("| %s | %llu | %.2f | %.2f | %.2f | %.2f | %.2f | %.3f |\n", op.c_str(),
                    static_cast<unsigned long long>(c.bytes), best[0] * 1e6, alg_raw, alg_raw * f, best[1] * 1e6,
                    alg_kps * f, best[0] / best[1]);
        std::fflush(stdout);
      }
    }
  }

  // Host time per call: enqueue host_calls calls back to back, no synchronization between.
  if (lead) {
    // added = KPS - NCCL; of it, Communicator - NCCL is the method the kernel calls, and
    // Call::Infer is the by-name call's checks (a part of KPS's time that enqueues nothing).
    std::printf("\n| op | bytes | NCCL host us/call | KPS host us/call | added us/call | Communicator us/call "
                "| Call::Infer us/call |\n|---|---:|---:|---:|---:|---:|---:|\n");
  }
  for (const std::string& op : o.ops) {
    for (uint64_t bytes : {uint64_t{8}, uint64_t{1024}}) {
      auto c_or = MakeCase(op, bytes, o.dtype, n, nccl, comm, stream, world);
      CHECK_OK(c_or.status());
      Case& c = *c_or;
      double best[4] = {1e30, 1e30, 1e30, 1e30};
      for (int round = 0; round < 3; ++round) {
        for (int which = 0; which < 4; ++which) {
          CHECK_OK(world.Synchronize(stream));
          const absl::Time t0 = absl::Now();
          for (int it = 0; it < o.host_calls; ++it) {
            if (which == 0) {
              CHECK_OK(kps::dist::NcclStatus(nccl, RawResult(nccl, comm, c.raw_call()), "raw call", comm));
            } else if (which == 1) {
              CHECK_OK(c.kps_call());
            } else if (which == 2) {
              CHECK_OK(c.comm_call());
            } else {
              CHECK_OK(c.infer_call());
            }
          }
          const double us = absl::ToDoubleMicroseconds(absl::Now() - t0) / o.host_calls;
          best[which] = std::min(best[which], us);
          CHECK_OK(world.Synchronize(stream));
        }
      }
      if (lead) {
        std::printf("| %s | %llu | %.3f | %.3f | %.3f | %.3f | %.3f |\n", op.c_str(),
                    static_cast<unsigned long long>(c.bytes), best[0], best[1], best[1] - best[0], best[2], best[3]);
      }
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--min-bytes") {
      if (!ParseBytes(value(), &o.min_bytes)) return Usage("bad --min-bytes");
    } else if (a == "--max-bytes") {
      if (!ParseBytes(value(), &o.max_bytes)) return Usage("bad --max-bytes");
    } else if (a == "--ops") {
      o.ops = absl::StrSplit(value(), ',', absl::SkipEmpty());
      for (const std::string& op : o.ops) {
        if (op != "all_reduce" && op != "all_gather" && op != "reduce_scatter") return Usage("unknown op in --ops");
      }
    } else if (a == "--dtype") {
      auto t = kps::ParseDataType(value());
      if (!t.ok() || *t == DataType::kBool || *t == DataType::kInt16) return Usage("bad --dtype");
      o.dtype = *t;
    } else if (a == "--host-calls") {
      if (!absl::SimpleAtoi(value(), &o.host_calls) || o.host_calls < 1) return Usage("bad --host-calls");
    } else if (a == "--data-path") {
      o.data_path = value();
      if (o.data_path != "default" && o.data_path != "nonblocking" && o.data_path != "blocking" &&
          o.data_path != "both") {
        return Usage("--data-path: default, nonblocking, blocking or both");
      }
    } else {
      return Usage(("unknown argument " + a).c_str());
    }
  }
  if (o.min_bytes < 1 || o.min_bytes > o.max_bytes) return Usage("need 1 <= --min-bytes <= --max-bytes");

  kps::dist::DataPath first = kps::dist::DataPath::kDefault;
  if (o.data_path == "nonblocking" || o.data_path == "both") first = kps::dist::DataPath::kNonblocking;
  if (o.data_path == "blocking") first = kps::dist::DataPath::kBlocking;
  auto world_or = kps::dist::InitWorld(absl::Seconds(120), first);
  CHECK_OK(world_or.status());
  std::shared_ptr<kps::dist::Communicator> world = *world_or;
  auto nccl_or = kps::dist::LoadNcclLib();
  CHECK_OK(nccl_or.status());
  const kps::dist::NcclLib* nccl = *nccl_or;
  auto owned = kps::OwnedCudaStream::Create();
  CHECK_OK(owned.status());
  const kps::Stream stream = owned->stream();
  RunTables(o, *world, nccl, stream);
  if (o.data_path == "both") {
    // A blocking duplicate of the world as group "world", so that the ops and the raw calls
    // both move to it (the nonblocking world, its parent, stays alive and idle).
    auto twin_or = world->Split(0, world->rank(), kps::dist::DataPath::kBlocking);
    CHECK_OK(twin_or.status());
    kps::dist::SetGroup("world", *twin_or);
    if (world->rank() == 0) std::printf("\n");
    RunTables(o, **twin_or, nccl, stream);
    CHECK_OK((*twin_or)->Synchronize(stream));
  }
  kps::dist::ClearGroups();
  return 0;
}
