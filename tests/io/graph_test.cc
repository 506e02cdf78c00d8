// The graph readers: text edge lists (comments, headers, CRLF, weights, each malformed line
// an error naming the file and the line, a random round trip through WriteEdgeList);
// graph-tool files written here byte by byte (both byte orders, 1-, 2- and 4-byte ids,
// every property value type skipped, gzip-compressed or not, every truncation an error);
// Matrix Market files as edges; and graph-tool's own collection networks as Debian ships
// them (tools/install_deps.sh), checked against the counts in their headers and, for
// karate and lesmis, against their known triangle counts.
#include "io/graph.h"

#include <dirent.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/support.h"

namespace kps {
namespace io {
namespace {

using ::kps::testing::Contains;

// A file name in the test's temporary folder, unique to this process.
std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/kps_graph_test_", ::getpid(), "_", name);
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

std::vector<std::pair<int64_t, int64_t>> Edges(const EdgeList& g) {
  std::vector<std::pair<int64_t, int64_t>> e;
  for (size_t i = 0; i < g.src.size(); ++i) e.emplace_back(g.src[i], g.dst[i]);
  return e;
}

// ---- text edge lists ----------------------------------------------------------------------

TEST(EdgeListTest, CommentsHeadersWeightsAndBlankLines) {
  auto g = ParseEdgeList(
      "# a SNAP-style comment: Directed graph (each unordered pair of nodes is saved once)\n"
      "% a KONECT-style comment\n"
      "\n"
      "   \t\n"
      "# vertices 10\n"
      "0 1 2.5\n"
      "  3\t7   -1e-3  \n"
      "#directed\n"
      "7 7 0\n",
      "w.txt");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_vertices, 10);
  EXPECT_TRUE(g->directed);
  EXPECT_EQ(Edges(*g), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {3, 7}, {7, 7}}));
  EXPECT_EQ(g->weights, (std::vector<double>{2.5, -1e-3, 0}));

  auto plain = ParseEdgeList("5 2\n2 5\n5 2\n# undirected\n", "p.txt");  // duplicates kept as given
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->num_vertices, 6);  // max id + 1
  EXPECT_FALSE(plain->directed);
  EXPECT_EQ(Edges(*plain), (std::vector<std::pair<int64_t, int64_t>>{{5, 2}, {2, 5}, {5, 2}}));
  EXPECT_TRUE(plain->weights.empty());

  auto big = ParseEdgeList(absl::StrCat("0 ", kMaxVertexId, "\n"), "big.txt");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->num_vertices, kMaxVertexId + 1);
}

TEST(EdgeListTest, CrlfLineEndsAndNoFinalNewline) {
  auto g = ParseEdgeList("# vertices 4\r\n% c\r\n\r\n1\t2\t0.5\r\n3 0 4\r\n2 2 1", "crlf.txt");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_vertices, 4);
  EXPECT_EQ(Edges(*g), (std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {3, 0}, {2, 2}}));
  EXPECT_EQ(g->weights, (std::vector<double>{0.5, 4, 1}));
}

TEST(EdgeListTest, EmptyFiles) {
  for (const char* text : {"", "\n", "# only a comment\n% and another\r\n", "# vertices 0\n"}) {
    auto g = ParseEdgeList(text, "empty.txt");
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->num_vertices, 0) << text;
    EXPECT_TRUE(g->src.empty() && g->dst.empty() && g->weights.empty());
  }
  auto isolated = ParseEdgeList("# vertices 7\n", "isolated.txt");
  ASSERT_TRUE(isolated.ok()) << isolated.status();
  EXPECT_EQ(isolated->num_vertices, 7);
  EXPECT_TRUE(isolated->src.empty());
}

