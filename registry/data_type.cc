#include "registry/data_type.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kps {

std::vector<DataType> AllDataTypes() {
  std::vector<DataType> all;
  for (int i = 0; i < kNumDataTypes; ++i) all.push_back(static_cast<DataType>(i));
  return all;
}

size_t DataTypeSize(DataType dtype) {
  switch (dtype) {
#define KPS_SIZE_CASE_(T, E, N) \
  case DataType::E:             \
    return sizeof(T);
    KPS_FOR_EACH_DATA_TYPE(KPS_SIZE_CASE_)
#undef KPS_SIZE_CASE_
  }
  return 0;
}

absl::string_view DataTypeName(DataType dtype) {
  switch (dtype) {
#define KPS_NAME_CASE_(T, E, N) \
  case DataType::E:             \
    return N;
    KPS_FOR_EACH_DATA_TYPE(KPS_NAME_CASE_)
#undef KPS_NAME_CASE_
  }
  return "invalid";
}

absl::StatusOr<DataType> ParseDataType(absl::string_view name) {
  static const struct {
    const char* name;
    DataType dtype;
  } kAliases[] = {
      {"bool", DataType::kBool},       {"int8", DataType::kInt8},        {"i8", DataType::kInt8},
      {"uint8", DataType::kUInt8},     {"u8", DataType::kUInt8},         {"int16", DataType::kInt16},
      {"i16", DataType::kInt16},       {"int32", DataType::kInt32},      {"i32", DataType::kInt32},
      {"int", DataType::kInt32},       {"int64", DataType::kInt64},      {"i64", DataType::kInt64},
      {"long", DataType::kInt64},      {"float16", DataType::kFloat16},  {"f16", DataType::kFloat16},
      {"half", DataType::kFloat16},    {"bfloat16", DataType::kBFloat16}, {"bf16", DataType::kBFloat16},
      {"float32", DataType::kFloat32}, {"f32", DataType::kFloat32},      {"float", DataType::kFloat32},
      {"float64", DataType::kFloat64}, {"f64", DataType::kFloat64},      {"double", DataType::kFloat64},
  };
  std::string lower = absl::AsciiStrToLower(name);
  for (const auto& a : kAliases) {
    if (lower == a.name) return a.dtype;
  }
  std::string all;
  for (const auto& a : kAliases) absl::StrAppend(&all, all.empty() ? "" : ", ", a.name);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name, "'; known dtypes: ", all));
}

}  // namespace kps
