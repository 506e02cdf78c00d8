// dist/partition.h: the 1-D and 2-D partitioners, the remote-row lists, the partition files
// and the host model of the distributed triangle count, against references written from the
// definitions on random graphs (fresh seeds, printed), edge sizes (n = 0, n < P,
// one vertex holding every edge) and every kind of damaged file.
#include "dist/partition.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "registry/call.h"
#include "testing/support.h"
#include "tests/dist/dist_test_util.h"

namespace kps {
namespace dist {
namespace {

namespace fs = std::filesystem;
using ::kps::testing::FreshSeed;
using ::kps::testing::HostFromDoubles;
using ::kps::testing::ToDoubles;

using Adjacency = std::vector<std::set<int64_t>>;

// A fresh seed, printed whether or not the test fails (KPS tests also SCOPED_TRACE it).
uint64_t PrintedSeed() {
  const uint64_t seed = FreshSeed();
  std::fprintf(stderr, "[ seed     ] %s: %llu\n", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
               static_cast<unsigned long long>(seed));
  return seed;
}

// A random simple undirected graph with a skewed degree distribution (a few hubs), so that
// balancing by edges differs from balancing by vertices.
Adjacency RandomGraph(int64_t n, int64_t draws, std::mt19937_64& gen) {
  Adjacency adj(static_cast<size_t>(n));
  if (n < 2) return adj;
  for (int64_t i = 0; i < draws; ++i) {
    const int64_t u = static_cast<int64_t>(gen() % n) * static_cast<int64_t>(gen() % n) / n;
    const int64_t v = static_cast<int64_t>(gen() % n);
    if (u == v) continue;
    adj[u].insert(v);
    adj[v].insert(u);
  }
  return adj;
}

// Orients each edge from the earlier vertex by (degree, id), as graph_orient's default does.
HostCsr Orient(const Adjacency& adj, DataType dtype) {
  HostCsr g;
  g.index_dtype = dtype;
  g.indptr.push_back(0);
  const auto before = [&](int64_t a, int64_t b) {
    return std::make_pair(adj[a].size(), a) < std::make_pair(adj[b].size(), b);
  };
  for (int64_t u = 0; u < static_cast<int64_t>(adj.size()); ++u) {
    for (int64_t v : adj[u]) {
      if (before(u, v)) g.indices.push_back(v);
    }
    g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
  }
  return g;
}

// Triangles from the definition: three vertices pairwise adjacent, each counted at its lowest.
int64_t DirectCount(const Adjacency& adj) {
  int64_t count = 0;
  for (int64_t u = 0; u < static_cast<int64_t>(adj.size()); ++u) {
    for (int64_t v : adj[u]) {
      if (v <= u) continue;
      for (int64_t w : adj[v]) {
        if (w > v && adj[u].count(w)) ++count;
      }
    }
  }
  return count;
}

std::vector<std::pair<int64_t, int64_t>> EdgesOf(const HostCsr& g) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t u = 0; u < g.num_vertices(); ++u) {
    for (int64_t e = g.indptr[u]; e < g.indptr[u + 1]; ++e) out.emplace_back(u, g.indices[e]);
  }
  return out;
}

using TempDir = ::kps::dist_test::TempDir;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

struct Grid {
  Scheme scheme;
  int rows;
  int cols;
};
std::string GridName(const Grid& g) {
  return absl::StrCat(SchemeName(g.scheme), " ", g.rows, "x", g.cols);
}
absl::StatusOr<Partition> MakePartition(const HostCsr& g, const Grid& grid) {
  if (grid.scheme == Scheme::k1D) return Partition1D(g, grid.rows);
  return Partition2D(g, grid.rows, grid.cols);
}

// The schemes the brief asks for: 1-D over P in {1, 2, 3, 4, 7}, 2-D over 1, 4, 9 and 2 x 3.
const std::vector<Grid>& AllGrids() {
  static const auto* grids = new std::vector<Grid>{
      {Scheme::k1D, 1, 1}, {Scheme::k1D, 2, 1}, {Scheme::k1D, 3, 1}, {Scheme::k1D, 4, 1}, {Scheme::k1D, 7, 1},
      {Scheme::k2D, 1, 1}, {Scheme::k2D, 2, 2}, {Scheme::k2D, 3, 3}, {Scheme::k2D, 2, 3}};
  return *grids;
}

// Each split of `prefix` into k ranges: at most ceil(E / k) + D - 1 edges a range (D: the
// largest single weight), no empty range when n >= k (partition.h's documented bound).
void ExpectBalanced(const std::vector<int64_t>& prefix, const std::vector<int64_t>& splits, const char* what) {
  const int64_t n = static_cast<int64_t>(prefix.size()) - 1;
  const int64_t k = static_cast<int64_t>(splits.size()) - 1;
  const int64_t total = prefix.back();
  int64_t max_weight = 0;
  for (int64_t v = 0; v < n; ++v) max_weight = std::max(max_weight, prefix[v + 1] - prefix[v]);
  const int64_t bound = (total + k - 1) / k + std::max<int64_t>(max_weight - 1, 0);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t edges = prefix[splits[i + 1]] - prefix[splits[i]];
    EXPECT_LE(edges, bound) << what << " range " << i << " of " << k << " (total " << total << ", max weight "
                            << max_weight << ")";
    if (n >= k) EXPECT_LT(splits[i], splits[i + 1]) << what << " range " << i << " is empty with n = " << n;
  }
}

