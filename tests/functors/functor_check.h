// The functor test suites, shared by the host test (functor_host_test.cc: functors run
// on the CPU) and the device test (functor_device_test.cu: the same functors run in a
// CUDA kernel). Each suite takes an Applier that maps a functor over input arrays:
//
//   Applier::Map<Out>(f, xs...)        out[i] = f(xs[i]...)
//   Applier::Apply2<T, kBinary>(f, a, b)   {scalar f per element, f.Apply2 per pair}
//
// and compares every output with an independent reference computed on the host in long
// double (at least double precision; 64-bit significand on x86-64) from the exact input.
//
// Accepted error, in ulps of the output type T at the reference value:
//   - Correctly rounded functors (arithmetic, sqrt, reciprocal, divide, rounding, abs,
//     sign, min/max, clip, relu, floor_div, remainder, casts): <= 0.5 ulp (+2^-10 for the
//     reference's own rounding), for every T. Integers, bools: exact.
//   - Other functors in float32 / float64: the CUDA math library's documented maximum
//     error (expf 2 / exp 1, logf 1 / log 1, rsqrtf 2 / rsqrt 1, sinf, cosf 2 / 2,
//     tanhf 2 / tanh 1, powf 4 / pow 2, erfcf 4 / erfc 5 ulps), plus the roundings of
//     the formula, plus, where the function is ill conditioned, a term for the
//     conditioning of the rounded intermediate value (the input itself is exact):
//         exp 2/2, log 2/2, rsqrt 3/2, sin 3/3, cos 3/3, tanh 3/3, pow 6/4,
//         sigmoid 6/6, silu 7/7, gelu 7/8 + 1.5 x^2, gelu_tanh 6/6 + 3.5 |2u|
//     (float32/float64, u = sqrt(2/pi)(x + 0.044715 x^3)), plus min_normal / e where an
//     intermediate e (e^x, erfc) is subnormal and has lost bits.
//   - The same functors in float16 / bfloat16: 1 ulp of T (a faithful result: one of the
//     two T values around the exact one), since they compute in float and round once;
//     the float error above, scaled to T's ulp, is added (it is tiny except where an
//     intermediate is subnormal).
// Special values must match exactly: NaN where the reference is NaN (and nowhere else),
// the same infinity, and zeros with the reference's sign. A faithful result may overflow
// to inf where the exact value is beyond T's largest finite value.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "functors/functors.h"
#include "gtest/gtest.h"
#include "registry/data_type.h"
#include "testing/support.h"

