// index_add (out of place) and index_add_ (in place) on every device, every registered
// dtype, both index dtypes, every dim (also negative), with and without `deterministic`
// (on CUDA: the sorted gather, the float atomics, and the float16/bfloat16 pair atomics at
// even and odd slice offsets), with heavy duplication, empty index, empty x, misaligned
// and strided inputs, against the reference of tests/reference/index_add.h. Exact-sum
// inputs (small integers in every dtype) must match exactly whatever the summation order;
// random inputs within the rounding of the path. Out-of-range and negative indices give an
// error naming the op, the argument, the value and its position, and leave x unchanged;
// bad arguments give errors naming the op and the argument. `deterministic` is bitwise
// reproducible.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "registry/stream.h"
#include "tests/ops/check_util.h"
#include "tests/reference/index_add.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::op_check::AllClose;
using ::kps::op_check::Layout;
using ::kps::op_check::LayoutName;
using ::kps::op_check::Place;
using ::kps::op_check::RandomValues;
using ::kps::testing::Contains;
using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

const std::vector<DataType>& Dtypes() {
  static const std::vector<DataType> d = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                          DataType::kFloat64, DataType::kInt8,     DataType::kUInt8,
                                          DataType::kInt16,   DataType::kInt32,    DataType::kInt64};
  return d;
}

class IndexAddTest : public ::kps::testing::PerDeviceTest {};

struct Case {
  Shape shape;
  int64_t dim = 0;
  int64_t count = 0;     // the index's length
  int64_t distinct = 0;  // indices drawn from this many values (0: all of [0, size))
  DataType index_dtype = DataType::kInt64;
  double alpha = 1.0;
  bool deterministic = false;
  bool in_place = false;
  Layout x_layout = Layout::kContiguous, source_layout = Layout::kContiguous, index_layout = Layout::kContiguous;
  bool exact = false;  // small-integer values: every partial sum is exact in the dtype
  std::string Name(DataType dt) const {
    return std::string(DataTypeName(dt)) + " x" + shape.ToString() + " dim " + std::to_string(dim) + " count " +
           std::to_string(count) + " distinct " + std::to_string(distinct) + " index " +
           std::string(DataTypeName(index_dtype)) + " alpha " + std::to_string(alpha) +
           (deterministic ? " deterministic" : "") + (in_place ? " in place" : "") + " x " + LayoutName(x_layout) +
           " source " + LayoutName(source_layout) + " index " + LayoutName(index_layout) + (exact ? " exact" : "");
  }
};

int ResolveDim(const Shape& s, int64_t dim) { return static_cast<int>(dim < 0 ? dim + s.rank() : dim); }

std::vector<double> Values(int64_t n, DataType dt, uint64_t seed, bool exact) {
  if (!exact) return RandomValues(n, dt, seed);
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> d(dt == DataType::kUInt8 ? 0 : -4, 4);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(gen);
  if (n > 0 && v[0] == 0) v[0] = 3;
  return v;
}

absl::StatusOr<std::vector<Tensor>> RunIndexAdd(const Tensor& x, const Tensor& index, const Tensor& source,
                                                int64_t dim, double alpha, bool deterministic, bool in_place) {
  return Call(in_place ? "index_add_" : "index_add")
      .Input("x", x)
      .Input("index", index)
      .Input("source", source)
      .Attr("dim", dim)
      .Attr("alpha", alpha)
      .Attr("deterministic", deterministic)
      .Run();
}

