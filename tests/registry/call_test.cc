// The eager call API: validation errors (each message checked), attributes, optional
// inputs, temporary buffers, streams, and the typed wrappers.
#include "registry/call.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "registry/kernel.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::RandomTensor;
using ::kps::testing::ToDoubles;

absl::Status InferAffine(InferContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& bias = ctx.Input("bias");
  if (bias.defined() && bias.shape() != x.shape()) {
    return ctx.Error("input 'bias' ", bias.shape().ToString(), " must match 'x' ", x.shape().ToString());
  }
  if (ctx.Attr<std::string>("mode") != "plain" && ctx.Attr<std::string>("mode") != "staged") {
    return ctx.Error("attribute 'mode' must be \"plain\" or \"staged\", got \"", ctx.Attr<std::string>("mode"), "\"");
  }
  ctx.SetOutput(0, x.shape(), x.dtype());
  return absl::OkStatus();
}

// out = factor * x (+ bias); "staged" routes the product through the temporary buffer.
class AffineCpuKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    const float* x = ctx->input(0).data<float>();
    const Tensor& bias = ctx->Input("bias");
    float* out = ctx->output(0).data<float>();
    const float factor = static_cast<float>(ctx->Attr<double>("factor"));
    const bool staged = ctx->Attr<std::string>("mode") == "staged";
    const int64_t n = ctx->output(0).numel();
    if (staged && ctx->tmp_size() < n * sizeof(float)) return absl::InternalError("tmp buffer too small");
    float* dst = staged ? static_cast<float*>(ctx->tmp_buffer()) : out;
    for (int64_t i = 0; i < n; ++i) dst[i] = factor * x[i] + (bias.defined() ? bias.data<float>()[i] : 0.0f);
    if (staged) std::copy(dst, dst + n, out);
    return absl::OkStatus();
  }
};

KPS_REGISTER_OP("kps_test_affine")
    .Input("x")
    .OptionalInput("bias")
    .Output("out")
    .RequiredAttr<double>("factor", "multiplier of x")
    .Attr<std::string>("mode", "plain")
    .SetInferFn(InferAffine)
    .RequireContiguousInputs()
    .Kernels({DeviceType::kCpu}, {DataType::kFloat32});
KPS_REGISTER_KERNEL("kps_test_affine", DeviceType::kCpu, DataType::kFloat32)
    .SetCreateFn<AffineCpuKernel>()
    .SetInferTmpSizeFn([](const CallView& c) { return c.input(0).nbytes(); });

std::string Message(const absl::StatusOr<std::vector<Tensor>>& r) {
  return r.ok() ? "OK" : std::string(r.status().message());
}

class CallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = FreshSeed();
    x_ = RandomTensor(Shape{3, 4}, DataType::kFloat32, seed_);
    b_ = RandomTensor(Shape{3, 4}, DataType::kFloat32, seed_ + 1);
  }
  uint64_t seed_;
  Tensor x_, b_;
};

TEST_F(CallTest, RunsWithRequiredAttrOptionalInputAndTmpBuffer) {
  SCOPED_TRACE(seed_);
  const std::vector<double> x = ToDoubles(x_), b = ToDoubles(b_);
  for (const char* mode : {"plain", "staged"}) {
    auto out = Call("kps_test_affine").Input("x", x_).Input("bias", b_).Attr("factor", 3).Attr("mode", mode).RunOne();
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<double> got = ToDoubles(*out);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], 3.0f * static_cast<float>(x[i]) + static_cast<float>(b[i]));
  }
  auto no_bias = Call("kps_test_affine").Input("x", x_).Attr("factor", -0.5).RunOne();
  ASSERT_TRUE(no_bias.ok()) << no_bias.status();
  EXPECT_FLOAT_EQ(ToDoubles(*no_bias)[5], -0.5f * static_cast<float>(x[5]));
}