TEST(EdgeListTest, MalformedLinesNameTheFileTheLineAndTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"0 1\n1\n", "line 2: edge '1' is not 'U V' or 'U V WEIGHT'"},
      {"# c\n0 1 2 3\n", "line 2: edge '0 1 2 3' is not 'U V' or 'U V WEIGHT'"},
      {"0 1\n\n1 2 0.5\n", "line 3: edge '1 2 0.5' has 3 fields but the first edge (line 1) has 2"},
      {"0 1 1\n1 2\n", "line 2: edge '1 2' has 2 fields but the first edge (line 1) has 3"},
      {"0 x\n", "line 1: target 'x' is not a vertex id"},
      {"1.5 2\n", "line 1: source '1.5' is not a vertex id"},
      {"0 0x10\n", "target '0x10' is not a vertex id"},
      {"+1 2\n", "source '+1' is not a vertex id"},
      {"0 1\r\n-3 1\r\n", "line 2: source '-3' is negative; vertex ids start at 0"},
      {"0 4611686018427387905\n", "line 1: target '4611686018427387905' is larger than the largest vertex id"},
      {"99999999999999999999999 1\n", "source '99999999999999999999999' is larger than the largest vertex id"},
      {"0 1 abc\n", "line 1: weight 'abc' is not a finite number"},
      {"0 1 nan\n", "weight 'nan' is not a finite number"},
      {"0 1 1e400\n", "weight '1e400' is not a finite number"},
      {"0 1 inf\n", "weight 'inf' is not a finite number"},
      {"# vertices 3\n0 1\n\n2 5\n1 1\n", "line 4: vertex id 5 is not below the 3 vertices of the header on line 1"},
      {"# vertices -1\n", "line 1: header '# vertices -1' does not give a vertex count"},
      {"# vertices many\n", "header '# vertices many' does not give a vertex count"},
      {"# vertices 4\n# vertices 5\n", "line 2: header '# vertices 5' contradicts line 1, which gives 4 vertices"},
      {"0 1\x1b[2J\n", "target '1\\x1b[2J' is not a vertex id"},  // control bytes escaped
  };
  for (const auto& [text, part] : cases) {
    auto g = ParseEdgeList(text, "bad.txt");
    ASSERT_FALSE(g.ok()) << part;
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << part;
    EXPECT_TRUE(Contains(std::string(g.status().message()), "edge list file 'bad.txt', line ")) << part;
    EXPECT_TRUE(Contains(std::string(g.status().message()), part));
  }
  auto missing = ReadEdgeList("/nonexistent/kps.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(std::string(missing.status().message()), "edge list file '/nonexistent/kps.txt': cannot open"));
  // A directory opens, but is no (empty) edge list.
  auto dir = ReadEdgeList(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_TRUE(Contains(std::string(dir.status().message()), "cannot read: Is a directory"));
}

// Random graphs through WriteEdgeList and back: every field equal, weights to the bit
// (shortest round-trip printing), with isolated vertices past the largest id, so the
// header is what keeps num_vertices.
TEST(EdgeListTest, RandomRoundTripThroughWriteEdgeList) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937_64 rng(seed);
  const std::string path = TempPath("round_trip.txt");
  for (int trial = 0; trial < 12; ++trial) {
    EdgeList g;
    g.num_vertices = 1 + static_cast<int64_t>(rng() % (trial < 6 ? 50 : (int64_t{1} << 40)));
    g.directed = trial % 2 == 0;
    const bool weighted = trial % 3 != 0;
    const size_t m = trial == 0 ? 0 : rng() % 2000;
    std::uniform_int_distribution<int> exponent(-320, 300);
    std::normal_distribution<double> normal;
    for (size_t i = 0; i < m; ++i) {
      g.src.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(g.num_vertices)));
      g.dst.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(g.num_vertices)));
      if (weighted) {
        // Integers, ordinary values, and magnitudes down to the subnormals and up near the
        // largest double.
        const int kind = static_cast<int>(rng() % 3);
        g.weights.push_back(kind == 0   ? static_cast<double>(static_cast<int64_t>(rng() % 2001) - 1000)
                            : kind == 1 ? normal(rng)
                                        : normal(rng) * std::pow(10.0, exponent(rng)));
      }
    }
    ASSERT_TRUE(WriteEdgeList(path, g).ok());
    auto back = ReadEdgeList(path);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->num_vertices, g.num_vertices);
    EXPECT_EQ(back->directed, g.directed);
    EXPECT_EQ(back->src, g.src);
    EXPECT_EQ(back->dst, g.dst);
    ASSERT_EQ(back->weights.size(), g.weights.size());
    for (size_t i = 0; i < g.weights.size(); ++i) {
      ASSERT_EQ(std::memcmp(&back->weights[i], &g.weights[i], sizeof(double)), 0)
          << "edge " << i << ": " << g.weights[i] << " came back as " << back->weights[i];
    }
    // ReadGraph takes a name without a graph-tool or Matrix Market extension as an edge list.
    auto by_extension = ReadGraph(path);
    ASSERT_TRUE(by_extension.ok()) << by_extension.status();
    EXPECT_EQ(by_extension->src, g.src);
  }
  std::remove(path.c_str());
}

