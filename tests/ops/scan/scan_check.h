// Shared by the scan tests: CheckScan runs one scan and compares every output element
// (values and, for cummax/cummin, indices) against the independent references of
// tests/reference/scan.h. Inputs come from tests/ops/reduce/reduce_check.h (MakeInput,
// Wrap, FromDoubles: random, grid and near-one values).
//
// Tolerances (float16/bfloat16/float32 accumulate in float, float64 in double; eps = the
// accumulator's epsilon, n = the scan length, terms = the elements combined into out[i]):
//   - integer cumsum/cumprod, cummax/cummin (values and indices): exact.
//   - float cumsum: exact (the output-rounded true prefix sum) for grid inputs, whose
//     partial sums are all exact in the accumulator; otherwise
//     Tolerance(out, ref) + 4 eps sqrt(n) sum|terms|.
//   - cumprod (near-one inputs): Tolerance(out, ref) + 4 eps sqrt(n) |ref|.
//   - logcumsumexp: Tolerance(out, ref) + eps (16 sqrt(n) + 4 |ref| + 8).
//   - discounted_cumsum: Tolerance(out, ref) + 4 eps (sqrt(n) sum|gamma^d x| +
//     sum d |gamma^d x|) (the second term, only for a gamma not exact in float: gamma
//     rounded to float, raised to the d-th power).
// NaN must be NaN and infinities (also where the reference overflows the output type) must
// match exactly.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/ops/reduce/reduce_check.h"
#include "tests/reference/scan.h"
#include "testing/support.h"

