// Communicators (communicator.h) over the NCCL opened by nccl_lib.cc, and the table of
// named groups. Without KPS_HAVE_NCCL only the group table, the placeholders and the
// argument checks are real; everything else reports that KPS was built without NCCL.
#include "dist/communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "dist/call_watchdog.h"
#include "registry/status.h"

#ifdef KPS_HAVE_NCCL
#include "dist/nccl_lib.h"
#endif

namespace kps {
namespace dist {

absl::Status NcclUnavailableError() {
  return absl::FailedPreconditionError(
      "KPS was built without NCCL (KPS_WITH_NCCL=OFF, or nccl.h was not found at configure time); reconfigure "
      "with -DKPS_WITH_NCCL=ON (and -DNCCL_ROOT=<prefix> or the nvidia-nccl-cu13 wheel in the build's Python)");
}

absl::StatusOr<ReduceOp> ParseReduceOp(absl::string_view name) {
  if (name == "sum") return ReduceOp::kSum;
  if (name == "prod") return ReduceOp::kProd;
  if (name == "max") return ReduceOp::kMax;
  if (name == "min") return ReduceOp::kMin;
  if (name == "avg") return ReduceOp::kAvg;
  return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a reduction: sum, prod, max, min or avg"));
}

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kAvg: return "avg";
  }
  return "?";
}

absl::Status CheckNcclDataType(absl::string_view op, DataType dtype, bool reduces, ReduceOp rop) {
  if (!reduces) return absl::OkStatus();  // every dtype moves (bool and int16 as bytes)
  if (dtype == DataType::kInt16) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op, "': input 'x' has dtype int16, which NCCL cannot ",
                                                   "reduce (it has no 16-bit integers): cast x to int32 first"));
  }
  if (dtype == DataType::kBool && rop != ReduceOp::kMax && rop != ReduceOp::kMin) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': input 'x' has dtype bool, which reduces only with op 'max' (or) and 'min' (and), not '",
        ReduceOpName(rop), "': cast x to an integer dtype to ", ReduceOpName(rop), " it"));
  }
  return absl::OkStatus();
}

// ---- data paths -------------------------------------------------------------------------

absl::StatusOr<DataPath> ParseNcclBlocking(const char* value) {
  if (value == nullptr) return DataPath::kBlocking;
  const absl::string_view v(value);
  if (v.empty() || v == "1") return DataPath::kBlocking;
  if (v == "0") return DataPath::kNonblocking;
  return absl::InvalidArgumentError(absl::StrCat(
      "KPS_NCCL_BLOCKING='", v, "' is not 0 or 1: 1 (or unset) runs the collectives on a blocking NCCL "
      "communicator, 0 on the nonblocking one"));
}

absl::StatusOr<DataPath> DataPathFromEnv() {
  // Read once: every communicator of the process, and every later Split, agree.
  static const absl::StatusOr<DataPath>* path =
      new absl::StatusOr<DataPath>(ParseNcclBlocking(std::getenv("KPS_NCCL_BLOCKING")));
  return *path;
}

absl::string_view DataPathName(DataPath path) {
  switch (path) {
    case DataPath::kDefault: return "default";
    case DataPath::kNonblocking: return "nonblocking";
    case DataPath::kBlocking: return "blocking";
  }
  return "?";
}

namespace {

// kDefault as Create and InitWorld read it.
absl::StatusOr<DataPath> ResolveDataPath(DataPath path) {
  if (path != DataPath::kDefault) return path;
  return DataPathFromEnv();
}

}  // namespace

// ---- groups -----------------------------------------------------------------------------

namespace {

struct GroupTable {
  absl::Mutex mu;
  absl::flat_hash_map<std::string, std::shared_ptr<Communicator>> groups ABSL_GUARDED_BY(mu);
};

// Never destroyed: communicators are not torn down during static destruction, when the
// CUDA runtime may already be gone (NCCL's resources go with the process).
GroupTable& Groups() {
  static GroupTable* t = new GroupTable();
  return *t;
}

}  // namespace

void SetGroup(absl::string_view name, std::shared_ptr<Communicator> comm) {
  std::shared_ptr<Communicator> old;  // destroyed outside the lock
  GroupTable& t = Groups();
  absl::MutexLock lock(&t.mu);
  auto it = t.groups.find(name);
  if (it != t.groups.end()) {
    old = std::move(it->second);
    t.groups.erase(it);
  }
  if (comm != nullptr) t.groups.emplace(std::string(name), std::move(comm));
}

