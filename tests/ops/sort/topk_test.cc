// topk against an independent CPU reference (a stable sort of each line by value, NaN
// largest, -0.0 equal to +0.0, ties to the lower position), at the switch points of the
// CUDA strategies (topk_cuda.cu's ChooseTopkPath): lines of at most 128 elements (a warp
// each: 1, 17, 32, 33), k <= 16 (selection) against k > 16 (block radix select: 4096,
// 4097 with 1, 3 and 40 lines), few long lines (the radix select split across blocks:
// a prime length near 100003, a flat array of about 1M), k = 1, 16, 17, 64, 1024 and
// the whole line, every dtype class, both directions, sorted and by position, values
// from 0..3 (ties at the threshold) or spread, NaN, +-inf and both zeros, and lines along
// a dim other than the last. Outputs are poisoned before each call (0x5A bytes) so an
// unwritten element fails; values must be the input's bits exactly. tests/CMakeLists.txt
// runs these again with KPS_TUNE forcing each radix path (and the old paths) everywhere.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;

class TopkTest : public ::kps::testing::PerDeviceTest {};

// The dtype classes: 1-, 4- and 8-byte integers, the 16-bit floats, float32, float64.
constexpr DataType kTopkDtypes[] = {DataType::kInt8,     DataType::kInt32,   DataType::kInt64, DataType::kFloat16,
                                    DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};

// How an input's values are drawn.
enum class Values {
  kTies,    // 0..3: most keys tie, and the k-th key has many equals
  kSpread,  // nearly distinct (integers over the dtype's range, floats of many magnitudes)
};

// A CPU tensor of `shape` with values drawn per `mode`; floats also get NaN (either sign),
// +-inf and both zeros now and then.
Tensor MakeInput(const Shape& shape, DataType dt, Values mode, std::mt19937_64& gen) {
  Tensor t = *Tensor::Empty(shape, dt, DeviceType::kCpu);
  std::uniform_int_distribution<int> tie(0, 3);
  std::uniform_int_distribution<int> special(0, 49);
  std::uniform_int_distribution<int64_t> wide(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  std::uniform_real_distribution<double> mag(-20, 20);
  VisitDataType(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        p[i] = mode == Values::kTies ? static_cast<T>(tie(gen))
                                     : static_cast<T>(wide(gen) >> (64 - 8 * static_cast<int>(sizeof(T))));
      } else {
        double v = mode == Values::kTies ? tie(gen) : (gen() % 2 ? 1 : -1) * std::exp2(mag(gen));
        switch (special(gen)) {
          case 0:
            v = std::nan("");
            break;
          case 1:
            v = -std::nan("");
            break;
          case 2:
            v = INFINITY;
            break;
          case 3:
            v = -INFINITY;
            break;
          case 4:
            v = 0.0;
            break;
          case 5:
            v = -0.0;
            break;
          default:
            break;
        }
        if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
          p[i] = static_cast<T>(static_cast<float>(v));
        } else {
          p[i] = static_cast<T>(v);
        }
      }
    }
  });
  return t;
}

// An element as the reference orders it: NaN above everything, then the value (exact:
// integers as int64, floats as double, where every float of these dtypes is exact).
struct RefKey {
  bool nan;
  double f;
  int64_t i;
};

std::vector<RefKey> RefKeys(const Tensor& x) {
  std::vector<RefKey> keys(x.numel());
  VisitDataType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (int64_t e = 0; e < x.numel(); ++e) {
      if constexpr (std::is_integral_v<T>) {
        keys[e] = {false, 0.0, static_cast<int64_t>(p[e])};
      } else {
        const double v = static_cast<double>(static_cast<float>(p[e]));
        const double w = std::is_same_v<T, double> ? static_cast<double>(p[e]) : v;
        keys[e] = {std::isnan(w), std::isnan(w) || w == 0 ? 0.0 : w, 0};
      }
    }
  });
  return keys;
}

// Whether a goes strictly before b: largest first (NaN first) or smallest first (NaN last).
bool RefBefore(const RefKey& a, const RefKey& b, bool largest) {
  if (a.nan != b.nan) return largest ? a.nan : b.nan;
  if (a.f != b.f) return largest ? a.f > b.f : a.f < b.f;
  if (a.i != b.i) return largest ? a.i > b.i : a.i < b.i;
  return false;
}

