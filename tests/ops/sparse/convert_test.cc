// coo_to_csr, graph_from_edges, csr_transpose and csr_validate on every device, against
// host references written from the definitions (maps of (row, column) -> sum in double,
// sets of undirected edges, a transpose by scanning columns): random entries with
// duplicates and every value and index dtype, sizes 0, 1, primes and past a million,
// empty and rectangular shapes, and every error. Allocations are poisoned (0xFF), so an
// output element a kernel leaves unwritten fails.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "testing/support.h"
#include "tests/ops/check_util.h"
#include "tests/ops/sparse/sparse_check.h"

namespace kps {
namespace {

using ::kps::op_check::AllClose;
using ::kps::op_check::RandomValues;
using ::kps::sparse_test::Csr;
using ::kps::testing::Contains;
using ::kps::testing::FreshSeed;
using ::kps::testing::ToDoubles;

class ConvertTest : public ::kps::sparse_test::SparseDeviceTest {};

const std::vector<DataType> kValueTypes = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                           DataType::kFloat64, DataType::kInt32,    DataType::kInt64};

struct Coo {
  std::vector<double> rows, cols, values;
};

// `count` entries in an m x n matrix; about a third repeat an earlier (row, column).
Coo RandomCoo(int64_t count, int64_t m, int64_t n, DataType dt, uint64_t seed) {
  Coo a;
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> row(0, std::max<int64_t>(0, m - 1)), col(0, std::max<int64_t>(0, n - 1));
  for (int64_t i = 0; i < count; ++i) {
    if (i > 0 && gen() % 3 == 0) {
      const size_t j = gen() % a.rows.size();
      a.rows.push_back(a.rows[j]);
      a.cols.push_back(a.cols[j]);
    } else {
      a.rows.push_back(static_cast<double>(row(gen)));
      a.cols.push_back(static_cast<double>(col(gen)));
    }
  }
  a.values = RandomValues(count, dt, seed + 1);
  return a;
}

// coo_to_csr against the reference: with duplicates summed, a map (row, column) -> sum;
// kept, the entries in (row, column, input position) order.
void CheckCooToCsr(DeviceType dev, const Coo& a, int64_t m, int64_t n, DataType it, DataType vt, bool with_values,
                   bool sum, const std::function<Tensor(const std::vector<double>&, DataType)>& put) {
  SCOPED_TRACE(std::string("count ") + std::to_string(a.rows.size()) + " m " + std::to_string(m) + " n " +
               std::to_string(n) + " " + std::string(DataTypeName(it)) + " " +
               (with_values ? std::string(DataTypeName(vt)) : std::string("pattern")) + (sum ? " summed" : " kept"));
  Call call("coo_to_csr");
  call.Input("rows", put(a.rows, it)).Input("cols", put(a.cols, it));
  if (with_values) call.Input("values", put(a.values, vt));
  call.Attr("num_rows", m).Attr("num_cols", n).Attr("sum_duplicates", sum).OnDevice(dev);
  auto out = call.Run();
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  std::vector<std::pair<std::pair<int64_t, int64_t>, double>> want;
  std::vector<double> mag;
  if (sum) {
    std::map<std::pair<int64_t, int64_t>, std::pair<double, double>> acc;
    for (size_t i = 0; i < a.rows.size(); ++i) {
      auto& e = acc[{static_cast<int64_t>(a.rows[i]), static_cast<int64_t>(a.cols[i])}];
      e.first += a.values[i];
      e.second += std::fabs(a.values[i]);
    }
    for (const auto& [key, s] : acc) {
      want.push_back({key, s.first});
      mag.push_back(s.second);
    }
  } else {
    std::vector<size_t> order(a.rows.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return std::make_pair(a.rows[x], a.cols[x]) < std::make_pair(a.rows[y], a.cols[y]);
    });
    for (size_t i : order) {
      want.push_back({{static_cast<int64_t>(a.rows[i]), static_cast<int64_t>(a.cols[i])}, a.values[i]});
      mag.push_back(std::fabs(a.values[i]));
    }
  }
  const std::vector<double> ptr = ToDoubles((*out)[0]), idx = ToDoubles((*out)[1]), val = ToDoubles((*out)[2]);
  EXPECT_EQ((*out)[0].dtype(), DataType::kInt64);
  EXPECT_EQ((*out)[1].dtype(), it);
  ASSERT_EQ(ptr.size(), static_cast<size_t>(m + 1));
  ASSERT_EQ(idx.size(), want.size());
  std::vector<double> want_ptr(static_cast<size_t>(m + 1), 0), want_idx, want_val, tol;
  for (size_t k = 0; k < want.size(); ++k) {
    want_ptr[static_cast<size_t>(want[k].first.first + 1)] += 1;
    want_idx.push_back(static_cast<double>(want[k].first.second));
    want_val.push_back(want[k].second);
    const double eps = vt == DataType::kFloat64 ? 0x1p-52 : 0x1p-23;
    tol.push_back(testing::Tolerance(vt, want[k].second) + 4 * mag[k] * eps * static_cast<double>(a.rows.size() + 1));
  }
  for (int64_t r = 0; r < m; ++r) want_ptr[r + 1] += want_ptr[r];
  EXPECT_EQ(ptr, want_ptr);
  EXPECT_EQ(idx, want_idx);
  if (with_values) {
    EXPECT_EQ((*out)[2].dtype(), vt);
    if (vt == DataType::kInt32 || vt == DataType::kInt64) {
      EXPECT_EQ(val, want_val);  // sums of small integers: exact
    } else {
      EXPECT_TRUE(AllClose(val, want_val, tol));
    }
  } else {
    EXPECT_EQ((*out)[2].numel(), 0);
  }
}

