// The reductions' edge cases on every device: NaN and infinities (propagation, the first
// NaN's index, logsumexp's stable forms), ties in argmax/argmin (the lowest index, also
// deep inside long rows), empty reduced extents (identities, and the error for
// max/min/argmax/argmin), empty outputs, rank-0 inputs, var/std corrections, integer
// wrap and exactness, and the errors a caller can make.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "registry/scratch.h"
#include "tests/ops/reduce/reduce_check.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::Contains;
using ::kps::testing::FreshSeed;
using namespace ::kps::reduce_test;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

class ReduceSpecialTest : public ::kps::testing::PerDeviceTest {
 protected:
  // A tensor of `values` in dtype on the test's device.
  Tensor Make(const std::vector<double>& values, const Shape& shape, DataType dt) {
    return *FromDoubles(values, shape, dt).To(GetParam());
  }
};

// One row of each kind of special values, `n` long.
std::vector<std::vector<double>> SpecialRows(int64_t n, std::mt19937_64& gen) {
  std::uniform_real_distribution<double> u(-4, 4);
  std::uniform_int_distribution<int64_t> pos(0, n - 1);
  auto random_row = [&] {
    std::vector<double> r(n);
    for (double& x : r) x = u(gen);
    return r;
  };
  auto two_positions = [&] {
    int64_t a = pos(gen), b = pos(gen);
    while (b == a) b = pos(gen);
    return std::make_pair(std::min(a, b), std::max(a, b));
  };
  std::vector<std::vector<double>> rows;
  rows.push_back(random_row());  // finite
  {
    auto r = random_row();
    r[pos(gen)] = kNaN;  // one NaN
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
  rows.push_back(std::vector<double>(n, -kInf));  // all -inf: logsumexp -inf
  {
    auto r = random_row();
    auto [a, b] = two_positions();
    r[a] = kInf;
    r[b] = -kInf;  // sum NaN, max inf, logsumexp inf
    rows.push_back(r);
  }
  {
    auto r = random_row();
    auto [a, b] = two_positions();
    r[a] = kInf;
    r[b] = kNaN;  // NaN wins over +inf, also in logsumexp
    rows.push_back(r);
  }
  {
    std::vector<double> r(n, 1000.0);  // logsumexp must not overflow
    r[pos(gen)] = 999.0;
    rows.push_back(r);
  }
  {
    auto r = random_row();
    auto [a, b] = two_positions();
    r[a] = kNaN;
    r[b] = kNaN;  // argmax/argmin: the first NaN
    rows.push_back(r);
  }
  rows.push_back(std::vector<double>(n, kNaN));  // all NaN
  {
    std::vector<double> r(n, 0.0);  // zeros of both signs: any false, all false
    for (double& x : r)
      if (gen() & 1) x = -0.0;
    rows.push_back(r);
  }
  rows.push_back(std::vector<double>(n, kInf));  // all +inf
  {
    auto r = random_row();
    r[n - 1] = kNaN;  // NaN last
    rows.push_back(r);
  }
  rows.push_back(std::vector<double>(n, -1000.0));  // logsumexp must not underflow
  {
    std::vector<double> r(n, 0.0);
    r[pos(gen)] = 0.5;  // any true, all false
    rows.push_back(r);
  }
  {
    std::vector<double> r(n, 0.0);
    r[pos(gen)] = kNaN;  // NaN counts as true
    rows.push_back(r);
  }
  {
    std::vector<double> r(n, 2.0);
    r[pos(gen)] = kNaN;  // all true: NaN != 0
    rows.push_back(r);
  }
  return rows;
}

TEST_P(ReduceSpecialTest, NanAndInfinityRowsAndColumns) {
  FailureBudget budget;
  for (int64_t n : {1, 2, 37, 1025, 4097}) {
    for (DataType dt : FloatDtypes()) {
      const uint64_t seed = FreshSeed();
      std::mt19937_64 gen(seed);
      const std::vector<std::vector<double>> rows = SpecialRows(std::max<int64_t>(n, 2), gen);
      const int64_t k = static_cast<int64_t>(rows.size()), len = static_cast<int64_t>(rows[0].size());
      std::vector<double> by_row, by_col(k * len);
      for (const auto& r : rows) by_row.insert(by_row.end(), r.begin(), r.end());
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < len; ++j) by_col[j * k + i] = rows[i][j];
      const Tensor rm = Make(by_row, Shape{k, len}, dt);
      const Tensor cm = Make(by_col, Shape{len, k}, dt);
      ReduceInput row_major = Wrap(rm, seed), col_major = Wrap(cm, seed), transposed = Wrap(*rm.Transpose(0, 1), seed);
      for (const std::string& op : OpsFor(dt)) {
        if (!budget.Record(CheckReduce(op, row_major, {1}, false))) return;
        if (!budget.Record(CheckReduce(op, col_major, {0}, true))) return;
        if (!budget.Record(CheckReduce(op, transposed, {-2}, false))) return;
      }
    }
  }
}

