// sort, argsort and topk on every device that has their kernels: every dtype, every dim
// of shapes of rank 1 to 3, both directions, strided views, NaN, ties (stability), k
// from 0 to the line length, against an independent reference that orders (NaN flag,
// value, position) keys with std::sort. The line lengths straddle the CUDA strategies'
// edges: a warp per line (<= 128), a block (<= 1024, <= 4096), the radix sort beyond
// (one line, a few long lines one by one, or segmented), and topk's selection kernel
// (k <= 8, <= 16) and its sort path.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ops/sort/sort_cuda.h"
#include "registry/call.h"
#include "registry/kernel.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

using ::kps::testing::kAllDataTypes;

// The devices with a kernel of `op`: the test follows the registry, so CUDA is covered
// as soon as its kernels are registered.
std::vector<DeviceType> DevicesOf(const std::string& op) {
  std::vector<DeviceType> out;
  for (DeviceType dev : testing::TestDevices()) {
    for (const auto& key : KernelRegistry::Global().RegisteredKeys(op)) {
      if (key.first == dev) {
        out.push_back(dev);
        break;
      }
    }
  }
  return out;
}

// Values with many ties (small range) and, for floats, NaN and +-inf and signed zeros.
// range: values are integers in [-range, range] (then scaled for floats), so a small
// range gives many ties and a large one nearly distinct values.
Tensor TieHeavy(const Shape& shape, DataType dt, uint64_t seed, bool specials, int range = 6) {
  std::vector<double> v(shape.numel());
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> pick(-6, 6);
  std::uniform_int_distribution<int> wide(-range, range);
  // Keep integers in their type's range (an out-of-range conversion is undefined).
  const int limit = DataTypeSize(dt) == 1 ? 100 : dt == DataType::kInt16 ? 30000 : range + 1;
  for (double& x : v) {
    x = range == 6 ? pick(gen) : wide(gen) % limit;
    if (range > 6 && IsFloatingPoint(dt)) x /= 64;
    if (dt == DataType::kBool) x = x > 0;
    if (dt == DataType::kUInt8) x = std::abs(x);
    if (specials && IsFloatingPoint(dt)) {
      const int r = pick(gen);
      if (r == 6) x = std::nan("");
      if (r == -6) x = (pick(gen) > 0 ? 1 : -1) * INFINITY;
      if (r == 5) x = -0.0;
      if (r == 4) x = x / 8;
    }
  }
  Tensor t = *Tensor::Empty(shape, dt, DeviceType::kCpu);
  VisitDataType(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        p[i] = static_cast<T>(static_cast<float>(v[i]));
      } else {
        p[i] = static_cast<T>(v[i]);
      }
    }
  });
  return t;
}

