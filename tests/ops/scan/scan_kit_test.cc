// Every scan through the op test kit (testing/op_test.h): each dtype it registers, along
// the first, a middle and the last dim of rank-1 and rank-3 inputs, inclusive and
// exclusive, forward and reverse, misaligned and strided layouts, outputs poisoned twice,
// bitwise repeatable, CUDA against the CPU, and the schema's error cases. Values and
// tolerances per element are scan_check.h's: the independent references of
// tests/reference/scan.h and the same bounds as scan_test.cc.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ops/scan/scan_check.h"
#include "testing/op_test.h"
#include "testing/support.h"

namespace kps {
namespace {

using namespace ::kps::scan_test;

constexpr double kGamma = 0.9;  // discounted_cumsum's factor (not exact in float)

// out_dt's values of one line and their tolerances, as CheckScan computes them.
void ScanLine(const std::string& op, DataType dt, bool exclusive, bool reverse, const std::vector<double>& v,
              std::vector<std::vector<double>>& values, std::vector<std::vector<double>>& tols) {
  const DataType out_dt = reference::ScanOutDtype(op, dt);
  const size_t n = v.size();
  if (IsExtreme(op)) {
    const bool is_max = op == "cummax";
    const reference::ExtremeScan r =
        reference::CumExtreme(v, is_max, exclusive, reverse, reference::ExtremeIdentity(dt, is_max));
    values[0] = r.value;
    values[1].assign(r.index.begin(), r.index.end());
    tols[0].assign(n, 0.0);
    tols[1].assign(n, 0.0);
    return;
  }
  if (!IsFloatingPoint(dt)) {
    const std::vector<int64_t> r =
        op == "cumsum" ? reference::IntCumSum(v, exclusive, reverse) : reference::IntCumProd(v, exclusive, reverse);
    values[0].assign(r.begin(), r.end());
    return;
  }
  reference::FloatScan r;
  if (op == "cumsum") r = reference::CumSum(v, exclusive, reverse);
  if (op == "cumprod") r = reference::CumProd(v, exclusive, reverse);
  if (op == "logcumsumexp") r = reference::LogCumSumExp(v, exclusive, reverse);
  if (op == "discounted_cumsum") r = reference::DiscountedCumSum(v, kGamma, exclusive, reverse);
  const double eps = reference::AccEpsilon(dt), sqrt_n = std::sqrt(static_cast<double>(n));
  values[0] = r.value;
  tols[0].resize(n);
  for (size_t j = 0; j < n; ++j) {
    const double want = r.value[j];
    double tol = testing::Tolerance(out_dt, want);
    if (op == "cumsum") {
      tol += 4 * eps * sqrt_n * r.abs_sum[j];
    } else if (op == "cumprod") {
      tol += 4 * eps * sqrt_n * std::fabs(want);
    } else if (op == "logcumsumexp") {
      tol += eps * (16 * sqrt_n + 4 * std::fabs(want) + 8);
    } else {
      tol += 4 * eps * (sqrt_n * r.abs_sum[j] + r.count[j]);
    }
    tols[0][j] = tol;
  }
}

testing::OpTest Declare(const std::string& op, const std::vector<Shape>& shapes, const std::vector<int64_t>& dims) {
  testing::OpTest t(op);
  t.Input("x", op == "cumprod" ? testing::Values::Range(0.5, 1.5) : testing::Values{});
  for (int64_t dim : dims) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        testing::AttrSet a = {{"dim", dim}, {"exclusive", exclusive}, {"reverse", reverse}};
        if (op == "discounted_cumsum") a.push_back({"gamma", kGamma});
        t.AttrSet(a);
      }
    }
  }
  std::vector<std::vector<Shape>> sets;
  for (const Shape& s : shapes) sets.push_back({s});
  t.Shapes(sets);
  t.Deterministic();
  t.Reference([op](const testing::RefCall& c) {
    const DataType dt = c.dtype();
    const bool exclusive = c.Attr<bool>("exclusive"), reverse = c.Attr<bool>("reverse");
    std::vector<DataType> outs = {reference::ScanOutDtype(op, dt)};
    if (IsExtreme(op)) outs.push_back(DataType::kInt64);
    return c.AlongDim(c.Attr<int64_t>("dim"), outs,
                      [&](const std::vector<double>& line, std::vector<std::vector<double>>& values,
                          std::vector<std::vector<double>>& tols) {
                        ScanLine(op, dt, exclusive, reverse, line, values, tols);
                      });
  });
  return t;
}

class ScanKitTest : public ::kps::testing::PerDeviceTest {};

TEST_P(ScanKitTest, EveryScanThroughTheKit) {
  for (const std::string& op : AllOps()) {
    SCOPED_TRACE(op);
    Declare(op, {Shape{2, 3, 5}, Shape{3, 257, 2}, Shape{1, 1, 1}, Shape{4, 33, 65}}, {0, 1, 2, -1}).Run(GetParam());
    Declare(op, {Shape{1}, Shape{7}, Shape{4093}, Shape{65537}, Shape{0}}, {0}).NoErrorCases().Run(GetParam());
  }
}

KPS_INSTANTIATE_ON_DEVICES(ScanKitTest);

}  // namespace
}  // namespace kps