absl::StatusOr<std::shared_ptr<Communicator>> GetGroup(absl::string_view name) {
  GroupTable& t = Groups();
  {
    absl::ReaderMutexLock lock(&t.mu);
    auto it = t.groups.find(name);
    if (it != t.groups.end()) return it->second;
  }
  std::vector<std::string> names = GroupNames();
  return absl::NotFoundError(absl::StrCat(
      "no communicator group '", name, "' (groups: ", names.empty() ? "none" : absl::StrJoin(names, ", "),
      "); kps::dist::InitWorld() makes 'world', kps::dist::SetGroup names others (e.g. from Communicator::Split)"));
}

std::vector<std::string> GroupNames() {
  GroupTable& t = Groups();
  std::vector<std::string> names;
  {
    absl::ReaderMutexLock lock(&t.mu);
    for (const auto& [n, c] : t.groups) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void ClearGroups() {
  absl::flat_hash_map<std::string, std::shared_ptr<Communicator>> old;
  GroupTable& t = Groups();
  absl::MutexLock lock(&t.mu);
  old.swap(t.groups);
}

// ---- communicators ----------------------------------------------------------------------

std::shared_ptr<Communicator> Communicator::Placeholder(int rank, int size) {
  std::shared_ptr<Communicator> c(new Communicator());
  c->rank_ = rank;
  c->size_ = size;
  c->placeholder_ = true;
  return c;
}

std::string Communicator::Describe() const {
  return absl::StrCat("rank ", rank_, " of ", size_, placeholder_ ? " (placeholder)" : "", " on cuda:", device_);
}

absl::Status Communicator::Usable(absl::string_view what) const {
  if (placeholder_) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": the communicator of ", Describe(),
                                                      " is a placeholder with no NCCL behind it"));
  }
  if (aborted_) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the communicator of ", Describe(), " was aborted after an earlier error or timeout"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Communicator>> InitWorld(absl::Duration timeout, DataPath path) {
  KPS_ASSIGN_OR_RETURN(path, ResolveDataPath(path));  // first: a malformed value needs no GPU to report
  KPS_ASSIGN_OR_RETURN(ProcessInfo me, ProcessInfoFromEnv());
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return absl::FailedPreconditionError(absl::StrCat("InitWorld (rank ", me.rank, " of ", me.world_size,
                                                      "): no CUDA device; collectives need one GPU per process"));
  }
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> world,
                       Communicator::Create(me, me.local_rank % count, timeout, path));
  SetGroup("world", world);
  return world;
}

absl::Status Communicator::Synchronize(const Stream& stream) const { return Synchronize(stream, timeout_); }

#ifdef KPS_HAVE_NCCL

namespace {

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kProd: return ncclProd;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kAvg: return ncclAvg;
  }
  return ncclSum;
}

// NCCL's type for `dtype`; bool and int16 (which NCCL lacks) go as bytes, `count` scaled.
ncclDataType_t NcclType(DataType dtype, size_t* count) {
  switch (dtype) {
    case DataType::kInt8: return ncclInt8;
    case DataType::kUInt8: return ncclUint8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kBool: return ncclUint8;
    case DataType::kInt16:
      *count *= 2;
      return ncclUint8;
  }
  return ncclUint8;
}

void Pause(int spins) {
  if (spins < 1000) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

const NcclLib* Lib() {
  absl::StatusOr<const NcclLib*> lib = LoadNcclLib();
  return lib.ok() ? *lib : nullptr;  // a communicator exists only once the library loaded
}

ncclComm_t DataComm(void* comm) { return static_cast<ncclComm_t>(comm); }

}  // namespace

absl::Status Communicator::WaitReady(void* handle, absl::string_view what, absl::Time deadline) const {
  const NcclLib* nccl = Lib();
  ncclComm_t comm = static_cast<ncclComm_t>(handle);
  for (int spins = 0;; ++spins) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = nccl->CommGetAsyncError(comm, &state);
    if (r != ncclSuccess) state = r;
    if (state == ncclSuccess) return absl::OkStatus();
    if (state != ncclInProgress) {
      absl::Status s = NcclStatus(nccl, state, absl::StrCat(what, " (", Describe(), ")"), comm);
      Abort();
      return s;
    }
    if (absl::Now() > deadline) {
      Abort();
      return absl::DeadlineExceededError(absl::StrCat(
          what, " (", Describe(), ") did not finish within ", absl::FormatDuration(timeout_),
          ": a rank is missing or stuck; the communicator was aborted"));
    }
    Pause(spins);
  }
}

