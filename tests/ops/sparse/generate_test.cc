// The sparse generators (rmat, stencil_csr, banded_csr) on every device: outputs against
// references built from each op's definition and documented stream (written out here,
// not taken from ops/sparse/generate_ops.h), every value and index dtype, CPU against
// CUDA bit for bit, R-MAT's quadrant statistics and label permutation, edge sizes, sizes
// past 2^31 by inference alone, and the errors a caller can make. Outputs are passed in
// poisoned (0x5A bytes, also at a misaligned offset), so an element a kernel skips fails.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "functors/random.h"
#include "gtest/gtest.h"
#include "registry/call.h"
#include "registry/op_schema.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::Contains;
using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

const DataType kValueTypes[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
const DataType kIndexTypes[] = {DataType::kInt32, DataType::kInt64};

using Attrs = std::vector<std::pair<std::string, AttrValue>>;

Call MakeCall(const std::string& op, DeviceType dev, const Attrs& attrs) {
  Call call(op);
  for (const auto& [name, value] : attrs) call.SetAttr(name, value);
  call.OnDevice(dev);
  return call;
}

// A contiguous tensor of `shape` and `dtype` on `dev`, every byte 0x5A, starting `offset`
// elements into its storage (offset 1 defeats vector stores).
Tensor Poisoned(const Shape& shape, DataType dtype, DeviceType dev, int64_t offset) {
  const int64_t n = shape.numel();
  Tensor host = *Tensor::Empty(Shape{n + offset}, dtype, DeviceType::kCpu);
  if (host.nbytes() > 0) std::memset(host.raw_data(), 0x5a, host.nbytes());
  Tensor placed = dev == DeviceType::kCpu ? host : *host.To(dev);
  Tensor view = *placed.Slice(0, offset, offset + n);
  return *view.AsStrided(shape, {1}, view.offset());
}

// Runs `op` into poisoned outputs (the shapes from Infer), at `offset` elements into
// their storage.
absl::StatusOr<std::vector<Tensor>> Generate(const std::string& op, DeviceType dev, const Attrs& attrs,
                                             int64_t offset = 0) {
  KPS_ASSIGN_OR_RETURN(const std::vector<Call::OutputSpec> specs, MakeCall(op, dev, attrs).Infer());
  const OpSchema* schema = OpRegistry::Global().Find(op);
  Call call = MakeCall(op, dev, attrs);
  std::vector<Tensor> outs;
  for (size_t i = 0; i < specs.size(); ++i) {
    outs.push_back(Poisoned(specs[i].shape, specs[i].dtype, dev, offset));
    call.Output(schema->outputs()[i].name, outs.back());
  }
  KPS_RETURN_IF_ERROR(call.Run().status());
  return outs;
}

// The error's message, or a note that the call succeeded.
std::string ErrorOf(const std::string& op, const Attrs& attrs) {
  auto r = MakeCall(op, DeviceType::kCpu, attrs).Infer();
  if (r.ok()) return "(the call succeeded)";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  return std::string(r.status().message());
}

std::vector<uint8_t> Bytes(const Tensor& t) {
  auto host = t.To(DeviceType::kCpu);
  EXPECT_TRUE(host.ok()) << host.status();
  const uint8_t* p = static_cast<const uint8_t*>(host->raw_data());
  return std::vector<uint8_t>(p, p + host->nbytes());
}

std::vector<int64_t> Ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (double d : ToDoubles(t)) v.push_back(static_cast<int64_t>(d));
  return v;
}

// ---- rmat ------------------------------------------------------------------------------

struct RmatOptions {
  int64_t scale = 10, edge_factor = 16;
  double a = 0.57, b = 0.19, c = 0.19;
  uint64_t seed = 1;
  bool permute = true;
  DataType dtype = DataType::kInt64;

  Attrs ToAttrs() const {
    return {{"scale", scale},
            {"edge_factor", edge_factor},
            {"a", a},
            {"b", b},
            {"c", c},
            {"seed", static_cast<int64_t>(seed)},
            {"permute", permute},
            {"dtype", dtype}};
  }
};

struct Edges {
  std::vector<int64_t> src, dst;
};

Edges RunRmat(DeviceType dev, const RmatOptions& o, int64_t offset = 0) {
  auto r = Generate("rmat", dev, o.ToAttrs(), offset);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  EXPECT_EQ((*r)[0].dtype(), o.dtype);
  EXPECT_EQ((*r)[0].shape(), Shape{o.edge_factor << o.scale});
  return {Ints((*r)[0]), Ints((*r)[1])};
}

