// graph_orient, graph_relabel and triangle_count on every device, against host references
// written from the definitions (a triangle is three vertices pairwise adjacent; counted by
// checking every pair of a vertex's higher neighbours): complete, bipartite, star and empty
// graphs with known counts, random graphs of both index dtypes, symmetric, oriented and
// relabelled input, totals and per-vertex counts, vertices whose lists cross the CUDA
// strategies' switch points (256 counted neighbours: warp to block; pieces of 1024; the
// shared-memory hash table and list), the whole pipeline from a raw edge list, and
// malformed input.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "io/graph.h"
#include "registry/call.h"
#include "testing/support.h"
#include "tests/ops/sparse/sparse_check.h"

namespace kps {
namespace {

using ::kps::testing::Contains;
using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

using Adjacency = std::vector<std::set<int64_t>>;

class TriangleTest : public ::kps::sparse_test::SparseDeviceTest {};

void AddEdge(Adjacency& g, int64_t u, int64_t v) {
  if (u == v) return;
  g[u].insert(v);
  g[v].insert(u);
}

void Csr(const Adjacency& g, std::vector<double>* ptr, std::vector<double>* idx) {
  ptr->assign(1, 0);
  idx->clear();
  for (const auto& s : g) {
    for (int64_t v : s) idx->push_back(static_cast<double>(v));
    ptr->push_back(static_cast<double>(idx->size()));
  }
}

// Per-vertex triangle counts and the total of the triangles u < v < w (all three edges)
// whose smallest vertex u is in [lo, hi).
std::vector<double> ReferenceRoots(const Adjacency& g, int64_t lo, int64_t hi, int64_t* total) {
  std::vector<double> per(g.size(), 0);
  *total = 0;
  for (int64_t u = lo; u < hi; ++u) {
    for (auto v = g[u].upper_bound(u); v != g[u].end(); ++v) {
      for (auto w = g[*v].upper_bound(*v); w != g[*v].end(); ++w) {
        if (g[u].count(*w) == 0) continue;
        ++*total;
        per[u] += 1;
        per[*v] += 1;
        per[*w] += 1;
      }
    }
  }
  return per;
}

// The same over every vertex.
std::vector<double> Reference(const Adjacency& g, int64_t* total) {
  return ReferenceRoots(g, 0, static_cast<int64_t>(g.size()), total);
}

Adjacency RandomGraph(int64_t n, double p, uint64_t seed) {
  Adjacency g(static_cast<size_t>(n));
  std::mt19937_64 gen(seed);
  std::bernoulli_distribution edge(p);
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t v = u + 1; v < n; ++v) {
      if (edge(gen)) AddEdge(g, u, v);
    }
  }
  return g;
}

