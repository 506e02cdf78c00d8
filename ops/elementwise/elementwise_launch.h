// Host-side launch policy of the elementwise launcher (temporary, under measurement).
#pragma once

namespace kps {
namespace elementwise {

// KPS_EW_UNROLL = 1|2|4 vectors per thread per input per iteration; KPS_EW_GRID = sm
// (grid = SMs x resident blocks, blocks stride over tiles) or full (one tile per block).
struct LaunchPolicy {
  int unroll = 1;
  bool full_grid = false;
};
LaunchPolicy GetLaunchPolicy();

}  // namespace elementwise
}  // namespace kps