TEST_P(ConvertTest, CooToCsrEveryDtypeWithDuplicates) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  auto put = [this](const std::vector<double>& v, DataType dt) { return Put(v, dt); };
  for (DataType it : {DataType::kInt32, DataType::kInt64}) {
    for (DataType vt : kValueTypes) {
      CheckCooToCsr(GetParam(), RandomCoo(3001, 97, 131, vt, seed), 97, 131, it, vt, true, true, put);
    }
    CheckCooToCsr(GetParam(), RandomCoo(3001, 97, 131, DataType::kFloat32, seed), 97, 131, it, DataType::kFloat32,
                  false, true, put);
    CheckCooToCsr(GetParam(), RandomCoo(3001, 97, 131, DataType::kFloat64, seed), 97, 131, it, DataType::kFloat64, true,
                  false, put);
  }
}

TEST_P(ConvertTest, CooToCsrSizes) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  auto put = [this](const std::vector<double>& v, DataType dt) { return Put(v, dt); };
  for (int64_t count : {0, 1, 2, 17, 255, 257, 100003}) {
    CheckCooToCsr(GetParam(), RandomCoo(count, 1000, 999, DataType::kFloat32, seed + count), 1000, 999,
                  DataType::kInt32, DataType::kFloat32, true, true, put);
  }
  // Empty shapes, one row, one column, many empty rows, a dense row.
  CheckCooToCsr(GetParam(), Coo{}, 0, 0, DataType::kInt64, DataType::kFloat32, true, true, put);
  CheckCooToCsr(GetParam(), Coo{}, 5, 0, DataType::kInt64, DataType::kFloat32, false, true, put);
  CheckCooToCsr(GetParam(), RandomCoo(500, 1, 1000, DataType::kFloat64, seed), 1, 1000, DataType::kInt64,
                DataType::kFloat64, true, true, put);
  CheckCooToCsr(GetParam(), RandomCoo(500, 1000, 1, DataType::kFloat64, seed), 1000, 1, DataType::kInt64,
                DataType::kFloat64, true, true, put);
  CheckCooToCsr(GetParam(), RandomCoo(300, 200000, 7, DataType::kBFloat16, seed), 200000, 7, DataType::kInt32,
                DataType::kBFloat16, true, true, put);
  if (GetParam() == DeviceType::kCuda) {
    CheckCooToCsr(GetParam(), RandomCoo((1 << 21) + 3, 70001, 1 << 20, DataType::kFloat32, seed), 70001, 1 << 20,
                  DataType::kInt64, DataType::kFloat32, true, true, put);
  }
}