TEST(EdgeListTest, WriteRefusesAnInconsistentGraphAndLeavesTheFile) {
  const std::string path = TempPath("refused.txt");
  WriteText(path, "0 1\n");
  EdgeList g;
  g.num_vertices = 3;
  g.src = {0, 1};
  g.dst = {1};
  const std::vector<std::pair<EdgeList, std::string>> cases = [&] {
    std::vector<std::pair<EdgeList, std::string>> c;
    c.push_back({g, "src, dst and weights have 2, 1 and 0 entries"});
    EdgeList out = g;
    out.dst = {1, 3};
    c.push_back({out, "edge 1 (1, 3) has a vertex outside [0, 3)"});
    EdgeList neg = g;
    neg.dst = {-1, 2};
    c.push_back({neg, "edge 0 (0, -1) has a vertex outside [0, 3)"});
    EdgeList w = g;
    w.dst = {1, 2};
    w.weights = {1.0};
    c.push_back({w, "src, dst and weights have 2, 2 and 1 entries"});
    w.weights = {1.0, std::numeric_limits<double>::quiet_NaN()};
    c.push_back({w, "edge 1 has weight nan"});
    EdgeList count = g;
    count.dst = {1, 2};
    count.num_vertices = -2;
    c.push_back({count, "num_vertices -2 is outside [0, "});
    return c;
  }();
  for (const auto& [graph, part] : cases) {
    const absl::Status s = WriteEdgeList(path, graph);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << part;
    EXPECT_TRUE(Contains(std::string(s.message()), part));
  }
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_EQ(text.str(), "0 1\n");  // untouched
  std::remove(path.c_str());
  const absl::Status no_dir = WriteEdgeList("/nonexistent/dir/g.txt", EdgeList{});
  EXPECT_FALSE(no_dir.ok());
}

// ---- graph-tool files --------------------------------------------------------------------

// Writes graph-tool files byte by byte, in either byte order, following the format page
// (https://graph-tool.skewed.de/static/doc/gt_format.html) and its lesmis hexdump.
class GtWriter {
 public:
  explicit GtWriter(bool big_endian) : big_(big_endian) {}

  GtWriter& Raw(absl::string_view s) {
    out_.append(s.data(), s.size());
    return *this;
  }
  GtWriter& Uint(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) {
      const int shift = 8 * (big_ ? width - 1 - i : i);
      out_.push_back(static_cast<char>((v >> shift) & 0xFF));
    }
    return *this;
  }
  GtWriter& String(absl::string_view s) { return Uint(s.size(), 8).Raw(s); }
  // The header: magic, version 1, byte order, comment.
  GtWriter& Header(absl::string_view comment = "written by graph_test") {
    Raw("\xe2\x9b\xbe gt").Uint(1, 1).Uint(big_ ? 1 : 0, 1);
    return String(comment);
  }
  // The adjacency: directed flag, N, then each vertex's out-neighbours in `width`-byte ids.
  GtWriter& Adjacency(bool directed, const std::vector<std::vector<uint64_t>>& out, int width) {
    Uint(directed ? 1 : 0, 1).Uint(out.size(), 8);
    for (const auto& list : out) {
      Uint(list.size(), 8);
      for (uint64_t u : list) Uint(u, width);
    }
    return *this;
  }
  // A property map record's head: key type, name, value type (in that order; see graph.cc).
  GtWriter& Property(int key, absl::string_view name, int type) { return Uint(key, 1).String(name).Uint(type, 1); }
  const std::string& bytes() const { return out_; }

 private:
  bool big_;
  std::string out_;
};

