// kps::SparseCsr on every device: built from COO entries with duplicates, validated,
// multiplied by a vector and a matrix against a dense double reference, transposed twice
// back to itself, moved between devices; and the shape and dtype errors of FromTensors.
#include "ops/sparse/csr.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ops/check_util.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::Contains;
using ::kps::testing::FreshSeed;
using ::kps::testing::HostFromDoubles;
using ::kps::testing::ToDoubles;

class SparseCsrTest : public ::kps::testing::PerDeviceTest {
 protected:
  Tensor Put(const std::vector<double>& v, const Shape& shape, DataType dt) const {
    Tensor h = HostFromDoubles(v, shape, dt);
    return GetParam() == DeviceType::kCpu ? h : *h.To(GetParam());
  }
};

TEST_P(SparseCsrTest, FromCooValidateMultiplyTranspose) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 gen(seed);
  const int64_t m = 37, n = 23, count = 300, k = 5;
  std::vector<double> r, c, v, dense(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < count; ++i) {
    r.push_back(static_cast<double>(gen() % m));
    c.push_back(static_cast<double>(gen() % n));
    v.push_back(static_cast<double>(static_cast<int64_t>(gen() % 17) - 8) / 4);
    dense[static_cast<size_t>(r.back() * n + c.back())] += v.back();  // duplicates add up
  }
  auto a = SparseCsr::FromCoo(Put(r, Shape{count}, DataType::kInt32), Put(c, Shape{count}, DataType::kInt32),
                              Put(v, Shape{count}, DataType::kFloat64), m, n);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->rows, m);
  EXPECT_EQ(a->cols, n);
  EXPECT_EQ(a->device(), GetParam());
  EXPECT_TRUE(a->Validate(/*sorted=*/true).ok());
  std::vector<double> x(static_cast<size_t>(n)), b(static_cast<size_t>(n * k));
  for (double& e : x) e = static_cast<double>(gen() % 9) - 4;
  for (double& e : b) e = static_cast<double>(gen() % 9) - 4;
  auto y = a->Matvec(Put(x, Shape{n}, DataType::kFloat64));
  ASSERT_TRUE(y.ok()) << y.status();
  auto yb = a->Matmul(Put(b, Shape{n, k}, DataType::kFloat64));
  ASSERT_TRUE(yb.ok()) << yb.status();
  std::vector<double> want_y(static_cast<size_t>(m), 0.0), want_yb(static_cast<size_t>(m * k), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      want_y[i] += dense[i * n + j] * x[j];
      for (int64_t l = 0; l < k; ++l) want_yb[i * k + l] += dense[i * n + j] * b[j * k + l];
    }
  }
  EXPECT_EQ(ToDoubles(*y), want_y);  // quarters times small integers: exact in double
  EXPECT_EQ(ToDoubles(*yb), want_yb);
  auto t = a->Transpose();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows, n);
  EXPECT_EQ(t->cols, m);
  auto tt = t->Transpose();
  ASSERT_TRUE(tt.ok()) << tt.status();
  EXPECT_EQ(ToDoubles(tt->indptr), ToDoubles(a->indptr));
  EXPECT_EQ(ToDoubles(tt->indices), ToDoubles(a->indices));
  EXPECT_EQ(ToDoubles(tt->values), ToDoubles(a->values));
  auto host = a->To(DeviceType::kCpu);
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(host->device(), DeviceType::kCpu);
  EXPECT_EQ(ToDoubles(host->values), ToDoubles(a->values));
  // A pattern matrix (no values): duplicates collapse to one entry of 1.
  auto p = SparseCsr::FromCoo(Put(r, Shape{count}, DataType::kInt64), Put(c, Shape{count}, DataType::kInt64),
                              Tensor(), m, n);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->values.defined());
  EXPECT_EQ(p->nnz(), a->nnz());
}

TEST_P(SparseCsrTest, ErrorsNameTheProblem) {
  const Tensor ptr = Put({0, 1, 2}, Shape{3}, DataType::kInt64);
  const Tensor idx = Put({0, 5}, Shape{2}, DataType::kInt32);
  auto bad = SparseCsr::FromTensors(ptr, Put({0, 1}, Shape{2}, DataType::kFloat32), Tensor(), 3);
  EXPECT_TRUE(Contains(bad.status().ToString(), "must be int32 or int64")) << bad.status();
  bad = SparseCsr::FromTensors(ptr, idx, Put({1, 2, 3}, Shape{3}, DataType::kFloat32), 3);
  EXPECT_TRUE(Contains(bad.status().ToString(), "values has shape [3] but indices has 2 entries")) << bad.status();
  auto a = SparseCsr::FromTensors(ptr, idx, Tensor(), 3);
  ASSERT_TRUE(a.ok()) << a.status();
  const absl::Status s = a->Validate();
  EXPECT_TRUE(Contains(s.ToString(), "input 'indices' has 5 at 1 (row 1), outside [0, 3)")) << s;
}

KPS_INSTANTIATE_ON_DEVICES(SparseCsrTest);

}  // namespace
}  // namespace kps
