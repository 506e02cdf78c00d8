#include "tools/kps/bench.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "registry/call.h"
#include "registry/device.h"
#include "registry/op_schema.h"
#include "registry/status.h"
#include "registry/stream.h"
#include "registry/tensor.h"
#include "tools/kps/bench_kernels.h"
#include "io/npy.h"

namespace kps {
namespace cli {

using ::kps::io::WriteFileAtomically;
namespace {

// One row of results: a workload (ms, GB/s), a host-cost measurement (us), or a failure.
struct BenchResult {
  std::string name;
  double ms = -1;
  double gbps = -1;
  double b2b_ms = -1;  // per call over back-to-back calls: the kernels without the launch gap
  double us = -1;
  std::string error;
};

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);  // as Python's statistics.median
}

// Fills a CUDA tensor with standard-normal values (like torch.randn). Generating 2^28
// values on the host would take seconds per input, so one 2^20-element block is made on
// the host and repeated by doubling device-to-device copies: the values repeat every
// 2^20 elements, which no streaming kernel can exploit (it is far larger than L2).
absl::Status FillNormal(Tensor& t, uint64_t seed) {
  const int64_t n = t.numel();
  if (n == 0) return absl::OkStatus();
  const size_t elem = DataTypeSize(t.dtype());
  const int64_t block = std::min<int64_t>(n, int64_t{1} << 20);
  std::vector<char> host(static_cast<size_t>(block) * elem);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  VisitDataType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = reinterpret_cast<T*>(host.data());
    for (int64_t i = 0; i < block; ++i) p[i] = static_cast<T>(normal(rng));
  });
  char* dst = static_cast<char*>(t.raw_data());
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
  for (int64_t filled = block; filled < n;) {
    const int64_t count = std::min(filled, n - filled);
    KPS_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst + filled * elem, dst, count * elem, cudaMemcpyDeviceToDevice),
                             "cudaMemcpy");
    filled += count;
  }
  KPS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return absl::OkStatus();
}

// Owns a pair of CUDA events.
class EventPair {
 public:
  EventPair() = default;
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
  }
  absl::Status Create() {
    KPS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start_), "cudaEventCreate");
    KPS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop_), "cudaEventCreate");
    return absl::OkStatus();
  }
  cudaEvent_t start() const { return start_; }
  cudaEvent_t stop() const { return stop_; }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// Events around each of `reps` single calls of `fn` on the legacy default stream, each
// waited for before the next: the median, in ms. The caller warms up first.
absl::StatusOr<double> MedianSingleCallMs(int reps, const std::function<absl::Status()>& fn) {
  EventPair events;
  KPS_RETURN_IF_ERROR(events.Create());
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    KPS_CUDA_RETURN_IF_ERROR(cudaEventRecord(events.start(), nullptr), "cudaEventRecord");
    KPS_RETURN_IF_ERROR(fn());
    KPS_CUDA_RETURN_IF_ERROR(cudaEventRecord(events.stop(), nullptr), "cudaEventRecord");
    KPS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(events.stop()), "cudaEventSynchronize");
    float ms = 0;
    KPS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, events.start(), events.stop()), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  return Median(std::move(times));
}

