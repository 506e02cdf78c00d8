// NCCL opened with dlopen (nccl_lib.h). Built without KPS_HAVE_NCCL, only the public
// NcclLibrary() of communicator.h is here, and it reports that KPS was built without NCCL.
#include "dist/communicator.h"

#ifdef KPS_HAVE_NCCL
#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dist/nccl_lib.h"
#include "registry/status.h"

namespace kps {
namespace dist {

std::string NcclVersionString(int code) {
  // NCCL_VERSION(X, Y, Z): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z from 2.9.
  if (code < 10000) return absl::StrCat(code / 1000, ".", code % 1000 / 100, ".", code % 100);
  return absl::StrCat(code / 10000, ".", code % 10000 / 100, ".", code % 100);
}

namespace {

template <typename F>
bool Sym(void* handle, const char* name, F* fn, std::vector<std::string>* missing) {
  *fn = reinterpret_cast<F>(dlsym(handle, name));
  if (*fn == nullptr) missing->push_back(name);
  return *fn != nullptr;
}

absl::StatusOr<const NcclLib*> Open(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::NotFoundError(why != nullptr ? why : "dlopen failed");
  }
  auto lib = std::make_unique<NcclLib>();
  lib->path = path;
  lib->handle = handle;
  std::vector<std::string> missing;
  Sym(handle, "ncclGetVersion", &lib->GetVersion, &missing);
  Sym(handle, "ncclGetErrorString", &lib->GetErrorString, &missing);
  Sym(handle, "ncclGetLastError", &lib->GetLastError, &missing);
  Sym(handle, "ncclGetUniqueId", &lib->GetUniqueId, &missing);
  Sym(handle, "ncclCommInitRankConfig", &lib->CommInitRankConfig, &missing);
  Sym(handle, "ncclCommSplit", &lib->CommSplit, &missing);
  Sym(handle, "ncclCommGetAsyncError", &lib->CommGetAsyncError, &missing);
  Sym(handle, "ncclCommFinalize", &lib->CommFinalize, &missing);
  Sym(handle, "ncclCommDestroy", &lib->CommDestroy, &missing);
  Sym(handle, "ncclCommAbort", &lib->CommAbort, &missing);
  Sym(handle, "ncclCommCount", &lib->CommCount, &missing);
  Sym(handle, "ncclCommUserRank", &lib->CommUserRank, &missing);
  Sym(handle, "ncclCommCuDevice", &lib->CommCuDevice, &missing);
  Sym(handle, "ncclAllReduce", &lib->AllReduce, &missing);
  Sym(handle, "ncclBroadcast", &lib->Broadcast, &missing);
  Sym(handle, "ncclReduce", &lib->Reduce, &missing);
  Sym(handle, "ncclAllGather", &lib->AllGather, &missing);
  Sym(handle, "ncclReduceScatter", &lib->ReduceScatter, &missing);
  Sym(handle, "ncclSend", &lib->Send, &missing);
  Sym(handle, "ncclRecv", &lib->Recv, &missing);
  Sym(handle, "ncclGroupStart", &lib->GroupStart, &missing);
  Sym(handle, "ncclGroupEnd", &lib->GroupEnd, &missing);
  if (lib->GetVersion != nullptr) {
    int v = 0;
    if (lib->GetVersion(&v) == ncclSuccess) lib->version = v;
  }
  // Version first: a library too old to have ncclCommSplit is better named by its version.
  if (lib->version != 0 && lib->version < kNcclMinVersion) {
    const std::string v = NcclVersionString(lib->version);
    dlclose(handle);
    return absl::FailedPreconditionError(absl::StrCat("it is NCCL ", v, ", older than ",
                                                      NcclVersionString(kNcclMinVersion),
                                                      ", the oldest KPS supports (ncclCommSplit, nonblocking "
                                                      "ncclCommInitRankConfig)"));
  }
  if (!missing.empty()) {
    dlclose(handle);
    return absl::FailedPreconditionError(absl::StrCat("it lacks ", absl::StrJoin(missing, ", "),
                                                      "; is it NCCL 2.18 or newer?"));
  }
  return lib.release();  // kept for the life of the process, as the handle is
}

std::vector<std::string> Candidates() {
  const char* env = std::getenv("KPS_NCCL_LIBRARY");
  if (env != nullptr && env[0] != '\0') return {env};
  std::vector<std::string> c;
#ifdef KPS_NCCL_LIBRARY_PATH
  c.push_back(KPS_NCCL_LIBRARY_PATH);
#endif
  c.push_back("libnccl.so.2");
  return c;
}

}  // namespace

absl::StatusOr<const NcclLib*> LoadNcclLibFrom(const std::vector<std::string>& candidates) {
  std::vector<std::string> tried;
  for (const std::string& path : candidates) {
    absl::StatusOr<const NcclLib*> lib = Open(path);
    if (lib.ok()) return lib;
    tried.push_back(absl::StrCat(path, ": ", lib.status().message()));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "NCCL could not be loaded (tried ", absl::StrJoin(tried, "; "),
      "). Install NCCL 2.18 or newer (pip install nvidia-nccl-cu13, or a system package) or point "
      "KPS_NCCL_LIBRARY at libnccl.so.2"));
}

absl::StatusOr<const NcclLib*> LoadNcclLib() {
  static std::once_flag once;
  static absl::StatusOr<const NcclLib*>* result = nullptr;
  std::call_once(once, [] { result = new absl::StatusOr<const NcclLib*>(LoadNcclLibFrom(Candidates())); });
  return *result;
}

absl::Status NcclStatus(const NcclLib* nccl, ncclResult_t result, absl::string_view what, ncclComm_t comm) {
  if (result == ncclSuccess) return absl::OkStatus();
  std::string msg = absl::StrCat(what, " failed: ", nccl->GetErrorString(result), " (", static_cast<int>(result), ")");
  const char* last = nccl->GetLastError(comm);
  if (last != nullptr && last[0] != '\0') absl::StrAppend(&msg, ": ", last);
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return absl::InvalidArgumentError(msg);
    case ncclRemoteError:
    case ncclSystemError:
      return absl::UnavailableError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::StatusOr<NcclLibraryInfo> NcclLibrary() {
  KPS_ASSIGN_OR_RETURN(const NcclLib* nccl, LoadNcclLib());
  return NcclLibraryInfo{nccl->path, nccl->version, NcclVersionString(nccl->version)};
}

}  // namespace dist
}  // namespace kps

#else  // !KPS_HAVE_NCCL

namespace kps {
namespace dist {

absl::StatusOr<NcclLibraryInfo> NcclLibrary() { return NcclUnavailableError(); }

}  // namespace dist
}  // namespace kps

#endif  // KPS_HAVE_NCCL
