// spmm on every device: random CSR matrices (unsorted columns, duplicates, empty rows) of
// every value dtype and index dtype pair times b of widths k around the CUDA kernel's
// switch points (lanes per group 1 .. 32, 16-byte vectors or single elements, one or
// several column chunks), long rows that cross many warp segments (and the fix-up's
// per-block folds), many and mostly empty rows (small and large merge segments),
// rectangular and empty matrices, the four semirings with and without c, alpha and beta,
// pattern matrices, and b as a transposed, strided or misaligned view; against a double
// reference. Outputs are poisoned (NaN) before each call, so an unwritten element fails.
// Malformed CSR inputs are errors naming the input; unchecked, they run without faults.
// Runs are bitwise reproducible.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "testing/support.h"
#include "tests/ops/check_util.h"
#include "tests/ops/sparse/sparse_check.h"

namespace kps {
namespace {

using ::kps::op_check::AllClose;
using ::kps::op_check::Layout;
using ::kps::op_check::Place;
using ::kps::op_check::RandomValues;
using ::kps::sparse_test::Csr;
using ::kps::sparse_test::kFloatTypes;
using ::kps::sparse_test::Lengths;
using ::kps::sparse_test::MakeCsr;
using ::kps::sparse_test::Put;
using ::kps::sparse_test::SemiringAdd;
using ::kps::sparse_test::SemiringMul;
using ::kps::sparse_test::SemiringZero;
using ::kps::testing::Contains;
using ::kps::testing::FreshSeed;
using ::kps::testing::HostFromDoubles;
using ::kps::testing::ToDoubles;

class SpmmTest : public ::kps::testing::PerDeviceTest {};

// How b is laid out: the kernels pack every layout, and take 16-byte vectors only where
// the packed rows are aligned.
enum class BLayout { kContiguous, kOffset, kStrided, kTransposed };

const char* BLayoutName(BLayout l) {
  switch (l) {
    case BLayout::kContiguous: return "contiguous";
    case BLayout::kOffset: return "offset";
    case BLayout::kStrided: return "strided";
    case BLayout::kTransposed: return "transposed";
  }
  return "?";
}

struct Options {
  std::string semiring = "plus_times";
  double alpha = 1, beta = 0;
  bool values = true, c = false, check = true;
  DataType ptr_type = DataType::kInt64, idx_type = DataType::kInt32;
  BLayout b_layout = BLayout::kContiguous;
  Layout c_layout = Layout::kContiguous;
};

// b ([n, k], row-major values) on `dev`, laid out as `layout`.
Tensor PlaceB(const std::vector<double>& b, int64_t n, int64_t k, DataType dt, DeviceType dev, BLayout layout) {
  switch (layout) {
    case BLayout::kOffset: return Place(b, Shape{n, k}, dt, dev, Layout::kOffset);
    case BLayout::kStrided: return Place(b, Shape{n, k}, dt, dev, Layout::kStrided);
    case BLayout::kTransposed: {
      // A [k, n] matrix holding b's transpose, viewed as [n, k].
      std::vector<double> t(b.size());
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < k; ++j) t[static_cast<size_t>(j * n + i)] = b[static_cast<size_t>(i * k + j)];
      }
      auto view = Place(t, Shape{k, n}, dt, dev, Layout::kContiguous).Transpose(0, 1);
      EXPECT_TRUE(view.ok()) << view.status();
      return *view;
    }
    default: return Place(b, Shape{n, k}, dt, dev, Layout::kContiguous);
  }
}

