// Schemas and CPU kernels of the reductions: sum, mean, prod, max, min, any, all,
// argmax, argmin, logsumexp, var, std. The CUDA kernels are in reduce_cuda_*.cu.
#include <utility>

#include "ops/reduce/reduce_ops.h"
#include "registry/op_schema.h"

namespace kps {
namespace reduce {
namespace {

const char* RuleOutputDoc(OutRule rule) {
  switch (rule) {
    case OutRule::kSame: return "x's dtype, contiguous, of x's shape without the reduced dims";
    case OutRule::kSumLike:
      return "int64 for bool and integer x (wrapping), else x's dtype; contiguous, of x's shape without the reduced dims";
    case OutRule::kFloatOnly: return "x's (floating) dtype, contiguous, of x's shape without the reduced dims";
    case OutRule::kBool: return "bool, contiguous, of x's shape without the reduced dims";
    case OutRule::kIndex: return "int64 positions within the reduced extent (row-major over the reduced dims)";
  }
  return "";
}

std::vector<DataType> RuleDataTypes(OutRule rule) {
  if (rule == OutRule::kFloatOnly) {
    return {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
  }
  return AllDataTypes();
}

absl::Status InferReduce(InferContext& ctx, OutRule rule, bool needs_identity) {
  const Tensor& x = ctx.input(0);
  KPS_ASSIGN_OR_RETURN(const uint32_t mask, ReducedDimMask(ctx));
  const Shape shape = ReducedShape(x.shape(), mask, ctx.Attr<bool>("keepdim"));
  DataType out = x.dtype();
  switch (rule) {
    case OutRule::kSame: break;
    case OutRule::kSumLike: out = IsFloatingPoint(x.dtype()) ? x.dtype() : DataType::kInt64; break;
    case OutRule::kFloatOnly:
      if (!IsFloatingPoint(x.dtype())) {
        return ctx.Error("input 'x' has dtype ", DataTypeName(x.dtype()), "; ", ctx.schema().name(),
                         " needs a floating dtype (float16, bfloat16, float32, float64): cast x first");
      }
      break;
    case OutRule::kBool: out = DataType::kBool; break;
    case OutRule::kIndex: out = DataType::kInt64; break;
  }
  if (needs_identity && shape.numel() > 0) {
    int64_t reduced = 1;
    for (int d = 0; d < x.rank(); ++d) {
      if (mask & (1u << d)) reduced *= x.shape()[d];
    }
    if (reduced == 0) {
      return ctx.Error("cannot reduce an empty extent: dims ", MaskToString(mask, x.rank()), " of input 'x' ",
                       x.shape().ToString(), " hold no elements, and ", ctx.schema().name(), " has no identity");
    }
  }
  ctx.SetOutput(0, shape, out);
  return absl::OkStatus();
}

}  // namespace

OpSchemaBuilder& ReduceSchema(OpSchemaBuilder&& builder, OutRule rule, bool needs_identity) {
  builder.Input("x", "the tensor to reduce (contiguous or a strided view, rank <= 8)");
  builder.Output("out", RuleOutputDoc(rule));
  builder.Attr<std::vector<int64_t>>("dims", {}, "the dims to reduce, negative counting from the end; empty: all");
  builder.Attr<bool>("keepdim", false, "keep the reduced dims as size 1");
  builder.SetInferFn([rule, needs_identity](InferContext& ctx) { return InferReduce(ctx, rule, needs_identity); });
  builder.Kernels({DeviceType::kCpu, DeviceType::kCuda}, RuleDataTypes(rule));
  return builder;
}

KPS_REDUCE_OP("sum", kSumLike, false)
    .Doc("Sum over `dims`. float16/bfloat16/float32 accumulate in float, float64 in double, bool and integers "
         "in int64 (wrapping). Empty extent: 0. Deterministic: the same input gives the same bits every run.");
KPS_REDUCE_OP("mean", kFloatOnly, false)
    .Doc("Mean over `dims` (the sum, accumulated as for sum, over the count). Empty extent: NaN.");
KPS_REDUCE_OP("prod", kSumLike, false)
    .Doc("Product over `dims`, accumulated like sum. Empty extent: 1.");
KPS_REDUCE_OP("max", kSame, true)
    .Doc("Maximum over `dims`; any NaN gives NaN, +0.0 beats -0.0. Empty extent: an error (no identity).");
KPS_REDUCE_OP("min", kSame, true)
    .Doc("Minimum over `dims`; any NaN gives NaN, -0.0 beats +0.0. Empty extent: an error (no identity).");
KPS_REDUCE_OP("any", kBool, false)
    .Doc("Whether any element over `dims` is nonzero (NaN counts as nonzero). Empty extent: false.");
KPS_REDUCE_OP("all", kBool, false)
    .Doc("Whether every element over `dims` is nonzero (NaN counts as nonzero). Empty extent: true.");
KPS_REDUCE_OP("argmax", kIndex, true)
    .Doc("Position of the maximum within the reduced extent (row-major over `dims`; the flat index when dims "
         "is empty): the first NaN if any, else the first maximum. Empty extent: an error.");
KPS_REDUCE_OP("argmin", kIndex, true)
    .Doc("Position of the minimum within the reduced extent (see argmax): the first NaN if any, else the first "
         "minimum. Empty extent: an error.");
KPS_REDUCE_OP("logsumexp", kFloatOnly, false)
    .Doc("log(sum(exp(x))) over `dims` in one stable pass (a running max rescales the running sum): no overflow "
         "for large x; all -inf gives -inf, +inf gives +inf, NaN gives NaN. Empty extent: -inf.");
KPS_REDUCE_OP("var", kFloatOnly, false)
    .Attr<double>("correction", 1.0, "the divisor is N - correction (1: the sample variance)")
    .Doc("Variance over `dims` by Welford's algorithm: M2 / (N - correction); NaN when N - correction <= 0.");
KPS_REDUCE_OP("std", kFloatOnly, false)
    .Attr<double>("correction", 1.0, "the divisor is N - correction (1: the sample standard deviation)")
    .Doc("Standard deviation over `dims`: sqrt of var (Welford); NaN when N - correction <= 0.");

KPS_REGISTER_KERNEL_FOR_TYPES("sum", DeviceType::kCpu, CpuReduceKernel<SumMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("mean", DeviceType::kCpu, CpuReduceKernel<MeanMaker>::Kernel, KPS_REDUCE_FLOAT_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("prod", DeviceType::kCpu, CpuReduceKernel<ProdMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("max", DeviceType::kCpu, CpuReduceKernel<MaxMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("min", DeviceType::kCpu, CpuReduceKernel<MinMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("any", DeviceType::kCpu, CpuReduceKernel<AnyMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("all", DeviceType::kCpu, CpuReduceKernel<AllMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("argmax", DeviceType::kCpu, CpuReduceKernel<ArgMaxMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("argmin", DeviceType::kCpu, CpuReduceKernel<ArgMinMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("logsumexp", DeviceType::kCpu, CpuReduceKernel<LogSumExpMaker>::Kernel,
                              KPS_REDUCE_FLOAT_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("var", DeviceType::kCpu, CpuReduceKernel<VarMaker>::Kernel, KPS_REDUCE_FLOAT_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("std", DeviceType::kCpu, CpuReduceKernel<StdMaker>::Kernel, KPS_REDUCE_FLOAT_CPP_TYPES);

}  // namespace reduce
}  // namespace kps
