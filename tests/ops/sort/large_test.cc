// sort and argsort of one line past 2^31 elements on the GPU (CUB's device radix sort with
// a 64-bit count and int64 positions, ops/sort/sort_radix_cuda.cu's LongLineSort): an
// int32 line of 2^31 + 17 keys, a seeded hash of the position (fresh per run) in
// [-2^19, 2^19), so each value occurs about 2^11 times and stability is checked on
// every run of equal keys, with the int32 extremes planted on both sides of position
// 2^31. sort (ascending, values and indices) and argsort (descending, indices only) are
// checked on the host in parallel: the indices are a permutation (a bitmap of the
// positions seen), each value is the input key at its index, the keys are in order, and
// equal keys keep ascending positions.
//
// Device memory, the peak of each call: x (4n bytes, 8.6 GB), the outputs (sort: values
// 4n and indices 8n; argsort: indices 8n) and the sort's scratch, which uses an output as
// one buffer of each of CUB's double buffers (sort: 4n of keys + 8n of positions;
// argsort: 2 * 4n + 8n), plus CUB's temporary storage (tens of MB): 28n bytes either way,
// about 60.1 GB (56 GiB) for n = 2^31 + 17. Host memory: about 35 GB (keys, values,
// indices and the bitmap).
//
// SeveralLinesPast2To31AreUnimplemented allocates 4 GiB of int8 input and 32 GiB of
// int64 argsort output (never written) to reach the error for two lines that long.
//
// These are slow under compute-sanitizer; tools/gpu_check.sh runs the sanitizer with
// --gtest_filter=-LargeTensor*.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "testing/support.h"
#include "tests/support/parallel_for.h"

namespace kps {
namespace {

using ::kps::test_support::ParallelFor;
using ::kps::test_support::kTestThreads;
using ::kps::testing::FreshSeed;

// splitmix64's finalizer.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The key at position i: 20 hashed bits, centred, so negative and positive keys both
// occur, each value about n / 2^20 times.
int32_t KeyAt(int64_t i, uint64_t seed) {
  return static_cast<int32_t>(Mix(static_cast<uint64_t>(i) ^ Mix(seed)) >> 44) - (int32_t{1} << 19);
}

// What CheckLine found: how many positions break each rule, and the first of them.
struct LineErrors {
  int64_t out_of_range = 0, repeated = 0, wrong_value = 0, unordered = 0, unstable = 0;
  int64_t first_bad = -1;
  int64_t total() const { return out_of_range + repeated + wrong_value + unordered + unstable; }
};

// Checks that idx (n positions) orders keys stably (ascending, or descending when asked),
// and, where values is not null, that values[i] == keys[idx[i]].
LineErrors CheckLine(const int32_t* keys, int64_t n, const int64_t* idx, const int32_t* values, bool descending) {
  std::vector<std::atomic<uint64_t>> seen(static_cast<size_t>((n + 63) / 64));  // zeroed
  std::vector<LineErrors> part(kTestThreads);
  ParallelFor(n, [&](int t, int64_t b, int64_t e) {
    LineErrors& err = part[t];
    auto bad = [&](int64_t* count, int64_t i) {
      ++*count;
      if (err.first_bad < 0) err.first_bad = i;
    };
    auto in_range = [n](int64_t j) { return j >= 0 && j < n; };
    for (int64_t i = b; i < e; ++i) {
      const int64_t j = idx[i];
      if (!in_range(j)) {
        bad(&err.out_of_range, i);
        continue;
      }
      const uint64_t bit = uint64_t{1} << (j & 63);
      if (seen[static_cast<size_t>(j >> 6)].fetch_or(bit, std::memory_order_relaxed) & bit) bad(&err.repeated, i);
      const int32_t v = keys[j];
      if (values != nullptr && values[i] != v) bad(&err.wrong_value, i);
      if (i == 0 || !in_range(idx[i - 1])) continue;
      const int32_t before = keys[idx[i - 1]];
      if (descending ? before < v : before > v) {
        bad(&err.unordered, i);
      } else if (before == v && idx[i - 1] >= j) {
        bad(&err.unstable, i);
      }
    }
  });
  // n positions in range and none twice: a permutation.
  LineErrors all;
  for (const LineErrors& p : part) {
    all.out_of_range += p.out_of_range;
    all.repeated += p.repeated;
    all.wrong_value += p.wrong_value;
    all.unordered += p.unordered;
    all.unstable += p.unstable;
    if (p.first_bad >= 0 && (all.first_bad < 0 || p.first_bad < all.first_bad)) all.first_bad = p.first_bad;
  }
  return all;
}

void ExpectNoErrors(const LineErrors& err, const int64_t* idx, const char* what) {
  EXPECT_EQ(err.total(), 0) << what << ": " << err.out_of_range << " positions out of range, " << err.repeated
                            << " repeated, " << err.wrong_value << " values not the key at their index, "
                            << err.unordered << " out of order, " << err.unstable
                            << " equal keys out of position order; the first at output " << err.first_bad
                            << " (index " << (err.first_bad >= 0 ? idx[err.first_bad] : -1) << ")";
}

TEST(LargeTensorSortGpuTest, Int32LinePast2To31Elements) {
  KPS_SKIP_WITHOUT_GPU();
  const int64_t n = (int64_t{1} << 31) + 17;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Tensor host = *Tensor::Empty(Shape{n}, DataType::kInt32, DeviceType::kCpu);
  int32_t* keys = host.data<int32_t>();
  ParallelFor(n, [&](int, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) keys[i] = KeyAt(i, seed);
  });
  // The extremes, twice each, one of each pair past 2^31: the first and last outputs.
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  const int64_t min_at[2] = {7, int64_t{1} << 31}, max_at[2] = {5, n - 1};
  for (int64_t i : min_at) keys[i] = kMin;
  for (int64_t i : max_at) keys[i] = kMax;
  const Tensor x = *host.To(DeviceType::kCuda);

