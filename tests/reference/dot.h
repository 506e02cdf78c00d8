// Independent reference for dot: the sum of x[i] * y[i] in long double, in index order,
// and the sum of |x[i] * y[i]| (the scale of the rounding error any order may make).
#pragma once

#include <cmath>
#include <vector>

namespace kps {
namespace reference {

struct DotResult {
  double value = 0, magnitude = 0;
};

inline DotResult Dot(const std::vector<double>& x, const std::vector<double>& y) {
  long double s = 0, m = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const long double p = static_cast<long double>(x[i]) * y[i];
    s += p;
    m += p < 0 ? -p : p;
  }
  return {static_cast<double>(s), static_cast<double>(m)};
}

}  // namespace reference
}  // namespace kps
