// Partitioning an oriented graph over P ranks for a distributed triangle count, the
// on-disk format of the partitions, and a host model of the distributed count.
//
//   absl::StatusOr<HostCsr> g = HostCsrFromTensors((*dag)[0], (*dag)[1]);  // graph_orient's output
//   absl::StatusOr<Partition> p = Partition1D(*g, 4);
//   absl::Status s = WritePartitions("/data/g.parts", *g, *p);
//   absl::StatusOr<RankPartition> mine = LoadPartition("/data/g.parts", rank);
//   absl::StatusOr<PartitionedCount> c = CountTrianglesPartitioned("/data/g.parts");
//
// The graph is a DAG in CSR (docs/sparse.md): row u lists N+(u), its out-neighbours, strictly
// ascending, no self loops. A triangle {u, v, w} is counted once, as the edge u -> v with w in
// N+(u) and N+(v); this holds for any acyclic orientation, so (degree, id) and id orders both
// work.
//
// Schemes. A partition is a grid of `grid_rows` x `grid_cols` blocks, one per rank, rank r at
// (r / grid_cols, r % grid_cols). Block (i, j) holds the edges u -> v with u in row range i and
// v in column range j.
//   - 1-D (Partition1D): grid_cols = 1, so a rank owns whole rows N+(u) of a vertex range.
//   - 2-D (Partition2D): a sqrt(P) x sqrt(P) grid, or any explicit rows x cols grid.
// Row ranges are balanced by out-edges (the prefix sums are indptr), column ranges by in-edges
// (the prefix sums of the in-degrees), both found by binary search: every range of a split of
// E edges into k ranges holds at most ceil(E / k) + D - 1 edges, where D is the largest
// degree (out-degree for rows, in-degree for columns), since a boundary lands on the first
// vertex at or past its target and one vertex's edges are never split. No range is empty when
// there are at least k vertices; with fewer, the trailing ranges are empty.
//
// What a rank needs from others (RemoteRowsNeeded): to count over its edges u -> v it needs the
// whole of N+(u) and N+(v). The part of a row x that lies in column range c is held by rank
// (row_of(x), c); every such piece not held by the rank itself is requested from its owner.
// In 1-D this is exactly: the v in N+(u) for the rank's u whose rows live on another rank.
//
// Files (format version 1). WritePartitions writes a directory holding:
//   - one file per rank, "rank-RRRRR-of-PPPPP.GGGGGGGGGGGGGGGG.kpsp" (G: a content hash, so a
//     rewrite never overwrites the files an older manifest names), all little-endian:
//       offset  size  field
//            0     8  magic "KPSPART\0"
//            8     4  uint32 format version (1)
//           12     4  uint32 index bytes (4: int32, 8: int64)
//           16     8  int64 rank
//           24     8  int64 num_ranks
//           32     8  int64 row_begin    (the block's vertex range of u)
//           40     8  int64 row_end
//           48     8  int64 col_begin    (the block's vertex range of v)
//           56     8  int64 col_end
//           64     8  int64 num_vertices (n of the whole graph)
//           72     8  int64 num_edges    (this block's)
//           80         indptr: (row_end - row_begin + 1) int64, from 0 to num_edges
//                      indices: num_edges entries of index bytes each, global vertex ids
//     and nothing after: the file's size is exactly that.
//   - manifest.json, written last:
//       {"format": "kps-partition", "version": 1, "scheme": "1d" | "2d", "num_ranks": P,
//        "grid": [rows, cols], "num_vertices": n, "num_edges": E, "index_dtype": "int32" | "int64",
//        "row_splits": [rows + 1 ints], "col_splits": [cols + 1 ints],
//        "ranks": [{"rank": r, "file": NAME, "rows": [b, e], "cols": [b, e], "edges": k,
//                   "bytes": file size, "fnv1a64": "16 hex digits"}, ...]}
//     fnv1a64 is the 64-bit FNV-1a hash of the rank file's bytes.
// Every file is written to a temporary beside it and renamed (io::WriteFileAtomically), the
// rank files first and the manifest last, so a reader that starts from the manifest sees either
// the old partition or the new one, whole. Rank files that the new manifest does not name are
// removed after it is in place (a reader still on the old manifest then gets NotFound).
//
// Everything read is untrusted: every size is checked before it is used, and every problem is
// an absl::Status naming the file and what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "registry/data_type.h"
#include "registry/tensor.h"

