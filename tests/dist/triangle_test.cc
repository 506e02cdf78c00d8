// dist/triangle.h: the distributed triangle count.
//
// On the CPU: the plan (which roots are local, which rows are asked of whom), the owners'
// pieces and the layered CSR, with the exchange simulated in memory over every rank of 1-D
// and 2-D partitions, counted by the CPU triangle_count op: each rank's share equals the host
// model's (CountTrianglesPartitioned) and the shares add up to the whole graph's count.
//
// On GPUs (skipped without one or without NCCL, failing under KPS_REQUIRE_GPU=1): the real
// count over the world the environment describes, so the same binary runs alone (a world of
// 1) or under
//   build/kps launch --nproc N -- build/tests/dist_triangle_test
// on R-MAT scale 12 and the real networks in KPS_TEST_GRAPHS_DIR, against the single-GPU
// triangle_count of the whole graph; 1-D also with DistributedCountOptions::device_exchange,
// whose shares, rows and bytes must be the host path's, rank by rank. Every rank builds the
// same graph (rmat is deterministic from its attributes) and runs the same collectives in the
// same order. The device exchange's kernels are also tested one by one on a small block.
#include "dist/triangle.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dist/communicator.h"
#include "dist/triangle_cuda.h"
#include "gtest/gtest.h"
#include "io/graph.h"
#include "registry/call.h"
#include "testing/support.h"
#include "tests/dist/dist_test_util.h"

namespace kps {
namespace dist {
namespace {

namespace fs = std::filesystem;

// The oriented graph of R-MAT scale `scale` (graph_from_edges, graph_orient by degree), made
// on `device`, in host memory.
HostCsr RmatGraph(int64_t scale, uint64_t seed, DeviceType device) {
  auto edges = Call("rmat").Attr("scale", scale).Attr("seed", static_cast<int64_t>(seed))
                   .Attr("dtype", DataType::kInt32).OnDevice(device).Run();
  EXPECT_TRUE(edges.ok()) << edges.status();
  if (!edges.ok()) return {};
  auto simple = Call("graph_from_edges").Input("src", (*edges)[0]).Input("dst", (*edges)[1])
                    .Attr("num_vertices", int64_t{1} << scale).Run();
  EXPECT_TRUE(simple.ok()) << simple.status();
  if (!simple.ok()) return {};
  auto dag = Call("graph_orient").Input("indptr", (*simple)[0]).Input("indices", (*simple)[1]).Run();
  EXPECT_TRUE(dag.ok()) << dag.status();
  if (!dag.ok()) return {};
  auto g = HostCsrFromTensors((*dag)[0], (*dag)[1]);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *g : HostCsr{};
}

// A random simple graph (a few hubs), oriented by (degree, id), with many triangles.
HostCsr RandomGraph(int64_t n, int64_t draws, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::set<int64_t>> adj(static_cast<size_t>(n));
  for (int64_t i = 0; n > 1 && i < draws; ++i) {
    const int64_t u = static_cast<int64_t>(gen() % n) * static_cast<int64_t>(gen() % n) / n;
    const int64_t v = static_cast<int64_t>(gen() % n);
    if (u == v) continue;
    adj[u].insert(v);
    adj[v].insert(u);
  }
  HostCsr g;
  g.indptr.push_back(0);
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t v : adj[u]) {
      if (std::make_pair(adj[u].size(), u) < std::make_pair(adj[v].size(), v)) g.indices.push_back(v);
    }
    g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
  }
  return g;
}

Tensor HostTensor(const std::vector<int64_t>& v, DataType dtype) {
  Tensor t = *Tensor::Empty(Shape{static_cast<int64_t>(v.size())}, dtype, DeviceType::kCpu);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DataType::kInt32) {
      t.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
    } else {
      t.data<int64_t>()[i] = v[i];
    }
  }
  return t;
}

// triangle_count (oriented) of a CSR held in tensors, on the tensors' device.
int64_t Count(const Tensor& indptr, const Tensor& indices) {
  auto c = Call("triangle_count").Input("indptr", indptr).Input("indices", indices).Attr("oriented", true).RunOne();
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return -1;
  return (*c->ToVector<int64_t>())[0];
}

// The same from the roots [root_begin, root_end) only.
int64_t CountRoots(const std::vector<Tensor>& csr, int64_t root_begin, int64_t root_end) {
  auto c = Call("triangle_count")
               .Input("indptr", csr[0])
               .Input("indices", csr[1])
               .Attr("oriented", true)
               .Attr("root_begin", root_begin)
               .Attr("root_end", root_end)
               .RunOne();
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return -1;
  return (*c->ToVector<int64_t>())[0];
}

int64_t CountHost(const HostCsr& g) {
  return Count(HostTensor(g.indptr, DataType::kInt64), HostTensor(g.indices, g.index_dtype));
}

