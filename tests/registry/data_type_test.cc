#include "registry/data_type.h"

#include "gtest/gtest.h"
#include "registry/device.h"

namespace kps {
namespace {

TEST(DataTypeTest, SizesAndNamesOfEveryType) {
  const struct {
    DataType dtype;
    size_t size;
    const char* name;
  } kExpected[] = {
      {DataType::kBool, 1, "bool"},         {DataType::kInt8, 1, "int8"},
      {DataType::kUInt8, 1, "uint8"},       {DataType::kInt16, 2, "int16"},
      {DataType::kInt32, 4, "int32"},       {DataType::kInt64, 8, "int64"},
      {DataType::kFloat16, 2, "float16"},   {DataType::kBFloat16, 2, "bfloat16"},
      {DataType::kFloat32, 4, "float32"},   {DataType::kFloat64, 8, "float64"},
  };
  ASSERT_EQ(sizeof(kExpected) / sizeof(kExpected[0]), static_cast<size_t>(kNumDataTypes));
  for (const auto& e : kExpected) {
    EXPECT_EQ(DataTypeSize(e.dtype), e.size) << e.name;
    EXPECT_EQ(DataTypeName(e.dtype), e.name);
    auto parsed = ParseDataType(e.name);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, e.dtype);
  }
}

TEST(DataTypeTest, CppTypeMappingRoundTrips) {
  static_assert(DataTypeOf<float>() == DataType::kFloat32);
  static_assert(DataTypeOf<const int64_t>() == DataType::kInt64);
  static_assert(std::is_same_v<CppTypeOf<DataType::kBFloat16>, bfloat16>);
  static_assert(std::is_same_v<CppTypeOf<DataType::kUInt8>, uint8_t>);
  for (int i = 0; i < kNumDataTypes; ++i) {
    const DataType d = static_cast<DataType>(i);
    VisitDataType(d, [&](auto tag) {
      using T = decltype(tag);
      EXPECT_EQ(DataTypeOf<T>(), d);
      EXPECT_EQ(sizeof(T), DataTypeSize(d));
    });
  }
}

TEST(DataTypeTest, ShortNamesAndCaseAreAccepted) {
  EXPECT_EQ(*ParseDataType("f16"), DataType::kFloat16);
  EXPECT_EQ(*ParseDataType("BF16"), DataType::kBFloat16);
  EXPECT_EQ(*ParseDataType("double"), DataType::kFloat64);
  EXPECT_EQ(*ParseDataType("u8"), DataType::kUInt8);
}

TEST(DataTypeTest, UnknownNameListsKnownOnes) {
  auto r = ParseDataType("float128");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("unknown dtype 'float128'"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("bfloat16"), std::string::npos) << r.status();
}

TEST(DataTypeTest, Categories) {
  EXPECT_TRUE(IsFloatingPoint(DataType::kBFloat16));
  EXPECT_FALSE(IsFloatingPoint(DataType::kInt32));
  EXPECT_TRUE(IsIntegral(DataType::kUInt8));
  EXPECT_FALSE(IsIntegral(DataType::kBool));
}

TEST(DeviceTypeTest, NamesParseAndUnknownIsAnError) {
  EXPECT_EQ(DeviceTypeName(DeviceType::kCpu), "cpu");
  EXPECT_EQ(*ParseDeviceType("CUDA"), DeviceType::kCuda);
  EXPECT_EQ(*ParseDeviceType("gpu"), DeviceType::kCuda);
  auto r = ParseDeviceType("tpu");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("known devices: cpu, cuda"), std::string::npos);
}

}  // namespace
}  // namespace kps