namespace kps {
namespace dist {

inline constexpr uint32_t kPartitionFormatVersion = 1;
inline constexpr char kManifestName[] = "manifest.json";
// The rank file header's size in bytes (the table above).
inline constexpr int64_t kRankHeaderBytes = 80;

// An oriented graph in host memory. Indices are held as int64 whatever their dtype;
// `index_dtype` (kInt32 or kInt64) is the width they are written with.
struct HostCsr {
  std::vector<int64_t> indptr;   // [n + 1]
  std::vector<int64_t> indices;  // [indptr[n]]
  DataType index_dtype = DataType::kInt32;

  int64_t num_vertices() const { return indptr.empty() ? 0 : static_cast<int64_t>(indptr.size()) - 1; }
  int64_t num_edges() const { return static_cast<int64_t>(indices.size()); }
};

// Copies a CSR held in tensors (indptr int32/int64 [n + 1], indices int32/int64 [nnz], any
// device) into a HostCsr with the indices' dtype, and checks it with ValidateOrientedCsr.
absl::StatusOr<HostCsr> HostCsrFromTensors(const Tensor& indptr, const Tensor& indices);

// Checks what the partitioner and the count rely on: indptr non-empty, starting at 0, never
// decreasing, ending at the number of indices; every index in [0, n), and for int32 below
// 2^31; each row strictly ascending with no self loop. Acyclicity is not checked (a cyclic
// input gives a wrong count, never a fault).
absl::Status ValidateOrientedCsr(const HostCsr& g);

enum class Scheme { k1D, k2D };
absl::string_view SchemeName(Scheme scheme);  // "1d", "2d"

// A half-open vertex range.
struct VertexRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool Contains(int64_t v) const { return v >= begin && v < end; }
};

// The ranges of a partition; nothing of the graph's edges.
struct Partition {
  Scheme scheme = Scheme::k1D;
  int num_ranks = 1;
  int grid_rows = 1;
  int grid_cols = 1;
  int64_t num_vertices = 0;
  std::vector<int64_t> row_splits;  // [grid_rows + 1], from 0 to n, never decreasing
  std::vector<int64_t> col_splits;  // [grid_cols + 1]; 1-D: {0, n}

  int RowOf(int rank) const { return rank / grid_cols; }
  int ColOf(int rank) const { return rank % grid_cols; }
  int RankAt(int row, int col) const { return row * grid_cols + col; }
  VertexRange Rows(int rank) const { return {row_splits[RowOf(rank)], row_splits[RowOf(rank) + 1]}; }
  VertexRange Cols(int rank) const { return {col_splits[ColOf(rank)], col_splits[ColOf(rank) + 1]}; }
  // The grid row whose range holds v (v in [0, n)).
  int RowRangeOf(int64_t v) const;
  int ColRangeOf(int64_t v) const;
};

// Splits [0, n) into `parts` ranges holding about prefix.back() / parts each, where
// prefix [n + 1] is a non-decreasing prefix sum of per-vertex weights from 0 (indptr for
// out-edges). Returns the parts + 1 boundaries. See the bound above.
absl::StatusOr<std::vector<int64_t>> EdgeBalancedSplits(absl::Span<const int64_t> prefix, int parts);

// The 1-D partition of g over num_ranks >= 1 ranks.
absl::StatusOr<Partition> Partition1D(const HostCsr& g, int num_ranks);
// The sqrt(P) x sqrt(P) partition; P not a perfect square is InvalidArgument.
absl::StatusOr<Partition> Partition2D(const HostCsr& g, int num_ranks);
// The grid_rows x grid_cols partition (scheme 2d even when a side is 1).
absl::StatusOr<Partition> Partition2D(const HostCsr& g, int grid_rows, int grid_cols);

// What one rank holds: its block of g as a CSR over its row range, global ids kept.
struct RankPartition {
  int rank = 0;
  int num_ranks = 1;
  int64_t num_vertices = 0;
  VertexRange rows;
  VertexRange cols;
  DataType index_dtype = DataType::kInt32;
  std::vector<int64_t> indptr;   // [rows.size() + 1], from 0
  std::vector<int64_t> indices;  // the block's entries, ascending within each row