TEST_P(ConvertTest, CooToCsrErrors) {
  auto run = [&](const std::vector<double>& r, const std::vector<double>& c, int64_t m, int64_t n) {
    return Call("coo_to_csr")
        .Input("rows", Put(r, DataType::kInt32))
        .Input("cols", Put(c, DataType::kInt32))
        .Attr("num_rows", m)
        .Attr("num_cols", n)
        .OnDevice(GetParam())
        .Run()
        .status();
  };
  absl::Status s = run({0, 1, 5, 2}, {0, 1, 1, 2}, 5, 3);
  EXPECT_TRUE(Contains(s.ToString(), "coo_to_csr")) << s;
  EXPECT_TRUE(Contains(s.ToString(), "input 'rows' has 5 at 2")) << s;
  s = run({0, 1, 2}, {0, -1, 1}, 5, 3);
  EXPECT_TRUE(Contains(s.ToString(), "input 'cols' has -1 at 1")) << s;
  s = run({0}, {0}, -1, 3);
  EXPECT_TRUE(Contains(s.ToString(), "attribute 'num_rows' = -1")) << s;
  s = run({0}, {0}, int64_t{1} << 32, int64_t{1} << 32);
  EXPECT_TRUE(Contains(s.ToString(), "passes 2^62")) << s;
  s = Call("coo_to_csr")
          .Input("rows", Put({0, 1}, DataType::kInt32))
          .Input("cols", Put({0, 1}, DataType::kInt64))
          .Attr("num_rows", int64_t{2})
          .Attr("num_cols", int64_t{2})
          .OnDevice(GetParam())
          .Run()
          .status();
  EXPECT_TRUE(Contains(s.ToString(), "must have one dtype and one length")) << s;
}

// The undirected simple graph of an edge list, as sorted neighbour lists.
std::vector<std::set<int64_t>> SimpleGraph(const std::vector<double>& src, const std::vector<double>& dst, int64_t n) {
  std::vector<std::set<int64_t>> adj(static_cast<size_t>(n));
  for (size_t i = 0; i < src.size(); ++i) {
    const auto u = static_cast<int64_t>(src[i]), v = static_cast<int64_t>(dst[i]);
    if (u == v) continue;
    adj[u].insert(v);
    adj[v].insert(u);
  }
  return adj;
}

TEST_P(ConvertTest, GraphFromEdges) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 gen(seed);
  for (int64_t n : {1, 2, 13, 1000, 65537}) {
    for (DataType it : {DataType::kInt32, DataType::kInt64}) {
      std::uniform_int_distribution<int64_t> vert(0, n - 1);
      std::vector<double> src, dst;
      const int64_t edges = n * 3 + 1;
      for (int64_t i = 0; i < edges; ++i) {
        src.push_back(static_cast<double>(vert(gen)));
        dst.push_back(gen() % 7 == 0 ? src.back() : static_cast<double>(vert(gen)));  // some self loops
        if (i % 5 == 0) {                                                             // and duplicates both ways
          src.push_back(dst.back());
          dst.push_back(src[src.size() - 2]);
        }
      }
      const auto adj = SimpleGraph(src, dst, n);
      std::vector<double> want_ptr{0}, want_idx;
      int64_t top = -1;
      for (size_t i = 0; i < src.size(); ++i) top = std::max<int64_t>(top, std::max(src[i], dst[i]));
      for (const auto& s : adj) {
        for (int64_t v : s) want_idx.push_back(static_cast<double>(v));
        want_ptr.push_back(static_cast<double>(want_idx.size()));
      }
      for (int64_t nv : {n, int64_t{-1}}) {
        SCOPED_TRACE(std::to_string(n) + " " + std::string(DataTypeName(it)) + " num_vertices " + std::to_string(nv));
        auto out = Call("graph_from_edges")
                       .Input("src", Put(src, it))
                       .Input("dst", Put(dst, it))
                       .Attr("num_vertices", nv)
                       .OnDevice(GetParam())
                       .Run();
        ASSERT_TRUE(out.ok()) << out.status();
        std::vector<double> got_ptr = ToDoubles((*out)[0]);
        if (nv < 0) want_ptr.resize(static_cast<size_t>(top + 2));
        EXPECT_EQ(got_ptr, want_ptr);
        EXPECT_EQ(ToDoubles((*out)[1]), want_idx);
        EXPECT_EQ((*out)[1].dtype(), it);
      }
    }
  }
  // No edges: n + 1 zeros, or [0] for a vertex count from the ids.
  for (int64_t nv : {int64_t{4}, int64_t{-1}}) {
    auto out = Call("graph_from_edges")
                   .Input("src", Put({}, DataType::kInt64))
                   .Input("dst", Put({}, DataType::kInt64))
                   .Attr("num_vertices", nv)
                   .OnDevice(GetParam())
                   .Run();
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(ToDoubles((*out)[0]), std::vector<double>(nv < 0 ? 1 : 5, 0.0));
    EXPECT_EQ((*out)[1].numel(), 0);
  }
  auto bad = Call("graph_from_edges")
                 .Input("src", Put({0, 1, 2}, DataType::kInt32))
                 .Input("dst", Put({1, -3, 0}, DataType::kInt32))
                 .OnDevice(GetParam())
                 .Run();
  EXPECT_TRUE(Contains(bad.status().ToString(), "input 'dst' has -3 at 1")) << bad.status();
  bad = Call("graph_from_edges")
            .Input("src", Put({0, 1, 2}, DataType::kInt32))
            .Input("dst", Put({1, 3, 0}, DataType::kInt32))
            .Attr("num_vertices", int64_t{3})
            .OnDevice(GetParam())
            .Run();
  EXPECT_TRUE(Contains(bad.status().ToString(), "edge 1 (1, 3) has a vertex outside [0, 3)")) << bad.status();
}

