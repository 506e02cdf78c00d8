// Generator ops: fill, arange, uniform and normal. They take no inputs; the output's
// shape and dtype come from attributes, and the kernels are looked up by the output's
// dtype. Each op has a schema (whose inference validates every attribute, so a bad call
// fails before anything is allocated) and one kernel class template over the device
// that resolves the call and hands it to the op's CPU or CUDA part (FillOn, ArangeOn,
// RandomOn); uniform and normal share their math across the devices through
// functors/random.h, which states the random stream (the numbers depend on seed, offset
// and element index only).
//
//   kps::Tensor ones = *kps::Call("fill").Attr("shape", std::vector<int64_t>{2, 3})
//                           .Attr("value", 1.0).OnDevice(kps::DeviceType::kCuda).RunOne();
//   kps::Tensor u = *kps::ops::Uniform({1 << 20}, /*low=*/-1, /*high=*/1, /*seed=*/42);
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "functors/macros.h"
#include "functors/mp_type.h"
#include "functors/random.h"
#include "ops/common/element_bits.cuh"
#include "ops/elementwise/elementwise_launch.cuh"
#include "ops/elementwise/elementwise_op.cuh"
#include "ops/ops.h"
#include "primitives/compute.cuh"
#include "primitives/datamover.cuh"
#include "primitives/details/vector_type.cuh"
#include "registry/call.h"
#include "registry/checked_math.h"
#include "registry/cuda_launch.h"
#include "registry/data_type.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"
#include "registry/shape.h"
#include "registry/status.h"