// Infer() gives Run()'s output shapes and dtypes, checks the call the same way, and reads
// no data: inputs over storage that holds none are fine. Dynamic outputs say so.
TEST_F(CallTest, InferGivesOutputSpecsWithoutRunning) {
  auto specs = Call("kps_test_affine").Input("x", x_).Attr("factor", 2.0).Infer();
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_EQ((*specs)[0].shape, (Shape{3, 4}));
  EXPECT_EQ((*specs)[0].dtype, DataType::kFloat32);
  EXPECT_FALSE((*specs)[0].dynamic);
  auto missing = Call("kps_test_affine").Input("x", x_).Infer();
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing required attribute 'factor'"), std::string::npos);
  // No data behind the inputs: a storage of the right size at a null address.
  auto hollow = [](const Shape& shape, DataType dt) {
    return *Tensor::FromStorage(Storage::Wrap(nullptr, shape.numel() * DataTypeSize(dt), DeviceType::kCpu, nullptr),
                                dt, shape, ContiguousStrides(shape), 0);
  };
  auto sum = Call("sum").Input("x", hollow(Shape{5, 6, 7}, DataType::kBFloat16)).Attr("dims", std::vector<int64_t>{1})
                 .Infer();
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)[0].shape, (Shape{5, 7}));
  EXPECT_EQ((*sum)[0].dtype, DataType::kBFloat16);
  auto nz = Call("nonzero").Input("x", hollow(Shape{4, 4}, DataType::kInt32)).Infer();
  ASSERT_TRUE(nz.ok()) << nz.status();
  EXPECT_TRUE((*nz)[0].dynamic);
  EXPECT_EQ((*nz)[0].dtype, DataType::kInt64);
  auto bad = Call("add").Input("x", hollow(Shape{2, 3}, DataType::kFloat32))
                 .Input("y", hollow(Shape{4}, DataType::kFloat32)).Infer();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("do not broadcast"), std::string::npos);
}

TEST_F(CallTest, MissingInputIsNamed) {
  auto r = Call("add").Input("x", x_).Run();
  EXPECT_NE(Message(r).find("op 'add': missing input 'y' (takes 2 inputs: x, y)"), std::string::npos) << Message(r);
}

TEST_F(CallTest, UnknownInputNameSuggests) {
  auto r = Call("add").Input("x", x_).Input("z", b_).Run();
  EXPECT_NE(Message(r).find("op 'add' has no input 'z'"), std::string::npos) << Message(r);
  EXPECT_NE(Message(r).find("Its inputs: x, y"), std::string::npos) << Message(r);
}

TEST_F(CallTest, InputGivenTwiceIsAnError) {
  auto r = Call("add").Input("x", x_).Input("x", b_).Run();
  EXPECT_NE(Message(r).find("input 'x' is given twice"), std::string::npos) << Message(r);
}

TEST_F(CallTest, WrongShapeIsNamed) {
  Tensor other = RandomTensor(Shape{4, 3}, DataType::kFloat32, seed_);
  auto r = Call("add").Input("x", x_).Input("y", other).Run();
  EXPECT_NE(Message(r).find("op 'add': inputs 'x' [3, 4] and 'y' [4, 3] do not broadcast: dim -1 is 4 vs 3"),
            std::string::npos) << Message(r);
}

TEST_F(CallTest, MixedDtypesSuggestCast) {
  Tensor other = RandomTensor(Shape{3, 4}, DataType::kFloat64, seed_);
  auto r = Call("mul").Input("x", x_).Input("y", other).Run();
  EXPECT_NE(Message(r).find("have different dtypes; cast one first"), std::string::npos) << Message(r);
}

TEST_F(CallTest, UnknownAttributeSuggests) {
  auto r = Call("add").Input("x", x_).Input("y", b_).Attr("alpah", 2.0).Run();
  EXPECT_NE(Message(r).find("op 'add' has no attribute 'alpah'; did you mean 'alpha'?"), std::string::npos)
      << Message(r);
}

TEST_F(CallTest, WrongAttributeTypeIsNamed) {
  auto r = Call("add").Input("x", x_).Input("y", b_).Attr("alpha", "two").Run();
  EXPECT_NE(Message(r).find("op 'add': attribute 'alpha' must be float, got string \"two\""), std::string::npos)
      << Message(r);
  auto r2 = Call("kps_test_affine").Input("x", x_).Attr("factor", 1.0).Attr("mode", true).Run();
  EXPECT_NE(Message(r2).find("attribute 'mode' must be string, got bool true"), std::string::npos) << Message(r2);
}