Csr RandomCsr(int64_t m, int64_t n, int64_t max_len, DataType vt, uint64_t seed) {
  Csr a;
  a.m = m;
  a.n = n;
  std::mt19937_64 gen(seed);
  a.indptr.push_back(0);
  for (int64_t r = 0; r < m; ++r) {
    const int64_t len = n == 0 ? 0 : static_cast<int64_t>(gen() % static_cast<uint64_t>(max_len + 1));
    for (int64_t k = 0; k < len; ++k) a.indices.push_back(static_cast<double>(gen() % static_cast<uint64_t>(n)));
    a.indptr.push_back(static_cast<double>(a.indices.size()));
  }
  a.values = RandomValues(static_cast<int64_t>(a.indices.size()), vt, seed + 3);
  return a;
}

void CheckTranspose(DeviceType dev, const Csr& a, DataType pt, DataType it, DataType vt, bool with_values,
                    const std::function<Tensor(const std::vector<double>&, DataType)>& put) {
  SCOPED_TRACE(std::string("m ") + std::to_string(a.m) + " n " + std::to_string(a.n) + " nnz " +
               std::to_string(a.indices.size()) + " " + std::string(DataTypeName(pt)) + "/" +
               std::string(DataTypeName(it)) + " " +
               (with_values ? std::string(DataTypeName(vt)) : std::string("pattern")));
  Call call("csr_transpose");
  call.Input("indptr", put(a.indptr, pt)).Input("indices", put(a.indices, it));
  if (with_values) call.Input("values", put(a.values, vt));
  auto out = call.Attr("num_cols", a.n).OnDevice(dev).Run();
  ASSERT_TRUE(out.ok()) << out.status();
  // Reference: for each column in order, the entries of every row in order.
  std::vector<double> want_ptr{0}, want_idx, want_val;
  std::vector<std::vector<std::pair<int64_t, double>>> by_col(static_cast<size_t>(a.n));
  for (int64_t r = 0; r < a.m; ++r) {
    for (auto k = static_cast<int64_t>(a.indptr[r]); k < static_cast<int64_t>(a.indptr[r + 1]); ++k) {
      by_col[static_cast<size_t>(a.indices[k])].push_back({r, a.values[k]});
    }
  }
  for (const auto& col : by_col) {
    for (const auto& [r, v] : col) {
      want_idx.push_back(static_cast<double>(r));
      want_val.push_back(v);
    }
    want_ptr.push_back(static_cast<double>(want_idx.size()));
  }
  EXPECT_EQ(ToDoubles((*out)[0]), want_ptr);
  EXPECT_EQ(ToDoubles((*out)[1]), want_idx);
  EXPECT_EQ((*out)[1].dtype(), it);
  if (with_values) {
    EXPECT_EQ(ToDoubles((*out)[2]), want_val);  // moved, not computed: exact
  } else {
    EXPECT_EQ((*out)[2].numel(), 0);
  }
}