// Every rank of p, with the exchange simulated in memory: each rank's triangles through the
// layered CSRs (local roots alone, then the remote roots with the fetched rows).
std::vector<int64_t> SimulatedShares(const HostCsr& g, const Partition& p) {
  std::vector<RankPartition> blocks;
  for (int r = 0; r < p.num_ranks; ++r) blocks.push_back(*ExtractRank(g, p, r));
  std::vector<int64_t> shares;
  for (int r = 0; r < p.num_ranks; ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r));
    const RankPartition& local = blocks[r];
    auto plan = PlanCount(local, p);
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok()) return {};
    FetchedRows fetched;
    fetched.counts = plan->request_counts;
    fetched.ids = plan->request_ids;
    size_t at = 0;
    for (int owner = 0; owner < p.num_ranks; ++owner) {
      const size_t k = static_cast<size_t>(plan->request_counts[owner]);
      auto served = ServePieces(blocks[owner], absl::MakeConstSpan(plan->request_ids).subspan(at, k), r);
      EXPECT_TRUE(served.ok()) << served.status();
      if (!served.ok()) return {};
      at += k;
      fetched.lengths.insert(fetched.lengths.end(), served->lengths.begin(), served->lengths.end());
      fetched.entries.insert(fetched.entries.end(), served->entries.begin(), served->entries.end());
    }
    auto local_csr = LayeredCountCsr(local, p, plan->local_roots, FetchedRows{}, 1, Heads::kLocal);
    EXPECT_TRUE(local_csr.ok()) << local_csr.status();
    auto remote_csr = LayeredCountCsr(local, p, plan->remote_roots, fetched, 1, Heads::kRemote);
    EXPECT_TRUE(remote_csr.ok()) << remote_csr.status();
    if (!local_csr.ok() || !remote_csr.ok()) return {};
    shares.push_back(Count((*local_csr)[0], (*local_csr)[1]) + Count((*remote_csr)[0], (*remote_csr)[1]));
    if (p.grid_cols == 1) {  // 1-D counts through RangeCountCsr: the same share
      auto range_csr = RangeCountCsr(local, p, fetched, 2);
      EXPECT_TRUE(range_csr.ok()) << range_csr.status();
      if (range_csr.ok()) EXPECT_EQ(CountRoots(*range_csr, local.rows.begin, local.rows.end), shares.back());
    }
  }
  return shares;
}

using TempDir = ::kps::dist_test::TempDir;

// ---- on the CPU -------------------------------------------------------------------------------

TEST(DistTrianglePlanTest, SharesMatchTheHostModelAndAddUp) {
  const uint64_t seed = testing::FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  TempDir tmp("kps_dist_triangle");
  for (const HostCsr& g : {RmatGraph(10, seed, DeviceType::kCpu), RandomGraph(300, 3000, seed),
                           RandomGraph(40, 600, seed + 1), RandomGraph(7, 30, seed + 2)}) {
    const int64_t total = CountHost(g);
    struct Layout {
      bool two_d;
      int rows, cols;
    };
    for (const Layout l : {Layout{false, 1, 1}, Layout{false, 2, 1}, Layout{false, 3, 1}, Layout{false, 5, 1},
                           Layout{true, 2, 2}, Layout{true, 1, 3}, Layout{true, 3, 2}}) {
      SCOPED_TRACE(::testing::Message() << g.num_vertices() << " vertices, " << (l.two_d ? "2d " : "1d ") << l.rows
                                        << "x" << l.cols);
      auto p = l.two_d ? Partition2D(g, l.rows, l.cols) : Partition1D(g, l.rows);
      ASSERT_TRUE(p.ok()) << p.status();
      const std::vector<int64_t> shares = SimulatedShares(g, *p);
      ASSERT_EQ(shares.size(), static_cast<size_t>(p->num_ranks));
      int64_t sum = 0;
      for (int64_t s : shares) sum += s;
      EXPECT_EQ(sum, total);
      ASSERT_TRUE(WritePartitions(tmp.path(), g, *p).ok());
      auto model = CountTrianglesPartitioned(tmp.path());
      ASSERT_TRUE(model.ok()) << model.status();
      EXPECT_EQ(shares, model->per_rank);
    }
  }
}

TEST(DistTrianglePlanTest, LocalRootsReadOnlyLocalRows) {
  const HostCsr g = RandomGraph(200, 2000, testing::FreshSeed());
  auto p = Partition1D(g, 3);
  ASSERT_TRUE(p.ok());
  int64_t roots = 0;
  for (int r = 0; r < 3; ++r) {
    const RankPartition local = *ExtractRank(g, *p, r);
    auto plan = PlanCount(local, *p);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->request_counts[r], 0);
    // Every root is in a phase; a local root has a local head, a remote root a remote one.
    std::set<int64_t> in_phase(plan->local_roots.begin(), plan->local_roots.end());
    in_phase.insert(plan->remote_roots.begin(), plan->remote_roots.end());
    roots += static_cast<int64_t>(in_phase.size());
    for (int64_t u : plan->local_roots) {
      bool local_head = false;
      for (int64_t v : local.Row(u)) local_head = local_head || local.rows.Contains(v);
      EXPECT_TRUE(local_head) << u;
    }
    for (int64_t u : plan->remote_roots) {
      bool remote = false;
      for (int64_t v : local.Row(u)) remote = remote || !local.rows.Contains(v);
      EXPECT_TRUE(remote) << u;
    }
    // The requests are RemoteRowsNeeded's, in owner order.
    auto needed = RemoteRowsNeeded(local, *p);
    ASSERT_TRUE(needed.ok());
    std::vector<int64_t> ids;
    for (const RemoteRowRequest& q : *needed) ids.insert(ids.end(), q.vertices.begin(), q.vertices.end());
    EXPECT_EQ(ids, plan->request_ids);
    // With nothing fetched, only the local heads can be counted.
    EXPECT_TRUE(LayeredCountCsr(local, *p, plan->local_roots, FetchedRows{}, 1, Heads::kLocal).ok());
    if (!plan->remote_roots.empty()) {
      absl::Status s = LayeredCountCsr(local, *p, plan->remote_roots, FetchedRows{}, 1, Heads::kRemote).status();
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      EXPECT_TRUE(absl::StrContains(s.message(), "did not receive")) << s;
    }
  }
  int64_t with_edges = 0;
  for (int64_t u = 0; u < g.num_vertices(); ++u) with_edges += g.indptr[u + 1] > g.indptr[u] ? 1 : 0;
  EXPECT_EQ(roots, with_edges);
}

