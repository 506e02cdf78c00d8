// NCCL communicators for one process per GPU, and the named groups the collective ops
// (ops/dist/) pick by their `group` attribute.
//
//   KPS_ASSIGN_OR_RETURN(std::shared_ptr<kps::dist::Communicator> world, kps::dist::InitWorld());
//   KPS_ASSIGN_OR_RETURN(kps::Tensor sum, kps::Call("all_reduce").Input("x", x).Attr("op", "sum").RunOne());
//   KPS_RETURN_IF_ERROR(world->Synchronize(kps::Stream::Cuda()));  // bounded by the timeout
//
// NCCL is opened at run time (dist/nccl_lib.h); a build without NCCL, or a machine without
// libnccl.so.2, gets FailedPrecondition Statuses that say so. Communicators are created
// nonblocking (NCCL's config.blocking = 0): every wait on the host (init, split, Synchronize)
// polls ncclCommGetAsyncError and gives up at the communicator's timeout, aborting it, with an
// error naming the rank and the world: a missing or dead peer never hangs a process. The data
// calls run on a blocking twin of each communicator (DataPath below), which saves NCCL's
// helper-thread launch (tens of microseconds a call); a data call stuck inside NCCL past the
// timeout ends the process, saying why. KPS_NCCL_BLOCKING=0 keeps the data calls on the
// nonblocking communicator, where such a call returns DeadlineExceeded instead.
// This header does not include nccl.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "dist/rendezvous.h"
#include "registry/data_type.h"
#include "registry/stream.h"

namespace kps {
namespace dist {

// The library the process opened: its path, its ncclGetVersion() code and "2.28.9".
struct NcclLibraryInfo {
  std::string path;
  int version = 0;
  std::string version_string;
};

// Opens NCCL on first use (then keeps the result): $KPS_NCCL_LIBRARY alone when set, else
// the path CMake found, then "libnccl.so.2". FailedPrecondition when KPS was built without
// NCCL, when no candidate opens (each listed with dlerror's reason), or when the library
// is older than 2.18.
absl::StatusOr<NcclLibraryInfo> NcclLibrary();

// FailedPrecondition for a build without NCCL (KPS_WITH_NCCL=OFF or no nccl.h found).
absl::Status NcclUnavailableError();

enum class ReduceOp { kSum, kProd, kMax, kMin, kAvg };
// "sum", "prod", "max", "min", "avg"; anything else is InvalidArgument listing them.
absl::StatusOr<ReduceOp> ParseReduceOp(absl::string_view name);
absl::string_view ReduceOpName(ReduceOp op);

// Whether NCCL can carry `dtype` for op `op`: every KPS dtype moves (bool and int16, which
// NCCL lacks, as bytes); every dtype but int16 reduces, bool only under max (or) and min
// (and). The error names the op and the dtype.
absl::Status CheckNcclDataType(absl::string_view op, DataType dtype, bool reduces, ReduceOp rop = ReduceOp::kSum);

// How a communicator's data calls (the collectives, send and recv, all_to_all's group) reach
// NCCL. Creation and Split are nonblocking on either path, bounded by the timeout.
enum class DataPath {
  // Create and InitWorld: KPS_NCCL_BLOCKING's (DataPathFromEnv; kBlocking when unset);
  // Split: the parent's.
  kDefault,
  // On the nonblocking communicator (KPS_NCCL_BLOCKING=0). Every enqueue is bounded: NCCL
  // answers ncclInProgress and finishes the launch on a helper thread, which the call polls
  // until the timeout. That thread costs the host tens of microseconds a call (an 8-byte
  // all_reduce: 63 us against 12 us on the blocking twin, 2 x H200, NCCL 2.28.3).
  kNonblocking,
  // The default (KPS_NCCL_BLOCKING unset or 1). On a blocking twin: ncclCommSplit(color 0,
  // key = rank, config.blocking = 1) of the nonblocking communicator, which stays for Split
  // and the timeouts. NCCL launches on the calling thread. Synchronize still polls the stream
  // and ncclCommGetAsyncError, and on an error or the timeout aborts both communicators and
  // returns the error (DeadlineExceeded for a missing peer). But a data call can itself block
  // on a peer (NCCL connects peers lazily at their first collective of a kind or first
  // send/recv; a full work queue waits for the GPU), and NCCL cannot interrupt a blocking call
  // safely, so a watchdog thread (dist/call_watchdog.h) ends the process, saying why, when one
  // stays inside NCCL past the timeout (as PyTorch's NCCL watchdog does). Every rank must use
  // the same path.
  kBlocking,
};

// KPS_NCCL_BLOCKING's value (`value` may be null: unset): unset, "" or "1" is kBlocking,
// "0" kNonblocking; anything else is InvalidArgument naming the variable and the value.
absl::StatusOr<DataPath> ParseNcclBlocking(const char* value);
// The process's KPS_NCCL_BLOCKING, read on the first call and kept (kNonblocking or
// kBlocking, or the parse error).
absl::StatusOr<DataPath> DataPathFromEnv();
// "default", "nonblocking", "blocking".
absl::string_view DataPathName(DataPath path);

class CallWatch;  // dist/call_watchdog.h

// One NCCL communicator: this process's rank in a group of `size` ranks, on one CUDA
// device. Thread-compatible: calls that enqueue on one communicator must be serialized by
// the caller (as NCCL requires), which the eager ops do by running on one host thread.
class Communicator {
 public:
  // Joins the group `me` describes (rank, world size, MASTER_ADDR/PORT): rank 0 makes an
  // NCCL unique id, ShareFromRankZero hands it (and rank 0's data path) to every rank, then
  // each initializes its communicator on `cuda_device` (made the current device), and on the
  // blocking path splits its blocking twin. Everything, the rendezvous included, ends within
  // `timeout`: DeadlineExceeded naming the rank and world size otherwise (and the half-made
  // communicators are aborted). A data path other than rank 0's is InvalidArgument (on the
  // other ranks; rank 0 then times out), as is a malformed KPS_NCCL_BLOCKING.
  static absl::StatusOr<std::shared_ptr<Communicator>> Create(const ProcessInfo& me, int cuda_device,
                                                              absl::Duration timeout = absl::Minutes(5),
                                                              DataPath path = DataPath::kDefault);