absl::StatusOr<std::shared_ptr<Communicator>> Communicator::Create(const ProcessInfo& me, int cuda_device,
                                                                   absl::Duration timeout, DataPath path) {
  const std::string who = absl::StrCat("Communicator::Create (rank ", me.rank, " of ", me.world_size, ")");
  if (me.world_size < 1 || me.rank < 0 || me.rank >= me.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": the rank must be in [0, world size)"));
  }
  KPS_ASSIGN_OR_RETURN(path, ResolveDataPath(path));
  KPS_ASSIGN_OR_RETURN(const NcclLib* nccl, LoadNcclLib());
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return absl::FailedPreconditionError(absl::StrCat(who, ": no CUDA device; collectives need one GPU per process"));
  }
  if (cuda_device < 0 || cuda_device >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": CUDA device ", cuda_device, " does not exist (this machine has ", count, ")"));
  }
  KPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(cuda_device), "cudaSetDevice");
  const absl::Time deadline = absl::Now() + timeout;

  // Rank 0's data path travels after the id, so that a rank on the other path says so at once
  // rather than leaving the others to time out in the twin's split.
  ncclUniqueId id{};
  std::string bytes;
  if (me.rank == 0) {
    KPS_RETURN_IF_ERROR(NcclStatus(nccl, nccl->GetUniqueId(&id), absl::StrCat(who, ": ncclGetUniqueId")));
    bytes.assign(id.internal, sizeof(id.internal));
    bytes.push_back(path == DataPath::kBlocking ? 'b' : 'n');
  }
  absl::StatusOr<std::string> shared = ShareFromRankZero(me, bytes, timeout);
  if (!shared.ok()) {
    return absl::Status(shared.status().code(), absl::StrCat(who, ": ", shared.status().message()));
  }
  if (shared->size() != sizeof(id.internal) + 1) {
    return absl::InternalError(absl::StrCat(who, ": rank 0 sent ", shared->size(), " bytes for the NCCL id, not ",
                                            sizeof(id.internal) + 1));
  }
  const DataPath root_path = shared->back() == 'b' ? DataPath::kBlocking : DataPath::kNonblocking;
  if (root_path != path) {
    return absl::InvalidArgumentError(absl::StrCat(
        who, ": rank 0 runs the data calls on the ", DataPathName(root_path), " path and this rank on the ",
        DataPathName(path), " one; set KPS_NCCL_BLOCKING alike on every rank"));
  }
  std::copy(shared->begin(), shared->begin() + sizeof(id.internal), id.internal);

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t r = nccl->CommInitRankConfig(&comm, me.world_size, id, me.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    if (comm != nullptr) nccl->CommAbort(comm);
    return NcclStatus(nccl, r, absl::StrCat(who, ": ncclCommInitRankConfig"));
  }
  std::shared_ptr<Communicator> c(new Communicator());
  c->comm_ = comm;
  c->rank_ = me.rank;
  c->size_ = me.world_size;
  c->device_ = cuda_device;
  c->timeout_ = timeout;
  KPS_RETURN_IF_ERROR(c->WaitReady(c->comm_, "ncclCommInitRankConfig", deadline));
  if (path == DataPath::kBlocking) KPS_RETURN_IF_ERROR(c->AttachBlockingTwin(deadline));
  return c;
}

