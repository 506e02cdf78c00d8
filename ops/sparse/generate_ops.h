// Seeded sparse generators: rmat (Graph500's R-MAT edge list), stencil_csr (the CSR
// Laplacian of a 2-D or 3-D grid stencil) and banded_csr (a random banded matrix). They
// take no inputs; every output depends on the attributes alone, bit for bit the same on
// CPU and CUDA, because both devices call the per-edge, per-row and per-entry functions
// below. Schemas and attribute checks are in generate_op.cc (Resolve*), the CUDA parts
// and the registrations in generate_cuda.cu.
//
//   std::vector<kps::Tensor> g = *kps::Call("rmat").Attr("scale", 20).Attr("seed", 7)
//                                     .OnDevice(kps::DeviceType::kCuda).Run();  // src, dst
//
// Sizes are closed forms of the attributes (known at inference), and so is every row's
// offset, so each row (stencil_csr) or tile of entries (banded_csr, rmat) is written
// independently: no scan, no atomics.
#pragma once

#include <vector_types.h>  // uint2, uint4

#include <cstdint>
#include <type_traits>

#include "absl/status/statusor.h"
#include "functors/macros.h"
#include "functors/mp_type.h"
#include "functors/random.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace sparse {

// The most entries a generator makes in one output (2^40: 8 TiB of int64), so that an
// attribute typo is an error instead of an allocation failure or an overflow.
inline constexpr int64_t kMaxGeneratedEntries = int64_t{1} << 40;

// ---- rmat ------------------------------------------------------------------------------

// Rounds of RmatPermute.
inline constexpr int kRmatPermuteRounds = 4;
// R-MAT levels decided by one Philox call: 4 words of two 16-bit halves each.
inline constexpr int kRmatLevelsPerCall = 8;

// What the rmat kernels read: resolved and checked by ResolveRmat.
struct RmatParams {
  int64_t edges = 0;  // edge_factor * 2^scale
  int scale = 1;
  // Quadrant thresholds on a 16-bit half u: a if u < t_a, b if u < t_ab, c if u < t_abc,
  // else d: round(p * 2^16) of the cumulative probabilities (at most 65536, which no half
  // reaches: a + b + c = 1 never draws d).
  uint32_t t_a = 0, t_ab = 0, t_abc = 0;
  uint2 key{0, 0};  // PhiloxKey(seed)
  bool permute = true;
  uint32_t mul[kRmatPermuteRounds] = {};  // odd
  uint32_t add[kRmatPermuteRounds] = {};
};

// The Philox counter of call `call` (0 .. 3) of edge `edge`: {lo32(edge), hi32(edge), call, 0}.
KPS_FUNCTOR_HD uint4 RmatCounter(uint64_t edge, uint32_t call) {
  uint4 c;
  c.x = static_cast<uint32_t>(edge);
  c.y = static_cast<uint32_t>(edge >> 32);
  c.z = call;
  c.w = 0;
  return c;
}

// The seeded bijection of [0, 2^scale) that scrambles vertex labels: rounds of an odd
// multiply-add modulo 2^scale (a bijection: odd numbers are invertible mod 2^k), each
// followed by v ^= v >> ceil(scale / 2) (a bijection too: the top bits are unchanged and
// give back the rest), which carries the high bits, that the multiplication never
// reaches, down into the low ones.
KPS_FUNCTOR_HD uint32_t RmatPermute(const RmatParams& p, uint32_t v) {
  const uint32_t mask = (p.scale >= 32 ? 0u : (1u << p.scale)) - 1u;
  const int shift = (p.scale + 1) / 2;
  for (int r = 0; r < kRmatPermuteRounds; ++r) {
    v = (v * p.mul[r] + p.add[r]) & mask;
    v ^= v >> shift;
  }
  return v;
}

// (hi << 1) | (lo >> 31): `hi` shifted left with the top bit of `lo` coming in; one funnel
// shift on the device.
KPS_FUNCTOR_HD uint32_t ShiftInTopBit(uint32_t hi, uint32_t lo) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_l(lo, hi, 1);
#else
  return (hi << 1) | (lo >> 31);
#endif
}

