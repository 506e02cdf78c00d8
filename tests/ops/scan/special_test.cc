// The scans' edge cases on every device: NaN and infinities (cummax/cummin propagation
// and the latest NaN's index, logcumsumexp's stable forms), ties in cummax/cummin (the
// latest index, also far apart in long rows), exclusive identities, empty tensors (also
// along the scanned dim), rank-0 inputs, integer wrap of cumsum/cumprod, and the errors
// a caller can make.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/ops/scan/scan_check.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::Contains;
using ::kps::testing::FreshSeed;
using namespace ::kps::scan_test;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

class ScanSpecialTest : public ::kps::testing::PerDeviceTest {
 protected:
  Tensor Make(const std::vector<double>& values, const Shape& shape, DataType dt) {
    return *FromDoubles(values, shape, dt).To(GetParam());
  }
  Tensor Make1(const std::vector<double>& values, DataType dt) {
    return Make(values, Shape{static_cast<int64_t>(values.size())}, dt);
  }
};

// Rows of special values, `n` long (n >= 2).
std::vector<std::vector<double>> SpecialRows(int64_t n, std::mt19937_64& gen) {
  std::uniform_real_distribution<double> u(-4, 4);
  std::uniform_int_distribution<int64_t> pos(0, n - 1);
  auto random_row = [&] {
    std::vector<double> r(n);
    for (double& x : r) x = u(gen);
    return r;
  };
  auto two = [&] {
    int64_t a = pos(gen), b = pos(gen);
    while (b == a) b = pos(gen);
    return std::make_pair(std::min(a, b), std::max(a, b));
  };
  std::vector<std::vector<double>> rows;
  rows.push_back(random_row());
  {
    auto r = random_row();
    r[pos(gen)] = kNaN;
    rows.push_back(r);
  }
  {
    auto r = random_row();
    r[pos(gen)] = kInf;
    rows.push_back(r);
  }
  {
    auto r = random_row();
    r[pos(gen)] = -kInf;
    rows.push_back(r);
  }
  rows.push_back(std::vector<double>(n, -kInf));
  {
    auto r = random_row();
    auto [a, b] = two();
    r[a] = kInf;
    r[b] = -kInf;
    rows.push_back(r);
  }
  {
    auto r = random_row();
    auto [a, b] = two();
    r[a] = -kInf;
    r[b] = kInf;
    rows.push_back(r);
  }
  {
    auto r = random_row();
    auto [a, b] = two();
    r[a] = kInf;
    r[b] = kNaN;
    rows.push_back(r);
  }
  {
    std::vector<double> r(n, 1000.0);  // logcumsumexp must not overflow
    r[pos(gen)] = 999.0;
    rows.push_back(r);
  }
  {
    auto r = random_row();
    auto [a, b] = two();
    r[a] = kNaN;
    r[b] = kNaN;  // cummax/cummin: the latest NaN's index from b on
    rows.push_back(r);
  }
  rows.push_back(std::vector<double>(n, kNaN));
  rows.push_back(std::vector<double>(n, kInf));
  {
    auto r = random_row();
    r[0] = kNaN;  // NaN first
    rows.push_back(r);
  }
  {
    auto r = random_row();
    r[n - 1] = kNaN;  // NaN last (first for a reverse scan)
    rows.push_back(r);
  }
  rows.push_back(std::vector<double>(n, -1000.0));
  {
    std::vector<double> r(n, -kInf);  // logcumsumexp: -inf until the first finite value
    r[pos(gen)] = 1.5;
    rows.push_back(r);
  }
  return rows;
}