// A tensor of `shape` and `dt` on `dev`, every byte 0x5A: an unwritten index is far out
// of range, an unwritten value differs from every input's bits that the tests draw.
Tensor Poisoned(const Shape& shape, DataType dt, DeviceType dev) {
  Tensor t = *Tensor::Empty(shape, dt, DeviceType::kCpu);
  std::memset(t.raw_data(), 0x5A, t.nbytes());
  return *t.To(dev);
}

// Checks topk of x (CPU) on `dev` along `dim` for every k in ks, both directions, sorted
// and not: indices exactly the reference's, values exactly the bits of those elements.
// The reference order of each line is computed once per direction (a stable sort).
void CheckTopk(DeviceType dev, const Tensor& x, int dim, const std::vector<int64_t>& ks, uint64_t seed) {
  const int rank = x.rank();
  const int64_t n = x.shape()[dim];
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < rank; ++i) {
    if (i < dim) outer *= x.shape()[i];
    if (i > dim) inner *= x.shape()[i];
  }
  const std::vector<RefKey> keys = RefKeys(x);
  const Tensor xd = *x.To(dev);
  const size_t es = DataTypeSize(x.dtype());
  const auto* xb = static_cast<const uint8_t*>(x.raw_data());
  for (bool largest : {true, false}) {
    // order[line][j]: the position of the line's j-th element in the stable order.
    std::vector<std::vector<int64_t>> order(outer * inner);
    const int64_t kmax = *std::max_element(ks.begin(), ks.end());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        std::vector<int64_t>& ord = order[o * inner + i];
        ord.resize(n);
        for (int64_t p = 0; p < n; ++p) ord[p] = p;
        auto before = [&](int64_t a, int64_t b) {
          return RefBefore(keys[(o * n + a) * inner + i], keys[(o * n + b) * inner + i], largest);
        };
        if (kmax < n) {
          std::partial_sort(ord.begin(), ord.begin() + kmax, ord.end(), [&](int64_t a, int64_t b) {
            return before(a, b) || (!before(b, a) && a < b);  // (key, position): the stable order
          });
          ord.resize(kmax);
        } else {
          std::stable_sort(ord.begin(), ord.end(), before);
        }
      }
    }
    for (int64_t k : ks) {
      for (bool sorted : {true, false}) {
        SCOPED_TRACE(::testing::Message() << "seed " << seed << " " << DataTypeName(x.dtype()) << " "
                                          << DeviceTypeName(dev) << " x=" << x.shape().ToString() << " dim=" << dim
                                          << " k=" << k << " largest=" << largest << " sorted=" << sorted);
        Shape out_shape = x.shape();
        out_shape[dim] = k;
        const Tensor values = Poisoned(out_shape, x.dtype(), dev);
        const Tensor indices = Poisoned(out_shape, DataType::kInt64, dev);
        auto outs = Call("topk")
                        .Input("x", xd)
                        .Output("values", values)
                        .Output("indices", indices)
                        .Attr("k", k)
                        .Attr("dim", int64_t{dim})
                        .Attr("largest", largest)
                        .Attr("sorted", sorted)
                        .Run();
        ASSERT_TRUE(outs.ok()) << outs.status();
        const Tensor vals = *(*outs)[0].To(DeviceType::kCpu);
        const std::vector<int64_t> idx = *(*outs)[1].ToVector<int64_t>();
        ASSERT_EQ(static_cast<int64_t>(idx.size()), outer * k * inner);
        const auto* vb = static_cast<const uint8_t*>(vals.raw_data());
        int bad = 0;
        for (int64_t o = 0; o < outer && bad < 3; ++o) {
          for (int64_t i = 0; i < inner && bad < 3; ++i) {
            std::vector<int64_t> want(order[o * inner + i].begin(), order[o * inner + i].begin() + k);
            if (!sorted) std::sort(want.begin(), want.end());
            for (int64_t j = 0; j < k; ++j) {
              const int64_t at = (o * k + j) * inner + i;
              if (idx[at] != want[j]) {
                ADD_FAILURE() << "line (" << o << "," << i << ") rank " << j << ": index " << idx[at] << ", want "
                              << want[j];
                ++bad;
                break;
              }
              if (std::memcmp(vb + at * es, xb + ((o * n + want[j]) * inner + i) * es, es) != 0) {
                ADD_FAILURE() << "line (" << o << "," << i << ") rank " << j << ": value bits differ from x's";
                ++bad;
                break;
              }
            }
          }
        }
        if (bad > 0) return;
      }
    }
  }
}

// The ks of the switch points that a line of n elements allows, and n itself.
std::vector<int64_t> SwitchKs(int64_t n) {
  std::vector<int64_t> ks;
  for (int64_t k : {1, 16, 17, 64, 1024}) {
    if (k < n) ks.push_back(k);
  }
  ks.push_back(n);
  return ks;
}