// Every check of a partition of g against the definitions.
void CheckPartitionOf(const HostCsr& g, const Grid& grid, int64_t direct_count, const std::string& dir) {
  SCOPED_TRACE(GridName(grid));
  auto p = MakePartition(g, grid);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->num_ranks, grid.rows * grid.cols);

  // Balance: rows by out-degree (indptr), columns by in-degree.
  ExpectBalanced(g.indptr, p->row_splits, "row");
  std::vector<int64_t> in_prefix(g.indptr.size(), 0);
  for (int64_t v : g.indices) ++in_prefix[v + 1];
  for (size_t i = 1; i < in_prefix.size(); ++i) in_prefix[i] += in_prefix[i - 1];
  if (p->grid_cols > 1) ExpectBalanced(in_prefix, p->col_splits, "column");

  // Every edge in exactly one block, the block the definition names.
  std::vector<std::pair<int64_t, int64_t>> seen;
  std::vector<RankPartition> blocks;
  for (int r = 0; r < p->num_ranks; ++r) {
    auto b = ExtractRank(g, *p, r);
    ASSERT_TRUE(b.ok()) << b.status();
    for (int64_t u = b->rows.begin; u < b->rows.end; ++u) {
      for (int64_t v : b->Row(u)) {
        EXPECT_EQ(p->RankAt(p->RowRangeOf(u), p->ColRangeOf(v)), r) << "edge " << u << " -> " << v;
        seen.emplace_back(u, v);
      }
    }
    blocks.push_back(*std::move(b));
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, EdgesOf(g));

  // Remote rows against brute force over the whole graph: rank r needs row x when x is the
  // tail or head of one of its edges; the piece of x in column range c comes from rank
  // (row of x, c) unless that is r.
  for (int r = 0; r < p->num_ranks; ++r) {
    const VertexRange rows = p->Rows(r), cols = p->Cols(r);
    std::vector<std::set<int64_t>> want(static_cast<size_t>(p->num_ranks));
    for (const auto& [u, v] : EdgesOf(g)) {
      if (!rows.Contains(u) || !cols.Contains(v)) continue;
      for (int64_t x : {u, v}) {
        for (int o = 0; o < p->num_ranks; ++o) {
          if (o != r && p->Rows(o).Contains(x)) want[o].insert(x);
        }
      }
    }
    if (grid.scheme == Scheme::k1D) {
      // The 1-D statement: the v in N+(u) for u in r's range whose rows live elsewhere.
      std::vector<std::set<int64_t>> simple(static_cast<size_t>(p->num_ranks));
      for (int64_t u = rows.begin; u < rows.end; ++u) {
        for (int64_t e = g.indptr[u]; e < g.indptr[u + 1]; ++e) {
          const int64_t v = g.indices[e];
          if (!rows.Contains(v)) simple[p->RowRangeOf(v)].insert(v);
        }
      }
      EXPECT_EQ(want, simple) << "rank " << r;
    }
    auto got = RemoteRowsNeeded(g, *p, r);
    ASSERT_TRUE(got.ok()) << got.status();
    auto from_block = RemoteRowsNeeded(blocks[r], *p);
    ASSERT_TRUE(from_block.ok()) << from_block.status();
    ASSERT_EQ(got->size(), from_block->size());
    std::vector<std::set<int64_t>> got_sets(static_cast<size_t>(p->num_ranks));
    int prev_owner = -1;
    const int ib = g.index_dtype == DataType::kInt32 ? 4 : 8;
    for (size_t i = 0; i < got->size(); ++i) {
      const RemoteRowRequest& req = (*got)[i];
      EXPECT_GT(req.owner, prev_owner) << "owners ascending, each once";
      prev_owner = req.owner;
      EXPECT_NE(req.owner, r);
      EXPECT_FALSE(req.vertices.empty());
      EXPECT_TRUE(std::is_sorted(req.vertices.begin(), req.vertices.end()));
      EXPECT_EQ(std::adjacent_find(req.vertices.begin(), req.vertices.end()), req.vertices.end()) << "unique";
      got_sets[req.owner].insert(req.vertices.begin(), req.vertices.end());
      EXPECT_EQ(req.request_bytes, static_cast<int64_t>(req.vertices.size()) * ib);
      int64_t response = 0;
      for (int64_t x : req.vertices) {
        response += 8;
        for (int64_t e = g.indptr[x]; e < g.indptr[x + 1]; ++e) {
          if (p->Cols(req.owner).Contains(g.indices[e])) response += ib;
        }
      }
      EXPECT_EQ(req.response_bytes, response) << "owner " << req.owner;
      EXPECT_EQ((*from_block)[i].owner, req.owner);
      EXPECT_EQ((*from_block)[i].vertices, req.vertices);
      EXPECT_EQ((*from_block)[i].response_bytes, -1);
    }
    EXPECT_EQ(got_sets, want) << "rank " << r;
  }

  // Round trip through the files, then the partitioned count.
  ASSERT_TRUE(WritePartitions(dir, g, *p).ok());
  auto m = ReadManifest(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->partition.row_splits, p->row_splits);
  EXPECT_EQ(m->partition.col_splits, p->col_splits);
  EXPECT_EQ(m->partition.scheme, grid.scheme);
  EXPECT_EQ(m->num_edges, g.num_edges());
  EXPECT_EQ(m->index_dtype, g.index_dtype);
  for (int r = 0; r < p->num_ranks; ++r) {
    auto loaded = LoadPartition(dir, r);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->indptr, blocks[r].indptr) << "rank " << r;
    EXPECT_EQ(loaded->indices, blocks[r].indices) << "rank " << r;
    EXPECT_EQ(loaded->rows.begin, blocks[r].rows.begin);
    EXPECT_EQ(loaded->rows.end, blocks[r].rows.end);
    EXPECT_EQ(loaded->cols.begin, blocks[r].cols.begin);
    EXPECT_EQ(loaded->cols.end, blocks[r].cols.end);
    EXPECT_EQ(loaded->index_dtype, g.index_dtype);
    EXPECT_EQ(m->ranks[r].edges, blocks[r].num_edges());
  }
  auto count = CountTrianglesPartitioned(dir);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(count->triangles, direct_count);
  int64_t sum = 0;
  for (int64_t c : count->per_rank) sum += c;
  EXPECT_EQ(sum, direct_count);
  if (p->num_ranks == 1) EXPECT_EQ(count->fetched_bytes[0], 0) << "one rank fetches nothing";
}