TEST_P(ScanSpecialTest, NanAndInfinityRowsAndColumns) {
  FailureBudget budget;
  for (int64_t n : {2, 37, 1025, 4097}) {
    for (DataType dt : FloatDtypes()) {
      const uint64_t seed = FreshSeed();
      std::mt19937_64 gen(seed);
      const std::vector<std::vector<double>> rows = SpecialRows(n, gen);
      const int64_t k = static_cast<int64_t>(rows.size());
      std::vector<double> by_row, by_col(k * n);
      for (const auto& r : rows) by_row.insert(by_row.end(), r.begin(), r.end());
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < n; ++j) by_col[j * k + i] = rows[i][j];
      const Tensor rm = Make(by_row, Shape{k, n}, dt);
      const ScanInput row_major = Wrap(rm, seed), col_major = Wrap(Make(by_col, Shape{n, k}, dt), seed),
                      transposed = Wrap(*rm.Transpose(0, 1), seed);
      for (const std::string op : {"cumsum", "cummax", "cummin", "logcumsumexp", "discounted_cumsum"}) {
        for (const ScanAttrs& a : AllFlags()) {
          if (!budget.Record(CheckScan(op, row_major, 1, a))) return;
          if (!budget.Record(CheckScan(op, col_major, 0, a))) return;
          if (!budget.Record(CheckScan(op, transposed, -2, a))) return;
        }
      }
    }
  }
}

