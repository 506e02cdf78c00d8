// The op test kit finds bugs: deliberately broken CPU kernels (an off-by-one read, an
// output of the wrong dtype, a fold whose order changes between runs, an unwritten last
// element, a kernel that ignores strides) must each fail its declaration, and a correct
// kernel must pass it.
#include <algorithm>
#include <atomic>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"
#include "testing/op_test.h"

namespace kps {
namespace {

// out = 2 * x, with the flaw kFlaw names.
enum class Flaw { kNone, kOffByOne, kUnwrittenLast };

template <Flaw kFlaw>
absl::Status Scale(KernelContext* ctx) {
  return VisitDataType(ctx->input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = ctx->input(0).data<T>();
      T* out = ctx->output(0).data<T>();
      const int64_t n = ctx->output(0).numel();
      for (int64_t i = 0; i < n; ++i) {
        if (kFlaw == Flaw::kUnwrittenLast && i == n - 1) break;
        const int64_t src = kFlaw == Flaw::kOffByOne && i > 0 ? i - 1 : i;
        out[i] = 2 * x[src];
      }
    }
    return absl::OkStatus();
  });
}

absl::Status SameShape(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input(0).shape(), ctx.input(0).dtype());
  return absl::OkStatus();
}

template <typename T>
class GoodScale final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override { return Scale<Flaw::kNone>(ctx); }
};
template <typename T>
class OffByOneScale final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override { return Scale<Flaw::kOffByOne>(ctx); }
};
template <typename T>
class UnwrittenLastScale final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override { return Scale<Flaw::kUnwrittenLast>(ctx); }
};

KPS_REGISTER_OP("kit_good_scale")
    .Input("x")
    .Output("out")
    .SetInferFn(SameShape)
    .RequireContiguousInputs()
    .Doc("out = 2 * x");
KPS_REGISTER_KERNEL_FOR_TYPES("kit_good_scale", DeviceType::kCpu, GoodScale, float, double);
KPS_REGISTER_OP("kit_off_by_one")
    .Input("x")
    .Output("out")
    .SetInferFn(SameShape)
    .RequireContiguousInputs()
    .Doc("out[i] = 2 * x[i - 1]");
KPS_REGISTER_KERNEL_FOR_TYPES("kit_off_by_one", DeviceType::kCpu, OffByOneScale, float, double);
KPS_REGISTER_OP("kit_unwritten_last")
    .Input("x")
    .Output("out")
    .SetInferFn(SameShape)
    .RequireContiguousInputs()
    .Doc("out = 2 * x but the last");
KPS_REGISTER_KERNEL_FOR_TYPES("kit_unwritten_last", DeviceType::kCpu, UnwrittenLastScale, float, double);

// A correct kernel that reads its input as contiguous, under a schema that does not ask
// for contiguous inputs: strided views break it.
KPS_REGISTER_OP("kit_ignores_strides").Input("x").Output("out").SetInferFn(SameShape).Doc("out = 2 * x");
KPS_REGISTER_KERNEL_FOR_TYPES("kit_ignores_strides", DeviceType::kCpu, GoodScale, float, double);

// out = 2 * x, but a float64 input gets a float32 output.
absl::Status NarrowShape(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input(0).shape(), DataType::kFloat32);
  return absl::OkStatus();
}
template <typename T>
class NarrowingScale final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    const T* x = ctx->input(0).data<T>();
    float* out = ctx->output(0).data<float>();
    for (int64_t i = 0; i < ctx->output(0).numel(); ++i) out[i] = static_cast<float>(2 * x[i]);
    return absl::OkStatus();
  }
};
KPS_REGISTER_OP("kit_wrong_dtype")
    .Input("x")
    .Output("out")
    .SetInferFn(NarrowShape)
    .RequireContiguousInputs()
    .Doc("out = 2 * x in float32");
KPS_REGISTER_KERNEL_FOR_TYPES("kit_wrong_dtype", DeviceType::kCpu, NarrowingScale, double);

// The sum of x in float, in an order that changes from call to call.
absl::Status ScalarOut(InferContext& ctx) {
  ctx.SetOutput(0, Shape{}, ctx.input(0).dtype());
  return absl::OkStatus();
}
template <typename T>
class ShuffledSum final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    static std::atomic<uint64_t> calls{0};
    const T* x = ctx->input(0).data<T>();
    const int64_t n = ctx->input(0).numel();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(++calls));
    T s = 0;
    for (int64_t i : order) s += x[i];
    *ctx->output(0).data<T>() = s;
    return absl::OkStatus();
  }
};
KPS_REGISTER_OP("kit_shuffled_sum")
    .Input("x")
    .Output("out")
    .SetInferFn(ScalarOut)
    .RequireContiguousInputs()
    .Doc("sum, in a random order");
KPS_REGISTER_KERNEL_FOR_TYPES("kit_shuffled_sum", DeviceType::kCpu, ShuffledSum, float);

testing::OpTest Scale2(const std::string& op) {
  return testing::OpTest(op).Input("x").NoErrorCases().Reference(
      [](const testing::RefCall& c) { return c.Map([](double x) { return 2 * x; }); });
}