TEST(PartitionTest, RandomGraphsEverySchemeAndDtype) {
  const uint64_t seed = PrintedSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 gen(seed);
  TempDir tmp("kps_partition");
  ASSERT_FALSE(tmp.path().empty());
  for (DataType dtype : {DataType::kInt32, DataType::kInt64}) {
    for (int64_t n : {2, 17, 300, 1000}) {
      SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), " n = ", n));
      const Adjacency adj = RandomGraph(n, n * 6, gen);
      const HostCsr g = Orient(adj, dtype);
      ASSERT_TRUE(ValidateOrientedCsr(g).ok());
      const int64_t direct = DirectCount(adj);
      for (const Grid& grid : AllGrids()) {
        // Each grid into its own directory, and once more over the same one (a rewrite).
        CheckPartitionOf(g, grid, direct, (fs::path(tmp.path()) / GridName(grid)).string());
        CheckPartitionOf(g, grid, direct, (fs::path(tmp.path()) / "shared").string());
      }
    }
  }
}

TEST(PartitionTest, EdgeSizes) {
  TempDir tmp("kps_partition");
  ASSERT_FALSE(tmp.path().empty());
  // n = 0.
  HostCsr empty;
  empty.indptr = {0};
  for (const Grid& grid : AllGrids()) CheckPartitionOf(empty, grid, 0, (fs::path(tmp.path()) / "empty").string());
  // n < P: three vertices forming one triangle, over up to 9 ranks.
  HostCsr tri;
  tri.indptr = {0, 2, 3, 3};
  tri.indices = {1, 2, 2};
  for (const Grid& grid : AllGrids()) CheckPartitionOf(tri, grid, 1, (fs::path(tmp.path()) / "tri").string());
  // One vertex with every edge (a star, oriented from the centre): no triangle, and the
  // centre's range holds all edges however many ranks there are.
  HostCsr star;
  star.index_dtype = DataType::kInt64;
  const int64_t n = 50;
  star.indptr.assign(static_cast<size_t>(n) + 1, n - 1);
  star.indptr[0] = 0;
  for (int64_t v = 1; v < n; ++v) star.indices.push_back(v);
  for (const Grid& grid : AllGrids()) CheckPartitionOf(star, grid, 0, (fs::path(tmp.path()) / "star").string());
  auto p = Partition1D(star, 7);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->row_splits[1], 1) << "the centre alone holds every edge";
  // A complete graph K_12 oriented by id: C(12, 3) = 220 triangles.
  HostCsr k12;
  k12.indptr.push_back(0);
  for (int64_t u = 0; u < 12; ++u) {
    for (int64_t v = u + 1; v < 12; ++v) k12.indices.push_back(v);
    k12.indptr.push_back(static_cast<int64_t>(k12.indices.size()));
  }
  for (const Grid& grid : AllGrids()) CheckPartitionOf(k12, grid, 220, (fs::path(tmp.path()) / "k12").string());
}

