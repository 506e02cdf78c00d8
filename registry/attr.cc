#include "registry/attr.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kps {

absl::string_view AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kBool: return "bool";
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kString: return "string";
    case AttrType::kInts: return "ints";
    case AttrType::kDataType: return "dtype";
  }
  return "invalid";
}

std::string AttrValueToString(const AttrValue& v) {
  switch (TypeOfAttr(v)) {
    case AttrType::kBool: return std::get<bool>(v) ? "true" : "false";
    case AttrType::kInt: return absl::StrCat(std::get<int64_t>(v));
    case AttrType::kFloat: return absl::StrCat(std::get<double>(v));
    case AttrType::kString: return absl::StrCat("\"", std::get<std::string>(v), "\"");
    case AttrType::kInts: return absl::StrCat("[", absl::StrJoin(std::get<std::vector<int64_t>>(v), ", "), "]");
    case AttrType::kDataType: return std::string(DataTypeName(std::get<DataType>(v)));
  }
  return "?";
}

absl::StatusOr<AttrValue> ParseAttrValue(AttrType type, absl::string_view text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read '", text, "' as ", AttrTypeName(type)));
  };
  switch (type) {
    case AttrType::kBool: {
      std::string t = absl::AsciiStrToLower(text);
      if (t == "true" || t == "1") return AttrValue(true);
      if (t == "false" || t == "0") return AttrValue(false);
      return bad();
    }
    case AttrType::kInt: {
      int64_t v;
      if (!absl::SimpleAtoi(text, &v)) return bad();
      return AttrValue(v);
    }
    case AttrType::kFloat: {
      double v;
      if (!absl::SimpleAtod(text, &v)) return bad();
      return AttrValue(v);
    }
    case AttrType::kString:
      return AttrValue(std::string(text));
    case AttrType::kInts: {
      std::vector<int64_t> vs;
      for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
        int64_t v;
        if (!absl::SimpleAtoi(part, &v)) return bad();
        vs.push_back(v);
      }
      return AttrValue(std::move(vs));
    }
    case AttrType::kDataType: {
      auto d = ParseDataType(text);
      if (!d.ok()) return d.status();
      return AttrValue(*d);
    }
  }
  return bad();
}

}  // namespace kps