// Two R-MAT levels from one 32-bit word, its low half first. For a half u < 2^16 and a
// threshold t <= 2^16, t - 1 - u (mod 2^32) has its top bit set exactly when u >= t. The
// source bit is u >= t_ab (quadrant c or d); the destination bit is set in quadrants b and
// d, where an odd number of u >= t_a, u >= t_ab, u >= t_abc hold (they hold in that order).
// Sign bits and funnel shifts instead of comparisons and selects: rmat at scale 26, H200,
// 23.0 ms against 30.1.
KPS_FUNCTOR_HD void RmatTwoLevels(const RmatParams& p, uint32_t word, uint32_t* src, uint32_t* dst) {
  const uint32_t halves[2] = {word & 0xffffu, word >> 16};
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int h = 0; h < 2; ++h) {
    const uint32_t u = halves[h];
    const uint32_t ge_a = p.t_a - 1u - u, ge_ab = p.t_ab - 1u - u, ge_abc = p.t_abc - 1u - u;
    *src = ShiftInTopBit(*src, ge_ab);
    *dst = ShiftInTopBit(*dst, ge_a ^ ge_ab ^ ge_abc);
  }
}

// Edge `edge` of the R-MAT stream: level l (0 = the ids' top bit) takes half l % 2 of word
// (l % 8) / 2 of Philox call l / 8 (counter RmatCounter(edge, l / 8), key p.key); then the
// labels are scrambled by RmatPermute when p.permute.
KPS_FUNCTOR_HD void RmatEdge(const RmatParams& p, uint64_t edge, uint32_t* src, uint32_t* dst) {
  uint32_t s = 0, d = 0;
  const int calls = (p.scale + kRmatLevelsPerCall - 1) / kRmatLevelsPerCall;
  for (int call = 0; call < calls; ++call) {
    const uint4 w = Philox4x32_10(RmatCounter(edge, static_cast<uint32_t>(call)), p.key);
    RmatTwoLevels(p, w.x, &s, &d);
    RmatTwoLevels(p, w.y, &s, &d);
    RmatTwoLevels(p, w.z, &s, &d);
    RmatTwoLevels(p, w.w, &s, &d);
  }
  // The last call's levels past `scale` went to the low bits: drop them (calls * 8 <= 32).
  const int extra = calls * kRmatLevelsPerCall - p.scale;
  s >>= extra;
  d >>= extra;
  if (p.permute) {
    s = RmatPermute(p, s);
    d = RmatPermute(p, d);
  }
  *src = s;
  *dst = d;
}

// The attributes of an rmat call, checked (inference and kernels both call it).
absl::StatusOr<RmatParams> ResolveRmat(const CallView& call);

// ---- stencil_csr -----------------------------------------------------------------------

// A 2-D grid [a, b] is the 3-D grid [1, a, b]: a neighbour across a dimension of size 1
// never exists, so 5 and 9 points are 7 and 27 points there.
struct StencilParams {
  int64_t n0 = 1, n1 = 1, n2 = 1;
  bool box = false;  // 9 or 27 points (every offset in {-1, 0, 1}^3); else 5 or 7 (the axes)
  int64_t rows = 0, nnz = 0;
};

// Along one dimension of size n at coordinate x: how many of x - 1, x, x + 1 exist (Count),
// and the sum of Count over the coordinates before x (Prefix; Prefix(n) = 3n - 2).
KPS_FUNCTOR_HD int64_t StencilCount(int64_t x, int64_t n) { return 1 + (x > 0 ? 1 : 0) + (x < n - 1 ? 1 : 0); }
KPS_FUNCTOR_HD int64_t StencilPrefix(int64_t x, int64_t n) { return x + (x > 0 ? x - 1 : 0) + (x < n - 1 ? x : n - 1); }

// Row r's grid coordinates (row-major); r may be p.rows (then i == n0).
struct StencilPoint {
  int64_t i, j, k;
};
KPS_FUNCTOR_HD StencilPoint StencilPointOf(const StencilParams& p, int64_t r) {
  const int64_t plane = p.n1 * p.n2;
  StencilPoint q;
  q.i = r / plane;
  const int64_t rest = r - q.i * plane;
  q.j = rest / p.n2;
  q.k = rest - q.j * p.n2;
  return q;
}