TEST(PartitionTest, SplitsNeverEmptyWhenEnoughVertices) {
  const uint64_t seed = PrintedSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 gen(seed);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = static_cast<int64_t>(gen() % 40);
    const int parts = 1 + static_cast<int>(gen() % 12);
    // Weights mostly zero with a few heavy vertices: the hardest case for non-empty ranges.
    std::vector<int64_t> prefix = {0};
    for (int64_t v = 0; v < n; ++v) {
      prefix.push_back(prefix.back() + (gen() % 5 == 0 ? static_cast<int64_t>(gen() % 100) : 0));
    }
    auto splits = EdgeBalancedSplits(prefix, parts);
    ASSERT_TRUE(splits.ok()) << splits.status();
    ASSERT_EQ(splits->size(), static_cast<size_t>(parts) + 1);
    EXPECT_EQ(splits->front(), 0);
    EXPECT_EQ(splits->back(), n);
    EXPECT_TRUE(std::is_sorted(splits->begin(), splits->end()));
    ExpectBalanced(prefix, *splits, "split");
  }
  EXPECT_FALSE(EdgeBalancedSplits({}, 2).ok());
  EXPECT_FALSE(EdgeBalancedSplits({0, 1}, 0).ok());
}

TEST(PartitionTest, MatchesTheGraphOps) {
  // graph_from_edges and graph_orient on the CPU, then the partitioned count against
  // triangle_count on the same DAG.
  const uint64_t seed = PrintedSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 gen(seed);
  const int64_t n = 800;
  std::vector<double> src, dst;
  for (int i = 0; i < 6000; ++i) {
    src.push_back(static_cast<double>(static_cast<int64_t>(gen() % n) * static_cast<int64_t>(gen() % n) / n));
    dst.push_back(static_cast<double>(gen() % n));
  }
  const Shape shape{static_cast<int64_t>(src.size())};
  auto csr = Call("graph_from_edges")
                 .Input("src", HostFromDoubles(src, shape, DataType::kInt32))
                 .Input("dst", HostFromDoubles(dst, shape, DataType::kInt32))
                 .Attr("num_vertices", n)
                 .Run();
  ASSERT_TRUE(csr.ok()) << csr.status();
  auto dag = Call("graph_orient").Input("indptr", (*csr)[0]).Input("indices", (*csr)[1]).Run();
  ASSERT_TRUE(dag.ok()) << dag.status();
  auto want =
      Call("triangle_count").Input("indptr", (*dag)[0]).Input("indices", (*dag)[1]).Attr("oriented", true).RunOne();
  ASSERT_TRUE(want.ok()) << want.status();
  auto g = HostCsrFromTensors((*dag)[0], (*dag)[1]);
  ASSERT_TRUE(g.ok()) << g.status();
  TempDir tmp("kps_partition");
  for (auto [scheme, ranks] : {std::pair<Scheme, int>{Scheme::k1D, 5}, {Scheme::k2D, 4}}) {
    ASSERT_TRUE(WritePartitions(tmp.path(), *g, scheme, ranks).ok());
    auto got = CountTrianglesPartitioned(tmp.path());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(static_cast<double>(got->triangles), ToDoubles(*want)[0]);
  }
  // Malformed tensors are errors, not crashes.
  EXPECT_FALSE(HostCsrFromTensors(HostFromDoubles({0, 1}, Shape{2}, DataType::kFloat32), (*dag)[1]).ok());
  EXPECT_FALSE(HostCsrFromTensors(HostFromDoubles({0, 5}, Shape{2}, DataType::kInt64),
                                  HostFromDoubles({0}, Shape{1}, DataType::kInt32)).ok());
}

