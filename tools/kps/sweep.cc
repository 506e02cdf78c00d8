// The sweep of `kps bench --sweep`: a grid per family over the classes of shapes a user
// meets (sizes from 4K to 256M elements incl. odd and prime ones; rows of 1 to 16M
// elements and 1 to 16M rows; reductions and scans over the first, a middle, the last and
// non-adjacent dims; flat and batched sorts, topk with k from 1 to 1024; every dtype
// class; broadcast patterns; strided inputs), each case named "<family>/<case>".
// tools/bench_sweep_torch.py times the same cases (from `kps bench --sweep --cases FILE`)
// in PyTorch, and tools/sweep_report.py joins the two.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/kps/bench.h"
#include "tools/kps/cli.h"

namespace kps {
namespace cli {
namespace {

std::string ShapeName(const std::vector<int64_t>& s) { return absl::StrJoin(s, "x"); }

// Keeps the sweep's inputs below about 1 GiB each (the GPU holds several at once).
bool Fits(const std::vector<std::vector<int64_t>>& shapes, DataType dt) {
  for (const auto& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    if (n * static_cast<int64_t>(DataTypeSize(dt)) > (int64_t{1} << 30)) return false;
  }
  return true;
}

constexpr DataType kF32 = DataType::kFloat32, kF16 = DataType::kFloat16, kBF16 = DataType::kBFloat16,
                   kF64 = DataType::kFloat64, kI8 = DataType::kInt8, kI32 = DataType::kInt32, kI64 = DataType::kInt64,
                   kB8 = DataType::kBool;

void Elementwise(std::vector<BenchWorkload>& v) {
  const int64_t sizes[] = {4096, 65537, 1000003, int64_t{1} << 24, 100000007, int64_t{1} << 28};
  for (DataType dt : {kI8, kI32, kI64, kF16, kBF16, kF32, kF64}) {
    for (int64_t n : sizes) {
      const std::vector<std::vector<int64_t>> shapes = {{n}, {n}};
      if (!Fits(shapes, dt)) continue;
      v.push_back({absl::StrCat("elementwise/add_", ShortDataTypeName(dt), "_", n), "add", dt, shapes});
    }
  }
  for (const char* op : {"exp", "gelu", "silu", "sigmoid"}) {
    for (DataType dt : {kF16, kBF16, kF32}) {
      for (int64_t n : {int64_t{65537}, int64_t{1} << 24, int64_t{1} << 28}) {
        v.push_back({absl::StrCat("elementwise/", op, "_", ShortDataTypeName(dt), "_", n), op, dt, {{n}}});
      }
    }
  }
  for (DataType dt : {kF32, kF16}) {
    v.push_back({absl::StrCat("elementwise/pow_scalar_", ShortDataTypeName(dt), "_16M"),
                 "pow_scalar",
                 dt,
                 {{int64_t{1} << 24}},
                 std::nullopt,
                 std::nullopt,
                 {{"other", AttrValue(2.5)}}});
  }
  // Broadcast patterns: a row, a column, a channel, an outer product, a scalar.
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> bcast = {
      {{8192, 8192}, {1, 8192}}, {{8192, 8192}, {8192, 1}}, {{64, 256, 56, 56}, {1, 256, 1, 1}},
      {{4096, 1}, {1, 4096}},    {{1 << 24}, {1}},          {{33, 1000, 517}, {1000, 1}}};
  for (DataType dt : {kF32, kF16, kI32}) {
    for (const auto& [a, b] : bcast) {
      v.push_back({absl::StrCat("elementwise/add_bcast_", ShortDataTypeName(dt), "_", ShapeName(a), "+", ShapeName(b)),
                   "add",
                   dt,
                   {a, b}});
    }
  }
  // Strided inputs: transposed views.
  for (DataType dt : {kF32, kF16}) {
    for (const std::vector<int64_t>& s : {std::vector<int64_t>{8192, 8192}, std::vector<int64_t>{1000, 4097}}) {
      BenchWorkload w{
          absl::StrCat("elementwise/copy_transposed_", ShortDataTypeName(dt), "_", ShapeName(s)), "copy", dt, {s}};
      w.transposed_inputs = true;
      v.push_back(w);
      BenchWorkload a{
          absl::StrCat("elementwise/add_transposed_", ShortDataTypeName(dt), "_", ShapeName(s)), "add", dt, {s, s}};
      a.transposed_inputs = true;
      v.push_back(a);
    }
  }
  for (DataType to : {kF16, kF64, kI32}) {
    v.push_back({absl::StrCat("elementwise/cast_f32_to_", ShortDataTypeName(to), "_16M"),
                 "cast",
                 kF32,
                 {{int64_t{1} << 24}},
                 std::nullopt,
                 std::nullopt,
                 {{"dtype", AttrValue(to)}}});
  }
}

void Reductions(std::vector<BenchWorkload>& v) {
  // [rows, cols] over the last dim: short rows of odd length to one long row.
  const std::vector<std::vector<int64_t>> rows = {{1 << 21, 7}, {1 << 20, 32}, {1 << 18, 33}, {65536, 1000},
                                                  {8192, 8192}, {256, 65537},  {16, 1 << 20}, {1, 1 << 24},
                                                  {4097, 4097}, {1 << 24, 1}};
  // Over the first dim: few columns to many.
  const std::vector<std::vector<int64_t>> cols = {
      {1 << 20, 16}, {1 << 20, 3}, {65536, 1000}, {16, 1 << 20}, {8192, 8192}};
  for (const char* op : {"sum", "max", "mean", "argmax", "var"}) {
    const bool float_only = std::string(op) == "mean" || std::string(op) == "var";
    for (DataType dt : {kF32, kBF16, kI32}) {
      if (float_only && dt == kI32) continue;
      for (const auto& s : rows) {
        v.push_back({absl::StrCat("reduce/", op, "_last_", ShortDataTypeName(dt), "_", ShapeName(s)),
                     op,
                     dt,
                     {s},
                     std::vector<int64_t>{1}});
      }
      for (const auto& s : cols) {
        v.push_back({absl::StrCat("reduce/", op, "_first_", ShortDataTypeName(dt), "_", ShapeName(s)),
                     op,
                     dt,
                     {s},
                     std::vector<int64_t>{0}});
      }
    }
  }
  // A middle dim, non-adjacent dims, everything, other dtypes.
  for (DataType dt : {kF32, kF16, kF64, kI64}) {
    v.push_back({absl::StrCat("reduce/sum_mid_", ShortDataTypeName(dt), "_256x1024x256"),
                 "sum",
                 dt,
                 {{256, 1024, 256}},
                 std::vector<int64_t>{1}});
    v.push_back({absl::StrCat("reduce/sum_dims02_", ShortDataTypeName(dt), "_64x256x1024"),
                 "sum",
                 dt,
                 {{64, 256, 1024}},
                 std::vector<int64_t>{0, 2}});
    v.push_back({absl::StrCat("reduce/sum_hw_", ShortDataTypeName(dt), "_64x256x56x56"),
                 "sum",
                 dt,
                 {{64, 256, 56, 56}},
                 std::vector<int64_t>{2, 3}});
    v.push_back({absl::StrCat("reduce/sum_all_", ShortDataTypeName(dt), "_100000007"),
                 "sum",
                 dt,
                 {{100000007}},
                 std::vector<int64_t>{0}});
  }
  v.push_back({"reduce/any_last_b8_65536x1000", "any", kB8, {{65536, 1000}}, std::vector<int64_t>{1}});
  v.push_back({"reduce/sum_last_i8_65536x1000", "sum", kI8, {{65536, 1000}}, std::vector<int64_t>{1}});
}

void Scans(std::vector<BenchWorkload>& v) {
  struct S {
    std::vector<int64_t> shape;
    int64_t dim;
  };
  const S shapes[] = {{{1 << 24}, 0},     {{8192, 8192}, 1},    {{8192, 8192}, 0},
                      {{33, 1 << 19}, 0}, {{1 << 20, 17}, 1},   {{16384, 1000}, 1},
                      {{4, 1 << 22}, 1},  {{64, 256, 1024}, 1}, {{100000007}, 0}};
  for (const char* op : {"cumsum", "cummax", "logcumsumexp"}) {
    for (DataType dt : {kF32, kBF16, kI32}) {
      if (std::string(op) == "logcumsumexp" && dt == kI32) continue;
      for (const S& s : shapes) {
        if (!Fits({s.shape}, dt)) continue;
        v.push_back({absl::StrCat("scan/", op, "_d", s.dim, "_", ShortDataTypeName(dt), "_", ShapeName(s.shape)),
                     op,
                     dt,
                     {s.shape},
                     std::nullopt,
                     s.dim});
      }
    }
  }
  v.push_back({"scan/cumsum_d0_i64_16777216", "cumsum", kI64, {{1 << 24}}, std::nullopt, 0});
}

void Sorts(std::vector<BenchWorkload>& v) {
  const std::vector<std::vector<int64_t>> shapes = {{1 << 20},     {1 << 24},     {4, 1 << 22},
                                                    {4096, 5000},  {65536, 128},  {1 << 20, 17},
                                                    {16384, 1000}, {128, 100000}, {65537}};
  for (const char* op : {"sort", "argsort"}) {
    for (DataType dt : {kF32, kI32, kF16, kF64, kI8}) {
      for (const auto& s : shapes) {
        v.push_back({absl::StrCat("sort/", op, "_", ShortDataTypeName(dt), "_", ShapeName(s)),
                     op,
                     dt,
                     {s},
                     std::nullopt,
                     static_cast<int64_t>(s.size()) - 1});
      }
    }
  }
  struct K {
    std::vector<int64_t> shape;
    std::vector<int64_t> ks;
  };
  const K topks[] = {{{4096, 5000}, {1, 8, 64, 1024}}, {{1 << 22}, {1, 8, 64, 1024}}, {{128, 100000}, {64, 256, 1024}},
                     {{1 << 20, 17}, {1, 8}},          {{4096, 32768}, {8, 128}},     {{65536, 1000}, {1, 16}}};
  for (DataType dt : {kF32, kBF16, kI32}) {
    for (const K& t : topks) {
      for (int64_t k : t.ks) {
        v.push_back({absl::StrCat("topk/topk", k, "_", ShortDataTypeName(dt), "_", ShapeName(t.shape)),
                     "topk",
                     dt,
                     {t.shape},
                     std::nullopt,
                     static_cast<int64_t>(t.shape.size()) - 1,
                     {{"k", AttrValue(k)}}});
      }
    }
  }
}

void Others(std::vector<BenchWorkload>& v) {
  for (const auto& [dt, s] : std::vector<std::pair<DataType, std::vector<int64_t>>>{
           {kB8, {4096, 4096}}, {kI32, {256, 256, 256}}, {kF32, {1 << 24}}, {kF16, {1 << 24}}}) {
    v.push_back({absl::StrCat("compaction/nonzero_", ShortDataTypeName(dt), "_", ShapeName(s)), "nonzero", dt, {s}});
  }
  for (const auto& [scale, dt] :
       std::vector<std::pair<int64_t, DataType>>{{2, kF32}, {3, kF32}, {4, DataType::kUInt8}, {2, kF16}, {2, kBF16}}) {
    v.push_back({absl::StrCat("upsample/scale", scale, "_", ShortDataTypeName(dt), "_16x64x128x128"),
                 "upsample_nearest2d",
                 dt,
                 {{16, 64, 128, 128}},
                 std::nullopt,
                 std::nullopt,
                 {{"scale", AttrValue(scale)}}});
  }
  for (DataType dt : {kF32, kF16, kBF16, kF64}) {
    for (int64_t n : {int64_t{65537}, int64_t{1} << 24, int64_t{1} << 28}) {
      if (!Fits({{n}}, dt)) continue;
      v.push_back({absl::StrCat("linalg/dot_", ShortDataTypeName(dt), "_", n), "dot", dt, {{n}, {n}}});
    }
  }
  // index_add along dim 0, both modes: few wide rows, many narrow rows (1M rows of 4), and
  // as many indices as rows.
  struct IndexAdd {
    int64_t rows, count, cols;
  };
  for (const IndexAdd& c :
       {IndexAdd{1 << 20, 1 << 20, 4}, IndexAdd{1 << 16, 1 << 20, 16}, IndexAdd{1 << 14, 1 << 16, 256}}) {
    for (DataType dt : {kF32, kBF16}) {
      for (bool det : {false, true}) {
        v.push_back({absl::StrCat("index/index_add", det ? "_det_" : "_", ShortDataTypeName(dt), "_", c.rows, "x",
                                  c.cols, "_n", c.count),
                     "index_add",
                     dt,
                     {{c.rows, c.cols}, {c.count, c.cols}},
                     std::nullopt,
                     0,
                     {{"deterministic", AttrValue(det)}},
                     [c, dt](uint64_t seed) { return MakeIndexAddInputs(c.rows, c.count, c.cols, dt, seed); }});
      }
    }
  }
  for (int64_t m : {int64_t{3}, int64_t{31}, int64_t{127}, int64_t{1000}}) {
    v.push_back({absl::StrCat("conv/conv1d_f32_4M_k", m), "conv1d", kF32, {{1 << 22}, {m}}});
  }
}

}  // namespace

const std::vector<BenchWorkload>& SweepWorkloads() {
  static const auto* workloads = [] {
    auto* v = new std::vector<BenchWorkload>;
    Elementwise(*v);
    Reductions(*v);
    Scans(*v);
    Sorts(*v);
    Others(*v);
    return v;
  }();
  return *workloads;
}

}  // namespace cli
}  // namespace kps