// PlanCount's requests are RemoteRowsNeeded's (found by marking rather than sorting), in every
// layout.
TEST(DistTrianglePlanTest, RequestsAreRemoteRowsNeeded) {
  const uint64_t seed = testing::FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const HostCsr g = RandomGraph(150, 1500, seed);
  for (const auto& [rows, cols] : std::vector<std::pair<int, int>>{{4, 0}, {2, 2}, {1, 3}, {3, 1}, {2, 3}}) {
    SCOPED_TRACE(::testing::Message() << rows << "x" << cols);
    auto p = cols == 0 ? Partition1D(g, rows) : Partition2D(g, rows, cols);
    ASSERT_TRUE(p.ok()) << p.status();
    for (int r = 0; r < p->num_ranks; ++r) {
      const RankPartition local = *ExtractRank(g, *p, r);
      auto plan = PlanCount(local, *p);
      ASSERT_TRUE(plan.ok()) << plan.status();
      auto needed = RemoteRowsNeeded(local, *p);
      ASSERT_TRUE(needed.ok()) << needed.status();
      std::vector<int64_t> counts(static_cast<size_t>(p->num_ranks), 0), ids;
      for (const RemoteRowRequest& q : *needed) {
        counts[q.owner] = static_cast<int64_t>(q.vertices.size());
        ids.insert(ids.end(), q.vertices.begin(), q.vertices.end());
      }
      EXPECT_EQ(plan->request_counts, counts) << "rank " << r;
      EXPECT_EQ(plan->request_ids, ids) << "rank " << r;
    }
  }
}

// An all_to_all among `ranks` threads in memory: each deposits what it sends, all wait, each
// takes its blocks, all wait again (so the slots can be reused by the next call).
class InMemoryAllToAll {
 public:
  explicit InMemoryAllToAll(int ranks) : ranks_(ranks), send_(ranks), splits_(ranks) {}

  HostAllToAll For(int rank, DataType index_dtype) {
    return [this, rank, index_dtype](const std::vector<int64_t>& send, const std::vector<int64_t>& send_splits,
                                     const std::vector<int64_t>& recv_splits,
                                     DataType dtype) -> absl::StatusOr<std::vector<int64_t>> {
      EXPECT_TRUE(dtype == DataType::kInt64 || dtype == index_dtype) << DataTypeName(dtype);
      send_[rank] = send;
      splits_[rank] = send_splits;
      Wait();
      std::vector<int64_t> out;
      for (int r = 0; r < ranks_; ++r) {
        int64_t at = 0;
        for (int j = 0; j < rank; ++j) at += splits_[r][j];
        const int64_t k = splits_[r][rank];
        EXPECT_EQ(k, recv_splits[r]) << "rank " << rank << " expects " << recv_splits[r] << " from rank " << r;
        out.insert(out.end(), send_[r].begin() + at, send_[r].begin() + at + k);
      }
      Wait();
      return out;
    };
  }

 private:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t gen = generation_;
    if (++arrived_ == ranks_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != gen; });
    }
  }

  const int ranks_;
  std::vector<std::vector<int64_t>> send_, splits_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int64_t generation_ = 0;
};

// ExchangeRows over threads, one per rank: the split sizes of the four exchanges agree between
// ranks, the rows arrive, and the shares are the host model's.
TEST(DistTrianglePlanTest, ExchangeRowsBetweenThreads) {
  const uint64_t seed = testing::FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  for (const HostCsr& g : {RmatGraph(10, seed, DeviceType::kCpu), RandomGraph(120, 1500, seed)}) {
    for (const auto& [rows, cols] : std::vector<std::pair<int, int>>{{2, 1}, {3, 1}, {2, 2}, {1, 3}}) {
      SCOPED_TRACE(::testing::Message() << rows << "x" << cols);
      auto p = cols == 1 ? Partition1D(g, rows) : Partition2D(g, rows, cols);
      ASSERT_TRUE(p.ok()) << p.status();
      const int n = p->num_ranks;
      InMemoryAllToAll fake(n);
      std::vector<RankPartition> blocks;
      std::vector<CountPlan> plans;
      for (int r = 0; r < n; ++r) {
        blocks.push_back(*ExtractRank(g, *p, r));
        plans.push_back(*PlanCount(blocks[r], *p));
      }
      std::vector<absl::StatusOr<ExchangeResult>> results(n, absl::UnknownError("not run"));
      std::vector<std::thread> threads;
      for (int r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
          results[r] = ExchangeRows(blocks[r], *p, plans[r], fake.For(r, blocks[r].index_dtype));
        });
      }
      for (std::thread& t : threads) t.join();
      int64_t sum = 0, sent = 0, received = 0;
      std::vector<int64_t> shares;
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(results[r].ok()) << results[r].status();
        sent += results[r]->bytes_sent;
        received += results[r]->bytes_received;
        auto a = LayeredCountCsr(blocks[r], *p, plans[r].local_roots, FetchedRows{}, 2, Heads::kLocal);
        auto b = LayeredCountCsr(blocks[r], *p, plans[r].remote_roots, results[r]->fetched, 2, Heads::kRemote);
        ASSERT_TRUE(a.ok()) << a.status();
        ASSERT_TRUE(b.ok()) << b.status();
        shares.push_back(Count((*a)[0], (*a)[1]) + Count((*b)[0], (*b)[1]));
        sum += shares.back();
        if (cols == 1) {
          auto c = RangeCountCsr(blocks[r], *p, results[r]->fetched, 3);
          ASSERT_TRUE(c.ok()) << c.status();
          EXPECT_EQ(CountRoots(*c, blocks[r].rows.begin, blocks[r].rows.end), shares.back());
        }
      }
      EXPECT_EQ(sum, CountHost(g));
      EXPECT_EQ(shares, SimulatedShares(g, *p));
      EXPECT_EQ(sent, received);
      EXPECT_GT(sent, 0);
    }
  }
}