namespace kps {
namespace testing {
namespace functor_check {

using LD = long double;
using I128 = __int128;

// std::vector without the bool specialization: Vec<bool> holds Bool8, one byte laid out
// as a bool, so its data() can be copied to and from a device bool array.
struct Bool8 {
  bool v;
  Bool8(bool b = false) : v(b) {}  // NOLINT: implicit, as bool
  operator bool() const { return v; }
};
static_assert(sizeof(Bool8) == 1 && alignof(Bool8) == 1);
template <typename T>
using Elem = std::conditional_t<std::is_same_v<T, bool>, Bool8, T>;
template <typename T>
using Vec = std::vector<Elem<T>>;
// The element type a kernel sees for a vector element type.
template <typename E>
using Raw = std::conditional_t<std::is_same_v<E, Bool8>, bool, E>;

using FloatTypes = ::testing::Types<float16, bfloat16, float, double>;
using IntTypes = ::testing::Types<int8_t, uint8_t, int16_t, int32_t, int64_t>;
using AllTypes =
    ::testing::Types<bool, int8_t, uint8_t, int16_t, int32_t, int64_t, float16, bfloat16, float, double>;
using AllTypesTuple =
    std::tuple<bool, int8_t, uint8_t, int16_t, int32_t, int64_t, float16, bfloat16, float, double>;

template <typename T>
std::string Name() {
  return std::string(DataTypeName(DataTypeOf<T>()));
}

inline LD Inf() { return std::numeric_limits<LD>::infinity(); }
inline LD NaN() { return std::numeric_limits<LD>::quiet_NaN(); }

inline std::string Str(LD v) {
  std::ostringstream s;
  s << std::setprecision(21) << v;
  return s.str();
}

// ---------------------------------------------------------------------------------
// Formats and rounding, at run time (one copy of the checking code for every type).

// A binary floating-point format: significand digits and the exponents of the smallest
// normal and the largest finite values.
struct Fmt {
  int digits;
  int min_exp;
  int max_exp;
  LD MaxFinite() const { return std::ldexp(2.0L - std::ldexp(1.0L, 1 - digits), max_exp); }
  LD MinNormal() const { return std::ldexp(1.0L, min_exp); }
  LD MinSubnormal() const { return std::ldexp(1.0L, min_exp - digits + 1); }
};
template <typename T>
constexpr Fmt FmtOf() {
  if constexpr (std::is_same_v<T, float16>) {
    return {11, -14, 15};
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return {8, -126, 127};
  } else if constexpr (std::is_same_v<T, float>) {
    return {24, -126, 127};
  } else {
    static_assert(std::is_same_v<T, double>);
    return {53, -1022, 1023};
  }
}

// v rounded to nearest even in format f (independent of CUDA's conversions); beyond the
// largest finite value it is +-inf.
inline LD RoundTo(LD v, Fmt f) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  const int e = std::max(std::ilogb(v), f.min_exp);
  const LD ulp = std::ldexp(1.0L, e - (f.digits - 1));
  const LD r = std::nearbyint(v / ulp) * ulp;
  return std::fabs(r) > f.MaxFinite() ? std::copysign(Inf(), v) : r;
}

// One ulp of format f at |v| (the spacing of its values in v's binade).
inline LD UlpAt(LD v, Fmt f) {
  int e = (v == 0 || !std::isfinite(v)) ? f.min_exp : std::ilogb(v);
  e = std::min(std::max(e, f.min_exp), f.max_exp);
  return std::ldexp(1.0L, e - (f.digits - 1));
}

// Out of line: the 16-bit conversions are sizable code on the host.
__attribute__((noinline)) inline LD HalfToLD(float16 x) { return static_cast<float>(x); }
__attribute__((noinline)) inline LD HalfToLD(bfloat16 x) { return static_cast<float>(x); }

template <typename T>
LD ToLD(T x) {
  if constexpr (std::is_same_v<T, Bool8> || std::is_same_v<T, bool>) {
    return static_cast<bool>(x) ? 1.0L : 0.0L;
  } else if constexpr (IsFloat16Type<T>) {
    return HalfToLD(x);
  } else {
    return static_cast<LD>(x);
  }
}
template <typename E>
__attribute__((noinline)) std::vector<LD> ToLDs(const std::vector<E>& v) {
  std::vector<LD> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = ToLD(v[i]);
  return out;
}

// A value of T from a long double (for building inputs; 16-bit through float).
template <typename T>
T FromLD(LD v) {
  if constexpr (IsFloat16Type<T>) {
    return static_cast<T>(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// ---------------------------------------------------------------------------------
// Checking (not templates: compiled once).

// Collects the failures of one check; reports the first few and the count.
class Report {
 public:
  Report(const std::string& what, uint64_t seed) : what_(what + " seed=" + std::to_string(seed)) {}
  Report(const Report&) = delete;
  Report& operator=(const Report&) = delete;
  ~Report() {
    if (count_ > 0) {
      ADD_FAILURE() << what_ << ": " << count_ << " of " << checked_ << " elements wrong\n" << first_;
    }
  }
  void Pass() { ++checked_; }
  void Fail(const std::string& line) {
    ++checked_;
    if (++count_ <= 8) first_ += "  " + line + "\n";
  }

 private:
  std::string what_;
  std::string first_;
  int64_t count_ = 0;
  int64_t checked_ = 0;
};

// The inputs of element i, for messages.
inline std::string Args(const std::vector<const std::vector<LD>*>& args, size_t i) {
  std::string s;
  for (size_t k = 0; k < args.size(); ++k) s += std::string(k == 0 ? "x=" : " ") + Str((*args[k])[i]);
  return s;
}

// How close a floating result must be (see the file comment).
struct Accuracy {
  bool correctly_rounded;
  double ulps_f32;
  double ulps_f64;
  double (*extra_ulps)(LD x);  // conditioning, in ulps of the computing type; may be null
};
constexpr Accuracy kExact{true, 0.5, 0.5, nullptr};

// The ulps of format `out` allowed by `acc` at input x (see the file comment).
inline LD Allowed(const Accuracy& acc, Fmt out, LD x) {
  if (acc.correctly_rounded) return 0.5L + 1.0L / 1024;  // + the reference's own rounding
  LD mp_ulps = out.digits == 53 ? acc.ulps_f64 : acc.ulps_f32;
  if (acc.extra_ulps != nullptr) mp_ulps += acc.extra_ulps(x);
  if (out.digits < 24) return 1 + mp_ulps * std::ldexp(1.0L, out.digits - 24);  // faithful + float error
  return mp_ulps;
}

// Whether `got` (in format f) is within `allowed` ulps of `ref`, with the special values
// exact. *err gets the error in ulps.
inline bool Close(LD got, LD ref, Fmt f, bool correctly_rounded, LD allowed, LD* err) {
  *err = 0;
  if (std::isnan(ref)) return std::isnan(got);
  if (std::isnan(got)) return false;
  const LD rounded = RoundTo(ref, f);
  if (got == rounded && (got != 0 || std::signbit(got) == std::signbit(rounded))) return true;
  if (ref == 0 || std::isinf(ref)) return false;  // zeros keep their sign, inf is exact
  if (std::isinf(got)) {
    return !correctly_rounded && std::signbit(got) == std::signbit(ref) && std::fabs(ref) >= f.MaxFinite();
  }
  *err = std::fabs(got - ref) / UlpAt(ref, f);
  return *err <= allowed;
}

// Floating results against exact references; args[0] is the input the conditioning
// term of `acc` depends on.
inline void CheckFloat(const std::string& what, uint64_t seed, Fmt out, const Accuracy& acc,
                       const std::vector<const std::vector<LD>*>& args, const std::vector<LD>& got,
                       const std::vector<LD>& want) {
  Report report(what, seed);
  for (size_t i = 0; i < got.size(); ++i) {
    const LD allowed = Allowed(acc, out, (*args[0])[i]);
    LD err;
    if (Close(got[i], want[i], out, acc.correctly_rounded, allowed, &err)) {
      report.Pass();
    } else {
      report.Fail(Args(args, i) + " got=" + Str(got[i]) + " want=" + Str(want[i]) + " err_ulps=" + Str(err) +
                  " allowed=" + Str(allowed));
    }
  }
}

// Results that must equal the references exactly (NaN matches NaN; zeros keep the sign).
inline void CheckExact(const std::string& what, uint64_t seed, const std::vector<const std::vector<LD>*>& args,
                       const std::vector<LD>& got, const std::vector<LD>& want) {
  Report report(what, seed);
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = (std::isnan(want[i]) && std::isnan(got[i])) ||
                      (got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i]));
    if (same) {
      report.Pass();
    } else {
      report.Fail(Args(args, i) + " got=" + Str(got[i]) + " want=" + Str(want[i]));
    }
  }
}

// ---------------------------------------------------------------------------------
// Inputs.

// Special and boundary values of a floating type, both signs.
template <typename T>
Vec<T> FloatEdges() {
  constexpr Fmt f = FmtOf<T>();
  const LD mags[] = {0.0L, 1.0L, 0.5L, 1.5L, 2.5L, 3.0L, 0.1L, 7.0L, 100.0L, 1e4L,
                     f.MinNormal(), f.MinSubnormal(), f.MaxFinite(), Inf()};
  Vec<T> v;
  for (LD m : mags) {
    v.push_back(FromLD<T>(m));
    v.push_back(FromLD<T>(-m));
  }
  v.push_back(FromLD<T>(NaN()));
  return v;
}

// Edges, then uniform values in [lo, hi), then magnitudes log-uniform in [2^-24, 2^24]
// of either sign.
template <typename T>
Vec<T> FloatInputs(std::mt19937_64& gen, double lo, double hi, int n_uniform = 2048, int n_log = 512) {
  Vec<T> v = FloatEdges<T>();
  std::uniform_real_distribution<double> u(lo, hi);
  for (int i = 0; i < n_uniform; ++i) v.push_back(FromLD<T>(u(gen)));
  std::uniform_real_distribution<double> e(-24.0, 24.0);
  std::bernoulli_distribution neg(0.5);
  for (int i = 0; i < n_log; ++i) {
    const double m = std::exp2(e(gen));
    v.push_back(FromLD<T>(neg(gen) ? -m : m));
  }
  return v;
}

template <typename T>
Vec<T> IntEdges() {
  using L = std::numeric_limits<T>;
  const int64_t hi = L::max(), lo = L::lowest();
  const int64_t vals[] = {0, 1, 2, 3, 7, 100, hi, hi - 1, hi / 2, -1, -2, -3, -7, -100, lo, lo + 1};
  Vec<T> v;
  for (int64_t x : vals) {
    if (x >= lo && x <= hi) v.push_back(static_cast<T>(x));
  }
  return v;
}

// Edges, then n values in [-1000, 1000] (clamped to T) and n over T's whole range.
template <typename T>
Vec<T> IntInputs(std::mt19937_64& gen, int n = 1024) {
  using L = std::numeric_limits<T>;
  Vec<T> v = IntEdges<T>();
  const int64_t lo = std::max<int64_t>(-1000, L::lowest()), hi = std::min<int64_t>(1000, L::max());
  std::uniform_int_distribution<int64_t> small(lo, hi);
  std::uniform_int_distribution<int64_t> full(L::lowest(), L::max());
  for (int i = 0; i < n; ++i) v.push_back(static_cast<T>(small(gen)));
  for (int i = 0; i < n; ++i) v.push_back(static_cast<T>(full(gen)));
  return v;
}

template <typename T>
Vec<T> Edges() {
  if constexpr (std::is_same_v<T, bool>) {
    return {false, true};
  } else if constexpr (IsFloatingType<T>) {
    return FloatEdges<T>();
  } else {
    return IntEdges<T>();
  }
}

template <typename T>
Vec<T> Inputs(std::mt19937_64& gen) {
  if constexpr (std::is_same_v<T, bool>) {
    Vec<T> v = {false, true};
    std::bernoulli_distribution d(0.5);
    for (int i = 0; i < 512; ++i) v.push_back(d(gen));
    return v;
  } else if constexpr (IsFloatingType<T>) {
    return FloatInputs<T>(gen, -4.0, 4.0, 1024, 256);
  } else {
    return IntInputs<T>(gen, 512);
  }
}

// Pairs for binary functors: every pair of edges, then the pairs (xs[i], ys[i]).
template <typename T>
std::pair<Vec<T>, Vec<T>> Pairs(const Vec<T>& edges, const Vec<T>& xs, const Vec<T>& ys) {
  std::pair<Vec<T>, Vec<T>> p;
  for (const auto& a : edges) {
    for (const auto& b : edges) {
      p.first.push_back(a);
      p.second.push_back(b);
    }
  }
  const size_t n = std::min(xs.size(), ys.size());
  for (size_t i = 0; i < n; ++i) {
    p.first.push_back(xs[i]);
    p.second.push_back(ys[i]);
  }
  return p;
}

// ---------------------------------------------------------------------------------
// Floating functors.

using Ref1 = LD (*)(LD);
using Ref2 = LD (*)(LD, LD);

template <typename T>
std::string Label(const std::string& name) {
  return name + "<" + Name<T>() + ">";
}

template <typename A, typename T, typename F>
void CheckUnaryFloat(const std::string& name, const F& f, Ref1 ref, const Accuracy& acc, double lo = -8,
                     double hi = 8) {
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  const Vec<T> x = FloatInputs<T>(gen, lo, hi);
  const std::vector<LD> xs = ToLDs(x), got = ToLDs(A::template Map<T>(f, x));
  std::vector<LD> want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) want[i] = ref(xs[i]);
  CheckFloat(Label<T>(name), seed, FmtOf<T>(), acc, {&xs}, got, want);
}

template <typename A, typename T, typename F>
void CheckBinaryFloat(const std::string& name, const F& f, Ref2 ref, const Accuracy& acc) {
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  const Vec<T> xs = FloatInputs<T>(gen, -4, 4, 4096, 512);
  const Vec<T> ys = FloatInputs<T>(gen, -4, 4, 4096, 512);
  const auto ab = Pairs<T>(FloatEdges<T>(), xs, ys);
  const std::vector<LD> a = ToLDs(ab.first), b = ToLDs(ab.second);
  const std::vector<LD> got = ToLDs(A::template Map<T>(f, ab.first, ab.second));
  std::vector<LD> want(a.size());
  for (size_t i = 0; i < a.size(); ++i) want[i] = ref(a[i], b[i]);
  CheckFloat(Label<T>(name), seed, FmtOf<T>(), acc, {&a, &b}, got, want);
}

// Conditioning terms (see the file comment), in ulps of float (f32 = true) or double.
template <bool f32>
double SubnormalLoss(LD e) {  // an intermediate e that is subnormal has lost bits
  const LD min_normal = (f32 ? FmtOf<float>() : FmtOf<double>()).MinNormal();
  return (e > 0 && e < min_normal) ? static_cast<double>(min_normal / e) : 0.0;
}
template <bool f32>
double SiluExtra(LD x) {
  return x < 0 ? SubnormalLoss<f32>(std::exp(x)) : 0.0;
}
// ExpApprox in float on the device: ex2.approx of x * log2(e), whose rounding adds |x|
// ulps, and results below float's smallest normal flushed to zero (any error allowed).
template <bool f32>
double ExpApproxExtra(LD x) {
  if (f32 && std::exp(x) < FmtOf<float>().MinNormal()) return std::numeric_limits<double>::infinity();
  return static_cast<double>(std::fabs(x));
}
// Exp2Approx in float on the device: results below float's smallest normal flushed to
// zero (any error allowed there).
template <bool f32>
double Exp2ApproxExtra(LD x) {
  return f32 && std::exp2(x) < FmtOf<float>().MinNormal() ? std::numeric_limits<double>::infinity() : 0.0;
}
template <bool f32>
double GeluExtra(LD x) {
  return static_cast<double>(1.5L * x * x) + SubnormalLoss<f32>(std::erfc(-x / std::sqrt(2.0L)));
}
inline LD GeluTanhV(LD x) {  // 2u
  return 2 * std::sqrt(2 / std::acos(-1.0L)) * (x + 0.044715L * x * x * x);
}
template <bool f32>
double GeluTanhExtra(LD x) {
  const LD v = GeluTanhV(x);
  return static_cast<double>(3.5L * std::fabs(v)) + SubnormalLoss<f32>(std::exp(-std::fabs(v)));
}

inline LD RefIdentity(LD x) { return x; }
inline LD RefNeg(LD x) { return -x; }
inline LD RefSquare(LD x) { return x * x; }
inline LD Quotient(LD a, LD b) { return a / b; }  // IEEE, also for b == 0
inline LD RefAbs(LD x) { return std::fabs(x); }
inline LD RefSign(LD x) { return x > 0 ? 1.0L : (x < 0 ? -1.0L : x); }
inline LD RefFloor(LD x) { return std::floor(x); }
inline LD RefCeil(LD x) { return std::ceil(x); }
inline LD RefRound(LD x) { return std::nearbyint(x); }  // half to even
inline LD RefReciprocal(LD x) { return 1 / x; }
inline LD RefSqrt(LD x) { return std::sqrt(x); }
inline LD RefRsqrt(LD x) { return 1 / std::sqrt(x); }
inline LD RefExp(LD x) { return std::exp(x); }
inline LD RefExp2(LD x) { return std::exp2(x); }
inline LD RefLog(LD x) { return std::log(x); }
inline LD RefSin(LD x) { return std::sin(x); }
inline LD RefCos(LD x) { return std::cos(x); }
inline LD RefTanh(LD x) { return std::tanh(x); }
inline LD RefRelu(LD x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0L); }
inline LD RefSigmoid(LD x) { return 1 / (1 + std::exp(-x)); }
// The limits at -inf are -0 (x * g(x) with g -> 0 faster than x grows).
inline LD RefSilu(LD x) { return std::isinf(x) && x < 0 ? -0.0L : x * RefSigmoid(x); }
inline LD RefGelu(LD x) { return std::isinf(x) && x < 0 ? -0.0L : x / 2 * std::erfc(-x / std::sqrt(2.0L)); }
// 0.5 x (1 + tanh(u)) == x / (1 + e^-2u), without cancellation.
inline LD RefGeluTanh(LD x) {
  if (std::isinf(x)) return x < 0 ? -0.0L : x;
  return x / (1 + std::exp(-GeluTanhV(x)));
}
inline LD RefAdd(LD a, LD b) { return a + b; }
inline LD RefSub(LD a, LD b) { return a - b; }
inline LD RefMul(LD a, LD b) { return a * b; }
inline LD RefPow(LD a, LD b) { return std::pow(a, b); }
inline LD RefMax(LD a, LD b) {
  if (std::isnan(a) || std::isnan(b)) return NaN();
  if (a == 0 && b == 0) return std::signbit(a) && std::signbit(b) ? -0.0L : 0.0L;
  return a > b ? a : b;
}
inline LD RefMin(LD a, LD b) {
  if (std::isnan(a) || std::isnan(b)) return NaN();
  if (a == 0 && b == 0) return std::signbit(a) || std::signbit(b) ? -0.0L : 0.0L;
  return a < b ? a : b;
}
// Python's float divmod (x // y, x % y; NumPy's for y == 0) in the computing type M
// (float for 16-bit types), from its definition: the quotient comes from the exact
// remainder fmod(x, y), so it is the floor of the exact quotient, not of the rounded
// one. Zeros take the sign of y (remainder) or of x / y (quotient); y == 0 gives x / y
// and NaN.
template <typename M>
std::pair<M, M> RefPyDivMod(M x, M y) {
  M mod = std::fmod(x, y);
  if (y == 0) return {x / y, mod};
  M div = (x - mod) / y;
  if (mod != 0 && std::signbit(mod) != std::signbit(y)) {
    mod += y;
    div -= 1;
  } else if (mod == 0) {
    mod = std::copysign(M(0), y);
  }
  if (div == 0) return {std::copysign(M(0), x / y), mod};
  M q = std::floor(div);
  if (div - q > M(0.5)) q += 1;
  return {q, mod};
}
template <typename M>
LD RefFloorDiv(LD a, LD b) {
  return RefPyDivMod<M>(static_cast<M>(a), static_cast<M>(b)).first;
}
template <typename M>
LD RefRemainder(LD a, LD b) {
  return RefPyDivMod<M>(static_cast<M>(a), static_cast<M>(b)).second;
}

