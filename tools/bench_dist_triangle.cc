// bench_dist_triangle: the distributed triangle count (dist/triangle.h), step by step.
//
// Three modes:
//   --partition: one process makes the oriented graph (R-MAT of --scale with the rmat op, on the
//     GPU when there is one, or the graph file --graph through io::ReadGraph), partitions it
//     into --ranks parts (--scheme 1d, or 2d: the square grid, or --grid RxC) and writes them to
//     --dir (WritePartitions); it prints the time of each step. Partition once, count often.
//   --count: under `kps launch --nproc P`, each rank loads its part of --dir, counts, and rank 0
//     prints a table: per rank the load, plan, exchange, assemble, count and total times and
//     the bytes moved, then one line per repetition with the slowest rank's figures and
//     edges/s (the graph's oriented edges / the slowest rank's total time, load excluded).
//   --inmemory: under `kps launch --nproc P`, every rank makes the graph itself (as
//     --partition), partitions it in memory and counts its block: the "partition every run"
//     side of the comparison, with the partition time printed beside the count.
// --verify (with --count or --inmemory): rank 0 also counts the whole graph on its GPU with the
// single-GPU triangle_count (assembled from every block of --dir, or the graph it made) and
// exits with status 1 when the counts differ. --no-overlap counts the local roots before the
// exchange instead of during it. In 1-D the plan, serving and assembly run on the GPU
// (DistributedCountOptions::device_exchange, the default); --host-exchange runs them on the
// host instead (--device-exchange: the default, spelled out). --json FILE (rank 0) writes the
// figures.
//
//   build-gpu/tools/bench_dist_triangle --partition --scale 24 --ranks 2 --dir /tmp/rmat24.p2
//   build-gpu/kps launch --nproc 2 -- build-gpu/tools/bench_dist_triangle --count --dir /tmp/rmat24.p2 --verify
//   build-gpu/kps launch --nproc 2 -- build-gpu/tools/bench_dist_triangle --inmemory --scale 24
//   build-gpu/kps launch --nproc 2 -- build-gpu/tools/bench_dist_triangle --inmemory --scale 24 --host-exchange
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dist/communicator.h"
#include "dist/partition.h"
#include "dist/triangle.h"
#include "io/graph.h"
#include "io/npy.h"
#include "registry/call.h"
#include "registry/status.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace kps {
namespace {

using dist::DistributedCountReport;

enum class Mode { kNone, kPartition, kCount, kInMemory };

struct Options {
  Mode mode = Mode::kNone;
  int64_t scale = 0;
  std::string graph, dir, json;
  int ranks = 0;
  std::string scheme = "1d";
  int grid_rows = 0, grid_cols = 0;
  int reps = 3;
  bool verify = false, overlap = true, device_exchange = true;
};

constexpr char kUsage[] =
    "usage:\n"
    "  bench_dist_triangle --partition (--scale S | --graph FILE) --ranks P --dir DIR [--scheme 1d|2d] [--grid RxC]\n"
    "  kps launch --nproc P -- bench_dist_triangle --count --dir DIR [--verify] [--no-overlap] "
    "[--device-exchange|--host-exchange] [--reps N] [--json FILE]\n"
    "  kps launch --nproc P -- bench_dist_triangle --inmemory (--scale S | --graph FILE) [--scheme 1d|2d] "
    "[--grid RxC] [--verify] [--no-overlap] [--device-exchange|--host-exchange] [--reps N] [--json FILE]";

[[noreturn]] void Die(const absl::Status& s) {
  std::fprintf(stderr, "bench_dist_triangle: %s\n", std::string(s.message()).c_str());
  std::exit(2);
}

template <typename T>
T Ok(absl::StatusOr<T> v) {
  if (!v.ok()) Die(v.status());
  return *std::move(v);
}

void Ok(const absl::Status& s) {
  if (!s.ok()) Die(s);
}

double Ms(absl::Time since) { return absl::ToDoubleMilliseconds(absl::Now() - since); }

Options Parse(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto value = [&]() -> std::string {
      if (a + 1 >= argc) Die(absl::InvalidArgumentError(absl::StrCat(arg, " needs a value\n", kUsage)));
      return argv[++a];
    };
    auto bad = [&](const std::string& v) {
      Die(absl::InvalidArgumentError(absl::StrCat("bad value '", v, "' for ", arg, "\n", kUsage)));
    };
    if (arg == "--partition") {
      o.mode = Mode::kPartition;
    } else if (arg == "--count") {
      o.mode = Mode::kCount;
    } else if (arg == "--inmemory") {
      o.mode = Mode::kInMemory;
    } else if (arg == "--scale") {
      const std::string v = value();
      if (!absl::SimpleAtoi(v, &o.scale) || o.scale < 1 || o.scale > 31) bad(v);
    } else if (arg == "--graph") {
      o.graph = value();
    } else if (arg == "--dir") {
      o.dir = value();
    } else if (arg == "--json") {
      o.json = value();
    } else if (arg == "--ranks") {
      const std::string v = value();
      if (!absl::SimpleAtoi(v, &o.ranks) || o.ranks < 1) bad(v);
    } else if (arg == "--scheme") {
      o.scheme = value();
      if (o.scheme != "1d" && o.scheme != "2d") bad(o.scheme);
    } else if (arg == "--grid") {
      const std::string v = value();
      const size_t x = v.find('x');
      if (x == std::string::npos || !absl::SimpleAtoi(v.substr(0, x), &o.grid_rows) ||
          !absl::SimpleAtoi(v.substr(x + 1), &o.grid_cols) || o.grid_rows < 1 || o.grid_cols < 1) {
        bad(v);
      }
      o.scheme = "2d";
    } else if (arg == "--reps") {
      const std::string v = value();
      if (!absl::SimpleAtoi(v, &o.reps) || o.reps < 1) bad(v);
    } else if (arg == "--verify") {
      o.verify = true;
    } else if (arg == "--no-overlap") {
      o.overlap = false;
    } else if (arg == "--device-exchange") {
      o.device_exchange = true;
    } else if (arg == "--host-exchange") {
      o.device_exchange = false;
    } else {
      Die(absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg, "\n", kUsage)));
    }
  }
  if (o.mode == Mode::kNone) Die(absl::InvalidArgumentError(absl::StrCat("give a mode\n", kUsage)));
  const bool makes_graph = o.mode != Mode::kCount;
  if (makes_graph && (o.scale == 0) == o.graph.empty()) {
    Die(absl::InvalidArgumentError(absl::StrCat("give one of --scale and --graph\n", kUsage)));
  }
  if (o.mode != Mode::kInMemory && o.dir.empty()) Die(absl::InvalidArgumentError(absl::StrCat("give --dir\n", kUsage)));
  if (o.mode == Mode::kPartition && o.ranks == 0) {
    Die(absl::InvalidArgumentError(absl::StrCat("give --ranks\n", kUsage)));
  }
  return o;
}