// The reference order of one line: positions sorted by (is NaN, value, position)
// ascending, or (not NaN, -value, position) descending.
std::vector<int64_t> RefOrder(const std::vector<double>& line, bool descending) {
  std::vector<std::tuple<int, double, int64_t>> keys;
  for (int64_t p = 0; p < static_cast<int64_t>(line.size()); ++p) {
    const bool nan = std::isnan(line[p]);
    const double v = nan ? 0 : (line[p] == 0 ? 0.0 : line[p]);  // -0.0 == +0.0
    keys.emplace_back(descending ? !nan : nan, descending ? -v : v, p);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<int64_t> order;
  for (const auto& k : keys) order.push_back(std::get<2>(k));
  return order;
}

// Values must be the element itself: NaN for NaN, and the sign of a zero kept.
bool SameValue(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

void Check(const std::string& op, const Tensor& x, int64_t dim, bool flag, int64_t k, bool sorted) {
  SCOPED_TRACE(::testing::Message() << op << " " << DataTypeName(x.dtype()) << " " << DeviceTypeName(x.device())
                                    << " x=" << x.shape().ToString() << " dim=" << dim << " flag=" << flag
                                    << " k=" << k << " sorted=" << sorted);
  Call call(op);
  call.Input("x", x).Attr("dim", dim);
  if (op == "topk") {
    call.Attr("k", k).Attr("largest", flag).Attr("sorted", sorted);
  } else {
    call.Attr("descending", flag);
  }
  auto outs = call.Run();
  ASSERT_TRUE(outs.ok()) << outs.status();
  const int rank = x.rank();
  const int d = static_cast<int>(rank == 0 ? 0 : (dim < 0 ? dim + rank : dim));
  const int64_t n = rank == 0 ? 1 : x.shape()[d];
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < rank; ++i) {
    if (i < d) outer *= x.shape()[i];
    if (i > d) inner *= x.shape()[i];
  }
  const int64_t m = op == "topk" ? k : n;
  const std::vector<double> xs = ToDoubles(x);
  const Tensor& idx_t = op == "argsort" ? (*outs)[0] : (*outs)[1];
  ASSERT_EQ(idx_t.dtype(), DataType::kInt64);
  const std::vector<int64_t> idx = *idx_t.ToVector<int64_t>();
  std::vector<double> vals;
  if (op != "argsort") {
    ASSERT_EQ((*outs)[0].dtype(), x.dtype());
    vals = ToDoubles((*outs)[0]);
  }
  ASSERT_EQ(static_cast<int64_t>(idx.size()), outer * m * inner);
  int bad = 0;
  for (int64_t o = 0; o < outer && bad < 5; ++o) {
    for (int64_t i = 0; i < inner && bad < 5; ++i) {
      std::vector<double> line(n);
      for (int64_t p = 0; p < n; ++p) line[p] = xs[(o * n + p) * inner + i];
      std::vector<int64_t> want = RefOrder(line, flag);
      want.resize(m);
      if (op == "topk" && !sorted) std::sort(want.begin(), want.end());
      for (int64_t j = 0; j < m; ++j) {
        const int64_t at = (o * m + j) * inner + i;
        if (idx[at] != want[j]) {
          ADD_FAILURE() << "line (" << o << "," << i << ") slot " << j << ": index " << idx[at] << ", want " << want[j];
          ++bad;
          break;
        }
        if (!vals.empty() && !SameValue(vals[at], line[want[j]])) {
          ADD_FAILURE() << "line (" << o << "," << i << ") slot " << j << ": value " << vals[at] << ", want "
                        << line[want[j]];
          ++bad;
          break;
        }
      }
    }
  }
}

TEST(SortTest, EveryDtypeDimAndDirection) {
  const std::vector<Shape> shapes = {Shape{1}, Shape{37}, Shape{5, 33}, Shape{3, 17, 4}, Shape{2, 1, 129}};
  for (const std::string op : {"sort", "argsort"}) {
    for (DeviceType dev : DevicesOf(op)) {
      for (DataType dt : kAllDataTypes) {
        for (const Shape& shape : shapes) {
          const Tensor x = *TieHeavy(shape, dt, FreshSeed(), true).To(dev);
          for (int64_t dim = -shape.rank(); dim < shape.rank(); ++dim) {
            for (bool descending : {false, true}) Check(op, x, dim, descending, 0, true);
          }
        }
      }
    }
  }
}

TEST(SortTest, TopkEveryK) {
  for (DeviceType dev : DevicesOf("topk")) {
    for (DataType dt : kAllDataTypes) {
      const Shape shape{4, 23};
      const Tensor x = *TieHeavy(shape, dt, FreshSeed(), true).To(dev);
      for (int64_t k = 0; k <= 23; ++k) {
        for (bool largest : {true, false}) {
          for (bool sorted : {true, false}) Check("topk", x, 1, largest, k, sorted);
        }
      }
      Check("topk", x, 0, true, 2, true);
    }
  }
}

TEST(SortTest, StridedViewsAndLongLines) {
  for (DeviceType dev : DevicesOf("sort")) {
    const Tensor x = *TieHeavy(Shape{40, 3000}, DataType::kFloat32, FreshSeed(), true).To(dev);
    const Tensor t = *x.Transpose(0, 1);
    Check("sort", t, 0, false, 0, true);
    Check("sort", t, 1, true, 0, true);
    Check("topk", t, 0, true, 5, true);
    Check("sort", *TieHeavy(Shape{100003}, DataType::kInt32, FreshSeed(), false).To(dev), 0, true, 0, true);
  }
}

TEST(SortTest, LengthsAcrossStrategies) {
  const int64_t lengths[] = {2,    31,   32,   33,   127,  128,  129,  512,  513,
                             1000, 1024, 1025, 2048, 2049, 4095, 4096, 4097, 8191};
  const DataType dtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kInt64,
                             DataType::kFloat64, DataType::kInt8,    DataType::kBool};
  for (DeviceType dev : DevicesOf("sort")) {
    for (int64_t n : lengths) {
      for (DataType dt : dtypes) {
        const bool ties = n % 2 == 0;  // alternate tie-heavy and nearly distinct lines
        const Tensor x = *TieHeavy(Shape{3, n}, dt, FreshSeed(), true, ties ? 6 : 1 << 20).To(dev);
        Check("sort", x, 1, n % 3 == 0, 0, true);
        Check("argsort", x, -1, n % 3 != 0, 0, true);
      }
    }
  }
}