TEST_P(ScanSpecialTest, SpecialValuesSpelledOut) {
  for (DataType dt : FloatDtypes()) {
    SCOPED_TRACE(DataTypeName(dt));
    auto run = [&](const std::string& op, const std::vector<double>& v, ScanAttrs a = {}) {
      auto out = RunScan(op, Make1(v, dt), 0, a);
      EXPECT_TRUE(out.ok()) << out.status();
      return out.ok() ? *out : std::vector<Tensor>(2);
    };
    auto values = [&](const std::string& op, const std::vector<double>& v, ScanAttrs a = {}) {
      const auto o = run(op, v, a);
      return o[0].defined() ? testing::ToDoubles(o[0]) : std::vector<double>();
    };
    auto indices = [&](const std::string& op, const std::vector<double>& v, ScanAttrs a = {}) {
      const auto o = run(op, v, a);
      return o.size() == 2 && o[1].defined() ? *o[1].ToVector<int64_t>() : std::vector<int64_t>();
    };
    auto is_nan = [](const std::vector<double>& v, size_t from) {
      for (size_t i = from; i < v.size(); ++i)
        if (!std::isnan(v[i])) return false;
      return v.size() > from;
    };
    ScanAttrs excl, rev;
    excl.exclusive = true;
    rev.reverse = true;
    // cummax/cummin: NaN is greater than everything; the latest NaN's index.
    {
      const std::vector<double> x = {1, kNaN, 3, kNaN, 0};
      const auto mx = values("cummax", x), mn = values("cummin", x);
      EXPECT_EQ(mx[0], 1);
      EXPECT_TRUE(is_nan(mx, 1));
      EXPECT_EQ(mn[0], 1);
      EXPECT_TRUE(is_nan(mn, 1));
      EXPECT_EQ(indices("cummax", x), (std::vector<int64_t>{0, 1, 1, 3, 3}));
      EXPECT_EQ(indices("cummin", x), (std::vector<int64_t>{0, 1, 1, 3, 3}));
      EXPECT_EQ(indices("cummax", x, excl), (std::vector<int64_t>{-1, 0, 1, 1, 3}));
      const auto ex = values("cummax", x, excl);
      EXPECT_EQ(ex[0], -kInf);
      EXPECT_EQ(ex[1], 1);
      EXPECT_EQ(values("cummin", x, excl)[0], kInf);
    }
    // Ties: the latest index takes over.
    EXPECT_EQ(indices("cummax", {2, 1, 2, 2, 0, 3, 3}), (std::vector<int64_t>{0, 0, 2, 3, 3, 5, 6}));
    EXPECT_EQ(indices("cummin", {2, 1, 2, 1, 1, 0, 0}), (std::vector<int64_t>{0, 1, 1, 3, 4, 5, 6}));
    EXPECT_EQ(indices("cummax", {-kInf, -kInf, kInf, kInf}), (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(values("cummax", {-kInf, 1, kInf, 2}), (std::vector<double>{-kInf, 1, kInf, kInf}));
    // logcumsumexp.
    EXPECT_EQ(values("logcumsumexp", {-kInf, -kInf, 0, -kInf}), (std::vector<double>{-kInf, -kInf, 0, 0}));
    EXPECT_EQ(values("logcumsumexp", {1, kInf, -kInf, 2})[1], kInf);
    EXPECT_EQ(values("logcumsumexp", {1, kInf, -kInf, 2})[3], kInf);
    {
      const auto l = values("logcumsumexp", {0, kNaN, kInf, 1});
      EXPECT_EQ(l[0], 0);
      EXPECT_TRUE(is_nan(l, 1));
    }
    {
      const auto l = values("logcumsumexp", {1000, 1000, 1000});
      ASSERT_EQ(l.size(), 3u);
      EXPECT_EQ(l[0], 1000);
      EXPECT_NEAR(l[1], testing::RoundTo(dt, 1000 + std::log(2.0)), testing::Tolerance(dt, 1000));
      EXPECT_NEAR(l[2], testing::RoundTo(dt, 1000 + std::log(3.0)), testing::Tolerance(dt, 1000));
      const auto e = values("logcumsumexp", {1000, 1000, 1000}, excl);
      EXPECT_EQ(e[0], -kInf);
      EXPECT_EQ(e[1], 1000);
      const auto r = values("logcumsumexp", {-1000, -1000, 3}, rev);
      EXPECT_NEAR(r[2], 3, testing::Tolerance(dt, 3));
      EXPECT_NEAR(r[0], 3, testing::Tolerance(dt, 3));
      EXPECT_NEAR(values("logcumsumexp", {-1000, -1000})[1], testing::RoundTo(dt, -1000 + std::log(2.0)),
                  testing::Tolerance(dt, 1000));
    }
    // cumsum / cumprod with infinities.
    {
      const auto s = values("cumsum", {1, kInf, 2, -kInf, 3});
      EXPECT_EQ(s[0], 1);
      EXPECT_EQ(s[1], kInf);
      EXPECT_EQ(s[2], kInf);
      EXPECT_TRUE(is_nan(s, 3));
      const auto p = values("cumprod", {2, kInf, 0, 5});
      EXPECT_EQ(p[1], kInf);
      EXPECT_TRUE(is_nan(p, 2));
      EXPECT_EQ(values("cumprod", {2, 3, 0.5}, excl), (std::vector<double>{1, 2, 6}));
      EXPECT_EQ(values("cumprod", {2, 3, 0.5}, rev), (std::vector<double>{3, 1.5, 0.5}));
      EXPECT_EQ(values("cumsum", {1, 2, 4}, excl), (std::vector<double>{0, 1, 3}));
    }
    // discounted_cumsum: out[i] = x[i] + gamma out[i - 1].
    {
      ScanAttrs g;
      g.gamma = 0.5;
      EXPECT_EQ(values("discounted_cumsum", {1, 2, 4}, g), (std::vector<double>{1, 2.5, 5.25}));
      g.reverse = true;
      EXPECT_EQ(values("discounted_cumsum", {1, 2, 4}, g), (std::vector<double>{3, 4, 4}));
      g.exclusive = true;
      EXPECT_EQ(values("discounted_cumsum", {1, 2, 4}, g), (std::vector<double>{2, 2, 0}));
      g.reverse = false;
      EXPECT_EQ(values("discounted_cumsum", {1, 2, 4}, g), (std::vector<double>{0, 0.5, 1.25}));
    }
  }
}

// Rows whose extreme occurs several times at random places (often far apart, across
// threads and blocks), and rows of few distinct values (ties everywhere): cummax/cummin
// must give the latest index, exactly, for every dtype.
TEST_P(ScanSpecialTest, TiesGiveTheLatestIndex) {
  FailureBudget budget;
  for (int64_t n : {2, 33, 1025, 4097, 100003}) {
    const int64_t rows = n > 5000 ? 2 : 6;
    for (DataType dt : AllDtypes()) {
      const uint64_t seed = FreshSeed();
      std::mt19937_64 gen(seed);
      const bool is_unsigned = dt == DataType::kUInt8, is_bool = dt == DataType::kBool;
      const int lo = is_bool ? 0 : is_unsigned ? 1 : -100, hi = is_bool ? 1 : 100;
      std::uniform_int_distribution<int> val(lo, hi), few(0, 2);
      std::uniform_int_distribution<int64_t> pos(0, n - 1);
      std::vector<double> v(rows * n);
      for (int64_t r = 0; r < rows; ++r) {
        double* row = &v[r * n];
        if (r % 3 == 2 || is_bool) {
          for (int64_t j = 0; j < n; ++j) row[j] = few(gen) % (is_bool ? 2 : 3);
          continue;
        }
        for (int64_t j = 0; j < n; ++j) row[j] = val(gen);
        for (double extreme : {120.0, is_unsigned ? 0.0 : -120.0}) {
          for (int t = 0; t < 3; ++t) row[r % 3 == 1 ? n / 2 + pos(gen) / 2 : pos(gen)] = extreme;
        }
      }
      std::vector<double> vt(rows * n);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) vt[j * rows + r] = v[r * n + j];
      const Tensor t = Make(v, Shape{rows, n}, dt);
      const ScanInput in = Wrap(t, seed), tr = Wrap(*t.Transpose(0, 1), seed),
                      cols = Wrap(Make(vt, Shape{n, rows}, dt), seed);
      for (const std::string op : {"cummax", "cummin"}) {
        for (const ScanAttrs& a : AllFlags()) {
          if (!budget.Record(CheckScan(op, in, 1, a))) return;
          if (!budget.Record(CheckScan(op, tr, 0, a))) return;
          if (!budget.Record(CheckScan(op, cols, 0, a))) return;
        }
      }
    }
  }
}

// Ties and NaNs down many columns: CUDA scans each K-vector of columns in one thread
// (scan.cols_per_sm = 256 columns per SM, 132 SMs: 33792) in batches of 8 lines, and
// fewer columns in three passes over segments; the latest index must win either way, and
// the latest NaN's. Few distinct values (ties everywhere), a NaN in every ninth column at
// a random line (a second one in every 27th), along an outer dim (lengths 37: batches
// and a partial one; 300: segments below the switch) and a middle dim.
TEST_P(ScanSpecialTest, TiesAndNaNsDownManyColumns) {
  FailureBudget budget;
  const bool gpu = GetParam() == DeviceType::kCuda;
  const std::vector<Shape> shapes =
      gpu ? std::vector<Shape>{Shape{37, 33792}, Shape{300, 33784}, Shape{3, 37, 11264}, Shape{3, 37, 11263}}
          : std::vector<Shape>{Shape{37, 40}, Shape{300, 24}, Shape{3, 37, 16}, Shape{3, 37, 11}};
  for (const Shape& shape : shapes) {
    const int d = shape.rank() - 2;
    const int64_t len = shape[d], inner = shape[d + 1], outer = shape.rank() == 3 ? shape[0] : 1;
    for (DataType dt : AllDtypes()) {
      const uint64_t seed = FreshSeed();
      std::mt19937_64 gen(seed);
      std::uniform_int_distribution<int> few(0, dt == DataType::kBool ? 1 : 2);
      std::uniform_int_distribution<int64_t> line(0, len - 1);
      std::vector<double> v(outer * len * inner);
      for (double& x : v) x = few(gen);
      if (IsFloatingPoint(dt)) {
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t c = 0; c < inner; c += 9) {
            v[(o * len + line(gen)) * inner + c] = kNaN;
            if (c % 27 == 0) v[(o * len + line(gen)) * inner + c] = kNaN;
          }
        }
      }
      const ScanInput in = Wrap(Make(v, shape, dt), seed);
      for (const std::string op : {"cummax", "cummin"}) {
        for (const ScanAttrs& a : AllFlags()) {
          if (!budget.Record(CheckScan(op, in, d, a))) return;
        }
      }
    }
  }
}