// Runs one case and compares with the reference; returns the output's bytes.
std::vector<double> CheckCase(DeviceType dev, DataType dt, const Case& c) {
  SCOPED_TRACE(c.Name(dt));
  const int dim = ResolveDim(c.shape, c.dim);
  const int64_t size = c.shape[dim];
  std::vector<int64_t> src_dims(c.shape.dims().begin(), c.shape.dims().end());
  src_dims[dim] = c.count;
  const Shape src_shape(src_dims);
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  std::vector<int64_t> pool(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) pool[i] = i;
  std::shuffle(pool.begin(), pool.end(), gen);
  if (c.distinct > 0 && c.distinct < size) pool.resize(c.distinct);
  std::vector<int64_t> index(static_cast<size_t>(c.count));
  std::vector<double> index_d(index.size());
  for (size_t i = 0; i < index.size(); ++i) {
    index[i] = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(gen)];
    index_d[i] = static_cast<double>(index[i]);
  }
  const std::vector<double> xv = Values(c.shape.numel(), dt, seed + 1, c.exact);
  const std::vector<double> sv = Values(src_shape.numel(), dt, seed + 2, c.exact);
  const Tensor x = Place(xv, c.shape, dt, dev, c.x_layout);
  const Tensor idx = Place(index_d, Shape{c.count}, c.index_dtype, dev, c.index_layout);
  const Tensor src = Place(sv, src_shape, dt, dev, c.source_layout);
  auto out = RunIndexAdd(x, idx, src, c.dim, c.alpha, c.deterministic, c.in_place);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  const Tensor& result = c.in_place ? x : (*out)[0];
  if (c.in_place) {
    EXPECT_TRUE(out->empty());
  } else {
    EXPECT_EQ(result.shape(), c.shape);
    EXPECT_EQ(result.dtype(), dt);
    EXPECT_TRUE(result.is_contiguous());
  }
  const reference::IndexAddResult want = reference::IndexAdd(xv, c.shape, dim, index, sv, c.alpha);
  std::vector<double> expect = want.value, tol(want.value.size(), 0.0);
  for (size_t i = 0; i < expect.size(); ++i) {
    if (!IsFloatingPoint(dt)) {
      expect[i] = op_check::WrapTo(dt, want.value[i]);
    } else if (c.exact) {
      expect[i] = testing::RoundTo(dt, want.value[i]);
    } else {
      // One rounding of the result, plus per added term one rounding of the running sum:
      // in the dtype on the atomic paths (16-bit: their unit roundoff), else in float/double.
      const double step = dt == DataType::kFloat16 ? 0x1p-11 : dt == DataType::kBFloat16 ? 0x1p-8
                                                                                          : op_check::AccEps(dt);
      tol[i] = testing::Tolerance(dt, want.value[i]) + (want.terms[i] + 1) * step * want.magnitude[i];
    }
  }
  const std::vector<double> got = ToDoubles(result);
  EXPECT_TRUE(AllClose(got, expect, tol));
  return got;
}

std::vector<Shape> SweepShapes() { return {Shape{7}, Shape{5, 33}, Shape{3, 10, 4}, Shape{2, 3, 4, 5}, Shape{4, 1}}; }