// Times one workload: events on the legacy default stream (the stream kps::Call uses
// when given none, and the one PyTorch's current stream is by default) around one call
// (the benchmark's rule: the eager call's host work and launch up to the kernel's start
// count).
// Also, as a diagnostic, events around `reps` back-to-back calls, per call: the host
// runs ahead, so that figure is the GPU time alone (launch gaps hidden).
struct WorkloadTimes {
  double ms = 0;
  double b2b_ms = 0;
};
absl::StatusOr<WorkloadTimes> TimeWorkloadMs(const BenchWorkload& w, const BenchOptions& options, uint64_t seed) {
  KPS_ASSIGN_OR_RETURN(const OpSchema* schema, OpRegistry::Global().Lookup(w.op));
  std::vector<Tensor> inputs;
  if (w.make_inputs) {
    KPS_ASSIGN_OR_RETURN(inputs, w.make_inputs(seed));
  } else {
    for (size_t i = 0; i < w.shapes.size(); ++i) {
      std::vector<int64_t> dims = w.shapes[i];
      const bool transpose = w.transposed_inputs && dims.size() >= 2;
      if (transpose) std::swap(dims[dims.size() - 2], dims[dims.size() - 1]);
      KPS_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(Shape(dims), w.dtype, DeviceType::kCuda));
      KPS_RETURN_IF_ERROR(FillNormal(t, seed + i));
      if (transpose) {
        const int r = static_cast<int>(dims.size());
        KPS_ASSIGN_OR_RETURN(t, t.Transpose(r - 2, r - 1));
      }
      inputs.push_back(std::move(t));
    }
  }
  if (schema->inputs().size() != inputs.size()) {
    return absl::InternalError(absl::StrCat("workload ", w.name, " gives ", inputs.size(), " inputs but op '",
                                            w.op, "' takes ", schema->inputs().size()));
  }
  auto run = [&]() -> absl::Status {
    Call call(w.op);
    for (size_t i = 0; i < inputs.size(); ++i) call.Input(schema->inputs()[i].name, inputs[i]);
    if (w.dims) call.Attr("dims", *w.dims);
    if (w.dim) call.Attr("dim", *w.dim);
    for (const auto& [name, value] : w.attrs) call.SetAttr(name, value);
    return call.Run().status();  // the output is freed here, stream-ordered, for reuse
  };
  for (int i = 0; i < options.warmup; ++i) KPS_RETURN_IF_ERROR(run());
  KPS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  WorkloadTimes t;
  KPS_ASSIGN_OR_RETURN(t.ms, MedianSingleCallMs(options.reps, run));
  EventPair events;
  KPS_RETURN_IF_ERROR(events.Create());
  KPS_CUDA_RETURN_IF_ERROR(cudaEventRecord(events.start(), nullptr), "cudaEventRecord");
  for (int i = 0; i < options.reps; ++i) KPS_RETURN_IF_ERROR(run());
  KPS_CUDA_RETURN_IF_ERROR(cudaEventRecord(events.stop(), nullptr), "cudaEventRecord");
  KPS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(events.stop()), "cudaEventSynchronize");
  float all_ms = 0;
  KPS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&all_ms, events.start(), events.stop()), "cudaEventElapsedTime");
  t.b2b_ms = all_ms / std::max(options.reps, 1);
  return t;
}

// Host wall time per call of `calls` back-to-back calls of `fn`, after a warm-up; with
// `sync_each`, every call waits for the default stream. The final wait is inside the
// timed region either way, so queued work is paid for. The host is noisy (other tenants,
// frequency changes), so the loop runs kRounds times and the median round counts.
absl::StatusOr<double> TimeHostUs(int calls, bool sync_each, const std::function<absl::Status()>& fn) {
  constexpr int kRounds = 7;
  const int warmup = std::min(calls, 100);
  for (int i = 0; i < warmup; ++i) KPS_RETURN_IF_ERROR(fn());
  std::vector<double> per_call;
  for (int round = 0; round < kRounds; ++round) {
    KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      KPS_RETURN_IF_ERROR(fn());
      if (sync_each) KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    }
    KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    per_call.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                       calls);
  }
  return Median(std::move(per_call));
}

// GPU time of one call on an idle stream: events around it, median of `reps` after a
// warm-up. On tiny inputs this is the gap a workload's single-call figure pays before its
// kernel starts (the host work up to the launch, and the launch itself).
absl::StatusOr<double> TimeLatencyUs(int reps, const std::function<absl::Status()>& fn) {
  for (int i = 0; i < 20; ++i) KPS_RETURN_IF_ERROR(fn());
  KPS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  KPS_ASSIGN_OR_RETURN(const double ms, MedianSingleCallMs(reps, fn));
  return 1000.0 * ms;
}

