// One-line elementwise ops: a functor plus one line registers the op's schema
// (broadcasting, strided inputs, one dtype in), its CPU kernel (the CPU loop) and its
// CUDA kernel (the elementwise launcher), for a list of dtypes:
//
//   KPS_ELEMENTWISE_OP("exp", 1, ExpFunctor, kSameAsInput, "e^x", KPS_FLOAT_CPP_TYPES);
//   KPS_ELEMENTWISE_OP("eq", 2, EqualFunctor, kBool, "x == y", KPS_ALL_CPP_TYPES);
//   KPS_ELEMENTWISE_SCALAR_OP("eq", EqualFunctor, kBool, "x == other", KPS_ALL_CPP_TYPES);
//
// The second line registers the scalar form "eq_scalar": x and a float attribute
// `other`, converted to x's dtype (see ElementwiseScalarSchema).
// KPS_ELEMENTWISE_KERNELS registers only the kernels, for ops with their own schema and
// a functor built from the call's attributes (a Maker; see ScalarMaker).
//
// Use these in a .cu file (they instantiate CUDA kernels: three per functor and dtype);
// split long op lists across files so no one translation unit dominates the build.
#pragma once

#include <type_traits>
#include <utility>
#include <vector>

#include "functors/cast.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/elementwise_launch.cuh"
#include "ops/elementwise/elementwise_schema.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"

namespace kps {
namespace elementwise {

inline constexpr OutDtype kSameAsInput = OutDtype::kSameAsInput;
inline constexpr OutDtype kBool = OutDtype::kBool;


// Makers build the functor a kernel applies for element type T from the call.
// Plain: Functor<T>, default-constructed.
template <template <typename> class Functor>
struct Plain {
  template <typename T>
  static Functor<T> Make(const CallView&) {
    return Functor<T>();
  }
};

// f(x, s) with s fixed: the scalar form of a binary functor.
template <typename F, typename T>
struct BindSecondFunctor {
  F f;
  T s;
  KPS_FUNCTOR_HD auto operator()(T x) const { return f(x, s); }
};

// The scalar forms: Functor<T>()(x, other), `other` converted to T once on the host
// (the infer function has checked that T represents it).
template <template <typename> class Functor>
struct ScalarMaker {
  template <typename T>
  static BindSecondFunctor<Functor<T>, T> Make(const CallView& call) {
    return {Functor<T>(), CastFunctor<double, T>()(call.Attr<double>("other"))};
  }
};

// The kernel, on either device, applying Maker's functor to `Arity` inputs of dtype T.
template <typename Maker, int Arity, OutDtype kOut>
struct GenericElementwise {
  template <DeviceType D, typename T>
  class Kernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      return Run(*ctx, Maker::template Make<T>(*ctx), std::make_index_sequence<Arity>());
    }

   private:
    template <typename F, size_t... I>
    static absl::Status Run(const KernelContext& ctx, const F& f, std::index_sequence<I...>) {
      using Out = std::conditional_t<kOut == OutDtype::kBool, bool, T>;
      const Tensor* ins[] = {&ctx.input(I)...};
      Tensor& out = ctx.output(0);
      return ElementwiseOn<D>::Run(ctx, MakeElementwiseLayout(out.shape(), ins), out.data<Out>(), f,
                                   ctx.input(I).template data<T>()...);
    }
  };
};

}  // namespace elementwise
}  // namespace kps

// The CPU and CUDA kernels of an op whose schema is registered elsewhere.
#define KPS_ELEMENTWISE_KERNELS(name, arity, Maker, out_dtype, ...)                                          \
  KPS_REGISTER_DEVICE_KERNELS(                                                                               \
      name, ::kps::elementwise::GenericElementwise<Maker, arity, ::kps::elementwise::out_dtype>::Kernel,     \
      __VA_ARGS__)

#define KPS_ELEMENTWISE_OP(name, arity, Functor, out_dtype, doc, ...)                                        \
  static ::kps::internal::OpRegistrationTrigger KPS_CONCAT(kps_elementwise_op_, __COUNTER__) =              \
      ::kps::elementwise::ElementwiseSchema(::kps::OpSchemaBuilder(name, __FILE__, __LINE__), arity,         \
                                            ::kps::elementwise::out_dtype, doc)                             \
          .Kernels({::kps::DeviceType::kCpu, ::kps::DeviceType::kCuda},                                      \
                   ::kps::DataTypesOf<__VA_ARGS__>());                                         \
  KPS_ELEMENTWISE_KERNELS(name, arity, ::kps::elementwise::Plain<Functor>, out_dtype, __VA_ARGS__)

// `name` "_scalar": Functor(x, other) with `other` a float attribute.
#define KPS_ELEMENTWISE_SCALAR_OP(name, Functor, out_dtype, doc, ...)                                        \
  static ::kps::internal::OpRegistrationTrigger KPS_CONCAT(kps_elementwise_op_, __COUNTER__) =              \
      ::kps::elementwise::ElementwiseScalarSchema(                                                           \
          ::kps::OpSchemaBuilder(name "_scalar", __FILE__, __LINE__), ::kps::elementwise::out_dtype, doc)   \
          .Kernels({::kps::DeviceType::kCpu, ::kps::DeviceType::kCuda},                                      \
                   ::kps::DataTypesOf<__VA_ARGS__>());                                         \
  KPS_ELEMENTWISE_KERNELS(name "_scalar", 1, ::kps::elementwise::ScalarMaker<Functor>, out_dtype, __VA_ARGS__)

