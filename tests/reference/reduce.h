// Independent references for the reduction ops (sum, mean, prod, max, min, any, all,
// argmax, argmin, logsumexp, var, std), computed from the contract in double (floats)
// or in uint64 with two's-complement wrap (bool and integer sum/prod), not from the KPS
// functors or reducers. The input is x's values in row-major order (ToDoubles), its
// shape and the `dims` attribute as given to the op.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "registry/data_type.h"
#include "registry/shape.h"

namespace kps {
namespace reference {

// Where each output element's reduced set lies in x: element r of output o (r in the
// row-major order of the reduced dims, which is the argmax/argmin index) is
// x[base[o] + offset[r]].
struct ReduceLayout {
  bool ok = true;        // false: a dim out of range or repeated
  Shape out_shape;       // with or without the reduced dims, as keepdim says
  std::vector<bool> reduced;  // per dim of x
  std::vector<int64_t> base;    // one per output element
  std::vector<int64_t> offset;  // one per reduced element
  int64_t reduced_count() const { return static_cast<int64_t>(offset.size()); }
};

// dims {} means every dim; negative dims count from the end.
inline ReduceLayout MakeReduceLayout(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  ReduceLayout l;
  const int rank = shape.rank();
  l.reduced.assign(rank, dims.empty());
  for (int64_t d : dims) {
    if (d < -rank || d >= rank) {
      l.ok = false;
      return l;
    }
    const int nd = static_cast<int>(d < 0 ? d + rank : d);
    if (l.reduced[nd]) {
      l.ok = false;
      return l;
    }
    l.reduced[nd] = true;
  }
  std::vector<int64_t> stride(rank, 1);
  for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * shape[d + 1];
  std::vector<int64_t> out_dims;
  std::vector<int> kept, red;
  for (int d = 0; d < rank; ++d) {
    if (l.reduced[d]) {
      red.push_back(d);
      if (keepdim) out_dims.push_back(1);
    } else {
      kept.push_back(d);
      out_dims.push_back(shape[d]);
    }
  }
  l.out_shape = Shape(out_dims);
  // Row-major enumeration of a subset of dims: offsets into x.
  auto enumerate = [&](const std::vector<int>& ds) {
    int64_t n = 1;
    for (int d : ds) n *= shape[d];
    std::vector<int64_t> offs(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, off = 0;
      for (int k = static_cast<int>(ds.size()) - 1; k >= 0; --k) {
        off += (rem % shape[ds[k]]) * stride[ds[k]];
        rem /= shape[ds[k]];
      }
      offs[i] = off;
    }
    return offs;
  };
  l.base = enumerate(kept);
  l.offset = enumerate(red);
  return l;
}

// The reduced set of output o, in row-major order of the reduced dims.
inline std::vector<double> Gather(const ReduceLayout& l, const std::vector<double>& x, int64_t o) {
  std::vector<double> v(l.offset.size());
  for (size_t r = 0; r < l.offset.size(); ++r) v[r] = x[l.base[o] + l.offset[r]];
  return v;
}

// ---- Per-set references -------------------------------------------------------------

// Integer sum and product (bool and integer inputs, exact integral doubles): uint64 wrap.
inline int64_t IntSum(const std::vector<double>& v) {
  uint64_t s = 0;
  for (double x : v) s += static_cast<uint64_t>(static_cast<int64_t>(x));
  return static_cast<int64_t>(s);
}
inline int64_t IntProd(const std::vector<double>& v) {
  uint64_t p = 1;
  for (double x : v) p *= static_cast<uint64_t>(static_cast<int64_t>(x));
  return static_cast<int64_t>(p);
}

// Float sum in double: the exact-enough value the op approximates.
inline double Sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
inline double SumAbs(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::fabs(x);
  return s;
}
inline double Mean(const std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  return Sum(v) / static_cast<double>(v.size());
}
inline double Prod(const std::vector<double>& v) {
  double p = 1;
  for (double x : v) p *= x;
  return p;
}

// max/min: NaN when any element is NaN. The caller never asks for an empty set.
inline double Max(const std::vector<double>& v) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : v) {
    if (std::isnan(x)) return x;
    if (x > m) m = x;
  }
  return m;
}
inline double Min(const std::vector<double>& v) {
  double m = std::numeric_limits<double>::infinity();
  for (double x : v) {
    if (std::isnan(x)) return x;
    if (x < m) m = x;
  }
  return m;
}
// The first NaN's index, else the first extreme's.
inline int64_t ArgMax(const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (std::isnan(v[i])) return static_cast<int64_t>(i);
  int64_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = static_cast<int64_t>(i);
  return best;
}
inline int64_t ArgMin(const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (std::isnan(v[i])) return static_cast<int64_t>(i);
  int64_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] < v[best]) best = static_cast<int64_t>(i);
  return best;
}
// x != 0 counts as true; NaN != 0.
inline bool Any(const std::vector<double>& v) {
  for (double x : v)
    if (x != 0.0) return true;
  return false;
}
inline bool All(const std::vector<double>& v) {
  for (double x : v)
    if (x == 0.0) return false;
  return true;
}