absl::Status WriteJson(const std::string& path, const std::string& device, const std::vector<BenchResult>& results) {
  std::string json = absl::StrCat("{\"device\": ", JsonString(device), ", \"kps\": \"bench\", \"results\": [");
  for (size_t i = 0; i < results.size(); ++i) {
    const BenchResult& r = results[i];
    absl::StrAppend(&json, i == 0 ? "\n " : ",\n ", "{\"name\": ", JsonString(r.name));
    if (!r.error.empty()) {
      absl::StrAppend(&json, ", \"error\": ", JsonString(r.error));
    } else if (r.us >= 0) {
      absl::StrAppend(&json, absl::StrFormat(", \"us\": %.6g", r.us));
    } else {
      // "GBps" as PyTorch's side of the benchmark writes it, so the two files line up key
      // for key.
      absl::StrAppend(&json, absl::StrFormat(", \"ms\": %.6g, \"GBps\": %.6g, \"b2b_ms\": %.6g", r.ms, r.gbps, r.b2b_ms));
    }
    absl::StrAppend(&json, "}");
  }
  absl::StrAppend(&json, "\n]}\n");
  absl::Status s = WriteFileAtomically(path, json);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("--json: ", s.message()));
  return absl::OkStatus();
}

}  // namespace

// index_add's inputs along dim 0: x [rows, cols] and source [count, cols] random normal,
// and an int64 index of `count` values uniform in [0, rows) (torch.randint, as PyTorch's side).
absl::StatusOr<std::vector<Tensor>> MakeIndexAddInputs(int64_t rows, int64_t count, int64_t cols, DataType dtype,
                                                       uint64_t seed) {
  KPS_ASSIGN_OR_RETURN(Tensor x, Tensor::Empty(Shape{rows, cols}, dtype, DeviceType::kCuda));
  KPS_RETURN_IF_ERROR(FillNormal(x, seed));
  KPS_ASSIGN_OR_RETURN(Tensor source, Tensor::Empty(Shape{count, cols}, dtype, DeviceType::kCuda));
  KPS_RETURN_IF_ERROR(FillNormal(source, seed + 1));
  std::mt19937_64 rng(seed + 2);
  std::uniform_int_distribution<int64_t> pick(0, rows - 1);
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (int64_t& v : values) v = pick(rng);
  KPS_ASSIGN_OR_RETURN(Tensor host, Tensor::FromVector<int64_t>(values, Shape{count}));
  KPS_ASSIGN_OR_RETURN(Tensor index, host.To(DeviceType::kCuda));
  return std::vector<Tensor>{std::move(x), std::move(index), std::move(source)};
}

namespace {

}  // namespace

