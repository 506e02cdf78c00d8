// Independent references for the scan ops (cumsum, cumprod, cummax, cummin,
// logcumsumexp, discounted_cumsum), computed from the contract (/tmp/notes/scan_spec.md)
// in double (floats; long double for logcumsumexp) or in uint64 with two's-complement
// wrap (bool and integer cumsum/cumprod), sequentially, not from the KPS functors or
// scan kernels. Inputs are x's values in row-major order (ToDoubles), its shape, and the
// dim/exclusive/reverse (and gamma) attributes as given to the op.
//
// Reverse cummax/cummin ties: out[i] is "the combine of x[i..n-1]" and the combine keeps
// the LATEST position, so among equal extremes (or among NaNs) the highest position wins
// in both directions (kReverseTiesToHighestPosition; flip it to make a reverse scan's
// "later in scan order" = lowest position win instead).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "registry/data_type.h"
#include "registry/shape.h"

namespace kps {
namespace reference {

inline constexpr bool kReverseTiesToHighestPosition = true;

// x viewed as [outer, len, inner] around the scanned dim: element j of line (o, k) is
// x[(o * len + j) * inner + k]. A rank-0 x is one line of length 1.
struct ScanLayout {
  bool ok = true;  // false: dim out of range
  int64_t outer = 1, len = 1, inner = 1;
  int64_t lines() const { return outer * inner; }
  int64_t index(int64_t line, int64_t j) const {
    const int64_t o = line / inner, k = line % inner;
    return (o * len + j) * inner + k;
  }
};

inline ScanLayout MakeScanLayout(const Shape& shape, int64_t dim) {
  ScanLayout l;
  const int rank = shape.rank();
  const int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r) {
    l.ok = false;
    return l;
  }
  if (rank == 0) return l;
  const int d = static_cast<int>(dim < 0 ? dim + rank : dim);
  for (int i = 0; i < d; ++i) l.outer *= shape[i];
  l.len = shape[d];
  for (int i = d + 1; i < rank; ++i) l.inner *= shape[i];
  return l;
}

inline std::vector<double> GatherLine(const ScanLayout& l, const std::vector<double>& x, int64_t line) {
  std::vector<double> v(static_cast<size_t>(l.len));
  for (int64_t j = 0; j < l.len; ++j) v[j] = x[l.index(line, j)];
  return v;
}

// The position of step k of the scan (k = 0 is where it starts).
inline int64_t ScanPos(int64_t n, int64_t k, bool reverse) { return reverse ? n - 1 - k : k; }

// ---- Per-line references (the result at each position of the line) ------------------

// Integer cumsum/cumprod of bool and integer inputs (exact integral doubles): uint64 wrap.
inline std::vector<int64_t> IntCumSum(const std::vector<double>& v, bool exclusive, bool reverse) {
  const int64_t n = static_cast<int64_t>(v.size());
  std::vector<int64_t> out(v.size());
  uint64_t s = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t p = ScanPos(n, k, reverse);
    if (exclusive) out[p] = static_cast<int64_t>(s);
    s += static_cast<uint64_t>(static_cast<int64_t>(v[p]));
    if (!exclusive) out[p] = static_cast<int64_t>(s);
  }
  return out;
}
inline std::vector<int64_t> IntCumProd(const std::vector<double>& v, bool exclusive, bool reverse) {
  const int64_t n = static_cast<int64_t>(v.size());
  std::vector<int64_t> out(v.size());
  uint64_t s = 1;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t p = ScanPos(n, k, reverse);
    if (exclusive) out[p] = static_cast<int64_t>(s);
    s *= static_cast<uint64_t>(static_cast<int64_t>(v[p]));
    if (!exclusive) out[p] = static_cast<int64_t>(s);
  }
  return out;
}

// A float scan's value at each position, and the sum of |x| over the elements combined
// into it (for the tolerances).
struct FloatScan {
  std::vector<double> value;
  std::vector<double> abs_sum;  // cumsum, discounted_cumsum (weighted): sum of |terms|
  std::vector<double> count;    // elements combined (discounted: sum of (distance) |terms|)
};

inline FloatScan CumSum(const std::vector<double>& v, bool exclusive, bool reverse) {
  const int64_t n = static_cast<int64_t>(v.size());
  FloatScan r{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  double s = 0, a = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t p = ScanPos(n, k, reverse);
    if (exclusive) r.value[p] = s, r.abs_sum[p] = a, r.count[p] = static_cast<double>(k);
    s += v[p];
    a += std::fabs(v[p]);
    if (!exclusive) r.value[p] = s, r.abs_sum[p] = a, r.count[p] = static_cast<double>(k + 1);
  }
  return r;
}

inline FloatScan CumProd(const std::vector<double>& v, bool exclusive, bool reverse) {
  const int64_t n = static_cast<int64_t>(v.size());
  FloatScan r{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  double s = 1;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t p = ScanPos(n, k, reverse);
    if (exclusive) r.value[p] = s, r.count[p] = static_cast<double>(k);
    s *= v[p];
    if (!exclusive) r.value[p] = s, r.count[p] = static_cast<double>(k + 1);
  }
  return r;
}

