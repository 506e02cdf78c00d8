// Typed attribute values of ops.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "registry/data_type.h"

namespace kps {

enum class AttrType : int8_t { kBool, kInt, kFloat, kString, kInts, kDataType };

// Variant order matches AttrType.
using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, DataType>;

template <typename T>
struct AttrTypeTraits;
template <> struct AttrTypeTraits<bool> { static constexpr AttrType kType = AttrType::kBool; };
template <> struct AttrTypeTraits<int64_t> { static constexpr AttrType kType = AttrType::kInt; };
template <> struct AttrTypeTraits<double> { static constexpr AttrType kType = AttrType::kFloat; };
template <> struct AttrTypeTraits<std::string> { static constexpr AttrType kType = AttrType::kString; };
template <> struct AttrTypeTraits<std::vector<int64_t>> { static constexpr AttrType kType = AttrType::kInts; };
template <> struct AttrTypeTraits<DataType> { static constexpr AttrType kType = AttrType::kDataType; };

inline AttrType TypeOfAttr(const AttrValue& v) { return static_cast<AttrType>(v.index()); }
absl::string_view AttrTypeName(AttrType type);  // "bool", "int", "float", "string", "ints", "dtype"
std::string AttrValueToString(const AttrValue& v);
// Parses command-line text as an attribute of `type` ("2.5", "true", "1,2,3", "float16").
absl::StatusOr<AttrValue> ParseAttrValue(AttrType type, absl::string_view text);

// Builds an AttrValue from the C++ value a caller passes: any integer becomes int64,
// any floating-point value double, a string literal std::string.
template <typename T>
AttrValue MakeAttrValue(T&& value) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, bool>) {
    return AttrValue(std::in_place_type<bool>, value);
  } else if constexpr (std::is_integral_v<U>) {
    return AttrValue(std::in_place_type<int64_t>, static_cast<int64_t>(value));
  } else if constexpr (std::is_floating_point_v<U>) {
    return AttrValue(std::in_place_type<double>, static_cast<double>(value));
  } else if constexpr (std::is_same_v<U, DataType>) {
    return AttrValue(std::in_place_type<DataType>, value);
  } else if constexpr (std::is_convertible_v<U, std::string>) {
    return AttrValue(std::in_place_type<std::string>, std::string(value));
  } else if constexpr (std::is_same_v<U, AttrValue>) {
    return value;
  } else {
    return AttrValue(std::in_place_type<std::vector<int64_t>>, std::vector<int64_t>(value.begin(), value.end()));
  }
}

}  // namespace kps