absl::StatusOr<Tensor> RunSpmm(const Csr& a, const std::vector<double>& b, int64_t k, const std::vector<double>& c,
                               DataType dt, DeviceType dev, const Options& o) {
  auto put = [&](const std::vector<double>& v, DataType t) { return Put(v, t, dev); };
  Call call("spmm");
  call.Input("indptr", put(a.indptr, o.ptr_type))
      .Input("indices", put(a.indices, o.idx_type))
      .Input("b", PlaceB(b, a.n, k, dt, dev, o.b_layout));
  if (o.values) call.Input("values", put(a.values, dt));
  if (o.c) call.Input("c", Place(c, Shape{a.m, k}, dt, dev, o.c_layout));
  // A poisoned output: every element must be written.
  Tensor out = Place(std::vector<double>(static_cast<size_t>(a.m * k), std::nan("")), Shape{a.m, k}, dt, dev,
                     Layout::kContiguous);
  call.Output("out", out)
      .Attr("semiring", o.semiring)
      .Attr("alpha", o.alpha)
      .Attr("beta", o.beta)
      .Attr("check", o.check)
      .OnDevice(dev);
  KPS_RETURN_IF_ERROR(call.Run().status());
  return out;
}

// Checks spmm against the double reference; returns the output for reproducibility checks.
std::vector<double> Check(DeviceType dev, DataType dt, const Csr& a, int64_t k, const Options& o) {
  SCOPED_TRACE(std::string(DataTypeName(dt)) + " " + o.semiring + " m " + std::to_string(a.m) + " n " +
               std::to_string(a.n) + " k " + std::to_string(k) + " nnz " + std::to_string(a.indices.size()) +
               (o.values ? "" : " pattern") + (o.c ? " with c" : "") + " alpha " + std::to_string(o.alpha) +
               " beta " + std::to_string(o.beta) + " indptr " + std::string(DataTypeName(o.ptr_type)) +
               " indices " + std::string(DataTypeName(o.idx_type)) + " b " + BLayoutName(o.b_layout) + " c " +
               op_check::LayoutName(o.c_layout));
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<double> b = RandomValues(a.n * k, dt, seed);
  std::vector<double> c = RandomValues(a.m * k, dt, seed + 1);
  if (o.semiring == "or_and") {
    for (size_t i = 0; i < b.size(); i += 3) b[i] = 0;  // some false entries
  }
  auto out = RunSpmm(a, b, k, c, dt, dev, o);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  EXPECT_EQ(out->shape(), (Shape{a.m, k}));
  const std::vector<double> got = ToDoubles(*out);
  const size_t mk = static_cast<size_t>(a.m * k);
  std::vector<double> want(mk), tol(mk), sum(static_cast<size_t>(k)), mag(static_cast<size_t>(k));
  const double eps = dt == DataType::kFloat64 ? 0x1p-52 : 0x1p-23;
  for (int64_t r = 0; r < a.m; ++r) {
    std::fill(sum.begin(), sum.end(), SemiringZero(o.semiring));
    std::fill(mag.begin(), mag.end(), 0.0);
    const int64_t lo = static_cast<int64_t>(a.indptr[r]), hi = static_cast<int64_t>(a.indptr[r + 1]);
    for (int64_t e = lo; e < hi; ++e) {
      const double v = o.values ? a.values[e] : 1.0;
      const double* brow = b.data() + static_cast<int64_t>(a.indices[e]) * k;
      for (int64_t j = 0; j < k; ++j) {
        const double t = SemiringMul(o.semiring, v, brow[j]);
        sum[j] = SemiringAdd(o.semiring, sum[j], t);
        mag[j] += std::fabs(t);
      }
    }
    for (int64_t j = 0; j < k; ++j) {
      const size_t i = static_cast<size_t>(r * k + j);
      double w, m = mag[j];
      if (o.semiring == "plus_times") {
        w = o.alpha * sum[j] + (o.c ? o.beta * c[i] : 0.0);
        m = std::fabs(o.alpha) * m + (o.c ? std::fabs(o.beta * c[i]) : 0.0);
      } else {
        w = o.c ? SemiringAdd(o.semiring, sum[j], c[i]) : sum[j];
        m = std::fabs(w);
      }
      want[i] = w;
      tol[i] = std::isinf(w) ? 0 : testing::Tolerance(dt, w) + 2 * static_cast<double>(hi - lo + 2) * eps * m;
    }
  }
  EXPECT_TRUE(AllClose(got, want, tol));
  return got;
}

