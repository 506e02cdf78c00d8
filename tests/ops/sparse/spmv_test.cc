// spmv on every device: random CSR matrices (unsorted columns, duplicates, empty rows) of
// every value dtype and index dtype pair, shapes around the CUDA merge-path tile (1792
// items) and far past it (a row of 300000 entries, 200000 empty rows), rectangular and
// empty matrices, the four semirings with and without y, alpha and beta, pattern
// matrices; against a double reference. Outputs are poisoned (NaN) before each call, so
// an unwritten row fails. Malformed CSR inputs are errors naming the input; unchecked,
// they run without faults. Runs are bitwise reproducible.
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

class SpmvTest : public ::kps::testing::PerDeviceTest {};

struct Options {
  std::string semiring = "plus_times";
  double alpha = 1, beta = 0;
  bool values = true, y = false, check = true;
  DataType ptr_type = DataType::kInt64, idx_type = DataType::kInt32;
};

absl::StatusOr<Tensor> RunSpmv(const Csr& a, const std::vector<double>& x, const std::vector<double>& y, DataType dt,
                               DeviceType dev, const Options& o) {
  auto put = [&](const std::vector<double>& v, DataType t) { return Put(v, t, dev); };
  Call call("spmv");
  call.Input("indptr", put(a.indptr, o.ptr_type)).Input("indices", put(a.indices, o.idx_type)).Input("x", put(x, dt));
  if (o.values) call.Input("values", put(a.values, dt));
  if (o.y) call.Input("y", put(y, dt));
  // A poisoned output: every row must be written.
  Tensor out = put(std::vector<double>(static_cast<size_t>(a.m), std::nan("")), dt);
  call.Output("out", out)
      .Attr("semiring", o.semiring)
      .Attr("alpha", o.alpha)
      .Attr("beta", o.beta)
      .Attr("check", o.check)
      .OnDevice(dev);
  KPS_RETURN_IF_ERROR(call.Run().status());
  return out;
}

// Checks spmv against the double reference; returns the output for reproducibility checks.
std::vector<double> Check(DeviceType dev, DataType dt, const Csr& a, const Options& o) {
  SCOPED_TRACE(std::string(DataTypeName(dt)) + " " + o.semiring + " m " + std::to_string(a.m) + " n " +
               std::to_string(a.n) + " nnz " + std::to_string(a.indices.size()) + (o.values ? "" : " pattern") +
               (o.y ? " with y" : "") + " indptr " + std::string(DataTypeName(o.ptr_type)) + " indices " +
               std::string(DataTypeName(o.idx_type)));
  const uint64_t seed = FreshSeed();
  std::vector<double> x = RandomValues(a.n, dt, seed);
  std::vector<double> y = RandomValues(a.m, dt, seed + 1);
  if (o.semiring == "or_and") {
    for (size_t i = 0; i < x.size(); i += 3) x[i] = 0;  // some false entries
  }
  auto out = RunSpmv(a, x, y, dt, dev, o);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  EXPECT_EQ(out->shape(), Shape{a.m});
  const std::vector<double> got = ToDoubles(*out);
  std::vector<double> want(static_cast<size_t>(a.m)), tol(static_cast<size_t>(a.m));
  for (int64_t r = 0; r < a.m; ++r) {
    double sum = SemiringZero(o.semiring), mag = 0;
    for (int64_t k = static_cast<int64_t>(a.indptr[r]); k < static_cast<int64_t>(a.indptr[r + 1]); ++k) {
      const double v = o.values ? a.values[k] : 1.0;
      const double t = SemiringMul(o.semiring, v, x[static_cast<size_t>(a.indices[k])]);
      sum = SemiringAdd(o.semiring, sum, t);
      mag += std::fabs(t);
    }
    double w;
    if (o.semiring == "plus_times") {
      w = o.alpha * sum + (o.y ? o.beta * y[r] : 0.0);
      mag = std::fabs(o.alpha) * mag + (o.y ? std::fabs(o.beta * y[r]) : 0.0);
    } else {
      w = o.y ? SemiringAdd(o.semiring, sum, y[r]) : sum;
      mag = std::fabs(w);
    }
    want[r] = w;
    const double eps = dt == DataType::kFloat64 ? 0x1p-52 : 0x1p-23;
    const double len = a.indptr[r + 1] - a.indptr[r] + 2;
    tol[r] = std::isinf(w) ? 0 : testing::Tolerance(dt, w) + 2 * len * eps * mag;
  }
  EXPECT_TRUE(AllClose(got, want, tol));
  return got;
}

TEST_P(SpmvTest, RandomMatricesEveryDtypeAndIndexType) {
  const uint64_t seed = FreshSeed();
  for (DataType dt : kFloatTypes) {
    for (DataType pt : {DataType::kInt32, DataType::kInt64}) {
      for (DataType it : {DataType::kInt32, DataType::kInt64}) {
        Options o;
        o.ptr_type = pt;
        o.idx_type = it;
        Check(GetParam(), dt, MakeCsr(Lengths(1000, 20, 0.2, seed), 777, dt, seed + 1), o);
      }
    }
  }
}