  int64_t num_edges() const { return static_cast<int64_t>(indices.size()); }
  // The entries of global row u (u in `rows`).
  absl::Span<const int64_t> Row(int64_t u) const {
    const int64_t i = u - rows.begin;
    return absl::MakeConstSpan(indices).subspan(indptr[i], indptr[i + 1] - indptr[i]);
  }
};

// Rank `rank`'s block of g under p (rank in [0, p.num_ranks); p made for g).
absl::StatusOr<RankPartition> ExtractRank(const HostCsr& g, const Partition& p, int rank);

// The row pieces one rank asks one owner for.
struct RemoteRowRequest {
  int owner = 0;
  std::vector<int64_t> vertices;  // ascending, unique: the rows x whose piece `owner` holds
  int64_t request_bytes = 0;      // the ids sent: vertices.size() * index bytes
  // The pieces sent back: per vertex an int64 length, then its entries at index bytes each.
  // -1 when unknown (the overload without the graph).
  int64_t response_bytes = -1;
};

// Per owner (ascending, owners with nothing needed left out), the row pieces `local` (the
// block of rank local.rank under p) needs from other ranks; see "What a rank needs" above.
absl::StatusOr<std::vector<RemoteRowRequest>> RemoteRowsNeeded(const RankPartition& local, const Partition& p);
// The same for rank `rank` of g, with response_bytes filled in.
absl::StatusOr<std::vector<RemoteRowRequest>> RemoteRowsNeeded(const HostCsr& g, const Partition& p, int rank);

// Writes g partitioned by p into `dir` (created if missing) in the format above.
absl::Status WritePartitions(const std::string& dir, const HostCsr& g, const Partition& p);
// Partition1D or Partition2D (the square grid) by `scheme`, then the above.
absl::Status WritePartitions(const std::string& dir, const HostCsr& g, Scheme scheme, int num_ranks);

// One rank's entry of the manifest.
struct ManifestRank {
  std::string file;
  VertexRange rows;
  VertexRange cols;
  int64_t edges = 0;
  int64_t bytes = 0;
  uint64_t fnv1a64 = 0;
};

struct Manifest {
  Partition partition;
  int64_t num_edges = 0;
  DataType index_dtype = DataType::kInt32;
  std::vector<ManifestRank> ranks;
};

// Reads and checks `dir`/manifest.json: the fields and their types, the splits, each rank's
// ranges against them, the edge counts summing to num_edges, file names without a path.
absl::StatusOr<Manifest> ReadManifest(const std::string& dir);

// Loads rank `rank` of the partition in `dir`, checking the file against the manifest (size,
// checksum, header fields) and its CSR (indptr from 0 to num_edges, non-decreasing; entries in
// the block's column range, strictly ascending per row, no self loops).
absl::StatusOr<RankPartition> LoadPartition(const std::string& dir, int rank);

// The 64-bit FNV-1a hash of `bytes`.
uint64_t Fnv1a64(absl::string_view bytes);

// The result of the host model of the distributed count.
struct PartitionedCount {
  int64_t triangles = 0;
  std::vector<int64_t> per_rank;        // triangles found over each rank's edges
  std::vector<int64_t> fetched_bytes;   // request plus response bytes each rank moved
};

// Loads every rank of the partition in `dir`, then for each rank fetches the row pieces it
// needs (RemoteRowsNeeded) from the other ranks' blocks in memory and counts, for each of its
// edges u -> v, |N+(u) ∩ N+(v)|; the sum is the triangle count of the whole graph.
absl::StatusOr<PartitionedCount> CountTrianglesPartitioned(const std::string& dir);

}  // namespace dist
}  // namespace kps
