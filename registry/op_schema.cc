#include "registry/op_schema.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "registry/logging.h"
#include "registry/name_map.h"

namespace kps {

// ---- CallView / InferContext -------------------------------------------------------

const Tensor& CallView::Input(absl::string_view name) const {
  static const Tensor kUndefined;
  int i = schema_.InputIndex(name);
  return i < 0 ? kUndefined : inputs_[i];
}

InferContext::InferContext(const OpSchema& schema, absl::Span<const Tensor> inputs,
                           absl::Span<const AttrValue* const> attrs, DeviceType device)
    : CallView(schema, inputs, attrs, device),
      output_shapes_(schema.outputs().size()),
      output_dtypes_(schema.outputs().size(), DataType::kFloat32),
      output_set_(schema.outputs().size(), false),
      output_dynamic_(schema.outputs().size(), false) {}

void InferContext::SetDynamicOutput(int i, DataType dtype) {
  output_dtypes_[i] = dtype;
  output_set_[i] = true;
  output_dynamic_[i] = true;
}

void InferContext::SetOutput(int i, Shape shape, DataType dtype) {
  output_shapes_[i] = std::move(shape);
  output_dtypes_[i] = dtype;
  output_set_[i] = true;
}

namespace internal {
void DieOnAttrMisuse(const OpSchema& schema, absl::string_view name, AttrType want,
                     const AttrValue* have) {
  KPS_LOG(FATAL) << "op '" << schema.name() << "' read attribute '" << name << "' as "
                 << AttrTypeName(want)
                 << (have == nullptr ? std::string(", but its schema has no such attribute")
                                     : absl::StrCat(", but it holds ", AttrTypeName(TypeOfAttr(*have))));
  abort();
}
}  // namespace internal

// ---- OpSchema -------------------------------------------------------------------------

namespace {
int IndexOf(const std::vector<ArgDef>& args, absl::string_view name) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name == name) return static_cast<int>(i);
  }
  return -1;
}
}  // namespace

int OpSchema::InputIndex(absl::string_view name) const { return IndexOf(inputs_, name); }
int OpSchema::OutputIndex(absl::string_view name) const { return IndexOf(outputs_, name); }
int OpSchema::AttrIndex(absl::string_view name) const {
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if (attrs_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string OpSchema::Describe() const {
  std::string s = absl::StrCat(name_, ": ", doc_.empty() ? "(no doc)" : doc_, "\n");
  absl::StrAppend(&s, "  inputs:\n");
  if (inputs_.empty()) absl::StrAppend(&s, "    (none)\n");
  for (const ArgDef& a : inputs_) {
    absl::StrAppend(&s, "    ", a.name, a.optional ? " (optional)" : "",
                    a.dtype ? absl::StrCat(" (", DataTypeName(*a.dtype), " always)") : "", a.doc.empty() ? "" : ": ",
                    a.doc, "\n");
  }
  absl::StrAppend(&s, "  outputs:\n");
  for (const ArgDef& a : outputs_) {
    absl::StrAppend(&s, "    ", a.name, a.doc.empty() ? "" : ": ", a.doc, "\n");
  }
  absl::StrAppend(&s, "  attributes:\n");
  if (attrs_.empty()) absl::StrAppend(&s, "    (none)\n");
  for (const AttrDef& a : attrs_) {
    absl::StrAppend(&s, "    ", a.name, " (", AttrTypeName(a.type), ", ",
                    a.required ? std::string("required") : "default " + AttrValueToString(a.default_value),
                    ")", a.doc.empty() ? "" : ": ", a.doc, "\n");
  }
  if (requires_contiguous_inputs_) absl::StrAppend(&s, "  inputs must be contiguous\n");
  if (!declared_dtypes_.empty()) {
    std::vector<std::string> devs, dts;
    for (DeviceType d : declared_devices_) devs.emplace_back(DeviceTypeName(d));
    for (DataType d : declared_dtypes_) dts.emplace_back(DataTypeName(d));
    absl::StrAppend(&s, "  kernels (", key_arg_, " dtype): ", absl::StrJoin(devs, ", "), " x ",
                    absl::StrJoin(dts, ", "), "\n");
  }
  return s;
}

// ---- OpSchemaBuilder -----------------------------------------------------------------

OpSchemaBuilder::OpSchemaBuilder(absl::string_view name, const char* file, int line)
    : schema_(std::make_unique<OpSchema>(std::string(name))) {
  schema_->source_ = absl::StrCat(file, ":", line);
}

OpSchemaBuilder& OpSchemaBuilder::Input(absl::string_view name, absl::string_view doc) {
  schema_->inputs_.push_back({std::string(name), std::string(doc), false});
  return *this;
}
OpSchemaBuilder& OpSchemaBuilder::OptionalInput(absl::string_view name, absl::string_view doc) {
  schema_->inputs_.push_back({std::string(name), std::string(doc), true});
  return *this;
}
OpSchemaBuilder& OpSchemaBuilder::TypedInput(absl::string_view name, DataType dtype, absl::string_view doc) {
  schema_->inputs_.push_back({std::string(name), std::string(doc), false, dtype});
  return *this;
}
OpSchemaBuilder& OpSchemaBuilder::Output(absl::string_view name, absl::string_view doc) {
  schema_->outputs_.push_back({std::string(name), std::string(doc), false});
  return *this;
}
OpSchemaBuilder& OpSchemaBuilder::AddAttr(absl::string_view name, AttrType type, bool required,
                                          AttrValue v, absl::string_view doc) {
  schema_->attrs_.push_back({std::string(name), type, required, std::move(v), std::string(doc)});
  return *this;
}
OpSchemaBuilder& OpSchemaBuilder::SetInferFn(InferFn fn) {
  schema_->infer_fn_ = std::move(fn);
  return *this;
}
OpSchemaBuilder& OpSchemaBuilder::Doc(absl::string_view doc) {
  schema_->doc_ = std::string(doc);
  return *this;
}
OpSchemaBuilder& OpSchemaBuilder::RequireContiguousInputs() {
  schema_->requires_contiguous_inputs_ = true;
  return *this;
}
OpSchemaBuilder& OpSchemaBuilder::KeyDataTypeFrom(absl::string_view arg_name) {
  schema_->key_arg_ = std::string(arg_name);
  return *this;
}
OpSchemaBuilder& OpSchemaBuilder::Kernels(std::vector<DeviceType> devices,
                                          std::vector<DataType> dtypes) {
  schema_->declared_devices_ = std::move(devices);
  schema_->declared_dtypes_ = std::move(dtypes);
  return *this;
}

std::unique_ptr<OpSchema> OpSchemaBuilder::Build() {
  if (schema_->key_arg_.empty()) {
    if (!schema_->inputs_.empty()) {
      schema_->key_arg_ = schema_->inputs_[0].name;
    } else if (!schema_->outputs_.empty()) {
      schema_->key_arg_ = schema_->outputs_[0].name;
    }
  }
  schema_->key_input_index_ = schema_->InputIndex(schema_->key_arg_);
  schema_->key_output_index_ = schema_->key_input_index_ >= 0 ? -1 : schema_->OutputIndex(schema_->key_arg_);
  return std::move(schema_);
}

// ---- OpRegistry ------------------------------------------------------------------------

struct OpRegistry::Impl {
  mutable std::mutex mu;  // serializes registrations; lookups take no lock
  internal::AppendOnlyNameMap<OpSchema> ops;
  std::vector<absl::Status> errors;
};

OpRegistry::OpRegistry() : impl_(std::make_unique<Impl>()) {}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* r = new OpRegistry();
  return *r;
}

absl::Status OpRegistry::Register(std::unique_ptr<OpSchema> schema) {
  Impl* im = impl_.get();
  std::lock_guard<std::mutex> lock(im->mu);
  const std::string name = schema->name();
  if (name.empty()) return absl::InvalidArgumentError("KPS_REGISTER_OP: empty op name");
  if (!schema->infer_fn()) {
    return absl::InvalidArgumentError(absl::StrCat("op '", name, "' registered without SetInferFn"));
  }
  if (!schema->key_arg().empty() && schema->key_input_index() < 0 && schema->key_output_index() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("op '", name, "': KeyDataTypeFrom('", schema->key_arg(),
                                                   "') names no input or output"));
  }
  if (const OpSchema* present = im->ops.Find(name)) {
    return absl::AlreadyExistsError(absl::StrCat("op '", name, "' is registered twice (at ",
                                                 present->source(), " and ", schema->source(),
                                                 "); op names must be unique"));
  }
  im->ops.Insert(name, std::move(schema));
  return absl::OkStatus();
}

