// The Matrix Market reader: every supported field and symmetry, comments and blank lines,
// duplicates summed in file order, unsorted entries sorted, a file read from disk and
// multiplied by spmv against a dense product; and each malformed file an error naming
// the file, the line and the problem.
#include "io/mtx.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "testing/support.h"

namespace kps {
namespace io {
namespace {

using ::kps::testing::Contains;
using ::kps::testing::ToDoubles;

std::vector<double> Dense(const CsrMatrix& a) {
  std::vector<double> d(static_cast<size_t>(a.rows * a.cols), 0.0);
  const std::vector<double> ptr = ToDoubles(a.indptr), idx = ToDoubles(a.indices);
  const std::vector<double> val = a.values.defined() ? ToDoubles(a.values) : std::vector<double>(idx.size(), 1.0);
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t k = static_cast<int64_t>(ptr[r]); k < static_cast<int64_t>(ptr[r + 1]); ++k) {
      d[static_cast<size_t>(r * a.cols + static_cast<int64_t>(idx[k]))] += val[k];
    }
  }
  return d;
}

TEST(MatrixMarketTest, GeneralRealWithDuplicatesAndUnsortedEntries) {
  auto a = ParseMatrixMarket(
      "%%MatrixMarket matrix coordinate real general\n"
      "% a comment\n"
      "\n"
      "3 4 5\n"
      "3 4 1.5\n"
      "1 2 -2e1\n"
      "3 1 0.25\n"
      "1 2 0.5\n"
      "  2 3   7\n",
      "t.mtx");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->rows, 3);
  EXPECT_EQ(a->cols, 4);
  EXPECT_FALSE(a->symmetric);
  EXPECT_EQ(ToDoubles(a->indptr), (std::vector<double>{0, 1, 2, 4}));
  EXPECT_EQ(ToDoubles(a->indices), (std::vector<double>{1, 2, 0, 3}));
  EXPECT_EQ(ToDoubles(a->values), (std::vector<double>{-19.5, 7, 0.25, 1.5}));
  EXPECT_EQ(a->indices.dtype(), DataType::kInt32);
  EXPECT_EQ(a->indptr.dtype(), DataType::kInt64);
}

TEST(MatrixMarketTest, SymmetricSkewPatternAndInteger) {
  auto s = ParseMatrixMarket("%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 2\n3 1 5\n3 2 -1\n", "s");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->symmetric);
  EXPECT_EQ(Dense(*s), (std::vector<double>{2, 0, 5, 0, 0, -1, 5, -1, 0}));
  auto k = ParseMatrixMarket("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 3\n", "k");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(Dense(*k), (std::vector<double>{0, -3, 3, 0}));
  auto p = ParseMatrixMarket("%%MatrixMarket matrix coordinate pattern general\n2 3 2\n2 3\n1 1\n", "p");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->values.defined());
  EXPECT_EQ(Dense(*p), (std::vector<double>{1, 0, 0, 0, 0, 1}));
  auto i = ParseMatrixMarket("%%MatrixMarket matrix coordinate integer general\n1 2 2\n1 2 -4\n1 1 9\n", "i");
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_EQ(Dense(*i), (std::vector<double>{9, -4}));
  auto upper = ParseMatrixMarket("%%MatrixMarket Matrix Coordinate Pattern Symmetric\n2 2 1\n2 1\n", "u");
  ASSERT_TRUE(upper.ok()) << upper.status();  // the words after the banner in any case
  EXPECT_EQ(Dense(*upper), (std::vector<double>{0, 1, 1, 0}));
}

TEST(MatrixMarketTest, CrlfLineEndsAndTabs) {
  auto a = ParseMatrixMarket("%%MatrixMarket matrix coordinate real general\r\n2\t2\t1\r\n2\t1\t3.5\r\n", "crlf");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Dense(*a), (std::vector<double>{0, 0, 3.5, 0}));
}

TEST(MatrixMarketTest, EmptyMatrices) {
  auto a = ParseMatrixMarket("%%MatrixMarket matrix coordinate real general\n0 0 0\n", "e");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(ToDoubles(a->indptr), (std::vector<double>{0}));
  auto b = ParseMatrixMarket("%%MatrixMarket matrix coordinate real general\n4 2 0", "e2");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(ToDoubles(b->indptr), (std::vector<double>{0, 0, 0, 0, 0}));
  EXPECT_EQ(b->indices.numel(), 0);
}

TEST(MatrixMarketTest, ReadsAFileAndSpmvMatchesTheDenseProduct) {
  const std::string path = ::testing::TempDir() + "/kps_mtx_test.mtx";
  {
    std::ofstream f(path);
    f << "%%MatrixMarket matrix coordinate real symmetric\n% lower triangle\n5 5 7\n"
         "1 1 4\n2 1 -1\n2 2 4\n3 2 -1\n3 3 4\n5 1 2.5\n5 5 1\n";
  }
  auto a = ReadMatrixMarket(path);
  std::remove(path.c_str());
  ASSERT_TRUE(a.ok()) << a.status();
  const std::vector<double> x = {1, -2, 3, 0.5, 7};
  auto out = Call("spmv")
                 .Input("indptr", a->indptr)
                 .Input("indices", a->indices)
                 .Input("values", a->values)
                 .Input("x", *Tensor::FromVector<double>(x, Shape{5}))
                 .RunOne();
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> d = Dense(*a);
  std::vector<double> want(5, 0.0);
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 5; ++c) want[r] += d[r * 5 + c] * x[c];
  }
  EXPECT_EQ(ToDoubles(*out), want);
}