// Many short lines: on CUDA, a thread per line (a bitonic network over 8, 16 or 32 keys in
// registers) for lines of at most 32 elements when there are at least 32768 lines
// (KPS_TUNE sort.thread_max, sort.thread_lines); 33 elements or fewer lines take a warp
// per line. Lengths at every network size's edges, both directions, tie-heavy lines (the
// stable order), lines along a middle dim. The ctest entry sort_test_thread_lines runs
// the whole suite with sort.thread_lines=0, so every short line takes the thread kernel.
TEST(SortTest, ManyShortLinesAThreadEach) {
  const DataType dtypes[] = {DataType::kFloat32, DataType::kBFloat16, DataType::kInt8, DataType::kInt64,
                             DataType::kFloat64};
  for (DeviceType dev : DevicesOf("sort")) {
    for (int64_t n : {1, 2, 7, 8, 9, 16, 17, 31, 32, 33}) {
      for (DataType dt : dtypes) {
        const bool ties = n % 2 == 1;
        const int64_t lines = dev == DeviceType::kCuda ? 32768 + 5 : 300;
        const Tensor x = *TieHeavy(Shape{lines, n}, dt, FreshSeed(), true, ties ? 4 : 1 << 20).To(dev);
        Check("argsort", x, 1, n % 3 == 0, 0, true);
        if (n == 17) Check("sort", x, 1, true, 0, true);
      }
    }
    const Tensor y = *TieHeavy(Shape{64, 17, 600}, DataType::kFloat32, FreshSeed(), true, 4).To(dev);
    Check("argsort", y, 1, true, 0, true);  // 38400 lines of 17, inner 600
  }
}

// One line longer than a block sorts: on CUDA, KPS's onesweep radix sort for 1- to
// 4-byte dtypes (1, 2 or 4 digit passes; tiles of 8192 keys in the first pass and 6144
// in the others, so keys are ranked across several look-back tiles, with a partial
// last tile of 1 key, of 1 key past a warp's share, of most of a tile, or none: keys
// past the end take the last digit's last slots), with ties, NaN, +-inf and both zeros.
TEST(SortTest, OneLongLineEveryNarrowDtype) {
  const DataType dtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32,
                             DataType::kInt16,   DataType::kInt8,    DataType::kUInt8,    DataType::kBool};
  for (DeviceType dev : DevicesOf("sort")) {
    for (DataType dt : dtypes) {
      for (int64_t n :
           {int64_t{4097}, int64_t{3 * 4096 + 1}, int64_t{4096 + 513}, int64_t{8192}, int64_t{12288}, int64_t{40000}}) {
        const bool ties = n != 40000;
        const Tensor x = *TieHeavy(Shape{n}, dt, FreshSeed(), true, ties ? 6 : 1 << 20).To(dev);
        Check("sort", x, 0, false, 0, true);
        Check("sort", x, 0, true, 0, true);
        Check("argsort", x, 0, n % 2 == 0, 0, true);
      }
    }
    for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt8}) {
      const Tensor x = *TieHeavy(Shape{(int64_t{1} << 20) + 3}, dt, FreshSeed(), true, 1 << 20).To(dev);
      Check("sort", x, 0, true, 0, true);
    }
  }
}

TEST(SortTest, ManyLinesAndInnerDims) {
  for (DeviceType dev : DevicesOf("sort")) {
    // Warp-per-line blocks of 8 lines with a partial last block; lines along a middle dim.
    const Tensor a = *TieHeavy(Shape{1001, 100}, DataType::kFloat32, FreshSeed(), true).To(dev);
    Check("sort", a, 1, false, 0, true);
    Check("sort", a, 0, true, 0, true);  // 100 lines of 1001, inner 100
    // Radix sort: one long line, several (segmented), and with an inner dim.
    for (DataType dt : {DataType::kFloat32, DataType::kBFloat16, DataType::kFloat64, DataType::kInt16}) {
      Check("sort", *TieHeavy(Shape{100003}, dt, FreshSeed(), true, 1 << 20).To(dev), 0, false, 0, true);
      Check("sort", *TieHeavy(Shape{4, 5003}, dt, FreshSeed(), true).To(dev), 1, true, 0, true);
      Check("sort", *TieHeavy(Shape{2, 6000, 3}, dt, FreshSeed(), true, 1 << 20).To(dev), 1, false, 0, true);
    }
  }
}