// Edge e of the documented stream (rmat's Doc), written out on its own.
std::pair<int64_t, int64_t> RmatReference(const RmatOptions& o, uint64_t e) {
  const uint2 key = PhiloxKey(o.seed);
  const uint32_t ta = static_cast<uint32_t>(std::lround(65536 * o.a));
  const uint32_t tab = static_cast<uint32_t>(std::lround(65536 * (o.a + o.b)));
  const uint32_t tabc = static_cast<uint32_t>(std::lround(65536 * (o.a + o.b + o.c)));
  uint64_t s = 0, d = 0;
  for (int l = 0; l < o.scale; ++l) {
    const uint4 w = Philox4x32_10(
        uint4{static_cast<uint32_t>(e), static_cast<uint32_t>(e >> 32), static_cast<uint32_t>(l / 8), 0}, key);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    const uint32_t u = (words[(l % 8) / 2] >> (16 * (l % 2))) & 0xffffu;
    const bool sb = u >= tab;
    const bool db = sb ? u >= tabc : u >= ta;
    s = s * 2 + sb;
    d = d * 2 + db;
  }
  if (o.permute) {
    const uint4 m = Philox4x32_10(uint4{0, 0, 0xffffffffu, 0xffffffffu}, key);
    const uint4 k = Philox4x32_10(uint4{1, 0, 0xffffffffu, 0xffffffffu}, key);
    const uint64_t mul[4] = {m.x | 1u, m.y | 1u, m.z | 1u, m.w | 1u}, add[4] = {k.x, k.y, k.z, k.w};
    const uint64_t mod = uint64_t{1} << o.scale;
    const int shift = static_cast<int>((o.scale + 1) / 2);
    for (uint64_t* v : {&s, &d}) {
      for (int r = 0; r < 4; ++r) {
        *v = (*v * mul[r] + add[r]) % mod;
        *v ^= *v >> shift;
      }
    }
  }
  return {static_cast<int64_t>(s), static_cast<int64_t>(d)};
}

class RmatTest : public ::kps::testing::PerDeviceTest {};

TEST_P(RmatTest, MatchesTheDocumentedStreamEveryDtype) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  for (DataType dt : kIndexTypes) {
    for (int64_t scale : {1, 2, 7, 8, 9, 13, 16, 17, 24, 25, 31}) {
      for (bool permute : {false, true}) {
        RmatOptions o;
        o.scale = scale;
        o.edge_factor = scale <= 13 ? 3 : 0;  // the largest scales: checked by ids below
        o.seed = seed + static_cast<uint64_t>(scale);
        o.permute = permute;
        o.dtype = dt;
        SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " scale " << scale << " permute " << permute);
        const Edges g = RunRmat(GetParam(), o, /*offset=*/scale % 2);
        for (size_t e = 0; e < g.src.size(); ++e) {
          const auto [s, d] = RmatReference(o, e);
          ASSERT_EQ(g.src[e], s) << "edge " << e;
          ASSERT_EQ(g.dst[e], d) << "edge " << e;
        }
      }
    }
  }
}

TEST_P(RmatTest, IdsInRangeAtEveryScaleAndEdgeSizes) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  for (int64_t scale : {1, 3, 11, 20}) {
    for (DataType dt : kIndexTypes) {
      RmatOptions o;
      o.scale = scale;
      o.edge_factor = scale == 20 ? 1 : 5;
      o.seed = seed;
      o.dtype = dt;
      const Edges g = RunRmat(GetParam(), o);
      ASSERT_EQ(g.src.size(), static_cast<size_t>(o.edge_factor << scale));
      for (size_t e = 0; e < g.src.size(); ++e) {
        ASSERT_TRUE(g.src[e] >= 0 && g.src[e] < (int64_t{1} << scale)) << g.src[e];
        ASSERT_TRUE(g.dst[e] >= 0 && g.dst[e] < (int64_t{1} << scale)) << g.dst[e];
      }
    }
  }
  // The smallest graph: 2 vertices, 2 edges; and no edges at all.
  RmatOptions o;
  o.scale = 1;
  o.edge_factor = 1;
  const Edges tiny = RunRmat(GetParam(), o);
  ASSERT_EQ(tiny.src.size(), 2u);
  for (int e = 0; e < 2; ++e) EXPECT_EQ(std::make_pair(tiny.src[e], tiny.dst[e]), RmatReference(o, e));
  o.edge_factor = 0;
  EXPECT_TRUE(RunRmat(GetParam(), o).src.empty());
  // The largest scale: 2^31 vertices still fit int32 (sizes by inference only).
  auto spec = MakeCall("rmat", GetParam(), {{"scale", 31}, {"edge_factor", 1}, {"dtype", DataType::kInt32}}).Infer();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((*spec)[0].shape, Shape{int64_t{1} << 31});
  EXPECT_EQ((*spec)[1].dtype, DataType::kInt32);
}