// The id width graph-tool's writer uses for N vertices: the format page's "smallest of
// 1, 2, 4, 8 bytes sufficient to accommodate all N nodes", as its writer decides it (N
// up to 255 in one byte).
int IdWidth(uint64_t n) { return n <= 255 ? 1 : n <= 65535 ? 2 : n <= 4294967295u ? 4 : 8; }

// A small directed graph whose property maps use every value type graph-tool has, so
// the reader must skip each correctly to reach the end of the file exactly.
std::string SmallGraphWithEveryPropertyType(bool big_endian) {
  const std::vector<std::vector<uint64_t>> out = {{1, 2}, {2}, {0, 0, 3}, {}};  // 6 edges, 4 vertices
  GtWriter w(big_endian);
  w.Header().Adjacency(/*directed=*/true, out, 1);
  w.Uint(15, 8);                                                      // property maps
  w.Property(0, "description", 6).String("a graph property string");  // string
  w.Property(0, "flag", 0).Uint(1, 1);                                // bool
  w.Property(1, "i16", 1);                                            // int16_t per vertex
  for (int v = 0; v < 4; ++v) w.Uint(static_cast<uint64_t>(-v) & 0xFFFF, 2);
  w.Property(1, "i32", 2);
  for (int v = 0; v < 4; ++v) w.Uint(static_cast<uint64_t>(v * 1000), 4);
  w.Property(2, "i64", 3);
  for (int e = 0; e < 6; ++e) w.Uint(static_cast<uint64_t>(e), 8);
  w.Property(2, "weight", 4);  // double per edge
  for (int e = 0; e < 6; ++e) {
    double d = 0.5 * e;
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    w.Uint(bits, 8);
  }
  w.Property(0, "ld", 5).Raw(std::string(16, '\x01'));  // long double, 16 bytes
  w.Property(1, "vb", 7);                               // vector<bool>
  for (int v = 0; v < 4; ++v) {
    w.Uint(static_cast<uint64_t>(v), 8);
    for (int k = 0; k < v; ++k) w.Uint(k % 2, 1);
  }
  w.Property(1, "v16", 8).Uint(1, 8).Uint(7, 2).Uint(0, 8).Uint(2, 8).Uint(1, 2).Uint(2, 2).Uint(0, 8);
  w.Property(0, "v32", 9).Uint(3, 8).Uint(1, 4).Uint(2, 4).Uint(3, 4);
  w.Property(0, "v64", 10).Uint(2, 8).Uint(1, 8).Uint(2, 8);
  w.Property(1, "pos", 11);  // vector<double>, as graph-tool stores layouts
  for (int v = 0; v < 4; ++v) w.Uint(2, 8).Uint(0, 8).Uint(0, 8);
  w.Property(2, "vld", 12);  // vector<long double>
  for (int e = 0; e < 6; ++e) w.Uint(e % 2, 8).Raw(std::string(16 * (e % 2), '\x02'));
  w.Property(1, "vs", 13);  // vector<string>
  for (int v = 0; v < 4; ++v) {
    w.Uint(static_cast<uint64_t>(v), 8);
    for (int k = 0; k < v; ++k) w.String(absl::StrCat("s", k));
  }
  w.Property(2, "py", 14);  // python::object: a pickle, stored as a string
  for (int e = 0; e < 6; ++e) w.String(std::string(static_cast<size_t>(e), 'p'));
  return w.bytes();
}

