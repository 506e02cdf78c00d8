// The distributed triangle count on GPUs: one process per GPU, each holding one block of a
// partition (dist/partition.h), the missing rows fetched from their owners with the
// registered all_to_all op, each rank's share counted by the triangle_count op, the shares
// summed by all_reduce.
//
//   KPS_ASSIGN_OR_RETURN(std::shared_ptr<kps::dist::Communicator> world, kps::dist::InitWorld());
//   KPS_ASSIGN_OR_RETURN(kps::dist::DistributedCountReport r,
//                        kps::dist::CountTrianglesDistributed("/data/g.parts"));  // loads rank world->rank()
//   // r.triangles: the whole graph's count, the same on every rank
//
// Which triangles a rank counts. The graph is oriented (a DAG; graph_orient's output), so a
// triangle is found once, from the edge u -> v with w in N+(u) and N+(v). A rank counts over
// the edges of its block: in 1-D every edge out of its vertex range (so the triangles whose
// first vertex u it owns), in 2-D the edges u -> v with u in its row range and v in its column
// range. Each edge lies in exactly one block, so every triangle is counted exactly once.
//
// The layered CSR. triangle_count counts from every vertex of the CSR it is given, but a rank
// must count from its own roots only, while reading rows N+(v) of vertices it does not own.
// LayeredCountCsr builds a graph whose plain count is exactly that: three copies of ids,
//   a(u) for each root u (rows 0 .. |R|-1),
//   b(x) and c(x) for each x of C, the union of the roots' whole rows N+(u) (ascending),
// with edges
//   a(u) -> b(v) for v in u's block entries, and a(u) -> c(x) for x in N+(u);
//   b(v) -> c(w) for w in N+(v) that are in C (others cannot close a triangle);
//   c(x): no edges.
// From a(u), each b(v) closes one triangle per c(w) in both N+(a(u)) and N+(b(v)), i.e. per w
// in N+(u) ∩ N+(v); the c(v) entries lead to empty rows; from b(v) every neighbour c(w) has an
// empty row; so the count is exactly sum over u, v of |N+(u) ∩ N+(v)|. Rows stay ascending
// (every b id is below every c id) with no self loops, as triangle_count requires; the cost is
// one extra entry per edge of the roots' rows, which adds no two-hop work.
//
// 1-D partitions skip the layers: every row a rank reads is whole, so it counts the CSR of its
// own rows and the fetched ones in the graph's ids, with triangle_count's root range set to its
// rows (RangeCountCsr), after the exchange.
//
// Overlap (2-D). The edges u -> v whose rows N+(u) and N+(v) are both held locally (1-D: v in the
// rank's range) are counted first, on one stream, while the exchange runs on another; the
// other edges once the rows arrive (a layered CSR restricts a root's heads to either set).
// The exchange is four all_to_all calls on the communicator's group: the number of rows asked
// of each rank (int64, one each), the row ids (the partition's index dtype), the lengths of
// the pieces served (int64), the pieces (index dtype). Every rank takes part in all four,
// even with nothing to ask. Packing the pieces and assembling the layered CSR are host
// work (timed apart as plan, exchange and assemble); the bytes move GPU to GPU through NCCL.
// In 1-D, DistributedCountOptions::device_exchange (the default) does the plan, the serving
// and the assembly on the GPU instead (kernels in dist/triangle_cuda.cu), so nothing but
// split sizes crosses PCIe after the block's one copy.
//
// This header does not include nccl.h; NCCL is reached through the collective ops only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dist/partition.h"
#include "registry/tensor.h"