// triangle_count of g on `dev`, symmetric and (through graph_orient by degree and by id)
// oriented, total and per vertex, against the reference.
void CheckCounts(const TriangleTest& t, DeviceType dev, const Adjacency& g, DataType pt, DataType it) {
  SCOPED_TRACE(std::string("n ") + std::to_string(g.size()) + " " + std::string(DataTypeName(pt)) + "/" +
               std::string(DataTypeName(it)));
  std::vector<double> ptr, idx;
  Csr(g, &ptr, &idx);
  int64_t total = 0;
  const std::vector<double> per = Reference(g, &total);
  auto count = [&](const Tensor& p, const Tensor& i, bool oriented, bool per_vertex) {
    return Call("triangle_count")
        .Input("indptr", p)
        .Input("indices", i)
        .Attr("oriented", oriented)
        .Attr("per_vertex", per_vertex)
        .OnDevice(dev)
        .RunOne();
  };
  const Tensor p = t.Put(ptr, pt), i = t.Put(idx, it);
  for (bool per_vertex : {false, true}) {
    auto got = count(p, i, false, per_vertex);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(ToDoubles(*got), per_vertex ? per : std::vector<double>{static_cast<double>(total)});
  }
  for (const std::string order : {"degree", "id"}) {
    SCOPED_TRACE(order);
    auto dag = Call("graph_orient").Input("indptr", p).Input("indices", i).Attr("order", order).OnDevice(dev).Run();
    ASSERT_TRUE(dag.ok()) << dag.status();
    // graph_orient's reference: each edge once, from the earlier by (degree, id) or id.
    std::vector<double> want_ptr{0}, want_idx;
    for (size_t u = 0; u < g.size(); ++u) {
      for (int64_t v : g[u]) {
        const size_t du = g[u].size(), dv = g[v].size();
        const bool keep = order == "degree" && du != dv ? du < dv : static_cast<int64_t>(u) < v;
        if (keep) want_idx.push_back(static_cast<double>(v));
      }
      want_ptr.push_back(static_cast<double>(want_idx.size()));
    }
    EXPECT_EQ(ToDoubles((*dag)[0]), want_ptr);
    EXPECT_EQ(ToDoubles((*dag)[1]), want_idx);
    for (bool per_vertex : {false, true}) {
      auto got = count((*dag)[0], (*dag)[1], true, per_vertex);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(ToDoubles(*got), per_vertex ? per : std::vector<double>{static_cast<double>(total)});
    }
  }
  // graph_relabel's reference: new ids by (degree, id), each row's neighbours renamed and
  // sorted; the relabelled graph's per-vertex counts are the old ones through perm.
  auto rel = Call("graph_relabel").Input("indptr", p).Input("indices", i).OnDevice(dev).Run();
  ASSERT_TRUE(rel.ok()) << rel.status();
  const size_t n = g.size();
  std::vector<int64_t> old_of(n), new_of(n);
  std::iota(old_of.begin(), old_of.end(), int64_t{0});
  std::stable_sort(old_of.begin(), old_of.end(), [&](int64_t a, int64_t b) { return g[a].size() < g[b].size(); });
  for (size_t k = 0; k < n; ++k) new_of[old_of[k]] = static_cast<int64_t>(k);
  std::vector<double> want_ptr{0}, want_idx, want_perm, want_per;
  for (size_t k = 0; k < n; ++k) {
    std::vector<int64_t> row;
    for (int64_t v : g[old_of[k]]) row.push_back(new_of[v]);
    std::sort(row.begin(), row.end());
    for (int64_t v : row) want_idx.push_back(static_cast<double>(v));
    want_ptr.push_back(static_cast<double>(want_idx.size()));
    want_perm.push_back(static_cast<double>(old_of[k]));
    want_per.push_back(per[old_of[k]]);
  }
  EXPECT_EQ(ToDoubles((*rel)[0]), want_ptr);
  EXPECT_EQ(ToDoubles((*rel)[1]), want_idx);
  EXPECT_EQ(ToDoubles((*rel)[2]), want_perm);
  EXPECT_EQ((*rel)[1].dtype(), it);
  auto got = count((*rel)[0], (*rel)[1], false, true);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(ToDoubles(*got), want_per);
}

TEST_P(TriangleTest, KnownGraphs) {
  for (int64_t k : {0, 1, 2, 3, 4, 5, 40}) {  // K_k has k choose 3 triangles
    Adjacency g(static_cast<size_t>(k));
    for (int64_t u = 0; u < k; ++u) {
      for (int64_t v = u + 1; v < k; ++v) AddEdge(g, u, v);
    }
    int64_t total = 0;
    Reference(g, &total);
    ASSERT_EQ(total, k * (k - 1) * (k - 2) / 6);
    CheckCounts(*this, GetParam(), g, DataType::kInt64, DataType::kInt32);
  }
  Adjacency bipartite(60), star(500);
  for (int64_t u = 0; u < 30; ++u) {
    for (int64_t v = 30; v < 60; ++v) AddEdge(bipartite, u, v);
  }
  for (int64_t v = 1; v < 500; ++v) AddEdge(star, 0, v);
  CheckCounts(*this, GetParam(), bipartite, DataType::kInt32, DataType::kInt32);  // 0 triangles
  CheckCounts(*this, GetParam(), star, DataType::kInt32, DataType::kInt64);       // 0, one hub of 499
}

