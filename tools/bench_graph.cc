// bench_graph: triangle counting on the GPU, step by step, on Graph500 R-MAT graphs and
// real networks. For each graph it times, on one stream with events:
//   generate (rmat) or load (a file through io::ReadGraph, then copied to the GPU),
//   graph_from_edges (symmetric simple CSR), graph_orient (by degree): the preprocessing;
//   triangle_count on the oriented graph: single call (events around one call, a sync
//   between; median) and back to back (N calls between two events).
// Edges per second = the simple graph's undirected edges / the counting time. With
// --verify, the count is checked against the CPU op (small graphs only); with --relabel,
// each graph is measured again with graph_relabel (by degree) before orienting.
//
//   build/tools/bench_graph --scales 16,18,20 --graphs .data/graphs --reps 5 [--verify] [--relabel]
//                           [--json FILE]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "io/graph.h"
#include "io/npy.h"
#include "registry/call.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace kps {
namespace {

struct Options {
  std::vector<int64_t> scales;
  std::string graphs_dir, json;
  int reps = 5;
  bool verify = false;
  bool relabel = false;  // each graph also relabelled by degree (graph_relabel) before orienting
};

struct Row {
  std::string name;
  int64_t vertices = 0, edges = 0, triangles = 0;
  double gen_ms = 0, simple_ms = 0, relabel_ms = 0, orient_ms = 0, single_ms = 0, b2b_ms = 0;
};

void Die(const absl::Status& s) {
  std::fprintf(stderr, "bench_graph: %s\n", std::string(s.message()).c_str());
  std::exit(1);
}

template <typename T>
T Ok(absl::StatusOr<T> v) {
  if (!v.ok()) Die(v.status());
  return *std::move(v);
}

// Milliseconds of f() on `cs`, events around it.
template <typename F>
double Time(cudaStream_t cs, F&& f) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaStreamSynchronize(cs);
  cudaEventRecord(a, cs);
  f();
  cudaEventRecord(b, cs);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms;
}

// The first element of an int64 tensor, copied in the order of `stream` (the benchmark's
// stream does not wait for the default stream, nor the default stream for it).
int64_t Scalar(const Tensor& t, const Stream& stream) {
  return Ok(t.To(DeviceType::kCpu, stream)).data<int64_t>()[0];
}

// Preprocesses (relabelled by degree with `relabel`) and counts the graph of (src, dst) on
// the GPU.
Row Measure(const std::string& name, const Tensor& src, const Tensor& dst, int64_t num_vertices, double gen_ms,
            bool relabel, const Options& o, const Stream& stream) {
  const cudaStream_t cs = stream.cuda_stream();
  Row row;
  row.name = name;
  row.gen_ms = gen_ms;
  std::vector<Tensor> simple, dag;
  row.simple_ms = Time(cs, [&] {
    simple = Ok(Call("graph_from_edges").Input("src", src).Input("dst", dst).Attr("num_vertices", num_vertices)
                    .OnStream(stream).Run());
  });
  if (relabel) {
    row.name += " relabelled";
    row.relabel_ms = Time(cs, [&] {
      std::vector<Tensor> r = Ok(Call("graph_relabel").Input("indptr", simple[0]).Input("indices", simple[1])
                                     .Attr("check", false).OnStream(stream).Run());
      r.pop_back();  // perm
      simple = std::move(r);
    });
  }
  row.orient_ms = Time(cs, [&] {
    dag = Ok(Call("graph_orient").Input("indptr", simple[0]).Input("indices", simple[1]).Attr("check", false)
                 .OnStream(stream).Run());
  });
  row.vertices = simple[0].numel() - 1;
  row.edges = dag[1].numel();
  auto count = [&] {
    return Ok(Call("triangle_count").Input("indptr", dag[0]).Input("indices", dag[1]).Attr("oriented", true)
                  .Attr("check", false).OnStream(stream).RunOne());
  };
  Tensor out = count();  // warm-up
  row.triangles = Scalar(out, stream);
  std::vector<double> single;
  for (int r = 0; r < o.reps; ++r) single.push_back(Time(cs, [&] { out = count(); }));
  std::sort(single.begin(), single.end());
  row.single_ms = single[single.size() / 2];
  row.b2b_ms = Time(cs, [&] {
                 for (int r = 0; r < o.reps; ++r) out = count();
               }) / o.reps;
  if (Scalar(out, stream) != row.triangles) {
    Die(absl::InternalError(absl::StrCat(name, ": the count changed between runs")));
  }
  if (o.verify) {
    const Tensor p = Ok(dag[0].To(DeviceType::kCpu, stream)), i = Ok(dag[1].To(DeviceType::kCpu, stream));
    const int64_t cpu = Scalar(Ok(Call("triangle_count").Input("indptr", p).Input("indices", i)
                                      .Attr("oriented", true).RunOne()), Stream::Cpu());
    if (cpu != row.triangles) {
      Die(absl::InternalError(absl::StrCat(name, ": CUDA counted ", row.triangles, " triangles, the CPU ", cpu)));
    }
  }
  return row;
}