namespace kps {

// ---- typed wrappers (ops/ops.h) --------------------------------------------------------

namespace ops {
namespace {
// The call runs on `device`, on `stream` when one is given (it must be a `device` stream).
Call& Placed(Call& call, DeviceType device, const Stream* stream) {
  call.OnDevice(device);
  return stream != nullptr ? call.OnStream(*stream) : call;
}
}  // namespace

absl::StatusOr<Tensor> Fill(const std::vector<int64_t>& shape, double value, DataType dtype, DeviceType device,
                            const Stream* stream) {
  Call call("fill");
  call.Attr("shape", shape).Attr("value", value).Attr("dtype", dtype);
  return Placed(call, device, stream).RunOne();
}

absl::StatusOr<Tensor> Arange(double start, double end, double step, DataType dtype, DeviceType device,
                              const Stream* stream) {
  Call call("arange");
  call.Attr("start", start).Attr("end", end).Attr("step", step).Attr("dtype", dtype);
  return Placed(call, device, stream).RunOne();
}

absl::StatusOr<Tensor> Uniform(const std::vector<int64_t>& shape, double low, double high, uint64_t seed,
                               uint64_t offset, DataType dtype, DeviceType device, const Stream* stream) {
  Call call("uniform");
  call.Attr("shape", shape).Attr("low", low).Attr("high", high).Attr("seed", seed).Attr("offset", offset)
      .Attr("dtype", dtype);
  return Placed(call, device, stream).RunOne();
}

absl::StatusOr<Tensor> Normal(const std::vector<int64_t>& shape, double mean, double stddev, uint64_t seed,
                              uint64_t offset, DataType dtype, DeviceType device, const Stream* stream) {
  Call call("normal");
  call.Attr("shape", shape).Attr("mean", mean).Attr("std", stddev).Attr("seed", seed).Attr("offset", offset)
      .Attr("dtype", dtype);
  return Placed(call, device, stream).RunOne();
}

}  // namespace ops

namespace generator {
namespace {

// The elementwise launcher's block size and grid cap: past kMaxGrid blocks the blocks
// stride over tiles.
using elementwise::kBlockSize;
using elementwise::kMaxGrid;
// The longest arange: the shape rule's limit (registry/shape.h, ValidateShape).
constexpr int64_t kMaxLength = kps::kMaxNumel;

// fill's CUDA kernel instantiates per element width only (BitsOf, registry/data_type.h).

// ---- attributes shared by the ops ------------------------------------------------------

// The `shape` attribute, validated by the one shape rule (registry/shape.h).
absl::StatusOr<Shape> ShapeAttr(const CallView& c) {
  const std::vector<int64_t>& dims = c.Attr<std::vector<int64_t>>("shape");
  KPS_RETURN_IF_ERROR(ValidateShape(dims, absl::StrCat("op '", c.schema().name(), "': attribute 'shape'")));
  return Shape(dims);
}

// The seed and offset attributes as the 64-bit patterns the stream uses.
uint64_t SeedAttr(const CallView& c) { return static_cast<uint64_t>(c.Attr<int64_t>("seed")); }
uint64_t OffsetAttr(const CallView& c) { return static_cast<uint64_t>(c.Attr<int64_t>("offset")); }

absl::Status CheckFloatDtype(const CallView& c, DataType dt) {
  if (IsFloatingPoint(dt)) return absl::OkStatus();
  return c.Error("attribute 'dtype' is ", DataTypeName(dt), "; ", c.schema().name(),
                 " makes float16, bfloat16, float32 or float64 tensors");
}

// [lowest, max] of an integer dtype, as int64 (uint8's fits too).
std::pair<int64_t, int64_t> IntegerRange(DataType dt) {
  return VisitDataType(dt, [](auto tag) -> std::pair<int64_t, int64_t> {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      return {static_cast<int64_t>(std::numeric_limits<T>::lowest()),
              static_cast<int64_t>(std::numeric_limits<T>::max())};
    } else {
      return {0, 0};
    }
  });
}

// ---- fill ----------------------------------------------------------------------------

// `value` as dtype T, or why T cannot hold it exactly. Floating dtypes take any value
// (rounded to nearest; too large becomes +-inf; inf and NaN stay).
template <typename T>
absl::StatusOr<T> FillValue(const CallView& c, double v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v != 0 && v != 1) {
      return c.Error("attribute 'value' ", v, " cannot be represented as bool (only 0 and 1 can)");
    }
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    const absl::string_view name = DataTypeName(DataTypeOf<T>());
    if (!std::isfinite(v) || std::trunc(v) != v) {
      return c.Error("attribute 'value' ", v, " is not an integer, so ", name, " cannot represent it exactly");
    }
    // [lowest, 2^digits): both bounds are powers of two (or 0), exact in double.
    const double lowest = static_cast<double>(std::numeric_limits<T>::lowest());
    const double end = std::ldexp(1.0, std::numeric_limits<T>::digits);
    if (v < lowest || v >= end) {
      const auto [lo, hi] = IntegerRange(DataTypeOf<T>());
      return c.Error("attribute 'value' ", v, " is out of the range of ", name, " [", lo, ", ", hi, "]");
    }
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

absl::Status InferFill(InferContext& c) {
  KPS_ASSIGN_OR_RETURN(Shape shape, ShapeAttr(c));
  const DataType dt = c.Attr<DataType>("dtype");
  const double value = c.Attr<double>("value");
  KPS_RETURN_IF_ERROR(VisitDataType(dt, [&](auto tag) { return FillValue<decltype(tag)>(c, value).status(); }));
  c.SetOutput(0, std::move(shape), dt);
  return absl::OkStatus();
}

template <typename T>
struct ConstantFunctor {
  T value;
  KPS_FUNCTOR_HD T operator()() const { return value; }
};

// Every element of `out` set to `value`: the registers are filled once
// (ElementwiseConstant), then stored a tile of KPS_BLOCK_NUM_X * VecSize elements at a
// time (WriteData, vectorized; the last partial tile bounds-checked).
template <typename Bits, int VecSize>
__global__ void __launch_bounds__(kBlockSize) FillKernel(Bits* out, int64_t n, Bits value) {
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_NUM_X) * VecSize;
  Bits regs[VecSize];
  ElementwiseConstant<Bits, Bits, VecSize, 1>(regs, ConstantFunctor<Bits>{value});
  for (int64_t base = static_cast<int64_t>(KPS_BLOCK_ID_X) * tile; base < n;
       base += static_cast<int64_t>(KPS_GRID_NUM_X) * tile) {
    const int64_t rem = n - base;
    if (rem >= tile) {
      WriteData<Bits, VecSize, 1, false>(out + base, regs, static_cast<int>(tile));
    } else {
      WriteData<Bits, VecSize, 1, true>(out + base, regs, static_cast<int>(rem));
    }
  }
}

template <typename Bits>
absl::Status LaunchFill(Bits* out, int64_t n, Bits value, cudaStream_t stream) {
  if (n == 0) return absl::OkStatus();
  constexpr int kVec = details::kMaxVectorBytes / sizeof(Bits);
  if (reinterpret_cast<uintptr_t>(out) % details::kMaxVectorBytes == 0) {
    KPS_RETURN_IF_ERROR((LaunchKernel<&FillKernel<Bits, kVec>>("FillKernel (fill)",
                                                               BlocksFor(n, int64_t{kBlockSize} * kVec, kMaxGrid),
                                                               kBlockSize, 0, stream, out, n, value)));
  } else {  // a given output at an unaligned offset: scalar stores
    KPS_RETURN_IF_ERROR((LaunchKernel<&FillKernel<Bits, 1>>(
        "FillKernel (fill)", BlocksFor(n, kBlockSize, kMaxGrid), kBlockSize, 0, stream, out, n, value)));
  }
  return absl::OkStatus();
}

// The device part of fill: FillOn<D>::Run(ctx, out, value) sets every element of out.
template <DeviceType D>
struct FillOn;

template <>
struct FillOn<DeviceType::kCpu> {
  template <typename T>
  static absl::Status Run(const KernelContext&, Tensor& out, T value) {
    std::fill_n(out.data<T>(), out.numel(), value);
    return absl::OkStatus();
  }
};

template <>
struct FillOn<DeviceType::kCuda> {
  template <typename T>
  static absl::Status Run(const KernelContext& ctx, Tensor& out, T value) {
    using Bits = BitsOf<T>;
    Bits bits;
    std::memcpy(&bits, &value, sizeof(T));
    return LaunchFill<Bits>(static_cast<Bits*>(out.raw_data()), out.numel(), bits, ctx.cuda_stream());
  }
};

// fill's kernel, on either device: `value` as T, then the device's part.
template <DeviceType D, typename T>
class FillOpKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const T value, FillValue<T>(*ctx, ctx->Attr<double>("value")));
    return FillOn<D>::Run(*ctx, ctx->output(0), value);
  }
};