const std::vector<BenchWorkload>& BenchWorkloads() {
  // Names, shapes and dtypes exactly as in the benchmark workloads (PyTorch's side of the
  // benchmark: scripts supplied from outside this repository, see docs/performance.md).
  static const auto* workloads = new std::vector<BenchWorkload>{
      {"copy_f32_256M", "copy", DataType::kFloat32, {{int64_t{1} << 28}}},
      {"add_f32_256M", "add", DataType::kFloat32, {{int64_t{1} << 28}, {int64_t{1} << 28}}},
      {"add_f16_256M", "add", DataType::kFloat16, {{int64_t{1} << 28}, {int64_t{1} << 28}}},
      {"add_bf16_256M", "add", DataType::kBFloat16, {{int64_t{1} << 28}, {int64_t{1} << 28}}},
      {"add_f32_odd", "add", DataType::kFloat32, {{100000007}, {100000007}}},
      {"add_bcast_row_f32", "add", DataType::kFloat32, {{8192, 8192}, {1, 8192}}},
      {"add_bcast_col_f32", "add", DataType::kFloat32, {{8192, 8192}, {8192, 1}}},
      {"add_bcast_nchw_f16", "add", DataType::kFloat16, {{64, 256, 56, 56}, {1, 256, 1, 1}}},
      {"mul_f32_256M", "mul", DataType::kFloat32, {{int64_t{1} << 28}, {int64_t{1} << 28}}},
      {"exp_f32_256M", "exp", DataType::kFloat32, {{int64_t{1} << 28}}},
      {"sum_all_f32_256M", "sum", DataType::kFloat32, {{int64_t{1} << 28}}, {{0}}},
      {"sum_last_f32_8Kx8K", "sum", DataType::kFloat32, {{8192, 8192}}, {{1}}},
      {"sum_first_f32_8Kx8K", "sum", DataType::kFloat32, {{8192, 8192}}, {{0}}},
      {"sum_mid_f32_256x1Kx256", "sum", DataType::kFloat32, {{256, 1024, 256}}, {{1}}},
      {"sum_last_f32_1Mx32", "sum", DataType::kFloat32, {{int64_t{1} << 20, 32}}, {{1}}},
      {"sum_last_f16_8Kx8K", "sum", DataType::kFloat16, {{8192, 8192}}, {{1}}},
      {"max_last_f32_8Kx8K", "max", DataType::kFloat32, {{8192, 8192}}, {{1}}},
      {"mean_hw_f16_64x256x56x56", "mean", DataType::kFloat16, {{64, 256, 56, 56}}, {{2, 3}}},
      {"cumsum_f32_256M", "cumsum", DataType::kFloat32, {{int64_t{1} << 28}}, std::nullopt, 0},
      {"cumsum_last_f32_8Kx8K", "cumsum", DataType::kFloat32, {{8192, 8192}}, std::nullopt, 1},
      {"cumsum_first_f32_8Kx8K", "cumsum", DataType::kFloat32, {{8192, 8192}}, std::nullopt, 0},
      {"sort_f32_64M", "sort", DataType::kFloat32, {{int64_t{1} << 26}}, std::nullopt, 0},
      {"argsort_rows_f32_64Kx128", "argsort", DataType::kFloat32, {{65536, 128}}, std::nullopt, 1},
      {"argsort_rows_f32_4Kx4K", "argsort", DataType::kFloat32, {{4096, 4096}}, std::nullopt, 1},
      {"topk8_rows_f32_4Kx32K", "topk", DataType::kFloat32, {{4096, 32768}}, std::nullopt, 1,
       {{"k", AttrValue(int64_t{8})}}},
      {"upsample2x_f32_16x64x256x256", "upsample_nearest2d", DataType::kFloat32, {{16, 64, 256, 256}}, std::nullopt,
       std::nullopt, {{"scale", AttrValue(int64_t{2})}}},
      // Out of place, 2^18 rows of 256 added into 2^20 at random positions, as PyTorch's side.
      {"index_add_f32_1Mx256", "index_add", DataType::kFloat32, {{int64_t{1} << 20, 256}, {int64_t{1} << 18, 256}},
       std::nullopt, 0, {},
       [](uint64_t seed) {
         return MakeIndexAddInputs(int64_t{1} << 20, int64_t{1} << 18, 256, DataType::kFloat32, seed);
       }},
      {"dot_f16_256M", "dot", DataType::kFloat16, {{int64_t{1} << 28}, {int64_t{1} << 28}}},
      // Not in the benchmark workloads: full convolution of 2^24 samples with 127 taps;
      // PyTorch's side (torch.nn.functional.conv1d, filter flipped) is
      // tools/bench_torch_extra.py.
      {"conv1d_f32_16M_k127", "conv1d", DataType::kFloat32, {{int64_t{1} << 24}, {127}}},
  };
  return *workloads;
}