absl::Status Communicator::AttachBlockingTwin(absl::Time deadline) {
  const NcclLib* nccl = Lib();
  ncclComm_t parent = static_cast<ncclComm_t>(comm_);
  // The split runs in the parent's mode: NCCL queues it as a job of the (nonblocking) parent,
  // which answers ncclInProgress and reports the result, so it is polled and bounded like the
  // init, and NCCL's guide says it is stopped by aborting the parent, then any communicator it
  // returned. config.blocking applies to the twin alone. splitShare = 0: the twin has its own
  // resources, so aborting one communicator never leaves the other half-working, and the idle
  // parent connects no peers (NCCL connects at first use: NCCL_RUNTIME_CONNECT's default, where
  // NCCL has cuMem), so the twin costs no second set of buffers.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.splitShare = 0;
  ncclComm_t twin = nullptr;
  const std::string what = absl::StrCat("ncclCommSplit of the blocking twin (", Describe(), ")");
  absl::Status s;
  const ncclResult_t r = nccl->CommSplit(parent, 0, rank_, &twin, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    s = NcclStatus(nccl, r, what, parent);
  } else {
    s = WaitReady(comm_, "ncclCommSplit of the blocking twin", deadline);
  }
  if (s.ok() && twin == nullptr) s = absl::InternalError(absl::StrCat(what, " returned no communicator"));
  if (s.ok()) {
    // The split's result came on the parent; the twin's own state and rank confirm it.
    ncclResult_t state = ncclSuccess;
    const ncclResult_t q = nccl->CommGetAsyncError(twin, &state);
    int twin_rank = -1;
    if (q != ncclSuccess || state != ncclSuccess) {
      s = NcclStatus(nccl, q != ncclSuccess ? q : state, what, twin);
    } else if (nccl->CommUserRank(twin, &twin_rank) != ncclSuccess || twin_rank != rank_) {
      s = absl::InternalError(absl::StrCat(what, ": the twin has rank ", twin_rank, ", not ", rank_));
    }
  }
  if (!s.ok()) {
    Abort();  // the parent first (WaitReady may have done it), then the twin, as NCCL's guide orders
    if (twin != nullptr) nccl->CommAbort(twin);
    return s;
  }
  data_comm_ = twin;
  watch_ = std::make_shared<CallWatch>(Describe(), timeout_);
  WatchCalls(watch_);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Communicator>> Communicator::Split(int color, int key, DataPath path) const {
  KPS_RETURN_IF_ERROR(Usable("Communicator::Split"));
  if (path == DataPath::kDefault) path = data_path();
  const NcclLib* nccl = Lib();
  const absl::Time deadline = absl::Now() + timeout_;
  // Always from the nonblocking communicator, so that the split is bounded on either path.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t child = nullptr;
  const ncclResult_t r = nccl->CommSplit(static_cast<ncclComm_t>(comm_), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key,
                                         &child, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    return NcclStatus(nccl, r, absl::StrCat("ncclCommSplit (", Describe(), ")"), static_cast<ncclComm_t>(comm_));
  }
  absl::Status s = WaitReady(comm_, "ncclCommSplit", deadline);
  if (!s.ok()) {
    if (child != nullptr) nccl->CommAbort(child);  // the parent was aborted; then any communicator returned
    return s;
  }
  if (child == nullptr) return std::shared_ptr<Communicator>();  // color < 0: in no group
  std::shared_ptr<Communicator> c(new Communicator());
  c->comm_ = child;
  c->device_ = device_;
  c->timeout_ = timeout_;
  KPS_RETURN_IF_ERROR(c->WaitReady(c->comm_, "ncclCommSplit", deadline));
  KPS_RETURN_IF_ERROR(NcclStatus(nccl, nccl->CommUserRank(child, &c->rank_), "ncclCommUserRank", child));
  KPS_RETURN_IF_ERROR(NcclStatus(nccl, nccl->CommCount(child, &c->size_), "ncclCommCount", child));
  if (path == DataPath::kBlocking) KPS_RETURN_IF_ERROR(c->AttachBlockingTwin(deadline));
  return c;
}

Communicator::~Communicator() {
  if (comm_ == nullptr || aborted_) return;  // Abort released both communicators
  const NcclLib* nccl = Lib();
  if (data_comm_ != nullptr) {
    // The twin first, on this thread: finalize waits for its queued work, a wait on peers that
    // the watchdog bounds. (A twin made nonblocking by NCCL_COMM_BLOCKING=0 is polled instead.)
    ncclComm_t twin = static_cast<ncclComm_t>(data_comm_);
    ncclResult_t r;
    {
      WatchedCall in(watch_.get(), "ncclCommFinalize");
      r = nccl->CommFinalize(twin);
    }
    const bool finalized =
        r == ncclSuccess || (r == ncclInProgress && WaitReady(twin, "ncclCommFinalize", absl::Now() + timeout_).ok());
    if (!finalized) {
      Abort();  // both (a no-op when WaitReady did it)
      return;
    }
    {
      WatchedCall in(watch_.get(), "ncclCommDestroy");
      nccl->CommDestroy(twin);
    }
    data_comm_ = nullptr;
  }
  ncclComm_t comm = static_cast<ncclComm_t>(comm_);
  // Finalize flushes this rank's pending work, bounded by the timeout; then Destroy frees.
  const ncclResult_t r = nccl->CommFinalize(comm);
  if ((r == ncclSuccess || r == ncclInProgress) && WaitReady(comm_, "ncclCommFinalize", absl::Now() + timeout_).ok()) {
    nccl->CommDestroy(comm);
  } else if (!aborted_) {
    nccl->CommAbort(comm);
  }
}

void Communicator::Abort() const {
  if (comm_ == nullptr || aborted_) return;
  aborted_ = true;
  const NcclLib* nccl = Lib();
  if (data_comm_ != nullptr) {
    // The twin first: its kernels, which may be waiting on a missing peer, see the abort and
    // exit. Abort is not interruptible either, so it is watched like the data calls.
    WatchedCall in(watch_.get(), "ncclCommAbort");
    nccl->CommAbort(static_cast<ncclComm_t>(data_comm_));
  }
  nccl->CommAbort(static_cast<ncclComm_t>(comm_));
}

absl::Status Communicator::Synchronize(const Stream& stream, absl::Duration timeout) const {
  KPS_RETURN_IF_ERROR(Usable("Communicator::Synchronize"));
  const NcclLib* nccl = Lib();
  // The data communicator: where the stream's NCCL work runs and reports its errors.
  ncclComm_t comm = static_cast<ncclComm_t>(nccl_comm());
  const absl::Time deadline = absl::Now() + timeout;
  for (int spins = 0;; ++spins) {
    const cudaError_t e = cudaStreamQuery(stream.cuda_stream());
    if (e == cudaSuccess) return absl::OkStatus();
    if (e != cudaErrorNotReady) return CudaErrorToStatus(e, absl::StrCat("Synchronize (", Describe(), ")"));
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = nccl->CommGetAsyncError(comm, &state);
    if (r != ncclSuccess) state = r;
    if (state != ncclSuccess && state != ncclInProgress) {
      absl::Status s = NcclStatus(nccl, state, absl::StrCat("Synchronize (", Describe(), ")"), comm);
      Abort();
      return s;
    }
    if (absl::Now() > deadline) {
      Abort();
      return absl::DeadlineExceededError(absl::StrCat(
          "Synchronize (", Describe(), "): the stream's work did not finish within ", absl::FormatDuration(timeout),
          "; a rank is missing from a collective or stuck. The communicator was aborted"));
    }
    Pause(spins);
  }
}

// Makes one NCCL data call (`what`: a string literal) on the data communicator and checks its
// result. On the blocking path the call is watched (the only cost there: two relaxed atomic
// stores); a nonblocking communicator may answer ncclInProgress, and is then polled, bounded by
// the timeout, before its next call.
#define KPS_NCCL_ENQUEUE_(call, what)                                                                     \
  do {                                                                                                    \
    ncclResult_t kps_r_;                                                                                  \
    {                                                                                                     \
      WatchedCall kps_in_(watch_.get(), what);                                                            \
      kps_r_ = (call);                                                                                    \
    }                                                                                                     \
    if (kps_r_ == ncclInProgress) {                                                                       \
      KPS_RETURN_IF_ERROR(WaitReady(nccl_comm(), what, absl::Now() + timeout_));                          \
    } else if (kps_r_ != ncclSuccess) {                                                                   \
      return NcclStatus(Lib(), kps_r_, absl::StrCat(what, " (", Describe(), ")"), DataComm(nccl_comm())); \
    }                                                                                                     \
  } while (0)

absl::Status Communicator::AllReduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                                     cudaStream_t stream) const {
  KPS_RETURN_IF_ERROR(Usable("ncclAllReduce"));
  const ncclDataType_t t = NcclType(dtype, &count);
  KPS_NCCL_ENQUEUE_(Lib()->AllReduce(send, recv, count, t, NcclOp(op), DataComm(nccl_comm()), stream),
                    "ncclAllReduce");
  return absl::OkStatus();
}

