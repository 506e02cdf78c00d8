// The device part of every elementwise kernel: ElementwiseOn<D>::Run(ctx, layout, out, f,
// ins...) computes out = f(ins...) over an ElementwiseLayout, with the CPU loop
// (cpu_loop.h) here and the CUDA launcher (ElementwiseOn<kCuda>, elementwise_launch.cuh).
// An elementwise op's kernel is one class template over the device (registry/kernel.h,
// KPS_REGISTER_DEVICE_KERNELS) that builds its functor from the call once and hands it
// here.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "ops/elementwise/broadcast.h"
#include "ops/elementwise/cpu_loop.h"
#include "registry/kernel.h"

namespace kps {
namespace elementwise {

template <DeviceType D>
struct ElementwiseOn;

template <>
struct ElementwiseOn<DeviceType::kCpu> {
  template <typename OutT, typename F, typename... InTs>
  static absl::Status Run(const KernelContext&, const ElementwiseLayout& layout, OutT* out, const F& f,
                          const InTs*... ins) {
    CpuElementwiseLoop(layout, out, f, ins...);
    return absl::OkStatus();
  }
};

}  // namespace elementwise
}  // namespace kps