TEST_P(IndexAddTest, EveryDtypeDimAndIndexDtype) {
  for (DataType dt : Dtypes()) {
    for (const Shape& s : SweepShapes()) {
      for (int64_t dim = -1; dim < s.rank(); ++dim) {
        for (DataType it : {DataType::kInt32, DataType::kInt64}) {
          for (bool det : {false, true}) {
            Case c;
            c.shape = s;
            c.dim = dim;
            const int64_t size = s[ResolveDim(s, dim)];
            c.count = 2 * size + 3;
            c.index_dtype = it;
            c.deterministic = det;
            c.alpha = IsFloatingPoint(dt) ? (det ? -0.5 : 2.5) : (det ? -2 : 3);
            c.exact = false;
            CheckCase(GetParam(), dt, c);
            c.exact = true;
            c.alpha = det ? 1 : -1;
            if (dt == DataType::kUInt8) c.alpha = 1;
            CheckCase(GetParam(), dt, c);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

TEST_P(IndexAddTest, InPlace) {
  for (DataType dt : Dtypes()) {
    for (const Shape& s : {Shape{6, 9}, Shape{3, 10, 4}, Shape{40, 33}}) {
      for (int64_t dim = 0; dim < s.rank(); ++dim) {
        for (bool det : {false, true}) {
          Case c;
          c.shape = s;
          c.dim = dim;
          c.count = 3 * s[dim];
          c.deterministic = det;
          c.in_place = true;
          c.alpha = IsFloatingPoint(dt) ? 1.5 : 2;
          c.x_layout = dim == 0 ? Layout::kOffset : Layout::kContiguous;
          CheckCase(GetParam(), dt, c);
          c.exact = true;
          c.alpha = 1;
          CheckCase(GetParam(), dt, c);
          if (HasFailure()) return;
        }
      }
    }
  }
}

// Many sources per destination: 20 times as many indices as distinct values.
TEST_P(IndexAddTest, HeavyDuplication) {
  for (DataType dt : Dtypes()) {
    for (bool det : {false, true}) {
      for (bool in_place : {false, true}) {
        for (const Shape& s : {Shape{64, 48}, Shape{50, 7}, Shape{1000}, Shape{30, 65}}) {
          Case c;
          c.shape = s;
          c.dim = 0;
          c.distinct = std::max<int64_t>(1, s[0] / 8);
          c.count = 20 * c.distinct;
          c.deterministic = det;
          c.in_place = in_place;
          c.exact = true;
          c.alpha = 1;
          CheckCase(GetParam(), dt, c);
          c.exact = false;
          c.alpha = IsFloatingPoint(dt) ? 0.75 : -1;
          CheckCase(GetParam(), dt, c);
          // Every index the same destination.
          c.distinct = 1;
          c.count = 40;
          c.exact = true;
          c.alpha = 1;
          CheckCase(GetParam(), dt, c);
          if (HasFailure()) return;
        }
      }
    }
  }
}

// Slices of odd lengths and odd starts (the 16-bit pair atomics' lone ends), slices of 64
// bytes and more (the out-of-place sorted path), single-element slices (dim last).
TEST_P(IndexAddTest, SliceLengthsAndLayouts) {
  for (DataType dt : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
                      DataType::kInt8, DataType::kInt32}) {
    for (int64_t inner : {1, 2, 3, 8, 15, 16, 17, 31, 32, 33, 64, 257}) {
      for (bool det : {false, true}) {
        for (bool in_place : {false, true}) {
          Case c;
          c.shape = Shape{37, inner};
          c.dim = 0;
          c.count = 53;
          c.deterministic = det;
          c.in_place = in_place;
          c.alpha = IsFloatingPoint(dt) ? -1.25 : 3;
          CheckCase(GetParam(), dt, c);
          c.exact = true;
          c.alpha = 1;
          CheckCase(GetParam(), dt, c);
          if (HasFailure()) return;
        }
      }
    }
    for (Layout xl : {Layout::kOffset, Layout::kStrided}) {
      for (Layout sl : {Layout::kContiguous, Layout::kOffset, Layout::kStrided}) {
        Case c;
        c.shape = Shape{21, 24};
        c.dim = 0;
        c.count = 30;
        c.x_layout = xl;
        c.source_layout = sl;
        c.index_layout = sl;
        c.alpha = IsFloatingPoint(dt) ? 0.5 : 1;
        CheckCase(GetParam(), dt, c);
        c.dim = 1;
        c.count = 50;
        CheckCase(GetParam(), dt, c);
      }
    }
  }
}

TEST_P(IndexAddTest, EmptyIndexAndEmptyX) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64}) {
    for (bool in_place : {false, true}) {
      Case c;
      c.shape = Shape{5, 6};
      c.count = 0;
      c.in_place = in_place;
      CheckCase(GetParam(), dt, c);
      c.shape = Shape{5, 0};
      c.count = 7;
      CheckCase(GetParam(), dt, c);
      c.shape = Shape{0, 4};
      c.dim = 1;
      c.count = 3;
      CheckCase(GetParam(), dt, c);
    }
  }
}

TEST_P(IndexAddTest, LargerTensors) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32}) {
    for (bool det : {false, true}) {
      Case c;
      c.shape = Shape{3000, 67};
      c.count = 5000;
      c.deterministic = det;
      c.alpha = IsFloatingPoint(dt) ? 1.5 : 2;
      CheckCase(GetParam(), dt, c);
      c.shape = Shape{4, 50000};
      c.dim = 1;
      c.count = 70001;
      CheckCase(GetParam(), dt, c);
      c.shape = Shape{2048, 256};
      c.dim = 0;
      c.count = 600;
      c.exact = true;
      c.alpha = 1;
      CheckCase(GetParam(), dt, c);
    }
  }
}