TEST_P(ReduceSpecialTest, SpecialValuesSpelledOut) {
  for (DataType dt : FloatDtypes()) {
    SCOPED_TRACE(DataTypeName(dt));
    auto run = [&](const std::string& op, const std::vector<double>& v) {
      auto out = Call(op).Input("x", Make(v, Shape{static_cast<int64_t>(v.size())}, dt)).RunOne();
      EXPECT_TRUE(out.ok()) << out.status();
      return out.ok() ? *out : Tensor();
    };
    auto value = [&](const std::string& op, const std::vector<double>& v) {
      const Tensor t = run(op, v);
      return t.defined() ? testing::ToDoubles(t)[0] : -12345.0;
    };
    auto index = [&](const std::string& op, const std::vector<double>& v) {
      const Tensor t = run(op, v);
      return t.defined() ? (*t.ToVector<int64_t>())[0] : int64_t{-12345};
    };
    auto truth = [&](const std::string& op, const std::vector<double>& v) {
      const Tensor t = run(op, v);
      return t.defined() ? static_cast<int>(HostBytes(t)[0]) : -1;
    };
    EXPECT_TRUE(std::isnan(value("max", {1, kNaN, 3})));
    EXPECT_TRUE(std::isnan(value("min", {1, 3, kNaN})));
    EXPECT_EQ(value("max", {1, kInf, 3}), kInf);
    EXPECT_EQ(value("min", {1, -kInf, 3}), -kInf);
    EXPECT_EQ(index("argmax", {1, kNaN, 3, kNaN}), 1);
    EXPECT_EQ(index("argmin", {1, 0, -2, kNaN, kNaN}), 3);
    EXPECT_EQ(index("argmax", {3, 1, 3, 2}), 0);
    EXPECT_EQ(index("argmin", {2, 1, 3, 1}), 1);
    EXPECT_EQ(index("argmax", {-kInf, -kInf}), 0);
    EXPECT_EQ(truth("any", {0, kNaN}), 1);
    EXPECT_EQ(truth("any", {0, -0.0}), 0);
    EXPECT_EQ(truth("all", {kNaN, 1}), 1);
    EXPECT_EQ(truth("all", {kNaN, 0}), 0);
    EXPECT_EQ(value("logsumexp", {-kInf, -kInf, -kInf}), -kInf);
    EXPECT_EQ(value("logsumexp", {1, kInf, -kInf}), kInf);
    EXPECT_TRUE(std::isnan(value("logsumexp", {kNaN, kInf})));
    EXPECT_EQ(value("logsumexp", {-kInf, 0}), 0.0);
    EXPECT_NEAR(value("logsumexp", {1000, 1000}), testing::RoundTo(dt, 1000 + std::log(2.0)),
                testing::Tolerance(dt, 1000));
    EXPECT_NEAR(value("logsumexp", {-1000, -1000}), testing::RoundTo(dt, -1000 + std::log(2.0)),
                testing::Tolerance(dt, 1000));
    EXPECT_TRUE(std::isnan(value("sum", {kInf, -kInf})));
    EXPECT_EQ(value("sum", {kInf, 1}), kInf);
    EXPECT_TRUE(std::isnan(value("var", {1, kInf})));
    EXPECT_TRUE(std::isnan(value("std", {1, kNaN, 2})));
    EXPECT_TRUE(std::isnan(value("mean", {1, kNaN})));
    EXPECT_TRUE(std::isnan(value("prod", {0, kInf})));
    // Signed zeros: +0.0 beats -0.0 in max, -0.0 beats +0.0 in min, in a short row and in
    // long ones (the vector loads, several lanes, a split across blocks).
    for (int64_t n : {3, 4099, 300007}) {
      SCOPED_TRACE(n);
      std::vector<double> neg(n, -0.0), pos(n, 0.0);
      neg[n / 2] = 0.0;
      pos[n / 3] = -0.0;
      EXPECT_FALSE(std::signbit(value("max", neg)));
      EXPECT_TRUE(std::signbit(value("min", pos)));
      EXPECT_TRUE(std::signbit(value("max", std::vector<double>(n, -0.0))));
      EXPECT_FALSE(std::signbit(value("min", std::vector<double>(n, 0.0))));
    }
  }
}

