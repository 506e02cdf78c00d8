// Tests of the .npy reader and writer: round trips of every dtype on random values, the
// exact bytes NumPy expects, and a clear error for each kind of bad file.
#include "io/npy.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "registry/tensor.h"
#include "testing/support.h"

namespace kps {
namespace io {
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
  EXPECT_TRUE(Contains(std::string(s.message()), "No such file or directory")) << s;
}

// ---- hardening (issue 25) ---------------------------------------------------------------

// The names in `dir_`, for checking that a failed write left nothing behind.
std::vector<std::string> Listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(QuoteForMessageTest, EscapesAndTruncates) {
  EXPECT_EQ(QuoteForMessage("<f4"), "'<f4'");
  EXPECT_EQ(QuoteForMessage(""), "''");
  EXPECT_EQ(QuoteForMessage("a\x1b[2Jb"), "'a\\x1b[2Jb'");
  EXPECT_EQ(QuoteForMessage(std::string("\0\n\xff", 3)), "'\\x00\\x0a\\xff'");
  EXPECT_EQ(QuoteForMessage("it's a\\b"), "'it\\'s a\\\\b'");
  EXPECT_EQ(QuoteForMessage(std::string(200000, 'x')), "'" + std::string(80, 'x') + "'... (200000 bytes)");
  EXPECT_EQ(QuoteForMessage("abcdef", 3), "'abc'... (6 bytes)");
  EXPECT_EQ(QuoteForMessage("abc", 3), "'abc'");
}

TEST_F(NpyTest, ReadRefusesADirectory) {
  absl::StatusOr<Tensor> t = ReadNpy(dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(std::string(t.status().message()), "is a directory")) << t.status();
  EXPECT_FALSE(Contains(std::string(t.status().message()), "too short")) << t.status();
}

TEST_F(NpyTest, ReadRefusesACharacterDevice) {
  absl::StatusOr<Tensor> t = ReadNpy("/dev/null");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(std::string(t.status().message()), "is not a regular file (character device)")) << t.status();
}

// A FIFO with no writer must be refused at once. Should the reader block, a helper opens
// the write end after 3 s so the test fails (too slow, wrong message) instead of hanging.
TEST_F(NpyTest, ReadRefusesAFifoWithoutBlocking) {
  const std::string fifo = Path("fifo.npy");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread unblocker([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (cv.wait_for(lock, std::chrono::seconds(3), [&] { return done; })) return;
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  });
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Tensor> t = ReadNpy(fifo);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  unblocker.join();
  EXPECT_LT(seconds, 2.0);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(std::string(t.status().message()), "is not a regular file (fifo)")) << t.status();
}