TEST(GraphToolTest, BothByteOrdersAndEveryPropertyValueType) {
  const std::string little = SmallGraphWithEveryPropertyType(false), big = SmallGraphWithEveryPropertyType(true);
  ASSERT_NE(little, big);
  for (const std::string* bytes : {&little, &big}) {
    auto g = ParseGraphTool(*bytes, "small.gt");
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->num_vertices, 4);
    EXPECT_TRUE(g->directed);
    EXPECT_EQ(Edges(*g), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {0, 2}, {1, 2}, {2, 0}, {2, 0}, {2, 3}}));
    EXPECT_TRUE(g->weights.empty());
  }
}

// Ids are 1 byte up to N = 255, 2 bytes from 256, 4 bytes from 65536: a file of the right
// width reads, and the same edges in the wrong width do not.
TEST(GraphToolTest, IdWidthFollowsTheVertexCount) {
  for (const uint64_t n : {1, 2, 200, 255, 256, 300, 65535, 65536, 70001}) {
    SCOPED_TRACE(absl::StrCat("N = ", n));
    std::vector<std::vector<uint64_t>> out(n);
    std::vector<std::pair<int64_t, int64_t>> want;
    for (uint64_t v = 0; v < n; v += 1 + v / 3) {  // a few edges, up to the last vertex
      const uint64_t u = (v * 7919 + 3) % n;
      out[v].push_back(u);
      out[v].push_back(n - 1);
      want.push_back({static_cast<int64_t>(v), static_cast<int64_t>(u)});
      want.push_back({static_cast<int64_t>(v), static_cast<int64_t>(n - 1)});
    }
    for (const bool big : {false, true}) {
      const int width = IdWidth(n);
      GtWriter w(big);
      w.Header().Adjacency(false, out, width).Uint(0, 8);
      auto g = ParseGraphTool(w.bytes(), "w.gt");
      ASSERT_TRUE(g.ok()) << g.status();
      EXPECT_EQ(g->num_vertices, static_cast<int64_t>(n));
      EXPECT_FALSE(g->directed);
      EXPECT_EQ(Edges(*g), want);
      for (const int wrong : {1, 2, 4, 8}) {
        if (wrong == width) continue;
        GtWriter bad(big);
        bad.Header().Adjacency(false, out, wrong).Uint(0, 8);
        EXPECT_FALSE(ParseGraphTool(bad.bytes(), "w.gt").ok()) << "ids of " << wrong << " bytes";
      }
    }
  }
}

TEST(GraphToolTest, GzipCompressedAndPlainFilesFromDisk) {
  const std::string bytes = SmallGraphWithEveryPropertyType(true);
  const std::string gz = TempPath("small.gt.gz"), plain = TempPath("small.gt");
  gzFile f = gzopen(gz.c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
  WriteText(plain, bytes);
  for (const std::string& path : {gz, plain}) {
    for (const bool by_extension : {false, true}) {
      auto g = by_extension ? ReadGraph(path) : ReadGraphTool(path);
      ASSERT_TRUE(g.ok()) << g.status();
      EXPECT_EQ(g->num_vertices, 4);
      EXPECT_EQ(g->src.size(), 6u);
    }
  }
  // A compressed stream cut short is an error, not a shorter graph.
  std::ifstream in(gz, std::ios::binary);
  std::string compressed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = TempPath("cut.gt.gz");
  WriteText(cut, compressed.substr(0, compressed.size() / 2));
  auto g = ReadGraphTool(cut);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(
      Contains(std::string(g.status().message()), "graph-tool file '" + cut + "': the gzip stream is cut short"));
  auto missing = ReadGraphTool("/nonexistent/kps.gt.gz");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(
      Contains(std::string(missing.status().message()), "graph-tool file '/nonexistent/kps.gt.gz': cannot open"));
  EXPECT_FALSE(ReadGraphTool(::testing::TempDir()).ok());
  for (const std::string& p : {gz, plain, cut}) std::remove(p.c_str());
}

TEST(GraphToolTest, EveryTruncationIsAnError) {
  const std::string bytes = SmallGraphWithEveryPropertyType(false);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto g = ParseGraphTool(absl::string_view(bytes).substr(0, n), "cut.gt");
    ASSERT_FALSE(g.ok()) << "a prefix of " << n << " of " << bytes.size() << " bytes";
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(std::string(g.status().message()), "graph-tool file 'cut.gt'"));
    if (n >= 6) EXPECT_TRUE(Contains(std::string(g.status().message()), "truncated")) << n;
  }
}