TEST_P(SpmvTest, ShapesAroundTheMergePathTile) {
  // m + nnz around multiples of the CUDA tile (1792 items) and of a thread's 7 items.
  const uint64_t seed = FreshSeed();
  for (int64_t m : {1, 2, 6, 7, 8, 447, 448, 449, 895, 896, 897, 1791, 1792, 1793, 3583, 3585}) {
    for (int64_t len : {0, 1, 3}) {
      const Csr a = MakeCsr(std::vector<int64_t>(m, len), 64, DataType::kFloat32, seed + m);
      Check(GetParam(), DataType::kFloat32, a, {});
    }
  }
  for (int64_t nnz : {1, 6, 7, 16, 17, 895, 896, 897, 1791, 1792, 4095, 4097}) {
    Check(GetParam(), DataType::kFloat32, MakeCsr({nnz}, 300, DataType::kFloat32, seed + nnz), {});
    Check(GetParam(), DataType::kFloat32, MakeCsr({0, nnz, 0}, 300, DataType::kFloat32, seed + nnz), {});
  }
}

// The CUDA kernel sums a tile's rows a thread per row where none has more than 32 entries
// in the tile (KPS_TUNE spmv.row_max), else walks the merge path: rows of 32 and 33, a
// 33 among shorter ones (one tile walks, its neighbours do not), rows that cross tiles either way,
// and empty rows among them. ctest's sparse_test_spmv_merge runs these with the walk only.
TEST_P(SpmvTest, RowsAroundTheThreadPerRowLimit) {
  const uint64_t seed = FreshSeed();
  for (int64_t len : {31, 32, 33}) {
    for (int64_t m : {1, 54, 55, 1000}) {
      Check(GetParam(), DataType::kFloat32, MakeCsr(std::vector<int64_t>(m, len), 333, DataType::kFloat32, seed + m),
            {});
    }
  }
  std::vector<int64_t> lengths = Lengths(3000, 32, 0.3, seed);
  for (size_t r = 700; r < lengths.size(); r += 900) lengths[r] = 33;
  Check(GetParam(), DataType::kFloat32, MakeCsr(lengths, 2000, DataType::kFloat32, seed + 1), {});
  Check(GetParam(), DataType::kFloat64, MakeCsr(lengths, 2000, DataType::kFloat64, seed + 2), {});
  Options o;
  o.semiring = "min_plus";
  o.y = true;
  Check(GetParam(), DataType::kFloat32, MakeCsr(lengths, 2000, DataType::kFloat32, seed + 3), o);
}

TEST_P(SpmvTest, LongRowsEmptyRowsAndRectangles) {
  const uint64_t seed = FreshSeed();
  // One row of 300000 entries among short ones: it crosses hundreds of tiles.
  std::vector<int64_t> lengths = Lengths(5000, 8, 0.3, seed);
  lengths[2500] = 300000;
  Check(GetParam(), DataType::kFloat32, MakeCsr(lengths, 100000, DataType::kFloat32, seed + 1), {});
  Check(GetParam(), DataType::kBFloat16, MakeCsr(lengths, 100000, DataType::kBFloat16, seed + 2), {});
  // Several long rows back to back, and long rows at both ends.
  Check(GetParam(), DataType::kFloat64, MakeCsr({20000, 30000, 5, 0, 40000}, 999, DataType::kFloat64, seed + 3), {});
  // 200000 rows, almost all empty.
  Check(GetParam(), DataType::kFloat32, MakeCsr(Lengths(200000, 3, 0.999, seed + 4), 50, DataType::kFloat32, seed + 5),
        {});
  // Tall (m >> n) and wide (n >> m).
  Check(GetParam(), DataType::kFloat16, MakeCsr(Lengths(30000, 4, 0.1, seed + 6), 3, DataType::kFloat16, seed + 7), {});
  Check(GetParam(), DataType::kFloat32, MakeCsr(Lengths(3, 5000, 0, seed + 8), 1 << 20, DataType::kFloat32, seed + 9),
        {});
}

TEST_P(SpmvTest, EmptyMatrices) {
  for (DataType dt : kFloatTypes) {
    Check(GetParam(), dt, MakeCsr({}, 5, dt, 1), {});        // no rows
    Check(GetParam(), dt, MakeCsr({0, 0, 0}, 5, dt, 1), {});  // no entries: out = 0
    Check(GetParam(), dt, MakeCsr({0, 0}, 0, dt, 1), {});     // no columns
    Options o;
    o.y = true;
    o.beta = 0.5;
    Check(GetParam(), dt, MakeCsr({0, 0, 0}, 5, dt, 1), o);  // out = beta * y
  }
}