// The oriented graph (graph_from_edges, then graph_orient by degree) on the host, with the
// time of each step. On the current GPU when there is one, else on the CPU.
struct MadeGraph {
  dist::HostCsr g;
  std::string name;
  double make_ms = 0, orient_ms = 0;
};

MadeGraph MakeGraph(const Options& o) {
  int devices = 0;
  const DeviceType device =
      cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0 ? DeviceType::kCuda : DeviceType::kCpu;
  MadeGraph m;
  absl::Time t = absl::Now();
  std::vector<Tensor> edges;
  int64_t n = 0;
  if (o.scale > 0) {
    m.name = absl::StrCat("rmat-", o.scale);
    n = int64_t{1} << o.scale;
    edges = Ok(Call("rmat").Attr("scale", o.scale).Attr("seed", int64_t{1})
                   .Attr("dtype", o.scale <= 30 ? DataType::kInt32 : DataType::kInt64).OnDevice(device).Run());
  } else {
    m.name = o.graph.substr(o.graph.find_last_of('/') + 1);
    io::EdgeList el = Ok(io::ReadGraph(o.graph));
    n = el.num_vertices;
    const Shape s{static_cast<int64_t>(el.src.size())};
    edges = {Ok(Ok(Tensor::FromVector(el.src, s)).To(device)), Ok(Ok(Tensor::FromVector(el.dst, s)).To(device))};
  }
  auto simple = Ok(Call("graph_from_edges").Input("src", edges[0]).Input("dst", edges[1])
                       .Attr("num_vertices", n).Run());
  edges.clear();
  if (device == DeviceType::kCuda) Ok(Stream::Cuda().Synchronize());
  m.make_ms = Ms(t);
  t = absl::Now();
  auto dag = Ok(Call("graph_orient").Input("indptr", simple[0]).Input("indices", simple[1]).Attr("check", false).Run());
  simple.clear();
  m.g = Ok(dist::HostCsrFromTensors(dag[0], dag[1]));
  m.orient_ms = Ms(t);
  return m;
}