  // A communicator with a rank and a size but no NCCL behind it, for shape inference
  // (Call::Infer: the ops read only rank() and size()) and tests on machines without GPUs.
  // Every operation on it is FailedPrecondition.
  static std::shared_ptr<Communicator> Placeholder(int rank, int size);

  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Splits this communicator as ncclCommSplit does: ranks of one `color` form a new
  // communicator, ordered by `key` (ties by rank), on data path `path` (kDefault: this
  // one's; the ranks of a color must agree). Collective: every rank calls it. A negative
  // color joins none and returns nullptr. Same timeout and abort as Create.
  absl::StatusOr<std::shared_ptr<Communicator>> Split(int color, int key, DataPath path = DataPath::kDefault) const;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int cuda_device() const { return device_; }
  absl::Duration timeout() const { return timeout_; }
  bool aborted() const { return aborted_; }
  // kNonblocking or kBlocking (a placeholder: kNonblocking).
  DataPath data_path() const { return data_comm_ != nullptr ? DataPath::kBlocking : DataPath::kNonblocking; }
  // The ncclComm_t the data calls use, for code that calls NCCL itself: the blocking twin on
  // the blocking path, else the nonblocking communicator (null for a placeholder). Calls on
  // it are serialized with this object's as NCCL requires.
  void* nccl_comm() const { return data_comm_ != nullptr ? data_comm_ : comm_; }
  // The nonblocking ncclComm_t that creation, Split and the timeouts use (nccl_comm() on the
  // nonblocking path).
  void* nccl_control_comm() const { return comm_; }

  // Waits for the work queued on `stream` so far, polling the communicator for errors.
  // A communicator error, or the timeout (default: the communicator's), aborts the
  // communicator and returns the error (DeadlineExceeded naming the rank and world for a
  // timeout: a peer that never joined a collective).
  absl::Status Synchronize(const Stream& stream) const;
  absl::Status Synchronize(const Stream& stream, absl::Duration timeout) const;
  // Aborts the communicator (ncclCommAbort, of the blocking twin too): pending work is
  // dropped, later calls fail.
  void Abort() const;

