// The prologue every sparse and graph kernel shares: its inputs, packed.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "ops/common/contiguous.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace sparse {

// Every input of the call in schema order, each contiguous (internal::AsContiguous on the
// call's stream); an absent optional input stays undefined.
inline absl::StatusOr<std::vector<Tensor>> ContiguousInputs(const KernelContext& ctx) {
  std::vector<Tensor> in(static_cast<size_t>(ctx.num_inputs()));
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.input(i).defined()) {
      KPS_ASSIGN_OR_RETURN(in[i], internal::AsContiguous(ctx.input(i), ctx.stream()));
    }
  }
  return in;
}

}  // namespace sparse
}  // namespace kps