// ---- arange --------------------------------------------------------------------------

// Element i of arange: start + i * step, in double with one rounding (fma) for the
// floating dtypes, then rounded to T; exactly, in int64, for the integer dtypes (the
// schema checked that every value fits in T; the arithmetic wraps, so an intermediate
// i * step beyond int64 still gives the exact final value).
template <typename T>
struct ArangeFunctor {
  using Acc = std::conditional_t<IsFloatingType<T>, double, int64_t>;
  Acc start;
  Acc step;
  KPS_FUNCTOR_HD T operator()(int64_t i) const {
    if constexpr (IsFloatingType<T>) {
      return static_cast<T>(details::FusedMulAdd(static_cast<double>(i), step, start));
    } else {
      return static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(start) +
                                                 static_cast<uint64_t>(i) * static_cast<uint64_t>(step)));
    }
  }
};

struct ArangeParams {
  int64_t length = 0;
  double start = 0, step = 1;       // floating dtypes
  int64_t istart = 0, istep = 1;    // integer dtypes
};

// The length and terms of arange for dtype `dt`, or what is wrong with the attributes.
absl::StatusOr<ArangeParams> GetArangeParams(const CallView& c, DataType dt) {
  if (dt == DataType::kBool) return c.Error("attribute 'dtype' is bool; arange makes every dtype but bool");
  const double start = c.Attr<double>("start"), end = c.Attr<double>("end"), step = c.Attr<double>("step");
  const std::pair<const char*, double> named[] = {{"start", start}, {"end", end}, {"step", step}};
  for (const auto& [name, v] : named) {
    if (!std::isfinite(v)) return c.Error("attribute '", name, "' is ", v, "; start, end and step must be finite");
  }
  if (step == 0) return c.Error("attribute 'step' must not be 0");
  auto sign_mismatch = [&] {
    return c.Error("attributes 'start' (", start, "), 'end' (", end, ") and 'step' (", step,
                   ") give a negative length ceil((end - start) / step): step must have the sign of end - start");
  };
  ArangeParams p;
  if (IsIntegral(dt)) {
    for (const auto& [name, v] : named) {
      if (std::trunc(v) != v || v < -0x1p63 || v >= 0x1p63) {
        return c.Error("attribute '", name, "' (", v, ") must be an integer (within int64) for dtype ",
                       DataTypeName(dt));
      }
    }
    const int64_t s = static_cast<int64_t>(start), e = static_cast<int64_t>(end), st = static_cast<int64_t>(step);
    // ceil(d / |step|) over the distance d = |end - start|, in uint64 (exact, no overflow).
    uint64_t d, mag;
    if (st > 0) {
      if (e < s) return sign_mismatch();
      d = static_cast<uint64_t>(e) - static_cast<uint64_t>(s);
      mag = static_cast<uint64_t>(st);
    } else {
      if (e > s) return sign_mismatch();
      d = static_cast<uint64_t>(s) - static_cast<uint64_t>(e);
      mag = uint64_t{0} - static_cast<uint64_t>(st);
    }
    const uint64_t length = d == 0 ? 0 : (d - 1) / mag + 1;
    if (length > static_cast<uint64_t>(kMaxLength)) {
      return c.Error("the length ceil((end - start) / step) = ", length, " is too large (at most ", kMaxLength, ")");
    }
    if (length > 0) {
      // The last term lies between start and end, so it fits in int64 (wrapping math).
      const int64_t last = static_cast<int64_t>(static_cast<uint64_t>(s) +
                                                (length - 1) * static_cast<uint64_t>(st));
      const auto [lo, hi] = IntegerRange(dt);
      if (std::min(s, last) < lo || std::max(s, last) > hi) {
        return c.Error("the values from ", s, " to ", last, " do not fit in ", DataTypeName(dt), " [", lo, ", ",
                       hi, "]");
      }
    }
    p.length = static_cast<int64_t>(length);
    p.istart = s;
    p.istep = st;
  } else {
    const double q = (end - start) / step;
    if (q < 0) return sign_mismatch();
    if (!(q <= static_cast<double>(kMaxNumel))) {
      return c.Error("the length ceil((end - start) / step) = ", q, " is too large (at most ", kMaxLength, ")");
    }
    p.length = static_cast<int64_t>(std::ceil(q));
    p.start = start;
    p.step = step;
  }
  return p;
}