// The failures `test` reports on the CPU, intercepted.
std::vector<std::string> Failures(const testing::OpTest& test) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    test.Run(DeviceType::kCpu);
  }
  std::vector<std::string> out;
  for (int i = 0; i < results.size(); ++i) out.push_back(results.GetTestPartResult(i).message());
  return out;
}

::testing::AssertionResult AnyContains(const std::vector<std::string>& failures, const std::string& part) {
  for (const std::string& f : failures)
    if (f.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  std::string all;
  for (const std::string& f : failures) all += f + "\n---\n";
  return ::testing::AssertionFailure() << failures.size() << " failures, none containing '" << part << "':\n" << all;
}

TEST(OpTestKit, PassesACorrectKernel) {
  const std::vector<std::string> f = Failures(Scale2("kit_good_scale"));
  EXPECT_TRUE(f.empty()) << f.front();
}

TEST(OpTestKit, FindsAnOffByOneRead) {
  const std::vector<std::string> f = Failures(Scale2("kit_off_by_one"));
  EXPECT_TRUE(AnyContains(f, "output 'out'[1] = "));
  EXPECT_TRUE(AnyContains(f, "reproduce: KPS_TEST_SEED="));
}

TEST(OpTestKit, FindsAnUnwrittenLastElement) {
  EXPECT_TRUE(AnyContains(Failures(Scale2("kit_unwritten_last")), "want"));
}

TEST(OpTestKit, FindsAKernelThatIgnoresStrides) {
  EXPECT_TRUE(AnyContains(Failures(Scale2("kit_ignores_strides")), ", strided, attrs"));
}

TEST(OpTestKit, FindsAWrongOutputDtype) {
  EXPECT_TRUE(AnyContains(Failures(Scale2("kit_wrong_dtype")), "has dtype float32, the reference says float64"));
}

TEST(OpTestKit, FindsANonDeterministicFold) {
  const auto sum = [](const testing::RefCall& c) {
    double s = 0;
    for (double v : c.input(0).values) s += v;
    return std::vector<testing::HostTensor>{{c.dtype(), Shape{}, {s}}};
  };
  // Loose enough for any order of a float sum of up to 65537 values in [-4, 4).
  const auto loose = [](DataType, double, const testing::RefCall& c) {
    return 1e-4 * 4.0 * static_cast<double>(c.input(0).numel()) + 1e-6;
  };
  const testing::OpTest test =
      testing::OpTest("kit_shuffled_sum").Input("x").NoErrorCases().Reference(sum).Tolerance(loose);
  EXPECT_TRUE(Failures(test).empty());
  EXPECT_TRUE(AnyContains(Failures(testing::OpTest(test).Deterministic()),
                          "differs bitwise between two runs of an op declared deterministic"));
}

TEST(OpTestKit, ChecksTheErrorsTheSchemaImplies) {
  // kit_good_scale's infer function accepts anything, but Call itself rejects a missing
  // input and unknown attributes: those pass; a dtype without a kernel is rejected too.
  const std::vector<std::string> f = Failures(testing::OpTest("kit_good_scale").Input("x").Reference(
      [](const testing::RefCall& c) { return c.Map([](double x) { return 2 * x; }); }));
  EXPECT_TRUE(f.empty()) << f.front();
}

TEST(OpTestKit, ReportsADeclarationThatDisagreesWithTheSchema) {
  EXPECT_TRUE(AnyContains(Failures(testing::OpTest("kit_good_scale").Input("y").Reference(nullptr)),
                          "declares no Reference"));
  EXPECT_TRUE(AnyContains(
      Failures(testing::OpTest("kit_good_scale").Input("y").Reference([](const testing::RefCall&) {
        return std::vector<testing::HostTensor>{};
      })),
      "input 0 is 'x' in the schema, 'y' in the OpTest"));
  EXPECT_TRUE(AnyContains(Failures(testing::OpTest("kit_no_such_op")), "is not registered"));
}

// An integer value wrapped to dtype's width (two's complement), as integer add wraps.
double Wrap(DataType dt, double v) {
  const int bits = 8 * static_cast<int>(DataTypeSize(dt));
  if (bits == 64) return v;  // the int64 cases stay far from the wrap
  const int64_t m = int64_t{1} << bits;
  int64_t r = static_cast<int64_t>(v) % m;
  if (r < 0) r += m;
  if (dt != DataType::kUInt8 && r >= m / 2) r -= m;
  return static_cast<double>(r);
}

// KPS's own add through the macro: the cases it declares run on every dtype add has.
KPS_OP_TEST(OpTestKit, AddThroughTheMacro) {
  return testing::OpTest("add")
      .Input("x", testing::Values::WithSpecials())
      .Input("y", testing::Values::WithSpecials())
      .Broadcasts()
      .Deterministic()
      .AttrSet({})
      .AttrSet({{"alpha", 2}})
      .Reference([](const testing::RefCall& c) {
        const double alpha = c.Attr<double>("alpha");
        const DataType dt = c.dtype();
        return c.Map([&](double x, double y) {
          if (!IsFloatingPoint(dt)) return Wrap(dt, x + alpha * y);
          // alpha * y is rounded (and may overflow) in the compute type: float below float64.
          return x + (dt == DataType::kFloat64 ? alpha * y : testing::RoundTo(DataType::kFloat32, alpha * y));
        });
      });
}

}  // namespace
}  // namespace kps