// The number of entries in the rows before row r (indptr[r]) at grid point q, in closed
// form: the rows before (i, j, k) are those with i' < i, then i' = i and j' < j, then
// i' = i, j' = j and k' < k; each set's entry count is a product (box: a row has
// Count0 * Count1 * Count2 entries) or a sum (star: 1 + the sum of (Count_d - 1)) of the
// per-dimension sums. Every term is at most nnz, so int64 suffices when nnz does.
KPS_FUNCTOR_HD int64_t StencilRowStartAt(const StencilParams& p, const StencilPoint& q) {
  const int64_t t1 = 3 * p.n1 - 2, t2 = 3 * p.n2 - 2;
  const int64_t c0 = StencilCount(q.i, p.n0), c1 = StencilCount(q.j, p.n1);
  const int64_t p0 = StencilPrefix(q.i, p.n0), p1 = StencilPrefix(q.j, p.n1), p2 = StencilPrefix(q.k, p.n2);
  if (p.box) return p0 * t1 * t2 + c0 * (p1 * t2 + c1 * p2);
  const int64_t plane = p.n1 * p.n2;
  // Star: each set's rows, plus their neighbours along each dimension (Prefix - x along
  // the dimension that varies in a prefix, 3n - 2 - n = 2(n - 1) per line along the free ones).
  const int64_t before_i = q.i * plane + (p0 - q.i) * plane + q.i * p.n2 * (t1 - p.n1) + q.i * p.n1 * (t2 - p.n2);
  const int64_t before_j = c0 * q.j * p.n2 + (p1 - q.j) * p.n2 + q.j * (t2 - p.n2);
  const int64_t before_k = (c0 + c1 - 1) * q.k + (p2 - q.k);
  return before_i + before_j + before_k;
}

// indptr[r] for 0 <= r <= rows.
KPS_FUNCTOR_HD int64_t StencilRowStart(const StencilParams& p, int64_t r) {
  if (r <= 0) return 0;  // also the empty grid, whose plane may be 0
  return StencilRowStartAt(p, StencilPointOf(p, r));
}

// The most entries of a row (27 points).
inline constexpr int kStencilMaxRowLength = 27;

// Row r's entries (at grid point q = StencilPointOf(p, r)), written to idx[0 ..) and
// val[0 ..) (the row's first entry): its neighbours and itself in ascending column order
// (offsets in lexicographic order give ascending columns), each neighbour -1 and the
// diagonal the neighbour count. Returns the row's length.
template <typename T, typename I>
KPS_FUNCTOR_HD int StencilRow(const StencilParams& p, int64_t r, const StencilPoint& q, I* idx, T* val) {
  using M = MPType<T>;
  const int64_t c0 = StencilCount(q.i, p.n0), c1 = StencilCount(q.j, p.n1), c2 = StencilCount(q.k, p.n2);
  const int64_t len = p.box ? c0 * c1 * c2 : c0 + c1 + c2 - 2;
  const T diagonal = static_cast<T>(static_cast<M>(len - 1));
  const T neighbour = static_cast<T>(static_cast<M>(-1));
  const int64_t plane = p.n1 * p.n2;
  int e = 0;
  for (int di = -1; di <= 1; ++di) {
    if (q.i + di < 0 || q.i + di >= p.n0) continue;
    for (int dj = -1; dj <= 1; ++dj) {
      if (q.j + dj < 0 || q.j + dj >= p.n1) continue;
      for (int dk = -1; dk <= 1; ++dk) {
        if (q.k + dk < 0 || q.k + dk >= p.n2) continue;
        const int off_axes = (di != 0) + (dj != 0) + (dk != 0);
        if (!p.box && off_axes > 1) continue;
        idx[e] = static_cast<I>(r + di * plane + dj * p.n2 + dk);
        val[e] = off_axes == 0 ? diagonal : neighbour;
        ++e;
      }
    }
  }
  return e;
}

absl::StatusOr<StencilParams> ResolveStencil(const CallView& call);

// ---- banded_csr ------------------------------------------------------------------------

struct BandedParams {
  int64_t n = 0;
  int64_t lower = 0, upper = 0;  // clamped to n - 1 (wider bands add nothing)
  int64_t nnz = 0;
  uint2 key{0, 0};
  bool dominant = false;
};