TEST_P(RmatTest, DeterministicPerSeedAndSeedsDiffer) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  RmatOptions o;
  o.scale = 12;
  o.seed = seed;
  auto first = Generate("rmat", GetParam(), o.ToAttrs());
  auto again = Generate("rmat", GetParam(), o.ToAttrs(), /*offset=*/1);
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(Bytes((*first)[0]), Bytes((*again)[0]));
  EXPECT_EQ(Bytes((*first)[1]), Bytes((*again)[1]));
  const Edges a = RunRmat(GetParam(), o);
  o.seed = seed + 1;
  const Edges b = RunRmat(GetParam(), o);
  size_t same = 0;
  for (size_t e = 0; e < a.src.size(); ++e) same += a.src[e] == b.src[e] && a.dst[e] == b.dst[e];
  // Even with permutation off, two seeds' edges rarely coincide; allow 5%.
  EXPECT_LT(same, a.src.size() / 20);
}

// The quadrant of each level, counted over every edge: the top level alone and all levels
// together, each proportion within 5 standard errors of (a, b, c, d).
TEST_P(RmatTest, QuadrantStatisticsMatchABC) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  const double params[][3] = {{0.57, 0.19, 0.19}, {0.25, 0.25, 0.25}, {0.45, 0.15, 0.3}, {0.5, 0.25, 0.25}};
  int64_t scale = 12;
  for (const auto& abc : params) {
    RmatOptions o;
    o.scale = scale;
    o.a = abc[0];
    o.b = abc[1];
    o.c = abc[2];
    o.seed = seed;
    o.permute = false;  // the labels are the quadrant bits
    SCOPED_TRACE(::testing::Message() << "a b c " << o.a << " " << o.b << " " << o.c << " scale " << scale);
    const Edges g = RunRmat(GetParam(), o);
    const double want[4] = {o.a, o.b, o.c, 1 - o.a - o.b - o.c};
    double top[4] = {}, all[4] = {};
    for (size_t e = 0; e < g.src.size(); ++e) {
      for (int64_t l = 0; l < scale; ++l) {
        const int q = static_cast<int>(2 * ((g.src[e] >> (scale - 1 - l)) & 1) + ((g.dst[e] >> (scale - 1 - l)) & 1));
        all[q] += 1;
        if (l == 0) top[q] += 1;
      }
    }
    const double edges = static_cast<double>(g.src.size());
    for (int q = 0; q < 4; ++q) {
      const double se_top = std::sqrt(want[q] * (1 - want[q]) / edges);
      const double se_all = std::sqrt(want[q] * (1 - want[q]) / (edges * scale));
      EXPECT_NEAR(top[q] / edges, want[q], 5 * se_top + 1e-4) << "quadrant " << q << " (top level)";
      EXPECT_NEAR(all[q] / (edges * scale), want[q], 5 * se_all + 1e-4) << "quadrant " << q << " (all levels)";
    }
    if (want[3] == 0) {
      EXPECT_EQ(all[3], 0) << "d = 0 must never be drawn";
    }
    scale = scale == 14 ? 12 : scale + 1;  // scales 12 to 14
  }
}

