// `kps bench`: times KPS ops on the benchmark workloads (same names, shapes and byte rule
// as PyTorch's side of the benchmark, whose scripts are supplied from outside this
// repository, see docs/performance.md, so rows line up), then the host cost of one eager
// call against a raw <<<>>> launch.
//
// Bandwidth rows: CUDA events around one eager kps::Call on the default stream, median
// of `reps` runs after `warmup` runs, as PyTorch's side times PyTorch. One difference:
// kps::Call allocates its output (from the stream-ordered pool) inside the timed region,
// while PyTorch's side passes a preallocated `out=`; for these sizes the allocation is
// a few microseconds of host time against a millisecond kernel.
//
// Host-cost rows (microseconds per call, `calls` back-to-back calls on 1-element tensors):
//   raw_launch            an empty kernel launched with <<<>>>, one sync at the end
//   raw_launch_sync       the same, with cudaStreamSynchronize after every launch
//   eager_add_f32_1       kps::Call("add") on float32[1] inputs, one sync at the end
//   eager_add_f32_1_sync  the same, with cudaStreamSynchronize after every call
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "registry/attr.h"
#include "registry/data_type.h"
#include "registry/tensor.h"

namespace kps {
namespace cli {

struct BenchOptions {
  std::string json_path;  // where to write the JSON results; empty: none
  std::string filter;     // only rows whose name contains this; empty: all
  int reps = 30;          // timed runs per workload (the median is reported)
  int warmup = 5;         // untimed runs before them
  int calls = 10000;      // back-to-back calls per host-cost row
  bool sweep = false;     // time SweepWorkloads() instead of the benchmark workloads (no host rows)
};

// One bandwidth workload: an op on freshly allocated random inputs of `shapes`.
struct BenchWorkload {
  std::string name;  // as in the benchmark workloads
  std::string op;    // the KPS op name
  DataType dtype;
  std::vector<std::vector<int64_t>> shapes;  // one per input, in the op's input order
  std::optional<std::vector<int64_t>> dims = std::nullopt;  // the `dims` attribute, for reductions
  std::optional<int64_t> dim = std::nullopt;                // the `dim` attribute, for scans and sorts
  std::vector<std::pair<std::string, AttrValue>> attrs = {};  // any other attributes (topk's k, ...)
  // Makes the op's inputs (on the GPU) instead of random normal ones of `shapes`, for ops
  // with inputs of other dtypes or values (index_add's in-range int64 index); `shapes`
  // then stays the benchmark workload's, which MinBytesMoved reads.
  std::function<absl::StatusOr<std::vector<Tensor>>(uint64_t seed)> make_inputs = {};
  // Inputs made with their last two dims swapped and then transposed back: strided views
  // of `shapes` (the sweep's strided cases).
  bool transposed_inputs = false;
};

// index_add's inputs along dim 0 (on the GPU): x [rows, cols] and source [count, cols]
// random normal, and an int64 index of `count` values uniform in [0, rows).
absl::StatusOr<std::vector<Tensor>> MakeIndexAddInputs(int64_t rows, int64_t count, int64_t cols, DataType dtype,
                                                       uint64_t seed);

// The workloads `kps bench` covers: the benchmark workloads whose op KPS has so far.
const std::vector<BenchWorkload>& BenchWorkloads();

// The sweep of `kps bench --sweep` (tools/kps/sweep.cc): several hundred workloads named
// "<family>/<case>", over sizes, row and column counts, dims, k, dtypes, broadcast
// patterns and strided inputs, for finding the shapes where KPS falls behind.
const std::vector<BenchWorkload>& SweepWorkloads();

// The workloads as JSON (name, family, op, dtype, shapes, dims, dim, attrs, transposed,
// bytes), for the PyTorch twin (tools/bench_sweep_torch.py) to time the same cases.
std::string WorkloadsJson(const std::vector<BenchWorkload>& workloads);

// The fewest bytes the workload must move, by the benchmark workloads' byte rule (each
// input read once, each output written once).
int64_t MinBytesMoved(const BenchWorkload& w);

// Runs the benchmark, printing a table to `out`. FailedPrecondition without a GPU. A
// workload that fails is reported in its row (and in the JSON, as "error") and the
// rest still run.
absl::Status RunBench(const BenchOptions& options, std::ostream& out);

}  // namespace cli
}  // namespace kps
