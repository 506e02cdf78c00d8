// Independent reference for conv1d: numpy.convolve's definition, a direct double sum.
// full[k] = sum over j of w[j] * x[k - j] for 0 <= j < m, 0 <= k - j < n (k in
// [0, n + m - 1)); "same" keeps max(n, m) values starting at (min(n, m) - 1) / 2, "valid"
// max(n, m) - min(n, m) + 1 values starting at min(n, m) - 1 (numpy's slices of full).
// Empty inputs give an empty result. Also each output's sum of |terms|, for tolerances.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace kps {
namespace reference {

struct Conv1dResult {
  std::vector<double> value, magnitude;
};

inline Conv1dResult Conv1d(const std::vector<double>& x, const std::vector<double>& w, const std::string& mode) {
  const int64_t n = static_cast<int64_t>(x.size()), m = static_cast<int64_t>(w.size());
  Conv1dResult r;
  if (n == 0 || m == 0) return r;
  std::vector<double> full(n + m - 1, 0.0), mag(n + m - 1, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      full[i + j] += x[i] * w[j];
      mag[i + j] += std::fabs(x[i] * w[j]);
    }
  int64_t start = 0, len = n + m - 1;
  const int64_t lo = std::min(n, m), hi = std::max(n, m);
  if (mode == "same") {
    start = (lo - 1) / 2;
    len = hi;
  } else if (mode == "valid") {
    start = lo - 1;
    len = hi - lo + 1;
  }
  r.value.assign(full.begin() + start, full.begin() + start + len);
  r.magnitude.assign(mag.begin() + start, mag.begin() + start + len);
  return r;
}

}  // namespace reference
}  // namespace kps
