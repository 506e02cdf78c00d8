// The reduction ops (sum, mean, prod, max, min, any, all, argmax, argmin, logsumexp,
// var, std) on every device and every dtype each is registered for: every subset of
// dims of random shapes of rank 1 to 4 (sampled subsets for rank 5 to 8), keepdim both
// ways, negative and unordered dims, size-0 and size-1 dims, shapes and row lengths that
// reach the block-level paths, long full reductions, strided views and misaligned
// inputs, against the independent references of tests/reference/reduce.h (tolerances:
// tests/ops/reduce/reduce_check.h).
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "tests/ops/reduce/reduce_check.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using namespace ::kps::reduce_test;

class ReduceTest : public ::kps::testing::PerDeviceTest {};

// The dims of `mask` in a random order, each written negative half the time.
std::vector<int64_t> DimsOfMask(uint32_t mask, int rank, std::mt19937_64& gen) {
  std::vector<int64_t> dims;
  for (int d = 0; d < rank; ++d) {
    if (mask & (1u << d)) dims.push_back((gen() & 1) ? d - rank : d);
  }
  std::shuffle(dims.begin(), dims.end(), gen);
  return dims;
}

// Every subset of the dims of a rank-`rank` tensor ({} = all dims, and the full set).
std::vector<std::vector<int64_t>> AllDimSubsets(int rank, std::mt19937_64& gen) {
  std::vector<std::vector<int64_t>> sets;
  for (uint32_t mask = 0; mask < (1u << rank); ++mask) sets.push_back(DimsOfMask(mask, rank, gen));
  return sets;
}

// {} , the full set, every single dim, and `extra` random subsets.
std::vector<std::vector<int64_t>> SampledDimSubsets(int rank, int extra, std::mt19937_64& gen) {
  std::vector<std::vector<int64_t>> sets = {{}, DimsOfMask((1u << rank) - 1, rank, gen)};
  for (int d = 0; d < rank; ++d) sets.push_back(DimsOfMask(1u << d, rank, gen));
  std::uniform_int_distribution<uint32_t> mask(1, (1u << rank) - 2);
  for (int i = 0; i < extra; ++i) sets.push_back(DimsOfMask(mask(gen), rank, gen));
  return sets;
}

struct SweepOptions {
  bool both_keepdims = true;  // false: alternate keepdim over the dim sets
  bool grid_sums = false;     // also sum and mean of grid (exactly summable) float inputs
  const std::vector<DataType>* dtypes = nullptr;  // default: all 10
  int64_t offset = 0;         // the inputs start this many elements into their buffer
};

// Every op and dtype over `dim_sets` of `shape`. False once the budget is spent.
bool SweepShape(DeviceType dev, const Shape& shape, const std::vector<std::vector<int64_t>>& dim_sets,
                FailureBudget& budget, const SweepOptions& opt = {}) {
  for (DataType dt : opt.dtypes ? *opt.dtypes : AllDtypes()) {
    const uint64_t seed = FreshSeed();
    const ReduceInput random = MakeInput(shape, dt, dev, Data::kRandom, seed, opt.offset);
    const ReduceInput near_one = MakeInput(shape, dt, dev, Data::kNearOne, seed + 1, opt.offset);
    std::vector<std::pair<std::string, const ReduceInput*>> runs;
    for (const std::string& op : OpsFor(dt)) runs.push_back({op, op == "prod" ? &near_one : &random});
    ReduceInput grid;
    if (opt.grid_sums && IsFloatingPoint(dt)) {
      grid = MakeInput(shape, dt, dev, Data::kGrid, seed + 2, opt.offset);
      runs.push_back({"sum", &grid});
      runs.push_back({"mean", &grid});
    }
    for (const auto& [op, in] : runs) {
      for (size_t i = 0; i < dim_sets.size(); ++i) {
        for (bool keepdim : {false, true}) {
          if (!opt.both_keepdims && keepdim != (i % 2 == 1)) continue;
          if (!budget.Record(CheckReduce(op, *in, dim_sets[i], keepdim))) return false;
        }
      }
    }
  }
  return true;
}