absl::StatusOr<dist::Partition> MakePartition(const dist::HostCsr& g, const Options& o, int ranks) {
  if (o.scheme == "1d") return dist::Partition1D(g, ranks);
  if (o.grid_rows > 0) {
    if (o.grid_rows * o.grid_cols != ranks) {
      return absl::InvalidArgumentError(absl::StrCat("--grid ", o.grid_rows, "x", o.grid_cols, " is not ", ranks,
                                                     " ranks"));
    }
    return dist::Partition2D(g, o.grid_rows, o.grid_cols);
  }
  return dist::Partition2D(g, ranks);
}

// The single-GPU count of g (on the current device), *ms the faster of two calls.
int64_t SingleGpuCount(const dist::HostCsr& g, double* ms) {
  Tensor ptr = Ok(Ok(Tensor::FromVector(g.indptr, Shape{static_cast<int64_t>(g.indptr.size())})).To(DeviceType::kCuda));
  Tensor host_idx = Ok(Tensor::Empty(Shape{g.num_edges()}, g.index_dtype, DeviceType::kCpu));
  for (int64_t i = 0; i < g.num_edges(); ++i) {
    if (g.index_dtype == DataType::kInt32) {
      host_idx.data<int32_t>()[i] = static_cast<int32_t>(g.indices[i]);
    } else {
      host_idx.data<int64_t>()[i] = g.indices[i];
    }
  }
  Tensor idx = Ok(host_idx.To(DeviceType::kCuda));
  Ok(Stream::Cuda().Synchronize());
  // Twice, the faster kept: the first call also loads the kernels and fills the allocator's cache.
  int64_t count = 0;
  *ms = 0;
  for (int k = 0; k < 2; ++k) {
    const absl::Time t = absl::Now();
    Tensor c = Ok(Call("triangle_count").Input("indptr", ptr).Input("indices", idx).Attr("oriented", true)
                      .Attr("check", false).RunOne());
    count = Ok(c.ToVector<int64_t>())[0];
    *ms = k == 0 ? Ms(t) : std::min(*ms, Ms(t));
  }
  return count;
}

// The whole graph back from every block of the partition in `dir`: each row's pieces in
// column order.
dist::HostCsr Reassemble(const std::string& dir) {
  const dist::Manifest m = Ok(dist::ReadManifest(dir));
  const dist::Partition& p = m.partition;
  std::vector<dist::RankPartition> blocks;
  for (int r = 0; r < p.num_ranks; ++r) blocks.push_back(Ok(dist::LoadPartition(dir, r)));
  dist::HostCsr g;
  g.index_dtype = m.index_dtype;
  g.indptr.push_back(0);
  for (int i = 0; i < p.grid_rows; ++i) {
    for (int64_t u = p.row_splits[i]; u < p.row_splits[i + 1]; ++u) {
      for (int c = 0; c < p.grid_cols; ++c) {
        const auto row = blocks[p.RankAt(i, c)].Row(u);
        g.indices.insert(g.indices.end(), row.begin(), row.end());
      }
      g.indptr.push_back(g.num_edges());
    }
  }
  return g;
}