template <typename T>
ArangeFunctor<T> MakeArange(const ArangeParams& p) {
  if constexpr (IsFloatingType<T>) {
    return ArangeFunctor<T>{p.start, p.step};
  } else {
    return ArangeFunctor<T>{p.istart, p.istep};
  }
}

absl::Status InferArange(InferContext& c) {
  const DataType dt = c.Attr<DataType>("dtype");
  KPS_ASSIGN_OR_RETURN(const ArangeParams p, GetArangeParams(c, dt));
  c.SetOutput(0, Shape{p.length}, dt);
  return absl::OkStatus();
}

// out[i] = f(i): each thread takes NX consecutive indices of a tile of
// KPS_BLOCK_NUM_X * NX (InitWithDataIndex), maps them (ElementwiseUnary) and stores them
// (WriteData, vectorized when aligned; the last partial tile bounds-checked).
template <typename T, int NX, bool kAligned>
__global__ void __launch_bounds__(kBlockSize) ArangeKernel(T* out, int64_t n, ArangeFunctor<T> f) {
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_NUM_X) * NX;
  int64_t index[NX];
  T values[NX];
  for (int64_t base = static_cast<int64_t>(KPS_BLOCK_ID_X) * tile; base < n;
       base += static_cast<int64_t>(KPS_GRID_NUM_X) * tile) {
    InitWithDataIndex<int64_t, NX>(index, base);
    ElementwiseUnary<int64_t, T, NX, 1>(values, index, f);
    const int64_t rem = n - base;
    if (kAligned && rem >= tile) {
      WriteData<T, NX, 1, false>(out + base, values, static_cast<int>(tile));
    } else {
      WriteData<T, NX, 1, true>(out + base, values, static_cast<int>(rem < tile ? rem : tile));
    }
  }
}

// The device part of arange: ArangeOn<D>::Run(ctx, out, f) sets out[i] = f(i).
template <DeviceType D>
struct ArangeOn;

template <>
struct ArangeOn<DeviceType::kCpu> {
  template <typename T>
  static absl::Status Run(const KernelContext&, Tensor& out, const ArangeFunctor<T>& f) {
    T* dst = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = f(i);
    return absl::OkStatus();
  }
};