// A few long lines: on CUDA, each sorts on its own with the whole GPU (the onesweep per
// line for contiguous lines of 1- to 4-byte keys, CUB's device radix sort per line
// between one encode and one decode otherwise) while there are at most
// sort::kPerLineMaxLines lines of at least sort::kPerLineMinKeys * lines elements; more
// lines or shorter ones take CUB's segmented sort. The cases straddle both limits (at
// their defaults, KPS_TUNE sort.per_line and sort.per_line_keys) for every key width
// (8, 16, 32 and 64 bits), both directions, contiguous lines and lines `inner` apart,
// tie-heavy and nearly distinct values with NaN, +-inf and both zeros. Indices are
// checked against the stable order, so a descending argsort of tie-heavy lines checks
// that ties keep their position order; line j's indices must be positions within line j.
TEST(SortTest, FewLongLinesOneByOne) {
  const int64_t min_keys = sort::kPerLineMinKeys;
  const int64_t max_lines = sort::kPerLineMaxLines;
  const DataType dtypes[] = {DataType::kInt8,  DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                             DataType::kInt32, DataType::kFloat64, DataType::kInt64};
  // {lines, length}: one line; 2 and 3 lines just past the block sort (segmented: too short
  // for a sort per line) and long (one by one, a prime length); 3 lines at the length limit
  // (one by one) and one element below it (segmented).
  const std::pair<int64_t, int64_t> shapes[] = {{1, 4097},  {2, 4097},        {3, 4097},           {2, 70001},
                                                {3, 70001}, {3, 3 * min_keys}, {3, 3 * min_keys - 1}};
  for (DeviceType dev : DevicesOf("sort")) {
    for (DataType dt : dtypes) {
      for (size_t i = 0; i < std::size(shapes); ++i) {
        const auto [lines, n] = shapes[i];
        // Tie-heavy lines take a descending argsort (stability), nearly distinct ones an
        // ascending one; sort goes the other way, so each shape set sees both directions.
        const bool ties = i % 2 == 0;
        const Tensor x = *TieHeavy(Shape{lines, n}, dt, FreshSeed(), true, ties ? 6 : 1 << 20).To(dev);
        Check("sort", x, 1, !ties, 0, true);
        Check("argsort", x, -1, ties, 0, true);
      }
      // Lines along dim 0 of [length, 3] (3 lines, inner 3: CUB's sort per line when long,
      // segmented when short) and along the middle dim of [2, length, 2] (4 lines of
      // outer 2 and inner 2, one by one).
      for (int64_t n : {int64_t{4097}, int64_t{70001}}) {
        const Tensor y = *TieHeavy(Shape{n, 3}, dt, FreshSeed(), true).To(dev);
        Check("sort", y, 0, true, 0, true);
        Check("argsort", y, 0, false, 0, true);
      }
      const Tensor z = *TieHeavy(Shape{2, 4 * min_keys + 9, 2}, dt, FreshSeed(), true, 1 << 20).To(dev);
      Check("sort", z, 1, false, 0, true);
      Check("argsort", z, 1, true, 0, true);
    }
    // At the line-count limit (one by one: a 4-byte key takes the onesweep per line, an
    // 8-byte one CUB's sort per line) and one line past it (segmented), with lines long
    // enough for the length limit at either count.
    const int64_t n = (max_lines + 1) * min_keys;
    const Tensor f = *TieHeavy(Shape{max_lines, n}, DataType::kFloat32, FreshSeed(), true).To(dev);
    Check("sort", f, 1, true, 0, true);
    const Tensor w = *TieHeavy(Shape{max_lines, n}, DataType::kInt64, FreshSeed(), false).To(dev);
    Check("argsort", w, 1, true, 0, true);
    const Tensor g = *TieHeavy(Shape{max_lines + 1, n}, DataType::kFloat32, FreshSeed(), true, 1 << 20).To(dev);
    Check("argsort", g, 1, false, 0, true);
  }
}

