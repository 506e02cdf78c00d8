// The scan ops (cumsum, cumprod, cummax, cummin, logcumsumexp, discounted_cumsum) on
// every device and every dtype each is registered for: every dim (also negative) of
// shapes of rank 1 to 4, exclusive and reverse both ways, scan lengths around the warp,
// block and tile sizes along the last axis and along outer axes, a long 1-D scan, strided
// views and misaligned inputs, against the independent references of
// tests/reference/scan.h (tolerances: tests/ops/scan/scan_check.h).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/ops/scan/scan_check.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using namespace ::kps::scan_test;

class ScanTest : public ::kps::testing::PerDeviceTest {};

struct SweepOptions {
  bool all_flags = true;       // false: one exclusive/reverse combination per dim, rotating
  bool negative_too = false;   // also every dim written negative
  bool grid_sums = false;      // also cumsum of grid (exactly summable) float inputs
  const std::vector<DataType>* dtypes = nullptr;     // default: all 10
  const std::vector<std::string>* ops = nullptr;     // default: every op of the dtype
  int64_t offset = 0;          // inputs start this many elements into their buffer
};

// Every op and dtype along each of `dims` of `shape`. False once the budget is spent.
bool SweepShape(DeviceType dev, const Shape& shape, const std::vector<int64_t>& dims, FailureBudget& budget,
                const SweepOptions& opt = {}) {
  int rotate = 0;
  for (DataType dt : opt.dtypes ? *opt.dtypes : AllDtypes()) {
    const uint64_t seed = FreshSeed();
    const ScanInput random = MakeInput(shape, dt, dev, Data::kRandom, seed, opt.offset);
    const ScanInput near_one = MakeInput(shape, dt, dev, Data::kNearOne, seed + 1, opt.offset);
    ScanInput grid;
    if (opt.grid_sums && IsFloatingPoint(dt)) grid = MakeInput(shape, dt, dev, Data::kGrid, seed + 2, opt.offset);
    for (const std::string& op : OpsFor(dt)) {
      if (opt.ops && std::find(opt.ops->begin(), opt.ops->end(), op) == opt.ops->end()) continue;
      const ScanInput& in = InputFor(op, random, near_one);
      for (int64_t d : dims) {
        std::vector<int64_t> ds = {d};
        if (opt.negative_too && shape.rank() > 0) ds.push_back(d - shape.rank());
        for (int64_t dim : ds) {
          const std::vector<ScanAttrs> flags = AllFlags();
          for (size_t f = 0; f < flags.size(); ++f) {
            if (!opt.all_flags && f != static_cast<size_t>(rotate % 4)) continue;
            ScanAttrs a = flags[f];
            if (op == "discounted_cumsum") {
              static const double gammas[] = {0.5, 0.9, 1.0, -0.7};
              a.gamma = gammas[(f + rotate) % 4];
            }
            if (!budget.Record(CheckScan(op, in, dim, a))) return false;
            if (op == "cumsum" && opt.grid_sums && IsFloatingPoint(dt)) {
              if (!budget.Record(CheckScan(op, grid, dim, a))) return false;
            }
          }
          ++rotate;
        }
      }
    }
  }
  return true;
}

std::vector<int64_t> EveryDim(int rank) {
  std::vector<int64_t> d;
  for (int i = 0; i < rank; ++i) d.push_back(i);
  return d;
}

TEST_P(ScanTest, EveryDimOfRank1To4) {
  FailureBudget budget;
  const std::vector<Shape> shapes = {Shape{7}, Shape{5, 33}, Shape{3, 1000, 2}, Shape{2, 3, 4, 5}, Shape{1, 1, 17},
                                     Shape{4, 1}, Shape{2, 1, 3, 1}};
  for (const Shape& s : shapes) {
    SweepOptions opt;
    opt.negative_too = true;
    opt.grid_sums = true;
    if (!SweepShape(GetParam(), s, EveryDim(s.rank()), budget, opt)) return;
  }
}