// With the same seed, permute on and off give the same edges up to one bijection of the
// labels: a consistent, injective map, so equal degree multisets; and after it the degree
// no longer follows the id.
TEST_P(RmatTest, PermuteIsABijectionAndScramblesDegrees) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  for (int64_t scale : {1, 2, 5, 14}) {
    SCOPED_TRACE(::testing::Message() << "scale " << scale);
    RmatOptions o;
    o.scale = scale;
    o.seed = seed;
    o.permute = false;
    const Edges plain = RunRmat(GetParam(), o);
    o.permute = true;
    const Edges permuted = RunRmat(GetParam(), o);
    ASSERT_EQ(plain.src.size(), permuted.src.size());
    std::map<int64_t, int64_t> forward, backward;
    auto map_one = [&](int64_t from, int64_t to) {
      auto [f, new_f] = forward.emplace(from, to);
      auto [b, new_b] = backward.emplace(to, from);
      return f->second == to && b->second == from;
    };
    for (size_t e = 0; e < plain.src.size(); ++e) {
      ASSERT_TRUE(map_one(plain.src[e], permuted.src[e])) << "edge " << e;
      ASSERT_TRUE(map_one(plain.dst[e], permuted.dst[e])) << "edge " << e;
    }
    const int64_t n = int64_t{1} << scale;
    std::vector<int64_t> deg_plain(n), deg_perm(n);
    for (int64_t s : plain.src) ++deg_plain[s];
    for (int64_t s : permuted.src) ++deg_perm[s];
    std::vector<int64_t> sorted_plain = deg_plain, sorted_perm = deg_perm;
    std::sort(sorted_plain.begin(), sorted_plain.end());
    std::sort(sorted_perm.begin(), sorted_perm.end());
    EXPECT_EQ(sorted_plain, sorted_perm);
    if (scale == 14) {
      // Pearson correlation of id and out-degree: strongly negative without the
      // permutation (low ids take quadrant a), near 0 (null sd 1 / sqrt(n) < 0.008) with it.
      auto corr = [&](const std::vector<int64_t>& deg) {
        double mx = 0, my = 0;
        for (int64_t v = 0; v < n; ++v) {
          mx += v;
          my += deg[v];
        }
        mx /= n;
        my /= n;
        double sxy = 0, sxx = 0, syy = 0;
        for (int64_t v = 0; v < n; ++v) {
          sxy += (v - mx) * (deg[v] - my);
          sxx += (v - mx) * (v - mx);
          syy += (deg[v] - my) * (deg[v] - my);
        }
        return sxy / std::sqrt(sxx * syy);
      };
      EXPECT_LT(corr(deg_plain), -0.1);
      EXPECT_LT(std::fabs(corr(deg_perm)), 0.04);
      EXPECT_NE(std::max_element(deg_perm.begin(), deg_perm.end()) - deg_perm.begin(), 0);
    }
  }
}

// Not per device: one test runs both and compares them.
TEST(RmatCudaTest, CpuAndCudaAgreeBitForBit) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  for (DataType dt : kIndexTypes) {
    for (int64_t scale : {1, 4, 9, 16, 17, 20, 23}) {
      for (bool permute : {true, false}) {
        RmatOptions o;
        o.scale = scale;
        o.edge_factor = scale >= 20 ? 2 : 16;
        o.seed = seed ^ static_cast<uint64_t>(scale);
        o.permute = permute;
        o.dtype = dt;
        SCOPED_TRACE(::testing::Message() << DataTypeName(dt) << " scale " << scale << " permute " << permute);
        auto cpu = Generate("rmat", DeviceType::kCpu, o.ToAttrs());
        for (int64_t offset : {0, 1}) {
          auto cuda = Generate("rmat", DeviceType::kCuda, o.ToAttrs(), offset);
          ASSERT_TRUE(cpu.ok() && cuda.ok());
          EXPECT_EQ(Bytes((*cpu)[0]), Bytes((*cuda)[0]));
          EXPECT_EQ(Bytes((*cpu)[1]), Bytes((*cuda)[1]));
        }
      }
    }
  }
}

TEST(RmatErrorsTest, BadAttributesNameTheOpAndAttribute) {
  const std::pair<Attrs, std::string> cases[] = {
      {{{"scale", 0}}, "attribute 'scale' is 0; it must be in [1, 31]"},
      {{{"scale", 32}}, "attribute 'scale' is 32"},
      {{{"scale", -5}}, "attribute 'scale' is -5"},
      {{{"scale", 4}, {"edge_factor", -1}}, "attribute 'edge_factor' is -1"},
      {{{"scale", 31}, {"edge_factor", 1024}}, "edge_factor * 2^scale = 1024 * 2^31"},
      {{{"scale", 4}, {"a", 1.5}}, "attribute 'a' is 1.5"},
      {{{"scale", 4}, {"b", -0.25}}, "attribute 'b' is -0.25"},
      {{{"scale", 4}, {"c", std::nan("")}}, "attribute 'c' is nan"},
      {{{"scale", 4}, {"a", 0.6}, {"b", 0.3}, {"c", 0.3}}, "'a' + 'b' + 'c' = 1.2 exceed 1"},
      {{{"scale", 4}, {"dtype", DataType::kFloat32}}, "attribute 'dtype' is float32; rmat's ids are int32 or int64"},
  };
  for (const auto& [attrs, part] : cases) {
    const std::string msg = ErrorOf("rmat", attrs);
    EXPECT_TRUE(Contains(msg, "op 'rmat'"));
    EXPECT_TRUE(Contains(msg, part));
  }
  EXPECT_TRUE(Contains(ErrorOf("rmat", {}), "scale")) << "scale is required";
  // a + b + c = 1 within rounding is fine (d = 0).
  EXPECT_EQ(ErrorOf("rmat", {{"scale", 4}, {"a", 0.1}, {"b", 0.2}, {"c", 0.7}}), "(the call succeeded)");
}