TEST_P(IndexAddTest, DeterministicIsBitwiseReproducible) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64}) {
    for (bool in_place : {false, true}) {
      for (const Shape& s : {Shape{200, 3}, Shape{300, 96}}) {
        SCOPED_TRACE(std::string(DataTypeName(dt)) + " " + s.ToString() + (in_place ? " in place" : ""));
        const uint64_t seed = FreshSeed();
        std::mt19937_64 gen(seed);
        const int64_t count = 50 * s[0];
        std::vector<double> index(count);
        for (double& v : index) v = std::uniform_int_distribution<int64_t>(0, s[0] / 10)(gen);
        const std::vector<double> xv = RandomValues(s.numel(), dt, seed + 1);
        const std::vector<double> sv = RandomValues(count * s[1], dt, seed + 2);
        const Tensor idx = Place(index, Shape{count}, DataType::kInt64, GetParam(), Layout::kContiguous);
        const Tensor src = Place(sv, Shape{count, s[1]}, dt, GetParam(), Layout::kContiguous);
        std::vector<double> first;
        for (int run = 0; run < 5; ++run) {
          const Tensor x = Place(xv, s, dt, GetParam(), Layout::kContiguous);
          auto out = RunIndexAdd(x, idx, src, 0, 0.3, true, in_place);
          ASSERT_TRUE(out.ok()) << out.status();
          const std::vector<double> got = ToDoubles(in_place ? x : (*out)[0]);
          if (run == 0) {
            first = got;
          } else {
            ASSERT_EQ(got.size(), first.size());
            EXPECT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(double)), 0) << "run " << run;
          }
        }
      }
    }
  }
}

// The ordered paths (`deterministic`, and out of place over slices of 64 bytes or more)
// must sum each destination's sources in position order, whatever the length of its run:
// destination r gets r % 41 sources (0 to 40, on both sides of the CUDA gather's
// short-run limit), at shuffled positions, with values chosen so that the order shows:
// +-2^11 and small values a quarter of the accumulator's unit at 2^11, which vanish
// next to 2^11 and not next to each other. Expected: the accumulation emulated on the
// host in the accumulator's type, in position order, compared bit for bit.
template <typename Acc>
std::vector<double> PositionOrderSums(const std::vector<double>& xv, const std::vector<double>& sv,
                                      const std::vector<int64_t>& index, int64_t outer, int64_t rows, int64_t inner,
                                      DataType dt) {
  std::vector<double> want(xv.size());
  const int64_t count = static_cast<int64_t>(index.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < inner; ++k) {
        Acc sum = 0;
        bool any = false;
        for (int64_t i = 0; i < count; ++i) {
          if (index[i] != r) continue;
          sum = static_cast<Acc>(sum + static_cast<Acc>(sv[(o * count + i) * inner + k]));
          any = true;
        }
        const int64_t at = (o * rows + r) * inner + k;
        want[at] = any ? testing::RoundTo(dt, static_cast<double>(static_cast<Acc>(static_cast<Acc>(xv[at]) + sum)))
                       : xv[at];
      }
    }
  }
  return want;
}

