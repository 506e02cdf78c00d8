// The op registered in this project is found by name and runs on every device.

#include "gtest/gtest.h"
#include "registry/call.h"
#include "registry/kernel.h"
#include "testing/op_test.h"

namespace {

// Every dtype axpby has on each device, at edge sizes, misaligned, with fresh inputs,
// against a reference in double; outputs poisoned twice, CUDA against the CPU, and the
// errors the schema implies (the kit: testing/op_test.h).
KPS_OP_TEST(CustomOpTest, MatchesTheReference) {
  return kps::testing::OpTest("axpby")
      .Input("x")
      .Input("y")
      .AttrSet({{"a", 2.5}, {"b", -0.5}})
      .AttrSet({})  // a = b = 1
      .Deterministic()
      // In float: a * x and b * y each rounded before their sum, terms up to 4 |a|.
      .Ulps(16)
      .Reference([](const kps::testing::RefCall& c) {
        const double a = c.Attr<double>("a"), b = c.Attr<double>("b");
        return c.Map([&](double x, double y) { return a * x + b * y; });
      });
}

TEST(CustomOpTest, RegisteredWithTheKpsMacros) {
  const kps::OpSchema* s = kps::OpRegistry::Global().Find("axpby");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->Describe().find("a (float, default 1)"), std::string::npos);
  EXPECT_NE(kps::OpRegistry::Global().Find("add"), nullptr);  // KPS's own ops are there too
  const auto keys = kps::KernelRegistry::Global().RegisteredKeys("axpby");
  EXPECT_EQ(keys.size(), 4u) << kps::KeysToString(keys);
}

TEST(CustomOpTest, BadCallsGetClearErrors) {
  kps::Tensor x = *kps::Tensor::FromVector<float>({1, 2}, kps::Shape{2});
  kps::Tensor y = *kps::Tensor::FromVector<float>({1, 2, 3}, kps::Shape{3});
  auto r = kps::Call("axpby").Input("x", x).Input("y", y).Run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("op 'axpby': 'x' and 'y' must have one shape"), std::string::npos) << r.status();
}

}  // namespace
