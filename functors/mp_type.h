// MPTypeTrait: the type a functor computes in. 16-bit floats compute in float (their
// own arithmetic would round after every step); every other type in itself.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace kps {

template <typename T>
struct MPTypeTrait {
  using Type = T;
};
template <>
struct MPTypeTrait<__half> {
  using Type = float;
};
template <>
struct MPTypeTrait<__nv_bfloat16> {
  using Type = float;
};

template <typename T>
using MPType = typename MPTypeTrait<T>::Type;

// Integer arithmetic that wraps on overflow (two's complement) instead of being
// undefined, so CPU and GPU kernels agree bit for bit.
template <typename T, bool = std::is_integral_v<T> && !std::is_same_v<T, bool>>
struct WrapTypeTrait {
  using Type = T;
};
template <typename T>
struct WrapTypeTrait<T, true> {
  using Type = std::make_unsigned_t<T>;
};
template <typename T>
using WrapType = typename WrapTypeTrait<T>::Type;

}  // namespace kps