absl::Status Communicator::Broadcast(const void* send, void* recv, size_t count, DataType dtype, int root,
                                     cudaStream_t stream) const {
  KPS_RETURN_IF_ERROR(Usable("ncclBroadcast"));
  const ncclDataType_t t = NcclType(dtype, &count);
  KPS_NCCL_ENQUEUE_(Lib()->Broadcast(send, recv, count, t, root, DataComm(nccl_comm()), stream), "ncclBroadcast");
  return absl::OkStatus();
}

absl::Status Communicator::Reduce(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op, int root,
                                  cudaStream_t stream) const {
  KPS_RETURN_IF_ERROR(Usable("ncclReduce"));
  const ncclDataType_t t = NcclType(dtype, &count);
  KPS_NCCL_ENQUEUE_(Lib()->Reduce(send, recv, count, t, NcclOp(op), root, DataComm(nccl_comm()), stream),
                    "ncclReduce");
  return absl::OkStatus();
}

absl::Status Communicator::AllGather(const void* send, void* recv, size_t count, DataType dtype,
                                     cudaStream_t stream) const {
  KPS_RETURN_IF_ERROR(Usable("ncclAllGather"));
  const ncclDataType_t t = NcclType(dtype, &count);
  KPS_NCCL_ENQUEUE_(Lib()->AllGather(send, recv, count, t, DataComm(nccl_comm()), stream), "ncclAllGather");
  return absl::OkStatus();
}

