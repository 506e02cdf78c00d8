// The sweep of `kps bench --sweep`: several hundred cases, each a valid call of a
// registered op with a CUDA kernel for its dtype, names unique and family-prefixed, and
// a positive byte count; its JSON case list (for the PyTorch twin) lists them all.
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"
#include "tools/kps/bench.h"

namespace kps {
namespace cli {
namespace {

TEST(SweepTest, EveryCaseIsAValidCudaCall) {
  const std::vector<BenchWorkload>& cases = SweepWorkloads();
  EXPECT_GE(cases.size(), 300u);
  std::set<std::string> names, families;
  for (const BenchWorkload& w : cases) {
    SCOPED_TRACE(w.name);
    EXPECT_TRUE(names.insert(w.name).second) << "duplicate name";
    const size_t slash = w.name.find('/');
    ASSERT_NE(slash, std::string::npos);
    families.insert(w.name.substr(0, slash));
    const OpSchema* schema = OpRegistry::Global().Find(w.op);
    ASSERT_NE(schema, nullptr) << w.op;
    // Cases that make their own inputs (index_add's index) give the shapes of the others.
    if (!w.make_inputs) EXPECT_EQ(schema->inputs().size(), w.shapes.size());
    bool has = false;
    for (const auto& [dev, dt] : KernelRegistry::Global().RegisteredKeys(w.op)) {
      has = has || (dev == DeviceType::kCuda && dt == w.dtype);
    }
    EXPECT_TRUE(has) << "no CUDA kernel for " << DataTypeName(w.dtype);
    const int rank = static_cast<int>(w.shapes[0].size());
    if (w.dims) {
      for (int64_t d : *w.dims) EXPECT_TRUE(d >= 0 && d < rank) << d;
    }
    if (w.dim) EXPECT_TRUE(*w.dim >= 0 && *w.dim < rank) << *w.dim;
    for (const auto& [name, value] : w.attrs) EXPECT_GE(schema->AttrIndex(name), 0) << name;
    EXPECT_GT(MinBytesMoved(w), 0);
  }
  for (const char* f : {"elementwise", "reduce", "scan", "sort", "topk", "index"}) {
    EXPECT_EQ(families.count(f), 1u) << f;
  }
}

TEST(SweepTest, CaseListNamesEveryCase) {
  const std::string json = WorkloadsJson(SweepWorkloads());
  for (const BenchWorkload& w : SweepWorkloads()) {
    EXPECT_NE(json.find("\"name\": \"" + w.name + "\""), std::string::npos) << w.name;
  }
  EXPECT_NE(json.find("\"transposed\": true"), std::string::npos);
}

}  // namespace
}  // namespace cli
}  // namespace kps