double MaxOf(const std::vector<DistributedCountReport>& all, double DistributedCountReport::*f) {
  double v = 0;
  for (const auto& r : all) v = std::max(v, r.*f);
  return v;
}

void PrintRanks(const std::vector<DistributedCountReport>& all) {
  std::printf("\n| rank | edges | local roots | remote roots | triangles found | rows fetched | rows served | "
              "bytes sent | bytes received | load ms | plan ms | exchange ms | assemble ms | count ms (local + "
              "remote) | reduce ms | total ms |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const DistributedCountReport& r : all) {
    std::printf("| %d | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %lld | %.1f | %.1f | %.1f | %.1f | %.2f "
                "(%.2f + %.2f) | %.2f | %.1f |\n",
                r.rank, static_cast<long long>(r.edges), static_cast<long long>(r.local_roots),
                static_cast<long long>(r.remote_roots), static_cast<long long>(r.rank_triangles),
                static_cast<long long>(r.rows_fetched), static_cast<long long>(r.rows_served),
                static_cast<long long>(r.bytes_sent), static_cast<long long>(r.bytes_received), r.load_ms, r.plan_ms,
                r.exchange_ms, r.assemble_ms, r.count_ms, r.count_local_ms, r.count_remote_ms, r.reduce_ms,
                r.total_ms);
  }
}