template <>
struct ArangeOn<DeviceType::kCuda> {
  template <typename T>
  static absl::Status Run(const KernelContext& ctx, Tensor& out, const ArangeFunctor<T>& f) {
    constexpr int kNX = 4;
    const int64_t n = out.numel();
    if (n == 0) return absl::OkStatus();
    T* dst = out.data<T>();
    const int grid = BlocksFor(n, int64_t{kBlockSize} * kNX, kMaxGrid);
    if (reinterpret_cast<uintptr_t>(dst) % (kNX * sizeof(T)) == 0) {
      KPS_RETURN_IF_ERROR((LaunchKernel<&ArangeKernel<T, kNX, true>>("ArangeKernel (arange)", grid, kBlockSize, 0,
                                                                     ctx.cuda_stream(), dst, n, f)));
    } else {
      KPS_RETURN_IF_ERROR((LaunchKernel<&ArangeKernel<T, kNX, false>>("ArangeKernel (arange)", grid, kBlockSize, 0,
                                                                      ctx.cuda_stream(), dst, n, f)));
    }
    return absl::OkStatus();
  }
};

// arange's kernel, on either device: the length and terms for T, then the device's part.
template <DeviceType D, typename T>
class ArangeOpKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const ArangeParams p, GetArangeParams(*ctx, DataTypeOf<T>()));
    return ArangeOn<D>::Run(*ctx, ctx->output(0), MakeArange<T>(p));
  }
};

// ---- uniform and normal ----------------------------------------------------------------

// The largest value of T below x (x finite and above T's lowest).
template <typename T>
T NextBelow(T x) {
  if constexpr (IsFloat16Type<T>) {
    uint16_t b;
    std::memcpy(&b, &x, sizeof(b));
    if ((b & 0x7fff) == 0) {
      b = 0x8001;  // below +-0: the negative subnormal nearest 0
    } else if ((b & 0x8000) == 0) {
      b = static_cast<uint16_t>(b - 1);  // positive: one step toward 0
    } else {
      b = static_cast<uint16_t>(b + 1);  // negative: one step away from 0
    }
    T r;
    std::memcpy(static_cast<void*>(&r), &b, sizeof(b));
    return r;
  } else {
    return std::nextafter(x, -std::numeric_limits<T>::infinity());
  }
}

// uniform's functor for dtype T, or what is wrong with low and high.
template <typename T>
absl::StatusOr<UniformFunctor<T>> MakeUniform(const CallView& c) {
  using M = MPType<T>;
  const double low = c.Attr<double>("low"), high = c.Attr<double>("high");
  const absl::string_view name = DataTypeName(DataTypeOf<T>());
  if (!std::isfinite(low) || !std::isfinite(high)) {
    return c.Error("attributes 'low' (", low, ") and 'high' (", high, ") must be finite");
  }
  if (!(low < high)) return c.Error("attribute 'low' (", low, ") must be less than 'high' (", high, ")");
  UniformFunctor<T> f;
  const T lo = static_cast<T>(low), hi = static_cast<T>(high);  // rounded to nearest
  f.lo = static_cast<M>(lo);
  f.hi = static_cast<M>(hi);
  if (!std::isfinite(f.lo) || !std::isfinite(f.hi)) {
    return c.Error("attributes 'low' (", low, ") and 'high' (", high, ") must be finite in ", name);
  }
  if (!(f.lo < f.hi)) {
    return c.Error("attributes 'low' (", low, ") and 'high' (", high, ") round to the same ", name, " value (",
                   static_cast<double>(f.lo), "); uniform needs low < high in the output dtype");
  }
  f.range = f.hi - f.lo;
  if (!std::isfinite(f.range)) {
    return c.Error("high - low overflows ", std::is_same_v<M, float> ? "float" : "double",
                   " (the compute type of ", name, "): 'low' ", low, ", 'high' ", high);
  }
  f.below_hi = static_cast<M>(NextBelow<T>(hi));
  return f;
}

// normal's functor for dtype T, or what is wrong with mean and std.
template <typename T>
absl::StatusOr<NormalFunctor<T>> MakeNormal(const CallView& c) {
  using M = MPType<T>;
  const double mean = c.Attr<double>("mean"), stddev = c.Attr<double>("std");
  if (!std::isfinite(mean)) return c.Error("attribute 'mean' (", mean, ") must be finite");
  if (!(stddev >= 0)) return c.Error("attribute 'std' (", stddev, ") must be >= 0");
  if (!std::isfinite(stddev)) return c.Error("attribute 'std' (", stddev, ") must be finite");
  return NormalFunctor<T>{static_cast<M>(mean), static_cast<M>(stddev)};
}