// --- errors ---------------------------------------------------------------------------------

class PartitionFileErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    const uint64_t seed = PrintedSeed();
    std::mt19937_64 gen(seed);
    g_ = Orient(RandomGraph(200, 1500, gen), DataType::kInt32);
    ASSERT_TRUE(WritePartitions(dir(), g_, Scheme::k1D, 4).ok());
    auto m = ReadManifest(dir());
    ASSERT_TRUE(m.ok()) << m.status();
    manifest_ = *m;
  }
  const std::string& dir() const { return tmp_.path(); }
  std::string RankPath(int r) const { return (fs::path(dir()) / manifest_.ranks[r].file).string(); }
  std::string ManifestPath() const { return (fs::path(dir()) / kManifestName).string(); }
  void EditManifest(const std::string& from, const std::string& to) {
    std::string text = ReadBytes(ManifestPath());
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    WriteBytes(ManifestPath(), text);
  }
  // Expects LoadPartition(rank) to fail with `code` and a message holding every part.
  void ExpectLoadError(int rank, absl::StatusCode code, std::vector<std::string> parts) {
    auto got = LoadPartition(dir(), rank);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), code) << got.status();
    for (const std::string& part : parts) {
      EXPECT_TRUE(absl::StrContains(got.status().message(), part)) << got.status() << " lacks " << part;
    }
    // The count reads the same files and must fail the same way.
    EXPECT_FALSE(CountTrianglesPartitioned(dir()).ok());
  }

  TempDir tmp_{"kps_partition"};
  HostCsr g_;
  Manifest manifest_;
};

TEST_F(PartitionFileErrorTest, TruncatedFile) {
  const std::string bytes = ReadBytes(RankPath(2));
  WriteBytes(RankPath(2), bytes.substr(0, bytes.size() - 3));
  ExpectLoadError(2, absl::StatusCode::kDataLoss, {manifest_.ranks[2].file, "rank 2", "truncated"});
  WriteBytes(RankPath(2), bytes.substr(0, 40));
  ExpectLoadError(2, absl::StatusCode::kDataLoss, {"truncated", "header"});
  WriteBytes(RankPath(2), bytes + "tail");
  ExpectLoadError(2, absl::StatusCode::kDataLoss, {"size mismatch", "longer than"});
  EXPECT_TRUE(LoadPartition(dir(), 1).ok()) << "the other ranks still load";
}