// ---- CSR references --------------------------------------------------------------------

struct HostCsr {
  std::vector<int64_t> indptr, indices;
  std::vector<double> values;
};

// Checks the three outputs against `want`, every offset, index and value exactly.
void ExpectCsr(const std::vector<Tensor>& got, const HostCsr& want, DataType dt, DataType it) {
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].dtype(), DataType::kInt64);
  EXPECT_EQ(got[1].dtype(), it);
  EXPECT_EQ(got[2].dtype(), dt);
  EXPECT_EQ(Ints(got[0]), want.indptr);
  EXPECT_EQ(Ints(got[1]), want.indices);
  const std::vector<double> values = ToDoubles(got[2]);
  ASSERT_EQ(values.size(), want.values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    ASSERT_EQ(values[k], want.values[k]) << "entry " << k << " (column " << want.indices[k] << ")";
  }
}

// ---- stencil_csr -----------------------------------------------------------------------

// The Laplacian from the definition: for each grid point (row-major), every in-grid point
// at an offset in {-1, 0, 1}^d (box: any such offset; star: one nonzero coordinate) is a
// neighbour of value -1, the point itself has the neighbour count; sorted by column.
HostCsr StencilReference(const std::vector<int64_t>& grid, bool box) {
  const int dims = static_cast<int>(grid.size());
  int64_t rows = 1;
  for (int64_t n : grid) rows *= n;
  HostCsr a;
  a.indptr.push_back(0);
  std::vector<int64_t> x(dims), y(dims);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rest = r;
    for (int d = dims - 1; d >= 0; --d) {
      x[d] = rest % grid[d];
      rest /= grid[d];
    }
    std::vector<std::pair<int64_t, double>> row;
    int offsets = 1;
    for (int d = 0; d < dims; ++d) offsets *= 3;
    for (int o = 0; o < offsets; ++o) {
      int code = o, nonzero = 0;
      bool inside = true;
      for (int d = 0; d < dims; ++d) {
        const int off = code % 3 - 1;
        code /= 3;
        nonzero += off != 0;
        y[d] = x[d] + off;
        inside = inside && y[d] >= 0 && y[d] < grid[d];
      }
      if (!inside || nonzero == 0 || (!box && nonzero > 1)) continue;
      int64_t col = 0;
      for (int d = 0; d < dims; ++d) col = col * grid[d] + y[d];
      row.emplace_back(col, -1.0);
    }
    row.emplace_back(r, static_cast<double>(row.size()));
    std::sort(row.begin(), row.end());
    for (const auto& [col, v] : row) {
      a.indices.push_back(col);
      a.values.push_back(v);
    }
    a.indptr.push_back(static_cast<int64_t>(a.indices.size()));
  }
  return a;
}

class StencilTest : public ::kps::testing::PerDeviceTest {};

Attrs StencilAttrs(const std::vector<int64_t>& grid, int64_t points, DataType dt, DataType it) {
  return {{"grid", grid}, {"points", points}, {"dtype", dt}, {"index_dtype", it}};
}

TEST_P(StencilTest, MatchesTheDefinitionEveryDtypeAndStencil) {
  const std::vector<std::vector<int64_t>> grids = {{1, 1},    {1, 7},    {6, 1},    {2, 2},    {3, 4},    {7, 5},
                                                   {0, 3},    {3, 0},    {31, 33},  {1, 1, 1}, {2, 3, 4}, {5, 1, 3},
                                                   {1, 4, 1}, {4, 4, 4}, {0, 2, 2}, {9, 7, 11}};
  for (const auto& grid : grids) {
    const bool two_d = grid.size() == 2;
    for (int64_t points : two_d ? std::vector<int64_t>{0, 5, 9} : std::vector<int64_t>{0, 7, 27}) {
      const HostCsr want = StencilReference(grid, points == 9 || points == 27);
      for (DataType dt : kValueTypes) {
        for (DataType it : kIndexTypes) {
          SCOPED_TRACE(::testing::Message() << "grid " << ::testing::PrintToString(grid) << " points " << points << " "
                                            << DataTypeName(dt) << " " << DataTypeName(it));
          auto got = Generate("stencil_csr", GetParam(), StencilAttrs(grid, points, dt, it), /*offset=*/points % 2);
          ASSERT_TRUE(got.ok()) << got.status();
          ExpectCsr(*got, want, dt, it);
        }
      }
    }
  }
}