// Inference of uniform / normal: the shape, a floating dtype, and the distribution's
// attributes checked by Make (MakeUniform or MakeNormal) for that dtype.
template <template <typename> class Functor>
absl::Status InferRandom(InferContext& c) {
  KPS_ASSIGN_OR_RETURN(Shape shape, ShapeAttr(c));
  const DataType dt = c.Attr<DataType>("dtype");
  KPS_RETURN_IF_ERROR(CheckFloatDtype(c, dt));
  KPS_RETURN_IF_ERROR(VisitDataType(dt, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    if constexpr (IsFloatingType<T>) {
      if constexpr (std::is_same_v<Functor<T>, UniformFunctor<T>>) return MakeUniform<T>(c).status();
      if constexpr (std::is_same_v<Functor<T>, NormalFunctor<T>>) return MakeNormal<T>(c).status();
    }
    return absl::OkStatus();
  }));
  c.SetOutput(0, std::move(shape), dt);
  return absl::OkStatus();
}

template <typename T, template <typename> class Functor>
absl::StatusOr<Functor<T>> MakeRandomFunctor(const CallView& c) {
  if constexpr (std::is_same_v<Functor<T>, UniformFunctor<T>>) {
    return MakeUniform<T>(c);
  } else {
    return MakeNormal<T>(c);
  }
}

// Element i of a random tensor takes value i % kPer of group i / kPer
// (kPer = kPhiloxValuesPer<T>): whole groups, the last one cut at n.
template <typename T, typename F>
void GenerateOnCpu(T* out, int64_t n, uint64_t seed, uint64_t offset, const F& f) {
  constexpr int kPer = kPhiloxValuesPer<T>;
  const uint2 key = PhiloxKey(seed);
  for (int64_t base = 0; base < n; base += kPer) {
    const auto values = f(Philox4x32_10(PhiloxCounter(static_cast<uint64_t>(base / kPer), offset), key));
    decltype(values.x) v[kPer];  // float4 / double2: kPer members, in order
    static_assert(sizeof(v) == sizeof(values), "a Philox group's values are kPer scalars");
    std::memcpy(v, &values, sizeof(v));
    const int64_t count = std::min<int64_t>(kPer, n - base);
    for (int64_t j = 0; j < count; ++j) out[base + j] = static_cast<T>(v[j]);
  }
}

// The device part of uniform and normal: RandomOn<D>::Run(ctx, out, seed, offset, f)
// fills out from the Philox stream of (seed, offset) mapped by the distribution's f.
template <DeviceType D>
struct RandomOn;

template <>
struct RandomOn<DeviceType::kCpu> {
  template <typename T, typename F>
  static absl::Status Run(const KernelContext&, Tensor& out, uint64_t seed, uint64_t offset, const F& f) {
    GenerateOnCpu(out.data<T>(), out.numel(), seed, offset, f);
    return absl::OkStatus();
  }
};

// ElementwiseRandom's state: the counter of this thread's Philox group and the key.
struct PhiloxState {
  uint4 counter;
  uint2 key;
};

// ElementwiseRandom's func: one Philox call on the state, mapped by the distribution's
// functor to kPhiloxValuesPer<T> values (float4 or double2).
template <typename F>
struct PhiloxDraw {
  F f;
  __device__ __forceinline__ auto operator()(const PhiloxState* s) const {
    return f(Philox4x32_10(s->counter, s->key));
  }
};

// Thread t of tile b handles Philox group b * KPS_BLOCK_NUM_X + t, i.e. elements
// [kPer * group, + kPer): one call of ElementwiseRandom, then a store of the tile
// (WriteData, vectorized when the output is aligned; the last tile bounds-checked).
// The group, not the thread, picks the numbers, so any launch shape gives the same tensor.
template <typename T, typename F, bool kAligned>
__global__ void __launch_bounds__(kBlockSize)
    RandomKernel(T* out, int64_t n, uint64_t offset, uint2 key, F f) {
  constexpr int kPer = kPhiloxValuesPer<T>;
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_NUM_X) * kPer;
  T values[kPer];
  for (int64_t t = KPS_BLOCK_ID_X; t * tile < n; t += KPS_GRID_NUM_X) {
    const int64_t base = t * tile;
    const int64_t group = t * KPS_BLOCK_NUM_X + KPS_THREAD_ID_X;
    PhiloxState state{PhiloxCounter(static_cast<uint64_t>(group), offset), key};
    ElementwiseRandom<PhiloxState, T, kPer, kBlockSize>(values, PhiloxDraw<F>{f}, &state);
    const int64_t rem = n - base;
    if (kAligned && rem >= tile) {
      WriteData<T, kPer, 1, false>(out + base, values, static_cast<int>(tile));
    } else {
      WriteData<T, kPer, 1, true>(out + base, values, static_cast<int>(rem < tile ? rem : tile));
    }
  }
}