// floor_div and remainder where the rounded quotient misleads: x within an ulp or two of
// k * y for |k| <= 200 (1.0 / 0.1 rounds up to 10.0, whose floor is one too high), both
// signs, against the exact floor quotient q (found by exact compares of q * y with x in
// long double, exact for these magnitudes) and the exact remainder x - q * y rounded to T:
// floor_div(x, y) * y + remainder(x, y) == x.
template <typename A, typename T>
void CheckFloorDivNearMultiples() {
  constexpr Fmt f = FmtOf<T>();
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> log_mag(-6.0, 6.0);
  std::uniform_int_distribution<int> multiple(1, 200), nudge(-2, 2);
  std::bernoulli_distribution neg(0.5);
  Vec<T> xs, ys;
  const auto add = [&](LD x, LD y) {
    xs.push_back(FromLD<T>(x));
    ys.push_back(FromLD<T>(y));
  };
  for (const LD x : {1.0L, -1.0L, 0.3L, 0.7L}) {
    for (const LD y : {0.1L, -0.1L}) add(x, y);
  }
  add(7.5L, -2.0L);
  for (int i = 0; i < 4096; ++i) {
    LD y = RoundTo(std::exp2(static_cast<LD>(log_mag(gen))), f);
    if (neg(gen)) y = -y;
    const LD k = neg(gen) ? -multiple(gen) : multiple(gen);
    const LD ky = RoundTo(k * y, f);
    add(ky + nudge(gen) * UlpAt(ky, f), y);
  }
  const std::vector<LD> a = ToLDs(xs), b = ToLDs(ys);
  std::vector<LD> want_q(a.size()), want_r(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const LD x = a[i], y = b[i];
    LD q = std::floor(x / y);
    // x / y in long double can round to an integer too: settle q by exact compares.
    const auto above = [&](LD n) { return y > 0 ? n * y > x : n * y < x; };  // n > exact quotient
    while (above(q)) q -= 1;
    while (!above(q + 1)) q += 1;
    want_q[i] = q == 0 ? std::copysign(0.0L, x / y) : q;
    const LD r = x - q * y;
    want_r[i] = r == 0 ? std::copysign(0.0L, y) : r;
  }
  CheckFloat(Label<T>("floor_div near multiples"), seed, f, kExact, {&a, &b},
             ToLDs(A::template Map<T>(FloorDivFunctor<T>(), xs, ys)), want_q);
  CheckFloat(Label<T>("remainder near multiples"), seed, f, kExact, {&a, &b},
             ToLDs(A::template Map<T>(RemainderFunctor<T>(), xs, ys)), want_r);
}