namespace kps {
namespace scan_test {

using reduce_test::AllDtypes;
using reduce_test::Data;
using reduce_test::FailureBudget;
using reduce_test::FailureParts;
using reduce_test::FloatDtypes;
using reduce_test::FromDoubles;
using reduce_test::HostBytes;
using reduce_test::MakeInput;
using ScanInput = reduce_test::ReduceInput;
using reduce_test::Wrap;

inline const std::vector<std::string>& AllOps() {
  static const std::vector<std::string> ops = {"cumsum", "cummax", "cummin", "cumprod", "logcumsumexp",
                                               "discounted_cumsum"};
  return ops;
}
inline std::vector<std::string> OpsFor(DataType dt) {
  std::vector<std::string> ops;
  for (const std::string& op : AllOps())
    if (IsFloatingPoint(dt) || !reference::ScanFloatOnly(op)) ops.push_back(op);
  return ops;
}
inline bool IsExtreme(const std::string& op) { return op == "cummax" || op == "cummin"; }

struct ScanAttrs {
  bool exclusive = false;
  bool reverse = false;
  bool set_exclusive = true;  // false: leave at the default (false)
  bool set_reverse = true;
  std::optional<double> gamma;  // discounted_cumsum (CheckScan sets 0.9 when missing)
};

inline std::string AttrsText(int64_t dim, const ScanAttrs& a) {
  std::ostringstream s;
  s << "dim=" << dim << " exclusive=" << a.exclusive << " reverse=" << a.reverse;
  if (a.gamma) s << " gamma=" << *a.gamma;
  return s.str();
}

inline absl::StatusOr<std::vector<Tensor>> RunScan(const std::string& op, const Tensor& x, int64_t dim,
                                                   const ScanAttrs& a = {}) {
  Call call(op);
  call.Input("x", x);
  call.Attr("dim", dim);
  if (a.set_exclusive) call.Attr("exclusive", a.exclusive);
  if (a.set_reverse) call.Attr("reverse", a.reverse);
  if (a.gamma) call.Attr("gamma", *a.gamma);
  return call.Run();
}

// Expected float value and tolerance at one position.
inline bool FloatMatches(double want, double tol, DataType out, double got) {
  if (std::isnan(want)) return std::isnan(got);
  const double rounded = testing::RoundTo(out, want);
  if (std::isinf(want) || std::isinf(rounded)) return got == rounded;
  return std::isfinite(got) && std::fabs(got - want) <= tol;
}

// Runs `op` along `dim` of in.x and checks every output element. in.data == kGrid makes
// float cumsum exact. Returns true when nothing failed.
inline bool CheckScan(const std::string& op, const ScanInput& in, int64_t dim, ScanAttrs a = {}) {
  const Tensor& x = in.x;
  const DataType dt = x.dtype();
  if (op == "discounted_cumsum" && !a.gamma) a.gamma = 0.9;
  std::ostringstream what;
  what << op << " " << DataTypeName(dt) << " " << x.shape().ToString() << (x.is_contiguous() ? "" : " (strided)")
       << " " << AttrsText(dim, a) << " data=" << reduce_test::DataName(in.data) << " seed=" << in.seed << " on "
       << DeviceTypeName(x.device());
  SCOPED_TRACE(what.str());
  const int parts_before = FailureParts();
  auto passed = [&] { return FailureParts() == parts_before; };

  const reference::ScanLayout l = reference::MakeScanLayout(x.shape(), dim);
  EXPECT_TRUE(l.ok) << "bad dim in the test";
  if (!l.ok) return false;
  auto outs = RunScan(op, x, dim, a);
  EXPECT_TRUE(outs.ok()) << outs.status();
  if (!outs.ok()) return false;
  const size_t n_outs = IsExtreme(op) ? 2 : 1;
  EXPECT_EQ(outs->size(), n_outs);
  if (outs->size() != n_outs) return false;
  const DataType out_dt = reference::ScanOutDtype(op, dt);
  for (size_t k = 0; k < n_outs; ++k) {
    const Tensor& o = (*outs)[k];
    const DataType want_dt = k == 0 ? out_dt : DataType::kInt64;
    EXPECT_EQ(o.shape(), x.shape()) << "output " << k;
    EXPECT_EQ(o.dtype(), want_dt) << "output " << k;
    EXPECT_EQ(o.device(), x.device()) << "output " << k;
    EXPECT_TRUE(o.is_contiguous()) << "output " << k;
    if (o.shape() != x.shape() || o.dtype() != want_dt) return false;
  }
  const int64_t numel = x.shape().numel();
  if (numel == 0) return passed();

  // What came back.
  std::vector<int64_t> got_i, got_idx;
  std::vector<double> got_d;
  std::vector<uint8_t> got_b;
  auto int64s = [&](const Tensor& t) {
    auto v = t.ToVector<int64_t>();
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : std::vector<int64_t>();
  };
  if (out_dt == DataType::kInt64) {
    got_i = int64s((*outs)[0]);
  } else if (out_dt == DataType::kBool) {
    got_b = HostBytes((*outs)[0]);
  } else {
    got_d = testing::ToDoubles((*outs)[0]);
  }
  if (IsExtreme(op)) got_idx = int64s((*outs)[1]);
  if (IsExtreme(op) && out_dt == DataType::kInt64) got_d.assign(got_i.begin(), got_i.end());  // values used: exact
  const size_t want_size = static_cast<size_t>(numel);
  const size_t got_size = out_dt == DataType::kInt64 ? got_i.size()
                          : out_dt == DataType::kBool ? got_b.size()
                                                      : got_d.size();
  EXPECT_EQ(got_size, want_size) << "output elements read back";
  if (IsExtreme(op)) EXPECT_EQ(got_idx.size(), want_size) << "index elements read back";
  if (got_size != want_size || (IsExtreme(op) && got_idx.size() != want_size)) return false;

  const bool float_in = IsFloatingPoint(dt);
  const double eps = reference::AccEpsilon(dt);
  const double sqrt_n = std::sqrt(static_cast<double>(l.len));
  const bool grid = in.data == Data::kGrid && float_in && op == "cumsum";
  int bad = 0;
  auto report = [&](int64_t e, int64_t line, int64_t j, const std::string& got, const std::string& want) {
    if (++bad <= 5) {
      ADD_FAILURE() << "element " << e << " (line " << line << ", position " << j << " of " << l.len
                    << "): got " << got << ", want " << want;
    }
  };
  for (int64_t line = 0; line < l.lines(); ++line) {
    const std::vector<double> v = reference::GatherLine(l, in.v, line);
    if (IsExtreme(op)) {
      const bool is_max = op == "cummax";
      const reference::ExtremeScan r =
          reference::CumExtreme(v, is_max, a.exclusive, a.reverse, reference::ExtremeIdentity(dt, is_max));
      for (int64_t j = 0; j < l.len; ++j) {
        const int64_t e = l.index(line, j);
        double got;
        bool ok;
        if (out_dt == DataType::kBool) {
          got = got_b[e];
          ok = got_b[e] == (r.value[j] != 0.0 ? 1 : 0);
        } else {
          got = got_d[e];
          ok = std::isnan(r.value[j]) ? std::isnan(got) : got == r.value[j];
        }
        ok = ok && got_idx[e] == r.index[j];
        if (!ok) {
          std::ostringstream g, w;
          g.precision(17);
          w.precision(17);
          g << got << " @ " << got_idx[e];
          w << r.value[j] << " @ " << r.index[j];
          report(e, line, j, g.str(), w.str());
        }
      }
    } else if (!float_in) {
      const std::vector<int64_t> r = op == "cumsum" ? reference::IntCumSum(v, a.exclusive, a.reverse)
                                                    : reference::IntCumProd(v, a.exclusive, a.reverse);
      for (int64_t j = 0; j < l.len; ++j) {
        const int64_t e = l.index(line, j);
        if (got_i[e] != r[j]) report(e, line, j, std::to_string(got_i[e]), std::to_string(r[j]));
      }
    } else {
      const bool grid_line = grid && reference::SumIsExactIn(v, dt);
      reference::FloatScan r;
      if (op == "cumsum") r = reference::CumSum(v, a.exclusive, a.reverse);
      if (op == "cumprod") r = reference::CumProd(v, a.exclusive, a.reverse);
      if (op == "logcumsumexp") r = reference::LogCumSumExp(v, a.exclusive, a.reverse);
      if (op == "discounted_cumsum") r = reference::DiscountedCumSum(v, *a.gamma, a.exclusive, a.reverse);
      for (int64_t j = 0; j < l.len; ++j) {
        const int64_t e = l.index(line, j);
        const double want = r.value[j];
        double tol = testing::Tolerance(out_dt, want);
        if (op == "cumsum") {
          tol = grid_line ? 0.0 : tol + 4 * eps * sqrt_n * r.abs_sum[j];
        } else if (op == "cumprod") {
          tol += 4 * eps * sqrt_n * std::fabs(want);
        } else if (op == "logcumsumexp") {
          tol += eps * (16 * sqrt_n + 4 * std::fabs(want) + 8);
        } else {
          // gamma^d is exact when gamma is (0.5, 1.0): no power term then.
          const bool gamma_exact = static_cast<double>(static_cast<float>(*a.gamma)) == *a.gamma;
          tol += 4 * eps * (sqrt_n * r.abs_sum[j] + (gamma_exact ? 0.0 : r.count[j]));
        }
        bool ok;
        if (grid_line) {
          const double rounded = testing::RoundTo(out_dt, want);
          ok = got_d[e] == rounded;
          if (!ok) {
            std::ostringstream g, w;
            g.precision(17);
            w.precision(17);
            g << got_d[e];
            w << rounded << " exactly";
            report(e, line, j, g.str(), w.str());
          }
          continue;
        }
        ok = FloatMatches(want, tol, out_dt, got_d[e]);
        if (!ok) {
          std::ostringstream g, w;
          g.precision(17);
          w.precision(17);
          g << got_d[e];
          w << want << " +- " << tol;
          report(e, line, j, g.str(), w.str());
        }
      }
    }
  }
  if (bad > 5) ADD_FAILURE() << bad << " of " << numel << " output elements wrong";
  return passed();
}

// The four exclusive/reverse combinations.
inline std::vector<ScanAttrs> AllFlags() {
  std::vector<ScanAttrs> f;
  for (bool ex : {false, true})
    for (bool rev : {false, true}) {
      ScanAttrs a;
      a.exclusive = ex;
      a.reverse = rev;
      f.push_back(a);
    }
  return f;
}

// The input an op gets: near-one values for cumprod, `other` for the rest.
inline const ScanInput& InputFor(const std::string& op, const ScanInput& other, const ScanInput& near_one) {
  return op == "cumprod" ? near_one : other;
}

}  // namespace scan_test
}  // namespace kps