TEST(SortTest, TopkSelectionAndSortPaths) {
  for (DeviceType dev : DevicesOf("topk")) {
    for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt32}) {
      // Long lines (many elements per lane), nearly distinct and tie-heavy; an inner dim.
      const Tensor x = *TieHeavy(Shape{3, 32771}, dt, FreshSeed(), true, 1 << 20).To(dev);
      const Tensor y = *TieHeavy(Shape{2, 4100, 3}, dt, FreshSeed(), true).To(dev);
      for (int64_t k : {1, 7, 8, 9, 16, 17, 100}) {
        for (bool largest : {true, false}) {
          Check("topk", x, 1, largest, k, k % 2 == 0);
          Check("topk", y, 1, largest, k, k % 2 == 1);
        }
      }
    }
    // Ordered lines: every element enters a lane's list (ascending, largest) or none.
    std::vector<float> up(20000);
    for (size_t i = 0; i < up.size(); ++i) up[i] = static_cast<float>(i) * 0.5f - 3000.0f;
    const Tensor u = *(*Tensor::FromVector<float>(up, Shape{2, 10000})).To(dev);
    for (bool largest : {true, false}) Check("topk", u, 1, largest, 16, true);
  }
}

// Lines made of the values at the edges of the float key order (NaN of either sign,
// +-inf, both zeros, the smallest denormals, +-1), some lines mostly one of them: the
// float32 selection tests candidates with a float compare against the value at its
// bound, and these are where that bound rounds. Long lines, so each lane sees many.
TEST(SortTest, TopkFloatEdgeValues) {
  const uint32_t edges[] = {0x7fc00000u, 0xffc00001u, 0x7f800000u, 0xff800000u, 0x00000000u,
                            0x80000000u, 0x00000001u, 0x80000001u, 0x3f800000u, 0xbf800000u};
  const uint16_t edges16[] = {0x7e00u, 0xfe01u, 0x7c00u, 0xfc00u, 0x0000u, 0x8000u, 0x0001u, 0x8001u, 0x3c00u, 0xbc00u};
  std::mt19937 gen(FreshSeed());
  for (DeviceType dev : DevicesOf("topk")) {
    for (int mostly = -1; mostly < 10; ++mostly) {
      Tensor h32 = *Tensor::Empty(Shape{3, 5000}, DataType::kFloat32, DeviceType::kCpu);
      Tensor h16 = *Tensor::Empty(Shape{3, 5000}, DataType::kFloat16, DeviceType::kCpu);
      for (int64_t i = 0; i < h32.numel(); ++i) {
        const int pick = mostly >= 0 && gen() % 8 != 0 ? mostly : static_cast<int>(gen() % 10);
        std::memcpy(h32.data<float>() + i, &edges[pick], sizeof(uint32_t));
        std::memcpy(h16.data<float16>() + i, &edges16[pick], sizeof(uint16_t));
      }
      const Tensor x32 = *h32.To(dev);
      const Tensor x16 = *h16.To(dev);
      for (int64_t k : {1, 8, 16}) {
        for (bool largest : {true, false}) {
          Check("topk", x32, 1, largest, k, true);
          Check("topk", x16, 1, largest, k, false);
        }
      }
    }
  }
}

TEST(SortTest, EmptyAndRankZero) {
  for (DeviceType dev : DevicesOf("sort")) {
    Check("sort", *TieHeavy(Shape{3, 0}, DataType::kFloat32, 1, false).To(dev), 1, false, 0, true);
    Check("sort", *TieHeavy(Shape{0, 5}, DataType::kFloat32, 1, false).To(dev), 1, false, 0, true);
    Check("sort", *TieHeavy(Shape{}, DataType::kFloat32, 1, false).To(dev), -1, false, 0, true);
    Check("topk", *TieHeavy(Shape{}, DataType::kInt32, 1, false).To(dev), 0, true, 1, true);
  }
}

// Exact integer orders: int64 values that double cannot tell apart (2^63 - 1 and
// 2^63 - 2 both round to 2^63; 2^53 + 1 rounds to 2^53) must still sort by value, in
// both directions, with every index checked. Line lengths reach each CUDA strategy: a
// warp per line, a block (radix), the device radix sort (one line and segmented), and
// topk's selection (k <= 16) and its sort path.
std::vector<int64_t> WideInt64Values() {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t p53 = int64_t{1} << 53;
  const int64_t p62 = int64_t{1} << 62;
  return {kMax, kMax - 1, kMax - 2, kMax - 1024, p62 + 1, p62,      p53 + 2, p53 + 1, p53, p53 - 1,
          kMin, kMin + 1, kMin + 2, kMin + 1024, -p53 - 1, -p53, -p53 + 1, 0,       -1,  1};
}