template <>
struct RandomOn<DeviceType::kCuda> {
  template <typename T, typename F>
  static absl::Status Run(const KernelContext& ctx, Tensor& out, uint64_t seed, uint64_t offset, const F& f) {
    constexpr int kPer = kPhiloxValuesPer<T>;
    const int64_t n = out.numel();
    if (n == 0) return absl::OkStatus();
    T* dst = out.data<T>();
    const uint2 key = PhiloxKey(seed);
    const int grid = BlocksFor(n, int64_t{kBlockSize} * kPer, kMaxGrid);
    const absl::Status s =
        reinterpret_cast<uintptr_t>(dst) % (kPer * sizeof(T)) == 0
            ? LaunchKernel<&RandomKernel<T, F, true>>("RandomKernel", grid, kBlockSize, 0, ctx.cuda_stream(), dst, n,
                                                      offset, key, f)
            : LaunchKernel<&RandomKernel<T, F, false>>("RandomKernel", grid, kBlockSize, 0, ctx.cuda_stream(), dst,
                                                       n, offset, key, f);
    // The op's name joins the message on failure only: the eager path builds no string.
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(ctx.schema().name(), ": ", s.message()));
    return absl::OkStatus();
  }
};

// The kernel of uniform and normal, on either device: the distribution's functor for T
// (Functor<T>: UniformFunctor or NormalFunctor), then the device's part.
template <template <typename> class Functor>
struct RandomOpKernel {
  template <DeviceType D, typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      KPS_ASSIGN_OR_RETURN(const Functor<T> f, (MakeRandomFunctor<T, Functor>(*ctx)));
      return RandomOn<D>::template Run<T>(*ctx, ctx->output(0), SeedAttr(*ctx), OffsetAttr(*ctx), f);
    }
  };
};

const std::vector<DeviceType> kDevices = {DeviceType::kCpu, DeviceType::kCuda};

constexpr char kStreamDoc[] =
    " The numbers depend only on (seed, offset, element index), whatever the device or "
    "launch: key = (lo32(seed), hi32(seed)); group g's words are Philox4x32-10(counter = "
    "(lo32(g), hi32(g), lo32(offset), hi32(offset)), key), curand's stream (curand_init(seed, "
    "offset, 4 * g) then curand4). float16/bfloat16/float32 element i takes word i % 4 of "
    "group i / 4; float64 element i takes words 2 * (i % 2), 2 * (i % 2) + 1 of group i / 2. "
    "A word w gives u = (w >> 8) * 2^-24 in [0, 1) (two words a, b for float64: "
    "((a << 32 | b) >> 11) * 2^-53). See functors/random.h.";

}  // namespace

KPS_REGISTER_OP("fill")
    .Output("out", "a contiguous tensor of `shape` and `dtype`, every element `value`")
    .RequiredAttr<std::vector<int64_t>>("shape", "the output's shape (dimensions >= 0; [] is a scalar)")
    .Attr<DataType>("dtype", DataType::kFloat32, "the output's dtype (any)")
    .RequiredAttr<double>("value",
                          "the value; integer dtypes need an integer in their range, bool 0 or 1 (anything "
                          "else is an error); floating dtypes round it to nearest (inf and NaN allowed)")
    .SetInferFn(InferFill)
    .KeyDataTypeFrom("out")
    .Kernels(kDevices, DataTypesOf<KPS_ALL_CPP_TYPES>())
    .Doc("A tensor of one value, out[...] = value.");