TEST_P(ReduceTest, EveryDimSubsetOfRank1To4) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "shape seed=" << seed);
  std::mt19937_64 gen(seed);
  FailureBudget budget;
  for (int rank = 1; rank <= 4; ++rank) {
    std::uniform_int_distribution<int64_t> big(2, 7), small(1, 4);
    std::vector<int64_t> a(rank), b(rank), c(rank);
    for (int d = 0; d < rank; ++d) {
      a[d] = big(gen);
      b[d] = (gen() % 3 == 0) ? 1 : small(gen) + 1;
      c[d] = small(gen);
    }
    b[gen() % rank] = 1;  // at least one size-1 dim
    c[gen() % rank] = 0;  // an empty tensor
    for (const auto& dims : {a, b, c}) {
      if (!SweepShape(GetParam(), Shape(dims), AllDimSubsets(rank, gen), budget)) return;
    }
  }
}

TEST_P(ReduceTest, SampledDimSubsetsOfRank5To8) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "subset seed=" << seed);
  std::mt19937_64 gen(seed);
  FailureBudget budget;
  const std::vector<Shape> shapes = {Shape{2, 3, 4, 5, 6, 7}, Shape{3, 1, 4, 2, 5}, Shape{2, 1, 3, 1, 2, 2, 3},
                                     Shape{2, 1, 2, 3, 1, 2, 2, 3}};
  for (const Shape& s : shapes) {
    SweepOptions opt;
    opt.both_keepdims = s.numel() < 1000;
    if (!SweepShape(GetParam(), s, SampledDimSubsets(s.rank(), 6, gen), budget, opt)) return;
  }
}

TEST_P(ReduceTest, DefaultAttributesReduceEveryDim) {
  for (DataType dt : AllDtypes()) {
    const ReduceInput x = MakeInput(Shape{3, 4, 5}, dt, GetParam(), Data::kRandom, FreshSeed());
    const ReduceInput near_one = MakeInput(Shape{3, 4, 5}, dt, GetParam(), Data::kNearOne, FreshSeed());
    for (const std::string& op : OpsFor(dt)) {
      const ReduceInput& in = op == "prod" ? near_one : x;
      ReduceAttrs none;
      none.set_dims = false;
      none.set_keepdim = false;
      CheckReduce(op, in, {}, false, none);  // rank-0 output
      ReduceAttrs only_keepdim;
      only_keepdim.set_dims = false;
      CheckReduce(op, in, {}, true, only_keepdim);  // [1, 1, 1]
      ReduceAttrs only_dims;
      only_dims.set_keepdim = false;
      CheckReduce(op, in, {-2}, false, only_dims);
      CheckReduce(op, in, {}, true);
    }
  }
  auto out = Call("sum").Input("x", *testing::RandomTensor(Shape{3, 4}, DataType::kFloat32, 1).To(GetParam())).RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), Shape{});
}

// Shapes big enough for the block-level paths (several warps and blocks per row,
// column reductions over many rows, mixed kept and reduced dims).
TEST_P(ReduceTest, BlockSizedShapes) {
  struct Case {
    Shape shape;
    std::vector<std::vector<int64_t>> dims;
  };
  const std::vector<Case> cases = {
      {Shape{3, 1000, 5}, {{1}, {0, 2}, {0}, {2}, {0, 1}, {-1, -2}, {}}},
      {Shape{1000, 37}, {{0}, {1}, {}}},
      {Shape{257, 129}, {{0}, {-1}, {}}},
      {Shape{2, 3, 4, 5, 6, 7}, {{1, 3, 5}, {0, 2, 4}, {5}, {0}, {2, 3}, {}}},
  };
  FailureBudget budget;
  for (const Case& c : cases) {
    SweepOptions opt;
    opt.both_keepdims = false;
    opt.grid_sums = true;
    if (!SweepShape(GetParam(), c.shape, c.dims, budget, opt)) return;
  }
}

