// Op schemas: what an op takes, what it gives, and how its outputs are inferred.
//
//   KPS_REGISTER_OP("add")
//       .Input("x", "first operand")
//       .Input("y", "second operand, same shape and dtype as x")
//       .Output("out", "x + alpha * y")
//       .Attr<double>("alpha", 1.0, "scale of y")
//       .SetInferFn(InferSameShapeAndDtype)
//       .Kernels({DeviceType::kCpu, DeviceType::kCuda}, {DataType::kFloat32})
//       .Doc("Elementwise sum.");
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "registry/attr.h"
#include "registry/data_type.h"
#include "registry/device.h"
#include "registry/shape.h"
#include "registry/status.h"
#include "registry/tensor.h"

namespace kps {

struct ArgDef {
  std::string name;
  std::string doc;
  bool optional = false;
  // Set when the input always has this dtype whatever the others' (a bool predicate):
  // tools that make inputs (kps run) give it this dtype. The op's infer function still
  // checks it and writes the error.
  std::optional<DataType> dtype;
};

struct AttrDef {
  std::string name;
  AttrType type = AttrType::kFloat;
  bool required = false;
  AttrValue default_value;  // meaningful when !required
  std::string doc;
};

class OpSchema;
class KernelContext;

// Read access to a call's op, inputs and attributes: what inference functions, kernels
// and hob predicates all see.
class CallView {
 public:
  CallView(const OpSchema& schema, absl::Span<const Tensor> inputs,
           absl::Span<const AttrValue* const> attrs, DeviceType device)
      : schema_(schema), inputs_(inputs), attrs_(attrs), device_(device) {}

  const OpSchema& schema() const { return schema_; }
  DeviceType device() const { return device_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // Input i in schema order; undefined (defined() false) for an absent optional input.
  const Tensor& input(int i) const { return inputs_[i]; }
  // The input of that name; an undefined tensor if the schema has no such input.
  const Tensor& Input(absl::string_view name) const;
  // The value of attribute `name` (the call's, or the schema's default). Asking for an
  // attribute the schema lacks, or with the wrong type, is a bug in the op: it aborts.
  template <typename T>
  const T& Attr(absl::string_view name) const;
  const AttrValue& attr(int i) const { return *attrs_[i]; }

  // InvalidArgument prefixed with "op 'NAME': ".
  template <typename... Args>
  absl::Status Error(const Args&... args) const;

 protected:
  const OpSchema& schema_;
  absl::Span<const Tensor> inputs_;
  absl::Span<const AttrValue* const> attrs_;
  DeviceType device_;
};

// What an inference function reads (inputs and attributes) and writes (output metas).
class InferContext : public CallView {
 public:
  InferContext(const OpSchema& schema, absl::Span<const Tensor> inputs,
               absl::Span<const AttrValue* const> attrs, DeviceType device);

  void SetOutput(int i, Shape shape, DataType dtype);
  // An output whose shape depends on the input values (nonzero, masked_select): the call
  // allocates nothing for it, the kernel does (KernelContext::AllocateOutput) once it
  // knows the size, and a caller cannot pass one in with Call::Output.
  void SetDynamicOutput(int i, DataType dtype);
  const Shape& output_shape(int i) const { return output_shapes_[i]; }
  DataType output_dtype(int i) const { return output_dtypes_[i]; }

  bool output_set(int i) const { return output_set_[i]; }
  bool output_dynamic(int i) const { return output_dynamic_[i]; }