template <typename A, typename T>
void RunFloatUnary() {
  constexpr bool f32 = !std::is_same_v<T, double>;
  CheckUnaryFloat<A, T>("identity", IdentityFunctor<T>(), RefIdentity, kExact);
  CheckUnaryFloat<A, T>("inverse", InverseFunctor<T>(), RefNeg, kExact);
  CheckUnaryFloat<A, T>("square", SquareFunctor<T>(), RefSquare, kExact);
  CheckUnaryFloat<A, T>("divide(7)", DivideFunctor<T>(7), [](LD x) { return x / 7; }, kExact);
  CheckUnaryFloat<A, T>("divide(1)", DivideFunctor<T>(1), RefIdentity, kExact);
  CheckUnaryFloat<A, T>("divide(0)", DivideFunctor<T>(0), [](LD x) { return Quotient(x, 0); }, kExact);
  CheckUnaryFloat<A, T>("abs", AbsFunctor<T>(), RefAbs, kExact);
  CheckUnaryFloat<A, T>("sign", SignFunctor<T>(), RefSign, kExact);
  CheckUnaryFloat<A, T>("floor", FloorFunctor<T>(), RefFloor, kExact);
  CheckUnaryFloat<A, T>("ceil", CeilFunctor<T>(), RefCeil, kExact);
  CheckUnaryFloat<A, T>("round", RoundFunctor<T>(), RefRound, kExact);
  CheckUnaryFloat<A, T>(
      "clip(-1.5, 2.25)", ClipFunctor<T>(-1.5, 2.25),
      [](LD x) { return std::isnan(x) ? x : (x < -1.5L ? -1.5L : (x > 2.25L ? 2.25L : x)); }, kExact);
  CheckUnaryFloat<A, T>("clip(3, -1) (lo > hi gives hi)", ClipFunctor<T>(3, -1),
                        [](LD x) { return std::isnan(x) ? x : -1.0L; }, kExact);
  CheckUnaryFloat<A, T>("reciprocal", ReciprocalFunctor<T>(), RefReciprocal, kExact);
  CheckUnaryFloat<A, T>("sqrt", SqrtFunctor<T>(), RefSqrt, kExact, 0, 16);
  CheckUnaryFloat<A, T>("rsqrt", RsqrtFunctor<T>(), RefRsqrt, Accuracy{false, 3, 2, nullptr}, 0, 16);
  CheckUnaryFloat<A, T>("exp", ExpFunctor<T>(), RefExp, Accuracy{false, 2, 2, nullptr}, -12, 12);
  CheckUnaryFloat<A, T>("exp_approx", ExpApproxFunctor<T>(), RefExp, Accuracy{false, 2, 2, ExpApproxExtra<f32>},
                        -12, 12);
  CheckUnaryFloat<A, T>("exp2_approx", Exp2ApproxFunctor<T>(), RefExp2, Accuracy{false, 2, 2, Exp2ApproxExtra<f32>},
                        -16, 16);
  CheckUnaryFloat<A, T>("log", LogFunctor<T>(), RefLog, Accuracy{false, 2, 2, nullptr}, 0, 16);
  CheckUnaryFloat<A, T>("sin", SinFunctor<T>(), RefSin, Accuracy{false, 3, 3, nullptr});
  CheckUnaryFloat<A, T>("cos", CosFunctor<T>(), RefCos, Accuracy{false, 3, 3, nullptr});
  // Activations.
  CheckUnaryFloat<A, T>("relu", ReluFunctor<T>(), RefRelu, kExact);
  CheckUnaryFloat<A, T>("tanh", TanhFunctor<T>(), RefTanh, Accuracy{false, 3, 3, nullptr});
  CheckUnaryFloat<A, T>("sigmoid", SigmoidFunctor<T>(), RefSigmoid, Accuracy{false, 6, 6, nullptr});
  CheckUnaryFloat<A, T>("silu", SiluFunctor<T>(), RefSilu, Accuracy{false, 7, 7, SiluExtra<f32>});
  CheckUnaryFloat<A, T>("gelu", GeluFunctor<T>(), RefGelu, Accuracy{false, 7, 8, GeluExtra<f32>});
  CheckUnaryFloat<A, T>("gelu_tanh", GeluTanhFunctor<T>(), RefGeluTanh, Accuracy{false, 6, 6, GeluTanhExtra<f32>});
}

