// where, clip (scalar bounds), clip_tensor (tensor bounds) and addcmul: the elementwise
// ops of three operands or with attribute-built functors, all broadcasting.
#include <cmath>
#include <limits>

#include "functors/functors.h"
#include "ops/elementwise/binary_ops.h"
#include "registry/data_type.h"
#include "ops/elementwise/elementwise_op.cuh"

namespace kps {
namespace elementwise {
namespace {

// ---- where(cond, x, y) --------------------------------------------------------------

absl::Status InferWhere(InferContext& ctx) {
  const Tensor& cond = ctx.input(0);
  if (cond.dtype() != DataType::kBool) {
    return ctx.Error("input 'cond' is ", DataTypeName(cond.dtype()),
                     "; where needs a bool condition (make one with ne_scalar(other=0) or cast)");
  }
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (x.dtype() != y.dtype()) {
    return ctx.Error("inputs 'x' (", DataTypeName(x.dtype()), ") and 'y' (", DataTypeName(y.dtype()),
                     ") have different dtypes; cast one first (mixed-dtype promotion is not done)");
  }
  KPS_ASSIGN_OR_RETURN(Shape shape, BroadcastShape(ctx));
  ctx.SetOutput(0, std::move(shape), x.dtype());
  return absl::OkStatus();
}

// where's kernel, on either device: the bool condition and x, y of dtype T through the
// device's elementwise part.
template <DeviceType D, typename T>
class WhereKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    Tensor& out = ctx->output(0);
    const Tensor* ins[] = {&ctx->input(0), &ctx->input(1), &ctx->input(2)};
    return ElementwiseOn<D>::Run(*ctx, MakeElementwiseLayout(out.shape(), ins), out.data<T>(), WhereFunctor<T>(),
                                 ctx->input(0).data<bool>(), ctx->input(1).data<T>(), ctx->input(2).data<T>());
  }
};

// ---- clip(x; min, max) ------------------------------------------------------------------

absl::Status InferClip(InferContext& ctx) {
  const double lo = ctx.Attr<double>("min");
  const double hi = ctx.Attr<double>("max");
  if (std::isnan(lo) && std::isnan(hi)) {
    return ctx.Error("set at least one of the attributes 'min' and 'max'");
  }
  return InferElementwise(ctx, OutDtype::kSameAsInput);
}

// The bounds in T's compute type. Integers: the tightest integer bounds (x >= 2.5 is
// x >= 3), saturated to T's range; an unset (NaN) bound is T's limit. Floats: the bound
// itself, NaN for unset (ClipFunctor ignores a NaN bound).
template <typename T>
MPType<T> ClipBound(double v, bool is_lo) {
  using MP = MPType<T>;
  if constexpr (std::is_integral_v<MP>) {
    if (std::isnan(v)) return is_lo ? std::numeric_limits<MP>::lowest() : std::numeric_limits<MP>::max();
    return CastFunctor<double, MP>()(is_lo ? std::ceil(v) : std::floor(v));
  } else {
    return static_cast<MP>(v);
  }
}

struct ClipMaker {
  template <typename T>
  static ClipFunctor<T> Make(const CallView& call) {
    return ClipFunctor<T>(ClipBound<T>(call.Attr<double>("min"), true), ClipBound<T>(call.Attr<double>("max"), false));
  }
};

// ---- addcmul(x, y, z; value) ------------------------------------------------------------

absl::Status InferAddcmul(InferContext& ctx) {
  KPS_RETURN_IF_ERROR(CheckScalarFits(ctx, "value", ctx.Attr<double>("value"), ctx.input(0).dtype()));
  return InferElementwise(ctx, OutDtype::kSameAsInput);
}

struct AddcmulMaker {
  template <typename T>
  static AddcmulFunctor<T> Make(const CallView& call) {
    return AddcmulFunctor<T>(AlphaAs<T>(call.Attr<double>("value")));
  }
};

}  // namespace

KPS_REGISTER_OP("where")
    .TypedInput("cond", DataType::kBool, "bool, a shape that broadcasts with x's and y's")
    .Input("x", "taken where cond is true")
    .Input("y", "taken where cond is false: x's dtype")
    .Output("out", "x's dtype, contiguous, of the three inputs' broadcast shape")
    .KeyDataTypeFrom("x")
    .SetInferFn(InferWhere)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes())
    .Doc("cond ? x : y elementwise; values pass through bit for bit.");
KPS_REGISTER_DEVICE_KERNELS("where", WhereKernel, KPS_ALL_CPP_TYPES);

KPS_REGISTER_OP("clip")
    .Input("x", "the operand")
    .Output("out", "x's dtype and shape, contiguous")
    .Attr<double>("min", std::numeric_limits<double>::quiet_NaN(), "lower bound; unset (NaN): none")
    .Attr<double>("max", std::numeric_limits<double>::quiet_NaN(), "upper bound; unset (NaN): none")
    .SetInferFn(InferClip)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, DataTypesOf<KPS_SIGNED_CPP_TYPES>())
    .Doc("min(max(x, min), max), as torch.clamp: min > max gives max; NaN x stays NaN. Integer inputs "
         "clip to the integers inside the bounds (min 2.5 acts as 3).");
KPS_ELEMENTWISE_KERNELS("clip", 1, ClipMaker, kSameAsInput, KPS_SIGNED_CPP_TYPES);

KPS_REGISTER_OP("clip_tensor")
    .Input("x", "the operand")
    .Input("min", "lower bounds: x's dtype, a shape that broadcasts")
    .Input("max", "upper bounds: x's dtype, a shape that broadcasts")
    .Output("out", "x's dtype, contiguous, of the three inputs' broadcast shape")
    .SetInferFn([](InferContext& ctx) { return InferElementwise(ctx, OutDtype::kSameAsInput); })
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, DataTypesOf<KPS_SIGNED_CPP_TYPES>())
    .Doc("min(max(x, min), max) with per-element bounds: min > max gives max; NaN x stays NaN; a NaN bound "
         "is ignored.");
KPS_ELEMENTWISE_KERNELS("clip_tensor", 3, Plain<ClipTensorFunctor>, kSameAsInput, KPS_SIGNED_CPP_TYPES);

KPS_REGISTER_OP("addcmul")
    .Input("x", "the addend")
    .Input("y", "first factor: x's dtype, a shape that broadcasts")
    .Input("z", "second factor: x's dtype, a shape that broadcasts")
    .Output("out", "x's dtype, contiguous, of the three inputs' broadcast shape")
    .Attr<double>("value", 1.0, "multiplier of y * z; a whole number for integer inputs")
    .SetInferFn(InferAddcmul)
    .Kernels({DeviceType::kCpu, DeviceType::kCuda}, DataTypesOf<KPS_SIGNED_CPP_TYPES>())
    .Doc("x + value * y * z, evaluated as x + ((value * y) * z) in float for 16-bit types; integers wrap.");
KPS_ELEMENTWISE_KERNELS("addcmul", 3, AddcmulMaker, kSameAsInput, KPS_SIGNED_CPP_TYPES);

}  // namespace elementwise
}  // namespace kps