TEST_P(IndexAddTest, OrderedPathsSumInPositionOrder) {
  const DeviceType dev = GetParam();
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64}) {
    const size_t elem = DataTypeSize(dt);
    for (int64_t inner : {int64_t{3}, static_cast<int64_t>(64 / elem), static_cast<int64_t>(256 / elem + 1)}) {
      for (int64_t outer : {1, 2}) {
        for (bool det : {false, true}) {
          for (bool in_place : {false, true}) {
            // Without `deterministic`, only out of place over 64-byte slices is ordered.
            if (!det && (in_place || inner * static_cast<int64_t>(elem) < 64)) continue;
            SCOPED_TRACE(std::string(DataTypeName(dt)) + " inner " + std::to_string(inner) + " outer " +
                         std::to_string(outer) + (det ? " deterministic" : "") + (in_place ? " in place" : ""));
            const uint64_t seed = FreshSeed();
            std::mt19937_64 gen(seed);
            const int64_t rows = 90;
            std::vector<int64_t> index;
            for (int64_t r = 0; r < rows; ++r) index.insert(index.end(), r % 41, r);
            std::shuffle(index.begin(), index.end(), gen);
            const int64_t count = static_cast<int64_t>(index.size());
            const double small = dt == DataType::kFloat64 ? 0x1p-43 : 0x1p-14;
            const double choices[] = {2048, -2048, small, -small, small, 1.5};
            std::vector<double> sv(static_cast<size_t>(outer * count * inner));
            for (double& v : sv) v = choices[std::uniform_int_distribution<int>(0, 5)(gen)];
            std::vector<double> xv(static_cast<size_t>(outer * rows * inner));
            for (double& v : xv) v = std::uniform_int_distribution<int>(-4, 4)(gen);
            std::vector<double> index_d(index.begin(), index.end());
            const Shape xs{outer, rows, inner}, ss{outer, count, inner};
            const Tensor x = Place(xv, xs, dt, dev, Layout::kContiguous);
            const Tensor src = Place(sv, ss, dt, dev, Layout::kContiguous);
            const Tensor idx = Place(index_d, Shape{count}, DataType::kInt32, dev, Layout::kContiguous);
            auto out = RunIndexAdd(x, idx, src, 1, 1.0, det, in_place);
            ASSERT_TRUE(out.ok()) << out.status();
            const std::vector<double> got = ToDoubles(in_place ? x : (*out)[0]);
            const std::vector<double> want =
                dt == DataType::kFloat64 ? PositionOrderSums<double>(xv, sv, index, outer, rows, inner, dt)
                                         : PositionOrderSums<float>(xv, sv, index, outer, rows, inner, dt);
            ASSERT_EQ(got.size(), want.size());
            int64_t wrong = 0, first = -1;
            for (size_t i = 0; i < got.size(); ++i) {
              if (std::memcmp(&got[i], &want[i], sizeof(double)) != 0) {
                if (first < 0) first = static_cast<int64_t>(i);
                ++wrong;
              }
            }
            EXPECT_EQ(wrong, 0) << "first at " << first << ": got " << got[first] << ", want " << want[first]
                                << " (row " << (first / inner) % rows << ")";
          }
        }
      }
    }
  }
}