 private:
  absl::InlinedVector<Shape, 2> output_shapes_;
  absl::InlinedVector<DataType, 2> output_dtypes_;
  absl::InlinedVector<bool, 2> output_set_;
  absl::InlinedVector<bool, 2> output_dynamic_;
};

using InferFn = std::function<absl::Status(InferContext&)>;

class OpSchema {
 public:
  explicit OpSchema(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  const std::vector<ArgDef>& inputs() const { return inputs_; }
  const std::vector<ArgDef>& outputs() const { return outputs_; }
  const std::vector<AttrDef>& attrs() const { return attrs_; }
  const std::string& doc() const { return doc_; }
  const InferFn& infer_fn() const { return infer_fn_; }
  bool requires_contiguous_inputs() const { return requires_contiguous_inputs_; }
  // The argument whose dtype keys the kernel lookup: an input, else an output name.
  const std::string& key_arg() const { return key_arg_; }
  // key_arg()'s index among the inputs, else among the outputs (the other is -1); both
  // are resolved once at registration so the eager path does no name lookups for them.
  int key_input_index() const { return key_input_index_; }
  int key_output_index() const { return key_output_index_; }
  const std::vector<DeviceType>& declared_devices() const { return declared_devices_; }
  const std::vector<DataType>& declared_dtypes() const { return declared_dtypes_; }

  int InputIndex(absl::string_view name) const;   // -1 when absent
  int OutputIndex(absl::string_view name) const;  // -1 when absent
  int AttrIndex(absl::string_view name) const;    // -1 when absent
  // Multi-line human-readable schema, as `kps describe` prints it.
  std::string Describe() const;
  const std::string& source() const { return source_; }  // file:line of the registration

  // Cached pointer into the kernel registry (set on first lookup; see KernelRegistry).
  mutable std::atomic<const void*> kernel_table_cache{nullptr};

 private:
  friend class OpSchemaBuilder;
  std::string name_;
  std::vector<ArgDef> inputs_;
  std::vector<ArgDef> outputs_;
  std::vector<AttrDef> attrs_;
  std::string doc_;
  InferFn infer_fn_;
  bool requires_contiguous_inputs_ = false;
  std::string key_arg_;
  int key_input_index_ = -1;
  int key_output_index_ = -1;
  std::vector<DeviceType> declared_devices_;
  std::vector<DataType> declared_dtypes_;
  std::string source_;
};

// Fluent builder; KPS_REGISTER_OP commits it to the OpRegistry at static-init time.
class OpSchemaBuilder {
 public:
  OpSchemaBuilder(absl::string_view name, const char* file, int line);
  OpSchemaBuilder& Input(absl::string_view name, absl::string_view doc = "");
  OpSchemaBuilder& OptionalInput(absl::string_view name, absl::string_view doc = "");
  // An input of one fixed dtype (ArgDef::dtype), e.g. where's bool `cond`.
  OpSchemaBuilder& TypedInput(absl::string_view name, DataType dtype, absl::string_view doc = "");
  OpSchemaBuilder& Output(absl::string_view name, absl::string_view doc = "");
  // An attribute with a default value.
  template <typename T>
  OpSchemaBuilder& Attr(absl::string_view name, T default_value, absl::string_view doc = "") {
    return AddAttr(name, AttrTypeTraits<T>::kType, false, AttrValue(std::move(default_value)), doc);
  }
  // An attribute every call must set.
  template <typename T>
  OpSchemaBuilder& RequiredAttr(absl::string_view name, absl::string_view doc = "") {
    return AddAttr(name, AttrTypeTraits<T>::kType, true, AttrValue(T{}), doc);
  }
  OpSchemaBuilder& SetInferFn(InferFn fn);
  OpSchemaBuilder& Doc(absl::string_view doc);
  // Inputs must be contiguous; the call fails with an error naming the input otherwise.
  OpSchemaBuilder& RequireContiguousInputs();
  // Kernels are looked up by this argument's dtype (default: the first input, or the
  // first output when the op has no inputs).
  OpSchemaBuilder& KeyDataTypeFrom(absl::string_view arg_name);
  // The (device, dtype) kernels this op promises; a test checks each one is registered.
  OpSchemaBuilder& Kernels(std::vector<DeviceType> devices, std::vector<DataType> dtypes);

  std::unique_ptr<OpSchema> Build();

 private:
  OpSchemaBuilder& AddAttr(absl::string_view name, AttrType type, bool required, AttrValue v,
                           absl::string_view doc);
  std::unique_ptr<OpSchema> schema_;
};

// Registration may happen at any time, also while other threads call ops: lookups take
// no lock. Schemas are never removed, so code that registered them must stay loaded.
class OpRegistry {
 public:
  static OpRegistry& Global();
  // Fails if an op of that name exists.
  absl::Status Register(std::unique_ptr<OpSchema> schema);
  // nullptr when absent.
  const OpSchema* Find(absl::string_view name) const;
  // Find, or NotFound naming the closest registered ops.
  absl::StatusOr<const OpSchema*> Lookup(absl::string_view name) const;
  // Sorted by name.
  std::vector<const OpSchema*> All() const;
  // Up to `max` registered names closest to `name` (edit distance, then prefix).
  std::vector<std::string> Suggest(absl::string_view name, size_t max = 3) const;
  // Errors of registrations made at static-init time (duplicate names ...).
  std::vector<absl::Status> registration_errors() const;
  void AddRegistrationError(absl::Status s);

 private:
  OpRegistry();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

namespace internal {
// Levenshtein distance, for "did you mean" suggestions.
size_t EditDistance(absl::string_view a, absl::string_view b);
struct OpRegistrationTrigger {
  OpRegistrationTrigger(OpSchemaBuilder& builder);  // NOLINT: implicit by design
  OpRegistrationTrigger(OpSchemaBuilder&& builder) : OpRegistrationTrigger(builder) {}  // NOLINT
};
[[noreturn]] void DieOnAttrMisuse(const OpSchema& schema, absl::string_view name,
                                 AttrType want, const AttrValue* have);
}  // namespace internal

#define KPS_REGISTER_OP(name)                                                                 \
  static ::kps::internal::OpRegistrationTrigger KPS_CONCAT(kps_op_registration_, __COUNTER__) = \
      ::kps::OpSchemaBuilder(name, __FILE__, __LINE__)

// ---- implementation ------------------------------------------------------------------

template <typename T>
const T& CallView::Attr(absl::string_view name) const {
  int i = schema_.AttrIndex(name);
  const T* v = i < 0 ? nullptr : std::get_if<T>(attrs_[i]);
  if (v == nullptr) {
    internal::DieOnAttrMisuse(schema_, name, AttrTypeTraits<T>::kType, i < 0 ? nullptr : attrs_[i]);
  }
  return *v;
}

template <typename... Args>
absl::Status CallView::Error(const Args&... args) const {
  return absl::InvalidArgumentError(absl::StrCat("op '", schema_.name(), "': ", args...));
}

}  // namespace kps