TEST_P(ConvertTest, CsrTransposeEveryDtype) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  auto put = [this](const std::vector<double>& v, DataType dt) { return Put(v, dt); };
  for (DataType pt : {DataType::kInt32, DataType::kInt64}) {
    for (DataType it : {DataType::kInt32, DataType::kInt64}) {
      for (DataType vt : kValueTypes) {
        CheckTranspose(GetParam(), RandomCsr(113, 71, 9, vt, seed), pt, it, vt, true, put);
      }
      CheckTranspose(GetParam(), RandomCsr(113, 71, 9, DataType::kFloat32, seed), pt, it, DataType::kFloat32, false,
                     put);
    }
  }
  // Empty, one row, one column, a long row, tall and wide, and past a million entries.
  CheckTranspose(GetParam(), RandomCsr(0, 0, 0, DataType::kFloat32, seed), DataType::kInt64, DataType::kInt32,
                 DataType::kFloat32, true, put);
  CheckTranspose(GetParam(), RandomCsr(7, 0, 3, DataType::kFloat32, seed), DataType::kInt64, DataType::kInt32,
                 DataType::kFloat32, true, put);
  CheckTranspose(GetParam(), RandomCsr(1, 100, 5000, DataType::kFloat64, seed), DataType::kInt64, DataType::kInt32,
                 DataType::kFloat64, true, put);
  CheckTranspose(GetParam(), RandomCsr(5000, 1, 3, DataType::kFloat64, seed), DataType::kInt64, DataType::kInt32,
                 DataType::kFloat64, true, put);
  CheckTranspose(GetParam(), RandomCsr(20000, 3, 4, DataType::kFloat16, seed), DataType::kInt32, DataType::kInt64,
                 DataType::kFloat16, true, put);
  if (GetParam() == DeviceType::kCuda) {
    CheckTranspose(GetParam(), RandomCsr(100003, 65537, 21, DataType::kFloat32, seed), DataType::kInt64,
                   DataType::kInt32, DataType::kFloat32, true, put);
  }
}

TEST_P(ConvertTest, CsrValidateNamesEachFault) {
  auto run = [&](const std::vector<double>& ptr, const std::vector<double>& idx, int64_t n, bool sorted,
                 bool no_loops) {
    return Call("csr_validate")
        .Input("indptr", Put(ptr, DataType::kInt64))
        .Input("indices", Put(idx, DataType::kInt32))
        .Attr("num_cols", n)
        .Attr("sorted", sorted)
        .Attr("no_self_loops", no_loops)
        .OnDevice(GetParam())
        .RunOne();
  };
  auto good = run({0, 2, 2, 5}, {1, 3, 0, 1, 3}, 4, true, true);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(ToDoubles(*good), std::vector<double>{5});
  struct Case {
    std::vector<double> ptr, idx;
    bool sorted, no_loops;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{1, 2, 2, 5}, {1, 3, 0, 1, 2}, false, false, "input 'indptr' starts at 1"},
      {{0, 3, 2, 5}, {1, 3, 0, 1, 2}, false, false, "input 'indptr' decreases at 2"},
      {{0, 2, 2, 4}, {1, 3, 0, 1, 2}, false, false, "input 'indptr' ends at 4 (indptr[3]) but input 'indices' has 5"},
      {{0, 2, 2, 5}, {1, 3, 0, 4, 2}, false, false, "input 'indices' has 4 at 3 (row 2), outside [0, 4)"},
      {{0, 2, 2, 5}, {1, 3, 0, 2, 2}, true, false, "not strictly increasing in row 2 (2 at 4"},
      {{0, 2, 2, 5}, {3, 1, 0, 1, 2}, false, false, ""},
      {{0, 2, 2, 5}, {3, 1, 0, 1, 2}, true, false, "not strictly increasing in row 0 (1 at 1"},
      {{0, 2, 2, 5}, {0, 3, 0, 1, 3}, false, true, "self loop at 0 (row 0 has column 0)"},
      {{0, 2, 2, 5}, {1, 3, 0, 1, 2}, false, true, "self loop at 4 (row 2 has column 2)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    auto got = run(c.ptr, c.idx, 4, c.sorted, c.no_loops);
    if (c.message.empty()) {
      EXPECT_TRUE(got.ok()) << got.status();
    } else {
      EXPECT_TRUE(Contains(got.status().ToString(), "csr_validate")) << got.status();
      EXPECT_TRUE(Contains(got.status().ToString(), c.message)) << got.status();
    }
  }
  // A bad matrix in csr_transpose is the same error, unless unchecked is asked for.
  auto t = Call("csr_transpose")
               .Input("indptr", Put({0, 2, 1}, DataType::kInt64))
               .Input("indices", Put({0, 1}, DataType::kInt64))
               .Attr("num_cols", int64_t{2})
               .OnDevice(GetParam())
               .Run();
  EXPECT_TRUE(Contains(t.status().ToString(), "input 'indptr' decreases at 2")) << t.status();
}

KPS_INSTANTIATE_ON_DEVICES(ConvertTest);

}  // namespace
}  // namespace kps