TEST_F(CallTest, IntegerConvertsToFloatAttribute) {
  auto r = Call("add").Input("x", x_).Input("y", b_).Attr("alpha", 2).Run();
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST_F(CallTest, MissingRequiredAttributeIsNamed) {
  auto r = Call("kps_test_affine").Input("x", x_).Run();
  EXPECT_NE(Message(r).find("op 'kps_test_affine': missing required attribute 'factor' (float)"),
            std::string::npos) << Message(r);
}

TEST_F(CallTest, AttributeSetTwiceIsAnError) {
  auto r = Call("add").Input("x", x_).Input("y", b_).Attr("alpha", 1.0).Attr("alpha", 2.0).Run();
  EXPECT_NE(Message(r).find("attribute 'alpha' is set twice"), std::string::npos) << Message(r);
}

TEST_F(CallTest, InferErrorsReachTheCaller) {
  auto r = Call("kps_test_affine").Input("x", x_).Attr("factor", 1.0).Attr("mode", "fancy").Run();
  EXPECT_NE(Message(r).find("attribute 'mode' must be \"plain\" or \"staged\", got \"fancy\""), std::string::npos)
      << Message(r);
}

TEST_F(CallTest, NonContiguousInputIsRejectedByContiguousOps) {
  Tensor sq = RandomTensor(Shape{4, 4}, DataType::kFloat32, seed_);
  Tensor t = *sq.Transpose(0, 1);
  auto r = Call("kps_test_affine").Input("x", t).Attr("factor", 2.0).Run();
  EXPECT_NE(Message(r).find("op 'kps_test_affine': input 'x' is not contiguous (shape [4, 4], strides [1, 4])"),
            std::string::npos) << Message(r);
  // The fix the message suggests works.
  auto c = ops::Contiguous(t);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(Call("kps_test_affine").Input("x", *c).Attr("factor", 2.0).Run().ok());
}

TEST_F(CallTest, InputsOnDifferentDevicesAreAnError) {
  KPS_SKIP_WITHOUT_GPU();
  Tensor g = *b_.To(DeviceType::kCuda);
  auto r = Call("add").Input("x", x_).Input("y", g).Run();
  EXPECT_NE(Message(r).find("op 'add': input 'y' is on cuda:0 but input 'x' is on cpu"), std::string::npos)
      << Message(r);
}

TEST_F(CallTest, StreamOfAnotherDeviceIsAnError) {
  auto r = Call("add").Input("x", x_).Input("y", b_).OnStream(Stream::Cuda()).Run();
  EXPECT_NE(Message(r).find("the call runs on cpu but its stream is a cuda stream"), std::string::npos)
      << Message(r);
}

TEST_F(CallTest, RunOneOnlyForSingleOutputOps) {
  auto r = Call("kps_test_affine").Input("x", x_).Attr("factor", 2.0).RunOne();
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST_F(CallTest, CudaCallOnExplicitStream) {
  KPS_SKIP_WITHOUT_GPU();
  auto s = OwnedCudaStream::Create();
  ASSERT_TRUE(s.ok());
  Stream st = s->stream();
  Tensor x = *x_.To(DeviceType::kCuda, st), y = *b_.To(DeviceType::kCuda, st);
  auto out = ops::Add(x, y, -1.5, &st);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(st.Synchronize().ok());
  const std::vector<double> a = ToDoubles(x_), b = ToDoubles(b_), got = ToDoubles(*out);
  // The GPU may fuse the multiply-add (one rounding), so compare with the exact value:
  // where x and 1.5 * y nearly cancel, ulps of the result are not a fair yardstick.
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = a[i] - 1.5 * b[i];
    EXPECT_NEAR(got[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << i;
  }
}

}  // namespace
}  // namespace kps

namespace kps {
namespace {

TEST(CallOutputTest, WritesIntoAGivenOutput) {
  for (DeviceType dev : testing::TestDevices()) {
    if (dev == DeviceType::kCuda) KPS_SKIP_WITHOUT_GPU();
    const uint64_t seed = testing::FreshSeed();
    SCOPED_TRACE(seed);
    Tensor x = *testing::RandomTensor(Shape{2, 513}, DataType::kFloat32, seed).To(dev);
    Tensor y = *testing::RandomTensor(Shape{2, 513}, DataType::kFloat32, seed + 1).To(dev);
    Tensor out = *Tensor::Empty(Shape{2, 513}, DataType::kFloat32, dev);
    auto r = Call("mul").Input("x", x).Input("y", y).Output("out", out).RunOne();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->raw_data(), out.raw_data());  // the same memory, no new allocation
    const std::vector<double> a = testing::ToDoubles(x), b = testing::ToDoubles(y), got = testing::ToDoubles(out);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], static_cast<float>(a[i]) * static_cast<float>(b[i]));
    // In place: out is x.
    ASSERT_TRUE(Call("add").Input("x", x).Input("y", y).Output("out", x).Run().ok());
    const std::vector<double> sum = testing::ToDoubles(x);
    for (size_t i = 0; i < sum.size(); ++i) EXPECT_FLOAT_EQ(sum[i], static_cast<float>(a[i]) + static_cast<float>(b[i]));
  }
}

