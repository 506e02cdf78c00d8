// Independent reference for index_add, in double (integers: in int64 with the caller
// wrapping to the dtype), straight from the definition: out = x, then for each i in order
// out[o, index[i], k] += alpha * source[o, i, k]. Also per element: how many terms were
// added and the sum of their magnitudes (|x| + sum |alpha * source|), for tolerances.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "registry/shape.h"

namespace kps {
namespace reference {

struct IndexAddResult {
  std::vector<double> value, magnitude;
  std::vector<int64_t> terms;
};

inline IndexAddResult IndexAdd(const std::vector<double>& x, const Shape& x_shape, int dim,
                               const std::vector<int64_t>& index, const std::vector<double>& source, double alpha) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < x_shape.rank(); ++d) {
    if (d < dim) outer *= x_shape[d];
    if (d > dim) inner *= x_shape[d];
  }
  const int64_t size = x_shape[dim];
  const int64_t count = static_cast<int64_t>(index.size());
  IndexAddResult r;
  r.value = x;
  r.magnitude.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) r.magnitude[i] = std::fabs(x[i]);
  r.terms.assign(x.size(), 0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < count; ++i)
      for (int64_t k = 0; k < inner; ++k) {
        const size_t d = static_cast<size_t>((o * size + index[i]) * inner + k);
        const double v = alpha * source[static_cast<size_t>((o * count + i) * inner + k)];
        r.value[d] += v;
        r.magnitude[d] += std::fabs(v);
        r.terms[d] += 1;
      }
  return r;
}

}  // namespace reference
}  // namespace kps
