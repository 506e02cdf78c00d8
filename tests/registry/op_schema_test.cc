// Op schemas and the op registry: registration, description, lookup errors.
#include "registry/op_schema.h"

#include "gtest/gtest.h"
#include "registry/call.h"
#include "registry/kernel.h"

namespace kps {
namespace {

absl::Status InferLikeX(InferContext& ctx) {
  ctx.SetOutput(0, ctx.input(0).shape(), ctx.input(0).dtype());
  return absl::OkStatus();
}

KPS_REGISTER_OP("kps_test_described")
    .Input("x", "the input")
    .OptionalInput("bias", "added if given")
    .TypedInput("keep", DataType::kBool, "which to keep")
    .Output("out", "the result")
    .Attr<double>("scale", 0.5, "multiplier")
    .Attr<std::string>("mode", "fast")
    .RequiredAttr<int64_t>("axis", "which axis")
    .SetInferFn(InferLikeX)
    .Doc("A schema for describing.");

TEST(OpSchemaTest, RegisteredSchemaKeepsItsParts) {
  const OpSchema* s = OpRegistry::Global().Find("kps_test_described");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->inputs().size(), 3u);
  EXPECT_TRUE(s->inputs()[1].optional);
  EXPECT_FALSE(s->inputs()[0].dtype.has_value());
  EXPECT_EQ(s->inputs()[2].dtype, DataType::kBool);
  EXPECT_FALSE(s->inputs()[2].optional);
  EXPECT_EQ(s->InputIndex("bias"), 1);
  EXPECT_EQ(s->AttrIndex("axis"), 2);
  EXPECT_EQ(s->AttrIndex("nope"), -1);
  EXPECT_TRUE(s->attrs()[2].required);
  EXPECT_EQ(std::get<double>(s->attrs()[0].default_value), 0.5);
  EXPECT_EQ(s->key_arg(), "x");  // the first input by default
}

TEST(OpSchemaTest, DescribeShowsInputsOutputsAndAttributes) {
  const std::string d = OpRegistry::Global().Find("kps_test_described")->Describe();
  EXPECT_NE(d.find("A schema for describing."), std::string::npos) << d;
  EXPECT_NE(d.find("bias (optional): added if given"), std::string::npos) << d;
  EXPECT_NE(d.find("keep (bool always): which to keep"), std::string::npos) << d;
  EXPECT_NE(d.find("scale (float, default 0.5): multiplier"), std::string::npos) << d;
  EXPECT_NE(d.find("mode (string, default \"fast\")"), std::string::npos) << d;
  EXPECT_NE(d.find("axis (int, required): which axis"), std::string::npos) << d;
}

TEST(OpSchemaTest, UnknownOpSuggestsNearestNames) {
  auto r = OpRegistry::Global().Lookup("ad");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("unknown op 'ad'; did you mean 'add'"), std::string::npos)
      << r.status();
  auto r2 = Call("mull").Run();
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("'mul'"), std::string::npos) << r2.status();
  auto r3 = Call("zzzzzzzzzz").Run();
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.status().message().find("did you mean"), std::string::npos) << r3.status();
}

TEST(OpSchemaTest, DuplicateNameIsARegistrationError) {
  auto s = OpSchemaBuilder("kps_test_described", "here.cc", 7).Input("x").Output("out")
               .SetInferFn(InferLikeX).Build();
  absl::Status st = OpRegistry::Global().Register(std::move(s));
  EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(st.message().find("registered twice"), std::string::npos) << st;
  EXPECT_NE(st.message().find("here.cc:7"), std::string::npos) << st;
}

TEST(OpSchemaTest, SchemaWithoutInferFnIsRejected) {
  absl::Status st = OpRegistry::Global().Register(
      OpSchemaBuilder("kps_test_no_infer", "f.cc", 1).Input("x").Output("y").Build());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("without SetInferFn"), std::string::npos) << st;
}

TEST(OpSchemaTest, KeyArgumentMustExist) {
  absl::Status st = OpRegistry::Global().Register(
      OpSchemaBuilder("kps_test_bad_key", "g.cc", 2).Input("x").Output("y").KeyDataTypeFrom("z")
          .SetInferFn(InferLikeX).Build());
  EXPECT_NE(st.message().find("KeyDataTypeFrom('z') names no input or output"), std::string::npos) << st;
}

// An op without inputs: its kernels are keyed by the dtype of its output.
absl::Status InferFill(InferContext& ctx) {
  ctx.SetOutput(0, Shape(ctx.Attr<std::vector<int64_t>>("shape")), ctx.Attr<DataType>("dtype"));
  return absl::OkStatus();
}
KPS_REGISTER_OP("kps_test_fill")
    .Output("out")
    .RequiredAttr<std::vector<int64_t>>("shape")
    .Attr<DataType>("dtype", DataType::kFloat32)
    .SetInferFn(InferFill);
template <typename T>
class FillSevenKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    T* out = ctx->output(0).data<T>();
    for (int64_t i = 0; i < ctx->output(0).numel(); ++i) out[i] = static_cast<T>(7);
    return absl::OkStatus();
  }
};
KPS_REGISTER_KERNEL_FOR_TYPES("kps_test_fill", DeviceType::kCpu, FillSevenKernel, int16_t, double);

TEST(OpSchemaTest, OpWithoutInputsIsKeyedByItsOutput) {
  EXPECT_EQ(OpRegistry::Global().Find("kps_test_fill")->key_arg(), "out");
  auto r = Call("kps_test_fill").Attr("shape", std::vector<int64_t>{2, 3}).Attr("dtype", DataType::kInt16).RunOne();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r->ToVector<int16_t>(), std::vector<int16_t>(6, 7));
  auto bad = Call("kps_test_fill").Attr("shape", std::vector<int64_t>{2}).Attr("dtype", DataType::kInt8).Run();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("has no cpu kernel for dtype int8 (from 'out'); registered (device:dtype): cpu:int16, cpu:float64"),
            std::string::npos) << bad.status();
}

TEST(OpSchemaTest, StaticRegistrationsSucceeded) {
  // Errors made on purpose by these tests are added at run time with other names.
  for (const absl::Status& s : OpRegistry::Global().registration_errors()) ADD_FAILURE() << s;
}

TEST(AttrTest, ParseAndPrint) {
  EXPECT_EQ(std::get<double>(*ParseAttrValue(AttrType::kFloat, "2.5")), 2.5);
  EXPECT_EQ(std::get<std::vector<int64_t>>(*ParseAttrValue(AttrType::kInts, "1,-2,3")),
            (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(std::get<DataType>(*ParseAttrValue(AttrType::kDataType, "bf16")), DataType::kBFloat16);
  EXPECT_FALSE(ParseAttrValue(AttrType::kInt, "2.5").ok());
  EXPECT_FALSE(ParseAttrValue(AttrType::kBool, "maybe").ok());
  EXPECT_EQ(AttrValueToString(MakeAttrValue(std::vector<int64_t>{1, 2})), "[1, 2]");
  EXPECT_EQ(TypeOfAttr(MakeAttrValue(3)), AttrType::kInt);
  EXPECT_EQ(TypeOfAttr(MakeAttrValue(3.0f)), AttrType::kFloat);
  EXPECT_EQ(TypeOfAttr(MakeAttrValue("s")), AttrType::kString);
}

}  // namespace
}  // namespace kps
