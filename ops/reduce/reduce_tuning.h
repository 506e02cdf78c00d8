// The host side of a reduction's launch shape: the knobs (KPS_TUNE's reduce.*) and the grid
// that covers the output blocks. Host-only, so tests can reach it from .cc files.
#pragma once

#include <cuda_runtime_api.h>  // dim3

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "registry/tuning.h"

namespace kps {
namespace reduce {
namespace internal {

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int Pow2Ceil(int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p <<= 1;
  return p;
}
// Grids of more output blocks continue along z (OutBlocksGrid).
inline constexpr int64_t kMaxGridX = int64_t{1} << 30;
inline constexpr int64_t kMaxGridZ = 65535;
inline constexpr int64_t kMaxSplit = 65535;
// The block size of the tall column kernel (TallColumnLanes).
inline constexpr int kTallThreads = 1024;

// Launch-shape knobs, read once from the environment so that one benchmark run can
// compare shapes (KPS_TUNE="reduce.row_loads=4,reduce.row_threads=512,...", registry/
// tuning.h; keys as the fields, short_rows as reduce.short, narrow_bytes as reduce.narrow,
// max_grid_x as
// reduce.max_grid); the defaults are the measured choices. max_grid
// lowers the x extent of a grid, so that a test can take the z path (OutBlocksGrid) on
// small inputs.
struct Tuning {
  // Most loads per lane on long rows (the lane count is the power of two that keeps a
  // lane at or under it, 32 to 512): 4 is one batch of loads in flight for rows of up to
  // 2048 vectors.
  // mean_hw (rows of 392 vectors), H100: 128 lanes of 4 loads 2925-2961 GB/s, 64 of 7 2886-2935.
  int row_loads = 4;
  // row_loads for states of more than 8 bytes (var's, argmax's), whose merges across lanes
  // cost more than a float sum's. var_last_f32_8192x8192, H200 (run T2), back to back:
  // 4 loads 1648 GB/s, 16 3490, 32 3812 (PyTorch 2077); argmax [4097, 4097] 1085/2477/2947.
  int row_loads_heavy = 32;
  // Threads per row-kernel block (256 or 512): row_threads / lanes rows each.
  // mean_hw, H100: 4 rows of 128 lanes per block 0.2-0.4 us faster than 2 rows.
  int row_threads = 512;
  int col_by = 8;      // lanes along the reduced extent in the column kernel
  int col_min = 16;    // least reduced rows per lane before splitting further
  int waves = 1;       // split up to this many waves of resident blocks
  int short_rows = 1;  // the short-row kernel: 0 off, 1 on
  int col_fill = 2;    // the column kernel's split fills col_fill/2 x 1024 threads per SM
  int tall = 1;        // the tall column kernel: 0 off, 1 where it fills the SMs, 2 always
  // The narrow column kernel for contiguous [R, C] blocks reduced over R with rows of at
  // most narrow_bytes (0: off), blocks of at least narrow_steps steps. Awaiting measurement.
  int narrow_bytes = 128;
  // Column reductions with at least col_solo lanes' worth of outputs per SM give each lane
  // a whole column (0: off). Awaiting measurement.
  int col_solo = 768;
  int narrow_steps = 8;
  // Contiguous rows back to back of at most tiny_bytes (and kTinyMaxBytes = 64) take the
  // tiny-row kernel (0: off). [2097152, 7] over rows, H200 (run T2), back to back, tiny
  // off/on: var bf16 113/950 GB/s, sum bf16 371/1323, sum f32 1221/2464 (PyTorch 333, 623,
  // 1135). 32 vs 64 bytes not measured apart.
  int tiny_bytes = 32;
  int64_t max_grid_x = kMaxGridX;
};
inline const Tuning& GetTuning() {
  static const Tuning t = [] {
    // Saturated to int: a knob past the int range means as much as the largest int.
    const auto tune_int = [](absl::string_view key, int default_value) {
      return static_cast<int>(std::clamp<int64_t>(TuneInt(key, default_value), INT_MIN, INT_MAX));
    };
    Tuning t;
    t.row_loads = tune_int("reduce.row_loads", t.row_loads);
    t.col_by = tune_int("reduce.col_by", t.col_by);
    const int row_threads = tune_int("reduce.row_threads", t.row_threads);
    if (row_threads == 256 || row_threads == 512) t.row_threads = row_threads;
    t.col_min = tune_int("reduce.col_min", t.col_min);
    t.waves = tune_int("reduce.waves", t.waves);
    t.short_rows = tune_int("reduce.short", t.short_rows);
    t.col_fill = tune_int("reduce.col_fill", t.col_fill);
    t.tall = tune_int("reduce.tall", t.tall);
    t.narrow_bytes = tune_int("reduce.narrow", t.narrow_bytes);
    t.narrow_steps = tune_int("reduce.narrow_steps", t.narrow_steps);
    t.col_solo = tune_int("reduce.col_solo", t.col_solo);
    t.row_loads_heavy = tune_int("reduce.row_loads_heavy", t.row_loads_heavy);
    t.tiny_bytes = tune_int("reduce.tiny", t.tiny_bytes);
    const int64_t max_grid = TuneInt("reduce.max_grid", t.max_grid_x);
    if (max_grid > 0) t.max_grid_x = std::min<int64_t>(max_grid, kMaxGridX);
    return t;
  }();
  return t;
}

// The lanes (32 or 16) of the tall column kernel's blocks of kTallThreads for `groups`
// lanes' worth of outputs over `reduce_size` rows, or 0 to take the column kernel with
// `split` blocks per output block. Tall blocks replace a split (the fold at its end is
// kernel time: all of a column sum's blocks end together) where a wave of one block per
// SM covers the outputs with at most 1/16 of the SMs idle, and each row of lanes gets
// col_min rows at least. A knob (tall=2) forces them, so that tests reach the kernel.
inline int TallColumnLanes(int64_t groups, int64_t reduce_size, int64_t split, int sm_count) {
  const Tuning& t = GetTuning();
  if (t.tall == 0) return 0;
  if (t.tall == 2) return groups > 16 ? 32 : 16;
  if (split <= 1) return 0;
  for (const int bx : {32, 16}) {
    const int64_t blocks = CeilDiv(groups, bx);
    const int64_t rows = kTallThreads / bx;
    if (blocks <= sm_count && blocks * 16 >= int64_t{sm_count} * 15 && reduce_size >= rows * t.col_min) return bx;
  }
  return 0;
}

// The grid of `out_blocks` output blocks (each kernel block takes OutBlock()) and `split`
// blocks along y: x up to max_grid_x, then rows of x along z. More blocks than that (over
// 2^46) do not fit any GPU's memory as outputs.
inline absl::StatusOr<dim3> OutBlocksGrid(const char* op_kernel, int64_t out_blocks, int64_t split) {
  const int64_t x = std::min(out_blocks, std::max(GetTuning().max_grid_x, CeilDiv(out_blocks, kMaxGridZ)));
  const int64_t z = CeilDiv(out_blocks, x);
  if (x > kMaxGridX || z > kMaxGridZ) {
    return absl::InvalidArgumentError(
        absl::StrCat(op_kernel, ": ", out_blocks, " blocks of outputs are more than a grid holds (2^30 x 65535)"));
  }
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(split), static_cast<unsigned>(z));
}

}  // namespace internal
}  // namespace reduce
}  // namespace kps
