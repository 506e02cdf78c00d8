// Schemas and CPU kernels of the scans: cumsum, cumprod, cummax, cummin, logcumsumexp,
// discounted_cumsum. The CUDA kernels are in scan_cuda_*.cu.
#include <vector>

#include "ops/scan/scan_ops.h"
#include "registry/op_schema.h"

namespace kps {
namespace scan {

ScanShape MakeScanShape(const CallView& call, int dim) {
  ScanShape sh{LinesAlong(call.input(0).shape(), dim)};
  sh.exclusive = call.Attr<bool>("exclusive");
  sh.reverse = call.Attr<bool>("reverse");
  return sh;
}

namespace {

enum class Rule { kSumLike, kExtreme, kFloatOnly };

absl::Status InferScan(InferContext& ctx, Rule rule) {
  const Tensor& x = ctx.input(0);
  KPS_RETURN_IF_ERROR(ResolveDimAttr(ctx).status());
  switch (rule) {
    case Rule::kSumLike:
      ctx.SetOutput(0, x.shape(), IsFloatingPoint(x.dtype()) ? x.dtype() : DataType::kInt64);
      break;
    case Rule::kExtreme:
      ctx.SetOutput(0, x.shape(), x.dtype());
      ctx.SetOutput(1, x.shape(), DataType::kInt64);
      break;
    case Rule::kFloatOnly:
      if (!IsFloatingPoint(x.dtype())) {
        return ctx.Error("input 'x' has dtype ", DataTypeName(x.dtype()), "; ", ctx.schema().name(),
                         " needs a floating dtype (float16, bfloat16, float32, float64): cast x first");
      }
      ctx.SetOutput(0, x.shape(), x.dtype());
      break;
  }
  return absl::OkStatus();
}

OpSchemaBuilder& ScanSchema(OpSchemaBuilder&& b, Rule rule) {
  b.Input("x", "the tensor to scan (contiguous or a strided view, rank <= 8)");
  if (rule == Rule::kExtreme) {
    b.Output("values", "x's dtype, contiguous, of x's shape: the running extreme");
    b.Output("indices", "int64: the position along dim of the element that supplied each value (ties: the latest)");
  } else {
    b.Output("out", rule == Rule::kSumLike ? "int64 for bool and integer x (wrapping), else x's dtype; x's shape"
                                           : "x's (floating) dtype, contiguous, of x's shape");
  }
  b.RequiredAttr<int64_t>("dim", "the dim to scan along, negative counting from the end");
  b.Attr<bool>("exclusive", false, "out[i] combines the elements before i only (the identity at the start)");
  b.Attr<bool>("reverse", false, "scan from the end of dim towards its start");
  b.SetInferFn([rule](InferContext& ctx) { return InferScan(ctx, rule); });
  if (rule == Rule::kFloatOnly) {
    b.Kernels({DeviceType::kCpu, DeviceType::kCuda},
              {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64});
  } else {
    b.Kernels({DeviceType::kCpu, DeviceType::kCuda}, AllDataTypes());
  }
  return b;
}

#define KPS_SCAN_OP(name, rule)                                                                  \
  static ::kps::internal::OpRegistrationTrigger KPS_CONCAT(kps_scan_op_, __COUNTER__) =          \
      ScanSchema(::kps::OpSchemaBuilder(name, __FILE__, __LINE__), Rule::rule)

}  // namespace

KPS_SCAN_OP("cumsum", kSumLike)
    .Doc("Running sum along `dim`. float16/bfloat16/float32 accumulate in float, float64 in double, bool and "
         "integers in int64 (wrapping). Deterministic.");
KPS_SCAN_OP("cumprod", kSumLike)
    .Doc("Running product along `dim`; floats accumulate in double, bool and integers in int64 (wrapping).");
KPS_SCAN_OP("cummax", kExtreme)
    .Doc("Running maximum along `dim` and the position that supplied it: ties go to the latest position, NaN "
         "beats every number (values stay NaN from the first NaN on; the index is the latest NaN's).");
KPS_SCAN_OP("cummin", kExtreme)
    .Doc("Running minimum along `dim` and its position (ties: the latest; NaN propagates as in cummax).");
KPS_SCAN_OP("logcumsumexp", kFloatOnly)
    .Doc("log(cumsum(exp(x))) along `dim`, stable (running max rescales the running sum): no overflow for "
         "large x; a -inf prefix gives -inf, +inf gives +inf, NaN gives NaN from there on.");
KPS_SCAN_OP("discounted_cumsum", kFloatOnly)
    .RequiredAttr<double>("gamma", "the discount: out[i] = x[i] + gamma * out[i - 1]")
    .Doc("out[i] = x[i] + gamma * out[i-1] along `dim` (reverse: out[i+1]), run as a parallel scan of affine "
         "maps (value, gamma^length); exclusive gives the running value before x[i] is added, gamma * out[i-1].");

KPS_REGISTER_KERNEL_FOR_TYPES("cumsum", DeviceType::kCpu, CpuScanKernel<SumMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("cumprod", DeviceType::kCpu, CpuScanKernel<ProdMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("cummax", DeviceType::kCpu, CpuScanKernel<MaxMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("cummin", DeviceType::kCpu, CpuScanKernel<MinMaker>::Kernel, KPS_ALL_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("logcumsumexp", DeviceType::kCpu, CpuScanKernel<LogSumExpMaker>::Kernel,
                              KPS_SCAN_FLOAT_CPP_TYPES);
KPS_REGISTER_KERNEL_FOR_TYPES("discounted_cumsum", DeviceType::kCpu, CpuScanKernel<DiscountMaker>::Kernel,
                              KPS_SCAN_FLOAT_CPP_TYPES);

}  // namespace scan
}  // namespace kps