TEST_P(SpmmTest, EveryDtypeAndIndexType) {
  const uint64_t seed = FreshSeed();
  for (DataType dt : kFloatTypes) {
    for (DataType pt : {DataType::kInt32, DataType::kInt64}) {
      for (DataType it : {DataType::kInt32, DataType::kInt64}) {
        Options o;
        o.ptr_type = pt;
        o.idx_type = it;
        const Csr a = MakeCsr(Lengths(300, 20, 0.2, seed), 177, dt, seed + 1);
        for (int64_t k : {1, 8, 33}) Check(GetParam(), dt, a, k, o);
      }
    }
  }
}

TEST_P(SpmmTest, EveryWidthOfB) {
  // The CUDA kernel's switch points: lanes per group 1, 2, 4, 8, 16, 32 (k over the vector
  // width), 16-byte vectors (k a multiple of 8 halves, 4 floats, 2 doubles) or single
  // elements, one column chunk or several (k past 32 vectors: 257 single elements is 9
  // chunks, 264 floats 3). A 3000-entry row crosses several warp segments.
  const uint64_t seed = FreshSeed();
  std::vector<int64_t> lengths = Lengths(400, 30, 0.2, seed);
  lengths[123] = 3000;
  for (DataType dt : kFloatTypes) {
    const Csr a = MakeCsr(lengths, 300, dt, seed + 1);
    for (int64_t k : {1, 2, 3, 4, 8, 16, 24, 31, 32, 33, 64, 100, 128, 257, 264}) {
      Check(GetParam(), dt, a, k, {});
    }
    Options o;
    o.c = true;
    o.alpha = 0.5;
    o.beta = -2;
    for (int64_t k : {3, 32, 100}) Check(GetParam(), dt, a, k, o);
  }
}

TEST_P(SpmmTest, LongRowsEmptyRowsAndRectangles) {
  const uint64_t seed = FreshSeed();
  // One row of 200000 entries among short ones: it crosses hundreds of warp segments, so
  // its fix-up folds whole blocks of carries.
  std::vector<int64_t> lengths = Lengths(5000, 8, 0.3, seed);
  lengths[2500] = 200000;
  for (int64_t k : {1, 8, 40, 128}) {
    Check(GetParam(), DataType::kFloat32, MakeCsr(lengths, 20000, DataType::kFloat32, seed + 1), k, {});
  }
  Check(GetParam(), DataType::kBFloat16, MakeCsr(lengths, 20000, DataType::kBFloat16, seed + 2), 64, {});
  // Several long rows back to back, and long rows at both ends.
  Check(GetParam(), DataType::kFloat64, MakeCsr({20000, 30000, 5, 0, 40000}, 999, DataType::kFloat64, seed + 3), 5,
        {});
  // 200000 rows, almost all empty.
  const Csr sparse = MakeCsr(Lengths(200000, 3, 0.999, seed + 4), 50, DataType::kFloat32, seed + 5);
  for (int64_t k : {3, 32}) Check(GetParam(), DataType::kFloat32, sparse, k, {});
  // Many short rows: 2.5M merge items, the largest warp segments.
  Check(GetParam(), DataType::kFloat32, MakeCsr(Lengths(300000, 15, 0.1, seed + 6), 4000, DataType::kFloat32,
                                                seed + 7),
        2, {});
  // About a million merge items with wide rows of b: the longest segments a chunk of 512
  // bytes takes (4 items per lane; 128 floats, 4 chunks of 64 doubles).
  const Csr many = MakeCsr(Lengths(100000, 20, 0.1, seed + 12), 3000, DataType::kFloat32, seed + 13);
  Check(GetParam(), DataType::kFloat32, many, 128, {});
  Check(GetParam(), DataType::kFloat64, MakeCsr(Lengths(50000, 20, 0.1, seed + 12), 3000, DataType::kFloat64,
                                                seed + 13),
        256, {});
  // Tall (m >> n) and wide (n >> m).
  Check(GetParam(), DataType::kFloat16, MakeCsr(Lengths(30000, 4, 0.1, seed + 8), 3, DataType::kFloat16, seed + 9),
        16, {});
  Check(GetParam(), DataType::kFloat32, MakeCsr(Lengths(3, 5000, 0, seed + 10), 1 << 18, DataType::kFloat32,
                                                seed + 11),
        4, {});
}