absl::Status Communicator::ReduceScatter(const void* send, void* recv, size_t count, DataType dtype, ReduceOp op,
                                         cudaStream_t stream) const {
  KPS_RETURN_IF_ERROR(Usable("ncclReduceScatter"));
  const ncclDataType_t t = NcclType(dtype, &count);
  KPS_NCCL_ENQUEUE_(Lib()->ReduceScatter(send, recv, count, t, NcclOp(op), DataComm(nccl_comm()), stream),
                    "ncclReduceScatter");
  return absl::OkStatus();
}

absl::Status Communicator::AllToAll(const void* send, absl::Span<const size_t> send_counts,
                                    absl::Span<const size_t> send_offsets, void* recv,
                                    absl::Span<const size_t> recv_counts, absl::Span<const size_t> recv_offsets,
                                    DataType dtype, cudaStream_t stream) const {
  KPS_RETURN_IF_ERROR(Usable("all_to_all"));
  const size_t n = static_cast<size_t>(size_);
  if (send_counts.size() != n || send_offsets.size() != n || recv_counts.size() != n || recv_offsets.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("all_to_all (", Describe(), "): each count and offset list needs ",
                                                   n, " entries"));
  }
  const NcclLib* nccl = Lib();
  ncclComm_t comm = DataComm(nccl_comm());
  const size_t esize = DataTypeSize(dtype);
  const char* s = static_cast<const char*>(send);
  char* d = static_cast<char*>(recv);
  ncclResult_t failed = ncclSuccess, end = ncclSuccess;
  const char* failed_call = "";
  {
    // One watched call from the group's start to its end, where a blocking communicator
    // connects and launches. Inside the group a nonblocking communicator may answer
    // ncclInProgress; the group's end is where that is waited for.
    WatchedCall in(watch_.get(), "all_to_all's NCCL group");
    const ncclResult_t start = nccl->GroupStart();
    if (start != ncclSuccess) return NcclStatus(nccl, start, absl::StrCat("ncclGroupStart (", Describe(), ")"), comm);
    for (size_t peer = 0; peer < n && failed == ncclSuccess; ++peer) {
      size_t sc = send_counts[peer], rc = recv_counts[peer];
      const ncclDataType_t t = NcclType(dtype, &sc);  // bool, int16: bytes
      NcclType(dtype, &rc);
      const int p = static_cast<int>(peer);
      if (sc > 0) {
        const ncclResult_t r = nccl->Send(s + send_offsets[peer] * esize, sc, t, p, comm, stream);
        if (r != ncclSuccess && r != ncclInProgress) failed = r, failed_call = "ncclSend";
      }
      if (failed == ncclSuccess && rc > 0) {
        const ncclResult_t r = nccl->Recv(d + recv_offsets[peer] * esize, rc, t, p, comm, stream);
        if (r != ncclSuccess && r != ncclInProgress) failed = r, failed_call = "ncclRecv";
      }
    }
    // The group is closed even after a failure, so the communicator is left usable.
    end = nccl->GroupEnd();
  }
  const absl::Status first =
      NcclStatus(nccl, failed, absl::StrCat("all_to_all's ", failed_call, " (", Describe(), ")"), comm);
  if (end == ncclInProgress) {
    KPS_RETURN_IF_ERROR(WaitReady(comm, "ncclGroupEnd", absl::Now() + timeout_));
  } else if (end != ncclSuccess) {
    return NcclStatus(nccl, end, absl::StrCat("ncclGroupEnd (", Describe(), ")"), comm);
  }
  return first;
}

