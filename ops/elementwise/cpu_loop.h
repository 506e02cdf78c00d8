// The CPU elementwise loop: applies a functor over an ElementwiseLayout (broadcast and
// strided operands), the innermost dim as a tight loop.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "ops/elementwise/broadcast.h"

namespace kps {
namespace elementwise {
namespace internal {

template <typename OutT, typename F, typename... InTs, size_t... I>
void CpuLoopImpl(std::index_sequence<I...>, const ElementwiseLayout& l, OutT* out, const F& f,
                 const InTs*... ins) {
  constexpr size_t kN = sizeof...(InTs);
  const int rank = l.rank();
  if (rank == 0) {  // a single element
    *out = static_cast<OutT>(f(ins[0]...));
    return;
  }
  for (int64_t d : l.dims) {
    if (d == 0) return;
  }
  const int64_t inner = l.dims[rank - 1];
  const int64_t out_step = l.strides[0][rank - 1];
  const std::array<int64_t, kN> in_step = {l.strides[I + 1][rank - 1]...};
  DimVector index(rank, 0);
  int64_t out_off = 0;
  std::array<int64_t, kN> in_off{};
  while (true) {
    for (int64_t j = 0; j < inner; ++j) {
      out[out_off + j * out_step] = static_cast<OutT>(f(ins[in_off[I] + j * in_step[I]]...));
    }
    // Odometer over the outer dims.
    int d = rank - 2;
    for (; d >= 0; --d) {
      if (++index[d] < l.dims[d]) {
        out_off += l.strides[0][d];
        ((in_off[I] += l.strides[I + 1][d]), ...);
        break;
      }
      out_off -= l.strides[0][d] * (l.dims[d] - 1);
      ((in_off[I] -= l.strides[I + 1][d] * (l.dims[d] - 1)), ...);
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace internal

// out[o] = f(ins[0][i0], ins[1][i1], ...) over `layout` (operand 0 is `out`).
template <typename OutT, typename F, typename... InTs>
void CpuElementwiseLoop(const ElementwiseLayout& layout, OutT* out, const F& f, const InTs*... ins) {
  internal::CpuLoopImpl(std::index_sequence_for<InTs...>(), layout, out, f, ins...);
}

}  // namespace elementwise
}  // namespace kps