// Rows (and columns) of the lengths around the warp and block sizes.
TEST_P(ReduceTest, RowAndColumnLengths) {
  FailureBudget budget;
  for (int64_t n : {1, 2, 31, 32, 33, 1023, 1025, 4097}) {
    SweepOptions opt;
    opt.both_keepdims = false;
    opt.grid_sums = true;
    if (!SweepShape(GetParam(), Shape{5, n}, {{1}, {-1}}, budget, opt)) return;   // rows
    if (!SweepShape(GetParam(), Shape{n, 5}, {{0}}, budget, opt)) return;         // columns
    if (!SweepShape(GetParam(), Shape{n}, {{}}, budget, opt)) return;              // everything
    if (!SweepShape(GetParam(), Shape{3, n, 2}, {{1}}, budget, opt)) return;       // a middle dim
  }
}

TEST_P(ReduceTest, LongFullReductions) {
  FailureBudget budget;
  SweepOptions opt;
  opt.both_keepdims = false;
  opt.grid_sums = true;
  if (!SweepShape(GetParam(), Shape{100003}, {{}, {0}}, budget, opt)) return;
  const std::vector<DataType> some = {DataType::kInt8, DataType::kFloat16, DataType::kFloat32};
  opt.dtypes = &some;
  if (!SweepShape(GetParam(), Shape{int64_t{1} << 20}, {{}}, budget, opt)) return;
  const std::vector<DataType> f32 = {DataType::kFloat32};
  opt.dtypes = &f32;
  SweepShape(GetParam(), Shape{1024, 1024}, {{0}, {1}}, budget, opt);
}

// Views: transposed, sliced, stepped (stride 2), stride 0, permuted 3-D; and inputs
// at an element offset of 1 or 3 in their device buffer.
TEST_P(ReduceTest, StridedViews) {
  FailureBudget budget;
  const DeviceType dev = GetParam();
  for (DataType dt : AllDtypes()) {
    const uint64_t seed = FreshSeed();
    for (Data data : {Data::kRandom, Data::kNearOne}) {
      const ReduceInput b2 = MakeInput(Shape{37, 41}, dt, dev, data, seed);
      const ReduceInput b3 = MakeInput(Shape{4, 5, 6}, dt, dev, data, seed + 1);
      const ReduceInput b1 = MakeInput(Shape{1517}, dt, dev, data, seed + 2);
      struct View {
        Tensor t;
        std::vector<std::vector<int64_t>> dims;
      };
      const std::vector<std::vector<int64_t>> d2 = {{0}, {1}, {}, {0, 1}};
      const std::vector<View> views = {
          {*b2.x.Transpose(0, 1), d2},                           // [41, 37], strides [1, 41]
          {*b2.x.Slice(1, 3, 40), d2},                           // [37, 37], row stride 41
          {*(*b2.x.Slice(0, 5, 30)).Transpose(0, 1), d2},        // [41, 25]
          {*b3.x.Transpose(0, 2), {{0}, {1}, {2}, {0, 2}, {1, 2}, {}}},  // [6, 5, 4]
          {*b1.x.AsStrided(Shape{700}, std::vector<int64_t>{2}, 1), {{}}},           // every other element, from 1
          {*b1.x.AsStrided(Shape{33, 20}, std::vector<int64_t>{40, 2}, 3), d2},      // both dims stepped
          {*b1.x.AsStrided(Shape{5, 7}, std::vector<int64_t>{0, 1}, 0), d2},         // stride 0: 5 copies of a row
      };
      for (const View& v : views) {
        EXPECT_FALSE(v.t.is_contiguous()) << v.t.DebugString();
        ReduceInput in = Wrap(v.t, seed);
        in.data = data;
        for (const std::string& op : OpsFor(dt)) {
          if ((op == "prod") != (data == Data::kNearOne)) continue;
          for (size_t i = 0; i < v.dims.size(); ++i) {
            if (!budget.Record(CheckReduce(op, in, v.dims[i], i % 2 == 1))) return;
          }
        }
      }
    }
  }
}

TEST_P(ReduceTest, MisalignedInputs) {
  FailureBudget budget;
  for (int64_t offset : {1, 3}) {
    SweepOptions opt;
    opt.both_keepdims = false;
    opt.offset = offset;
    if (!SweepShape(GetParam(), Shape{1025}, {{}}, budget, opt)) return;
    if (!SweepShape(GetParam(), Shape{33, 257}, {{1}, {0}}, budget, opt)) return;
    if (!SweepShape(GetParam(), Shape{7, 4099}, {{1}}, budget, opt)) return;
  }
}