absl::Status Communicator::Send(const void* send, size_t count, DataType dtype, int peer, cudaStream_t stream) const {
  KPS_RETURN_IF_ERROR(Usable("ncclSend"));
  const ncclDataType_t t = NcclType(dtype, &count);
  KPS_NCCL_ENQUEUE_(Lib()->Send(send, count, t, peer, DataComm(nccl_comm()), stream), "ncclSend");
  return absl::OkStatus();
}

absl::Status Communicator::Recv(void* recv, size_t count, DataType dtype, int peer, cudaStream_t stream) const {
  KPS_RETURN_IF_ERROR(Usable("ncclRecv"));
  const ncclDataType_t t = NcclType(dtype, &count);
  KPS_NCCL_ENQUEUE_(Lib()->Recv(recv, count, t, peer, DataComm(nccl_comm()), stream), "ncclRecv");
  return absl::OkStatus();
}

#undef KPS_NCCL_ENQUEUE_

#else  // !KPS_HAVE_NCCL

absl::StatusOr<std::shared_ptr<Communicator>> Communicator::Create(const ProcessInfo&, int, absl::Duration,
                                                                   DataPath path) {
  KPS_RETURN_IF_ERROR(ResolveDataPath(path).status());
  return NcclUnavailableError();
}
absl::StatusOr<std::shared_ptr<Communicator>> Communicator::Split(int, int, DataPath) const {
  KPS_RETURN_IF_ERROR(Usable("Communicator::Split"));
  return NcclUnavailableError();
}
Communicator::~Communicator() = default;
void Communicator::Abort() const { aborted_ = true; }
absl::Status Communicator::WaitReady(void*, absl::string_view, absl::Time) const { return NcclUnavailableError(); }
absl::Status Communicator::AttachBlockingTwin(absl::Time) { return NcclUnavailableError(); }
absl::Status Communicator::Synchronize(const Stream&, absl::Duration) const {
  KPS_RETURN_IF_ERROR(Usable("Communicator::Synchronize"));
  return NcclUnavailableError();
}
absl::Status Communicator::AllReduce(const void*, void*, size_t, DataType, ReduceOp, cudaStream_t) const {
  KPS_RETURN_IF_ERROR(Usable("all_reduce"));
  return NcclUnavailableError();
}
absl::Status Communicator::Broadcast(const void*, void*, size_t, DataType, int, cudaStream_t) const {
  KPS_RETURN_IF_ERROR(Usable("broadcast"));
  return NcclUnavailableError();
}
absl::Status Communicator::Reduce(const void*, void*, size_t, DataType, ReduceOp, int, cudaStream_t) const {
  KPS_RETURN_IF_ERROR(Usable("reduce"));
  return NcclUnavailableError();
}
absl::Status Communicator::AllGather(const void*, void*, size_t, DataType, cudaStream_t) const {
  KPS_RETURN_IF_ERROR(Usable("all_gather"));
  return NcclUnavailableError();
}
absl::Status Communicator::ReduceScatter(const void*, void*, size_t, DataType, ReduceOp, cudaStream_t) const {
  KPS_RETURN_IF_ERROR(Usable("reduce_scatter"));
  return NcclUnavailableError();
}
absl::Status Communicator::AllToAll(const void*, absl::Span<const size_t>, absl::Span<const size_t>, void*,
                                    absl::Span<const size_t>, absl::Span<const size_t>, DataType,
                                    cudaStream_t) const {
  KPS_RETURN_IF_ERROR(Usable("all_to_all"));
  return NcclUnavailableError();
}
absl::Status Communicator::Send(const void*, size_t, DataType, int, cudaStream_t) const {
  KPS_RETURN_IF_ERROR(Usable("send"));
  return NcclUnavailableError();
}
absl::Status Communicator::Recv(void*, size_t, DataType, int, cudaStream_t) const {
  KPS_RETURN_IF_ERROR(Usable("recv"));
  return NcclUnavailableError();
}

#endif  // KPS_HAVE_NCCL

}  // namespace dist
}  // namespace kps
