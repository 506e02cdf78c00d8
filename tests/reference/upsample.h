// Independent references for upsample_nearest2d and its backward, in double, from the
// definition: out[p, y, x] = in[p, y / sh, x / sw] over planes p = n * C + c; the
// backward sums each sh x sw window (also returned: the sum of magnitudes, for tolerances).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace kps {
namespace reference {

inline std::vector<double> UpsampleNearest2d(const std::vector<double>& in, int64_t planes, int64_t h, int64_t w,
                                             int64_t sh, int64_t sw) {
  std::vector<double> out(static_cast<size_t>(planes * h * sh * w * sw));
  size_t i = 0;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t y = 0; y < h * sh; ++y)
      for (int64_t x = 0; x < w * sw; ++x) out[i++] = in[(p * h + y / sh) * w + x / sw];
  return out;
}

struct WindowSums {
  std::vector<double> sum, magnitude;
};

// grad_out is [planes, h * sh, w * sw]; the result [planes, h, w].
inline WindowSums UpsampleNearest2dBackward(const std::vector<double>& grad_out, int64_t planes, int64_t h,
                                            int64_t w, int64_t sh, int64_t sw) {
  WindowSums r;
  r.sum.assign(static_cast<size_t>(planes * h * w), 0.0);
  r.magnitude.assign(r.sum.size(), 0.0);
  const int64_t oh = h * sh, ow = w * sw;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        const double v = grad_out[(p * oh + y) * ow + x];
        const size_t d = static_cast<size_t>((p * h + y / sh) * w + x / sw);
        r.sum[d] += v;
        r.magnitude[d] += std::fabs(v);
      }
  return r;
}

}  // namespace reference
}  // namespace kps