void Print(const Row& r) {
  std::printf("| %s | %lld | %lld | %lld | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | %.3g | %.3g |\n",
              r.name.c_str(), static_cast<long long>(r.vertices), static_cast<long long>(r.edges),
              static_cast<long long>(r.triangles), r.gen_ms, r.simple_ms, r.relabel_ms, r.orient_ms, r.single_ms,
              r.b2b_ms, r.edges / (r.single_ms * 1e-3), r.edges / (r.b2b_ms * 1e-3));
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto value = [&]() -> std::string {
      if (a + 1 >= argc) Die(absl::InvalidArgumentError(arg + " needs a value"));
      return argv[++a];
    };
    if (arg == "--scales") {
      for (absl::string_view s : absl::StrSplit(value(), ',', absl::SkipEmpty())) {
        int64_t v = 0;
        if (!absl::SimpleAtoi(s, &v) || v < 1 || v > 30) Die(absl::InvalidArgumentError("bad --scales"));
        o.scales.push_back(v);
      }
    } else if (arg == "--graphs") {
      o.graphs_dir = value();
    } else if (arg == "--reps") {
      if (!absl::SimpleAtoi(value(), &o.reps) || o.reps < 1) Die(absl::InvalidArgumentError("bad --reps"));
    } else if (arg == "--verify") {
      o.verify = true;
    } else if (arg == "--relabel") {
      o.relabel = true;
    } else if (arg == "--json") {
      o.json = value();
    } else {
      Die(absl::InvalidArgumentError("unknown flag " + arg +
                                     " (flags: --scales 16,18 --graphs DIR --reps N --verify --relabel --json FILE)"));
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    Die(absl::FailedPreconditionError("no CUDA device"));
  }
  cudaStream_t cs;
  cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking);
  const Stream stream = Stream::Cuda(cs);
  std::printf("| graph | vertices | edges (undirected, simple) | triangles | generate/load ms | graph_from_edges ms | "
              "graph_relabel ms | graph_orient ms | count single ms | count b2b ms | edges/s single | edges/s b2b |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<Row> rows;
  for (int64_t scale : o.scales) {
    std::vector<Tensor> edges;
    const double ms = Time(cs, [&] {
      edges = Ok(Call("rmat").Attr("scale", scale).Attr("seed", int64_t{1}).Attr("dtype", DataType::kInt32)
                     .OnDevice(DeviceType::kCuda).OnStream(stream).Run());
    });
    for (bool relabel : {false, true}) {
      if (relabel && !o.relabel) continue;
      rows.push_back(
          Measure(absl::StrCat("rmat-", scale), edges[0], edges[1], int64_t{1} << scale, ms, relabel, o, stream));
      Print(rows.back());
    }
  }
  if (!o.graphs_dir.empty()) {
    std::vector<std::string> files;
    if (DIR* d = opendir(o.graphs_dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string f = e->d_name;
        if (f.size() > 6 && f.substr(f.size() - 6) == ".gt.gz") files.push_back(f);
      }
      closedir(d);
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      io::EdgeList g = Ok(io::ReadGraph(o.graphs_dir + "/" + f));
      const auto e = static_cast<int64_t>(g.src.size());
      Tensor src = Ok(Tensor::FromVector(g.src, Shape{e})), dst = Ok(Tensor::FromVector(g.dst, Shape{e}));
      src = Ok(src.To(DeviceType::kCuda, stream));
      dst = Ok(dst.To(DeviceType::kCuda, stream));
      for (bool relabel : {false, true}) {
        if (relabel && !o.relabel) continue;
        rows.push_back(Measure(f.substr(0, f.size() - 6), src, dst, g.num_vertices, 0, relabel, o, stream));
        Print(rows.back());
      }
    }
  }
  if (!o.json.empty()) {
    std::string text = "[\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      absl::StrAppend(&text, "  {\"graph\": \"", r.name, "\", \"vertices\": ", r.vertices, ", \"edges\": ", r.edges,
                      ", \"triangles\": ", r.triangles, ", \"generate_ms\": ", r.gen_ms,
                      ", \"from_edges_ms\": ", r.simple_ms, ", \"relabel_ms\": ", r.relabel_ms,
                      ", \"orient_ms\": ", r.orient_ms,
                      ", \"count_single_ms\": ", r.single_ms, ", \"count_b2b_ms\": ", r.b2b_ms, "}",
                      i + 1 < rows.size() ? ",\n" : "\n");
    }
    text += "]\n";
    const absl::Status s = io::WriteFileAtomically(o.json, text);
    if (!s.ok()) Die(s);
  }
  cudaStreamDestroy(cs);
  return 0;
}

}  // namespace
}  // namespace kps

int main(int argc, char** argv) { return kps::Main(argc, argv); }