// The switches of contiguous rows (ops/reduce/reduce_dispatch.cuh): rows of any length
// and start take aligned vectors and fold their ends one by one (RowSpan); up to 32
// vectors a row, the short-row kernel (lengths 32 kVec + kVec - 1 and 33 kVec for every
// vector width: 16, 8, 4 and 2 elements); rows of one element. And the narrow column
// kernel for contiguous [R, C] blocks over R: rows of at most 128 bytes (C = 16, 32, 64,
// 128 elements of 8, 4, 2 and 1 bytes, and one more), partial last steps, splits over
// several blocks (R * C of 10^5 elements and more), unaligned starts (its scalar twin).
// And reductions over two dims whose inner one is contiguous whole vectors.
TEST_P(ReduceTest, RowSpansAndNarrowColumns) {
  FailureBudget budget;
  for (int64_t offset : {0, 1}) {
    SweepOptions opt;
    opt.both_keepdims = false;
    opt.offset = offset;
    for (int64_t n : {1, 2, 3, 5, 7, 9, 15, 17, 65, 66, 131, 132, 263, 264, 527, 528}) {
      if (!SweepShape(GetParam(), Shape{67, n}, {{1}, {-1}}, budget, opt)) return;
    }
    if (!SweepShape(GetParam(), Shape{5003, 1}, {{1}}, budget, opt)) return;
    for (int64_t c : {1, 2, 3, 5, 7, 16, 17, 32, 33, 64, 65, 128, 129}) {
      for (int64_t r : {1, 5, 1031}) {
        if (!SweepShape(GetParam(), Shape{r, c}, {{0}}, budget, opt)) return;
      }
    }
    if (!SweepShape(GetParam(), Shape{40009, 3}, {{0}, {0}}, budget, opt)) return;
    if (!SweepShape(GetParam(), Shape{12007, 16}, {{0}}, budget, opt)) return;
    if (!SweepShape(GetParam(), Shape{2, 6007, 5}, {{0, 1}}, budget, opt)) return;
    // Two reduced dims whose inner one is whole vectors (runs in the row kernel), and not.
    for (const Shape& shape : {Shape{6, 5, 16}, Shape{3, 7, 64}, Shape{5, 3, 130}, Shape{2, 9, 3, 32}}) {
      if (!SweepShape(GetParam(), shape, {{0, -1}}, budget, opt)) return;
    }
  }
  // Long runs over several blocks (a split of the row kernel).
  const std::vector<DataType> some = {DataType::kInt8, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
  SweepOptions opt;
  opt.dtypes = &some;
  opt.both_keepdims = false;
  SweepShape(GetParam(), Shape{64, 3, 1024}, {{0, 2}}, budget, opt);
}

// Rows back to back of at most reduce.tiny = 32 bytes take the tiny-row kernel (a thread
// per row, staged through shared memory in blocks of 256 rows): row lengths on both sides
// of 32 bytes for each element size (32/33 int8, 16/17 16-bit, 8/9 32-bit, 4/5 64-bit),
// row counts around the block, and an unaligned start.
TEST_P(ReduceTest, TinyRowsAcrossTheSwitch) {
  FailureBudget budget;
  for (int64_t offset : {0, 1}) {
    SweepOptions opt;
    opt.both_keepdims = false;
    opt.offset = offset;
    for (int64_t n : {2, 4, 5, 8, 9, 16, 17, 32, 33}) {
      for (int64_t rows : {255, 257, 1000}) {
        if (!SweepShape(GetParam(), Shape{rows, n}, {{1}}, budget, opt)) return;
      }
    }
  }
  // Two dims merge into the rows; a middle dim reduced is not back to back rows.
  SweepOptions opt;
  opt.both_keepdims = false;
  if (!SweepShape(GetParam(), Shape{3, 300, 7}, {{-1}, {1}}, budget, opt)) return;
}

KPS_INSTANTIATE_ON_DEVICES(ReduceTest);

}  // namespace
}  // namespace kps