TEST_P(StencilTest, LargerGridsAndDefaults) {
  // Default points (5 / 7), dtype float32, index_dtype int64.
  auto two = Generate("stencil_csr", GetParam(), {{"grid", std::vector<int64_t>{300, 257}}});
  ASSERT_TRUE(two.ok()) << two.status();
  ExpectCsr(*two, StencilReference({300, 257}, false), DataType::kFloat32, DataType::kInt64);
  auto three = Generate("stencil_csr", GetParam(), StencilAttrs({40, 33, 29}, 27, DataType::kFloat64, DataType::kInt32),
                        /*offset=*/1);
  ASSERT_TRUE(three.ok()) << three.status();
  ExpectCsr(*three, StencilReference({40, 33, 29}, true), DataType::kFloat64, DataType::kInt32);
}

TEST_P(StencilTest, SizesPast2To31ByInference) {
  // 65536^2 rows: columns past int32, entries past 2^34; nothing is allocated.
  const std::vector<int64_t> grid = {65536, 65536};
  auto spec = MakeCall("stencil_csr", GetParam(), StencilAttrs(grid, 5, DataType::kFloat32, DataType::kInt64)).Infer();
  ASSERT_TRUE(spec.ok()) << spec.status();
  const int64_t rows = int64_t{1} << 32;
  EXPECT_EQ((*spec)[0].shape, Shape{rows + 1});
  EXPECT_EQ((*spec)[1].shape, Shape{rows + int64_t{2} * 2 * 65535 * 65536});
  spec = MakeCall("stencil_csr", GetParam(), StencilAttrs({2048, 2048, 1024}, 27, DataType::kFloat16, DataType::kInt64))
             .Infer();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((*spec)[2].shape, Shape{int64_t{6142} * 6142 * 3070});
}

// Not per device: one test runs both and compares them.
TEST(StencilCudaTest, CpuAndCudaAgreeBitForBit) {
  KPS_SKIP_WITHOUT_GPU();
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> cases = {
      {{1000, 999}, 9}, {{1, 100000}, 5}, {{100, 101, 102}, 27}, {{64, 1, 500}, 7}};
  for (const auto& [grid, points] : cases) {
    for (DataType dt : {DataType::kBFloat16, DataType::kFloat32}) {
      for (DataType it : kIndexTypes) {
        const Attrs attrs = StencilAttrs(grid, points, dt, it);
        auto cpu = Generate("stencil_csr", DeviceType::kCpu, attrs);
        auto cuda = Generate("stencil_csr", DeviceType::kCuda, attrs, /*offset=*/1);
        ASSERT_TRUE(cpu.ok() && cuda.ok());
        for (int i = 0; i < 3; ++i) EXPECT_EQ(Bytes((*cpu)[i]), Bytes((*cuda)[i])) << "output " << i;
      }
    }
  }
}

TEST(StencilErrorsTest, BadAttributesNameTheOpAndAttribute) {
  const std::pair<Attrs, std::string> cases[] = {
      {{{"grid", std::vector<int64_t>{5}}}, "attribute 'grid' has 1 dimensions; it must have 2 or 3"},
      {{{"grid", std::vector<int64_t>{2, 2, 2, 2}}}, "attribute 'grid' has 4 dimensions"},
      {{{"grid", std::vector<int64_t>{4, -1}}}, "attribute 'grid' has -1 at 1"},
      {{{"grid", std::vector<int64_t>{4, 4}}, {"points", 7}}, "attribute 'points' is 7; a 2-D grid takes 5 or 9"},
      {{{"grid", std::vector<int64_t>{4, 4, 4}}, {"points", 9}}, "a 3-D grid takes 7 or 27"},
      {{{"grid", std::vector<int64_t>{4, 4}}, {"dtype", DataType::kInt32}}, "attribute 'dtype' is int32"},
      {{{"grid", std::vector<int64_t>{4, 4}}, {"index_dtype", DataType::kFloat32}},
       "attribute 'index_dtype' is float32"},
      {{{"grid", std::vector<int64_t>{65536, 65536}}, {"index_dtype", DataType::kInt32}},
       "the largest column is 4294967295"},
      {{{"grid", std::vector<int64_t>{int64_t{1} << 21, int64_t{1} << 20}}}, "rows"},
      {{{"grid", std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40, 0}}}, "2^40"},
      {{{"grid", std::vector<int64_t>{int64_t{1} << 20, int64_t{1} << 19}}, {"points", 9}}, "entries"},
  };
  for (const auto& [attrs, part] : cases) {
    const std::string msg = ErrorOf("stencil_csr", attrs);
    EXPECT_TRUE(Contains(msg, "op 'stencil_csr'"));
    EXPECT_TRUE(Contains(msg, part));
  }
}