TEST(GraphToolTest, MalformedFilesNameTheProblem) {
  const auto head = [](bool directed, uint64_t n) {
    GtWriter w(false);
    w.Header().Uint(directed, 1).Uint(n, 8);
    return w;
  };
  std::vector<std::pair<std::string, std::string>> cases;
  cases.push_back({"\xe2\x94\x80 graph-tool",  // a wrong magic (U+2500, not U+26FE)
                   "starts with '\\xe2\\x94\\x80 gr', not graph-tool's magic bytes e2 9b be 20 67 74"});
  cases.push_back({std::string("\xe2\x9b\xbe gt\x02\x00", 8), "byte 6: format version 2 is not supported"});
  cases.push_back({std::string("\xe2\x9b\xbe gt\x01\x05", 8), "the byte order flag is 5, not 0 or 1"});
  cases.push_back({GtWriter(false).Header().Uint(2, 1).bytes(), "the directed flag is 2"});
  // A vertex count no file of this size can hold is refused before anything is allocated.
  cases.push_back({head(true, uint64_t{1} << 40).bytes(),
                   "truncated: the out-neighbour counts of 1099511627776 vertices needs 1099511627776 x 8 bytes"});
  cases.push_back({head(true, ~uint64_t{0}).bytes(), "vertex count 18446744073709551615 is more than KPS reads"});
  cases.push_back(
      {head(true, 1).Uint(uint64_t{1} << 62, 8).bytes(), "the 4611686018427387904 out-neighbours of vertex 0 needs"});
  cases.push_back({head(true, 3).Uint(1, 8).Uint(1, 1).Uint(1, 8).Uint(3, 1).Uint(0, 8).Uint(0, 8).bytes(),
                   "vertex 1 has out-neighbour 3, not below the vertex count 3"});
  cases.push_back({head(false, 1).Uint(0, 8).bytes(), "truncated: the property map count needs 1 x 8 bytes"});
  cases.push_back({head(false, 1).Uint(0, 8).Uint(1, 8).Uint(3, 1).bytes(), "property map 0 has key type 3"});
  cases.push_back({head(false, 1).Uint(0, 8).Uint(1, 8).Property(1, "x\x1b", 15).bytes(),
                   "property map 0 ('x\\x1b') has value type 15; graph-tool's are 0 to 14"});
  cases.push_back({head(false, 2).Uint(0, 8).Uint(0, 8).Uint(1, 8).Property(1, "d", 4).Uint(0, 8).bytes(),
                   "truncated: the double values of property map 0 ('d') needs 2 x 8 bytes, 8 are left"});
  cases.push_back({head(false, 1).Uint(0, 8).Uint(0, 8).Raw("junk").bytes(), "4 bytes follow the last property map"});
  for (const auto& [bytes, part] : cases) {
    auto g = ParseGraphTool(bytes, "bad.gt");
    ASSERT_FALSE(g.ok()) << part;
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << part;
    EXPECT_TRUE(Contains(std::string(g.status().message()), "graph-tool file 'bad.gt'")) << part;
    EXPECT_TRUE(Contains(std::string(g.status().message()), part));
  }
}

// ---- Matrix Market files as graphs ----------------------------------------------------------