// RangeCountCsr refuses what it cannot count: a 2-D partition, a fetched row of the rank's own
// range or one of a negative length, sizes that disagree, an entry outside the graph.
TEST(DistTrianglePlanTest, RangeCsrErrorsNameTheProblem) {
  const HostCsr g = RandomGraph(40, 300, testing::FreshSeed());
  auto p2 = Partition2D(g, 2, 2);
  ASSERT_TRUE(p2.ok()) << p2.status();
  absl::Status s = RangeCountCsr(*ExtractRank(g, *p2, 0), *p2, FetchedRows{}).status();
  EXPECT_TRUE(testing::Contains(s.ToString(), "takes a 1-D partition; this one is 2 x 2")) << s;
  auto p = Partition1D(g, 2);
  ASSERT_TRUE(p.ok()) << p.status();
  const RankPartition r0 = *ExtractRank(g, *p, 0);
  const int64_t own = r0.rows.begin, other = r0.rows.end;  // rank 1 holds row `other`
  auto with = [&](std::vector<int64_t> ids, std::vector<int64_t> lengths, std::vector<int64_t> entries) {
    FetchedRows f;
    f.counts = {0, static_cast<int64_t>(ids.size())};
    f.ids = std::move(ids);
    f.lengths = std::move(lengths);
    f.entries = std::move(entries);
    return RangeCountCsr(r0, *p, f).status();
  };
  s = with({own}, {0}, {});
  EXPECT_TRUE(testing::Contains(s.ToString(), absl::StrCat("row ", own, " (length 0)"))) << s;
  s = with({other}, {-1}, {});
  EXPECT_TRUE(testing::Contains(s.ToString(), "negative length")) << s;
  s = with({other, other}, {0, 0}, {});
  EXPECT_TRUE(testing::Contains(s.ToString(), "repeated")) << s;
  s = with({other}, {2}, {1});
  EXPECT_TRUE(testing::Contains(s.ToString(), "lengths add up to 2 but 1 entries")) << s;
  s = with({other}, {1}, {40});
  EXPECT_TRUE(testing::Contains(s.ToString(), "holds vertex 40, outside [0, 40)")) << s;
  EXPECT_TRUE(with({other}, {1}, {other + 1}).ok());
}

// The layered CSR built on several threads is the one built on one.
TEST(DistTrianglePlanTest, LayeredCsrSameOnManyThreads) {
  const uint64_t seed = testing::FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const HostCsr g = RandomGraph(20000, 150000, seed);
  auto p = Partition1D(g, 2);
  ASSERT_TRUE(p.ok());
  const RankPartition r0 = *ExtractRank(g, *p, 0), r1 = *ExtractRank(g, *p, 1);
  auto plan = PlanCount(r0, *p);
  ASSERT_TRUE(plan.ok());
  FetchedRows fetched;
  fetched.counts = plan->request_counts;
  fetched.ids = plan->request_ids;
  auto served = ServePieces(r1, plan->request_ids, 0);
  ASSERT_TRUE(served.ok());
  fetched.lengths = served->lengths;
  fetched.entries = served->entries;
  for (const std::vector<int64_t>* roots : {&plan->local_roots, &plan->remote_roots}) {
    ASSERT_GT(roots->size(), 2048u);
    const FetchedRows& f = roots == &plan->local_roots ? FetchedRows{} : fetched;
    const Heads heads = roots == &plan->local_roots ? Heads::kLocal : Heads::kRemote;
    auto one = LayeredCountCsr(r0, *p, *roots, f, 1, heads);
    auto many = LayeredCountCsr(r0, *p, *roots, f, 7, heads);
    ASSERT_TRUE(one.ok()) << one.status();
    ASSERT_TRUE(many.ok()) << many.status();
    EXPECT_EQ(*(*one)[0].ToVector<int64_t>(), *(*many)[0].ToVector<int64_t>());
    EXPECT_EQ(*(*one)[1].ToVector<int32_t>(), *(*many)[1].ToVector<int32_t>());
  }
}