// ---- banded_csr ------------------------------------------------------------------------

// Significand bits of each value dtype.
int ValueBits(DataType dt) {
  switch (dt) {
    case DataType::kFloat16:
      return 11;
    case DataType::kBFloat16:
      return 8;
    case DataType::kFloat32:
      return 24;
    default:
      return 53;
  }
}

// The documented value of entry (r, c): the top b bits k of the Philox words of counter
// (r, c), v = (k - 2^(b-1)) / 2^(b-1).
double BandedValueReference(DataType dt, uint64_t seed, int64_t r, int64_t c) {
  const uint64_t ur = static_cast<uint64_t>(r), uc = static_cast<uint64_t>(c);
  const uint4 w = Philox4x32_10(uint4{static_cast<uint32_t>(ur), static_cast<uint32_t>(ur >> 32),
                                      static_cast<uint32_t>(uc), static_cast<uint32_t>(uc >> 32)},
                                PhiloxKey(seed));
  const int b = ValueBits(dt);
  const uint64_t bits = (static_cast<uint64_t>(w.x) << 32) | w.y;
  const double k = static_cast<double>(bits >> (64 - b));
  return (k - std::ldexp(1.0, b - 1)) / std::ldexp(1.0, b - 1);
}

HostCsr BandedReference(int64_t n, int64_t lower, int64_t upper, DataType dt, uint64_t seed, bool dominant) {
  HostCsr a;
  a.indptr.push_back(0);
  for (int64_t r = 0; r < n; ++r) {
    const int64_t lo = std::max<int64_t>(0, r - lower), hi = std::min<int64_t>(n - 1, r + upper);
    for (int64_t c = lo; c <= hi; ++c) {
      a.indices.push_back(c);
      a.values.push_back(dominant && c == r ? testing::RoundTo(dt, static_cast<double>(hi - lo + 1))
                                            : BandedValueReference(dt, seed, r, c));
    }
    a.indptr.push_back(static_cast<int64_t>(a.indices.size()));
  }
  return a;
}

Attrs BandedAttrs(int64_t n, int64_t lower, int64_t upper, DataType dt, DataType it, uint64_t seed,
                  bool dominant = false) {
  return {{"n", n},
          {"lower", lower},
          {"upper", upper},
          {"dtype", dt},
          {"index_dtype", it},
          {"seed", static_cast<int64_t>(seed)},
          {"dominant", dominant}};
}

class BandedTest : public ::kps::testing::PerDeviceTest {};

TEST_P(BandedTest, MatchesTheDefinitionEveryDtype) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  const std::vector<std::pair<int64_t, int64_t>> bands = {{0, 0}, {1, 1}, {2, 0}, {0, 3}, {5, 2}, {40, 1}, {200, 300}};
  for (int64_t n : {0, 1, 2, 5, 17, 100, 1031}) {
    for (const auto& [lower, upper] : bands) {
      for (DataType dt : kValueTypes) {
        for (DataType it : kIndexTypes) {
          for (bool dominant : {false, true}) {
            if (dominant && dt != DataType::kFloat32) continue;
            SCOPED_TRACE(::testing::Message()
                         << "n " << n << " lower " << lower << " upper " << upper << " " << DataTypeName(dt) << " "
                         << DataTypeName(it) << " dominant " << dominant);
            auto got = Generate("banded_csr", GetParam(), BandedAttrs(n, lower, upper, dt, it, seed, dominant),
                                /*offset=*/(n + lower) % 2);
            ASSERT_TRUE(got.ok()) << got.status();
            ExpectCsr(*got, BandedReference(n, lower, upper, dt, seed, dominant), dt, it);
          }
        }
      }
    }
  }
}