TEST(ReadGraphTest, MatrixMarketFilesAsEdges) {
  const std::string general = TempPath("g.mtx"), symmetric = TempPath("s.MTX"), pattern = TempPath("p.mtx");
  WriteText(general, "%%MatrixMarket matrix coordinate real general\n3 5 3\n3 1 1.5\n1 5 -2\n1 2 4\n");
  WriteText(symmetric, "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 9\n3 1 2\n3 2 7\n");
  WriteText(pattern, "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n2 1\n1 2\n");
  auto g = ReadGraph(general);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_vertices, 5);  // max(rows, columns)
  EXPECT_TRUE(g->directed);
  EXPECT_EQ(Edges(*g), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {0, 4}, {2, 0}}));  // CSR order
  EXPECT_EQ(g->weights, (std::vector<double>{4, -2, 1.5}));
  auto s = ReadGraph(symmetric);  // the stored triangle once, not its mirror too
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_vertices, 3);
  EXPECT_FALSE(s->directed);
  EXPECT_EQ(Edges(*s), (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {2, 0}, {2, 1}}));
  EXPECT_EQ(s->weights, (std::vector<double>{9, 2, 7}));
  auto p = ReadGraph(pattern);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Edges(*p), (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 0}}));
  EXPECT_TRUE(p->weights.empty());
  auto missing = ReadGraph("/nonexistent/kps.mtx");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  for (const std::string& f : {general, symmetric, pattern}) std::remove(f.c_str());
}

// ---- graph-tool's collection, as Debian's python3-graph-tool ships it ----------------------

// Triangles of the simple undirected graph underneath `g`: directions, self loops and
// parallel edges ignored. Independent of the reader: sets of neighbours, each triangle
// u < v < w counted once.
int64_t CountTriangles(const EdgeList& g) {
  std::vector<std::set<int64_t>> nbr(static_cast<size_t>(g.num_vertices));
  for (size_t i = 0; i < g.src.size(); ++i) {
    if (g.src[i] == g.dst[i]) continue;
    nbr[g.src[i]].insert(g.dst[i]);
    nbr[g.dst[i]].insert(g.src[i]);
  }
  int64_t triangles = 0;
  for (int64_t u = 0; u < g.num_vertices; ++u) {
    for (int64_t v : nbr[u]) {
      if (v <= u) continue;
      for (int64_t w : nbr[v]) {
        if (w > v && nbr[u].count(w) != 0) ++triangles;
      }
    }
  }
  return triangles;
}

// The "stats: N vertices, E edges, directed|undirected" that graph-tool writes into each
// file's comment, read here apart from the reader: the header's own count of what follows.
struct Stats {
  int64_t vertices = -1, edges = -1;
  bool directed = false;
};

Stats StatsFromComment(const std::string& path) {
  Stats st;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return st;
  char buf[4096];
  const int n = gzread(f, buf, sizeof(buf));
  gzclose(f);
  if (n < 16) return st;
  const std::string head(buf, static_cast<size_t>(n));
  const size_t at = head.find("stats: ");
  if (at == std::string::npos) return st;
  char kind[32] = {0};
  long long v = 0, e = 0;  // NOLINT(runtime/int): sscanf's %lld
  if (std::sscanf(head.c_str() + at, "stats: %lld vertices, %lld edges, %31[a-z]", &v, &e, kind) == 3) {
    st = {v, e, std::string(kind) == "directed"};
  }
  return st;
}