KPS_REGISTER_OP("arange")
    .Output("out", "a 1-D tensor of ceil((end - start) / step) elements")
    .Attr<double>("start", 0.0, "the first value")
    .RequiredAttr<double>("end", "the bound, excluded")
    .Attr<double>("step", 1.0, "the difference of consecutive values; nonzero, of the sign of end - start")
    .Attr<DataType>("dtype", DataType::kFloat32, "the output's dtype (any but bool)")
    .SetInferFn(InferArange)
    .KeyDataTypeFrom("out")
    .Kernels(kDevices, DataTypesOf<KPS_NUMERIC_CPP_TYPES>())
    .Doc("Evenly spaced values, out[i] = start + i * step for i < ceil((end - start) / step) (NumPy's "
         "arange). Floating dtypes compute start + i * step in double with one rounding (fma), then "
         "round to the dtype; integer dtypes need integral start, end and step, compute exactly in "
         "int64, and every value must fit in the dtype. step 0, non-finite attributes, and a negative "
         "length (step of the wrong sign) are errors.");

KPS_REGISTER_OP("uniform")
    .Output("out", "a contiguous tensor of `shape` and `dtype`, values in [low, high)")
    .RequiredAttr<std::vector<int64_t>>("shape", "the output's shape (dimensions >= 0)")
    .Attr<DataType>("dtype", DataType::kFloat32, "float16, bfloat16, float32 or float64")
    .Attr<double>("low", 0.0, "the lower bound, included")
    .Attr<double>("high", 1.0, "the upper bound, excluded; low < high once both are rounded to dtype")
    .Attr<int64_t>("seed", int64_t{0}, "the Philox key (its 64-bit pattern)")
    .Attr<int64_t>("offset", int64_t{0}, "the stream within the seed (Philox counter's high half)")
    .SetInferFn(InferRandom<UniformFunctor>)
    .KeyDataTypeFrom("out")
    .Kernels(kDevices, DataTypesOf<KPS_FLOAT_CPP_TYPES>())
    .Doc(absl::StrCat(
        "Uniform random values in [low, high), the same on CPU and CUDA bit for bit. low and high "
        "are rounded to dtype (lo, hi); v = fma(hi - lo, u, lo) in float (double for float64), rounded "
        "to dtype; a v that rounds to hi becomes the largest dtype value below hi.",
        kStreamDoc));

KPS_REGISTER_OP("normal")
    .Output("out", "a contiguous tensor of `shape` and `dtype`, normally distributed")
    .RequiredAttr<std::vector<int64_t>>("shape", "the output's shape (dimensions >= 0)")
    .Attr<DataType>("dtype", DataType::kFloat32, "float16, bfloat16, float32 or float64")
    .Attr<double>("mean", 0.0, "the mean (finite)")
    .Attr<double>("std", 1.0, "the standard deviation (finite, >= 0)")
    .Attr<int64_t>("seed", int64_t{0}, "the Philox key (its 64-bit pattern)")
    .Attr<int64_t>("offset", int64_t{0}, "the stream within the seed (Philox counter's high half)")
    .SetInferFn(InferRandom<NormalFunctor>)
    .KeyDataTypeFrom("out")
    .Kernels(kDevices, DataTypesOf<KPS_FLOAT_CPP_TYPES>())
    .Doc(absl::StrCat(
        "Normal random values, mean + std * z, z by Box-Muller: u1 = 1 - u (in (0, 1]) and u2 = u of "
        "two words, r = sqrt(-2 log u1), z0 = r cos(2 pi u2), z1 = r sin(2 pi u2), out = fma(std, z, "
        "mean) in float (double for float64), rounded to dtype. 32-bit words (0, 1) give elements 4g, "
        "4g + 1 and words (2, 3) elements 4g + 2, 4g + 3; float64 takes one pair per group (words 0-1 "
        "and 2-3 as two 53-bit uniforms) for elements 2g, 2g + 1. CPU and CUDA differ by a few ulps "
        "at most (their log, sin, cos).",
        kStreamDoc));

KPS_REGISTER_DEVICE_KERNELS("fill", FillOpKernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS("arange", ArangeOpKernel, KPS_NUMERIC_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS("uniform", RandomOpKernel<UniformFunctor>::Kernel, KPS_FLOAT_CPP_TYPES);
KPS_REGISTER_DEVICE_KERNELS("normal", RandomOpKernel<NormalFunctor>::Kernel, KPS_FLOAT_CPP_TYPES);

}  // namespace generator
}  // namespace kps