// Row r holds columns [max(0, r - lower), min(n - 1, r + upper)].
KPS_FUNCTOR_HD int64_t BandedFirstColumn(const BandedParams& p, int64_t r) { return r > p.lower ? r - p.lower : 0; }
KPS_FUNCTOR_HD int64_t BandedRowLength(const BandedParams& p, int64_t r) {
  const int64_t last = r + p.upper < p.n - 1 ? r + p.upper : p.n - 1;
  return last - BandedFirstColumn(p, r) + 1;
}

// indptr[r] = r * (lower + upper + 1) less the entries the top rows miss on the left
// (sum of lower - r' over r' < min(r, lower)) and the bottom rows on the right (1 + 2 + ...
// over the rows r' >= n - upper). Every term is at most about 3 * nnz.
KPS_FUNCTOR_HD int64_t BandedRowStart(const BandedParams& p, int64_t r) {
  const int64_t m = r < p.lower ? r : p.lower;
  const int64_t k = r - (p.n - p.upper) > 0 ? r - (p.n - p.upper) : 0;
  return r * (p.lower + p.upper + 1) - (m * p.lower - m * (m - 1) / 2) - k * (k + 1) / 2;
}

// The row holding entry `entry` (< nnz): the last r with BandedRowStart(r) <= entry
// (every row has its diagonal, so row starts increase strictly). Rows in [lower, n - upper]
// all have lower + upper + 1 entries and start at r * (lower + upper + 1) - lower (lower
// + 1) / 2, which gives the row at once; the others (and a guess that misses) take a
// binary search.
KPS_FUNCTOR_HD int64_t BandedRowOf(const BandedParams& p, int64_t entry) {
  const int64_t width = p.lower + p.upper + 1;
  const int64_t guess = (entry + p.lower * (p.lower + 1) / 2) / width;
  if (guess < p.n && BandedRowStart(p, guess) <= entry && (guess + 1 == p.n || BandedRowStart(p, guess + 1) > entry)) {
    return guess;
  }
  int64_t lo = 0, hi = p.n - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (BandedRowStart(p, mid) <= entry) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Significand bits of T: a value keeps that many random bits, so that it is exact in T.
template <typename T>
inline constexpr int kBandedValueBits = std::is_same_v<T, double>   ? 53
                                        : std::is_same_v<T, float>  ? 24
                                        : std::is_same_v<T, __half> ? 11
                                                                    : 8;

// The value of entry (r, c): uniform in [-1, 1) on the grid of 2^b values (b =
// kBandedValueBits<T>), v = (k - 2^(b-1)) / 2^(b-1) for the top b bits k of
// Philox4x32-10(counter {lo32(r), hi32(r), lo32(c), hi32(c)}, PhiloxKey(seed)) (word 0,
// or words 0 and 1 as (w0 << 32 | w1) for float64): exact in T, so no rounding anywhere.
// With p.dominant, the diagonal is the row's length instead (rounded to T), more than the
// sum of the other entries' magnitudes (each at most 1).
template <typename T>
KPS_FUNCTOR_HD T BandedValue(const BandedParams& p, int64_t r, int64_t c) {
  using M = MPType<T>;
  if (p.dominant && r == c) return static_cast<T>(static_cast<M>(BandedRowLength(p, r)));
  uint4 counter;
  counter.x = static_cast<uint32_t>(static_cast<uint64_t>(r));
  counter.y = static_cast<uint32_t>(static_cast<uint64_t>(r) >> 32);
  counter.z = static_cast<uint32_t>(static_cast<uint64_t>(c));
  counter.w = static_cast<uint32_t>(static_cast<uint64_t>(c) >> 32);
  const uint4 w = Philox4x32_10(counter, p.key);
  constexpr int kBits = kBandedValueBits<T>;
  if constexpr (std::is_same_v<M, double>) {
    const uint64_t k = ((static_cast<uint64_t>(w.x) << 32) | w.y) >> (64 - kBits);
    return static_cast<T>((static_cast<double>(k) - 0x1p52) * 0x1p-52);
  } else {
    const uint32_t k = w.x >> (32 - kBits);
    constexpr float kHalf = static_cast<float>(1u << (kBits - 1));
    return static_cast<T>((static_cast<float>(k) - kHalf) * (1.0f / kHalf));
  }
}

absl::StatusOr<BandedParams> ResolveBanded(const CallView& call);

// ---- the device parts ------------------------------------------------------------------

// RmatOn<D>::Run<I>(ctx, p, src, dst), StencilOn<D>::Run<T, I>(ctx, p, indptr, indices,
// values) and BandedOn<D>::Run<T, I>(...): the CPU parts here, the CUDA parts in
// generate_cuda.cu.
template <DeviceType D>
struct RmatOn;
template <DeviceType D>
struct StencilOn;
template <DeviceType D>
struct BandedOn;

template <>
struct RmatOn<DeviceType::kCpu> {
  template <typename I>
  static absl::Status Run(const KernelContext&, const RmatParams& p, I* src, I* dst) {
    for (int64_t e = 0; e < p.edges; ++e) {
      uint32_t s, d;
      RmatEdge(p, static_cast<uint64_t>(e), &s, &d);
      src[e] = static_cast<I>(s);
      dst[e] = static_cast<I>(d);
    }
    return absl::OkStatus();
  }
};

template <>
struct StencilOn<DeviceType::kCpu> {
  template <typename T, typename I>
  static absl::Status Run(const KernelContext&, const StencilParams& p, int64_t* indptr, I* indices, T* values) {
    int64_t at = 0;
    for (int64_t r = 0; r < p.rows; ++r) {
      indptr[r] = at;
      at += StencilRow(p, r, StencilPointOf(p, r), indices + at, values + at);
    }
    indptr[p.rows] = at;
    return absl::OkStatus();
  }
};

template <>
struct BandedOn<DeviceType::kCpu> {
  template <typename T, typename I>
  static absl::Status Run(const KernelContext&, const BandedParams& p, int64_t* indptr, I* indices, T* values) {
    int64_t at = 0;
    for (int64_t r = 0; r < p.n; ++r) {
      indptr[r] = at;
      const int64_t first = BandedFirstColumn(p, r), len = BandedRowLength(p, r);
      for (int64_t c = first; c < first + len; ++c, ++at) {
        indices[at] = static_cast<I>(c);
        values[at] = BandedValue<T>(p, r, c);
      }
    }
    indptr[p.n] = at;
    return absl::OkStatus();
  }
};

// ---- the kernels, one class template over the device each ------------------------------

// rmat, keyed by the ids' dtype I (int32 or int64).
template <DeviceType D, typename I>
class RmatKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const RmatParams p, ResolveRmat(*ctx));
    if (p.edges == 0) return absl::OkStatus();
    return RmatOn<D>::template Run<I>(*ctx, p, ctx->output(0).data<I>(), ctx->output(1).data<I>());
  }
};

