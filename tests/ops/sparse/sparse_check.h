// Shared by the sparse op tests: a host CSR matrix and its random generator, the
// semirings of spmv and spmm computed in double, and 1-D inputs put on a test's device.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "registry/data_type.h"
#include "registry/tensor.h"
#include "testing/support.h"
#include "tests/ops/check_util.h"

namespace kps {
namespace sparse_test {

// The value dtypes of spmv and spmm.
inline const std::vector<DataType> kFloatTypes = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                                  DataType::kFloat64};

// An m x n CSR matrix on the host, its arrays as doubles (HostFromDoubles gives any dtype).
struct Csr {
  int64_t m = 0, n = 0;
  std::vector<double> indptr, indices, values;
};

// Rows of the given lengths; columns random in [0, n) (unsorted, duplicates allowed);
// values of dtype dt.
inline Csr MakeCsr(const std::vector<int64_t>& lengths, int64_t n, DataType dt, uint64_t seed) {
  Csr a;
  a.m = static_cast<int64_t>(lengths.size());
  a.n = n;
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> col(0, n > 0 ? n - 1 : 0);
  a.indptr.push_back(0);
  for (int64_t len : lengths) {
    for (int64_t k = 0; k < len; ++k) a.indices.push_back(static_cast<double>(col(gen)));
    a.indptr.push_back(static_cast<double>(a.indices.size()));
  }
  a.values = op_check::RandomValues(static_cast<int64_t>(a.indices.size()), dt, seed + 7);
  return a;
}

// Row lengths: `m` rows, each empty with probability `empty`, else 1 .. max_len entries.
inline std::vector<int64_t> Lengths(int64_t m, int64_t max_len, double empty, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> len(1, std::max<int64_t>(1, max_len));
  std::bernoulli_distribution is_empty(empty);
  std::vector<int64_t> v(static_cast<size_t>(m));
  for (int64_t& l : v) l = is_empty(gen) ? 0 : len(gen);
  return v;
}

// The semirings by their attribute names ("plus_times", "min_plus", "max_times",
// "or_and"), in double: the addition's identity, the addition and the multiplication.
inline double SemiringZero(const std::string& s) {
  if (s == "min_plus") return std::numeric_limits<double>::infinity();
  if (s == "max_times") return -std::numeric_limits<double>::infinity();
  return 0;
}

inline double SemiringAdd(const std::string& s, double a, double b) {
  if (s == "min_plus") return std::min(a, b);
  if (s == "max_times") return std::max(a, b);
  if (s == "or_and") return (a != 0 || b != 0) ? 1 : 0;
  return a + b;
}

inline double SemiringMul(const std::string& s, double a, double x) {
  if (s == "min_plus") return a + x;
  if (s == "or_and") return (a != 0 && x != 0) ? 1 : 0;
  return a * x;
}

// v as a 1-D contiguous tensor of dtype dt on dev.
inline Tensor Put(const std::vector<double>& v, DataType dt, DeviceType dev) {
  Tensor h = testing::HostFromDoubles(v, Shape{static_cast<int64_t>(v.size())}, dt);
  return dev == DeviceType::kCpu ? h : *h.To(dev);
}

// A test run once per device (PerDeviceTest) that puts its inputs on that device.
class SparseDeviceTest : public testing::PerDeviceTest {
 public:
  Tensor Put(const std::vector<double>& v, DataType dt) const { return sparse_test::Put(v, dt, GetParam()); }
};

}  // namespace sparse_test
}  // namespace kps
