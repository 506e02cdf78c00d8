#include "registry/data_type.h"

#include "absl/strings/str_cat.h"
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

TEST(DeviceTest, ParsesAndPrintsIndices) {
  EXPECT_EQ(*ParseDevice("cuda:1"), Device(DeviceType::kCuda, 1));
  EXPECT_EQ(*ParseDevice("CUDA:0"), Device(DeviceType::kCuda, 0));
  EXPECT_EQ(*ParseDevice("gpu:3"), Device(DeviceType::kCuda, 3));
  EXPECT_EQ(*ParseDevice("cuda:63"), Device(DeviceType::kCuda, 63));
  EXPECT_EQ(*ParseDevice("cuda"), Device(DeviceType::kCuda, -1));  // the current GPU
  EXPECT_EQ(*ParseDevice("cpu"), Device(DeviceType::kCpu));
  EXPECT_EQ(ParseDevice("cpu")->index, -1);
  EXPECT_EQ(Device(DeviceType::kCpu, 3).index, -1);  // the CPU has no index
  EXPECT_EQ(Device(DeviceType::kCuda), Device(DeviceType::kCuda, -1));
  EXPECT_NE(Device(DeviceType::kCuda, 0), Device(DeviceType::kCuda, 1));
  EXPECT_EQ(DeviceName(Device(DeviceType::kCuda, 1)), "cuda:1");
  EXPECT_EQ(DeviceName(Device(DeviceType::kCuda)), "cuda");
  EXPECT_EQ(DeviceName(DeviceType::kCpu), "cpu");
  EXPECT_EQ(DeviceName(*ParseDevice("cuda:12")), "cuda:12");
}

TEST(DeviceTest, MalformedNamesAreErrorsNamingThem) {
  for (const char* bad : {"cuda:", "cuda:-1", "cuda:+1", "cuda: 1", "cuda:1 ", "cuda:1x", "cuda:x", "cuda:1:2",
                          "cuda:99999999999", "cuda:64", "cpu:0", "tpu:0", ":1", "tpu"}) {
    auto r = ParseDevice(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(absl::StrCat("'", bad, "'")), std::string::npos) << r.status();
  }
  EXPECT_NE(ParseDevice("cuda:x").status().message().find("integer in [0, 64)"), std::string::npos);
  EXPECT_NE(ParseDevice("cpu:0").status().message().find("only CUDA devices take an index"), std::string::npos);
}

// Runs everywhere: with no GPU, every index is past the count.
TEST(DeviceTest, CheckCudaDeviceNamesTheDeviceAndTheCount) {
  const int n = CudaDeviceCount();
  for (int i = 0; i < n; ++i) EXPECT_TRUE(CheckCudaDevice(i).ok()) << i;
  for (int i : {n, n + 1, -1}) {
    const absl::Status s = CheckCudaDevice(i);
    ASSERT_FALSE(s.ok()) << i;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(absl::StrCat("device cuda:", i, " does not exist: this process sees ", n, " CUDA")),
              std::string::npos)
        << s;
  }
  CudaDeviceGuard guard;  // a guard asked for a GPU that is not there says so, changes nothing
  EXPECT_FALSE(guard.Set(n).ok());
}

}  // namespace
}  // namespace kps