TEST_P(ScanTest, DefaultFlagsAreInclusiveForward) {
  for (DataType dt : AllDtypes()) {
    const ScanInput x = MakeInput(Shape{3, 40}, dt, GetParam(), Data::kRandom, FreshSeed());
    const ScanInput near_one = MakeInput(Shape{3, 40}, dt, GetParam(), Data::kNearOne, FreshSeed());
    for (const std::string& op : OpsFor(dt)) {
      ScanAttrs none;
      none.set_exclusive = none.set_reverse = false;
      CheckScan(op, InputFor(op, x, near_one), 1, none);
      CheckScan(op, InputFor(op, x, near_one), -2, none);
    }
  }
}

// Scan lengths around the warp, block and tile sizes, along the last axis (several rows)
// and along outer axes.
TEST_P(ScanTest, ScanLengthsAlongTheLastAxis) {
  FailureBudget budget;
  for (int64_t n : {1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4097, 100003}) {
    SweepOptions opt;
    opt.grid_sums = true;
    opt.all_flags = n <= 4097;
    if (!SweepShape(GetParam(), Shape{n <= 4097 ? 3 : 1, n}, {1}, budget, opt)) return;
  }
}

TEST_P(ScanTest, ScanLengthsAlongOuterAxes) {
  FailureBudget budget;
  SweepOptions opt;
  opt.grid_sums = true;
  if (!SweepShape(GetParam(), Shape{4097, 3}, {0}, budget, opt)) return;
  opt.all_flags = false;
  if (!SweepShape(GetParam(), Shape{1000, 64}, {0}, budget, opt)) return;
  if (!SweepShape(GetParam(), Shape{3, 5000, 7}, {1}, budget, opt)) return;
  if (!SweepShape(GetParam(), Shape{33, 257}, {0}, budget, opt)) return;
}

// Shapes whose columns take CUDA's one-pass band kernel (at least one band of 8 16-byte
// vectors per SM): a partial stripe (70 lines), several stripes with a partial last one
// (300), a last band partly outside the inner dim (8200 and 4224 are not multiples of
// every dtype's band). The CPU has no such kernel: it runs the smaller shapes only.
TEST_P(ScanTest, ColumnBands) {
  FailureBudget budget;
  SweepOptions opt;
  opt.all_flags = false;
  const bool gpu = GetParam() == DeviceType::kCuda;
  if (!SweepShape(GetParam(), gpu ? Shape{2, 70, 8200} : Shape{2, 70, 40}, {1}, budget, opt)) return;
  if (!SweepShape(GetParam(), gpu ? Shape{300, 4224} : Shape{300, 24}, {0}, budget, opt)) return;
}

// Outer dims shorter than a band's stripe (scan.bands_min, 128 lines) and longer ones,
// over columns enough to fill the GPU (132 SMs x 1024): a thread per column on CUDA. The
// CPU runs the small twins.
TEST_P(ScanTest, ShortOuterDimsOfManyColumns) {
  FailureBudget budget;
  SweepOptions opt;
  opt.all_flags = false;
  const std::vector<DataType> some = {DataType::kFloat32, DataType::kBFloat16, DataType::kInt32};
  opt.dtypes = &some;
  const bool gpu = GetParam() == DeviceType::kCuda;
  if (!SweepShape(GetParam(), gpu ? Shape{33, 135200} : Shape{33, 200}, {0}, budget, opt)) return;
  if (!SweepShape(GetParam(), gpu ? Shape{127, 140000} : Shape{127, 40}, {0}, budget, opt)) return;
  if (!SweepShape(GetParam(), gpu ? Shape{128, 140000} : Shape{128, 40}, {0}, budget, opt)) return;
}

// CUDA takes a thread per K adjacent columns (one pass, batches of 8 lines) from
// scan.cols_per_sm = 256 columns per SM on (132 SMs: 33792 columns), and bands or three
// passes over segments below. Both sides: inner dims that every dtype's vector divides
// (8448) and odd ones (the K = 1 kernel), a misaligned input (K = 1 as well), scan lengths
// that are not whole batches (300) and shorter than one (5). The CPU runs small twins.
TEST_P(ScanTest, ColumnsAThreadEachAtTheSwitch) {
  FailureBudget budget;
  SweepOptions opt;
  opt.all_flags = false;
  const std::vector<DataType> some = {DataType::kFloat32, DataType::kBFloat16, DataType::kInt32, DataType::kInt8,
                                      DataType::kFloat64};
  opt.dtypes = &some;
  const bool gpu = GetParam() == DeviceType::kCuda;
  const std::vector<Shape> shapes =
      gpu ? std::vector<Shape>{Shape{4, 300, 8448}, Shape{3, 300, 11263}, Shape{300, 33784}, Shape{5, 33792},
                               Shape{2, 9, 16896}}
          : std::vector<Shape>{Shape{4, 300, 16}, Shape{3, 300, 11}, Shape{300, 24}, Shape{5, 40}, Shape{2, 9, 32}};
  for (const Shape& sh : shapes) {
    if (!SweepShape(GetParam(), sh, {sh.rank() - 2}, budget, opt)) return;
  }
  opt.offset = 1;
  if (!SweepShape(GetParam(), gpu ? Shape{4, 300, 8448} : Shape{4, 300, 16}, {1}, budget, opt)) return;
}

