#include "registry/hob.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "registry/op_schema.h"

namespace kps {

Hob operator&&(Hob a, Hob b) {
  std::string d = absl::StrCat("(", a.DebugString(), " && ", b.DebugString(), ")");
  return Hob(std::move(d), [a = std::move(a), b = std::move(b)](const CallView& c) { return a(c) && b(c); });
}
Hob operator||(Hob a, Hob b) {
  std::string d = absl::StrCat("(", a.DebugString(), " || ", b.DebugString(), ")");
  return Hob(std::move(d), [a = std::move(a), b = std::move(b)](const CallView& c) { return a(c) || b(c); });
}
Hob operator!(Hob a) {
  std::string d = absl::StrCat("!", a.DebugString());
  return Hob(std::move(d), [a = std::move(a)](const CallView& c) { return !a(c); });
}

namespace hob {

Hob Always() {
  return Hob("Always", [](const CallView&) { return true; });
}

Hob AllInputsContiguous() {
  return Hob("AllInputsContiguous", [](const CallView& c) {
    for (int i = 0; i < c.num_inputs(); ++i) {
      if (c.input(i).defined() && !c.input(i).is_contiguous()) return false;
    }
    return true;
  });
}

Hob InputDataTypeIs(absl::string_view name, DataType dtype) {
  return Hob(absl::StrCat("InputDataTypeIs(", name, ", ", DataTypeName(dtype), ")"),
             [n = std::string(name), dtype](const CallView& c) {
               const Tensor& t = c.Input(n);
               return t.defined() && t.dtype() == dtype;
             });
}

Hob NumelAtLeast(absl::string_view name, int64_t n) {
  return Hob(absl::StrCat("NumelAtLeast(", name, ", ", n, ")"),
             [s = std::string(name), n](const CallView& c) {
               const Tensor& t = c.Input(s);
               return t.defined() && t.numel() >= n;
             });
}

Hob InputsAlignedTo(int64_t bytes) {
  return Hob(absl::StrCat("InputsAlignedTo(", bytes, ")"), [bytes](const CallView& c) {
    for (int i = 0; i < c.num_inputs(); ++i) {
      const Tensor& t = c.input(i);
      if (t.defined() && reinterpret_cast<uintptr_t>(t.raw_data()) % bytes != 0) return false;
    }
    return true;
  });
}

Hob AttrEquals(absl::string_view name, AttrValue value) {
  std::string d = absl::StrCat("AttrEquals(", name, ", ", AttrValueToString(value), ")");
  return Hob(std::move(d), [n = std::string(name), v = std::move(value)](const CallView& c) {
    int i = c.schema().AttrIndex(n);
    return i >= 0 && c.attr(i) == v;
  });
}

}  // namespace hob
}  // namespace kps