// Calls from several host threads at once, each on its own stream (CUDA: the calls
// share the pool of host-mapped flag slots; a call returns once its index check is in,
// so the stream is synchronized before the inputs go), some with a bad index: every good call is
// exact (small-integer values, so any summation order is exact) and every bad one is an
// error naming its position, whatever the interleaving. Runs of 0 to 24 sources take
// both the short-run and the long-run paths.
TEST_P(IndexAddTest, ConcurrentCallsOnStreams) {
  const DeviceType dev = GetParam();
  constexpr int kThreads = 4, kCalls = 12;
  const Shape xs{200, 64};
  std::vector<std::string> failures(kThreads);
  auto work = [&](int t) {
    std::string& fail = failures[t];
    absl::StatusOr<OwnedCudaStream> owned =
        dev == DeviceType::kCuda ? OwnedCudaStream::Create() : absl::UnavailableError("no stream on the CPU");
    if (dev == DeviceType::kCuda && !owned.ok()) {
      fail = std::string(owned.status().message());
      return;
    }
    const Stream stream = dev == DeviceType::kCuda ? owned->stream() : Stream::Cpu();
    std::mt19937_64 gen(FreshSeed() + t);
    for (int call = 0; call < kCalls && fail.empty(); ++call) {
      std::vector<int64_t> index;
      for (int64_t r = 0; r < xs[0]; ++r) index.insert(index.end(), (r * 7 + call + t) % 25, r);
      std::shuffle(index.begin(), index.end(), gen);
      const int64_t count = static_cast<int64_t>(index.size());
      const bool bad = call % 4 == 3;
      const int64_t bad_at = count / 2;
      std::vector<double> index_d(index.begin(), index.end());
      if (bad) index_d[bad_at] = static_cast<double>(xs[0]);
      const std::vector<double> xv = Values(xs.numel(), DataType::kFloat32, gen(), true);
      const std::vector<double> sv = Values(count * xs[1], DataType::kFloat32, gen(), true);
      const Tensor x = Place(xv, xs, DataType::kFloat32, dev, Layout::kContiguous);
      const Tensor idx = Place(index_d, Shape{count}, DataType::kInt64, dev, Layout::kContiguous);
      const Tensor src = Place(sv, Shape{count, xs[1]}, DataType::kFloat32, dev, Layout::kContiguous);
      auto out = Call("index_add")
                     .Input("x", x)
                     .Input("index", idx)
                     .Input("source", src)
                     .Attr("deterministic", call % 2 == 0)
                     .OnStream(stream)
                     .Run();
      // Whatever the outcome, the stream finishes with this call's inputs before they go.
      if (dev == DeviceType::kCuda && cudaStreamSynchronize(stream.cuda_stream()) != cudaSuccess) {
        fail = "cudaStreamSynchronize";
        continue;
      }
      if (bad) {
        if (out.ok() || !Contains(std::string(out.status().message()), "at position " + std::to_string(bad_at))) {
          fail = "call " + std::to_string(call) + ": want the bad index at " + std::to_string(bad_at) + ", got " +
                 out.status().ToString();
        }
        continue;
      }
      if (!out.ok()) {
        fail = "call " + std::to_string(call) + ": " + out.status().ToString();
        continue;
      }
      const std::vector<double> want = reference::IndexAdd(xv, xs, 0, index, sv, 1.0).value;
      const std::vector<double> got = ToDoubles((*out)[0]);
      for (size_t i = 0; i < want.size() && fail.empty(); ++i) {
        if (got[i] != want[i]) {
          fail = "call " + std::to_string(call) + " element " + std::to_string(i) + ": got " +
                 std::to_string(got[i]) + ", want " + std::to_string(want[i]);
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) pool.emplace_back(work, t);
  for (std::thread& th : pool) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(failures[t].empty()) << "thread " << t << ": " << failures[t];
}

TEST_P(IndexAddTest, OutOfRangeIndicesAreErrors) {
  const DeviceType dev = GetParam();
  for (bool in_place : {false, true}) {
    for (bool det : {false, true}) {
      for (DataType it : {DataType::kInt32, DataType::kInt64}) {
        for (int64_t bad : {int64_t{6}, int64_t{-1}, int64_t{1000000}, int64_t{-7}}) {
          SCOPED_TRACE(std::string(DataTypeName(it)) + " bad " + std::to_string(bad) + (in_place ? " in place" : "") +
                       (det ? " deterministic" : ""));
          const std::vector<double> xv = RandomValues(6 * 40, DataType::kFloat32, FreshSeed());
          const Tensor x = Place(xv, Shape{6, 40}, DataType::kFloat32, dev, Layout::kContiguous);
          std::vector<double> index = {0, 5, 2, 2, 4, 1, 3, 0, 5};
          index[4] = static_cast<double>(bad);
          index[7] = static_cast<double>(bad);  // the first bad position is reported: 4
          const Tensor idx = Place(index, Shape{9}, it, dev, Layout::kContiguous);
          const Tensor src = Place(RandomValues(9 * 40, DataType::kFloat32, FreshSeed()), Shape{9, 40},
                                   DataType::kFloat32, dev, Layout::kContiguous);
          auto out = RunIndexAdd(x, idx, src, 0, 1.0, det, in_place);
          ASSERT_FALSE(out.ok());
          const std::string msg(out.status().message());
          EXPECT_TRUE(Contains(msg, in_place ? "op 'index_add_'" : "op 'index_add'"));
          EXPECT_TRUE(Contains(msg, "'index'"));
          EXPECT_TRUE(Contains(msg, "holds " + std::to_string(bad) + " at position 4"));
          EXPECT_TRUE(Contains(msg, "[0, 6)"));
          // x is untouched, and the next call works.
          EXPECT_TRUE(AllClose(ToDoubles(x), xv, std::vector<double>(xv.size(), 0.0)));
          index[4] = index[7] = 1;
          auto ok = RunIndexAdd(x, Place(index, Shape{9}, it, dev, Layout::kContiguous), src, 0, 1.0, det, false);
          EXPECT_TRUE(ok.ok()) << ok.status();
        }
      }
    }
  }
}

TEST_P(IndexAddTest, BadArgumentsNameTheOpAndArgument) {
  const DeviceType dev = GetParam();
  auto t = [&](const Shape& s, DataType dt) {
    return Place(RandomValues(s.numel(), dt, 5), s, dt, dev, Layout::kContiguous);
  };
  const Tensor x = t(Shape{4, 3}, DataType::kFloat32);
  const Tensor idx = Place({0, 1}, Shape{2}, DataType::kInt64, dev, Layout::kContiguous);
  const Tensor src = t(Shape{2, 3}, DataType::kFloat32);
  struct Bad {
    Tensor x, index, source;
    int64_t dim;
    double alpha;
    std::string want;
  };
  const std::vector<Bad> cases = {
      {x, Place({0, 1}, Shape{1, 2}, DataType::kInt64, dev, Layout::kContiguous), src, 0, 1, "input 'index' has rank 2"},
      {x, Place({0, 1}, Shape{2}, DataType::kFloat32, dev, Layout::kContiguous), src, 0, 1, "int32 or int64"},
      {x, idx, t(Shape{2, 3}, DataType::kFloat64), 0, 1, "input 'source' has dtype float64"},
      {x, idx, t(Shape{2, 4}, DataType::kFloat32), 0, 1, "input 'source' has shape"},
      {x, idx, t(Shape{3, 3}, DataType::kFloat32), 0, 1, "length of input 'index'"},
      {x, idx, t(Shape{2, 3, 1}, DataType::kFloat32), 0, 1, "input 'source' has rank 3"},
      {x, idx, src, 2, 1, "attribute 'dim'"},
      {x, idx, src, -3, 1, "attribute 'dim'"},
      {t(Shape{4, 3}, DataType::kInt32), idx, t(Shape{2, 3}, DataType::kInt32), 0, 0.5, "attribute 'alpha'"},
      {t(Shape{4, 3}, DataType::kBool), idx, t(Shape{2, 3}, DataType::kBool), 0, 1, "bool"},
      {t(Shape{}, DataType::kFloat32), idx, t(Shape{}, DataType::kFloat32), 0, 1, "input 'x' is a scalar"},
  };
  for (const Bad& b : cases) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(b.want);
      auto r = RunIndexAdd(b.x, b.index, b.source, b.dim, b.alpha, false, in_place);
      ASSERT_FALSE(r.ok());
      const std::string msg(r.status().message());
      EXPECT_TRUE(Contains(msg, in_place ? "op 'index_add_'" : "op 'index_add'"));
      EXPECT_TRUE(Contains(msg, b.want));
    }
  }
  // In place needs a contiguous x.
  const Tensor strided = Place(RandomValues(12, DataType::kFloat32, 6), Shape{4, 3}, DataType::kFloat32, dev,
                               Layout::kStrided);
  auto r = RunIndexAdd(strided, idx, src, 0, 1, false, true);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(std::string(r.status().message()), "must be contiguous"));
}

KPS_INSTANTIATE_ON_DEVICES(IndexAddTest);

}  // namespace
}  // namespace kps