// An int64 line of `n` values drawn from WideInt64Values (with repeats, for stability).
std::vector<int64_t> WideInt64Line(int64_t n, std::mt19937_64& gen) {
  const std::vector<int64_t> pool = WideInt64Values();
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = pool[gen() % pool.size()];
  return v;
}

// The stable order of an int64 line, compared as int64.
std::vector<int64_t> RefInt64Order(const std::vector<int64_t>& line, bool descending) {
  std::vector<int64_t> order(line.size());
  for (size_t p = 0; p < order.size(); ++p) order[p] = static_cast<int64_t>(p);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return descending ? line[a] > line[b] : line[a] < line[b]; });
  return order;
}

// Runs `op` on the [lines, n] int64 tensor v (dim 1) and checks values and indices
// exactly against RefInt64Order.
void CheckInt64(const std::string& op, DeviceType dev, const std::vector<int64_t>& v, int64_t lines, bool flag,
                int64_t k, bool sorted) {
  const int64_t n = static_cast<int64_t>(v.size()) / lines;
  SCOPED_TRACE(::testing::Message() << op << " int64 " << DeviceTypeName(dev) << " [" << lines << ", " << n
                                    << "] flag=" << flag << " k=" << k << " sorted=" << sorted);
  const Tensor x = *(*Tensor::FromVector<int64_t>(v, Shape{lines, n})).To(dev);
  Call call(op);
  call.Input("x", x).Attr("dim", int64_t{1});
  if (op == "topk") {
    call.Attr("k", k).Attr("largest", flag).Attr("sorted", sorted);
  } else {
    call.Attr("descending", flag);
  }
  auto outs = call.Run();
  ASSERT_TRUE(outs.ok()) << outs.status();
  const int64_t m = op == "topk" ? k : n;
  const std::vector<int64_t> idx = *(op == "argsort" ? (*outs)[0] : (*outs)[1]).ToVector<int64_t>();
  std::vector<int64_t> vals;
  if (op != "argsort") vals = *(*outs)[0].ToVector<int64_t>();
  ASSERT_EQ(static_cast<int64_t>(idx.size()), lines * m);
  for (int64_t o = 0; o < lines; ++o) {
    const std::vector<int64_t> line(v.begin() + o * n, v.begin() + (o + 1) * n);
    std::vector<int64_t> want = RefInt64Order(line, flag);
    want.resize(m);
    if (op == "topk" && !sorted) std::sort(want.begin(), want.end());
    for (int64_t j = 0; j < m; ++j) {
      ASSERT_EQ(idx[o * m + j], want[j]) << "line " << o << " slot " << j;
      if (!vals.empty()) {
        ASSERT_EQ(vals[o * m + j], line[want[j]]) << "line " << o << " slot " << j;
      }
    }
  }
}

TEST(SortTest, Int64BeyondDoublePrecision) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t p53 = int64_t{1} << 53;
  // The line, ascending and descending.
  const std::vector<int64_t> four = {kMax, kMax - 1, p53 + 1, p53};
  for (DeviceType dev : DevicesOf("sort")) {
    for (bool descending : {false, true}) {
      CheckInt64("sort", dev, four, 1, descending, 0, true);
      CheckInt64("argsort", dev, four, 1, descending, 0, true);
    }
    CheckInt64("sort", dev, WideInt64Values(), 1, false, 0, true);
    CheckInt64("sort", dev, WideInt64Values(), 1, true, 0, true);
  }
  std::mt19937_64 gen(FreshSeed());
  for (DeviceType dev : DevicesOf("sort")) {
    for (const auto& [lines, n] : std::vector<std::pair<int64_t, int64_t>>{{3, 37}, {2, 1000}, {1, 5000}, {3, 4500}}) {
      const std::vector<int64_t> v = WideInt64Line(lines * n, gen);
      for (bool descending : {false, true}) {
        CheckInt64("sort", dev, v, lines, descending, 0, true);
        CheckInt64("argsort", dev, v, lines, descending, 0, true);
      }
    }
  }
  for (DeviceType dev : DevicesOf("topk")) {
    for (bool largest : {false, true}) {
      CheckInt64("topk", dev, four, 1, largest, 2, true);
      CheckInt64("topk", dev, four, 1, largest, 3, false);
    }
    for (const auto& [lines, n] : std::vector<std::pair<int64_t, int64_t>>{{3, 40}, {2, 3000}}) {
      const std::vector<int64_t> v = WideInt64Line(lines * n, gen);
      for (int64_t k : {1, 5, 16, 17, 30}) {
        for (bool largest : {false, true}) {
          CheckInt64("topk", dev, v, lines, largest, k, true);
          CheckInt64("topk", dev, v, lines, largest, k, false);
        }
      }
    }
  }
}