TEST_P(TriangleTest, RandomGraphsEveryIndexType) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  for (DataType pt : {DataType::kInt32, DataType::kInt64}) {
    for (DataType it : {DataType::kInt32, DataType::kInt64}) {
      CheckCounts(*this, GetParam(), RandomGraph(301, 0.05, seed), pt, it);
    }
  }
  CheckCounts(*this, GetParam(), RandomGraph(97, 0.5, seed + 1), DataType::kInt64, DataType::kInt32);
  CheckCounts(*this, GetParam(), RandomGraph(2000, 0.004, seed + 2), DataType::kInt64, DataType::kInt64);
}

TEST_P(TriangleTest, ListsAroundTheStrategySwitches) {
  // Vertex 0's counted list (its neighbours above it, symmetric input) is 255, 256, 257
  // long (the warp kernel's limit), then in 2 to 9 block kernel pieces of 1024 neighbours
  // and around the block kernel's shared memory: a hash
  // table for up to 4096 int32 or 2048 int64 entries, the sorted list (triangle.hash=0,
  // ctest's sparse_test_triangle_search) for up to 8192 or 4096; its neighbours are
  // joined at random.
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 gen(seed);
  for (int64_t hub : {255, 256, 257, 2048, 2049, 4096, 4097, 8192, 8193}) {
    const int64_t n = hub + 40;
    Adjacency g(static_cast<size_t>(n));
    for (int64_t v = 1; v <= hub; ++v) AddEdge(g, 0, v);
    for (int64_t e = 0; e < 6 * hub; ++e) AddEdge(g, 1 + gen() % (n - 1), 1 + gen() % (n - 1));
    for (DataType it : {DataType::kInt32, DataType::kInt64}) {
      CheckCounts(*this, GetParam(), g, DataType::kInt64, it);
    }
  }
}