// Rows whose extreme occurs exactly twice, at random places (often far apart and deep in
// the row, across threads and blocks), plus rows of few distinct values (ties everywhere).
TEST_P(ReduceSpecialTest, TiesGiveTheLowestIndex) {
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
        if (r % 3 == 2) {
          for (int64_t j = 0; j < n; ++j) row[j] = few(gen);  // ties everywhere
          continue;
        }
        for (int64_t j = 0; j < n; ++j) row[j] = val(gen);
        if (is_bool) continue;
        for (double extreme : {120.0, is_unsigned ? 0.0 : -120.0}) {
          int64_t a = pos(gen), b = pos(gen);
          if (r % 3 == 1) a = n / 2 + pos(gen) / 2, b = n / 2 + pos(gen) / 2;  // both in the back half
          row[std::min(a, b)] = extreme;
          row[std::min(std::max(a, b), n - 1)] = extreme;
        }
      }
      std::vector<double> vt(rows * n);  // the same rows as contiguous columns
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) vt[j * rows + r] = v[r * n + j];
      const Tensor t = *FromDoubles(v, Shape{rows, n}, dt).To(GetParam());
      const ReduceInput in = Wrap(t, seed), tr = Wrap(*t.Transpose(0, 1), seed);
      const ReduceInput cols = Wrap(*FromDoubles(vt, Shape{n, rows}, dt).To(GetParam()), seed);
      for (const std::string op : {"argmax", "argmin", "max", "min"}) {
        if (!budget.Record(CheckReduce(op, in, {1}, false))) return;
        if (!budget.Record(CheckReduce(op, in, {}, false))) return;
        if (!budget.Record(CheckReduce(op, tr, {0}, true))) return;     // a strided view: rows in memory
        if (!budget.Record(CheckReduce(op, cols, {0}, false))) return;  // long contiguous columns
        if (n <= 4097 && !budget.Record(CheckReduce(op, in, {0}, false))) return;
      }
    }
  }
}

