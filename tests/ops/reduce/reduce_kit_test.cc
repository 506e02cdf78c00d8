// Every reduction through the op test kit (testing/op_test.h): each dtype it registers,
// dims subsets of rank-1 and rank-3 inputs with and without keepdim, empty inputs where
// the op allows them, misaligned and strided layouts, outputs poisoned twice, bitwise
// repeatable, CUDA against the CPU, and the schema's error cases. Each output element's
// value and tolerance come from reduce_check.h's Expected over its slice, the same
// independent references and bounds as reduce_test.cc.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ops/reduce/reduce_check.h"
#include "testing/op_test.h"
#include "testing/support.h"

namespace kps {
namespace {

using namespace ::kps::reduce_test;

// The attribute sets of one group of shapes.
std::vector<testing::AttrSet> DimsSets(const std::vector<std::vector<int64_t>>& dims) {
  std::vector<testing::AttrSet> sets;
  for (const std::vector<int64_t>& d : dims) {
    for (bool keepdim : {false, true}) sets.push_back({{"dims", d}, {"keepdim", keepdim}});
  }
  return sets;
}

// The declaration of `op` over `shapes` (all of one rank) and `dims` subsets.
testing::OpTest Declare(const std::string& op, const std::vector<Shape>& shapes,
                        const std::vector<std::vector<int64_t>>& dims) {
  testing::OpTest t(op);
  // prod over hundreds of values stays in range near 1; the others take the kit's
  // default values (floats in [-4, 4), integers in [-4, 4]).
  t.Input("x", op == "prod" ? testing::Values::Range(0.5, 1.5) : testing::Values{});
  for (const testing::AttrSet& a : DimsSets(dims)) t.AttrSet(a);
  std::vector<std::vector<Shape>> sets;
  for (const Shape& s : shapes) sets.push_back({s});
  t.Shapes(sets);
  t.Deterministic();
  t.Reference([op](const testing::RefCall& c) {
    const DataType dt = c.dtype();
    const double correction = op == "var" || op == "std" ? c.Attr<double>("correction") : 1.0;
    return c.Reduce(c.Attr<std::vector<int64_t>>("dims"), c.Attr<bool>("keepdim"),
                    [&](const std::vector<double>& slice, double* tol) {
                      const Want w = Expected(op, dt, slice, correction);
                      switch (w.kind) {
                        case Want::kInt: *tol = 0; return static_cast<double>(w.i);
                        case Want::kBool: *tol = 0; return w.b ? 1.0 : 0.0;
                        case Want::kExact: *tol = 0; return w.d;
                        case Want::kApprox: *tol = w.tol; return w.d;
                      }
                      return w.d;
                    },
                    reference::ReduceOutDtype(op, dt));
  });
  return t;
}

class ReduceKitTest : public ::kps::testing::PerDeviceTest {};

TEST_P(ReduceKitTest, EveryReductionThroughTheKit) {
  for (const std::string& op : AllOps()) {
    SCOPED_TRACE(op);
    Declare(op, {Shape{2, 3, 5}, Shape{3, 257, 2}, Shape{1, 1, 1}, Shape{4, 64, 33}},
            {{}, {0}, {1}, {2}, {-1}, {0, 2}, {1, 2}})
        .Run(GetParam());
    Declare(op, {Shape{1}, Shape{7}, Shape{4093}, Shape{65537}}, {{}, {0}}).NoErrorCases().Run(GetParam());
    if (!NeedsNonEmpty(op)) {
      Declare(op, {Shape{0}, Shape{3, 0, 2}}, {{}, {0}}).NoErrorCases().Run(GetParam());
    }
  }
}

KPS_INSTANTIATE_ON_DEVICES(ReduceKitTest);

}  // namespace
}  // namespace kps