inline int64_t CountNonzero(const std::vector<double>& v) {
  int64_t n = 0;
  for (double x : v) n += x != 0.0;  // NaN != 0
  return n;
}

// log(sum(exp(x))): NaN if any NaN; +inf if any +inf; -inf for an empty or all -inf set.
inline double LogSumExp(const std::vector<double>& v) {
  const double inf = std::numeric_limits<double>::infinity();
  double m = -inf;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  if (m == inf) return inf;
  if (m == -inf) return -inf;
  long double s = 0;
  for (double x : v) s += std::exp(static_cast<long double>(x - m));
  return m + static_cast<double>(std::log(s));
}

// Two-pass variance in long double: sum((x - mean)^2) / (N - correction); NaN when
// N - correction <= 0 or any element is NaN or infinite.
inline double Var(const std::vector<double>& v, double correction) {
  const double n = static_cast<double>(v.size());
  if (n - correction <= 0) return std::numeric_limits<double>::quiet_NaN();
  long double mean = 0;
  for (double x : v) {
    if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
    mean += x;
  }
  mean /= v.size();
  long double m2 = 0;
  for (double x : v) m2 += (x - mean) * (x - mean);
  return static_cast<double>(m2 / (n - correction));
}
inline double Std(const std::vector<double>& v, double correction) { return std::sqrt(Var(v, correction)); }

// ---- Dtypes --------------------------------------------------------------------------

// The output dtype of `op` for input dtype `in` (the contract's table).
inline DataType ReduceOutDtype(const std::string& op, DataType in) {
  if (op == "any" || op == "all") return DataType::kBool;
  if (op == "argmax" || op == "argmin" || op == "count_nonzero") return DataType::kInt64;
  if ((op == "sum" || op == "prod") && !IsFloatingPoint(in)) return DataType::kInt64;
  return in;
}
// The accumulation type's epsilon (2^-23 for float, 2^-52 for double).
inline double AccEpsilon(DataType in) {
  return in == DataType::kFloat64 ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
}
// Bits of the accumulation type's significand (24 for float, 53 for double).
inline int AccDigits(DataType in) { return in == DataType::kFloat64 ? 53 : 24; }

// The largest power of two q such that every value is a multiple of q (+inf for an
// all-zero set, 0 for a set with a non-finite value).
inline double CommonQuantum(const std::vector<double>& v) {
  double q = std::numeric_limits<double>::infinity();
  for (double x : v) {
    if (!std::isfinite(x)) return 0.0;
    if (x == 0.0) continue;
    int e;
    const double m = std::frexp(std::fabs(x), &e);  // x = m 2^e, m in [0.5, 1)
    // m * 2^53 is an integer; its lowest set bit gives x's quantum.
    uint64_t bits = static_cast<uint64_t>(std::ldexp(m, 53));
    int low = 0;
    while ((bits & 1) == 0) {
      bits >>= 1;
      ++low;
    }
    q = std::min(q, std::ldexp(1.0, e - 53 + low));
  }
  return q;
}

// True when every partial sum of `v`, in any order, is exact in the accumulation type:
// all values are multiples of one quantum q and sum|x| / q < 2^digits.
inline bool SumIsExactIn(const std::vector<double>& v, DataType in) {
  const double q = CommonQuantum(v);
  if (q == 0.0) return false;
  if (std::isinf(q)) return true;
  return SumAbs(v) / q < std::ldexp(1.0, AccDigits(in));
}

}  // namespace reference
}  // namespace kps