// A reduced dim of size 0: identities (sum 0, prod 1, any false, all true, mean NaN,
// logsumexp -inf, var/std NaN) and an error naming the op and "empty" for
// max/min/argmax/argmin; an empty output (a kept dim of size 0) is fine for every op.
TEST_P(ReduceSpecialTest, EmptyExtentsAndEmptyOutputs) {
  FailureBudget budget;
  const std::vector<std::pair<Shape, std::vector<std::vector<int64_t>>>> cases = {
      {Shape{0}, {{}, {0}}},
      {Shape{3, 0}, {{1}, {0}, {}, {0, 1}}},
      {Shape{0, 4}, {{0}, {1}, {}}},
      {Shape{2, 0, 3}, {{1}, {0, 2}, {0}, {2}, {}}},
      {Shape{0, 0}, {{0}, {1}, {}}},
      {Shape{200003, 0}, {{1}}},  // more outputs than one pass of ReduceEmptyKernel's grid
  };
  for (const auto& [shape, dim_sets] : cases) {
    for (DataType dt : AllDtypes()) {
      const ReduceInput in = MakeInput(shape, dt, GetParam(), Data::kRandom, 1);
      for (const std::string& op : OpsFor(dt)) {
        for (const auto& dims : dim_sets) {
          for (bool keepdim : {false, true}) {
            if (!budget.Record(CheckReduce(op, in, dims, keepdim))) return;
          }
        }
      }
    }
  }
  // Spelled out.
  const Tensor x = *FromDoubles({}, Shape{3, 0}, DataType::kFloat32).To(GetParam());
  EXPECT_EQ(*RunReduce("sum", x, {1}, false)->ToVector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(*RunReduce("prod", x, {1}, true)->ToVector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(RunReduce("prod", x, {1}, true)->shape(), (Shape{3, 1}));
  EXPECT_EQ(*RunReduce("logsumexp", x, {1}, false)->ToVector<float>(), (std::vector<float>(3, -INFINITY)));
  for (const std::string op : {"max", "min", "argmax", "argmin"}) {
    auto r = RunReduce(op, x, {1}, false);
    ASSERT_FALSE(r.ok()) << op;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(std::string(r.status().message()), "op '" + op + "'"));
    EXPECT_TRUE(Contains(std::string(r.status().message()), "empty"));
    auto empty_out = RunReduce(op, x, {0}, false);  // output [0]: fine
    ASSERT_TRUE(empty_out.ok()) << empty_out.status();
    EXPECT_EQ(empty_out->shape(), Shape{0});
  }
  const Tensor i = *FromDoubles({}, Shape{0}, DataType::kInt32).To(GetParam());
  EXPECT_EQ(*RunReduce("sum", i, {}, false)->ToVector<int64_t>(), std::vector<int64_t>{0});
  EXPECT_EQ(*RunReduce("prod", i, {}, false)->ToVector<int64_t>(), std::vector<int64_t>{1});
  EXPECT_EQ(HostBytes(*RunReduce("any", i, {}, false)), std::vector<uint8_t>{0});
  EXPECT_EQ(HostBytes(*RunReduce("all", i, {}, false)), std::vector<uint8_t>{1});
}

TEST_P(ReduceSpecialTest, RankZeroInputs) {
  for (DataType dt : AllDtypes()) {
    for (Data data : {Data::kRandom, Data::kNearOne}) {
      const ReduceInput in = MakeInput(Shape{}, dt, GetParam(), data, FreshSeed());
      for (const std::string& op : OpsFor(dt)) {
        CheckReduce(op, in, {}, false);
        CheckReduce(op, in, {}, true);
        ReduceAttrs defaults;
        defaults.set_dims = defaults.set_keepdim = false;
        CheckReduce(op, in, {}, false, defaults);
        if (op == "var" || op == "std") {
          ReduceAttrs c0;
          c0.correction = 0.0;
          CheckReduce(op, in, {}, false, c0);  // one element, no correction: 0
        }
      }
    }
  }
  const Tensor s = *FromDoubles({-2.5}, Shape{}, DataType::kFloat32).To(GetParam());
  EXPECT_EQ(*RunReduce("sum", s, {}, false)->ToVector<float>(), std::vector<float>{-2.5f});
  EXPECT_EQ(*RunReduce("argmin", s, {}, true)->ToVector<int64_t>(), std::vector<int64_t>{0});
  EXPECT_TRUE(std::isnan((*RunReduce("var", s, {}, false)->ToVector<float>())[0]));  // N - 1 = 0
}

TEST_P(ReduceSpecialTest, VarianceCorrection) {
  FailureBudget budget;
  for (DataType dt : FloatDtypes()) {
    const ReduceInput in = MakeInput(Shape{7, 9}, dt, GetParam(), Data::kRandom, FreshSeed());
    for (double c : {0.0, 0.5, 1.0, 2.5, 8.0, 8.5, 9.0, 10.0, -1.0}) {  // N = 9 per row
      ReduceAttrs a;
      a.correction = c;
      for (const std::string op : {"var", "std"}) {
        if (!budget.Record(CheckReduce(op, in, {1}, false, a))) return;
        if (!budget.Record(CheckReduce(op, in, {0}, true, a))) return;
      }
    }
    for (double c : {62.0, 62.5, 63.0}) {  // N = 63 over everything
      ReduceAttrs a;
      a.correction = c;
      if (!budget.Record(CheckReduce("var", in, {}, false, a))) return;
    }
  }
  // An integer correction converts to float.
  const Tensor x = *FromDoubles({1, 2, 3, 4}, Shape{4}, DataType::kFloat64).To(GetParam());
  auto v = Call("var").Input("x", x).Attr("correction", 0).RunOne();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_DOUBLE_EQ((*v->ToVector<double>())[0], 1.25);
  auto s = Call("std").Input("x", x).RunOne();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NEAR((*s->ToVector<double>())[0], std::sqrt(5.0 / 3.0), 1e-15);
}

TEST_P(ReduceSpecialTest, IntegerWrapAndExactness) {
  const DeviceType dev = GetParam();
  auto make64 = [&](const std::vector<int64_t>& v) {
    return *Tensor::FromVector(v, Shape{static_cast<int64_t>(v.size())})->To(dev);
  };
  auto first64 = [](const absl::StatusOr<Tensor>& t) {
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? (*t->ToVector<int64_t>())[0] : int64_t{-12345};
  };
  const int64_t max64 = std::numeric_limits<int64_t>::max(), min64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(first64(RunReduce("sum", make64({max64, 1}), {}, false)), min64);
  EXPECT_EQ(first64(RunReduce("sum", make64({int64_t{1} << 62, int64_t{1} << 62, int64_t{1} << 62, int64_t{1} << 62, 5}),
                              {}, false)),
            5);
  EXPECT_EQ(first64(RunReduce("prod", make64({int64_t{1} << 32, int64_t{1} << 32}), {}, false)), 0);
  {
    std::vector<int64_t> threes(41, 3);
    uint64_t p = 1;
    for (int i = 0; i < 41; ++i) p *= 3;
    threes.push_back(-7);
    p *= static_cast<uint64_t>(int64_t{-7});
    EXPECT_EQ(first64(RunReduce("prod", make64(threes), {}, false)), static_cast<int64_t>(p));
  }
  EXPECT_EQ(first64(RunReduce("max", make64({min64, max64, 0}), {}, false)), max64);
  EXPECT_EQ(first64(RunReduce("min", make64({0, max64, min64}), {}, false)), min64);
  EXPECT_EQ(first64(RunReduce("argmax", make64({max64 - 1, max64, max64 - 2}), {}, false)), 1);
  EXPECT_EQ(first64(RunReduce("argmin", make64({min64 + 1, min64, min64 + 1}), {}, false)), 1);

  // Narrow integers accumulate in int64.
  auto filled = [&](double value, int64_t n, DataType dt) {
    return *FromDoubles(std::vector<double>(n, value), Shape{n}, dt).To(dev);
  };
  EXPECT_EQ(first64(RunReduce("sum", filled(2147483647.0, 1000, DataType::kInt32), {}, false)),
            int64_t{1000} * 2147483647);
  EXPECT_EQ(first64(RunReduce("sum", filled(255, 1000, DataType::kUInt8), {}, false)), 255000);
  EXPECT_EQ(first64(RunReduce("sum", filled(-128, 1000, DataType::kInt8), {}, false)), -128000);
  EXPECT_EQ(first64(RunReduce("sum", filled(-32768, 70000, DataType::kInt16), {}, false)), int64_t{-32768} * 70000);
  EXPECT_EQ(first64(RunReduce("sum", filled(1, 1000, DataType::kBool), {}, false)), 1000);
  EXPECT_EQ(first64(RunReduce("prod", filled(300, 3, DataType::kInt16), {}, false)), 27000000);
  EXPECT_EQ(first64(RunReduce("prod", filled(200, 2, DataType::kUInt8), {}, false)), 40000);
  EXPECT_EQ(first64(RunReduce("prod", filled(1, 5, DataType::kBool), {}, false)), 1);
  EXPECT_EQ(first64(RunReduce("prod", *FromDoubles({1, 1, 0, 1}, Shape{4}, DataType::kBool).To(dev), {}, false)), 0);
  {
    // 2^63 wraps to INT64_MIN; 2^64 to 0.
    EXPECT_EQ(first64(RunReduce("prod", filled(2, 63, DataType::kInt8), {}, false)), min64);
    EXPECT_EQ(first64(RunReduce("prod", filled(2, 64, DataType::kInt8), {}, false)), 0);
    EXPECT_EQ(first64(RunReduce("prod", filled(-2, 63, DataType::kInt32), {}, false)), min64);
  }

  // Comparisons in the input type, not through float: 2^24 + 1 vs 2^24, unsigned order.
  const Tensor i32 = *FromDoubles({16777216, 16777217, 16777216}, Shape{3}, DataType::kInt32).To(dev);
  EXPECT_EQ(first64(RunReduce("argmax", i32, {}, false)), 1);
  EXPECT_EQ(*RunReduce("max", i32, {}, false)->ToVector<int32_t>(), std::vector<int32_t>{16777217});
  EXPECT_EQ(first64(RunReduce("sum", i32, {}, false)), 50331649);
  {
    std::vector<double> v(1025, 16777216);
    v[700] = 16777217;
    v[900] = 16777217;
    EXPECT_EQ(first64(RunReduce("argmax", *FromDoubles(v, Shape{1025}, DataType::kInt32).To(dev), {}, false)), 700);
  }
  const Tensor u8 = *FromDoubles({0, 255, 128, 255}, Shape{4}, DataType::kUInt8).To(dev);
  EXPECT_EQ(*RunReduce("max", u8, {}, false)->ToVector<uint8_t>(), std::vector<uint8_t>{255});
  EXPECT_EQ(first64(RunReduce("argmax", u8, {}, false)), 1);
  EXPECT_EQ(first64(RunReduce("argmin", u8, {}, false)), 0);
  const Tensor i8 = *FromDoubles({127, -128, 0, -128}, Shape{4}, DataType::kInt8).To(dev);
  EXPECT_EQ(*RunReduce("min", i8, {}, false)->ToVector<int8_t>(), std::vector<int8_t>{-128});
  EXPECT_EQ(first64(RunReduce("argmin", i8, {}, false)), 1);
  EXPECT_EQ(first64(RunReduce("argmax", i8, {}, false)), 0);
}

// Every error names the op; dims errors name 'dims'; float-only ops on integer or bool
// inputs say "cast".
TEST_P(ReduceSpecialTest, BadArgumentsAreErrors) {
  auto expect_error = [](const absl::StatusOr<Tensor>& r, const std::string& op, const std::string& part,
                         const std::string& what) {
    SCOPED_TRACE(op + ": " + what);
    ASSERT_FALSE(r.ok()) << "succeeded with " << r->DebugString();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    const std::string msg(r.status().message());
    EXPECT_TRUE(Contains(msg, "op '" + op + "'"));
    if (!part.empty()) {
      EXPECT_TRUE(Contains(msg, part));
    }
  };
  const Tensor x = *testing::RandomTensor(Shape{2, 3}, DataType::kFloat32, FreshSeed()).To(GetParam());
  const Tensor scalar = *testing::RandomTensor(Shape{}, DataType::kFloat32, FreshSeed()).To(GetParam());
  const Tensor rank9 =
      *testing::RandomTensor(Shape{1, 2, 1, 1, 1, 1, 1, 1, 2}, DataType::kFloat32, FreshSeed()).To(GetParam());
  const Tensor rank8 = *testing::RandomTensor(Shape{1, 2, 1, 1, 1, 1, 1, 2}, DataType::kFloat32, FreshSeed()).To(GetParam());
  for (const std::string& op : AllOps()) {
    expect_error(RunReduce(op, x, {2}, false), op, "dims", "dim 2 of a rank-2 input");
    expect_error(RunReduce(op, x, {-3}, false), op, "dims", "dim -3 of a rank-2 input");
    expect_error(RunReduce(op, x, {100, 0}, true), op, "dims", "dim 100");
    expect_error(RunReduce(op, x, {1, 1}, false), op, "dims", "dims {1, 1}");
    expect_error(RunReduce(op, x, {0, -2}, false), op, "dims", "dims {0, -2}");
    expect_error(RunReduce(op, x, {1, 0, -1}, false), op, "dims", "dims {1, 0, -1}");
    expect_error(RunReduce(op, scalar, {0}, false), op, "dims", "dim 0 of a rank-0 input");
    expect_error(RunReduce(op, scalar, {-1}, false), op, "dims", "dim -1 of a rank-0 input");
    expect_error(RunReduce(op, rank9, {}, false), op, "", "a rank-9 input");
    expect_error(RunReduce(op, rank9, {8}, false), op, "", "a rank-9 input, dims {8}");
    auto ok8 = RunReduce(op, rank8, {7, 1}, false);
    EXPECT_TRUE(ok8.ok()) << op << " of rank 8: " << ok8.status();
    if (FloatOnly(op)) {
      for (DataType dt : {DataType::kBool, DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kInt32,
                          DataType::kInt64}) {
        const Tensor xi = *testing::RandomTensor(Shape{2, 3}, dt, FreshSeed()).To(GetParam());
        expect_error(RunReduce(op, xi, {1}, false), op, "cast", std::string("a ") + std::string(DataTypeName(dt)) + " input");
      }
    }
  }
  // The mean of int32, as the contract words it.
  const Tensor i = *testing::RandomTensor(Shape{4}, DataType::kInt32, FreshSeed()).To(GetParam());
  auto m = Call("mean").Input("x", i).RunOne();
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(std::string(m.status().message()), "cast")) << m.status();
}

