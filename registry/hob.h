// Hob ("high-order bool") predicates: conditions on a call that choose among several
// kernels registered for one (op, device, dtype) key, with readable debug strings.
//
//   .SetIsMatchedHob(hob::AllInputsContiguous() && hob::NumelAtLeast("x", 1 << 20))
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "registry/attr.h"
#include "registry/data_type.h"

namespace kps {

class CallView;

class Hob {
 public:
  using Fn = std::function<bool(const CallView&)>;
  Hob(std::string debug, Fn fn) : debug_(std::move(debug)), fn_(std::move(fn)) {}
  bool operator()(const CallView& call) const { return fn_(call); }
  const std::string& DebugString() const { return debug_; }

 private:
  std::string debug_;
  Fn fn_;
};

Hob operator&&(Hob a, Hob b);
Hob operator||(Hob a, Hob b);
Hob operator!(Hob a);

namespace hob {
Hob Always();
Hob AllInputsContiguous();
// Input `name` has dtype `dtype`.
Hob InputDataTypeIs(absl::string_view name, DataType dtype);
// Input `name` has at least `n` elements.
Hob NumelAtLeast(absl::string_view name, int64_t n);
// Every defined input's data pointer is aligned to `bytes`.
Hob InputsAlignedTo(int64_t bytes);
// Attribute `name` equals `value`.
Hob AttrEquals(absl::string_view name, AttrValue value);
}  // namespace hob

}  // namespace kps