TEST_F(NpyTest, HugeMalformedHeaderIsQuotedAndCut) {
  // 200 KB of header with terminal escape sequences in it, malformed at its end.
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'junk': '\x1b]0;title\x07\x1b[2J";
  dict += std::string(200000, 'A');
  dict += "', 'shape': (1,) oops";
  WriteBytes("h.npy", MakeNpy(dict, std::string(4, '\1'), 2));
  absl::StatusOr<Tensor> t = ReadNpy(Path("h.npy"));
  ASSERT_FALSE(t.ok());
  const std::string m(t.status().message());
  EXPECT_TRUE(Contains(m, "malformed header")) << m;
  EXPECT_LT(m.size(), 600u) << m;
  EXPECT_TRUE(Contains(m, "\\x1b]0;title\\x07")) << m;
  EXPECT_TRUE(Contains(m, "bytes)")) << m;
  for (char c : m) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << static_cast<int>(static_cast<unsigned char>(c));

  // A descr full of escapes, in the "unsupported dtype" message.
  WriteBytes("d.npy", MakeNpy("{'descr': '\x1b[31m', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\1')));
  const std::string d(ReadNpy(Path("d.npy")).status().message());
  EXPECT_TRUE(Contains(d, "unsupported dtype '\\x1b[31m'")) << d;
}

TEST_F(NpyTest, HeaderLengthIsCheckedAgainstTheFileAndALimit) {
  // Version 2.0 with a 2 GiB header length in a 40-byte file.
  std::string v2 = std::string("\x93NUMPY\x02\x00\x00\x00\x00\x80", 12) + std::string(28, ' ');
  WriteBytes("v2.npy", v2);
  const std::string m(ReadNpy(Path("v2.npy")).status().message());
  EXPECT_TRUE(Contains(m, "its header claims 2147483648 bytes")) << m;
  // Within the limit, past the end of the file.
  std::string cut = std::string("\x93NUMPY\x03\x00\x00\x10\x00\x00", 12) + "{'descr': '<f4'";
  EXPECT_TRUE(Contains(std::string(ParseNpy(cut, "cut").status().message()), "truncated header")) << ParseNpy(cut, "cut").status();
}

// The one shape rule: zero dims count as 1 in the extent, so the order of the dims does
// not matter, and the stride arithmetic never overflows.
TEST_F(NpyTest, ShapesObeyTheOneShapeRule) {
  const std::string two62 = "4611686018427387904";
  for (const std::string& shape : {"(0, " + two62 + ", " + two62 + ")", "(" + two62 + ", " + two62 + ", 0)",
                                   std::string("(0, 1073741824, 1073741825)"),
                                   std::string("(1152921504606846977,)")}) {
    SCOPED_TRACE(shape);
    absl::StatusOr<Tensor> t =
        ParseNpy(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }", ""), "s.npy");
    ASSERT_FALSE(t.ok());
    EXPECT_TRUE(Contains(std::string(t.status().message()), "too large")) << t.status();
    EXPECT_TRUE(Contains(std::string(t.status().message()), "npy file 's.npy'")) << t.status();
  }
  // The largest extent allowed, 2^60, empty because of its zero dim.
  absl::StatusOr<Tensor> edge = ParseNpy(
      MakeNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (1073741824, 0, 1073741824), }", ""), "e.npy");
  ASSERT_TRUE(edge.ok()) << edge.status();
  EXPECT_EQ(edge->numel(), 0);
  EXPECT_EQ(edge->shape(), (Shape{1073741824, 0, 1073741824}));

  std::string rank65 = "(";
  for (int i = 0; i < 65; ++i) rank65 += "1, ";
  rank65 += ")";
  absl::StatusOr<Tensor> deep =
      ParseNpy(MakeNpy("{'descr': '|u1', 'fortran_order': False, 'shape': " + rank65 + ", }", "x"), "r.npy");
  ASSERT_FALSE(deep.ok());
  EXPECT_TRUE(Contains(std::string(deep.status().message()), "more than 64 dimensions")) << deep.status();
}

TEST_F(NpyTest, ParseNpyInMemoryMatchesTheFileReader) {
  const Tensor t = Random(Shape{3, 4}, DataType::kInt16);
  ASSERT_TRUE(WriteNpy(Path("t.npy"), t).ok());
  const std::string bytes = ReadBytes("t.npy");
  absl::StatusOr<Tensor> a = ParseNpy(bytes, "mem");
  absl::StatusOr<Tensor> b = ReadNpy(Path("t.npy"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->shape(), b->shape());
  EXPECT_EQ(a->dtype(), b->dtype());
  EXPECT_EQ(std::memcmp(a->raw_data(), t.raw_data(), t.nbytes()), 0);
  EXPECT_EQ(std::memcmp(b->raw_data(), t.raw_data(), t.nbytes()), 0);
  // Every strict prefix is an error, never a crash.
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(ParseNpy(bytes.substr(0, n), "mem").ok()) << n;
}

// The fuzz target's seed corpus: every valid_* file parses, every invalid_* one does not.
TEST(NpyCorpusTest, SeedsParseAsTheirNamesSay) {
  const std::filesystem::path corpus =
      std::filesystem::path(__FILE__).parent_path().parent_path() / "fuzz" / "corpus" / "npy";
  if (!std::filesystem::is_directory(corpus)) GTEST_SKIP() << "no corpus at " << corpus;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(corpus)) {
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    absl::StatusOr<Tensor> t = ReadNpy(e.path().string());
    if (name.rfind("valid_", 0) == 0) {
      EXPECT_TRUE(t.ok()) << t.status();
    } else {
      EXPECT_FALSE(t.ok());
    }
    ++files;
  }
  EXPECT_GE(files, 12);
}

TEST_F(NpyTest, WriteReplacesASymlinkNotItsTarget) {
  WriteBytes("victim.txt", "keep me");
  std::filesystem::create_symlink(Path("victim.txt"), Path("out.npy"));
  const Tensor t = Random(Shape{4}, DataType::kFloat32);
  ASSERT_TRUE(WriteNpy(Path("out.npy"), t).ok());
  EXPECT_EQ(ReadBytes("victim.txt"), "keep me");
  struct stat st;
  ASSERT_EQ(::lstat(Path("out.npy").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  absl::StatusOr<Tensor> back = ReadNpy(Path("out.npy"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::memcmp(back->raw_data(), t.raw_data(), t.nbytes()), 0);
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"out.npy", "victim.txt"}));
}

// kps bench --json writes through WriteFileAtomically: a symlink is replaced, not
// followed, a directory in the way is an error, and a failure leaves no temp file.
TEST_F(NpyTest, WriteFileAtomicallyReplacesLinksAndLeavesNothingOnFailure) {
  WriteBytes("victim.txt", "keep me");
  std::filesystem::create_symlink(Path("victim.txt"), Path("bench.json"));
  ASSERT_TRUE(WriteFileAtomically(Path("bench.json"), "{\"results\": []}\n").ok());
  EXPECT_EQ(ReadBytes("victim.txt"), "keep me");
  EXPECT_EQ(ReadBytes("bench.json"), "{\"results\": []}\n");
  std::filesystem::create_directory(Path("dir.json"));
  absl::Status s = WriteFileAtomically(Path("dir.json"), "x");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dir.json"), std::string::npos) << s;
  EXPECT_FALSE(WriteFileAtomically(Path("missing/sub/x.json"), "x").ok());
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"bench.json", "dir.json", "victim.txt"}));
}