// stencil_csr and banded_csr, keyed by the values' dtype T; the indices' dtype is
// dispatched here (int32 or int64).
template <DeviceType D, typename T>
class StencilCsrKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const StencilParams p, ResolveStencil(*ctx));
    int64_t* indptr = ctx->output(0).data<int64_t>();
    T* values = ctx->output(2).data<T>();
    if (ctx->output(1).dtype() == DataType::kInt32) {
      return StencilOn<D>::template Run<T, int32_t>(*ctx, p, indptr, ctx->output(1).data<int32_t>(), values);
    }
    return StencilOn<D>::template Run<T, int64_t>(*ctx, p, indptr, ctx->output(1).data<int64_t>(), values);
  }
};

template <DeviceType D, typename T>
class BandedCsrKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const BandedParams p, ResolveBanded(*ctx));
    int64_t* indptr = ctx->output(0).data<int64_t>();
    T* values = ctx->output(2).data<T>();
    if (ctx->output(1).dtype() == DataType::kInt32) {
      return BandedOn<D>::template Run<T, int32_t>(*ctx, p, indptr, ctx->output(1).data<int32_t>(), values);
    }
    return BandedOn<D>::template Run<T, int64_t>(*ctx, p, indptr, ctx->output(1).data<int64_t>(), values);
  }
};

}  // namespace sparse
}  // namespace kps