TEST(CallOutputTest, MismatchedOutputIsNamed) {
  Tensor x = testing::RandomTensor(Shape{4}, DataType::kFloat32, testing::FreshSeed());
  Tensor wrong = *Tensor::Empty(Shape{5}, DataType::kFloat32, DeviceType::kCpu);
  auto r = Call("add").Input("x", x).Input("y", x).Output("out", wrong).Run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("op 'add': output 'out' is float32[5] on cpu but the call produces float32[4] on cpu"),
            std::string::npos) << r.status();
  auto r2 = Call("add").Input("x", x).Input("y", x).Output("result", wrong).Run();
  EXPECT_NE(r2.status().message().find("op 'add' has no output 'result'; its outputs: out"), std::string::npos)
      << r2.status();
  Tensor strided = *(*Tensor::Empty(Shape{8}, DataType::kFloat32, DeviceType::kCpu)).AsStrided(Shape{4}, {2}, 0);
  auto r3 = Call("add").Input("x", x).Input("y", x).Output("out", strided).Run();
  EXPECT_NE(r3.status().message().find("output 'out' must be contiguous"), std::string::npos) << r3.status();
}


// --- Device indices. The MultiGpu* tests need 2 GPUs and skip with fewer. ---

// A CUDA tensor on GPU `index` at a null address: enough for the checks before a kernel,
// on any machine (Storage::Wrap records the index as given).
Tensor HollowOn(int index, const Shape& shape) {
  auto storage = Storage::Wrap(nullptr, shape.numel() * sizeof(float), Device(DeviceType::kCuda, index), nullptr);
  return *Tensor::FromStorage(storage, DataType::kFloat32, shape, ContiguousStrides(shape), 0);
}

int CurrentDevice() {
  int d = -1;
  cudaGetDevice(&d);
  return d;
}

// float32 a + b, as the add kernel computes it (float inputs: their double sum rounds once).
double SumAsFloat(double a, double b) { return static_cast<double>(static_cast<float>(a + b)); }

// Runs everywhere: the device check comes before anything touches a GPU.
TEST(CallDeviceIndexTest, InputsOnTwoGpusAreAnErrorNamingBoth) {
  const Tensor a = HollowOn(0, Shape{3});
  const Tensor b = HollowOn(1, Shape{3});
  for (bool infer : {true, false}) {
    Call call("add");
    call.Input("x", a).Input("y", b);
    const absl::Status s = infer ? call.Infer().status() : call.Run().status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("op 'add': input 'y' is on cuda:1 but input 'x' is on cuda:0"), std::string::npos)
        << s;
  }
  auto r = Call("add").Input("x", a).Input("y", a).OnDevice(Device(DeviceType::kCuda, 1)).Infer();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("op 'add': input 'x' is on cuda:0 but the call is on cuda:1"),
            std::string::npos)
      << r.status();
  // OnDevice(kCuda) without an index takes the inputs' GPU.
  EXPECT_TRUE(Call("add").Input("x", b).Input("y", b).OnDevice(DeviceType::kCuda).Infer().ok());
}

// Runs everywhere: a call on a GPU this process does not have is an error naming it.
TEST(CallDeviceIndexTest, AGpuPastTheCountIsAnError) {
  const int n = CudaDeviceCount();
  const Tensor a = HollowOn(n, Shape{3});
  auto r = Call("add").Input("x", a).Input("y", a).Run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(absl::StrCat("op 'add': device cuda:", n, " does not exist")),
            std::string::npos)
      << r.status();
  auto fill = Call("fill").Attr("shape", std::vector<int64_t>{2}).Attr("value", 1.0)
                  .OnDevice(Device(DeviceType::kCuda, n)).Run();
  ASSERT_FALSE(fill.ok());
  EXPECT_NE(fill.status().message().find(absl::StrCat("cuda:", n, " does not exist")), std::string::npos)
      << fill.status();
}

TEST(MultiGpuCallTest, MixingGpusIsAnError) {
  KPS_SKIP_WITHOUT_GPUS(2);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  Tensor host = RandomTensor(Shape{100}, DataType::kFloat32, FreshSeed());
  Tensor a = *host.To(Device(DeviceType::kCuda, 0));
  Tensor b = *host.To(Device(DeviceType::kCuda, 1));
  auto r = Call("add").Input("x", a).Input("y", b).Run();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("op 'add': input 'y' is on cuda:1 but input 'x' is on cuda:0"),
            std::string::npos)
      << r.status();
  // A given output on the other GPU.
  Tensor out1 = *Tensor::Empty(Shape{100}, DataType::kFloat32, Device(DeviceType::kCuda, 1));
  auto o = Call("add").Input("x", a).Input("y", a).Output("out", out1).Run();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("output 'out' is float32[100] on cuda:1 but the call produces "
                                      "float32[100] on cuda:0"),
            std::string::npos)
      << o.status();
  // A stream of the other GPU: recorded (OwnedCudaStream), or asked of the runtime.
  auto s1 = OwnedCudaStream::Create(1);
  ASSERT_TRUE(s1.ok()) << s1.status();
  auto w = Call("add").Input("x", a).Input("y", a).OnStream(s1->stream()).Run();
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("op 'add': the call runs on cuda:0 but its stream is on cuda:1"),
            std::string::npos)
      << w.status();