TEST_F(NpyTest, WrittenFilesHaveOrdinaryPermissions) {
  ASSERT_TRUE(WriteNpy(Path("p.npy"), Random(Shape{2}, DataType::kInt8)).ok());
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st;
  ASSERT_EQ(::stat(Path("p.npy").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644 & ~mask);
}

// A directory in the way of the second output: nothing is written, not even the first,
// and an existing first file keeps its content.
TEST_F(NpyTest, WriteNpyFilesIsAllOrNothingWhenADirectoryIsInTheWay) {
  std::filesystem::create_directory(Path("b.npy"));
  const NpyOutput outputs[] = {{Path("a.npy"), Random(Shape{3}, DataType::kFloat32)},
                               {Path("b.npy"), Random(Shape{3}, DataType::kInt64)}};
  absl::Status s = WriteNpyFiles(outputs);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(std::string(s.message()), "b.npy")) << s;
  EXPECT_TRUE(Contains(std::string(s.message()), "Is a directory")) << s;
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"b.npy"}));

  WriteBytes("a.npy", "old");
  EXPECT_FALSE(WriteNpyFiles(outputs).ok());
  EXPECT_EQ(ReadBytes("a.npy"), "old");
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"a.npy", "b.npy"}));
}

// A write that fails half way (here a file size limit, as a full disk would) removes
// every temporary file and leaves the existing targets as they were.
TEST_F(NpyTest, WriteNpyFilesIsAllOrNothingWhenAWriteFails) {
  WriteBytes("b.npy", "old b");
  const NpyOutput outputs[] = {{Path("a.npy"), Random(Shape{4}, DataType::kFloat32)},        // 144 bytes
                               {Path("b.npy"), Random(Shape{4096}, DataType::kFloat64)}};  // 32 KiB
  struct rlimit old_limit;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct rlimit small = old_limit;
  small.rlim_cur = 4096;
  // Without SIG_IGN, exceeding RLIMIT_FSIZE kills the process (SIGXFSZ); ignored, the
  // write fails with EFBIG.
  void (*old_handler)(int) = ::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  absl::Status s = WriteNpyFiles(outputs);
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(std::string(s.message()), "writing npy file")) << s;
  EXPECT_TRUE(Contains(std::string(s.message()), "b.npy")) << s;
  EXPECT_TRUE(Contains(std::string(s.message()), std::strerror(EFBIG))) << s;
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"b.npy"}));
  EXPECT_EQ(ReadBytes("b.npy"), "old b");
  // And with the limit lifted, both are written.
  ASSERT_TRUE(WriteNpyFiles(outputs).ok());
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"a.npy", "b.npy"}));
  EXPECT_TRUE(ReadNpy(Path("b.npy")).ok());
}

TEST_F(NpyTest, WriteNpyFilesRefusesAPathGivenTwice) {
  const Tensor t = Random(Shape{2}, DataType::kFloat32);
  const NpyOutput outputs[] = {{Path("a.npy"), t}, {Path("a.npy"), t}};
  absl::Status s = WriteNpyFiles(outputs);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(Contains(std::string(s.message()), "twice")) << s;
  EXPECT_TRUE(Listing(dir_).empty());
}

}  // namespace
}  // namespace io
}  // namespace kps