// log(sum(exp(x))) of each prefix, in long double: -inf for an empty or all -inf prefix,
// +inf once a +inf is seen, NaN once a NaN is seen.
inline FloatScan LogCumSumExp(const std::vector<double>& v, bool exclusive, bool reverse) {
  const int64_t n = static_cast<int64_t>(v.size());
  const double inf = std::numeric_limits<double>::infinity();
  FloatScan r{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  long double m = -inf, s = 0;  // running max and sum of exp(x - m)
  bool nan = false;
  auto current = [&]() -> double {
    if (nan) return std::numeric_limits<double>::quiet_NaN();
    if (m == inf) return inf;
    if (m == -inf) return -inf;
    return static_cast<double>(m + std::log(s));
  };
  for (int64_t k = 0; k < n; ++k) {
    const int64_t p = ScanPos(n, k, reverse);
    if (exclusive) r.value[p] = current(), r.count[p] = static_cast<double>(k);
    const long double x = v[p];
    if (std::isnan(v[p])) {
      nan = true;
    } else if (x > m) {
      s = (m == -inf) ? 1.0L : (std::isinf(x) ? 1.0L : s * std::exp(m - x) + 1.0L);
      m = x;
    } else if (x != -inf && m != inf) {
      s += std::exp(x - m);
    }
    if (!exclusive) r.value[p] = current(), r.count[p] = static_cast<double>(k + 1);
  }
  return r;
}

// out_incl[i] = x[i] + gamma out_incl[prev]; out_excl[i] = gamma out_incl[prev] (0 at the
// start). abs_sum = sum |gamma^d x| and count = sum d |gamma^d x| over the terms.
inline FloatScan DiscountedCumSum(const std::vector<double>& v, double gamma, bool exclusive, bool reverse) {
  const int64_t n = static_cast<int64_t>(v.size());
  FloatScan r{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  const double g = std::fabs(gamma);
  double s = 0, a = 0, w = 0;  // value, sum |terms|, sum distance |terms|
  for (int64_t k = 0; k < n; ++k) {
    const int64_t p = ScanPos(n, k, reverse);
    if (exclusive) {
      r.value[p] = gamma * s;
      r.abs_sum[p] = g * a;
      r.count[p] = g * (w + a);
    }
    s = v[p] + gamma * s;
    w = g * (w + a);  // every older term moves one step further
    a = std::fabs(v[p]) + g * a;
    if (!exclusive) r.value[p] = s, r.abs_sum[p] = a, r.count[p] = w;
  }
  return r;
}

// cummax/cummin: the value and position (int64, along the dim) at each position. Ties go
// to the latest position; NaN is greater than everything (for both), the latest NaN's
// position wins. Exclusive: the identity (`identity`, position -1) at the start.
struct ExtremeScan {
  std::vector<double> value;
  std::vector<int64_t> index;
};

inline ExtremeScan CumExtreme(const std::vector<double>& v, bool is_max, bool exclusive, bool reverse,
                              double identity) {
  const int64_t n = static_cast<int64_t>(v.size());
  ExtremeScan r{std::vector<double>(n), std::vector<int64_t>(n)};
  double cur = identity;
  int64_t at = -1;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t p = ScanPos(n, k, reverse);
    if (exclusive) r.value[p] = cur, r.index[p] = at;
    const double x = v[p];
    // Does x (at p) take over from cur (at `at`)? "later" = the higher position unless
    // reverse ties go to the scan order.
    const bool later = (!reverse || kReverseTiesToHighestPosition) ? (at < 0 || p > at) : true;
    bool take;
    if (at < 0) {
      take = true;
    } else if (std::isnan(x)) {
      take = !std::isnan(cur) || later;
    } else if (std::isnan(cur)) {
      take = false;
    } else if (x == cur) {
      take = later;
    } else {
      take = is_max ? x > cur : x < cur;
    }
    if (take) cur = x, at = p;
    if (!exclusive) r.value[p] = cur, r.index[p] = at;
  }
  return r;
}

// ---- Dtypes --------------------------------------------------------------------------

inline bool ScanFloatOnly(const std::string& op) { return op == "logcumsumexp" || op == "discounted_cumsum"; }

// The output dtype of `op` ("values" for cummax/cummin) for input dtype `in`.
inline DataType ScanOutDtype(const std::string& op, DataType in) {
  if ((op == "cumsum" || op == "cumprod") && !IsFloatingPoint(in)) return DataType::kInt64;
  return in;
}

// The exclusive identity of cummax (is_max) or cummin for dtype, as a double.
inline double ExtremeIdentity(DataType dt, bool is_max) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (dt) {
    case DataType::kBool: return is_max ? 0.0 : 1.0;
    case DataType::kInt8: return is_max ? -128.0 : 127.0;
    case DataType::kUInt8: return is_max ? 0.0 : 255.0;
    case DataType::kInt16: return is_max ? -32768.0 : 32767.0;
    case DataType::kInt32: return is_max ? -2147483648.0 : 2147483647.0;
    case DataType::kInt64:
      return is_max ? static_cast<double>(std::numeric_limits<int64_t>::lowest())
                    : static_cast<double>(std::numeric_limits<int64_t>::max());
    default: return is_max ? -inf : inf;
  }
}

}  // namespace reference
}  // namespace kps