TEST_F(PartitionFileErrorTest, BadMagic) {
  std::string bytes = ReadBytes(RankPath(0));
  bytes[3] = 'X';
  WriteBytes(RankPath(0), bytes);
  ExpectLoadError(0, absl::StatusCode::kInvalidArgument, {manifest_.ranks[0].file, "bad magic"});
  WriteBytes(RankPath(0), "");
  ExpectLoadError(0, absl::StatusCode::kInvalidArgument, {"bad magic"});
}

TEST_F(PartitionFileErrorTest, ChecksumMismatch) {
  std::string bytes = ReadBytes(RankPath(1));
  bytes[bytes.size() - 1] ^= 0x01;  // an index, past the header: only the checksum sees it
  WriteBytes(RankPath(1), bytes);
  ExpectLoadError(1, absl::StatusCode::kDataLoss, {manifest_.ranks[1].file, "checksum mismatch", "fnv1a64"});
}

TEST_F(PartitionFileErrorTest, MissingFiles) {
  fs::remove(RankPath(3));
  ExpectLoadError(3, absl::StatusCode::kNotFound, {"missing file", manifest_.ranks[3].file});
  fs::remove(ManifestPath());
  ExpectLoadError(0, absl::StatusCode::kNotFound, {"missing file", "manifest.json"});
  auto none = ReadManifest((fs::path(dir()) / "no_such_dir").string());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(PartitionFileErrorTest, RankOutOfRange) {
  auto four = LoadPartition(dir(), 4);
  EXPECT_EQ(four.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(absl::StrContains(four.status().message(), "rank 4 is out of range")) << four.status();
  EXPECT_TRUE(absl::StrContains(four.status().message(), "4 ranks")) << four.status();
  auto neg = LoadPartition(dir(), -1);
  EXPECT_EQ(neg.status().code(), absl::StatusCode::kOutOfRange);
}

TEST_F(PartitionFileErrorTest, WrongNumberOfRanks) {
  // The manifest's P disagrees with its grid and its list of ranks.
  EditManifest("\"num_ranks\": 4", "\"num_ranks\": 5");
  ExpectLoadError(0, absl::StatusCode::kInvalidArgument, {"manifest.json", "malformed", "num_ranks = 5"});
  EditManifest("\"num_ranks\": 5", "\"num_ranks\": 4");
  EditManifest("\"grid\": [4, 1]", "\"grid\": [2, 2]");
  ExpectLoadError(0, absl::StatusCode::kInvalidArgument, {"malformed", "1d"});
  EditManifest("\"grid\": [2, 2]", "\"grid\": [4, 1]");
  ASSERT_TRUE(LoadPartition(dir(), 0).ok());

}

TEST_F(PartitionFileErrorTest, HeaderDisagreesWithManifest) {
  // Rank 1's file rewritten to claim another rank, or another P, with its checksum fixed in
  // the manifest: only the header tells.
  const std::string original = ReadBytes(RankPath(1));
  const std::string good_manifest = ReadBytes(ManifestPath());
  for (const auto& [offset, field] : {std::pair<int, std::string>{16, "rank is 2"}, {24, "num_ranks is 2"}}) {
    std::string bytes = original;
    bytes[offset] = 2;
    WriteBytes(RankPath(1), bytes);
    WriteBytes(ManifestPath(), good_manifest);
    EditManifest(absl::StrFormat("%016x", manifest_.ranks[1].fnv1a64), absl::StrFormat("%016x", Fnv1a64(bytes)));
    ExpectLoadError(1, absl::StatusCode::kInvalidArgument, {manifest_.ranks[1].file, "header field " + field});
  }
}

TEST_F(PartitionFileErrorTest, MalformedManifest) {
  const std::string good = ReadBytes(ManifestPath());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {good.substr(0, good.size() / 2), "at byte"},
      {"[]", "not an object"},
      {"{\"format\": \"kps-partition\"}", "'version' is missing"},
      {"", "at byte 0"},
  };
  for (const auto& [text, part] : cases) {
    WriteBytes(ManifestPath(), text);
    ExpectLoadError(0, absl::StatusCode::kInvalidArgument, {"manifest.json", "malformed", part});
  }
  WriteBytes(ManifestPath(), good);
  EditManifest("\"version\": 1", "\"version\": 9");
  ExpectLoadError(0, absl::StatusCode::kUnimplemented, {"format version 9"});
  EditManifest("\"version\": 9", "\"version\": 1");
  EditManifest(manifest_.ranks[0].file, "../../etc/passwd");
  ExpectLoadError(0, absl::StatusCode::kInvalidArgument, {"not a plain file name"});
  WriteBytes(ManifestPath(), good);
  EditManifest("\"index_dtype\": \"int32\"", "\"index_dtype\": \"float32\"");
  ExpectLoadError(0, absl::StatusCode::kInvalidArgument, {"index_dtype"});
  WriteBytes(ManifestPath(), good);
  EditManifest("\"num_edges\": ", "\"num_edges\": 1");
  ExpectLoadError(0, absl::StatusCode::kInvalidArgument, {"sum to"});
  WriteBytes(ManifestPath(), good);
  ASSERT_TRUE(CountTrianglesPartitioned(dir()).ok());
}

TEST_F(PartitionFileErrorTest, RandomDamageNeverCrashes) {
  // Random bytes of the manifest, and of rank 0's file with its checksum fixed so that the
  // header and CSR checks are reached: every load ends in a Status, and one that succeeds
  // still gives a block within its ranges.
  const uint64_t seed = PrintedSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 gen(seed);
  const std::string good_manifest = ReadBytes(ManifestPath());
  const std::string good_rank = ReadBytes(RankPath(0));
  for (int trial = 0; trial < 300; ++trial) {
    std::string manifest = good_manifest, rank = good_rank;
    if (trial % 2 == 0) {
      manifest[gen() % manifest.size()] = static_cast<char>(gen());
    } else {
      for (int k = 0; k < 3; ++k) rank[gen() % rank.size()] = static_cast<char>(gen());
      const std::string old_hash = absl::StrFormat("%016x", manifest_.ranks[0].fnv1a64);
      manifest.replace(manifest.find(old_hash), old_hash.size(), absl::StrFormat("%016x", Fnv1a64(rank)));
    }
    WriteBytes(ManifestPath(), manifest);
    WriteBytes(RankPath(0), rank);
    auto got = LoadPartition(dir(), 0);
    if (got.ok()) {
      for (int64_t v : got->indices) ASSERT_TRUE(got->cols.Contains(v));
      ASSERT_EQ(got->indptr.size(), static_cast<size_t>(got->rows.size()) + 1);
    }
    (void)CountTrianglesPartitioned(dir());
  }
}

TEST(PartitionTest, BadArguments) {
  HostCsr g;
  g.indptr = {0, 1, 2, 2};
  g.indices = {1, 2};
  auto three = Partition2D(g, 3);
  ASSERT_FALSE(three.ok());
  EXPECT_TRUE(absl::StrContains(three.status().message(), "perfect square")) << three.status();
  EXPECT_FALSE(Partition1D(g, 0).ok());
  EXPECT_FALSE(Partition2D(g, 0, 3).ok());
  auto p = Partition1D(g, 2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(ExtractRank(g, *p, 2).status().code(), absl::StatusCode::kOutOfRange);
  // Malformed graphs: a decreasing row, a self loop, an index past n, a short indptr.
  for (auto bad : {std::vector<int64_t>{2, 1}, std::vector<int64_t>{0, 2}, std::vector<int64_t>{1, 3}}) {
    HostCsr b = g;
    b.indptr = {0, 2, 2, 2};
    b.indices = bad;
    EXPECT_FALSE(ValidateOrientedCsr(b).ok());
    EXPECT_FALSE(Partition1D(b, 2).ok());
  }
  HostCsr short_ptr = g;
  short_ptr.indptr = {0, 1};
  EXPECT_FALSE(Partition1D(short_ptr, 2).ok());
  HostCsr none;
  EXPECT_FALSE(Partition1D(none, 1).ok()) << "an empty indptr";
  // A partition of another graph.
  HostCsr bigger = g;
  bigger.indptr.push_back(2);
  EXPECT_FALSE(WritePartitions(::testing::TempDir(), bigger, *p).ok());
}

}  // namespace
}  // namespace dist
}  // namespace kps
