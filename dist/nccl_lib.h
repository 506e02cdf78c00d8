// NCCL's entry points, opened at run time (private to dist/ and tools/bench_collectives).
//
// KPS never links libnccl: the first use of NCCL opens it with dlopen and reads the
// functions below with dlsym, so the library runs on machines without NCCL and says so in a
// Status. Only sources built with KPS_HAVE_NCCL (cmake/nccl.cmake: kps_use_nccl) include
// this header; everything else goes through dist/communicator.h.
//
//   KPS_ASSIGN_OR_RETURN(const kps::dist::NcclLib* nccl, kps::dist::LoadNcclLib());
//   KPS_RETURN_IF_ERROR(kps::dist::NcclStatus(nccl, nccl->AllReduce(...), "ncclAllReduce"));
#pragma once

#ifndef KPS_HAVE_NCCL
#error "dist/nccl_lib.h needs nccl.h: give the source kps_use_nccl() in CMake"
#endif

#include <nccl.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kps {
namespace dist {

// The oldest NCCL KPS uses, as ncclGetVersion() codes it: 2.18.0 (ncclCommSplit,
// nonblocking ncclCommInitRankConfig, ncclAvg and bfloat16 are all older or equal).
inline constexpr int kNcclMinVersion = 21800;

// The entry points KPS calls, each read with dlsym from the loaded library.
struct NcclLib {
  std::string path;  // what dlopen opened (the configure-time path, or the soname)
  int version = 0;   // ncclGetVersion(): 22809 for 2.28.9
  void* handle = nullptr;

  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclCommSplit) CommSplit = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclCommFinalize) CommFinalize = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclCommCount) CommCount = nullptr;
  decltype(&::ncclCommUserRank) CommUserRank = nullptr;
  decltype(&::ncclCommCuDevice) CommCuDevice = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclBroadcast) Broadcast = nullptr;
  decltype(&::ncclReduce) Reduce = nullptr;
  decltype(&::ncclAllGather) AllGather = nullptr;
  decltype(&::ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&::ncclSend) Send = nullptr;
  decltype(&::ncclRecv) Recv = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
};

// The process's NCCL, opened on first use and kept (success or failure alike). Tries, in
// order: $KPS_NCCL_LIBRARY alone when it is set (a path or a soname); else the path found
// at configure time, then "libnccl.so.2" through the loader's search path. Errors
// (FailedPrecondition): every candidate with dlerror's reason; a missing entry point; a
// version older than kNcclMinVersion.
absl::StatusOr<const NcclLib*> LoadNcclLib();

// The same from an explicit candidate list, uncached (tests).
absl::StatusOr<const NcclLib*> LoadNcclLibFrom(const std::vector<std::string>& candidates);

// OK for ncclSuccess; otherwise a Status naming `what` with NCCL's error string, the last
// error text (`comm` may be null) and a code: InvalidArgument for ncclInvalidArgument and
// ncclInvalidUsage, Unavailable for ncclRemoteError and ncclSystemError, Internal else.
absl::Status NcclStatus(const NcclLib* nccl, ncclResult_t result, absl::string_view what, ncclComm_t comm = nullptr);

// "2.28.9" from 22809 (and 2.8.4 from the old 2804 coding).
std::string NcclVersionString(int code);

}  // namespace dist
}  // namespace kps
