#include "ops/ops.h"

#include "registry/call.h"

namespace kps {
namespace ops {
namespace {
Call& WithStream(Call& call, const Stream* stream) {
  return stream != nullptr ? call.OnStream(*stream) : call;
}
}  // namespace

absl::StatusOr<Tensor> Add(const Tensor& x, const Tensor& y, double alpha, const Stream* stream) {
  Call call("add");
  return WithStream(call.Input("x", x).Input("y", y).Attr("alpha", alpha), stream).RunOne();
}

absl::StatusOr<Tensor> Mul(const Tensor& x, const Tensor& y, const Stream* stream) {
  Call call("mul");
  return WithStream(call.Input("x", x).Input("y", y), stream).RunOne();
}

absl::StatusOr<Tensor> Contiguous(const Tensor& x, const Stream* stream) {
  Call call("copy");
  return WithStream(call.Input("x", x), stream).RunOne();
}

}  // namespace ops
}  // namespace kps