// Split reductions (rows, columns and a full sum over many blocks, whose last block per
// group folds the partials) queued on three streams at once, without waits between them:
// every result is exact against a host reference (int32 sums and maxima; argmax's first
// index among many ties), and afterwards every ticket of every stream's scratch is back
// to zero. Sums (8-byte states), argmax (16) and max (4) interleave on each stream.
TEST(ReduceStreamsTest, SplitReductionsOnSeveralStreamsLeaveTicketsZero) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  struct Case {
    Shape shape;
    std::vector<int64_t> dims;
    std::string op;
  };
  const std::vector<Case> cases = {
      {Shape{3, 200003}, {1}, "sum"},         // rows: few outputs, long extents
      {Shape{50000, 40}, {0}, "sum"},         // columns
      {Shape{50000, 40}, {0}, "argmax"},      // columns, 16-byte partial states
      {Shape{(1 << 20) + 7}, {}, "sum"},      // everything
      {Shape{5, 30011, 8}, {1}, "argmax"},    // a middle dim
      {Shape{3, 200003}, {1}, "max"},         // 4-byte partial states
      {Shape{50000, 40}, {0}, "max"},
      {Shape{(1 << 20) + 7}, {}, "max"},
      {Shape{5, 30011, 8}, {1}, "max"},
  };
  std::vector<Tensor> inputs;
  std::vector<std::vector<int64_t>> want;
  for (size_t c = 0; c < cases.size(); ++c) {
    const Tensor host = ::kps::testing::RandomTensor(cases[c].shape, DataType::kInt32, seed + c);
    const std::vector<double> v = ::kps::testing::ToDoubles(host);
    // Outer x reduced x inner, with the reduced dims contiguous in each case above.
    const Shape& sh = cases[c].shape;
    int64_t outer = 1, red = 1, inner = 1;
    for (int d = 0; d < sh.rank(); ++d) {
      const bool reduced = cases[c].dims.empty() ||
                           std::find(cases[c].dims.begin(), cases[c].dims.end(), d) != cases[c].dims.end();
      if (reduced) {
        red *= sh[d];
      } else {
        (red == 1 ? outer : inner) *= sh[d];
      }
    }
    std::vector<int64_t> w(outer * inner);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t sum = 0, best = 0;
        for (int64_t r = 0; r < red; ++r) {
          const double x = v[(o * red + r) * inner + i];
          sum += static_cast<int64_t>(x);
          if (x > v[(o * red + best) * inner + i]) best = r;
        }
        const int64_t max = static_cast<int64_t>(v[(o * red + best) * inner + i]);
        w[o * inner + i] = cases[c].op == "sum" ? sum : cases[c].op == "max" ? max : best;
      }
    }
    want.push_back(std::move(w));
    inputs.push_back(*host.To(DeviceType::kCuda));
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto s1 = OwnedCudaStream::Create();
  auto s2 = OwnedCudaStream::Create();
  ASSERT_TRUE(s1.ok() && s2.ok());
  const std::vector<Stream> streams = {Stream::Cuda(), s1->stream(), s2->stream()};
  std::vector<std::vector<Tensor>> outs(streams.size());
  for (int round = 0; round < 3; ++round) {
    for (size_t c = 0; c < cases.size(); ++c) {
      for (size_t k = 0; k < streams.size(); ++k) {
        auto out = Call(cases[c].op).Input("x", inputs[c]).Attr("dims", cases[c].dims).OnStream(streams[k]).RunOne();
        ASSERT_TRUE(out.ok()) << out.status();
        outs[k].push_back(*out);
      }
    }
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (size_t k = 0; k < streams.size(); ++k) {
    for (size_t i = 0; i < outs[k].size(); ++i) {
      const size_t c = i % cases.size();
      const std::vector<double> got = ::kps::testing::ToDoubles(outs[k][i]);
      ASSERT_EQ(got.size(), want[c].size());
      for (size_t j = 0; j < got.size(); ++j) {
        ASSERT_EQ(static_cast<int64_t>(got[j]), want[c][j])
            << cases[c].op << " of " << cases[c].shape.ToString() << " on stream " << k << ", output " << j;
      }
    }
    // Every ticket and packed word the stream's scratch holds (asking for none grows nothing).
    auto scratch = GetStreamScratch(streams[k], 0, 0);
    ASSERT_TRUE(scratch.ok()) << scratch.status();
    ASSERT_GE(scratch->num_tickets, 1024u);
    std::vector<unsigned> tickets(scratch->num_tickets, 0xdeadbeef);
    ASSERT_EQ(cudaMemcpy(tickets.data(), scratch->tickets, tickets.size() * sizeof(unsigned), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (unsigned t : tickets) ASSERT_EQ(t, 0u) << "stream " << k;
  }
}

KPS_INSTANTIATE_ON_DEVICES(ReduceSpecialTest);

}  // namespace
}  // namespace kps