TEST_P(TriangleTest, RootRangesCountTheirShare) {
  // root_begin/root_end: the triangles found from roots in the range, symmetric and oriented
  // (by id: the same first vertex) input, total and per vertex; ranges that cut a random
  // graph at random points and that hold or leave out hubs in warp, block-piece and global
  // memory strategies (a hub at 0 and one in the middle).
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 gen(seed);
  std::vector<Adjacency> graphs = {RandomGraph(300, 0.08, seed + 3)};
  for (int64_t hub : {257, 4097}) {
    const int64_t n = 3 * hub;
    Adjacency g(static_cast<size_t>(n));
    for (int64_t v = 1; v <= hub; ++v) AddEdge(g, 0, v);
    for (int64_t v = n / 2 + 1; v < n; ++v) AddEdge(g, n / 2, v);
    for (int64_t e = 0; e < 4 * n; ++e) AddEdge(g, gen() % n, gen() % n);
    graphs.push_back(std::move(g));
  }
  for (const Adjacency& g : graphs) {
    const int64_t n = static_cast<int64_t>(g.size());
    std::vector<double> ptr, idx;
    Csr(g, &ptr, &idx);
    const Tensor p = Put(ptr, DataType::kInt64), i = Put(idx, DataType::kInt32);
    auto dag = Call("graph_orient").Input("indptr", p).Input("indices", i).Attr("order", std::string("id"))
                   .OnDevice(GetParam()).Run();
    ASSERT_TRUE(dag.ok()) << dag.status();
    const int64_t cut = 1 + static_cast<int64_t>(gen() % static_cast<uint64_t>(n - 1));
    const std::vector<std::pair<int64_t, int64_t>> ranges = {
        {0, 1}, {1, n / 2}, {n / 2, n / 2 + 1}, {n / 2 + 1, -1}, {0, cut}, {cut, n}, {cut, cut}, {0, -1}};
    for (auto [lo, hi] : ranges) {
      SCOPED_TRACE(std::to_string(n) + " vertices, roots [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
      int64_t total = 0;
      const std::vector<double> per = ReferenceRoots(g, lo, hi < 0 ? n : hi, &total);
      for (bool oriented : {false, true}) {
        for (bool per_vertex : {false, true}) {
          auto got = Call("triangle_count")
                         .Input("indptr", oriented ? (*dag)[0] : p)
                         .Input("indices", oriented ? (*dag)[1] : i)
                         .Attr("oriented", oriented)
                         .Attr("per_vertex", per_vertex)
                         .Attr("root_begin", lo)
                         .Attr("root_end", hi)
                         .OnDevice(GetParam())
                         .RunOne();
          ASSERT_TRUE(got.ok()) << got.status();
          EXPECT_EQ(ToDoubles(*got), per_vertex ? per : std::vector<double>{static_cast<double>(total)})
              << "oriented " << oriented << " per_vertex " << per_vertex;
        }
      }
    }
  }
  // Ranges outside the graph are errors naming the attribute.
  const Tensor p = Put({0, 1, 1}, DataType::kInt64), i = Put({1}, DataType::kInt32);
  for (auto [lo, hi, want] : std::vector<std::tuple<int64_t, int64_t, std::string>>{
           {-1, -1, "attribute 'root_begin' = -1 is outside [0, 2]"},
           {3, -1, "attribute 'root_begin' = 3 is outside [0, 2]"},
           {2, 1, "attribute 'root_end' = 1 is outside [root_begin = 2, 2]"},
           {0, 3, "attribute 'root_end' = 3 is outside [root_begin = 0, 2]"},
           {0, -2, "attribute 'root_end' = -2"}}) {
    absl::Status s = Call("triangle_count").Input("indptr", p).Input("indices", i).Attr("root_begin", lo)
                         .Attr("root_end", hi).OnDevice(GetParam()).Run().status();
    EXPECT_TRUE(Contains(s.ToString(), "triangle_count")) << s;
    EXPECT_TRUE(Contains(s.ToString(), want)) << s;
  }
}

TEST_P(TriangleTest, PipelineFromAnEdgeList) {
  // A raw edge list (both directions, duplicates, self loops) through graph_from_edges,
  // graph_orient and triangle_count.
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 gen(seed);
  const int64_t n = 3000;
  std::vector<double> src, dst;
  Adjacency g(n);
  for (int i = 0; i < 40000; ++i) {
    // A skewed choice of vertices, so a few have high degree.
    const int64_t u = static_cast<int64_t>(gen() % n) * static_cast<int64_t>(gen() % n) / n;
    const int64_t v = static_cast<int64_t>(gen() % n);
    src.push_back(static_cast<double>(u));
    dst.push_back(static_cast<double>(v));
    AddEdge(g, u, v);
  }
  int64_t total = 0;
  Reference(g, &total);
  auto csr = Call("graph_from_edges")
                 .Input("src", Put(src, DataType::kInt32))
                 .Input("dst", Put(dst, DataType::kInt32))
                 .Attr("num_vertices", n)
                 .OnDevice(GetParam())
                 .Run();
  ASSERT_TRUE(csr.ok()) << csr.status();
  auto dag = Call("graph_orient").Input("indptr", (*csr)[0]).Input("indices", (*csr)[1]).OnDevice(GetParam()).Run();
  ASSERT_TRUE(dag.ok()) << dag.status();
  auto got = Call("triangle_count")
                 .Input("indptr", (*dag)[0])
                 .Input("indices", (*dag)[1])
                 .Attr("oriented", true)
                 .OnDevice(GetParam())
                 .RunOne();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(ToDoubles(*got), std::vector<double>{static_cast<double>(total)});
}

TEST_P(TriangleTest, RealNetworks) {
  // graph-tool's collection networks (tools/install_deps.sh puts them in .data/graphs):
  // karate has 45 triangles and Les Miserables 467; every network's count and per-vertex
  // counts match the reference, through the whole pipeline on this device.
  const std::string dir = KPS_TEST_GRAPHS_DIR;
  if (!std::filesystem::exists(dir + "/karate.gt.gz")) {
    GTEST_SKIP() << "no real networks in " << dir << " (tools/install_deps.sh fetches them)";
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (path.size() < 6 || path.substr(path.size() - 6) != ".gt.gz") continue;
    SCOPED_TRACE(path);
    auto g = io::ReadGraph(path);
    ASSERT_TRUE(g.ok()) << g.status();
    Adjacency adj(static_cast<size_t>(g->num_vertices));
    std::vector<double> src, dst;
    for (size_t i = 0; i < g->src.size(); ++i) {
      AddEdge(adj, g->src[i], g->dst[i]);
      src.push_back(static_cast<double>(g->src[i]));
      dst.push_back(static_cast<double>(g->dst[i]));
    }
    int64_t total = 0;
    const std::vector<double> per = Reference(adj, &total);
    const std::string name = entry.path().filename().string();
    if (name == "karate.gt.gz") EXPECT_EQ(total, 45);
    if (name == "lesmis.gt.gz") EXPECT_EQ(total, 467);
    auto csr = Call("graph_from_edges")
                   .Input("src", Put(src, DataType::kInt32))
                   .Input("dst", Put(dst, DataType::kInt32))
                   .Attr("num_vertices", g->num_vertices)
                   .OnDevice(GetParam())
                   .Run();
    ASSERT_TRUE(csr.ok()) << csr.status();
    auto dag = Call("graph_orient").Input("indptr", (*csr)[0]).Input("indices", (*csr)[1]).OnDevice(GetParam()).Run();
    ASSERT_TRUE(dag.ok()) << dag.status();
    for (bool per_vertex : {false, true}) {
      auto got = Call("triangle_count")
                     .Input("indptr", (*dag)[0])
                     .Input("indices", (*dag)[1])
                     .Attr("oriented", true)
                     .Attr("per_vertex", per_vertex)
                     .OnDevice(GetParam())
                     .RunOne();
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(ToDoubles(*got), per_vertex ? per : std::vector<double>{static_cast<double>(total)});
    }
  }
}

TEST_P(TriangleTest, MalformedGraphs) {
  auto run = [&](const std::string& op, const std::vector<double>& ptr, const std::vector<double>& idx) {
    return Call(op)
        .Input("indptr", Put(ptr, DataType::kInt64))
        .Input("indices", Put(idx, DataType::kInt32))
        .OnDevice(GetParam())
        .Run()
        .status();
  };
  for (const std::string op : {"triangle_count", "graph_orient", "graph_relabel"}) {
    SCOPED_TRACE(op);
    absl::Status s = run(op, {0, 2, 3, 4}, {2, 1, 0, 0});
    EXPECT_TRUE(Contains(s.ToString(), op)) << s;
    EXPECT_TRUE(Contains(s.ToString(), "not strictly increasing in row 0")) << s;
    s = run(op, {0, 2, 3, 4}, {1, 2, 1, 0});
    EXPECT_TRUE(Contains(s.ToString(), "self loop at 2 (row 1 has column 1)")) << s;
    s = run(op, {0, 2, 3, 4}, {1, 3, 0, 0});
    EXPECT_TRUE(Contains(s.ToString(), "input 'indices' has 3 at 1 (row 0), outside [0, 3)")) << s;
    s = run(op, {}, {});
    EXPECT_TRUE(Contains(s.ToString(), "input 'indptr' is empty")) << s;
  }
  absl::Status s = Call("graph_orient")
                       .Input("indptr", Put({0, 0}, DataType::kInt64))
                       .Input("indices", Put({}, DataType::kInt64))
                       .Attr("order", std::string("random"))
                       .OnDevice(GetParam())
                       .Run()
                       .status();
  EXPECT_TRUE(Contains(s.ToString(), "attribute 'order' = 'random'")) << s;
  s = Call("graph_relabel")
          .Input("indptr", Put({0, 0}, DataType::kInt64))
          .Input("indices", Put({}, DataType::kInt64))
          .Attr("order", std::string("id"))
          .OnDevice(GetParam())
          .Run()
          .status();
  EXPECT_TRUE(Contains(s.ToString(), "graph_relabel")) << s;
  EXPECT_TRUE(Contains(s.ToString(), "attribute 'order' = 'id'; expected 'degree'")) << s;
}

KPS_INSTANTIATE_ON_DEVICES(TriangleTest);

}  // namespace
}  // namespace kps