TEST_P(SpmvTest, SemiringsAlphaBetaAndPatterns) {
  const uint64_t seed = FreshSeed();
  std::vector<int64_t> lengths = Lengths(3000, 40, 0.2, seed);
  lengths[7] = 5000;
  for (DataType dt : kFloatTypes) {
    const Csr a = MakeCsr(lengths, 2000, dt, seed + 1);
    for (const char* s : {"plus_times", "min_plus", "max_times", "or_and"}) {
      for (bool y : {false, true}) {
        for (bool values : {true, false}) {
          Options o;
          o.semiring = s;
          o.y = y;
          o.values = values;
          Check(GetParam(), dt, a, o);
        }
      }
    }
    Options o;
    o.alpha = -1.5;
    o.beta = 0.25;
    o.y = true;
    Check(GetParam(), dt, a, o);
  }
}

TEST_P(SpmvTest, RunsAreBitwiseReproducible) {
  const uint64_t seed = FreshSeed();
  std::vector<int64_t> lengths = Lengths(20000, 30, 0.3, seed);
  lengths[100] = 100000;
  const Csr a = MakeCsr(lengths, 5000, DataType::kFloat32, seed + 1);
  const std::vector<double> x = RandomValues(a.n, DataType::kFloat32, seed + 2);
  auto first = RunSpmv(a, x, {}, DataType::kFloat32, GetParam(), {});
  ASSERT_TRUE(first.ok()) << first.status();
  for (int rep = 0; rep < 3; ++rep) {
    auto again = RunSpmv(a, x, {}, DataType::kFloat32, GetParam(), {});
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(ToDoubles(*again), ToDoubles(*first));
  }
}

TEST_P(SpmvTest, MalformedMatricesAreErrorsNamingTheInput) {
  Csr good = MakeCsr({2, 0, 3}, 4, DataType::kFloat32, 3);
  const std::vector<double> x = RandomValues(4, DataType::kFloat32, 5);
  auto expect_error = [&](const Csr& a, const std::string& part) {
    for (DataType pt : {DataType::kInt32, DataType::kInt64}) {
      Options o;
      o.ptr_type = pt;
      o.idx_type = pt;
      auto r = RunSpmv(a, x, {}, DataType::kFloat32, GetParam(), o);
      ASSERT_FALSE(r.ok()) << part;
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_TRUE(Contains(std::string(r.status().message()), "op 'spmv'"));
      EXPECT_TRUE(Contains(std::string(r.status().message()), part));
      // Unchecked, the same matrix runs without faults (its result is unspecified).
      o.check = false;
      EXPECT_TRUE(RunSpmv(a, x, {}, DataType::kFloat32, GetParam(), o).ok()) << part;
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
  expect_error(a, "input 'indices' has 4 at 3 (row 2), outside [0, 4) (x's length");
  a = good;
  a.indices[0] = -1;
  expect_error(a, "input 'indices' has -1 at 0");
  a = good;
  a.indptr[1] = 1000;  // far past nnz, unchecked: still in bounds
  expect_error(a, "input 'indptr' decreases at 2");
}

TEST_P(SpmvTest, BadArgumentsNameTheOpAndArgument) {
  const Csr a = MakeCsr({1, 2}, 3, DataType::kFloat32, 1);
  const std::vector<double> x = RandomValues(3, DataType::kFloat32, 2);
  Options o;
  o.semiring = "plus_max";
  auto r = RunSpmv(a, x, {}, DataType::kFloat32, GetParam(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(std::string(r.status().message()), "attribute 'semiring' = 'plus_max'"));
  o.semiring = "min_plus";
  o.alpha = 2;
  r = RunSpmv(a, x, {}, DataType::kFloat32, GetParam(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(std::string(r.status().message()), "'alpha' and 'beta' scale in the plus_times semiring"));
  o = Options();
  o.y = true;
  r = RunSpmv(a, x, {1.0}, DataType::kFloat32, GetParam(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(std::string(r.status().message()), "input 'y' has shape [1] but the matrix has 2 rows"));
  Tensor xi = HostFromDoubles(x, Shape{3}, DataType::kInt32);
  Tensor ptr = HostFromDoubles(a.indptr, Shape{3}, DataType::kInt64);
  Tensor idx = HostFromDoubles(a.indices, Shape{3}, DataType::kInt32);
  auto ri = Call("spmv").Input("indptr", ptr).Input("indices", idx).Input("x", xi).Run();
  ASSERT_FALSE(ri.ok());
  EXPECT_TRUE(Contains(std::string(ri.status().message()), "input 'x' has dtype int32"));
  Tensor fptr = HostFromDoubles(a.indptr, Shape{3}, DataType::kFloat32);
  ri = Call("spmv").Input("indptr", fptr).Input("indices", idx).Input("x", HostFromDoubles(x, Shape{3},
                                                                                          DataType::kFloat32)).Run();
  ASSERT_FALSE(ri.ok());
  EXPECT_TRUE(Contains(std::string(ri.status().message()), "input 'indptr' has dtype float32"));
}

KPS_INSTANTIATE_ON_DEVICES(SpmvTest);

}  // namespace
}  // namespace kps