const OpSchema* OpRegistry::Find(absl::string_view name) const { return impl_->ops.Find(name); }

namespace internal {
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace internal

std::vector<std::string> OpRegistry::Suggest(absl::string_view name, size_t max) const {
  std::vector<std::pair<size_t, std::string>> scored;
  impl_->ops.ForEach([&](const std::string& op, const OpSchema*) {
    size_t d = internal::EditDistance(name, op);
    bool prefix = !name.empty() && (absl::string_view(op).substr(0, name.size()) == name ||
                                    name.substr(0, op.size()) == op);
    // Keep plausible typos only: at most a third of the name wrong, or a prefix.
    if (prefix || d <= std::max<size_t>(2, name.size() / 3)) scored.emplace_back(prefix ? 0 : d, op);
  });
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(scored[i].second);
  return out;
}

absl::StatusOr<const OpSchema*> OpRegistry::Lookup(absl::string_view name) const {
  if (const OpSchema* s = Find(name)) return s;
  std::vector<std::string> near = Suggest(name);
  std::string msg = absl::StrCat("unknown op '", name, "'");
  if (!near.empty()) {
    absl::StrAppend(&msg, "; did you mean ", absl::StrJoin(near, ", ", [](std::string* out, const std::string& s) {
      absl::StrAppend(out, "'", s, "'");
    }), "?");
  }
  absl::StrAppend(&msg, " (`kps list` shows all ", impl_->ops.size(), " ops)");
  return absl::NotFoundError(msg);
}

std::vector<const OpSchema*> OpRegistry::All() const {
  std::vector<const OpSchema*> out;
  impl_->ops.ForEach([&](const std::string&, const OpSchema* schema) { out.push_back(schema); });
  std::sort(out.begin(), out.end(), [](const OpSchema* a, const OpSchema* b) { return a->name() < b->name(); });
  return out;
}

std::vector<absl::Status> OpRegistry::registration_errors() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->errors;
}

void OpRegistry::AddRegistrationError(absl::Status s) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->errors.push_back(std::move(s));
}

namespace internal {
OpRegistrationTrigger::OpRegistrationTrigger(OpSchemaBuilder& builder) {
  absl::Status s = OpRegistry::Global().Register(builder.Build());
  if (!s.ok()) {
    KPS_LOG(ERROR) << "KPS_REGISTER_OP: " << s;
    OpRegistry::Global().AddRegistrationError(std::move(s));
  }
}
}  // namespace internal

}  // namespace kps