TEST_P(SpmmTest, EmptyMatrices) {
  for (DataType dt : kFloatTypes) {
    Check(GetParam(), dt, MakeCsr({}, 5, dt, 1), 4, {});         // no rows
    Check(GetParam(), dt, MakeCsr({0, 0, 0}, 5, dt, 1), 4, {});  // no entries: out = 0
    Check(GetParam(), dt, MakeCsr({0, 0}, 0, dt, 1), 3, {});     // no columns
    Check(GetParam(), dt, MakeCsr({2, 0, 1}, 4, dt, 1), 0, {});  // b has no columns
    Check(GetParam(), dt, MakeCsr({}, 0, dt, 1), 0, {});         // nothing at all
    Options o;
    o.c = true;
    o.beta = 0.5;
    Check(GetParam(), dt, MakeCsr({0, 0, 0}, 5, dt, 1), 6, o);  // out = beta * c
    o.semiring = "min_plus";
    o.beta = 0;
    Check(GetParam(), dt, MakeCsr({0, 0, 0}, 5, dt, 1), 6, o);  // out = min(+inf, c) = c
  }
}

TEST_P(SpmmTest, SemiringsAlphaBetaAndPatterns) {
  const uint64_t seed = FreshSeed();
  std::vector<int64_t> lengths = Lengths(1000, 40, 0.2, seed);
  lengths[7] = 5000;
  for (DataType dt : kFloatTypes) {
    const Csr a = MakeCsr(lengths, 700, dt, seed + 1);
    for (const char* s : {"plus_times", "min_plus", "max_times", "or_and"}) {
      for (bool c : {false, true}) {
        for (bool values : {true, false}) {
          Options o;
          o.semiring = s;
          o.c = c;
          o.values = values;
          for (int64_t k : {1, 3, 64}) Check(GetParam(), dt, a, k, o);
        }
      }
    }
    Options o;
    o.alpha = -1.5;
    o.beta = 0.25;
    o.c = true;
    Check(GetParam(), dt, a, 17, o);
    Check(GetParam(), dt, a, 64, o);
    o.beta = 0;  // c is not read
    Check(GetParam(), dt, a, 64, o);
  }
}

TEST_P(SpmmTest, StridedTransposedAndMisalignedOperands) {
  const uint64_t seed = FreshSeed();
  std::vector<int64_t> lengths = Lengths(700, 25, 0.2, seed);
  lengths[300] = 4000;
  for (DataType dt : {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64}) {
    const Csr a = MakeCsr(lengths, 500, dt, seed + 1);
    for (BLayout l : {BLayout::kOffset, BLayout::kStrided, BLayout::kTransposed}) {
      Options o;
      o.b_layout = l;
      for (int64_t k : {1, 8, 64}) Check(GetParam(), dt, a, k, o);
    }
    for (Layout l : {Layout::kOffset, Layout::kStrided}) {
      Options o;
      o.c = true;
      o.beta = 1.5;
      o.c_layout = l;
      for (int64_t k : {1, 64}) Check(GetParam(), dt, a, k, o);
    }
  }
}

TEST_P(SpmmTest, DuplicatesAndUnsortedColumns) {
  Csr a;
  a.n = 40;
  a.m = 3;
  // Row 0: column 5 a hundred times; row 1: columns in descending order; row 2: both.
  a.indptr = {0};
  for (int i = 0; i < 100; ++i) a.indices.push_back(5);
  a.indptr.push_back(static_cast<double>(a.indices.size()));
  for (int j = 39; j >= 0; --j) a.indices.push_back(j);
  a.indptr.push_back(static_cast<double>(a.indices.size()));
  for (int j = 39; j >= 0; j -= 3) {
    a.indices.push_back(j);
    a.indices.push_back(j);
  }
  a.indptr.push_back(static_cast<double>(a.indices.size()));
  for (DataType dt : kFloatTypes) {
    a.values = RandomValues(static_cast<int64_t>(a.indices.size()), dt, FreshSeed());
    for (int64_t k : {1, 5, 32, 40}) Check(GetParam(), dt, a, k, {});
  }
}

