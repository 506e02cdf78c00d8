// DataType: the element types KPS tensors hold, their C++ types, sizes and names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kps {

// 16-bit floats are CUDA's own types: they convert to and from float on host and device.
using float16 = __half;
using bfloat16 = __nv_bfloat16;

enum class DataType : int8_t {
  kBool = 0,
  kInt8,
  kUInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};
inline constexpr int kNumDataTypes = 10;

// X(cpp_type, enumerator, name) for every DataType, in enum order.
#define KPS_FOR_EACH_DATA_TYPE(X)        \
  X(bool, kBool, "bool")                 \
  X(int8_t, kInt8, "int8")               \
  X(uint8_t, kUInt8, "uint8")            \
  X(int16_t, kInt16, "int16")            \
  X(int32_t, kInt32, "int32")            \
  X(int64_t, kInt64, "int64")            \
  X(::kps::float16, kFloat16, "float16") \
  X(::kps::bfloat16, kBFloat16, "bfloat16") \
  X(float, kFloat32, "float32")          \
  X(double, kFloat64, "float64")

template <typename T>
struct DataTypeTraits;  // Undefined for types KPS does not hold.
#define KPS_DATA_TYPE_TRAITS_(T, E, N)                     \
  template <>                                              \
  struct DataTypeTraits<T> {                               \
    static constexpr DataType kValue = DataType::E;        \
  };
KPS_FOR_EACH_DATA_TYPE(KPS_DATA_TYPE_TRAITS_)
#undef KPS_DATA_TYPE_TRAITS_

// DataTypeOf<float>() == DataType::kFloat32.
template <typename T>
constexpr DataType DataTypeOf() {
  return DataTypeTraits<std::remove_cv_t<T>>::kValue;
}

// The dtype lists kernels register for, as C++ types (KPS_REGISTER_KERNEL_FOR_TYPES,
// DataTypesOf), defined here once.
#define KPS_ALL_CPP_TYPES \
  bool, int8_t, uint8_t, int16_t, int32_t, int64_t, ::kps::float16, ::kps::bfloat16, float, double
// All but bool.
#define KPS_NUMERIC_CPP_TYPES KPS_FLOAT_CPP_TYPES, KPS_INT_CPP_TYPES
#define KPS_FLOAT_CPP_TYPES ::kps::float16, ::kps::bfloat16, float, double
#define KPS_INT_CPP_TYPES int8_t, uint8_t, int16_t, int32_t, int64_t
// The floats and the signed integers.
#define KPS_SIGNED_CPP_TYPES KPS_FLOAT_CPP_TYPES, int8_t, int16_t, int32_t, int64_t

// The DataTypes of a list of C++ types: DataTypesOf<KPS_FLOAT_CPP_TYPES>().
template <typename... Ts>
std::vector<DataType> DataTypesOf() {
  return {DataTypeOf<Ts>()...};
}
// Every DataType, in enum order.
std::vector<DataType> AllDataTypes();

// The unsigned integer of T's width (1, 2, 4 or 8 bytes): kernels that only move elements
// (copy, upsample, fill) instantiate per width, not per dtype
// (KPS_REGISTER_KERNEL_BY_WIDTH).
template <typename T>
using BitsOf = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

template <DataType D>
struct CppTypeOfImpl;
#define KPS_CPP_TYPE_OF_(T, E, N) \
  template <>                     \
  struct CppTypeOfImpl<DataType::E> { using type = T; };
KPS_FOR_EACH_DATA_TYPE(KPS_CPP_TYPE_OF_)
#undef KPS_CPP_TYPE_OF_

// CppTypeOf<DataType::kFloat32> is float.
template <DataType D>
using CppTypeOf = typename CppTypeOfImpl<D>::type;

// Bytes per element.
size_t DataTypeSize(DataType dtype);
// "float32", "bfloat16", ...
absl::string_view DataTypeName(DataType dtype);
// Accepts the names above and the short forms f16, bf16, f32, f64, i8..i64, u8, half,
// float, double. The error lists every accepted name.
absl::StatusOr<DataType> ParseDataType(absl::string_view name);

inline constexpr bool IsFloatingPoint(DataType d) {
  return d == DataType::kFloat16 || d == DataType::kBFloat16 || d == DataType::kFloat32 ||
         d == DataType::kFloat64;
}
inline constexpr bool IsIntegral(DataType d) {  // bool is not integral here.
  return d == DataType::kInt8 || d == DataType::kUInt8 || d == DataType::kInt16 ||
         d == DataType::kInt32 || d == DataType::kInt64;
}

// Calls fn(T{}) -- a value of the C++ type of `dtype`, used only for its type -- and
// returns what fn returns: VisitDataType(d, [&](auto tag) { using T = decltype(tag); ...}).
template <typename Fn>
decltype(auto) VisitDataType(DataType dtype, Fn&& fn) {
  switch (dtype) {
#define KPS_VISIT_CASE_(T, E, N) \
  case DataType::E:              \
    return fn(T{});
    KPS_FOR_EACH_DATA_TYPE(KPS_VISIT_CASE_)
#undef KPS_VISIT_CASE_
  }
  return fn(float{});  // Unreachable: every enumerator is handled above.
}

}  // namespace kps
