// sort, argsort and topk: the ops' kernels, one class template over the device each
// (registered in sort_op.cc), with their device parts: the CPU loops here, the CUDA line
// sorts of sort_cuda.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "functors/mp_type.h"
#include "ops/common/axis.h"
#include "ops/common/contiguous.h"
#include "ops/sort/sort_cuda.h"
#include "registry/kernel.h"

namespace kps {
namespace sort {

// The type a line's elements compare in: the element type itself (int64 beyond 2^53
// must not round through double), float for the 16-bit floats.
template <typename T>
using KeyType = std::conditional_t<IsFloat16Type<T>, float, T>;

template <typename T>
KeyType<T> Key(T v) {
  return static_cast<KeyType<T>>(v);
}

// a before b in ascending order (NaN last); equal values are not "less", so a stable
// sort keeps them in order.
template <typename K>
bool AscendingLess(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// The positions 0..length-1 of one line, stably ordered.
template <typename K>
void OrderLine(const std::vector<K>& keys, bool descending, std::vector<int64_t>& order) {
  order.resize(keys.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  const auto less = [&](int64_t i, int64_t j) { return AscendingLess<K>(keys[i], keys[j]); };
  if (descending) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return less(j, i); });
  } else {
    std::stable_sort(order.begin(), order.end(), less);
  }
}

// The device parts. Sort<T> writes every line of the contiguous x in order: values
// (may be null: argsort) and int64 positions. Topk<T> writes each line's first k in that
// order (`largest` first when asked), or, with `sorted` false, the same k in ascending
// position; outputs are [outer, k, inner].
template <DeviceType D>
struct SortOn;

template <>
struct SortOn<DeviceType::kCpu> {
  template <typename T>
  static absl::Status Sort(const Tensor& x, const AxisLines& l, bool descending, void* values, int64_t* indices,
                           const Stream&) {
    std::vector<int64_t> order;
    ForEachLine<T>(x, l, [&](const T* p, int64_t o, int64_t i, const std::vector<KeyType<T>>& keys) {
      OrderLine(keys, descending, order);
      for (int64_t k = 0; k < l.length; ++k) {
        const int64_t dst = (o * l.length + k) * l.inner + i;
        if (values != nullptr) static_cast<T*>(values)[dst] = p[(o * l.length + order[k]) * l.inner + i];
        indices[dst] = order[k];
      }
    });
    return absl::OkStatus();
  }

  template <typename T>
  static absl::Status Topk(const Tensor& x, const AxisLines& l, int64_t k, bool largest, bool sorted, void* values,
                           int64_t* indices, const Stream&) {
    std::vector<int64_t> order;
    ForEachLine<T>(x, l, [&](const T* p, int64_t o, int64_t i, const std::vector<KeyType<T>>& keys) {
      OrderLine(keys, largest, order);
      order.resize(k);
      if (!sorted) std::sort(order.begin(), order.end());
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dst = (o * k + j) * l.inner + i;
        static_cast<T*>(values)[dst] = p[(o * l.length + order[j]) * l.inner + i];
        indices[dst] = order[j];
      }
    });
    return absl::OkStatus();
  }

 private:
  // Runs fn(p, o, i, line_keys) over every line (o, i) of the contiguous x.
  template <typename T, typename Fn>
  static void ForEachLine(const Tensor& x, const AxisLines& l, Fn&& fn) {
    const T* p = x.data<T>();
    std::vector<KeyType<T>> keys(l.length);
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t i = 0; i < l.inner; ++i) {
        for (int64_t k = 0; k < l.length; ++k) keys[k] = Key(p[(o * l.length + k) * l.inner + i]);
        fn(p, o, i, keys);
      }
    }
  }
};

// The CUDA parts are dtype-generic: T only keys the registration.
template <>
struct SortOn<DeviceType::kCuda> {
  template <typename T>
  static absl::Status Sort(const Tensor& x, const AxisLines& l, bool descending, void* values, int64_t* indices,
                           const Stream& stream) {
    return SortLinesCuda(Lines{l, x.raw_data(), x.dtype()}, descending, values, indices, stream);
  }
  template <typename T>
  static absl::Status Topk(const Tensor& x, const AxisLines& l, int64_t k, bool largest, bool sorted, void* values,
                           int64_t* indices, const Stream& stream) {
    return TopkLinesCuda(Lines{l, x.raw_data(), x.dtype()}, k, largest, sorted, values, indices, stream);
  }
};

// The op's name on an error from the line sorts, which serve sort, argsort and topk.
inline absl::Status NameOp(const KernelContext& ctx, absl::Status s) {
  return s.ok() ? s : absl::Status(s.code(), absl::StrCat("op '", ctx.schema().name(), "': ", s.message()));
}

// sort (values and indices) and argsort (indices only) on device D.
template <DeviceType D, typename T>
class SortKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const int dim, ResolveDimAttr(*ctx));
    const Tensor& in = ctx->input(0);
    if (in.numel() == 0) return absl::OkStatus();
    KPS_ASSIGN_OR_RETURN(const Tensor x, internal::AsContiguous(in, ctx->stream()));
    const bool with_values = ctx->num_outputs() == 2;
    return NameOp(*ctx, SortOn<D>::template Sort<T>(x, LinesAlong(x.shape(), dim), ctx->Attr<bool>("descending"),
                                                    with_values ? ctx->output(0).raw_data() : nullptr,
                                                    ctx->output(with_values ? 1 : 0).data<int64_t>(),
                                                    ctx->stream()));
  }
};

// topk on device D.
template <DeviceType D, typename T>
class TopkKernel final : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) const override {
    KPS_ASSIGN_OR_RETURN(const int dim, ResolveDimAttr(*ctx));
    const Tensor& in = ctx->input(0);
    const int64_t k = ctx->Attr<int64_t>("k");
    if (in.numel() == 0 || k == 0) return absl::OkStatus();  // k = 0: empty outputs, rank 0 too
    KPS_ASSIGN_OR_RETURN(const Tensor x, internal::AsContiguous(in, ctx->stream()));
    return NameOp(*ctx, SortOn<D>::template Topk<T>(x, LinesAlong(x.shape(), dim), k, ctx->Attr<bool>("largest"),
                                                    ctx->Attr<bool>("sorted"), ctx->output(0).raw_data(),
                                                    ctx->output(1).data<int64_t>(), ctx->stream()));
  }
};

}  // namespace sort
}  // namespace kps