TEST_P(SpmmTest, RunsAreBitwiseReproducible) {
  const uint64_t seed = FreshSeed();
  std::vector<int64_t> lengths = Lengths(20000, 30, 0.3, seed);
  lengths[100] = 100000;
  for (DataType dt : {DataType::kBFloat16, DataType::kFloat32}) {
    const Csr a = MakeCsr(lengths, 3000, dt, seed + 1);
    for (int64_t k : {1, 8, 64, 100}) {
      const std::vector<double> b = RandomValues(a.n * k, dt, seed + 2);
      auto first = RunSpmm(a, b, k, {}, dt, GetParam(), {});
      ASSERT_TRUE(first.ok()) << first.status();
      const std::vector<double> want = ToDoubles(*first);
      for (int rep = 0; rep < 2; ++rep) {
        auto again = RunSpmm(a, b, k, {}, dt, GetParam(), {});
        ASSERT_TRUE(again.ok()) << again.status();
        const std::vector<double> got = ToDoubles(*again);
        ASSERT_EQ(got.size(), want.size());
        // Bitwise: NaN never appears here, so == compares every element exactly.
        EXPECT_TRUE(got == want) << DataTypeName(dt) << " k " << k;
      }
    }
  }
}

TEST_P(SpmmTest, MalformedMatricesAreErrorsNamingTheInput) {
  Csr good = MakeCsr({2, 0, 3}, 4, DataType::kFloat32, 3);
  auto expect_error = [&](const Csr& a, const std::string& part) {
    for (int64_t k : {1, 8, 64}) {
      const std::vector<double> b = RandomValues(4 * k, DataType::kFloat32, 5);
      for (DataType pt : {DataType::kInt32, DataType::kInt64}) {
        Options o;
        o.ptr_type = pt;
        o.idx_type = pt;
        auto r = RunSpmm(a, b, k, {}, DataType::kFloat32, GetParam(), o);
        ASSERT_FALSE(r.ok()) << part;
        EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
        EXPECT_TRUE(Contains(std::string(r.status().message()), "op 'spmm'")) << r.status();
        EXPECT_TRUE(Contains(std::string(r.status().message()), part)) << r.status();
        // Unchecked, the same matrix runs without faults (its result is unspecified).
        o.check = false;
        EXPECT_TRUE(RunSpmm(a, b, k, {}, DataType::kFloat32, GetParam(), o).ok()) << part;
      }
    }
  };
  Csr a = good;
  a.indptr[0] = 1;
  expect_error(a, "input 'indptr' starts at 1");
  a = good;
  a.indptr[2] = 1;
  expect_error(a, "input 'indptr' decreases at 2");
  a = good;
  a.indptr[3] = 4;
  expect_error(a, "ends at 4");
  a = good;
  a.indices[3] = 4;
  expect_error(a, "input 'indices' has 4 at 3 (row 2), outside [0, 4) (b's row count");
  a = good;
  a.indices[0] = -1;
  expect_error(a, "input 'indices' has -1 at 0");
  a = good;
  a.indptr[1] = 1000;  // far past nnz, unchecked: still in bounds
  expect_error(a, "input 'indptr' decreases at 2");
  a = good;
  a.indptr[1] = -1000;
  expect_error(a, "input 'indptr' decreases at 1");
}

TEST_P(SpmmTest, UncheckedMalformedLargeMatricesStayInBounds) {
  // Many segments and the fix-up, fed a shuffled indptr and columns out of range.
  Csr a = MakeCsr(Lengths(3000, 20, 0.2, 9), 100, DataType::kFloat32, 10);
  std::mt19937_64 gen(11);
  std::shuffle(a.indptr.begin() + 1, a.indptr.end() - 1, gen);
  for (size_t i = 0; i < a.indices.size(); i += 7) a.indices[i] = (i % 2 == 0) ? -5 : 100 + static_cast<double>(i);
  for (int64_t k : {1, 8, 33, 64}) {
    const std::vector<double> b = RandomValues(a.n * k, DataType::kFloat32, 12);
    Options o;
    o.check = false;
    EXPECT_TRUE(RunSpmm(a, b, k, {}, DataType::kFloat32, GetParam(), o).ok()) << k;
    o.check = true;
    EXPECT_FALSE(RunSpmm(a, b, k, {}, DataType::kFloat32, GetParam(), o).ok()) << k;
  }
}