#if CUDART_VERSION >= 12080
  auto raw = Call("add").Input("x", a).Input("y", a).OnStream(Stream::Cuda(s1->stream().cuda_stream())).Run();
  ASSERT_FALSE(raw.ok());
  EXPECT_NE(raw.status().message().find("its stream is on cuda:1"), std::string::npos) << raw.status();
#endif
  EXPECT_EQ(CurrentDevice(), 0);
}

TEST(MultiGpuCallTest, KernelsRunOnTheInputsGpuAndLeaveTheCurrentDevice) {
  KPS_SKIP_WITHOUT_GPUS(2);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  Tensor hx = RandomTensor(Shape{257, 1031}, DataType::kFloat32, seed);
  Tensor hy = RandomTensor(Shape{257, 1031}, DataType::kFloat32, seed + 1);
  Tensor x = *hx.To(Device(DeviceType::kCuda, 1));
  Tensor y = *hy.To(Device(DeviceType::kCuda, 1));
  const std::vector<double> vx = ToDoubles(hx), vy = ToDoubles(hy);

  auto sum = Call("add").Input("x", x).Input("y", y).RunOne();  // on cuda:1's default stream
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(CurrentDevice(), 0);
  EXPECT_EQ(sum->device_index(), 1);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, sum->raw_data()), cudaSuccess);
  EXPECT_EQ(attr.device, 1);
  std::vector<double> got = ToDoubles(*sum);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], SumAsFloat(vx[i], vy[i])) << i;

  // A reduction (stream scratch, several kernels) on a stream made for cuda:1.
  auto s1 = OwnedCudaStream::Create(1);
  ASSERT_TRUE(s1.ok()) << s1.status();
  auto rows = Call("sum").Input("x", x).Attr("dims", std::vector<int64_t>{1}).OnStream(s1->stream()).RunOne();
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_TRUE(s1->stream().Synchronize().ok());
  EXPECT_EQ(CurrentDevice(), 0);
  EXPECT_EQ(rows->device_index(), 1);
  std::vector<double> r = ToDoubles(*rows);
  for (int64_t i = 0; i < 257; ++i) {
    double want = 0;
    for (int64_t j = 0; j < 1031; ++j) want += vx[i * 1031 + j];
    EXPECT_NEAR(r[i], want, 1e-3 * 1031) << i;
  }

  // An op without inputs, told its GPU.
  auto filled = Call("fill").Attr("shape", std::vector<int64_t>{5}).Attr("value", 2.5)
                    .OnDevice(Device(DeviceType::kCuda, 1)).RunOne();
  ASSERT_TRUE(filled.ok()) << filled.status();
  EXPECT_EQ(filled->device_index(), 1);
  EXPECT_EQ(ToDoubles(*filled), std::vector<double>(5, 2.5));
  // ... or given a stream of it.
  auto on_stream = Call("fill").Attr("shape", std::vector<int64_t>{3}).Attr("value", 1.0)
                       .OnStream(s1->stream()).RunOne();
  ASSERT_TRUE(on_stream.ok()) << on_stream.status();
  EXPECT_EQ(on_stream->device_index(), 1);
  ASSERT_TRUE(s1->stream().Synchronize().ok());
  // In place into a given output on the same GPU.
  auto in_place = Call("add").Input("x", x).Input("y", y).Output("out", x).Run();
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  got = ToDoubles(x);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], SumAsFloat(vx[i], vy[i])) << i;
  // The same op on cuda:0 tensors still runs there.
  auto zero =
      Call("add").Input("x", *hx.To(Device(DeviceType::kCuda, 0))).Input("y", *hy.To(DeviceType::kCuda)).RunOne();
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ(zero->device_index(), 0);
  EXPECT_EQ(ToDoubles(*zero), ToDoubles(*sum));
  EXPECT_EQ(CurrentDevice(), 0);
}

}  // namespace
}  // namespace kps