template <typename A, typename T>
void RunFloatBinary() {
  CheckBinaryFloat<A, T>("add", AddFunctor<T>(), RefAdd, kExact);
  CheckBinaryFloat<A, T>("sub", SubFunctor<T>(), RefSub, kExact);
  CheckBinaryFloat<A, T>("mul", MulFunctor<T>(), RefMul, kExact);
  CheckBinaryFloat<A, T>("div", DivFunctor<T>(), Quotient, kExact);
  CheckBinaryFloat<A, T>("floor_div", FloorDivFunctor<T>(), RefFloorDiv<MPType<T>>, kExact);
  CheckBinaryFloat<A, T>("remainder", RemainderFunctor<T>(), RefRemainder<MPType<T>>, kExact);
  CheckFloorDivNearMultiples<A, T>();
  CheckBinaryFloat<A, T>("pow", PowFunctor<T>(), RefPow, Accuracy{false, 6, 4, nullptr});
  CheckBinaryFloat<A, T>("max", MaxFunctor<T>(), RefMax, kExact);
  CheckBinaryFloat<A, T>("min", MinFunctor<T>(), RefMin, kExact);
  CheckBinaryFloat<A, T>("maximum", MaximumFunctor<T>(), RefMax, kExact);
  CheckBinaryFloat<A, T>("minimum", MinimumFunctor<T>(), RefMin, kExact);
}

// ---------------------------------------------------------------------------------
// Integer functors: the reference computes exactly in __int128 and wraps to T's bits.

// v modulo 2^bits, as a value of an integer type of `bits` bits and signedness.
inline I128 WrapBits(I128 v, int bits, bool is_signed) {
  const unsigned __int128 m = static_cast<unsigned __int128>(v) & ((static_cast<unsigned __int128>(1) << bits) - 1);
  const I128 r = static_cast<I128>(m);
  return (is_signed && bits < 128 && (m >> (bits - 1)) != 0) ? r - (static_cast<I128>(1) << bits) : r;
}
template <typename T>
I128 Wrap(I128 v) {
  return WrapBits(v, 8 * static_cast<int>(sizeof(T)), std::is_signed_v<T>);
}

using IRef1 = I128 (*)(I128);
using IRef2 = I128 (*)(I128, I128);

template <typename A, typename T, typename F>
void CheckUnaryInt(const std::string& name, const F& f, IRef1 ref) {
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  const Vec<T> x = IntInputs<T>(gen);
  const std::vector<LD> xs = ToLDs(x), got = ToLDs(A::template Map<T>(f, x));
  std::vector<LD> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = static_cast<LD>(Wrap<T>(ref(static_cast<I128>(x[i]))));
  CheckExact(Label<T>(name), seed, {&xs}, got, want);
}

template <typename A, typename T, typename F>
void CheckBinaryInt(const std::string& name, const F& f, IRef2 ref, bool small_exponent = false) {
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  const Vec<T> xs = IntInputs<T>(gen, 2048);
  Vec<T> ys = IntInputs<T>(gen, 2048);
  if (small_exponent) {  // pow: exponents in [-3, 70], where the result is not always 0
    const int hi = static_cast<int>(std::min<int64_t>(70, std::numeric_limits<T>::max()));
    std::uniform_int_distribution<int> d(std::is_signed_v<T> ? -3 : 0, hi);
    for (size_t i = IntEdges<T>().size(); i < ys.size(); ++i) ys[i] = static_cast<T>(d(gen));
  }
  const auto ab = Pairs<T>(IntEdges<T>(), xs, ys);
  const std::vector<LD> a = ToLDs(ab.first), b = ToLDs(ab.second);
  const std::vector<LD> got = ToLDs(A::template Map<T>(f, ab.first, ab.second));
  std::vector<LD> want(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    want[i] = static_cast<LD>(Wrap<T>(ref(static_cast<I128>(ab.first[i]), static_cast<I128>(ab.second[i]))));
  }
  CheckExact(Label<T>(name), seed, {&a, &b}, got, want);
}