// Exclusive identities at the start: 0, 1, lowest/-inf with index -1, max/+inf, -inf, 0.
TEST_P(ScanSpecialTest, ExclusiveIdentities) {
  for (DataType dt : AllDtypes()) {
    SCOPED_TRACE(DataTypeName(dt));
    const Tensor x = Make({1, 1, 0}, Shape{3}, dt);
    for (bool reverse : {false, true}) {
      ScanAttrs a;
      a.exclusive = true;
      a.reverse = reverse;
      if (IsFloatingPoint(dt)) a.gamma = 0.5;
      const size_t first = reverse ? 2 : 0;
      for (const std::string& op : OpsFor(dt)) {
        ScanAttrs b = a;
        if (op != "discounted_cumsum") b.gamma.reset();
        auto out = RunScan(op, x, 0, b);
        ASSERT_TRUE(out.ok()) << op << ": " << out.status();
        const Tensor& o = (*out)[0];
        double got = o.dtype() == DataType::kInt64 ? static_cast<double>((*o.ToVector<int64_t>())[first])
                     : o.dtype() == DataType::kBool ? HostBytes(o)[first]
                                                    : testing::ToDoubles(o)[first];
        double want = 0;
        if (op == "cumprod") want = 1;
        if (op == "cummax") want = reference::ExtremeIdentity(dt, true);
        if (op == "cummin") want = reference::ExtremeIdentity(dt, false);
        if (op == "logcumsumexp") want = -kInf;
        EXPECT_EQ(got, want) << op << " reverse=" << reverse;
        if (IsExtreme(op)) EXPECT_EQ((*(*out)[1].ToVector<int64_t>())[first], -1) << op;
      }
    }
  }
}