TEST(GraphToolTest, CollectionNetworks) {
  const std::string dir = KPS_TEST_GRAPHS_DIR;
  if (!std::ifstream(dir + "/karate.gt.gz")) {
    GTEST_SKIP() << "no " << dir << "/karate.gt.gz: tools/install_deps.sh fetches graph-tool's collection "
                 << "(Debian's python3-graph-tool)";
  }
  struct Known {
    const char* name;
    int64_t vertices, edges;
    bool directed;
    int64_t triangles;  // -1: not checked
  };
  // The counts in each file's header comment, which graph-tool's collection page lists too.
  const Known known[] = {
      {"karate", 34, 78, false, 45},
      {"lesmis", 77, 254, false, 467},
      {"adjnoun", 112, 425, false, -1},
      {"dolphins", 62, 159, false, -1},
      {"football", 115, 613, false, -1},
      {"polbooks", 105, 441, false, -1},
      {"celegansneural", 297, 2359, true, -1},
      {"serengeti-foodweb", 161, 592, true, -1},
      {"netscience", 1589, 2742, false, -1},
      {"polblogs", 1490, 19090, true, -1},
      {"power", 4941, 6594, false, -1},
      {"hep-th", 8361, 15751, false, -1},
      {"astro-ph", 16706, 121251, false, -1},
      {"cond-mat", 16726, 47594, false, -1},
      {"as-22july06", 22963, 48436, false, -1},
      {"cond-mat-2003", 31163, 120029, false, -1},
      {"email-Enron", 36692, 183831, false, -1},
      {"pgp-strong-2009", 39796, 301498, true, -1},
      {"cond-mat-2005", 40421, 175693, false, -1},
  };
  for (const Known& k : known) {
    SCOPED_TRACE(k.name);
    const std::string path = dir + "/" + k.name + ".gt.gz";
    if (!std::ifstream(path)) {
      ADD_FAILURE() << "missing " << path << " (karate.gt.gz is there: rerun tools/install_deps.sh)";
      continue;
    }
    auto g = ReadGraph(path);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->num_vertices, k.vertices);
    EXPECT_EQ(static_cast<int64_t>(g->src.size()), k.edges);
    EXPECT_EQ(g->directed, k.directed);
    const Stats st = StatsFromComment(path);
    EXPECT_EQ(st.vertices, k.vertices);
    EXPECT_EQ(st.edges, k.edges);
    EXPECT_EQ(st.directed, k.directed);
    for (size_t i = 0; i < g->src.size(); ++i) {
      ASSERT_TRUE(g->src[i] >= 0 && g->src[i] < g->num_vertices && g->dst[i] >= 0 && g->dst[i] < g->num_vertices);
    }
    if (k.triangles >= 0) EXPECT_EQ(CountTriangles(*g), k.triangles);
  }
  // Any other network in the folder: its header's counts.
  DIR* d = ::opendir(dir.c_str());
  ASSERT_NE(d, nullptr);
  int checked = 0;
  while (const dirent* entry = ::readdir(d)) {
    const std::string file = entry->d_name;
    if (file.size() < 7 || file.substr(file.size() - 6) != ".gt.gz") continue;
    SCOPED_TRACE(file);
    auto g = ReadGraphTool(dir + "/" + file);
    ASSERT_TRUE(g.ok()) << g.status();
    const Stats st = StatsFromComment(dir + "/" + file);
    EXPECT_EQ(g->num_vertices, st.vertices);
    EXPECT_EQ(static_cast<int64_t>(g->src.size()), st.edges);
    EXPECT_EQ(g->directed, st.directed);
    ++checked;
  }
  ::closedir(d);
  EXPECT_GE(checked, 2);
}

// karate through every format: graph-tool file -> edge list file -> the same edges.
TEST(GraphToolTest, KarateThroughAnEdgeListFile) {
  const std::string dir = KPS_TEST_GRAPHS_DIR;
  if (!std::ifstream(dir + "/karate.gt.gz")) GTEST_SKIP() << "no " << dir << "/karate.gt.gz (tools/install_deps.sh)";
  auto g = ReadGraphTool(dir + "/karate.gt.gz");
  ASSERT_TRUE(g.ok()) << g.status();
  const std::string path = TempPath("karate.txt");
  ASSERT_TRUE(WriteEdgeList(path, *g).ok());
  auto back = ReadGraph(path);
  std::remove(path.c_str());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->num_vertices, 34);
  EXPECT_FALSE(back->directed);
  EXPECT_EQ(Edges(*back), Edges(*g));
  EXPECT_EQ(CountTriangles(*back), 45);
}

}  // namespace
}  // namespace io
}  // namespace kps