  // The collectives, enqueued on `stream` (counts in elements of `dtype`; buffers on this
  // communicator's device). They return once enqueued; an NCCL error at enqueue time
  // comes back here, one during the run from Synchronize. in-place (send == recv) where
  // NCCL allows it.
  absl::Status AllReduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                         cudaStream_t stream) const;
  absl::Status Broadcast(const void* send, void* recv, size_t count, DataType dtype, int root,
                         cudaStream_t stream) const;
  absl::Status Reduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op, int root,
                      cudaStream_t stream) const;
  // recv holds size() * count elements, rank i's at i * count.
  absl::Status AllGather(const void* send, void* recv, size_t count, DataType dtype, cudaStream_t stream) const;
  // send holds size() * count elements; this rank gets the reduction of block rank().
  absl::Status ReduceScatter(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                             cudaStream_t stream) const;
  // Rank j gets send[send_offsets[j], + send_counts[j]) into its recv at recv_offsets[me];
  // this rank receives recv_counts[i] elements from rank i at recv_offsets[i]. One NCCL
  // group of sends and receives (one entry per rank in each list).
  absl::Status AllToAll(const void* send, absl::Span<const size_t> send_counts, absl::Span<const size_t> send_offsets,
                        void* recv, absl::Span<const size_t> recv_counts, absl::Span<const size_t> recv_offsets,
                        DataType dtype, cudaStream_t stream) const;
  absl::Status Send(const void* send, size_t count, DataType dtype, int peer, cudaStream_t stream) const;
  absl::Status Recv(void* recv, size_t count, DataType dtype, int peer, cudaStream_t stream) const;

  // "rank 1 of 4 (group 'world', cuda:1)", for messages.
  std::string Describe() const;

 private:
  Communicator() = default;
  absl::Status Usable(absl::string_view what) const;
  // Waits until `comm` (comm_ or data_comm_) has no operation in progress (nonblocking
  // calls); an error or the deadline aborts this communicator.
  absl::Status WaitReady(void* comm, absl::string_view what, absl::Time deadline) const;
  // The blocking path: splits data_comm_ off comm_ and puts it under the watchdog.
  absl::Status AttachBlockingTwin(absl::Time deadline);

  void* comm_ = nullptr;       // ncclComm_t, nonblocking: creation, Split, the timeouts
  void* data_comm_ = nullptr;  // ncclComm_t, the blocking twin; null on the nonblocking path
  std::shared_ptr<CallWatch> watch_;  // data_comm_'s calls, for the watchdog
  int rank_ = 0, size_ = 1, device_ = 0;
  absl::Duration timeout_ = absl::Minutes(5);
  mutable bool aborted_ = false;
  bool placeholder_ = false;
};

// The process's named groups, read by the collective ops' `group` attribute. "world" is
// the one InitWorld sets. Thread-safe.
//
// Sets (or replaces, or with nullptr removes) group `name`.
void SetGroup(absl::string_view name, std::shared_ptr<Communicator> comm);
// The group, or NotFound listing the groups there are (and how to make "world").
absl::StatusOr<std::shared_ptr<Communicator>> GetGroup(absl::string_view name);
std::vector<std::string> GroupNames();
// Drops every group (their communicators are destroyed once no call holds them).
void ClearGroups();

// From the environment (ProcessInfoFromEnv: torchrun, kps launch, mpirun, Slurm; none: a
// world of 1): the CUDA device local_rank % device count becomes current, Create joins
// the world on data path `path` (kDefault: KPS_NCCL_BLOCKING's, whose malformed value is
// the first error reported), and the communicator is set as group "world" and returned.
absl::StatusOr<std::shared_ptr<Communicator>> InitWorld(absl::Duration timeout = absl::Minutes(5),
                                                        DataPath path = DataPath::kDefault);

}  // namespace dist
}  // namespace kps