  {
    auto out = Call("sort").Input("x", x).Attr("dim", int64_t{0}).Run();
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), Shape{n});
    ASSERT_EQ((*out)[1].dtype(), DataType::kInt64);
    Tensor values = *(*out)[0].To(DeviceType::kCpu);
    Tensor indices = *(*out)[1].To(DeviceType::kCpu);
    out->clear();  // the device outputs, before the argsort below
    const int32_t* v = values.data<int32_t>();
    const int64_t* idx = indices.data<int64_t>();
    ExpectNoErrors(CheckLine(keys, n, idx, v, /*descending=*/false), idx, "sort");
    // Named, so a failure at the ends of the range is visible.
    EXPECT_EQ(v[0], kMin);
    EXPECT_EQ(idx[0], min_at[0]);
    EXPECT_EQ(idx[1], min_at[1]);
    EXPECT_EQ(idx[n - 2], max_at[0]);
    EXPECT_EQ(idx[n - 1], max_at[1]);
    EXPECT_EQ(v[n - 1], kMax);
  }
  {
    auto out = Call("argsort").Input("x", x).Attr("descending", true).Run();
    ASSERT_TRUE(out.ok()) << out.status();
    Tensor indices = *(*out)[0].To(DeviceType::kCpu);
    out->clear();
    const int64_t* idx = indices.data<int64_t>();
    ExpectNoErrors(CheckLine(keys, n, idx, nullptr, /*descending=*/true), idx, "argsort descending");
    EXPECT_EQ(idx[0], max_at[0]);
    EXPECT_EQ(idx[1], max_at[1]);
    EXPECT_EQ(idx[n - 2], min_at[0]);
    EXPECT_EQ(idx[n - 1], min_at[1]);
  }
}

// Several lines each longer than 2^31 - 1 are not sorted on CUDA; the error says so.
TEST(LargeTensorSortGpuTest, SeveralLinesPast2To31AreUnimplemented) {
  KPS_SKIP_WITHOUT_GPU();
  const int64_t length = int64_t{1} << 31;
  const Tensor x = *Tensor::Empty(Shape{2, length}, DataType::kInt8, DeviceType::kCuda);
  auto out = Call("argsort").Input("x", x).Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented) << out.status();
  const std::string message(out.status().message());
  EXPECT_TRUE(testing::Contains(message, "op 'argsort'")) << message;
  EXPECT_TRUE(testing::Contains(message, "2 lines along a dim of 2147483648 elements")) << message;
  EXPECT_TRUE(testing::Contains(message, "only as the tensor's one line")) << message;
}

}  // namespace
}  // namespace kps
