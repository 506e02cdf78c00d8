// libFuzzer target: shape, stride, view and broadcast arithmetic on caller data.
//
// The input describes up to three views (rank, dims, strides, offset) of a small storage.
// Each goes through Tensor::FromStorage (the bounds check of every view) and, when
// accepted, is checked in 128-bit arithmetic to lie inside the storage and gathered with
// To(kCpu), so a wrapped bound is an out-of-bounds read that ASan reports. The accepted
// views then broadcast through an elementwise op's shape inference and the eager call,
// whose kernel checks that the merged loop layout stays inside every operand.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ops/elementwise/broadcast.h"
#include "registry/call.h"
#include "registry/checked_math.h"
#include "registry/kernel.h"
#include "registry/shape.h"
#include "registry/tensor.h"

namespace kps {
namespace {

constexpr int64_t kStorageElems = 64;

// Reads bytes from the input, zero once it runs out.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // A value from a few magnitude classes, so both small shapes and values near the
  // overflow edges (2^31, 2^32, 2^62, 2^63) come up often.
  int64_t Value() {
    const uint8_t kind = Byte();
    uint64_t raw = 0;
    for (int i = 0; i < 8; ++i) raw = raw << 8 | Byte();
    switch (kind % 8) {
      case 0: case 1: case 2: return static_cast<int64_t>(raw % 8);
      case 3: return static_cast<int64_t>(raw % 100000);
      case 4: return static_cast<int64_t>((uint64_t{1} << (raw % 64)) + (raw >> 60) - 8);
      case 5: return -static_cast<int64_t>(raw % 4);
      default: return static_cast<int64_t>(raw);
    }
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "shape_fuzz invariant violated: %s\n", what);
  abort();
}

absl::Status InferBroadcast(InferContext& ctx) {
  KPS_ASSIGN_OR_RETURN(Shape shape, elementwise::BroadcastShape(ctx));
  ctx.SetOutput(0, shape, ctx.input(0).dtype());
  return absl::OkStatus();
}

// The farthest element the layout's loop reaches in operand k, in 128-bit arithmetic.
__int128 Reach(const elementwise::ElementwiseLayout& l, int k) {
  __int128 r = 0;
  for (int d = 0; d < l.rank(); ++d) {
    if (l.dims[d] > 0) r += static_cast<__int128>(l.dims[d] - 1) * l.strides[k][d];
  }
  return r;
}

class CheckLayoutKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    const Tensor& out = ctx->output(0);
    std::vector<const Tensor*> inputs;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      if (ctx->input(i).defined()) inputs.push_back(&ctx->input(i));
    }
    const auto layout = elementwise::MakeElementwiseLayout(out.shape(), inputs);
    __int128 count = 1;
    for (int64_t d : layout.dims) count *= d;
    if (out.numel() > 0 && count != out.numel()) Fail("layout count differs from the output's numel");
    if (out.numel() == 0) return absl::OkStatus();
    if (Reach(layout, 0) >= out.numel()) Fail("layout leaves the output");
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Tensor& t = *inputs[k];
      const __int128 last = t.offset() + Reach(layout, static_cast<int>(k) + 1);
      if (last >= static_cast<__int128>(t.storage()->bytes())) Fail("layout leaves an input's storage");
    }
    return absl::OkStatus();
  }
};

KPS_REGISTER_OP("fuzz_broadcast")
    .Input("a")
    .OptionalInput("b")
    .OptionalInput("c")
    .Output("out")
    .SetInferFn(InferBroadcast);
KPS_REGISTER_KERNEL("fuzz_broadcast", DeviceType::kCpu, DataType::kInt8).SetCreateFn<CheckLayoutKernel>();

}  // namespace
}  // namespace kps

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kps;
  static std::vector<int8_t> buffer(kStorageElems, 1);
  static const std::shared_ptr<Storage> storage =
      Storage::Wrap(buffer.data(), buffer.size(), DeviceType::kCpu, nullptr);
  Reader in(data, size);
  const int num_views = 1 + in.Byte() % 3;
  std::vector<Tensor> views;
  for (int v = 0; v < num_views; ++v) {
    const int rank = in.Byte() % 7;
    DimVector dims(rank), strides(rank);
    for (int d = 0; d < rank; ++d) dims[d] = in.Value();
    for (int d = 0; d < rank; ++d) strides[d] = in.Value();
    const int64_t offset = in.Value();
    const Shape shape(absl::MakeConstSpan(dims));
    const bool valid_shape = ValidateShape(shape, "fuzz").ok();
    int64_t extent = 0;
    bool fits = true;
    for (int64_t d : dims) fits = fits && d >= 0;
    if (fits) fits = StridedExtent(dims.data(), dims.size(), &extent);
    if (valid_shape != fits) Fail("ValidateShape disagrees with StridedExtent");
    if (valid_shape != IsValidShape(shape.dims())) Fail("ValidateShape disagrees with IsValidShape");

    auto view = Tensor::FromStorage(storage, DataType::kInt8, shape, strides, offset);
    if (!view.ok()) continue;
    if (!valid_shape) Fail("a view with an invalid shape was accepted");
    __int128 numel = 1, last = offset;
    for (int d = 0; d < rank; ++d) {
      numel *= dims[d];
      if (dims[d] > 0) last += static_cast<__int128>(dims[d] - 1) * strides[d];
    }
    if (numel != view->numel()) Fail("numel differs from the exact product of the dims");
    if (numel > 0 && (offset < 0 || last >= kStorageElems)) Fail("an accepted view leaves its storage");
    if (numel > 0 && numel <= 4096) {
      auto copy = view->To(DeviceType::kCpu);
      if (!copy.ok() || copy->numel() != view->numel()) Fail("gathering an accepted view failed");
    }
    views.push_back(*view);
  }
  // The broadcast's element count in 128 bits (0 when the shapes do not broadcast): an
  // output that is valid but large would only exercise the allocator, so the call runs
  // when it is small or past the shape rule's limit (where the call must refuse it).
  __int128 out_numel = views.empty() ? 0 : 1;
  size_t out_rank = 0;
  for (const Tensor& v : views) out_rank = std::max<size_t>(out_rank, v.rank());
  for (size_t d = 1; d <= out_rank && out_numel != 0; ++d) {
    int64_t dim = 1;
    for (const Tensor& v : views) {
      const int64_t vd = d <= static_cast<size_t>(v.rank()) ? v.shape()[v.rank() - d] : 1;
      if (vd != 1 && dim != 1 && vd != dim) dim = -1;
      if (dim != -1 && vd != 1) dim = vd;
    }
    out_numel = dim < 0 ? 0 : out_numel * (dim == 0 ? 1 : dim);
    if (out_numel > (static_cast<__int128>(1) << 64)) break;
  }
  if (!views.empty() && (out_numel <= (1 << 20) || out_numel > kMaxNumel)) {
    Call call("fuzz_broadcast");
    const char* names[] = {"a", "b", "c"};
    for (size_t i = 0; i < views.size(); ++i) call.Input(names[i], views[i]);
    auto out = call.Run();
    if (out.ok() && !IsValidShape((*out)[0].shape().dims())) Fail("an output with an invalid shape");
  }
  return 0;
}