// Empty tensors (a 0-length dim, also the scanned one) give empty outputs; scans along a
// dim of length 0 or 1 work.
TEST_P(ScanSpecialTest, EmptyTensors) {
  FailureBudget budget;
  const std::vector<Shape> shapes = {Shape{0}, Shape{3, 0}, Shape{0, 4}, Shape{2, 0, 3}, Shape{0, 0}, Shape{1, 0, 1}};
  for (const Shape& s : shapes) {
    for (DataType dt : AllDtypes()) {
      const ScanInput in = MakeInput(s, dt, GetParam(), Data::kRandom, 1);
      for (const std::string& op : OpsFor(dt)) {
        for (int d = 0; d < s.rank(); ++d) {
          for (const ScanAttrs& a : AllFlags()) {
            if (!budget.Record(CheckScan(op, in, a.reverse ? d - s.rank() : d, a))) return;
          }
        }
      }
    }
  }
}

TEST_P(ScanSpecialTest, RankZeroInputs) {
  for (DataType dt : AllDtypes()) {
    const ScanInput random = MakeInput(Shape{}, dt, GetParam(), Data::kRandom, FreshSeed());
    const ScanInput near_one = MakeInput(Shape{}, dt, GetParam(), Data::kNearOne, FreshSeed());
    for (const std::string& op : OpsFor(dt)) {
      for (int64_t dim : {0, -1}) {
        for (const ScanAttrs& a : AllFlags()) CheckScan(op, InputFor(op, random, near_one), dim, a);
      }
    }
  }
  const Tensor s = Make({-2.5}, Shape{}, DataType::kFloat32);
  auto out = RunScan("cumsum", s, -1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape{});
  EXPECT_EQ(*(*out)[0].ToVector<float>(), std::vector<float>{-2.5f});
  auto mx = RunScan("cummax", s, 0);
  ASSERT_TRUE(mx.ok()) << mx.status();
  EXPECT_EQ(*(*mx)[1].ToVector<int64_t>(), std::vector<int64_t>{0});
}

