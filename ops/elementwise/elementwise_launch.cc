#include <cstdlib>
#include <cstring>

#include "ops/elementwise/elementwise_launch.h"

namespace kps {
namespace elementwise {

LaunchPolicy GetLaunchPolicy() {
  static const LaunchPolicy policy = [] {
    LaunchPolicy p;
    if (const char* u = std::getenv("KPS_EW_UNROLL")) p.unroll = std::atoi(u);
    if (const char* g = std::getenv("KPS_EW_GRID")) p.full_grid = std::strcmp(g, "full") == 0;
    return p;
  }();
  return policy;
}

}  // namespace elementwise
}  // namespace kps
