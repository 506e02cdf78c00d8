// Process groups the way launchers start them: one process per GPU, each told its rank by
// the environment, and a small TCP exchange through rank 0 that hands every rank the same
// bytes (an NCCL unique id) and doubles as a barrier.
//
//   KPS_ASSIGN_OR_RETURN(kps::dist::ProcessInfo me, kps::dist::ProcessInfoFromEnv());
//   std::string id = me.rank == 0 ? MakeNcclId() : "";
//   KPS_ASSIGN_OR_RETURN(id, kps::dist::ShareFromRankZero(me, id, absl::Seconds(60)));
//
// Rank 0 listens on MASTER_PORT (retrying while the port is in use, until the timeout); every
// other rank connects to MASTER_ADDR:MASTER_PORT (retrying until the timeout: rank 0 may start
// last), says its rank, and waits. Once all world_size - 1 ranks have arrived, rank 0 sends
// each the bytes. A rank that never arrives, a rank 0 that never answers, a duplicate rank or a
// stranger on the port is an error naming who and what, within the timeout: never a silent
// hang.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kps {
namespace dist {

struct ProcessInfo {
  int rank = 0, world_size = 1;
  int local_rank = 0, local_world_size = 1;  // this machine's share (the GPU to use)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source;  // which launcher's variables were read: "torchrun", "mpirun", "slurm", "none"
};

// The process's place in its group, from the first launcher whose variables are present:
// torchrun and `kps launch` (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT); Open MPI (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE); Slurm
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; the local size is then the world size);
// PMI (PMI_RANK, PMI_SIZE). MASTER_ADDR and
// MASTER_PORT apply to all (defaults 127.0.0.1:29500). None present: rank 0 of 1.
// Malformed or inconsistent values (rank >= world size, a port outside 1-65535) are errors
// naming the variable.
absl::StatusOr<ProcessInfo> ProcessInfoFromEnv();

// Every rank gets rank 0's `bytes` (ignored on the other ranks; at most 1 MiB), after all
// ranks have arrived. With world_size 1 it returns `bytes` at once.
absl::StatusOr<std::string> ShareFromRankZero(const ProcessInfo& me, const std::string& bytes, absl::Duration timeout);

}  // namespace dist
}  // namespace kps