TEST_P(SpmmTest, BadArgumentsNameTheOpAndArgument) {
  const Csr a = MakeCsr({1, 2}, 3, DataType::kFloat32, 1);
  const std::vector<double> b = RandomValues(3 * 4, DataType::kFloat32, 2);
  Options o;
  o.semiring = "plus_max";
  auto r = RunSpmm(a, b, 4, {}, DataType::kFloat32, GetParam(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(std::string(r.status().message()), "attribute 'semiring' = 'plus_max'")) << r.status();
  o.semiring = "min_plus";
  o.alpha = 2;
  r = RunSpmm(a, b, 4, {}, DataType::kFloat32, GetParam(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(std::string(r.status().message()), "'alpha' and 'beta' scale in the plus_times semiring"))
      << r.status();

  auto host = [](const std::vector<double>& v, Shape s, DataType t) { return HostFromDoubles(v, s, t); };
  const Tensor ptr = host(a.indptr, Shape{3}, DataType::kInt64);
  const Tensor idx = host(a.indices, Shape{3}, DataType::kInt32);
  const Tensor bt = host(b, Shape{3, 4}, DataType::kFloat32);
  auto expect = [](const absl::StatusOr<std::vector<Tensor>>& res, const std::string& part) {
    ASSERT_FALSE(res.ok()) << part;
    EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(std::string(res.status().message()), "op 'spmm'")) << res.status();
    EXPECT_TRUE(Contains(std::string(res.status().message()), part)) << res.status();
  };
  expect(Call("spmm").Input("indptr", ptr).Input("indices", idx).Input("b", host(b, Shape{12}, DataType::kFloat32))
             .Run(),
         "input 'b' has shape [12]; it must be 2-D [n, k]");
  expect(Call("spmm").Input("indptr", ptr).Input("indices", idx).Input("b", host(b, Shape{3, 4}, DataType::kInt32))
             .Run(),
         "input 'b' has dtype int32");
  expect(Call("spmm")
             .Input("indptr", ptr)
             .Input("indices", idx)
             .Input("values", host(a.values, Shape{3}, DataType::kFloat64))
             .Input("b", bt)
             .Run(),
         "input 'values' has dtype float64 but input 'b' has float32");
  expect(Call("spmm")
             .Input("indptr", ptr)
             .Input("indices", idx)
             .Input("values", host({1, 2}, Shape{2}, DataType::kFloat32))
             .Input("b", bt)
             .Run(),
         "input 'values' has shape [2] but input 'indices' has 3 entries");
  expect(Call("spmm")
             .Input("indptr", ptr)
             .Input("indices", idx)
             .Input("b", bt)
             .Input("c", host(std::vector<double>(8, 1.0), Shape{2, 3}, DataType::kFloat32))
             .Run(),
         "input 'c' has shape [2, 3] but the result is [2, 4]");
  expect(Call("spmm")
             .Input("indptr", ptr)
             .Input("indices", idx)
             .Input("b", bt)
             .Input("c", host(std::vector<double>(8, 1.0), Shape{2, 4}, DataType::kFloat16))
             .Run(),
         "input 'c' has dtype float16 but input 'b' has float32");
  expect(Call("spmm").Input("indptr", host(a.indptr, Shape{3}, DataType::kFloat32)).Input("indices", idx)
             .Input("b", bt).Run(),
         "input 'indptr' has dtype float32");
  expect(Call("spmm").Input("indptr", ptr).Input("indices", host(a.indices, Shape{1, 3}, DataType::kInt32))
             .Input("b", bt).Run(),
         "input 'indices' has rank 2");
}

KPS_INSTANTIATE_ON_DEVICES(SpmmTest);

}  // namespace
}  // namespace kps
