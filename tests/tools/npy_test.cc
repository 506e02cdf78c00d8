// Tests of the .npy reader and writer: round trips of every dtype on random values, the
// exact bytes NumPy expects, and a clear error for each kind of bad file.
#include "tools/kps/npy.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/tensor.h"
#include "tests/support/test_support.h"

namespace kps {
namespace cli {
namespace {

using ::kps::testing::Contains;

// A fresh directory per test, removed afterwards.
class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           (std::string("kps_npy_") + info->name() + "_" + std::to_string(std::random_device()()));
    std::filesystem::create_directories(dir_);
    seed_ = std::random_device()();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  void WriteBytes(const std::string& name, const std::string& bytes) const {
    std::ofstream f(Path(name), std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::string ReadBytes(const std::string& name) const {
    std::ifstream f(Path(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  // Random values of any dtype, never all zero: floats in [-3, 3), integers in
  // [-50, 50] ([0, 100] unsigned), bool 50/50.
  Tensor Random(const Shape& shape, DataType dtype) {
    std::mt19937_64 rng(seed_++);
    auto t = Tensor::Empty(shape, dtype, DeviceType::kCpu);
    EXPECT_TRUE(t.ok()) << t.status();
    VisitDataType(dtype, [&](auto tag) {
      using T = decltype(tag);
      T* p = t->data<T>();
      for (int64_t i = 0; i < t->numel(); ++i) {
        if constexpr (std::is_same_v<T, bool>) {
          p[i] = rng() % 2 == 1;
        } else if constexpr (std::is_integral_v<T>) {
          p[i] = static_cast<T>(std::is_signed_v<T> ? static_cast<int>(rng() % 101) - 50
                                                    : static_cast<int>(rng() % 101));
        } else {
          const float f = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
          if constexpr (std::is_same_v<T, float16>) {
            p[i] = __float2half(f);
          } else if constexpr (std::is_same_v<T, bfloat16>) {
            p[i] = __float2bfloat16(f);
          } else {
            p[i] = static_cast<T>(f);
          }
        }
      }
    });
    return *std::move(t);
  }

  // A hand-made .npy file: magic, version, header (padded to 64 bytes), data.
  static std::string MakeNpy(const std::string& dict, const std::string& data, int major = 1) {
    const size_t preamble = major == 1 ? 10 : 12;
    std::string header = dict;
    while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string s = std::string("\x93NUMPY", 6);
    s += static_cast<char>(major);
    s += '\0';
    for (size_t i = 0; i < preamble - 8; ++i) s += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    return s + header + data;
  }

  std::filesystem::path dir_;
  uint64_t seed_ = 0;
};

TEST_F(NpyTest, RoundTripsEveryDtype) {
  for (int d = 0; d < kNumDataTypes; ++d) {
    const DataType dtype = static_cast<DataType>(d);
    SCOPED_TRACE(std::string(DataTypeName(dtype)));
    for (const Shape& shape : {Shape{3, 5}, Shape{7}, Shape{}, Shape{0, 4}, Shape{2, 1, 3}}) {
      SCOPED_TRACE(shape.ToString());
      const Tensor t = Random(shape, dtype);
      const std::string path = Path("t.npy");
      ASSERT_TRUE(WriteNpy(path, t).ok());
      absl::StatusOr<Tensor> back = ReadNpy(path);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(back->shape(), shape);
      EXPECT_EQ(back->device(), DeviceType::kCpu);
      if (dtype == DataType::kBFloat16) {
        // Written widened to float32, which holds every bfloat16 exactly.
        ASSERT_EQ(back->dtype(), DataType::kFloat32);
        for (int64_t i = 0; i < t.numel(); ++i) {
          EXPECT_EQ(back->data<float>()[i], __bfloat162float(t.data<bfloat16>()[i])) << "element " << i;
        }
      } else {
        ASSERT_EQ(back->dtype(), dtype);
        EXPECT_EQ(std::memcmp(back->raw_data(), t.raw_data(), t.nbytes()), 0);
      }
    }
  }
}

TEST_F(NpyTest, WritesTheHeaderNumPyWrites) {
  const Tensor t = Random(Shape{2, 3}, DataType::kFloat32);
  ASSERT_TRUE(WriteNpy(Path("t.npy"), t).ok());
  const std::string bytes = ReadBytes("t.npy");
  // np.save: magic, version 1.0, little-endian header length, the dict, data at a
  // 64-byte boundary.
  ASSERT_GE(bytes.size(), 64u + 24u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = bytes.substr(10, header_len);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u) << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(bytes.size(), 10 + header_len + 24);
  EXPECT_EQ(std::memcmp(bytes.data() + 10 + header_len, t.raw_data(), 24), 0);

  ASSERT_TRUE(WriteNpy(Path("v.npy"), Random(Shape{5}, DataType::kInt16)).ok());
  EXPECT_NE(ReadBytes("v.npy").find("{'descr': '<i2', 'fortran_order': False, 'shape': (5,), }"), std::string::npos);
  ASSERT_TRUE(WriteNpy(Path("s.npy"), Random(Shape{}, DataType::kBool)).ok());
  EXPECT_NE(ReadBytes("s.npy").find("{'descr': '|b1', 'fortran_order': False, 'shape': (), }"), std::string::npos);
}

TEST_F(NpyTest, WritesAStridedViewInLogicalOrder) {
  const Tensor t = Random(Shape{3, 4}, DataType::kFloat32);
  absl::StatusOr<Tensor> tt = t.Transpose(0, 1);  // [4, 3], not contiguous
  ASSERT_TRUE(tt.ok());
  ASSERT_FALSE(tt->is_contiguous());
  ASSERT_TRUE(WriteNpy(Path("t.npy"), *tt).ok());
  absl::StatusOr<Tensor> back = ReadNpy(Path("t.npy"));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->shape(), (Shape{4, 3}));
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(back->data<float>()[i * 3 + j], t.data<float>()[j * 4 + i]);
  }
}

TEST_F(NpyTest, ReadsVersion2AndOtherHeaderSpellings) {
  const Tensor t = Random(Shape{2, 2}, DataType::kFloat64);
  const std::string data(static_cast<const char*>(t.raw_data()), t.nbytes());
  // Version 2.0 (4-byte header length), double quotes, keys in another order, no
  // trailing comma, a '=' (native) byte order.
  WriteBytes("a.npy", MakeNpy("{\"shape\": (2,2), \"fortran_order\": False, \"descr\": \"=f8\"}", data, 2));
  absl::StatusOr<Tensor> a = ReadNpy(Path("a.npy"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype(), DataType::kFloat64);
  EXPECT_EQ(a->shape(), (Shape{2, 2}));
  EXPECT_EQ(std::memcmp(a->raw_data(), t.raw_data(), t.nbytes()), 0);
}

TEST_F(NpyTest, NormalizesBoolBytes) {
  WriteBytes("b.npy", MakeNpy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x01\x07", 3)));
  absl::StatusOr<Tensor> b = ReadNpy(Path("b.npy"));
  ASSERT_TRUE(b.ok()) << b.status();
  const uint8_t* p = static_cast<const uint8_t*>(b->raw_data());
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[1], 1);
  EXPECT_EQ(p[2], 1);
}

TEST_F(NpyTest, MissingFileIsNotFound) {
  absl::StatusOr<Tensor> t = ReadNpy(Path("nope.npy"));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(std::string(t.status().message()), "nope.npy"));
}

TEST_F(NpyTest, BadMagic) {
  WriteBytes("bad.npy", "this is a text file, not an array");
  absl::StatusOr<Tensor> t = ReadNpy(Path("bad.npy"));
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(std::string(t.status().message()), "bad magic"));
  EXPECT_TRUE(Contains(std::string(t.status().message()), "bad.npy"));

  WriteBytes("short.npy", "\x93NUM");
  EXPECT_TRUE(Contains(std::string(ReadNpy(Path("short.npy")).status().message()), "too short"));
}

TEST_F(NpyTest, TruncatedData) {
  ASSERT_TRUE(WriteNpy(Path("t.npy"), Random(Shape{4, 4}, DataType::kFloat32)).ok());
  const std::string bytes = ReadBytes("t.npy");
  WriteBytes("cut.npy", bytes.substr(0, bytes.size() - 5));
  absl::StatusOr<Tensor> t = ReadNpy(Path("cut.npy"));
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(std::string(t.status().message()), "truncated data"));
  EXPECT_TRUE(Contains(std::string(t.status().message()), "64 bytes"));

  WriteBytes("cut_header.npy", bytes.substr(0, 30));
  EXPECT_TRUE(Contains(std::string(ReadNpy(Path("cut_header.npy")).status().message()), "truncated header"));

  WriteBytes("long.npy", bytes + "xyz");
  EXPECT_TRUE(Contains(std::string(ReadNpy(Path("long.npy")).status().message()), "67 bytes of data"));
}

TEST_F(NpyTest, UnsupportedDtypes) {
  WriteBytes("c.npy", MakeNpy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\1')));
  absl::StatusOr<Tensor> c = ReadNpy(Path("c.npy"));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(Contains(std::string(c.status().message()), "unsupported dtype '<c8'"));

  WriteBytes("be.npy", MakeNpy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\1')));
  EXPECT_TRUE(Contains(std::string(ReadNpy(Path("be.npy")).status().message()), "big-endian"));

  WriteBytes("u2.npy", MakeNpy("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", std::string(2, '\1')));
  EXPECT_TRUE(Contains(std::string(ReadNpy(Path("u2.npy")).status().message()), "unsupported dtype '<u2'"));
}

TEST_F(NpyTest, FortranOrderIsAnError) {
  WriteBytes("f.npy", MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, '\1')));
  absl::StatusOr<Tensor> t = ReadNpy(Path("f.npy"));
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(std::string(t.status().message()), "Fortran order"));
}

TEST_F(NpyTest, BadVersionAndMalformedHeaders) {
  std::string v9 = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\1'));
  v9[6] = 9;
  WriteBytes("v9.npy", v9);
  EXPECT_TRUE(Contains(std::string(ReadNpy(Path("v9.npy")).status().message()), "version 9.0"));

  for (const std::string& dict : {std::string("{'descr': '<f4', 'shape': (1,), }"),             // no fortran_order
                                  std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"),
                                  std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)"),
                                  std::string("['descr', '<f4']"),
                                  std::string("{'descr': '<f4', 'fortran_order': maybe, 'shape': (1,), }"),
                                  std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }")}) {
    SCOPED_TRACE(dict);
    WriteBytes("m.npy", MakeNpy(dict, std::string(4, '\1')));
    absl::StatusOr<Tensor> t = ReadNpy(Path("m.npy"));
    ASSERT_FALSE(t.ok());
    EXPECT_TRUE(Contains(std::string(t.status().message()), "malformed header"));
  }
  // A shape whose element count overflows.
  WriteBytes("huge.npy", MakeNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""));
  EXPECT_TRUE(Contains(std::string(ReadNpy(Path("huge.npy")).status().message()), "too large"));
}

TEST_F(NpyTest, UnwritablePathIsAnError) {
  absl::Status s = WriteNpy(Path("no/such/dir/t.npy"), Random(Shape{2}, DataType::kFloat32));
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(Contains(std::string(s.message()), "t.npy"));
}

}  // namespace
}  // namespace cli
}  // namespace kps