// Every dtype class, lines of the warp sort's edges (1, 17, 32, 33) and of the block
// paths' (4096, 4097), 1, 2 or 3 lines and many, ties and spread values.
TEST_P(TopkTest, SwitchPointsEveryDtype) {
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  struct Case {
    int64_t lines, n;
  };
  const Case cases[] = {{1, 1},   {3, 1},    {1, 17},   {2, 17},    {1001, 17}, {1, 32},
                        {3, 32},  {1001, 32}, {2, 33},  {1001, 33}, {1, 4096},  {3, 4096},
                        {20, 4096}, {1, 4097}, {2, 4097}, {20, 4097}};
  int c = 0;
  for (DataType dt : kTopkDtypes) {
    for (const Case& cs : cases) {
      const Values mode = ++c % 2 ? Values::kTies : Values::kSpread;
      const Tensor x = MakeInput(Shape{cs.lines, cs.n}, dt, mode, gen);
      CheckTopk(GetParam(), x, 1, SwitchKs(cs.n), seed);
      if (HasFailure()) return;
    }
  }
}

// Few long lines: a prime length (1 and 2 lines) and a flat array of about 1M elements,
// where the split radix select takes the lines apart across blocks.
TEST_P(TopkTest, LongLinesAndFlat) {
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  int c = 0;
  for (DataType dt : kTopkDtypes) {
    const Values mode = ++c % 2 ? Values::kTies : Values::kSpread;
    CheckTopk(GetParam(), MakeInput(Shape{1, 100003}, dt, mode, gen), 1, {1, 17, 1024}, seed);
    CheckTopk(GetParam(), MakeInput(Shape{2, 100003}, dt, mode == Values::kTies ? Values::kSpread : Values::kTies, gen),
              1, {100003}, seed);
    if (HasFailure()) return;
  }
  // The flat cases of the measurements (k = 1, 8, 64, 1024), few: the CPU kernel's own
  // topk of 1M elements is most of this file's CPU time.
  const int64_t flat = (int64_t{1} << 20) + 7;
  CheckTopk(GetParam(), MakeInput(Shape{flat}, DataType::kFloat32, Values::kTies, gen), 0, {1, 8, 1024}, seed);
  CheckTopk(GetParam(), MakeInput(Shape{flat}, DataType::kBFloat16, Values::kSpread, gen), 0, {64}, seed);
  CheckTopk(GetParam(), MakeInput(Shape{flat}, DataType::kInt32, Values::kTies, gen), 0, {8}, seed);
}

// Lines along a dim other than the last (inner > 1): short lines (a warp each), block
// lines and split lines, the positions `inner` elements apart.
TEST_P(TopkTest, InnerDims) {
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  CheckTopk(GetParam(), MakeInput(Shape{17, 300}, DataType::kFloat32, Values::kTies, gen), 0, {1, 16, 17}, seed);
  CheckTopk(GetParam(), MakeInput(Shape{3, 5000, 3}, DataType::kFloat16, Values::kTies, gen), 1, {1, 17, 100},
            seed);
  CheckTopk(GetParam(), MakeInput(Shape{2, 40000, 2}, DataType::kInt64, Values::kSpread, gen), 1, {1, 17, 1024},
            seed);
  CheckTopk(GetParam(), MakeInput(Shape{4097, 5}, DataType::kFloat64, Values::kTies, gen), 0, {3, 64}, seed);
}

// Lines of one value (every key ties at the threshold; the passes end early) and
// ordered lines (the winners are one end of the line).
TEST_P(TopkTest, AllEqualAndOrderedLines) {
  const uint64_t seed = FreshSeed();
  for (int64_t n : {int64_t{33}, int64_t{4097}, int64_t{100003}}) {
    std::vector<float> same(2 * n, 1.5f), up(2 * n);
    for (int64_t p = 0; p < 2 * n; ++p) up[p] = static_cast<float>(p % n) * 0.25f - 100.0f;
    const std::vector<int64_t> ks = {1, 17, n / 2, n};
    CheckTopk(GetParam(), *Tensor::FromVector<float>(same, Shape{2, n}), 1, ks, seed);
    CheckTopk(GetParam(), *Tensor::FromVector<float>(up, Shape{2, n}), 1, ks, seed);
  }
}

KPS_INSTANTIATE_ON_DEVICES(TopkTest);

}  // namespace
}  // namespace kps