// The layered CSR of the smallest case, spelled out: 0 -> {1, 2}, 1 -> {2}, one rank.
TEST(DistTrianglePlanTest, LayeredCsrOfOneTriangle) {
  HostCsr g;
  g.indptr = {0, 2, 3, 3};
  g.indices = {1, 2, 2};
  auto p = Partition1D(g, 1);
  ASSERT_TRUE(p.ok());
  const RankPartition local = *ExtractRank(g, *p, 0);
  auto csr = LayeredCountCsr(local, *p, std::vector<int64_t>{0, 1}, FetchedRows{});
  ASSERT_TRUE(csr.ok()) << csr.status();
  // Roots a(0) = 0, a(1) = 1; C = {1, 2}: b(1) = 2, b(2) = 3, c(1) = 4, c(2) = 5.
  EXPECT_EQ(*(*csr)[0].ToVector<int64_t>(), (std::vector<int64_t>{0, 4, 6, 7, 7, 7, 7}));
  EXPECT_EQ(*(*csr)[1].ToVector<int32_t>(), (std::vector<int32_t>{2, 3, 4, 5, 3, 5, 5}));
  EXPECT_EQ(Count((*csr)[0], (*csr)[1]), 1);
}

TEST(DistTrianglePlanTest, BadInputsAreErrors) {
  const HostCsr g = RandomGraph(50, 400, 7);
  auto p = Partition1D(g, 2);
  ASSERT_TRUE(p.ok());
  const RankPartition r0 = *ExtractRank(g, *p, 0);
  // An owner asked for a row it does not hold.
  absl::Status s = ServePieces(r0, std::vector<int64_t>{r0.rows.end}, 1).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(s.message(), "rank 1 asked rank 0")) << s;
  // Roots out of order or outside the rank's rows.
  EXPECT_EQ(LayeredCountCsr(r0, *p, std::vector<int64_t>{1, 0}, FetchedRows{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LayeredCountCsr(r0, *p, std::vector<int64_t>{r0.rows.end}, FetchedRows{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Fetched rows whose sizes disagree.
  FetchedRows f;
  f.counts = {0, 2};
  f.ids = {r0.rows.end};
  f.lengths = {1};
  f.entries = {0};
  s = LayeredCountCsr(r0, *p, {}, f).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  f.counts = {0, 1};
  f.lengths = {5};
  s = LayeredCountCsr(r0, *p, {}, f).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  f.counts = {0, 1, 0};
  EXPECT_EQ(LayeredCountCsr(r0, *p, {}, f).status().code(), absl::StatusCode::kInvalidArgument);
  // A block of another partition.
  auto p3 = Partition1D(g, 3);
  ASSERT_TRUE(p3.ok());
  EXPECT_FALSE(PlanCount(r0, *p3).ok());
}

// ---- the device exchange's kernels, on one GPU ----------------------------------------------------

// A CUDA tensor of v in `dtype` (int32 or int64), copied in the order of `stream`.
Tensor OnGpu(const std::vector<int64_t>& v, DataType dtype, const Stream& stream) {
  auto t = HostTensor(v, dtype).To(DeviceType::kCuda, stream);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Tensor();
}

std::vector<int64_t> OnHost(const Tensor& t, const Stream& stream) {
  auto h = t.To(DeviceType::kCpu, stream);
  EXPECT_TRUE(h.ok()) << h.status();
  if (!h.ok()) return {};
  std::vector<int64_t> out;
  for (int64_t i = 0; i < h->numel(); ++i) {
    out.push_back(h->dtype() == DataType::kInt32 ? h->data<int32_t>()[i] : h->data<int64_t>()[i]);
  }
  return out;
}

unsigned long long* Word(const Tensor& t, int64_t at = 0) {
  return reinterpret_cast<unsigned long long*>(t.data<int64_t>() + at);
}

// Each kernel of dist/triangle_cuda.h on a small block: what it computes, and the position it
// reports when a block or a peer's data is wrong (-1: the fault word untouched).
TEST(DistTriangleDeviceTest, KernelsComputeAndReportBadValues) {
  KPS_SKIP_WITHOUT_GPU();
  auto owned = OwnedCudaStream::Create();
  ASSERT_TRUE(owned.ok()) << owned.status();
  const Stream s = owned->stream();
  // Rows [10, 13) of a graph of 40 vertices: 10 -> {11, 20}, 11 -> {}, 12 -> {3, 12, 30}.
  const int64_t n = 40, begin = 10, end = 13;
  const Tensor ptr = OnGpu({0, 2, 2, 5}, DataType::kInt64, s);
  for (DataType dtype : {DataType::kInt32, DataType::kInt64}) {
    SCOPED_TRACE(DataTypeName(dtype));
    const Tensor idx = OnGpu({11, 20, 3, 12, 30}, dtype, s);
    const Tensor words = OnGpu({-1, 0, 0}, DataType::kInt64, s);
    // MarkHeads takes bytes: a uint8 tensor of zeros.
    auto marks = Tensor::Empty(Shape{n}, DataType::kUInt8, DeviceType::kCuda, s);
    ASSERT_TRUE(marks.ok());
    ASSERT_EQ(cudaMemsetAsync(marks->raw_data(), 0, n, s.cuda_stream()), cudaSuccess);
    ASSERT_TRUE(gpu::MarkHeads(idx, n, marks->data<uint8_t>(), Word(words), s).ok());
    ASSERT_TRUE(gpu::CountRootKinds(ptr, idx, begin, end, Word(words, 1), Word(words, 0), s).ok());
    EXPECT_EQ(OnHost(words, s), (std::vector<int64_t>{-1, 2, 2}));  // rows 10 and 12 have both kinds
    auto marked = Call("nonzero").Input("x", *marks).OnStream(s).RunOne();
    ASSERT_TRUE(marked.ok()) << marked.status();
    EXPECT_EQ(OnHost(*marked, s), (std::vector<int64_t>{3, 11, 12, 20, 30}));
    // An entry outside [0, n), and a row whose range decreases.
    const Tensor bad = OnGpu({11, 20, 40, 12, -1}, dtype, s);
    const Tensor bad_words = OnGpu({-1, -1, 0, 0}, DataType::kInt64, s);
    ASSERT_TRUE(gpu::MarkHeads(bad, n, marks->data<uint8_t>(), Word(bad_words), s).ok());
    ASSERT_TRUE(gpu::CountRootKinds(OnGpu({0, 3, 2, 5}, DataType::kInt64, s), idx, begin, end, Word(bad_words, 2),
                                    Word(bad_words, 1), s)
                    .ok());
    EXPECT_EQ(OnHost(bad_words, s)[0], 2);
    EXPECT_EQ(OnHost(bad_words, s)[1], 1);

    // The ids asked for, per owner ([0, 10), [10, 13), [13, 40)), narrowed to int32.
    const Tensor ids = OnGpu({1, 5, 20, 30, 39}, DataType::kInt64, s);
    const Tensor splits = OnGpu({0, 10, 13, 40}, DataType::kInt64, s);
    const Tensor counts = OnGpu({-7, -7, -7}, DataType::kInt64, s);
    ASSERT_TRUE(gpu::CountPerOwner(ids.data<int64_t>(), 5, splits.data<int64_t>(), 3, counts.data<int64_t>(), s).ok());
    EXPECT_EQ(OnHost(counts, s), (std::vector<int64_t>{2, 0, 3}));
    const Tensor narrow = OnGpu({0, 0, 0, 0, 0}, DataType::kInt32, s);
    ASSERT_TRUE(gpu::NarrowToInt32(ids.data<int64_t>(), 5, narrow.data<int32_t>(), s).ok());
    EXPECT_EQ(OnHost(narrow, s), (std::vector<int64_t>{1, 5, 20, 30, 39}));

    // Serving: the lengths of the rows asked (9 is not this rank's), the pieces, the sums.
    const Tensor asked = OnGpu({12, 10, 9, 11}, dtype, s);
    const Tensor lengths = OnGpu({-7, -7, -7, -7, -7}, DataType::kInt64, s);
    const Tensor fault = OnGpu({-1}, DataType::kInt64, s);
    ASSERT_TRUE(gpu::AskedRowLengths(asked, ptr, begin, end, lengths.data<int64_t>(), Word(fault), s).ok());
    EXPECT_EQ(OnHost(lengths, s), (std::vector<int64_t>{3, 2, 0, 0, 0}));
    EXPECT_EQ(OnHost(fault, s), (std::vector<int64_t>{2}));
    const Tensor good = OnGpu({12, 10}, dtype, s);
    const Tensor offsets = OnGpu({0, 3, 5}, DataType::kInt64, s);
    const Tensor served = OnGpu({-7, -7, -7, -7, -7}, dtype, s);
    ASSERT_TRUE(gpu::GatherAskedRows(good, ptr, idx, begin, end, offsets.data<int64_t>(), served, s).ok());
    EXPECT_EQ(OnHost(served, s), (std::vector<int64_t>{3, 12, 30, 11, 20}));
    const Tensor sums = OnGpu({-7, -7, -7}, DataType::kInt64, s);
    const Tensor per_rank = OnGpu({2, 0, 2}, DataType::kInt64, s);
    ASSERT_TRUE(gpu::SumsPerRank(OnGpu({0, 3, 5, 5, 8}, DataType::kInt64, s).data<int64_t>(),
                                 per_rank.data<int64_t>(), 3, sums.data<int64_t>(), s)
                    .ok());
    EXPECT_EQ(OnHost(sums, s), (std::vector<int64_t>{5, 0, 3}));

    // Lengths received: negative, or longer than a row of n vertices can be.
    const Tensor checked = OnGpu({-7, -7, -7, -7, -7}, DataType::kInt64, s);
    const Tensor length_fault = OnGpu({-1}, DataType::kInt64, s);
    ASSERT_TRUE(gpu::CheckedLengths(OnGpu({3, 39, -1, 40}, DataType::kInt64, s).data<int64_t>(), 4, n,
                                    checked.data<int64_t>(), Word(length_fault), s)
                    .ok());
    EXPECT_EQ(OnHost(checked, s), (std::vector<int64_t>{3, 39, 0, 0, 0}));
    EXPECT_EQ(OnHost(length_fault, s), (std::vector<int64_t>{2}));

    // The counted CSR: the block's rows and fetched rows 5 -> {7, 8}, 20 -> {33}.
    const Tensor fetched_ids = OnGpu({5, 20}, DataType::kInt64, s);
    const Tensor fetched_offsets = OnGpu({0, 2, 3}, DataType::kInt64, s);
    const Tensor row_lengths = OnGpu(std::vector<int64_t>(n + 1, 0), DataType::kInt64, s);
    ASSERT_TRUE(gpu::ScatterRowLengths(ptr, begin, fetched_ids.data<int64_t>(), fetched_offsets.data<int64_t>(), 2,
                                       row_lengths.data<int64_t>(), s)
                    .ok());
    auto indptr = Call("cumsum").Input("x", row_lengths).Attr("dim", int64_t{0}).Attr("exclusive", true)
                      .OnStream(s).RunOne();
    ASSERT_TRUE(indptr.ok()) << indptr.status();
    const std::vector<int64_t> ptr_host = OnHost(*indptr, s);
    ASSERT_EQ(ptr_host.size(), static_cast<size_t>(n + 1));
    EXPECT_EQ(ptr_host[5], 0);
    EXPECT_EQ(ptr_host[6], 2);
    EXPECT_EQ(ptr_host[10], 2);
    EXPECT_EQ(ptr_host[13], 7);
    EXPECT_EQ(ptr_host[20], 7);
    EXPECT_EQ(ptr_host[n], 8);
    for (DataType out_dtype : {DataType::kInt32, DataType::kInt64}) {
      for (bool bad_entry : {false, true}) {
        SCOPED_TRACE(::testing::Message() << DataTypeName(out_dtype) << (bad_entry ? ", a bad entry" : ""));
        const Tensor fetched = OnGpu({7, 8, bad_entry ? 45 : 33}, dtype, s);
        const Tensor out = OnGpu(std::vector<int64_t>(8, -7), out_dtype, s);
        const Tensor entry_fault = OnGpu({-1}, DataType::kInt64, s);
        ASSERT_TRUE(gpu::AssembleRows(ptr, idx, begin, fetched_ids.data<int64_t>(), fetched_offsets.data<int64_t>(),
                                      fetched, 2, indptr->data<int64_t>(), n, out, Word(entry_fault), s)
                        .ok());
        EXPECT_EQ(OnHost(out, s), (std::vector<int64_t>{7, 8, 11, 20, 3, 12, 30, bad_entry ? 45 : 33}));
        EXPECT_EQ(OnHost(entry_fault, s), (std::vector<int64_t>{bad_entry ? 2 : -1}));
      }
    }
  }
}

// ---- on GPUs ------------------------------------------------------------------------------------

// The world, made once per process (a world of 1 without a launcher's variables).
std::shared_ptr<Communicator> World() {
  static std::shared_ptr<Communicator>* world = [] {
    auto w = InitWorld(absl::Seconds(120));
    if (!w.ok()) {
      ADD_FAILURE() << "InitWorld: " << w.status();
      return new std::shared_ptr<Communicator>();
    }
    std::printf("dist_triangle_test: rank %d of %d on cuda:%d\n", (*w)->rank(), (*w)->size(), (*w)->cuda_device());
    return new std::shared_ptr<Communicator>(*w);
  }();
  return *world;
}

class DistTriangleGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KPS_SKIP_WITHOUT_GPU();
    if (!NcclLibrary().ok()) {
      if (testing::GpuRequired()) FAIL() << NcclLibrary().status();
      GTEST_SKIP() << NcclLibrary().status();
    }
    comm_ = World();
    ASSERT_NE(comm_, nullptr);
  }

  // The single-GPU count of g.
  int64_t SingleGpu(const HostCsr& g) {
    return Count(*HostTensor(g.indptr, DataType::kInt64).To(DeviceType::kCuda),
                 *HostTensor(g.indices, g.index_dtype).To(DeviceType::kCuda));
  }

  // The distributed count of g under p (this rank's block) with options o, checked against
  // `want`: every rank's report, in rank order (empty after a failure).
  std::vector<DistributedCountReport> Reports(const RankPartition& local, const Partition& p, int64_t want,
                                              const DistributedCountOptions& o) {
    auto r = CountTrianglesDistributed(local, p, o);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    EXPECT_EQ(r->triangles, want);
    EXPECT_EQ(r->edges, local.num_edges());
    if (comm_->size() == 1) EXPECT_EQ(r->bytes_sent + r->bytes_received, 0);
    auto all = GatherReports(*r);
    EXPECT_TRUE(all.ok()) << all.status();
    if (!all.ok()) return {};
    EXPECT_EQ(all->size(), static_cast<size_t>(comm_->size()));
    int64_t shares = 0, sent = 0, received = 0;
    for (const DistributedCountReport& x : *all) {
      shares += x.rank_triangles;
      sent += x.bytes_sent;
      received += x.bytes_received;
    }
    EXPECT_EQ(shares, want);
    EXPECT_EQ(sent, received);  // what one rank sends, another receives
    return *all;
  }

  // The distributed count of g under p, checked against `want`; grids of one column (1-D, and
  // 2-D n x 1) also with device_exchange, whose every rank must find the host path's share,
  // rows, bytes and counted entries. Other grids ignore the option (checked once, in
  // RmatScale12).
  void ExpectDistributed(const HostCsr& g, const Partition& p, int64_t want, bool overlap = true) {
    SCOPED_TRACE(::testing::Message() << SchemeName(p.scheme) << " " << p.grid_rows << "x" << p.grid_cols
                                      << (overlap ? "" : ", no overlap") << ", " << DataTypeName(g.index_dtype)
                                      << " ids");
    auto local = ExtractRank(g, p, comm_->rank());
    ASSERT_TRUE(local.ok()) << local.status();
    DistributedCountOptions o;
    o.overlap = overlap;
    o.device_exchange = false;
    const std::vector<DistributedCountReport> host = Reports(*local, p, want, o);
    if (p.grid_cols != 1) return;
    SCOPED_TRACE("device_exchange");
    o.device_exchange = true;
    const std::vector<DistributedCountReport> device = Reports(*local, p, want, o);
    ASSERT_EQ(device.size(), host.size());
    for (size_t r = 0; r < host.size(); ++r) {
      SCOPED_TRACE(::testing::Message() << "rank " << r);
      EXPECT_EQ(device[r].rank_triangles, host[r].rank_triangles);
      EXPECT_EQ(device[r].local_roots, host[r].local_roots);
      EXPECT_EQ(device[r].remote_roots, host[r].remote_roots);
      EXPECT_EQ(device[r].rows_fetched, host[r].rows_fetched);
      EXPECT_EQ(device[r].rows_served, host[r].rows_served);
      EXPECT_EQ(device[r].bytes_sent, host[r].bytes_sent);
      EXPECT_EQ(device[r].bytes_received, host[r].bytes_received);
      EXPECT_EQ(device[r].layered_entries, host[r].layered_entries);
    }
  }

  std::shared_ptr<Communicator> comm_;
};

TEST_F(DistTriangleGpuTest, RmatScale12) {
  const HostCsr g = RmatGraph(12, 12345, DeviceType::kCuda);
  const int64_t want = SingleGpu(g);
  EXPECT_GT(want, 0);
  const int n = comm_->size();
  for (bool overlap : {true, false}) ExpectDistributed(g, *Partition1D(g, n), want, overlap);
  // int64 ids on the wire: the device path's other block and piece dtype.
  HostCsr g64 = g;
  g64.index_dtype = DataType::kInt64;
  ExpectDistributed(g64, *Partition1D(g64, n), want);
  // 2-D: the square grid when the world is a square, and the 1 x n and n x 1 grids always.
  const int side = static_cast<int>(std::lround(std::sqrt(n)));
  if (side * side == n) ExpectDistributed(g, *Partition2D(g, n), want);
  ExpectDistributed(g, *Partition2D(g, 1, n), want);
  ExpectDistributed(g, *Partition2D(g, n, 1), want);
  // 2-D ignores device_exchange: the host path's layered count.
  auto local = ExtractRank(g, *Partition2D(g, 1, n), comm_->rank());
  ASSERT_TRUE(local.ok()) << local.status();
  DistributedCountOptions o;
  o.device_exchange = true;
  Reports(*local, *Partition2D(g, 1, n), want, o);
}

TEST_F(DistTriangleGpuTest, FromPartitionFiles) {
  const HostCsr g = RmatGraph(12, 777, DeviceType::kCuda);
  const int64_t want = SingleGpu(g);
  // Each rank writes its own copy (the writer is deterministic), so no rank waits for another's
  // files; the count then loads block `rank` of it.
  TempDir tmp("kps_dist_triangle");
  ASSERT_TRUE(WritePartitions(tmp.path(), g, Scheme::k1D, comm_->size()).ok());
  DistributedCountOptions o;
  o.device_exchange = false;
  auto r = CountTrianglesDistributed(tmp.path(), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->triangles, want);
  EXPECT_GT(r->load_ms, 0);
  auto d = CountTrianglesDistributed(tmp.path());  // the default: the exchange on the GPU
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->triangles, want);
  EXPECT_EQ(d->rank_triangles, r->rank_triangles);
  EXPECT_EQ(d->bytes_sent, r->bytes_sent);
  // A partition of another rank count is refused before any collective.
  TempDir other("kps_dist_triangle");
  ASSERT_TRUE(WritePartitions(other.path(), g, Scheme::k1D, comm_->size() + 1).ok());
  absl::Status s = CountTrianglesDistributed(other.path()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "kps launch --nproc")) << s;
}