TEST_P(ScanSpecialTest, IntegerWrapAndExactness) {
  const DeviceType dev = GetParam();
  auto run64 = [&](const std::string& op, const Tensor& x, ScanAttrs a = {}) {
    auto out = RunScan(op, x, 0, a);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return std::vector<int64_t>();
    EXPECT_EQ((*out)[0].dtype(), DataType::kInt64);
    return *(*out)[0].ToVector<int64_t>();
  };
  const int64_t max64 = std::numeric_limits<int64_t>::max(), min64 = std::numeric_limits<int64_t>::min();
  const Tensor w = *Tensor::FromVector(std::vector<int64_t>{max64, 1, -1, 5}, Shape{4})->To(dev);
  EXPECT_EQ(run64("cumsum", w), (std::vector<int64_t>{max64, min64, max64, min64 + 4}));
  {
    std::vector<double> twos(70, 2);
    const auto p = run64("cumprod", Make1(twos, DataType::kInt8));
    ASSERT_EQ(p.size(), 70u);
    EXPECT_EQ(p[61], int64_t{1} << 62);
    EXPECT_EQ(p[62], min64);  // 2^63 wraps
    EXPECT_EQ(p[63], 0);      // 2^64
    EXPECT_EQ(p[69], 0);
  }
  // Narrow integers accumulate in int64.
  {
    const auto s = run64("cumsum", Make1(std::vector<double>(1000, 2147483647.0), DataType::kInt32));
    ASSERT_EQ(s.size(), 1000u);
    EXPECT_EQ(s[999], int64_t{1000} * 2147483647);
    const auto u = run64("cumsum", Make1(std::vector<double>(300, 255), DataType::kUInt8));
    EXPECT_EQ(u[299], 255 * 300);
    const auto b = run64("cumsum", Make1({1, 0, 1, 1}, DataType::kBool));
    EXPECT_EQ(b, (std::vector<int64_t>{1, 1, 2, 3}));
    const auto bp = run64("cumprod", Make1({1, 1, 0, 1}, DataType::kBool));
    EXPECT_EQ(bp, (std::vector<int64_t>{1, 1, 0, 0}));
    const auto i16 = run64("cumprod", Make1({300, 300, 300}, DataType::kInt16));
    EXPECT_EQ(i16, (std::vector<int64_t>{300, 90000, 27000000}));
  }
  // Comparisons in the input type, not through float.
  {
    const Tensor i32 = Make1({16777216, 16777217, 16777216, 16777217}, DataType::kInt32);
    auto out = RunScan("cummax", i32, 0);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*(*out)[0].ToVector<int32_t>(), (std::vector<int32_t>{16777216, 16777217, 16777217, 16777217}));
    EXPECT_EQ(*(*out)[1].ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 3}));
    const Tensor i64 = *Tensor::FromVector(std::vector<int64_t>{max64 - 1, max64, max64 - 1}, Shape{3})->To(dev);
    auto m64 = RunScan("cummin", i64, 0);
    ASSERT_TRUE(m64.ok()) << m64.status();
    EXPECT_EQ(*(*m64)[0].ToVector<int64_t>(), (std::vector<int64_t>{max64 - 1, max64 - 1, max64 - 1}));
    EXPECT_EQ(*(*m64)[1].ToVector<int64_t>(), (std::vector<int64_t>{0, 0, 2}));
    auto u8 = RunScan("cummax", Make1({0, 255, 128, 255}, DataType::kUInt8), 0);
    ASSERT_TRUE(u8.ok()) << u8.status();
    EXPECT_EQ(*(*u8)[0].ToVector<uint8_t>(), (std::vector<uint8_t>{0, 255, 255, 255}));
    EXPECT_EQ(*(*u8)[1].ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 3}));
  }
}