TEST_P(BandedTest, ValuesUniformInRangeAndSeedsDiffer) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  for (DataType dt : kValueTypes) {
    auto a = Generate("banded_csr", GetParam(), BandedAttrs(20000, 3, 4, dt, DataType::kInt32, seed));
    auto b = Generate("banded_csr", GetParam(), BandedAttrs(20000, 3, 4, dt, DataType::kInt32, seed + 1));
    ASSERT_TRUE(a.ok() && b.ok());
    const std::vector<double> va = ToDoubles((*a)[2]), vb = ToDoubles((*b)[2]);
    double sum = 0;
    size_t same = 0;
    for (size_t k = 0; k < va.size(); ++k) {
      ASSERT_TRUE(va[k] >= -1 && va[k] < 1) << va[k];
      sum += va[k];
      same += va[k] == vb[k];
    }
    // Mean 0 (minus half a step) within 5 standard errors (sd 1 / sqrt(3)).
    EXPECT_NEAR(sum / va.size(), 0, 5 / std::sqrt(3.0 * va.size()) + std::ldexp(1.0, 1 - ValueBits(dt)));
    EXPECT_LT(same, va.size() / 20) << DataTypeName(dt);
    EXPECT_EQ(Bytes((*a)[1]), Bytes((*b)[1])) << "the pattern does not depend on the seed";
  }
}

TEST_P(BandedTest, SizesPast2To31ByInference) {
  auto spec =
      MakeCall("banded_csr", GetParam(), BandedAttrs(int64_t{3} << 30, 2, 1, DataType::kFloat32, DataType::kInt64, 0))
          .Infer();
  ASSERT_TRUE(spec.ok()) << spec.status();
  const int64_t n = int64_t{3} << 30;
  EXPECT_EQ((*spec)[0].shape, Shape{n + 1});
  EXPECT_EQ((*spec)[1].shape, Shape{4 * n - 3 - 1});
  // Widths past n are clamped: a dense 5000 x 5000.
  spec = MakeCall("banded_csr", GetParam(),
                  BandedAttrs(5000, int64_t{1} << 50, int64_t{1} << 60, DataType::kFloat32, DataType::kInt32, 0))
             .Infer();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((*spec)[2].shape, Shape{25000000});
}

// Not per device: one test runs both and compares them.
TEST(BandedCudaTest, CpuAndCudaAgreeBitForBit) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> cases = {
      {300000, 3, 5}, {3000, 700, 500}, {1, 0, 0}, {777, 0, 0}, {100000, 0, 2}};
  for (const auto& [n, lower, upper] : cases) {
    for (DataType dt : kValueTypes) {
      for (DataType it : kIndexTypes) {
        const Attrs attrs = BandedAttrs(n, lower, upper, dt, it, seed, n == 777);
        auto cpu = Generate("banded_csr", DeviceType::kCpu, attrs);
        ASSERT_TRUE(cpu.ok()) << cpu.status();
        for (int64_t offset : {0, 1}) {
          auto cuda = Generate("banded_csr", DeviceType::kCuda, attrs, offset);
          ASSERT_TRUE(cuda.ok()) << cuda.status();
          for (int i = 0; i < 3; ++i) EXPECT_EQ(Bytes((*cpu)[i]), Bytes((*cuda)[i])) << "output " << i;
        }
      }
    }
  }
}

TEST(BandedErrorsTest, BadAttributesNameTheOpAndAttribute) {
  const std::pair<Attrs, std::string> cases[] = {
      {{{"n", -1}}, "attribute 'n' is -1; it must be >= 0"},
      {{{"n", 5}, {"lower", -2}}, "attribute 'lower' is -2"},
      {{{"n", 5}, {"upper", -3}}, "attribute 'upper' is -3"},
      {{{"n", int64_t{1} << 40}}, "rows"},
      {{{"n", int64_t{1} << 30}, {"lower", 1024}, {"upper", 1024}}, "entries"},
      {{{"n", (int64_t{1} << 31) + 1}, {"index_dtype", DataType::kInt32}}, "the largest column is 2147483648"},
      {{{"n", 5}, {"dtype", DataType::kInt64}}, "attribute 'dtype' is int64"},
      {{{"n", 5}, {"index_dtype", DataType::kInt16}}, "attribute 'index_dtype' is int16"},
  };
  for (const auto& [attrs, part] : cases) {
    const std::string msg = ErrorOf("banded_csr", attrs);
    EXPECT_TRUE(Contains(msg, "op 'banded_csr'"));
    EXPECT_TRUE(Contains(msg, part));
  }
  EXPECT_TRUE(Contains(ErrorOf("banded_csr", {}), "'n'")) << "n is required";
}

KPS_INSTANTIATE_ON_DEVICES(RmatTest);
KPS_INSTANTIATE_ON_DEVICES(StencilTest);
KPS_INSTANTIATE_ON_DEVICES(BandedTest);

}  // namespace
}  // namespace kps