std::string WorkloadsJson(const std::vector<BenchWorkload>& workloads) {
  auto ints = [](const std::vector<int64_t>& v) { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); };
  std::string json = "{\"kps\": \"sweep cases\", \"cases\": [";
  for (size_t i = 0; i < workloads.size(); ++i) {
    const BenchWorkload& w = workloads[i];
    const size_t slash = w.name.find('/');
    std::vector<std::string> shapes;
    for (const auto& sh : w.shapes) shapes.push_back(ints(sh));
    absl::StrAppend(&json, i == 0 ? "\n " : ",\n ", "{\"name\": ", JsonString(w.name),
                    ", \"family\": ", JsonString(slash == std::string::npos ? w.op : w.name.substr(0, slash)),
                    ", \"op\": ", JsonString(w.op), ", \"dtype\": ", JsonString(DataTypeName(w.dtype)),
                    ", \"shapes\": [", absl::StrJoin(shapes, ", "), "]");
    if (w.dims) absl::StrAppend(&json, ", \"dims\": ", ints(*w.dims));
    if (w.dim) absl::StrAppend(&json, ", \"dim\": ", *w.dim);
    std::vector<std::string> attrs;
    for (const auto& [name, value] : w.attrs) {
      std::string v;
      if (const auto* x = std::get_if<int64_t>(&value)) v = absl::StrCat(*x);
      else if (const auto* d = std::get_if<double>(&value)) v = absl::StrFormat("%.17g", *d);
      else if (const auto* b = std::get_if<bool>(&value)) v = *b ? "true" : "false";
      else if (const auto* l = std::get_if<std::vector<int64_t>>(&value)) v = ints(*l);
      else if (const auto* t = std::get_if<DataType>(&value)) v = JsonString(DataTypeName(*t));
      else v = JsonString(std::get<std::string>(value));
      attrs.push_back(absl::StrCat(JsonString(name), ": ", v));
    }
    absl::StrAppend(&json, ", \"attrs\": {", absl::StrJoin(attrs, ", "), "}");
    absl::StrAppend(&json, ", \"transposed\": ", w.transposed_inputs ? "true" : "false",
                    ", \"bytes\": ", MinBytesMoved(w), "}");
  }
  absl::StrAppend(&json, "\n]}\n");
  return json;
}

int64_t MinBytesMoved(const BenchWorkload& w) {
  // The benchmark workloads' rule: inputs read once, plus the output written once. For
  // elementwise ops the output has the largest input's element count (broadcasting); for
  // copy, the input's.
  const int64_t elem = static_cast<int64_t>(DataTypeSize(w.dtype));
  int64_t in = 0, out = 0;
  for (const auto& s : w.shapes) {
    const int64_t n = Shape(s).numel();
    in += n;
    out = std::max(out, n);
  }
  if (w.op == "copy") out = Shape(w.shapes[0]).numel();
  // cast writes its target dtype; nonzero's output size depends on the values: its read.
  if (w.op == "cast") {
    for (const auto& [name, value] : w.attrs) {
      if (name == "dtype") return in * elem + out * static_cast<int64_t>(DataTypeSize(std::get<DataType>(value)));
    }
  }
  if (w.op == "nonzero") return in * elem;
  // Sorts: values (in x's dtype) and int64 indices; argsort the indices only; topk k of
  // each per row of the last dim.
  if (w.op == "sort") return in * elem + Shape(w.shapes[0]).numel() * (elem + 8);
  if (w.op == "argsort") return in * elem + Shape(w.shapes[0]).numel() * 8;
  if (w.op == "topk") {
    int64_t k = 0;
    for (const auto& [name, value] : w.attrs) {
      if (name == "k") k = std::get<int64_t>(value);
    }
    return in * elem + Shape(w.shapes[0]).numel() / w.shapes[0].back() * k * (elem + 8);
  }
  // upsample: the output is the input times scale^2 (the workloads' rule for scale 2);
  // index_add: x, source and the int64 index read once, out written once; dot: a scalar
  // out; conv1d (full): n + m - 1 outputs.
  if (w.op == "upsample_nearest2d") {
    int64_t scale = 2;
    for (const auto& [name, value] : w.attrs) {
      if (name == "scale") scale = std::get<int64_t>(value);
    }
    return in * elem + Shape(w.shapes[0]).numel() * scale * scale * elem;
  }
  if (w.op == "index_add") {
    return (2 * Shape(w.shapes[0]).numel() + Shape(w.shapes[1]).numel()) * elem + w.shapes[1][0] * 8;
  }
  if (w.op == "dot") return in * elem + elem;
  if (w.op == "conv1d") return (in + Shape(w.shapes[0]).numel() + Shape(w.shapes[1]).numel() - 1) * elem;
  if (w.dims) {  // a reduction: the output lacks the reduced dims
    out = Shape(w.shapes[0]).numel();
    for (int64_t d : *w.dims) out /= w.shapes[0][d];
  }
  return (in + out) * elem;
}

