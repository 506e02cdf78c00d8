// The kernel registry: keys, priorities, hob predicates, ties, and that every op has
// the kernels its schema declares (no registration lost to the linker).
#include "registry/kernel.h"

#include "gtest/gtest.h"
#include "registry/call.h"
#include "testing/support.h"

namespace kps {
namespace {

absl::Status InferLikeX(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input(0).shape(), ctx.input(0).dtype());
  return absl::OkStatus();
}

// Fills its output with kMarker, so a test can tell which kernel ran.
template <int kMarker>
class MarkerKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    float* out = ctx->output(0).data<float>();
    for (int64_t i = 0; i < ctx->output(0).numel(); ++i) out[i] = kMarker;
    return absl::OkStatus();
  }
};

KPS_REGISTER_OP("kps_test_hob").Input("x").Output("out").SetInferFn(InferLikeX);
KPS_REGISTER_KERNEL("kps_test_hob", DeviceType::kCpu, DataType::kFloat32).SetCreateFn<MarkerKernel<1>>();
KPS_REGISTER_KERNEL("kps_test_hob", DeviceType::kCpu, DataType::kFloat32)
    .SetCreateFn<MarkerKernel<2>>()
    .SetIsMatchedHob(hob::NumelAtLeast("x", 100) && hob::AllInputsContiguous())
    .SetPriority(1);

KPS_REGISTER_OP("kps_test_only_hob").Input("x").Output("out").SetInferFn(InferLikeX);
KPS_REGISTER_KERNEL("kps_test_only_hob", DeviceType::kCpu, DataType::kFloat32)
    .SetCreateFn<MarkerKernel<3>>()
    .SetIsMatchedHob(hob::AttrEquals("missing", AttrValue(true)) || !hob::AllInputsContiguous());

float RunMarker(const char* op, int64_t n) {
  Tensor x = *Tensor::Empty(Shape{n}, DataType::kFloat32, DeviceType::kCpu);
  auto out = Call(op).Input("x", x).RunOne();
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out->ToVector<float>())[0] : -1.0f;
}

TEST(KernelRegistryTest, HigherPriorityWinsWhenItsHobMatches) {
  EXPECT_EQ(RunMarker("kps_test_hob", 10), 1.0f);   // hob false: the default kernel
  EXPECT_EQ(RunMarker("kps_test_hob", 100), 2.0f);  // hob true: the priority-1 kernel
}

TEST(KernelRegistryTest, HobDebugStringsAreReadable) {
  Hob h = hob::NumelAtLeast("x", 100) && !hob::InputDataTypeIs("x", DataType::kFloat16);
  EXPECT_EQ(h.DebugString(), "(NumelAtLeast(x, 100) && !InputDataTypeIs(x, float16))");
}

TEST(KernelRegistryTest, NoMatchingHobNamesThePredicates) {
  Tensor x = *Tensor::Empty(Shape{4}, DataType::kFloat32, DeviceType::kCpu);
  auto out = Call("kps_test_only_hob").Input("x", x).Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find(
                "(AttrEquals(missing, true) || !AllInputsContiguous) is false"),
            std::string::npos)
      << out.status();
}

TEST(KernelRegistryTest, TiedKernelsAreARegistrationError) {
  auto& reg = KernelRegistry::Global();
  ASSERT_TRUE(reg.Register(KernelBuilder("kps_test_tie", DeviceType::kCpu, DataType::kInt8, "a.cc", 1)
                               .SetCreateFn<MarkerKernel<1>>()
                               .Build())
                  .ok());
  absl::Status s = reg.Register(KernelBuilder("kps_test_tie", DeviceType::kCpu, DataType::kInt8, "b.cc", 2)
                                    .SetCreateFn<MarkerKernel<2>>()
                                    .Build());
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("two cpu:int8 kernels at priority 0 (a.cc:1 and b.cc:2)"), std::string::npos) << s;
  // A different priority is fine.
  EXPECT_TRUE(reg.Register(KernelBuilder("kps_test_tie", DeviceType::kCpu, DataType::kInt8, "c.cc", 3)
                               .SetCreateFn<MarkerKernel<3>>()
                               .SetPriority(5)
                               .Build())
                  .ok());
}