TEST_F(DistTriangleGpuTest, RealNetworks) {
  const std::string dir = KPS_TEST_GRAPHS_DIR;
  if (!fs::exists(dir + "/karate.gt.gz")) {
    GTEST_SKIP() << "no real networks in " << dir << " (tools/install_deps.sh fetches them)";
  }
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string path = e.path().string();
    if (absl::EndsWith(path, ".gt.gz")) files.push_back(path);
  }
  std::sort(files.begin(), files.end());  // the same order on every rank
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto el = io::ReadGraph(path);
    ASSERT_TRUE(el.ok()) << el.status();
    auto src = Tensor::FromVector(el->src, Shape{static_cast<int64_t>(el->src.size())});
    auto dst = Tensor::FromVector(el->dst, Shape{static_cast<int64_t>(el->dst.size())});
    auto simple = Call("graph_from_edges").Input("src", *src->To(DeviceType::kCuda))
                      .Input("dst", *dst->To(DeviceType::kCuda)).Attr("num_vertices", el->num_vertices).Run();
    ASSERT_TRUE(simple.ok()) << simple.status();
    auto dag = Call("graph_orient").Input("indptr", (*simple)[0]).Input("indices", (*simple)[1]).Run();
    ASSERT_TRUE(dag.ok()) << dag.status();
    auto g = HostCsrFromTensors((*dag)[0], (*dag)[1]);
    ASSERT_TRUE(g.ok()) << g.status();
    const int64_t want = SingleGpu(*g);
    if (absl::EndsWith(path, "/karate.gt.gz")) EXPECT_EQ(want, 45);
    if (absl::EndsWith(path, "/lesmis.gt.gz")) EXPECT_EQ(want, 467);
    ExpectDistributed(*g, *Partition1D(*g, comm_->size()), want);
    ExpectDistributed(*g, *Partition2D(*g, 1, comm_->size()), want);
  }
}

}  // namespace
}  // namespace dist
}  // namespace kps