int Distributed(const Options& o) {
  std::shared_ptr<dist::Communicator> world = Ok(dist::InitWorld(absl::Minutes(5)));
  const int me = world->rank(), n = world->size();
  dist::DistributedCountOptions co;
  co.overlap = o.overlap;
  co.device_exchange = o.device_exchange;
  std::string name;
  int64_t graph_edges = 0;
  double partition_ms = 0;
  MadeGraph made;
  dist::RankPartition local;
  dist::Partition p;
  if (o.mode == Mode::kInMemory) {
    // Partition every run: make the graph, split it, keep this rank's block.
    made = MakeGraph(o);
    const absl::Time t = absl::Now();
    p = Ok(MakePartition(made.g, o, n));
    local = Ok(dist::ExtractRank(made.g, p, me));
    partition_ms = Ms(t);
    name = made.name;
    graph_edges = made.g.num_edges();
  } else {
    const dist::Manifest m = Ok(dist::ReadManifest(o.dir));
    name = o.dir.substr(o.dir.find_last_of('/') + 1);
    graph_edges = m.num_edges;
  }
  if (me == 0) {
    std::printf("bench_dist_triangle: %s, %d ranks, %s, %lld oriented edges%s%s\n", name.c_str(), n,
                o.mode == Mode::kInMemory ? "partitioned in memory" : "partitions loaded from files",
                static_cast<long long>(graph_edges), o.overlap ? "" : ", no overlap",
                o.device_exchange ? ", device exchange (1-D)" : ", host exchange");
    if (o.mode == Mode::kInMemory) {
      std::printf("rank 0: make graph %.1f ms, orient %.1f ms, partition in memory %.1f ms\n", made.make_ms,
                  made.orient_ms, partition_ms);
    }
    std::printf("\n| ranks | graph | edges | triangles | load ms | partition ms | exchange ms | count ms | total ms | "
                "bytes moved per rank (max) | edges/s |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::fflush(stdout);
  }
  std::vector<DistributedCountReport> last;
  std::string json_rows;
  for (int rep = 0; rep < o.reps; ++rep) {
    const DistributedCountReport mine = o.mode == Mode::kInMemory ? Ok(dist::CountTrianglesDistributed(local, p, co))
                                                                  : Ok(dist::CountTrianglesDistributed(o.dir, co));
    last = Ok(dist::GatherReports(mine));
    if (me != 0) continue;
    const double total = MaxOf(last, &DistributedCountReport::total_ms);
    int64_t moved = 0;
    for (const auto& r : last) moved = std::max(moved, r.bytes_sent + r.bytes_received);
    const double partition = o.mode == Mode::kInMemory ? partition_ms : 0;
    std::printf("| %d | %s | %lld | %lld | %.1f | %.1f | %.1f | %.2f | %.1f | %lld | %.3g |\n", n, name.c_str(),
                static_cast<long long>(graph_edges), static_cast<long long>(mine.triangles),
                MaxOf(last, &DistributedCountReport::load_ms), partition,
                MaxOf(last, &DistributedCountReport::exchange_ms), MaxOf(last, &DistributedCountReport::count_ms),
                total, static_cast<long long>(moved), graph_edges / (total * 1e-3));
    std::fflush(stdout);
    absl::StrAppend(&json_rows, rep == 0 ? "" : ",\n",
                    absl::StrFormat("  {\"rep\": %d, \"triangles\": %d, \"load_ms\": %.3f, \"partition_ms\": %.3f, "
                                    "\"exchange_ms\": %.3f, \"count_ms\": %.3f, \"total_ms\": %.3f, "
                                    "\"bytes_moved_max\": %d}",
                                    rep, mine.triangles, MaxOf(last, &DistributedCountReport::load_ms), partition,
                                    MaxOf(last, &DistributedCountReport::exchange_ms),
                                    MaxOf(last, &DistributedCountReport::count_ms), total, moved));
  }
  int status = 0;
  if (me == 0) {
    PrintRanks(last);
    if (o.verify) {
      const dist::HostCsr whole = o.mode == Mode::kInMemory ? made.g : Reassemble(o.dir);
      double ms = 0;
      const int64_t single = SingleGpuCount(whole, &ms);
      const bool same = single == last[0].triangles;
      std::printf("\nverify: single-GPU triangle_count %lld (%.1f ms incl. the copy back), distributed %lld: %s\n",
                  static_cast<long long>(single), ms, static_cast<long long>(last[0].triangles),
                  same ? "equal" : "DIFFERENT");
      if (!same) status = 1;
    }
    if (!o.json.empty()) {
      const std::string json = absl::StrCat("{\"graph\": \"", name, "\", \"ranks\": ", n, ", \"edges\": ",
                                            graph_edges, ", \"overlap\": ", o.overlap ? "true" : "false",
                                            ", \"device_exchange\": ", o.device_exchange ? "true" : "false",
                                            ", \"mode\": \"", o.mode == Mode::kInMemory ? "inmemory" : "count",
                                            "\", \"reps\": [\n", json_rows, "\n]}\n");
      Ok(io::WriteFileAtomically(o.json, json));
    }
    std::fflush(stdout);
  }
  // Every rank leaves together, so none tears its communicator down under a peer still reading.
  Ok(dist::GatherReports(last.empty() ? DistributedCountReport{} : last[static_cast<size_t>(me)]).status());
  return status;
}

int PartitionOnce(const Options& o) {
  MadeGraph m = MakeGraph(o);
  absl::Time t = absl::Now();
  const dist::Partition p = Ok(MakePartition(m.g, o, o.ranks));
  const double split_ms = Ms(t);
  t = absl::Now();
  Ok(dist::WritePartitions(o.dir, m.g, p));
  const double write_ms = Ms(t);
  const dist::Manifest manifest = Ok(dist::ReadManifest(o.dir));
  int64_t bytes = 0;
  for (const auto& r : manifest.ranks) bytes += r.bytes;
  std::printf("| graph | vertices | oriented edges | ranks | scheme | make ms | orient + copy to host ms | split ms | "
              "write ms | bytes written |\n|---|---|---|---|---|---|---|---|---|---|\n"
              "| %s | %lld | %lld | %d | %s %dx%d | %.1f | %.1f | %.1f | %.1f | %lld |\n",
              m.name.c_str(), static_cast<long long>(m.g.num_vertices()), static_cast<long long>(m.g.num_edges()),
              o.ranks, std::string(dist::SchemeName(p.scheme)).c_str(), p.grid_rows, p.grid_cols, m.make_ms,
              m.orient_ms, split_ms, write_ms, static_cast<long long>(bytes));
  return 0;
}

}  // namespace
}  // namespace kps

int main(int argc, char** argv) {
  const kps::Options o = kps::Parse(argc, argv);
  return o.mode == kps::Mode::kPartition ? kps::PartitionOnce(o) : kps::Distributed(o);
}