// A plugin loaded after ops have run (dlopen) must not disable a kernel in use: its
// tying registration is refused alone and the running kernel keeps answering.
TEST(KernelRegistryTest, LateTieIsRefusedAloneAndTheKernelInUseKeepsWorking) {
  auto& reg = KernelRegistry::Global();
  EXPECT_EQ(RunMarker("kps_test_hob", 10), 1.0f);  // the registry is in use from here on
  absl::Status s = reg.Register(KernelBuilder("kps_test_hob", DeviceType::kCpu, DataType::kFloat32, "plugin.cc", 9)
                                    .SetCreateFn<MarkerKernel<7>>()
                                    .Build());
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(s.message().find("plugin.cc:9); the later one is refused"), std::string::npos) << s;
  EXPECT_EQ(RunMarker("kps_test_hob", 10), 1.0f);
  EXPECT_EQ(RunMarker("kps_test_hob", 100), 2.0f);
  // A late kernel that does not tie takes part in the next selection.
  ASSERT_TRUE(reg.Register(KernelBuilder("kps_test_hob", DeviceType::kCpu, DataType::kFloat32, "plugin.cc", 10)
                               .SetCreateFn<MarkerKernel<8>>()
                               .SetPriority(2)
                               .SetIsMatchedHob(hob::NumelAtLeast("x", 1000))
                               .Build())
                  .ok());
  EXPECT_EQ(RunMarker("kps_test_hob", 1000), 8.0f);
  EXPECT_EQ(RunMarker("kps_test_hob", 100), 2.0f);
}

TEST(KernelRegistryTest, KernelWithoutCreateFnIsRejected) {
  absl::Status s = KernelRegistry::Global().Register(
      KernelBuilder("kps_test_nofn", DeviceType::kCpu, DataType::kInt8, "d.cc", 4).Build());
  EXPECT_NE(s.message().find("has no SetCreateFn"), std::string::npos) << s;
}

TEST(KernelRegistryTest, MissingDtypeListsRegisteredPairs) {
  Tensor b = *Tensor::Empty(Shape{3}, DataType::kBool, DeviceType::kCpu);
  auto out = Call("add").Input("x", b).Input("y", b).Run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound);
  const std::string m(out.status().message());
  EXPECT_NE(m.find("op 'add' has no cpu kernel for dtype bool"), std::string::npos) << m;
  EXPECT_NE(m.find("cpu:float16"), std::string::npos) << m;
  EXPECT_NE(m.find("cuda:int64"), std::string::npos) << m;
}

// The guard against static registrations dropped at link time: every (device, dtype)
// an op's schema promises has a kernel, and the built-in ops are all present.
TEST(KernelRegistryTest, EverySchemaHasTheKernelsItDeclares) {
  for (const char* op : {"add", "mul", "copy"}) {
    EXPECT_NE(OpRegistry::Global().Find(op), nullptr) << op;
  }
  int checked = 0;
  for (const OpSchema* s : OpRegistry::Global().All()) {
    const auto* table = KernelRegistry::Global().Find(s->name());
    for (DeviceType d : s->declared_devices()) {
      for (DataType t : s->declared_dtypes()) {
        ++checked;
        EXPECT_TRUE(table != nullptr &&
                    !table->Get(d, t).defs.empty())
            << "op '" << s->name() << "' declares a " << DeviceTypeName(d) << ":"
            << DataTypeName(t) << " kernel that is not registered";
      }
    }
  }
  EXPECT_GE(checked, 2 * (6 + 6 + 10));  // add, mul, copy at least
}

TEST(KernelRegistryTest, StaticRegistrationsSucceeded) {
  for (const absl::Status& s : KernelRegistry::Global().registration_errors()) {
    // Made on purpose above.
    if (s.message().find("kps_test_tie") != std::string::npos || s.message().find("plugin.cc") != std::string::npos) {
      continue;
    }
    ADD_FAILURE() << s;
  }
}

}  // namespace
}  // namespace kps
