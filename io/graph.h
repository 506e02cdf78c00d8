// Reading graphs from files into one edge list, for the sparse and graph operators: text
// edge lists (SNAP and KONECT style), graph-tool's binary format (.gt, .gt.gz) and Matrix
// Market files (io/mtx.h).
//
//   absl::StatusOr<kps::io::EdgeList> g = kps::io::ReadGraph(".data/graphs/karate.gt.gz");
//   if (!g.ok()) return g.status();
//   // g->num_vertices == 34, g->src.size() == 78, g->directed == false
//
// Files are untrusted input: every size a file gives is checked against the bytes that are
// there before anything is allocated, every vertex id against the vertex count, and text
// from the file reaches an error message only through QuoteForMessage. Each error names the
// file and the line (text) or the byte offset (binary).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kps {
namespace io {

// A graph as its edges, in file order: edge i goes from src[i] to dst[i], both in
// [0, num_vertices). An undirected graph stores each edge once, in either direction (as
// its file gives it). Self loops and parallel edges are kept as the file has them.
struct EdgeList {
  int64_t num_vertices = 0;
  bool directed = false;
  std::vector<int64_t> src, dst;
  std::vector<double> weights;  // one per edge, or empty for an unweighted graph
};

// Vertex ids above this are refused: real graphs are far smaller, and the margin keeps
// num_vertices = max id + 1 and sums of two ids inside int64_t.
constexpr int64_t kMaxVertexId = int64_t{1} << 62;

// Parses `text`, a text edge list; `name` names it in errors. The format:
//   - one edge per line, `U V` or `U V W`, fields separated by spaces or tabs; every
//     edge line of a file has the same number of fields (2: unweighted, 3: weighted);
//   - U and V are vertex ids, decimal integers in [0, kMaxVertexId], taken as given
//     (0-based, not renumbered); W is a finite decimal number (the edge's weight);
//   - blank lines and lines whose first non-blank character is '#' or '%' are comments;
//   - three comment lines are headers (optional, anywhere in the file):
//     `# vertices N` sets num_vertices to N, which must exceed every id (isolated
//     vertices past the largest id need it); without it num_vertices = max id + 1
//     (0 for a file of no edges). `# directed` and `# undirected` set `directed`, false
//     when neither is given: SNAP and KONECT files say it in prose, which is not parsed;
//   - line ends are LF or CRLF.
absl::StatusOr<EdgeList> ParseEdgeList(absl::string_view text, const std::string& name);

// Reads and parses the text edge list at `path`.
absl::StatusOr<EdgeList> ReadEdgeList(const std::string& path);

// Parses `bytes`, the (uncompressed) contents of a graph-tool binary file; `name` names it
// in errors. Format version 1, either byte order
// (https://graph-tool.skewed.de/static/doc/gt_format.html): the magic "\xe2\x9b\xbe gt",
// the version, the byte order, a comment, the directed flag, the vertex count N, then for
// each vertex its out-neighbours (an undirected edge appears once), then the property
// maps. Edges come out in that order; the property maps are checked for their structure
// and skipped (weights stays empty, whatever edge properties the file has). The file must
// end after the last property map.
absl::StatusOr<EdgeList> ParseGraphTool(absl::string_view bytes, const std::string& name);

// Reads the graph-tool file at `path`, gzip-compressed (.gt.gz, as graph-tool's collection
// ships them) or not: zlib reads both.
absl::StatusOr<EdgeList> ReadGraphTool(const std::string& path);

// Reads `path` by its extension (case-insensitive): `.gt` and `.gt.gz` with ReadGraphTool;
// `.mtx` with ReadMatrixMarket, row -> src, column -> dst, values -> weights (none for a
// pattern file), num_vertices = max(rows, columns); a general matrix gives a directed graph
// of all its entries, a symmetric or skew-symmetric one an undirected graph of the stored
// triangle (column <= row), each edge once. Anything else is a text edge list.
absl::StatusOr<EdgeList> ReadGraph(const std::string& path);

// Writes `graph` to `path` as a text edge list that ParseEdgeList reads back equal: the
// `# vertices N` and `# directed`/`# undirected` headers, then `U V` or `U V W` lines (W
// printed in the shortest form that reads back to the same double). Replaces `path`
// atomically (a temporary file beside it, synced, then renamed; see WriteFileAtomically
// in io/npy.h). An inconsistent graph (sizes that differ, an id outside [0, num_vertices),
// a weight that is not finite) is an InvalidArgument error and nothing is written.
absl::Status WriteEdgeList(const std::string& path, const EdgeList& graph);

}  // namespace io
}  // namespace kps