// SuiteSparse matrices as Debian's r-cran-matrix ships them (tools/install_deps.sh fetches
// them): sizes and entry counts known from the files, symmetry mirrored, and spmv on the
// CPU against the dense product.
TEST(MatrixMarketTest, RealMatrices) {
  const std::string dir = KPS_TEST_MATRICES_DIR;
  if (!std::ifstream(dir + "/pores_1.mtx")) {
    GTEST_SKIP() << "no " << dir << "/pores_1.mtx: tools/install_deps.sh fetches it (Debian's r-cran-matrix)";
  }
  struct Known {
    const char* file;
    int64_t rows, nnz;
    bool symmetric, pattern;
  };
  for (const Known& k : {Known{"pores_1.mtx", 30, 180, false, false}, Known{"lund_a.mtx", 147, 2449, true, false},
                         Known{"jgl009.mtx", 9, 50, false, true}}) {
    SCOPED_TRACE(k.file);
    auto a = ReadMatrixMarket(dir + "/" + k.file);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->rows, k.rows);
    EXPECT_EQ(a->cols, k.rows);
    EXPECT_EQ(a->indices.numel(), k.nnz);
    EXPECT_EQ(a->symmetric, k.symmetric);
    EXPECT_EQ(a->values.defined(), !k.pattern);
    const std::vector<double> d = Dense(*a);
    if (k.symmetric) {
      for (int64_t r = 0; r < a->rows; ++r) {
        for (int64_t c = 0; c < r; ++c) ASSERT_EQ(d[r * a->cols + c], d[c * a->cols + r]);
      }
    }
    std::vector<double> x(static_cast<size_t>(a->cols));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i % 7) - 3.0;
    Call call("spmv");
    call.Input("indptr", a->indptr).Input("indices", a->indices).Input("x", *Tensor::FromVector<double>(x, Shape{a->cols}));
    if (a->values.defined()) call.Input("values", a->values);
    auto out = call.RunOne();
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<double> got = ToDoubles(*out);
    for (int64_t r = 0; r < a->rows; ++r) {
      double want = 0, mag = 0;
      for (int64_t c = 0; c < a->cols; ++c) {
        want += d[r * a->cols + c] * x[c];
        mag += std::fabs(d[r * a->cols + c] * x[c]);
      }
      EXPECT_NEAR(got[r], want, 1e-12 * mag) << "row " << r;
    }
  }
}

TEST(MatrixMarketTest, MalformedFilesNameTheLineAndTheProblem) {
  const std::string head = "%%MatrixMarket matrix coordinate real general\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "line 1: does not start with the banner"},
      {"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", "format 'array' is not supported"},
      {"%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", "field 'complex' is not supported"},
      {"%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", "symmetry 'hermitian' is not supported"},
      {"%%MatrixMarket vector coordinate real general\n", "is not '%%MatrixMarket matrix FORMAT"},
      {head, "no size line"},
      {head + "2 x 3\n", "line 2: size line '2 x 3' is not 'ROWS COLS ENTRIES'"},
      {head + "-1 2 0\n", "out of range"},
      {head + "3 3 999999999\n1 1 1\n", "the header claims 999999999 entries"},
      {"%%MatrixMarket matrix coordinate integer general\n2 3 2\n0 1 1\n1 3 4\n",
       "line 3: entry (0, 1) is outside the 2 x 3 matrix (indices start at 1)"},
      {head + "2 2 1\n1 3 1\n", "entry (1, 3) is outside the 2 x 2 matrix"},
      {head + "2 2 1\n1 1\n", "line 3: entry '1 1' is not 'ROW COL VALUE' (real)"},
      {head + "2 2 1\n1 1 abc\n", "entry '1 1 abc' is not"},
      {head + "2 2 1\n1 1 1\n2 2 2\n", "line 4: more entries than the 1 the size line gives"},
      {head + "2 2 3\n1 1 1\n", "the file has 1 entries but the size line gives 3"},
      {"%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n", "must be square, not 2 x 3"},
      {"%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n",
       "entry (1, 2) is above the diagonal; a symmetric file stores the lower triangle"},
      {"%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n", "no diagonal entries"},
  };
  for (const auto& [text, part] : cases) {
    auto a = ParseMatrixMarket(text, "bad.mtx");
    ASSERT_FALSE(a.ok()) << part;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << part;
    EXPECT_TRUE(Contains(std::string(a.status().message()), "Matrix Market file 'bad.mtx'")) << part;
    EXPECT_TRUE(Contains(std::string(a.status().message()), part));
  }
  auto missing = ReadMatrixMarket("/nonexistent/kps.mtx");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace io
}  // namespace kps
