// MPTypeTrait: the type a functor computes in. 16-bit floats compute in float (their
// own arithmetic would round after every step); every other type in itself. Also the
// type classes the functors dispatch on (IsFloatingType, IsFloat16Type) and WrapType.
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

// float16 and bfloat16: stored in 16 bits, computed in float.
template <typename T>
inline constexpr bool IsFloat16Type =
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Every floating type KPS holds: float16, bfloat16, float, double.
template <typename T>
inline constexpr bool IsFloatingType = std::is_floating_point_v<T> || IsFloat16Type<T>;

// Integer arithmetic that wraps on overflow (two's complement) instead of being
// undefined, so CPU and GPU kernels agree bit for bit. Types narrower than int compute
// in unsigned int: their unsigned type would promote to (signed) int, where a product
// such as 65535 * 65535 overflows.
template <typename T, bool = std::is_integral_v<T> && !std::is_same_v<T, bool>>
struct WrapTypeTrait {
  using Type = T;
};
template <typename T>
struct WrapTypeTrait<T, true> {
  using Type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};
template <typename T>
using WrapType = typename WrapTypeTrait<T>::Type;

}  // namespace kps