// Errors: dim out of range names the op and 'dim'; float-only ops on bool/integer inputs
// say "cast"; missing required attributes are errors.
TEST_P(ScanSpecialTest, BadArgumentsAreErrors) {
  auto expect_error = [](const absl::StatusOr<std::vector<Tensor>>& r, const std::string& op, const std::string& part,
                         const std::string& what) {
    SCOPED_TRACE(op + ": " + what);
    ASSERT_FALSE(r.ok()) << "succeeded";
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    const std::string msg(r.status().message());
    EXPECT_TRUE(Contains(msg, "op '" + op + "'"));
    if (!part.empty()) EXPECT_TRUE(Contains(msg, part));
  };
  const Tensor x = *testing::RandomTensor(Shape{2, 3}, DataType::kFloat32, FreshSeed()).To(GetParam());
  const Tensor scalar = *testing::RandomTensor(Shape{}, DataType::kFloat32, FreshSeed()).To(GetParam());
  const Tensor rank9 =
      *testing::RandomTensor(Shape{1, 2, 1, 1, 1, 1, 1, 1, 2}, DataType::kFloat32, FreshSeed()).To(GetParam());
  const Tensor rank8 = *testing::RandomTensor(Shape{1, 2, 1, 1, 1, 1, 1, 2}, DataType::kFloat32, FreshSeed()).To(GetParam());
  for (const std::string& op : AllOps()) {
    ScanAttrs a;
    if (op == "discounted_cumsum") a.gamma = 0.5;
    expect_error(RunScan(op, x, 2, a), op, "dim", "dim 2 of a rank-2 input");
    expect_error(RunScan(op, x, -3, a), op, "dim", "dim -3 of a rank-2 input");
    expect_error(RunScan(op, x, 100, a), op, "dim", "dim 100");
    expect_error(RunScan(op, scalar, 1, a), op, "dim", "dim 1 of a rank-0 input");
    expect_error(RunScan(op, scalar, -2, a), op, "dim", "dim -2 of a rank-0 input");
    expect_error(RunScan(op, rank9, 0, a), op, "", "a rank-9 input");
    auto ok8 = RunScan(op, rank8, 7, a);
    EXPECT_TRUE(ok8.ok()) << op << " of rank 8: " << ok8.status();
    {
      Call c(op);
      c.Input("x", x);
      if (a.gamma) c.Attr("gamma", *a.gamma);
      EXPECT_FALSE(c.Run().ok()) << op << " without 'dim'";
    }
    if (reference::ScanFloatOnly(op)) {
      for (DataType dt : {DataType::kBool, DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kInt32,
                          DataType::kInt64}) {
        const Tensor xi = *testing::RandomTensor(Shape{2, 3}, dt, FreshSeed()).To(GetParam());
        expect_error(RunScan(op, xi, 1, a), op, "cast", std::string("a ") + std::string(DataTypeName(dt)) + " input");
      }
    }
  }
  // As the contract words them.
  {
    auto r = RunScan("cumsum", x, 2);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Contains(std::string(r.status().message()), "op 'cumsum'"));
    EXPECT_TRUE(Contains(std::string(r.status().message()), "dim"));
    const Tensor i = *testing::RandomTensor(Shape{4}, DataType::kInt32, FreshSeed()).To(GetParam());
    auto l = RunScan("logcumsumexp", i, 0);
    ASSERT_FALSE(l.ok());
    EXPECT_TRUE(Contains(std::string(l.status().message()), "cast")) << l.status();
    auto g = RunScan("discounted_cumsum", x, 1);  // no gamma
    EXPECT_FALSE(g.ok()) << "discounted_cumsum without gamma must be an error";
  }
}

KPS_INSTANTIATE_ON_DEVICES(ScanSpecialTest);

}  // namespace
}  // namespace kps
