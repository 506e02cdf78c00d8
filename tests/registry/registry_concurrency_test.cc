// Registration at any time: ops and kernels registered while other threads call ops
// (as a plugin opened with dlopen does). Built from the registry sources alone, with
// ThreadSanitizer where the compiler has it (tests/CMakeLists.txt), so a race between a
// lookup and a registration is a report, not a rare crash.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "registry/call.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"

namespace kps {
namespace {

absl::Status InferLikeX(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input(0).shape(), ctx.input(0).dtype());
  return absl::OkStatus();
}

// out = x + kAdd, so a caller can tell which kernel ran.
template <int kAdd>
class AddConstKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    const float* x = ctx->input(0).data<float>();
    float* out = ctx->output(0).data<float>();
    for (int64_t i = 0; i < ctx->output(0).numel(); ++i) out[i] = x[i] + kAdd;
    return absl::OkStatus();
  }
};

absl::Status RegisterOp(const std::string& name) {
  return OpRegistry::Global().Register(
      OpSchemaBuilder(name, __FILE__, __LINE__).Input("x").Output("out").SetInferFn(InferLikeX).Build());
}

template <int kAdd>
absl::Status RegisterKernel(const std::string& name, int priority, const char* file = __FILE__,
                            int line = __LINE__) {
  return KernelRegistry::Global().Register(KernelBuilder(name, DeviceType::kCpu, DataType::kFloat32, file, line)
                                               .SetCreateFn<AddConstKernel<kAdd>>()
                                               .SetPriority(priority)
                                               .Build());
}

// out[0] of `op` on x = [1, 2, 3], or the error.
absl::StatusOr<float> RunFirst(const std::string& op) {
  static const Tensor x = *Tensor::FromVector<float>({1, 2, 3}, Shape{3});
  auto out = Call(op).Input("x", x).RunOne();
  if (!out.ok()) return out.status();
  return out->data<float>()[0];
}

// Each TEST runs in a process of its own (gtest_discover_tests), so this one sees the
// registry before any kernel was selected: a tie refuses both, whatever the link order.
TEST(RegistryConcurrencyTest, TieBeforeAnyCallDisablesTheKey) {
  ASSERT_TRUE(RegisterOp("kps_cc_early").ok());
  ASSERT_TRUE(RegisterKernel<1>("kps_cc_early", 0, "lib_a.cc", 1).ok());
  absl::Status tie = RegisterKernel<2>("kps_cc_early", 0, "lib_b.cc", 2);
  EXPECT_EQ(tie.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(tie.message().find("both are refused"), std::string::npos) << tie;
  auto r = RunFirst("kps_cc_early");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(r.status().message().find("lib_a.cc:1 and lib_b.cc:2"), std::string::npos) << r.status();
  EXPECT_EQ(KernelRegistry::Global().registration_errors().size(), 1u);
}

TEST(RegistryConcurrencyTest, TieAfterACallIsRefusedAlone) {
  ASSERT_TRUE(RegisterOp("kps_cc_late").ok());
  ASSERT_TRUE(RegisterKernel<1>("kps_cc_late", 0, "app.cc", 1).ok());
  ASSERT_EQ(*RunFirst("kps_cc_late"), 2.0f);
  absl::Status tie = RegisterKernel<2>("kps_cc_late", 0, "plugin.cc", 2);
  EXPECT_EQ(tie.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(tie.message().find("the later one is refused"), std::string::npos) << tie;
  EXPECT_EQ(*RunFirst("kps_cc_late"), 2.0f);
  // A second schema of the same name is refused too, and the first stays.
  EXPECT_EQ(RegisterOp("kps_cc_late").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(*RunFirst("kps_cc_late"), 2.0f);
}

// Callers run ops and look names up (Find, Lookup with its suggestions, All) while one
// thread registers new ops, new kernels of the op in use (higher priorities) and ties.
TEST(RegistryConcurrencyTest, RegistrationWhileOtherThreadsCall) {
  ASSERT_TRUE(RegisterOp("kps_cc_base").ok());
  ASSERT_TRUE(RegisterKernel<1>("kps_cc_base", 0).ok());
  ASSERT_EQ(*RunFirst("kps_cc_base"), 2.0f);

  constexpr int kNewOps = 200;
  std::atomic<bool> done{false};
  std::atomic<int> registered{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      int calls = 0;
      while (!done.load(std::memory_order_acquire) || calls < 50) {
        auto base = RunFirst("kps_cc_base");
        // The base op gains a priority-1 kernel (x + 3) part way: either answer is right.
        if (!base.ok() || (*base != 2.0f && *base != 4.0f)) failures.fetch_add(1);
        const int n = registered.load(std::memory_order_acquire);
        if (n > 0) {
          const std::string name = "kps_cc_op_" + std::to_string((calls * 7 + t) % n);
          auto r = RunFirst(name);
          if (!r.ok() || *r != 6.0f) failures.fetch_add(1);
        }
        if (calls % 8 == 0) {
          auto miss = OpRegistry::Global().Lookup("kps_cc_op_x");  // walks every name
          if (miss.ok()) failures.fetch_add(1);
          if (OpRegistry::Global().All().empty()) failures.fetch_add(1);
          (void)KernelRegistry::Global().RegisteredKeys("kps_cc_base");
        }
        ++calls;
      }
    });
  }
  for (int i = 0; i < kNewOps; ++i) {
    const std::string name = "kps_cc_op_" + std::to_string(i);
    ASSERT_TRUE(RegisterOp(name).ok());
    ASSERT_TRUE(RegisterKernel<5>(name, 0).ok());
    registered.store(i + 1, std::memory_order_release);
    if (i == kNewOps / 2) ASSERT_TRUE(RegisterKernel<3>("kps_cc_base", 1).ok());
    if (i % 20 == 0) EXPECT_FALSE(RegisterKernel<9>("kps_cc_base", 0).ok());  // a late tie
  }
  done.store(true, std::memory_order_release);
  for (auto& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(*RunFirst("kps_cc_base"), 4.0f);
}

}  // namespace
}  // namespace kps