// a^e modulo 2^64 by recursion (independent of the functor's loop).
inline uint64_t RefPowMod(uint64_t a, uint64_t e) {
  if (e == 0) return 1;
  if (e & 1) return a * RefPowMod(a, e - 1);
  return RefPowMod(a * a, e / 2);
}
inline I128 RefIntPow(I128 a, I128 b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b % 2 != 0) ? -1 : 1) : 0);
  return static_cast<I128>(RefPowMod(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
}
inline I128 RefIntFloorDiv(I128 a, I128 b) {
  if (b == 0) return 0;
  if (b < 0) a = -a, b = -b;
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

template <typename A, typename T>
void RunIntUnary() {
  CheckUnaryInt<A, T>("identity", IdentityFunctor<T>(), [](I128 x) { return x; });
  CheckUnaryInt<A, T>("inverse", InverseFunctor<T>(), [](I128 x) { return -x; });
  CheckUnaryInt<A, T>("square", SquareFunctor<T>(), [](I128 x) { return x * x; });
  CheckUnaryInt<A, T>("abs", AbsFunctor<T>(), [](I128 x) { return x < 0 ? -x : x; });
  CheckUnaryInt<A, T>("sign", SignFunctor<T>(), [](I128 x) { return static_cast<I128>((x > 0) - (x < 0)); });
  CheckUnaryInt<A, T>("relu", ReluFunctor<T>(), [](I128 x) { return x > 0 ? x : I128{0}; });
  CheckUnaryInt<A, T>("floor", FloorFunctor<T>(), [](I128 x) { return x; });
  CheckUnaryInt<A, T>("ceil", CeilFunctor<T>(), [](I128 x) { return x; });
  CheckUnaryInt<A, T>("round", RoundFunctor<T>(), [](I128 x) { return x; });
  CheckUnaryInt<A, T>("divide(3)", DivideFunctor<T>(3), [](I128 x) { return x / 3; });
  CheckUnaryInt<A, T>("divide(1000)", DivideFunctor<T>(1000), [](I128 x) { return x / 1000; });
  CheckUnaryInt<A, T>("divide(0) == 0", DivideFunctor<T>(0), [](I128) { return I128{0}; });
  CheckUnaryInt<A, T>("clip(3, 100)", ClipFunctor<T>(3, 100),
                      [](I128 x) { return x < 3 ? I128{3} : (x > 100 ? I128{100} : x); });
  if constexpr (std::is_signed_v<T>) {
    CheckUnaryInt<A, T>("divide(-1)", DivideFunctor<T>(-1), [](I128 x) { return -x; });
  }
}

template <typename A, typename T>
void RunIntBinary() {
  CheckBinaryInt<A, T>("add", AddFunctor<T>(), [](I128 a, I128 b) { return a + b; });
  CheckBinaryInt<A, T>("sub", SubFunctor<T>(), [](I128 a, I128 b) { return a - b; });
  CheckBinaryInt<A, T>("mul", MulFunctor<T>(), [](I128 a, I128 b) { return a * b; });
  CheckBinaryInt<A, T>("add_scaled(alpha=3)", AddScaledFunctor<T>(3), [](I128 a, I128 b) { return a + 3 * b; });
  // Division: truncation; x / 0 == 0; lowest / -1 is the exact 2^(bits-1) wrapped, i.e.
  // lowest, which the reference gets from wrapping the exact quotient.
  CheckBinaryInt<A, T>("div", DivFunctor<T>(), [](I128 a, I128 b) { return b == 0 ? I128{0} : a / b; });
  CheckBinaryInt<A, T>("floor_div", FloorDivFunctor<T>(), RefIntFloorDiv);
  // a - floor(a / b) * b, with the sign of b; a % 0 == 0 as a // 0 == 0.
  CheckBinaryInt<A, T>("remainder", RemainderFunctor<T>(),
                       [](I128 a, I128 b) { return b == 0 ? I128{0} : a - RefIntFloorDiv(a, b) * b; });
  CheckBinaryInt<A, T>("pow", PowFunctor<T>(), RefIntPow, /*small_exponent=*/true);
  CheckBinaryInt<A, T>("max", MaxFunctor<T>(), [](I128 a, I128 b) { return a > b ? a : b; });
  CheckBinaryInt<A, T>("min", MinFunctor<T>(), [](I128 a, I128 b) { return a < b ? a : b; });
}

// ---------------------------------------------------------------------------------
// Comparisons, logical functors and where, for every type: exact.

inline LD B(bool b) { return b ? 1 : 0; }

template <typename A, typename T, typename F>
void CheckPredicate(const std::string& name, uint64_t seed, const F& f, const Vec<T>& a, const Vec<T>& b,
                    const std::vector<LD>& la, const std::vector<LD>& lb, Ref2 ref) {
  std::vector<LD> want(la.size());
  for (size_t i = 0; i < la.size(); ++i) want[i] = ref(la[i], lb[i]);
  CheckExact(Label<T>(name), seed, {&la, &lb}, ToLDs(A::template Map<bool>(f, a, b)), want);
}

template <typename A, typename T>
void RunCompareLogicalWhere() {
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  const Vec<T> xs = Inputs<T>(gen);
  Vec<T> ys = Inputs<T>(gen);
  for (size_t i = 0; i < ys.size(); i += 5) ys[i] = xs[i];  // some equal pairs
  const auto ab = Pairs<T>(Edges<T>(), xs, ys);
  const Vec<T>& a = ab.first;
  const Vec<T>& b = ab.second;
  const std::vector<LD> la = ToLDs(a), lb = ToLDs(b);

  CheckPredicate<A, T>("equal", seed, EqualFunctor<T>(), a, b, la, lb, [](LD x, LD y) { return B(x == y); });
  CheckPredicate<A, T>("not_equal", seed, NotEqualFunctor<T>(), a, b, la, lb, [](LD x, LD y) { return B(x != y); });
  CheckPredicate<A, T>("less_than", seed, LessThanFunctor<T>(), a, b, la, lb, [](LD x, LD y) { return B(x < y); });
  CheckPredicate<A, T>("less_equal", seed, LessEqualFunctor<T>(), a, b, la, lb,
                       [](LD x, LD y) { return B(x <= y); });
  CheckPredicate<A, T>("greater_than", seed, GreaterThanFunctor<T>(), a, b, la, lb,
                       [](LD x, LD y) { return B(x > y); });
  CheckPredicate<A, T>("greater_equal", seed, GreaterEqualFunctor<T>(), a, b, la, lb,
                       [](LD x, LD y) { return B(x >= y); });
  CheckPredicate<A, T>("logical_and", seed, LogicalAndFunctor<T>(), a, b, la, lb,
                       [](LD x, LD y) { return B(x != 0 && y != 0); });
  CheckPredicate<A, T>("logical_or", seed, LogicalOrFunctor<T>(), a, b, la, lb,
                       [](LD x, LD y) { return B(x != 0 || y != 0); });
  CheckPredicate<A, T>("logical_xor", seed, LogicalXorFunctor<T>(), a, b, la, lb,
                       [](LD x, LD y) { return B((x != 0) != (y != 0)); });
  {
    std::vector<LD> want(la.size());
    for (size_t i = 0; i < la.size(); ++i) want[i] = B(la[i] == 0);
    CheckExact(Label<T>("logical_not"), seed, {&la}, ToLDs(A::template Map<bool>(LogicalNotFunctor<T>(), a)),
               want);
  }
  // where(cond, a, b): a bool condition, and a condition of type T (nonzero is true).
  Vec<bool> cond;
  std::bernoulli_distribution coin(0.5);
  for (size_t i = 0; i < a.size(); ++i) cond.push_back(coin(gen));
  const std::vector<LD> lc = ToLDs(cond);
  std::vector<LD> want(la.size()), want_t(la.size());
  for (size_t i = 0; i < la.size(); ++i) {
    want[i] = lc[i] != 0 ? la[i] : lb[i];
    want_t[i] = lb[i] != 0 ? la[i] : lb[i];
  }
  CheckExact(Label<T>("where(bool)"), seed, {&lc, &la, &lb}, ToLDs(A::template Map<T>(WhereFunctor<T>(), cond, a, b)),
             want);
  CheckExact(Label<T>("where(T cond)"), seed, {&lb, &la, &lb},
             ToLDs(A::template Map<T>(WhereFunctor<T, T>(), b, a, b)), want_t);
}

// ---------------------------------------------------------------------------------
// initial(): the documented identities, and f(initial, x) == x.

template <typename F, typename T>
struct InitialOf {
  KPS_FUNCTOR_HD T operator()(T) const { return F().initial(); }
};

template <typename A, typename T>
void RunInitial() {
  LD high = Inf(), low = -Inf();
  if constexpr (!IsFloatingType<T>) {
    high = static_cast<LD>(std::numeric_limits<T>::max());
    low = static_cast<LD>(std::numeric_limits<T>::lowest());
  }
  const Vec<T> x(6);
  Vec<T> got(6);
  got[0] = A::template Map<T>(InitialOf<AddFunctor<T>, T>(), Vec<T>(1))[0];
  got[1] = A::template Map<T>(InitialOf<MulFunctor<T>, T>(), Vec<T>(1))[0];
  got[2] = A::template Map<T>(InitialOf<MaxFunctor<T>, T>(), Vec<T>(1))[0];
  got[3] = A::template Map<T>(InitialOf<MinFunctor<T>, T>(), Vec<T>(1))[0];
  got[4] = A::template Map<T>(InitialOf<LogicalAndFunctor<T>, T>(), Vec<T>(1))[0];
  got[5] = A::template Map<T>(InitialOf<LogicalOrFunctor<T>, T>(), Vec<T>(1))[0];
  // The row index names the functor: add, mul, max, min, logical_and, logical_or.
  const std::vector<LD> which = {0, 1, 2, 3, 4, 5};
  CheckExact(Label<T>("initial() of add, mul, max, min, and, or"), 0, {&which}, ToLDs(got),
             {0, 1, low, high, 1, 0});
}

// f(initial, x) == x for every non-NaN x (host only: it reuses the functors' own values).
template <typename T>
void CheckInitialIsIdentity() {
  std::mt19937_64 gen(FreshSeed());
  for (const auto& e : Inputs<T>(gen)) {
    const T x = e;
    const LD lx = ToLD(x);
    if (std::isnan(lx)) continue;
    EXPECT_EQ(ToLD(MaxFunctor<T>()(MaxFunctor<T>().initial(), x)), lx) << Name<T>();
    EXPECT_EQ(ToLD(MinFunctor<T>()(MinFunctor<T>().initial(), x)), lx) << Name<T>();
    if constexpr (!std::is_same_v<T, bool>) {
      EXPECT_EQ(ToLD(AddFunctor<T>()(AddFunctor<T>().initial(), x)), lx) << Name<T>();
      EXPECT_EQ(ToLD(MulFunctor<T>()(MulFunctor<T>().initial(), x)), lx) << Name<T>();
    }
    EXPECT_EQ(LogicalAndFunctor<T>()(LogicalAndFunctor<T>().initial(), x), lx != 0) << Name<T>();
    EXPECT_EQ(LogicalOrFunctor<T>()(LogicalOrFunctor<T>().initial(), x), lx != 0) << Name<T>();
  }
}

// ---------------------------------------------------------------------------------
// Casts: every (In, Out) pair, against the documented rules (cast.h).

enum class Kind { kBool, kInt, kFloat };

// What the reference needs to know about a type.
struct TypeInfo {
  Kind kind;
  int bits;       // integers
  bool is_signed;  // integers
  Fmt fmt;        // floating types
  bool is16;      // float16 / bfloat16
};
template <typename T>
TypeInfo InfoOf() {
  if constexpr (std::is_same_v<T, bool>) {
    return {Kind::kBool, 1, false, {}, false};
  } else if constexpr (std::is_integral_v<T>) {
    return {Kind::kInt, 8 * static_cast<int>(sizeof(T)), std::is_signed_v<T>, {}, false};
  } else {
    return {Kind::kFloat, 0, false, FmtOf<T>(), IsFloat16Type<T>};
  }
}

inline LD RefCast(LD v, TypeInfo in, TypeInfo out) {
  switch (out.kind) {
    case Kind::kBool:
      return B(v != 0);  // NaN != 0
    case Kind::kInt: {
      if (in.kind != Kind::kFloat) return static_cast<LD>(WrapBits(static_cast<I128>(v), out.bits, out.is_signed));
      if (std::isnan(v)) return 0;
      const LD t = std::trunc(v) + 0.0L;  // integers have no -0
      const LD hi = std::ldexp(1.0L, out.bits - (out.is_signed ? 1 : 0)) - 1;
      const LD lo = out.is_signed ? -hi - 1 : 0;
      return t > hi ? hi : (t < lo ? lo : t);  // saturates
    }
    case Kind::kFloat:
    default:
      // Integers reach 16-bit types through double (exact up to 2^53).
      if (in.kind == Kind::kInt && out.is16) v = RoundTo(v, FmtOf<double>());
      return RoundTo(v, out.fmt);
  }
}

template <typename A, typename In>
Vec<In> CastInputs(uint64_t seed) {
  std::mt19937_64 gen(seed);
  Vec<In> x = Inputs<In>(gen);
  if constexpr (IsFloatingType<In>) {
    // Saturation boundaries of every integer type, and 16-bit overflow boundaries.
    for (LD v : {127.5L, 128.0L, -128.5L, -129.0L, 255.5L, 256.0L, -0.5L, -1.0L, 32767.5L, 32768.0L,
                 -32769.0L, 2147483647.5L, 2147483648.0L, -2147483649.0L, 9.2233720368547758e18L,
                 -9.2233720368547758e18L, 1e19L, 1e30L, 65504.0L, 65519.0L, 65520.0L, 3.4e38L}) {
      x.push_back(FromLD<In>(v));
      x.push_back(FromLD<In>(-v));
    }
    std::uniform_real_distribution<double> e(-30.0, 70.0);
    std::bernoulli_distribution neg(0.5);
    for (int i = 0; i < 512; ++i) {
      const double m = std::exp2(e(gen));
      x.push_back(FromLD<In>(neg(gen) ? -m : m));
    }
  }
  return x;
}

template <typename A, typename In, typename Out>
void CheckCast(uint64_t seed, const Vec<In>& x, const std::vector<LD>& lx) {
  std::vector<LD> want(lx.size());
  for (size_t i = 0; i < lx.size(); ++i) want[i] = RefCast(lx[i], InfoOf<In>(), InfoOf<Out>());
  CheckExact("cast<" + Name<In>() + ", " + Name<Out>() + ">", seed, {&lx},
             ToLDs(A::template Map<Out>(CastFunctor<In, Out>(), x)), want);
}

template <typename A, typename In>
void CheckCastFrom(uint64_t seed) {
  const Vec<In> x = CastInputs<A, In>(seed);
  const std::vector<LD> lx = ToLDs(x);
  std::apply([&](auto... out) { (CheckCast<A, In, decltype(out)>(seed, x, lx), ...); }, AllTypesTuple{});
}

template <typename A>
void RunCastAll() {
  const uint64_t seed = FreshSeed();
  std::apply([&](auto... in) { (CheckCastFrom<A, decltype(in)>(seed), ...); }, AllTypesTuple{});
}

// ---------------------------------------------------------------------------------
// Apply2: equal to the scalar functor, element by element (NaN payloads aside).

template <typename A, typename T, bool kBinary, typename F>
void CheckApply2(const std::string& name, const F& f) {
  static_assert(HasApply2<F, Packed2Type<T>>, "functor without Apply2");
  const uint64_t seed = FreshSeed();
  std::mt19937_64 gen(seed);
  // Random with random and edge with edge, never random with edge: a bfloat16 product of
  // a random value and a subnormal may round differently (see apply2.h).
  const Vec<T> xs = FloatInputs<T>(gen, -4, 4, 4096, 512);
  const Vec<T> ys = FloatInputs<T>(gen, -4, 4, 4096, 512);
  auto ab = Pairs<T>(FloatEdges<T>(), xs, ys);
  if (ab.first.size() % 2 != 0) {
    ab.first.pop_back();
    ab.second.pop_back();
  }
  const auto result = A::template Apply2<T, kBinary>(f, ab.first, ab.second);
  const std::vector<LD> a = ToLDs(ab.first), b = ToLDs(ab.second);
  CheckExact(Label<T>(name + ".Apply2 vs scalar"), seed, {&a, &b}, ToLDs(result.second), ToLDs(result.first));
}

template <typename A, typename T>
void RunApply2() {
  CheckApply2<A, T, true>("add", AddFunctor<T>());
  CheckApply2<A, T, true>("sub", SubFunctor<T>());
  CheckApply2<A, T, true>("mul", MulFunctor<T>());
  CheckApply2<A, T, true>("max", MaxFunctor<T>());
  CheckApply2<A, T, true>("min", MinFunctor<T>());
  CheckApply2<A, T, false>("inverse", InverseFunctor<T>());
  CheckApply2<A, T, false>("square", SquareFunctor<T>());
  CheckApply2<A, T, false>("abs", AbsFunctor<T>());
  CheckApply2<A, T, false>("relu", ReluFunctor<T>());
}

// The packed path exists exactly where documented.
static_assert(HasApply2<AddFunctor<float16>, __half2>);
static_assert(HasApply2<AddFunctor<bfloat16>, __nv_bfloat162>);
static_assert(HasApply2<MaximumFunctor<float16>, __half2>);
static_assert(HasApply2<ReluFunctor<bfloat16>, __nv_bfloat162>);
static_assert(!HasApply2<AddFunctor<float>, __half2>);
static_assert(!HasApply2<AddFunctor<float16>, __nv_bfloat162>);
static_assert(!HasApply2<AddScaledFunctor<float16>, __half2>);
static_assert(!HasApply2<DivFunctor<float16>, __half2>);
static_assert(!HasApply2<ExpFunctor<float16>, __half2>);
static_assert(!HasApply2<AddFunctor<float16>, float16>);

// ---------------------------------------------------------------------------------
// Host applier.

struct HostApplier {
  template <typename Out, typename F, typename... E>
  static Vec<Out> Map(const F& f, const std::vector<E>&... xs) {
    const size_t n = std::get<0>(std::forward_as_tuple(xs...)).size();
    Vec<Out> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = f(static_cast<Raw<E>>(xs[i])...);
    return out;
  }

  template <typename T, bool kBinary, typename F>
  static std::pair<Vec<T>, Vec<T>> Apply2(const F& f, const Vec<T>& a, const Vec<T>& b) {
    using P = Packed2Type<T>;
    Vec<T> scalar(a.size()), packed(a.size());
    for (size_t i = 0; i + 1 < a.size(); i += 2) {
      P r;
      if constexpr (kBinary) {
        scalar[i] = f(a[i], b[i]);
        scalar[i + 1] = f(a[i + 1], b[i + 1]);
        r = f.Apply2(P(a[i], a[i + 1]), P(b[i], b[i + 1]));
      } else {
        scalar[i] = f(a[i]);
        scalar[i + 1] = f(a[i + 1]);
        r = f.Apply2(P(a[i], a[i + 1]));
      }
      packed[i] = r.x;
      packed[i + 1] = r.y;
    }
    return {scalar, packed};
  }
};

// The whole suite for one applier: typed tests named <Prefix>Float/Int/AllTypes and
// <Prefix>Misc. `PROLOGUE` runs first in each test (the device test skips without GPU).
#define KPS_DEFINE_FUNCTOR_TESTS(Prefix, Applier, PROLOGUE)                                      \
  template <typename T>                                                                         \
  class Prefix##Float : public ::testing::Test {};                                              \
  TYPED_TEST_SUITE(Prefix##Float, ::kps::testing::functor_check::FloatTypes);                  \
  TYPED_TEST(Prefix##Float, UnaryAndActivations) {                                              \
    PROLOGUE;                                                                                   \
    ::kps::testing::functor_check::RunFloatUnary<Applier, TypeParam>();                        \
  }                                                                                             \
  TYPED_TEST(Prefix##Float, Binary) {                                                           \
    PROLOGUE;                                                                                   \
    ::kps::testing::functor_check::RunFloatBinary<Applier, TypeParam>();                       \
  }                                                                                             \
  template <typename T>                                                                         \
  class Prefix##Int : public ::testing::Test {};                                                \
  TYPED_TEST_SUITE(Prefix##Int, ::kps::testing::functor_check::IntTypes);                      \
  TYPED_TEST(Prefix##Int, Unary) {                                                              \
    PROLOGUE;                                                                                   \
    ::kps::testing::functor_check::RunIntUnary<Applier, TypeParam>();                          \
  }                                                                                             \
  TYPED_TEST(Prefix##Int, BinaryWrapsAndDivisionIsDefined) {                                    \
    PROLOGUE;                                                                                   \
    ::kps::testing::functor_check::RunIntBinary<Applier, TypeParam>();                         \
  }                                                                                             \
  template <typename T>                                                                         \
  class Prefix##AllTypes : public ::testing::Test {};                                           \
  TYPED_TEST_SUITE(Prefix##AllTypes, ::kps::testing::functor_check::AllTypes);                 \
  TYPED_TEST(Prefix##AllTypes, CompareLogicalWhere) {                                           \
    PROLOGUE;                                                                                   \
    ::kps::testing::functor_check::RunCompareLogicalWhere<Applier, TypeParam>();               \
  }                                                                                             \
  TYPED_TEST(Prefix##AllTypes, ReduceInitialValues) {                                           \
    PROLOGUE;                                                                                   \
    ::kps::testing::functor_check::RunInitial<Applier, TypeParam>();                           \
  }                                                                                             \
  TEST(Prefix##Misc, CastEveryPair) {                                                           \
    PROLOGUE;                                                                                   \
    ::kps::testing::functor_check::RunCastAll<Applier>();                                      \
  }                                                                                             \
  TEST(Prefix##Misc, Apply2EqualsScalar) {                                                      \
    PROLOGUE;                                                                                   \
    ::kps::testing::functor_check::RunApply2<Applier, ::kps::float16>();                       \
    ::kps::testing::functor_check::RunApply2<Applier, ::kps::bfloat16>();                      \
  }

}  // namespace functor_check
}  // namespace testing
}  // namespace kps
