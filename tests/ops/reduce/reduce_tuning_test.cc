// The reductions' launch grid (ops/reduce/reduce_tuning.h): every output block gets a
// kernel block, past the x limit along z. The "reduce_test_small_grid" CTest entry runs
// this and the GPU reduce tests with KPS_TUNE=reduce.max_grid=3, so that those launches
// take the z path on small inputs; this test checks that the setting took. The
// "reduce_test_tall" entry does the same with KPS_TUNE=reduce.tall=2, which sends every
// vector column reduction whose states fit to the tall column kernel.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "ops/reduce/reduce_tuning.h"
#include "registry/tuning.h"

namespace kps {
namespace reduce {
namespace {

// What KPS_TUNE sets, parsed again here, to check that GetTuning took it.
TuneSettings EnvTune() {
  const char* env = std::getenv("KPS_TUNE");
  return ParseTuneString(env != nullptr ? env : "");
}

TEST(ReduceGridTest, OutBlocksGridCoversEveryBlockOnce) {
  const int64_t max_x = internal::GetTuning().max_grid_x;
  const int64_t want = EnvTune().Int("reduce.max_grid", internal::kMaxGridX);
  EXPECT_EQ(max_x, want > 0 ? std::min(want, internal::kMaxGridX) : internal::kMaxGridX);
  for (int64_t blocks : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{7}, int64_t{1000},
                         int64_t{65535} * 3 + 1, int64_t{1} << 31, (int64_t{1} << 40) + 17}) {
    SCOPED_TRACE(blocks);
    const absl::StatusOr<dim3> grid = internal::OutBlocksGrid("Kernel", blocks, 5);
    ASSERT_TRUE(grid.ok()) << grid.status();
    EXPECT_EQ(grid->y, 5u);
    EXPECT_GE(grid->x, 1u);
    EXPECT_LE(int64_t{grid->x}, internal::kMaxGridX);
    EXPECT_LE(int64_t{grid->z}, internal::kMaxGridZ);
    // Every block is covered, and the last z row holds at least one of them.
    EXPECT_GE(int64_t{grid->x} * grid->z, blocks);
    EXPECT_LT(int64_t{grid->x} * (grid->z - 1), blocks);
    if (blocks <= max_x * internal::kMaxGridZ) EXPECT_EQ(int64_t{grid->x}, std::min(blocks, max_x));
  }
}

TEST(ReduceGridTest, TooManyBlocksIsAnError) {
  const absl::StatusOr<dim3> grid = internal::OutBlocksGrid("ReduceRowKernel", int64_t{1} << 47, 1);
  ASSERT_FALSE(grid.ok());
  EXPECT_EQ(grid.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(grid.status().message().find("ReduceRowKernel"), absl::string_view::npos) << grid.status();
}

// Where the tall column kernel replaces a split (132 SMs, as on the H100).
TEST(ReduceGridTest, TallColumnBlocksWhereAWaveOfThemFillsTheSms) {
  const internal::Tuning& t = internal::GetTuning();
  EXPECT_EQ(t.tall, EnvTune().Int("reduce.tall", 1));
  if (t.tall == 2) {
    // Forced: every call takes it, 32 lanes unless the outputs need no more than 16.
    EXPECT_EQ(internal::TallColumnLanes(2048, 8192, 8, 132), 32);
    EXPECT_EQ(internal::TallColumnLanes(3, 1, 1, 132), 16);
    return;
  }
  if (t.tall == 0) {
    EXPECT_EQ(internal::TallColumnLanes(2048, 8192, 8, 132), 0);
    return;
  }
  // sum_first_f32_8Kx8K: 2048 lanes of float4 -> 128 blocks of 16 x 64.
  EXPECT_EQ(internal::TallColumnLanes(2048, 8192, 8, 132), 16);
  // Twice the outputs: 128 blocks of 32 x 32.
  EXPECT_EQ(internal::TallColumnLanes(4096, 8192, 4, 132), 32);
  // Exactly one block per SM, and the fewest blocks that leave at most 1/16 idle.
  EXPECT_EQ(internal::TallColumnLanes(132 * 32, 8192, 2, 132), 32);
  EXPECT_EQ(internal::TallColumnLanes(124 * 16, 8192, 8, 132), 16);
  EXPECT_EQ(internal::TallColumnLanes(123 * 16, 8192, 8, 132), 0);
  // More blocks than SMs at both widths (a second, mostly empty wave): the split stays.
  EXPECT_EQ(internal::TallColumnLanes(133 * 32, 8192, 2, 132), 0);
  // Unsplit launches keep the column kernel.
  EXPECT_EQ(internal::TallColumnLanes(2048, 8192, 1, 132), 0);
  // Too few reduced rows for 64 rows of lanes with col_min (16 by default) each.
  EXPECT_EQ(internal::TallColumnLanes(2048, 64 * t.col_min - 1, 8, 132), 0);
  EXPECT_EQ(internal::TallColumnLanes(2048, 64 * t.col_min, 8, 132), 16);
}

// The defaults that registry/tuning.cc's table documents (for `kps` and the docs) are
// the ones GetTuning starts from.
TEST(ReduceGridTest, DocumentedDefaultsAreTuningsDefaults) {
  const internal::Tuning d;
  const std::pair<absl::string_view, int64_t> fields[] = {
      {"reduce.row_loads", d.row_loads}, {"reduce.row_threads", d.row_threads}, {"reduce.col_by", d.col_by},
      {"reduce.col_min", d.col_min},     {"reduce.waves", d.waves},             {"reduce.short", d.short_rows},
      {"reduce.col_fill", d.col_fill},   {"reduce.tall", d.tall},               {"reduce.max_grid", d.max_grid_x},
      {"reduce.narrow", d.narrow_bytes}, {"reduce.narrow_steps", d.narrow_steps}, {"reduce.col_solo", d.col_solo},
      {"reduce.row_loads_heavy", d.row_loads_heavy}, {"reduce.tiny", d.tiny_bytes},
  };
  int reduce_keys = 0;
  for (const TuneKeyInfo& k : TuneKeys()) reduce_keys += k.name.substr(0, 7) == "reduce.";
  EXPECT_EQ(reduce_keys, 14);
  for (const auto& [name, value] : fields) {
    SCOPED_TRACE(name);
    const auto it = std::find_if(TuneKeys().begin(), TuneKeys().end(),
                                 [&](const TuneKeyInfo& k) { return k.name == name; });
    ASSERT_NE(it, TuneKeys().end());
    int64_t documented = 0;
    ASSERT_TRUE(absl::SimpleAtoi(it->default_text, &documented)) << it->default_text;
    EXPECT_EQ(documented, value);
  }
}

}  // namespace
}  // namespace reduce
}  // namespace kps