// topk of a rank-0 x (one line of one element): k = 1 gives the element and index 0 as
// rank-0 outputs, k = 0 empty outputs of shape [0] (as k = 0 is empty for every rank),
// and any other k is an error naming the op and the attribute.
TEST(SortTest, TopkRankZero) {
  for (DeviceType dev : DevicesOf("topk")) {
    SCOPED_TRACE(DeviceTypeName(dev));
    const Tensor x = *(*Tensor::FromVector<float>({2.5f}, Shape{})).To(dev);
    for (int64_t dim : {int64_t{0}, int64_t{-1}}) {
      auto one = Call("topk").Input("x", x).Attr("k", int64_t{1}).Attr("dim", dim).Run();
      ASSERT_TRUE(one.ok()) << one.status();
      EXPECT_EQ((*one)[0].shape(), Shape{});
      EXPECT_EQ((*one)[1].shape(), Shape{});
      EXPECT_EQ(*(*one)[0].ToVector<float>(), std::vector<float>{2.5f});
      EXPECT_EQ(*(*one)[1].ToVector<int64_t>(), std::vector<int64_t>{0});
      for (bool largest : {false, true}) {
        auto zero = Call("topk").Input("x", x).Attr("k", int64_t{0}).Attr("dim", dim).Attr("largest", largest).Run();
        ASSERT_TRUE(zero.ok()) << zero.status();
        EXPECT_EQ((*zero)[0].shape(), Shape{0});
        EXPECT_EQ((*zero)[1].shape(), Shape{0});
        EXPECT_EQ((*zero)[0].dtype(), DataType::kFloat32);
        EXPECT_EQ((*zero)[1].dtype(), DataType::kInt64);
        EXPECT_EQ((*zero)[0].numel(), 0);
      }
    }
    for (int64_t k : {int64_t{2}, int64_t{-1}}) {
      auto bad = Call("topk").Input("x", x).Attr("k", k).Run();
      ASSERT_FALSE(bad.ok());
      const std::string msg(bad.status().message());
      EXPECT_TRUE(testing::Contains(msg, "op 'topk'")) << msg;
      EXPECT_TRUE(testing::Contains(msg, "'k'")) << msg;
      EXPECT_TRUE(testing::Contains(msg, "rank-0")) << msg;
    }
  }
  // k = 0 on other ranks: empty outputs with dim of size 0.
  for (DeviceType dev : DevicesOf("topk")) {
    const Tensor x = *TieHeavy(Shape{3, 4}, DataType::kFloat32, 1, false).To(dev);
    auto zero = Call("topk").Input("x", x).Attr("k", int64_t{0}).Run();
    ASSERT_TRUE(zero.ok()) << zero.status();
    EXPECT_EQ((*zero)[0].shape(), (Shape{3, 0}));
    EXPECT_EQ((*zero)[1].shape(), (Shape{3, 0}));
  }
}

TEST(SortTest, BadArguments) {
  const Tensor x = TieHeavy(Shape{4, 5}, DataType::kFloat32, 1, false);
  auto s = Call("sort").Input("x", x).Attr("dim", int64_t{2}).Run();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(testing::Contains(std::string(s.status().message()), "op 'sort'"));
  EXPECT_TRUE(testing::Contains(std::string(s.status().message()), "dim"));
  auto t = Call("topk").Input("x", x).Attr("k", int64_t{6}).Run();
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(testing::Contains(std::string(t.status().message()), "'k'"));
  auto u = Call("topk").Input("x", x).Run();
  EXPECT_FALSE(u.ok());  // k is required
}

}  // namespace
}  // namespace kps