TEST_P(ScanTest, LongOneDimensionalScans) {
  FailureBudget budget;
  const Shape s{(int64_t{1} << 20) + 7};
  const std::vector<DataType> f32 = {DataType::kFloat32}, i32 = {DataType::kInt32};
  const std::vector<std::string> cumsum = {"cumsum"}, cummax = {"cummax"};
  SweepOptions opt;
  opt.all_flags = true;
  opt.dtypes = &f32;
  opt.ops = &cumsum;
  if (!SweepShape(GetParam(), s, {0}, budget, opt)) return;
  opt.ops = &cummax;
  if (!SweepShape(GetParam(), s, {0}, budget, opt)) return;
  opt.dtypes = &i32;
  opt.ops = &cumsum;
  if (!SweepShape(GetParam(), s, {0}, budget, opt)) return;
  // Grid values: a missing or doubled element anywhere shows in every later prefix.
  const ScanInput grid = MakeInput(Shape{(int64_t{1} << 19) + 7}, DataType::kFloat32, GetParam(), Data::kGrid,
                                   FreshSeed());
  CheckScan("cumsum", grid, 0);
  ScanAttrs er;
  er.exclusive = er.reverse = true;
  CheckScan("cumsum", grid, -1, er);
}

// Views: transposed, sliced, stepped; and inputs one element into their device buffer.
TEST_P(ScanTest, StridedViews) {
  FailureBudget budget;
  const DeviceType dev = GetParam();
  for (DataType dt : AllDtypes()) {
    const uint64_t seed = FreshSeed();
    for (Data data : {Data::kRandom, Data::kNearOne}) {
      const ScanInput b2 = MakeInput(Shape{37, 41}, dt, dev, data, seed);
      const ScanInput b1 = MakeInput(Shape{1517}, dt, dev, data, seed + 2);
      const std::vector<Tensor> views = {
          *b2.x.Transpose(0, 1),                                         // [41, 37], strides [1, 41]
          *b2.x.Slice(1, 3, 40),                                         // [37, 37], row stride 41
          *(*b2.x.Slice(0, 5, 30)).Transpose(0, 1),                      // [41, 25]
          *b1.x.AsStrided(Shape{33, 20}, std::vector<int64_t>{40, 2}, 3),  // both dims stepped
      };
      for (const Tensor& v : views) {
        EXPECT_FALSE(v.is_contiguous()) << v.DebugString();
        ScanInput in = Wrap(v, seed);
        in.data = data;
        for (const std::string& op : OpsFor(dt)) {
          if ((op == "cumprod") != (data == Data::kNearOne)) continue;
          const std::vector<ScanAttrs> flags = AllFlags();
          for (int64_t dim : {0, 1}) {
            for (size_t f = 0; f < flags.size(); ++f) {
              if (!budget.Record(CheckScan(op, in, f % 2 ? dim - 2 : dim, flags[f]))) return;
            }
          }
        }
      }
    }
  }
}

TEST_P(ScanTest, MisalignedInputs) {
  FailureBudget budget;
  SweepOptions opt;
  opt.offset = 1;
  opt.all_flags = false;
  if (!SweepShape(GetParam(), Shape{1025}, {0}, budget, opt)) return;
  if (!SweepShape(GetParam(), Shape{33, 257}, {1, 0}, budget, opt)) return;
  if (!SweepShape(GetParam(), Shape{5, 4099}, {1}, budget, opt)) return;
}

KPS_INSTANTIATE_ON_DEVICES(ScanTest);

}  // namespace
}  // namespace kps