namespace kps {
namespace dist {

// ---- host planning (no GPU, no communicator) ----------------------------------------------

// What one rank counts and what it asks for.
struct CountPlan {
  // The roots (ascending) of the two phases. A rank's u with an edge in its block counts
  // |N+(u) ∩ N+(v)| for each of its block entries v (its heads). local_roots: the u whose
  // whole row is local with at least one head whose whole row is local too: counted over those
  // heads (Heads::kLocal) while the exchange runs. remote_roots: the u with any other head:
  // counted over those (Heads::kRemote) once the rows have arrived. A root can be in both.
  std::vector<int64_t> local_roots;
  std::vector<int64_t> remote_roots;
  // Ids asked of each rank ([num_ranks], 0 for this rank) and the ids themselves, grouped by
  // owner in rank order, ascending within an owner (RemoteRowsNeeded's lists).
  std::vector<int64_t> request_counts;
  std::vector<int64_t> request_ids;
};

// The plan of rank local.rank under p. InvalidArgument when the block is not p's.
absl::StatusOr<CountPlan> PlanCount(const RankPartition& local, const Partition& p);

// The pieces an owner sends back: per id asked, the length of its piece of that row, and the
// pieces concatenated in the order asked.
struct ServedPieces {
  std::vector<int64_t> lengths;
  std::vector<int64_t> entries;
};

// The pieces `local` holds of the rows `asked` (as received from rank `from`). An id outside
// local's row range is InvalidArgument naming both ranks (the ranks disagree on the partition).
absl::StatusOr<ServedPieces> ServePieces(const RankPartition& local, absl::Span<const int64_t> asked, int from);

// What a rank received: for each id it asked (CountPlan::request_ids, grouped by owner as
// request_counts says), the piece's length, and the pieces concatenated in that order.
struct FetchedRows {
  std::vector<int64_t> counts;   // [num_ranks]
  std::vector<int64_t> ids;
  std::vector<int64_t> lengths;  // one per id
  std::vector<int64_t> entries;  // sum of lengths
};

// Which of a root's block entries v a layered CSR counts over: all, those whose whole row is
// local (1-D: v in the rank's range), or the others.
enum class Heads { kAll, kLocal, kRemote };

// The layered CSR (see the top of this file) whose oriented triangle_count is the number of
// triangles found from `roots` (ascending, each a vertex of local's row range) over local's
// block entries chosen by `heads`: CPU tensors {indptr int64 [n' + 1], indices} with
// n' = |roots| + 2 |C|, indices int32 when n' < 2^31, else int64. Every row it reads must be
// local or in `fetched` (a missing one is FailedPrecondition naming the row and its owner);
// inconsistent sizes in `fetched` are InvalidArgument. The rows are built on `threads` host
// threads.
absl::StatusOr<std::vector<Tensor>> LayeredCountCsr(const RankPartition& local, const Partition& p,
                                                    absl::Span<const int64_t> roots, const FetchedRows& fetched,
                                                    int threads = 1, Heads heads = Heads::kAll);

// The 1-D count's CSR: the whole vertex range [0, n) with the rows rank local.rank can read
// (its own, whole in 1-D, and those in `fetched`), the others empty; triangle_count over it
// with roots local.rows (root_begin/root_end) is the rank's share, read in the graph's own ids
// (no layers, so the same work per root as the single-GPU count). CPU tensors {indptr int64
// [n + 1], indices int32 when n < 2^31, else int64}. InvalidArgument for a 2-D partition, a
// fetched row of local's range or twice, or a fetched entry outside [0, n).
absl::StatusOr<std::vector<Tensor>> RangeCountCsr(const RankPartition& local, const Partition& p,
                                                  const FetchedRows& fetched, int threads = 1);

// One all_to_all of host values (int64 here, `dtype` on the wire: int64 or the partition's
// index dtype): `send` holds send_splits[r] values for each rank r in rank order; the result
// holds recv_splits[r] values from each rank r. On GPUs: the all_to_all op between copies.
using HostAllToAll = std::function<absl::StatusOr<std::vector<int64_t>>(
    const std::vector<int64_t>& send, const std::vector<int64_t>& send_splits,
    const std::vector<int64_t>& recv_splits, DataType dtype)>;

// What one rank gets from the exchange, and what it moved.
struct ExchangeResult {
  FetchedRows fetched;
  int64_t rows_served = 0;                      // ids other ranks asked of this one
  int64_t bytes_sent = 0, bytes_received = 0;  // to and from other ranks (not itself)
};

// The four exchanges of a rank (counts, ids, lengths, pieces) through `all_to_all`, serving
// the other ranks' requests from `local`. A collective: every rank calls it with its own plan.
absl::StatusOr<ExchangeResult> ExchangeRows(const RankPartition& local, const Partition& p, const CountPlan& plan,
                                            const HostAllToAll& all_to_all);

// ---- the count on GPUs ---------------------------------------------------------------------

struct DistributedCountOptions {
  // The communicator group (dist::SetGroup; InitWorld sets "world"): one rank per partition
  // block, rank r holding block r.
  std::string group = "world";
  // 2-D: count the local roots while the exchange runs; false: one after the other (to
  // measure what the overlap saves). 1-D counts once, after the exchange.
  bool overlap = true;
  // triangle_count's own check of each layered CSR (a device pass and a host wait).
  bool check_csr = false;
  // Host threads that build the layered CSRs; 0: the machine's cores / the ranks on it
  // (LOCAL_WORLD_SIZE), at least 1.
  int host_threads = 0;
  // 1-D only (a grid of one column): keep everything after loading on the rank's GPU. The
  // block is copied over once; the plan (heads marked, the ids to ask for compacted by the
  // nonzero op), the four exchanges (all_to_all on device tensors), serving (a gather of the
  // asked rows) and the counted CSR (lengths scattered, the cumsum op, rows copied) are
  // kernels and registered ops, and the host reads back only split sizes (P values a step)
  // and fault words. The same count, shares and bytes as the host path (false), at a fraction
  // of its time (R-MAT 26 on 2 x H200: 0.25 s against 16.2 s of exchange). Other grids ignore
  // it (their layered CSRs are host work). Also uses host_threads (to narrow the block's
  // indices).
  bool device_exchange = true;
};

// One rank's figures. Times are milliseconds: wall clock on the host, except count_* (CUDA
// events around the triangle_count calls, GPU time).
struct DistributedCountReport {
  int rank = 0;
  int num_ranks = 1;
  int64_t triangles = 0;       // the whole graph's count (all_reduce of rank_triangles)
  int64_t rank_triangles = 0;  // found from this rank's roots
  int64_t vertices = 0;        // the whole graph's
  int64_t edges = 0;           // this rank's block
  int64_t local_roots = 0, remote_roots = 0;
  int64_t rows_fetched = 0;  // ids this rank asked for
  int64_t rows_served = 0;   // ids other ranks asked of it
  // Bytes this rank sent to and received from other ranks over the four exchanges (what it
  // sends itself is not counted).
  int64_t bytes_sent = 0, bytes_received = 0;
  int64_t layered_entries = 0;  // indices of the CSRs counted (two layered ones in 2-D, one in 1-D)
  double load_ms = 0;           // LoadPartition (0 for a block given in memory)
  double plan_ms = 0;           // PlanCount (device_exchange: the block's copy to the GPU and the plan there)
  double exchange_ms = 0;       // the four all_to_all calls with their packing (serving) and reads
  double assemble_ms = 0;       // the CSRs counted, built (on the host, or the GPU) and copied to the GPU
  double count_ms = 0;          // GPU: count_local_ms + count_remote_ms
  double count_local_ms = 0, count_remote_ms = 0;  // 1-D: all in count_remote_ms (one count)
  double reduce_ms = 0;  // the all_reduce of the shares
  double total_ms = 0;   // from the start (after loading) to the reduced total on the host
};

// Counts the triangles of the partitioned graph with this process's block `local` of p. A
// collective over `options.group`: every rank of the group calls it with its own block (the
// group's size must be p.num_ranks and its rank local.rank). Runs on the group's CUDA device
// (made current). A peer that fails or never calls ends in the communicator's timeout error.
absl::StatusOr<DistributedCountReport> CountTrianglesDistributed(const RankPartition& local, const Partition& p,
                                                                 const DistributedCountOptions& options = {});

// The same with block (group rank) loaded from the partition directory `dir` (LoadPartition),
// load_ms filled in. A manifest of another rank count than the group's is FailedPrecondition
// saying how to launch.
absl::StatusOr<DistributedCountReport> CountTrianglesDistributed(const std::string& dir,
                                                                 const DistributedCountOptions& options = {});

// Every rank's report, in rank order, on every rank (one all_gather over `group`).
absl::StatusOr<std::vector<DistributedCountReport>> GatherReports(const DistributedCountReport& mine,
                                                                  const std::string& group = "world");

}  // namespace dist
}  // namespace kps
