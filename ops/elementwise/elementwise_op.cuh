// One-line elementwise ops: a functor plus one KPS_ELEMENTWISE_OP line registers the
// op's schema (broadcasting, strided inputs, one dtype in), its CPU kernel (the CPU
// loop) and its CUDA kernel (the elementwise launcher), for a list of dtypes:
//
//   KPS_ELEMENTWISE_OP("exp", 1, ExpFunctor, kSameAsInput, "e^x", KPS_FLOAT_CPP_TYPES);
//   KPS_ELEMENTWISE_OP("eq", 2, EqualFunctor, kBool, "x == y", KPS_ALL_CPP_TYPES);
//
// Use it in a .cu file (it instantiates CUDA kernels); split long op lists across files
// so no one translation unit dominates the build.
#pragma once

#include <type_traits>
#include <vector>

#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/elementwise_schema.h"
#include "ops/elementwise/cpu_loop.h"
#include "ops/elementwise/elementwise_launch.cuh"
#include "registry/kernel.h"
#include "registry/op_schema.h"

namespace kps {
namespace elementwise {

inline constexpr OutDtype kSameAsInput = OutDtype::kSameAsInput;
inline constexpr OutDtype kBool = OutDtype::kBool;

#define KPS_FLOAT_CPP_TYPES ::kps::float16, ::kps::bfloat16, float, double
#define KPS_SIGNED_CPP_TYPES ::kps::float16, ::kps::bfloat16, float, double, int8_t, int16_t, int32_t, int64_t

template <typename... Ts>
std::vector<DataType> DataTypesOf() {
  return {DataTypeOf<Ts>()...};
}



template <template <typename> class Functor, int Arity, OutDtype kOut>
struct GenericElementwise {
  template <typename T>
  using Out = std::conditional_t<kOut == OutDtype::kBool, bool, T>;

  template <typename T>
  class CpuKernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      Tensor& out = ctx->output(0);
      if constexpr (Arity == 1) {
        const Tensor* ins[] = {&ctx->input(0)};
        CpuElementwiseLoop(MakeElementwiseLayout(out.shape(), ins), out.data<Out<T>>(), Functor<T>(),
                           ctx->input(0).data<T>());
      } else {
        const Tensor* ins[] = {&ctx->input(0), &ctx->input(1)};
        CpuElementwiseLoop(MakeElementwiseLayout(out.shape(), ins), out.data<Out<T>>(), Functor<T>(),
                           ctx->input(0).data<T>(), ctx->input(1).data<T>());
      }
      return absl::OkStatus();
    }
  };

  template <typename T>
  class CudaKernel final : public OpKernel {
   public:
    absl::Status Compute(KernelContext* ctx) const override {
      Tensor& out = ctx->output(0);
      PointerArray<T, Arity> ptrs;
      const Tensor* ins[Arity];
      for (int a = 0; a < Arity; ++a) {
        ins[a] = &ctx->input(a);
        ptrs.p[a] = ctx->input(a).data<T>();
      }
      return LaunchElementwise<T, Out<T>, Arity>(ptrs, MakeElementwiseLayout(out.shape(), ins), out.data<Out<T>>(),
                                                 out.numel(), Functor<T>(), ctx->stream(), ctx->schema().name());
    }
  };
};

}  // namespace elementwise
}  // namespace kps

#define KPS_ELEMENTWISE_OP(name, arity, Functor, out_dtype, doc, ...)                                        \
  static ::kps::internal::OpRegistrationTrigger KPS_CONCAT(kps_elementwise_op_, __COUNTER__) =              \
      ::kps::elementwise::ElementwiseSchema(::kps::OpSchemaBuilder(name, __FILE__, __LINE__), arity,         \
                                            ::kps::elementwise::out_dtype, doc)                             \
          .Kernels({::kps::DeviceType::kCpu, ::kps::DeviceType::kCuda},                                      \
                   ::kps::elementwise::DataTypesOf<__VA_ARGS__>());                                         \
  KPS_REGISTER_KERNEL_FOR_TYPES(                                                                             \
      name, ::kps::DeviceType::kCpu,                                                                         \
      ::kps::elementwise::GenericElementwise<Functor, arity, ::kps::elementwise::out_dtype>::CpuKernel,      \
      __VA_ARGS__);                                                                                          \
  KPS_REGISTER_KERNEL_FOR_TYPES(                                                                             \
      name, ::kps::DeviceType::kCuda,                                                                        \
      ::kps::elementwise::GenericElementwise<Functor, arity, ::kps::elementwise::out_dtype>::CudaKernel,     \
      __VA_ARGS__)