absl::Status RunBench(const BenchOptions& options, std::ostream& out) {
  if (!CudaAvailable()) {
    return absl::FailedPreconditionError(
        "no CUDA GPU is visible to this process (no driver or no device), and the benchmarks "
        "time GPU kernels; run them on a machine with a GPU");
  }
  auto selected = [&](absl::string_view name) { return absl::StrContains(name, options.filter); };
  static const char* const kHostRows[] = {
      "raw_launch",         "raw_launch_sync",     "eager_add_f32_1",          "eager_add_f32_1_sync",
      "malloc_free_async_4B", "eager_add_f32_1_cpu", "eager_add_f32_1_out",      "direct_add_launch",
      "latency_raw_launch", "latency_eager_add_f32_1", "latency_eager_add_f32_1_out", "latency_eager_sum_f32_1K",
      "tensor_alloc_free_f32_1"};
  const std::vector<BenchWorkload>& workloads = options.sweep ? SweepWorkloads() : BenchWorkloads();
  bool any = false;
  for (const BenchWorkload& w : workloads) any = any || selected(w.name);
  if (!options.sweep) {
    for (const char* name : kHostRows) any = any || selected(name);
  }
  if (!any) {
    std::vector<std::string> names;
    for (const BenchWorkload& w : workloads) names.push_back(w.name);
    if (!options.sweep) {
      for (const char* name : kHostRows) names.push_back(name);
    }
    return absl::InvalidArgumentError(absl::StrCat("--filter '", options.filter, "' matches no row; rows: ",
                                                   absl::StrJoin(names, ", ")));
  }

  int dev = 0;
  cudaDeviceProp prop;
  KPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev), "cudaGetDevice");
  KPS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  const std::string device = prop.name;
  out << "device: " << device << "\n"
      << absl::StrFormat("workloads: CUDA events around one eager kps::Call (output allocation included), "
                         "median of %d after %d warm-ups\n",
                         options.reps, options.warmup);
  std::vector<BenchResult> results;
  uint64_t seed = 0;
  for (const BenchWorkload& w : workloads) {
    seed += 16;
    if (!selected(w.name)) continue;
    BenchResult r;
    r.name = w.name;
    absl::StatusOr<WorkloadTimes> ms = TimeWorkloadMs(w, options, seed);
    if (ms.ok()) {
      r.ms = ms->ms;
      r.b2b_ms = ms->b2b_ms;
      r.gbps = static_cast<double>(MinBytesMoved(w)) / r.ms / 1e6;
      out << absl::StrFormat("%-34s %9.4f ms %9.1f GB/s   (back to back: %9.4f ms %7.1f GB/s)\n", w.name, r.ms,
                             r.gbps, r.b2b_ms, static_cast<double>(MinBytesMoved(w)) / r.b2b_ms / 1e6);
    } else {
      r.error = std::string(ms.status().message());
      out << absl::StrFormat("%-34s FAILED %s\n", w.name, r.error);
      cudaGetLastError();  // do not let one workload's error leak into the next
    }
    out.flush();
    results.push_back(std::move(r));
  }

  if (options.sweep) {  // the sweep has no host rows
    if (!options.json_path.empty()) {
      KPS_RETURN_IF_ERROR(WriteJson(options.json_path, device, results));
      out << "wrote " << options.json_path << "\n";
    }
    return absl::OkStatus();
  }

  // Host cost of one eager call, against the floor of a raw launch. Both on the legacy
  // default stream, on 1-element float32 inputs so the GPU work is negligible.
  Tensor x, y;  // tiny, so made whichever rows run
  {
    KPS_ASSIGN_OR_RETURN(x, Tensor::Empty(Shape{1}, DataType::kFloat32, DeviceType::kCuda));
    KPS_ASSIGN_OR_RETURN(y, Tensor::Empty(Shape{1}, DataType::kFloat32, DeviceType::kCuda));
    KPS_RETURN_IF_ERROR(FillNormal(x, 1));
    KPS_RETURN_IF_ERROR(FillNormal(y, 2));
  }
  auto raw = []() -> absl::Status {
    LaunchEmptyKernel(nullptr);
    return absl::OkStatus();  // launch errors are checked once, after the loop
  };
  auto eager = [&]() -> absl::Status { return Call("add").Input("x", x).Input("y", y).Run().status(); };
  // The parts of an eager call: the pool allocation and free it makes for its output,
  // and the runtime's own host work (the same call on CPU tensors, a trivial loop).
  auto malloc_free = []() -> absl::Status {
    void* p = nullptr;
    KPS_CUDA_RETURN_IF_ERROR(cudaMallocAsync(&p, 4, nullptr), "cudaMallocAsync");
    KPS_CUDA_RETURN_IF_ERROR(cudaFreeAsync(p, nullptr), "cudaFreeAsync");
    return absl::OkStatus();
  };
  KPS_ASSIGN_OR_RETURN(Tensor xc, Tensor::FromVector<float>({1.5f}, Shape{1}));
  KPS_ASSIGN_OR_RETURN(Tensor yc, Tensor::FromVector<float>({-0.25f}, Shape{1}));
  KPS_ASSIGN_OR_RETURN(Tensor out1, Tensor::Empty(Shape{1}, DataType::kFloat32, DeviceType::kCuda));
  auto eager_out = [&]() -> absl::Status {
    return Call("add").Input("x", x).Input("y", y).Output("out", out1).Run().status();
  };
  auto direct = [&]() -> absl::Status {
    return LaunchAddDirect(x.data<float>(), y.data<float>(), out1.data<float>(), 1, nullptr);
  };
  auto eager_cpu = [&]() -> absl::Status { return Call("add").Input("x", xc).Input("y", yc).Run().status(); };
  Tensor x1k;
  if (selected("latency_eager_sum_f32_1K")) {
    KPS_ASSIGN_OR_RETURN(x1k, Tensor::Empty(Shape{1024}, DataType::kFloat32, DeviceType::kCuda));
    KPS_RETURN_IF_ERROR(FillNormal(x1k, 3));
  }
  auto eager_sum = [&]() -> absl::Status { return Call("sum").Input("x", x1k).Run().status(); };
  // The output allocation of an eager call alone: the pool's cache, no CUDA work.
  auto alloc_free = []() -> absl::Status {
    return Tensor::Empty(Shape{1}, DataType::kFloat32, DeviceType::kCuda).status();
  };
  // kThroughput: host wall time per call of back-to-back calls; kSynced: the same with a
  // wait after each; kLatency: events around one call on an idle stream (GPU time).
  enum class Mode { kThroughput, kSynced, kLatency };
  struct HostRow {
    const char* name;
    Mode mode;
    bool raw;
    const char* what;
    std::function<absl::Status()> fn;
  };
  const HostRow rows[] = {
      {"raw_launch", Mode::kThroughput, true, "empty kernel <<<1,1>>>, one sync at the end", raw},
      {"raw_launch_sync", Mode::kSynced, true, "empty kernel <<<1,1>>>, cudaStreamSynchronize after each", raw},
      {"eager_add_f32_1", Mode::kThroughput, false, "kps::Call(\"add\") on float32[1], one sync at the end", eager},
      {"eager_add_f32_1_sync", Mode::kSynced, false,
       "kps::Call(\"add\") on float32[1], cudaStreamSynchronize after each", eager},
      {"malloc_free_async_4B", Mode::kThroughput, false, "cudaMallocAsync + cudaFreeAsync of 4 bytes", malloc_free},
      {"eager_add_f32_1_cpu", Mode::kThroughput, false, "kps::Call(\"add\") on CPU float32[1]: the runtime's host work",
       eager_cpu},
      {"eager_add_f32_1_out", Mode::kThroughput, false, "kps::Call(\"add\") into a given output (no allocation)",
       eager_out},
      {"direct_add_launch", Mode::kThroughput, false, "add's kernel through its launcher, checked, without the runtime",
       direct},
      {"latency_raw_launch", Mode::kLatency, true, "events around one empty kernel <<<1,1>>>", raw},
      {"latency_eager_add_f32_1", Mode::kLatency, false, "events around one kps::Call(\"add\") on float32[1]", eager},
      {"latency_eager_add_f32_1_out", Mode::kLatency, false, "events around one add into a given output", eager_out},
      {"latency_eager_sum_f32_1K", Mode::kLatency, false, "events around one kps::Call(\"sum\") of float32[1024]",
       eager_sum},
      {"tensor_alloc_free_f32_1", Mode::kThroughput, false, "Tensor::Empty of one CUDA float and its free (cached)",
       alloc_free},
  };
  constexpr int kNumRows = sizeof(rows) / sizeof(rows[0]);
  static_assert(kNumRows == sizeof(kHostRows) / sizeof(kHostRows[0]), "kHostRows lists every row");
  double us_of[kNumRows];
  bool headed[3] = {false, false, false};
  for (int i = 0; i < kNumRows; ++i) {
    const HostRow& row = rows[i];
    us_of[i] = -1;
    if (!selected(row.name)) continue;
    const bool latency = row.mode == Mode::kLatency;
    if (!headed[latency]) {
      headed[latency] = true;
      out << (latency ? std::string("single-call latency (GPU time between events around one call), median of 201:\n")
                      : absl::StrFormat("host cost per call, median of 7 rounds of %d back-to-back calls:\n",
                                        options.calls));
    }
    BenchResult r;
    r.name = row.name;
    absl::StatusOr<double> us = latency ? TimeLatencyUs(201, row.fn)
                                        : TimeHostUs(options.calls, row.mode == Mode::kSynced, row.fn);
    if (us.ok() && row.raw) {
      if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) us = CudaErrorToStatus(e, "kernel EmptyKernel");
    }
    if (us.ok()) {
      r.us = *us;
      us_of[i] = r.us;
      out << absl::StrFormat("  %-27s %8.2f us   %s\n", row.name, r.us, row.what);
    } else {
      r.error = std::string(us.status().message());
      out << absl::StrFormat("  %-27s FAILED %s\n", row.name, r.error);
    }
    results.push_back(std::move(r));
  }
  if (us_of[0] >= 0 && us_of[2] >= 0) {
    out << absl::StrFormat("  eager call over a raw launch: %+.2f us (back to back)", us_of[2] - us_of[0]);
    if (us_of[1] >= 0 && us_of[3] >= 0) out << absl::StrFormat(", %+.2f us (synced)", us_of[3] - us_of[1]);
    if (us_of[8] >= 0 && us_of[9] >= 0) out << absl::StrFormat(", %+.2f us (single call)", us_of[9] - us_of[8]);
    out << "\n";
  }
  if (!options.json_path.empty()) {
    KPS_RETURN_IF_ERROR(WriteJson(options.json_path, device, results));
    out << "wrote " << options.json_path << "\n";
  }
  return absl::OkStatus();
}

}  // namespace cli
}  // namespace kps
