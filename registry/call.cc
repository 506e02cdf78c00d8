#include "registry/call.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "registry/kernel.h"
#include "registry/status.h"

namespace kps {
namespace {

template <typename Defs, typename NameOf>
std::string ListNames(const Defs& defs, NameOf name_of) {
  if (defs.empty()) return "none";
  return absl::StrJoin(defs, ", ", [&](std::string* out, const auto& d) { absl::StrAppend(out, name_of(d)); });
}

std::string AttrSignature(const AttrDef& a) {
  return absl::StrCat(a.name, " (", AttrTypeName(a.type), a.required ? ", required" : "", ")");
}

// A caller-provided output must be exactly what the op would have allocated.
// A device of index -1 (a CUDA call that takes the current GPU) matches every GPU.
absl::Status CheckGivenOutput(const OpSchema& schema, int i, const Tensor& t, const InferContext& infer,
                              Device device) {
  const std::string& name = schema.outputs()[i].name;
  const bool other_gpu = device.index >= 0 && t.device_index() != device.index;
  if (t.device() != device.type || other_gpu || t.dtype() != infer.output_dtype(i) ||
      t.shape() != infer.output_shape(i)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", schema.name(), "': output '", name, "' is ", DataTypeName(t.dtype()), t.shape().ToString(),
        " on ", DeviceName(t.place()), " but the call produces ", DataTypeName(infer.output_dtype(i)),
        infer.output_shape(i).ToString(), " on ", DeviceName(device)));
  }
  if (!t.is_contiguous()) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", schema.name(), "': output '", name, "' must be contiguous"));
  }
  return absl::OkStatus();
}

}  // namespace

Call::Call(absl::string_view op_name) {
  auto schema = OpRegistry::Global().Lookup(op_name);
  if (!schema.ok()) {
    error_ = schema.status();
    return;
  }
  schema_ = *schema;
  inputs_.resize(schema_->inputs().size());
}

Call& Call::Input(absl::string_view name, const Tensor& tensor) {
  if (!error_.ok()) return *this;
  int i = schema_->InputIndex(name);
  if (i < 0) {
    std::string msg = absl::StrCat("op '", schema_->name(), "' has no input '", name, "'");
    for (const ArgDef& a : schema_->inputs()) {
      if (internal::EditDistance(a.name, name) <= 2) {
        absl::StrAppend(&msg, "; did you mean '", a.name, "'?");
        break;
      }
    }
    absl::StrAppend(&msg, " Its inputs: ", ListNames(schema_->inputs(), [](const ArgDef& a) { return a.name; }));
    error_ = absl::InvalidArgumentError(msg);
  } else if (inputs_[i].defined()) {
    error_ = absl::InvalidArgumentError(
        absl::StrCat("op '", schema_->name(), "': input '", name, "' is given twice"));
  } else if (!tensor.defined()) {
    error_ = absl::InvalidArgumentError(
        absl::StrCat("op '", schema_->name(), "': input '", name, "' is an undefined tensor"));
  } else {
    inputs_[i] = tensor;
  }
  return *this;
}

Call& Call::Output(absl::string_view name, const Tensor& tensor) {
  if (!error_.ok()) return *this;
  int i = schema_->OutputIndex(name);
  if (i < 0) {
    error_ = absl::InvalidArgumentError(absl::StrCat(
        "op '", schema_->name(), "' has no output '", name, "'; its outputs: ",
        ListNames(schema_->outputs(), [](const ArgDef& a) { return a.name; })));
    return *this;
  }
  if (!tensor.defined()) {
    error_ = absl::InvalidArgumentError(
        absl::StrCat("op '", schema_->name(), "': output '", name, "' is an undefined tensor"));
    return *this;
  }
  if (given_outputs_.empty()) given_outputs_.resize(schema_->outputs().size());
  given_outputs_[i] = tensor;
  return *this;
}

Call& Call::SetAttr(absl::string_view name, AttrValue value) {
  if (!error_.ok()) return *this;
  int i = schema_->AttrIndex(name);
  if (i < 0) {
    std::string msg = absl::StrCat("op '", schema_->name(), "' has no attribute '", name, "'");
    for (const AttrDef& a : schema_->attrs()) {
      // A near miss (same letters but one or two) is most likely a typo.
      if (internal::EditDistance(a.name, name) <= 2) {
        absl::StrAppend(&msg, "; did you mean '", a.name, "'?");
        break;
      }
    }
    absl::StrAppend(&msg, " Its attributes: ", ListNames(schema_->attrs(), AttrSignature));
    error_ = absl::InvalidArgumentError(msg);
    return *this;
  }
  const AttrDef& def = schema_->attrs()[i];
  if (def.type == AttrType::kFloat && TypeOfAttr(value) == AttrType::kInt) {
    value = AttrValue(static_cast<double>(std::get<int64_t>(value)));  // 2 means 2.0
  }
  if (TypeOfAttr(value) != def.type) {
    error_ = absl::InvalidArgumentError(absl::StrCat(
        "op '", schema_->name(), "': attribute '", name, "' must be ", AttrTypeName(def.type),
        ", got ", AttrTypeName(TypeOfAttr(value)), " ", AttrValueToString(value)));
    return *this;
  }
  for (int slot : attr_slots_) {
    if (slot == i) {
      error_ = absl::InvalidArgumentError(
          absl::StrCat("op '", schema_->name(), "': attribute '", name, "' is set twice"));
      return *this;
    }
  }
  attr_slots_.push_back(i);
  attr_values_.push_back(std::move(value));
  return *this;
}

Call& Call::OnStream(const Stream& stream) {
  stream_ = stream;
  stream_set_ = true;
  return *this;
}

Call& Call::OnDevice(Device device) {
  device_ = device;
  device_set_ = true;
  return *this;
}

namespace {

// The steps of Call::Run, in order. Each returns the first problem it finds, naming the op.

// 1. The call's device: the one every input is on (an input on another device, or on
// another GPU, is an error), else OnDevice's, else the stream's type, else the CPU. The
// GPU index stays -1 when no input names one (OnDevice(kCuda) for an op without inputs).
// Also checks that every required input is present and, where the schema asks,
// contiguous.
absl::Status ResolveDevice(const OpSchema& schema, absl::Span<const Tensor> inputs, bool device_set,
                           Device device_arg, bool stream_set, const Stream& stream, Device* device_out) {
  const std::string& op = schema.name();
  bool have_device = device_set;
  Device device = device_set ? device_arg : Device(stream_set ? stream.device() : DeviceType::kCpu);
  const Tensor* first = nullptr;  // the input the device (and its index) came from
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const ArgDef& arg = schema.inputs()[i];
    if (!t.defined()) {
      if (arg.optional) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op, "': missing input '", arg.name, "' (takes ", schema.inputs().size(),
          " inputs: ", ListNames(schema.inputs(), [](const ArgDef& a) { return a.name; }), ")"));
    }
    const Device at = t.place();
    if (!have_device) {
      device = at;
      have_device = true;
      first = &t;
    } else if (at.type != device.type || (device.index >= 0 && at.index != device.index)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op, "': input '", arg.name, "' is on ", DeviceName(at), " but ",
          first != nullptr ? absl::StrCat("input '", schema.inputs()[first - inputs.data()].name, "'")
                           : std::string("the call"),
          " is on ", DeviceName(device)));
    } else if (first == nullptr || (device.index < 0 && at.index >= 0)) {
      device = at;  // OnDevice(kCuda) takes the inputs' GPU
      first = &t;
    }
    if (schema.requires_contiguous_inputs() && !t.is_contiguous()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op, "': input '", arg.name, "' is not contiguous (shape ", t.shape().ToString(),
          ", strides ", DimsToString(t.strides()), "); this op needs contiguous inputs: copy it "
          "with kps::ops::Contiguous first"));
    }
  }
  *device_out = device;
  return absl::OkStatus();
}

// 2. The stream (OnStream's, else the device's default) must be of the call's device.
absl::Status CheckStream(const OpSchema& schema, DeviceType device, const Stream& stream) {
  if (stream.device() != device) {
    return absl::InvalidArgumentError(absl::StrCat("op '", schema.name(), "': the call runs on ",
                                                   DeviceTypeName(device), " but its stream is a ",
                                                   DeviceTypeName(stream.device()), " stream"));
  }
  return absl::OkStatus();
}

// The GPU a CUDA stream belongs to: the one recorded in it, else the runtime's answer for
// a stream the caller created (cudaStreamGetDevice, CUDA 12.8+; one runtime call, made
// only with several GPUs); -1 for the legacy and per-thread default streams, which
// belong to whichever GPU is current.
absl::StatusOr<int> StreamDeviceIndex(const OpSchema& schema, const Stream& stream) {
  if (stream.device_index() >= 0) return stream.device_index();
  const cudaStream_t h = stream.cuda_stream();
  if (h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread) return -1;
  if (CudaDeviceCount() <= 1) return -1;  // one GPU: every stream is cuda:0's; no need to ask
#if CUDART_VERSION >= 12080
  int device = -1;
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamGetDevice(h, &device),
                           absl::StrCat("op '", schema.name(), "': cudaStreamGetDevice of its stream"));
  return device;
#else
  return -1;
#endif
}

// 2b. A CUDA call's GPU, when no input named it: a given output's, else the stream's, else
// (index -1) the current one. Then the stream must be that GPU's, where its GPU is known.
absl::Status ResolveGpu(const OpSchema& schema, absl::Span<const Tensor> given, const Stream& stream,
                        Device* device) {
  if (device->index < 0) {
    for (const Tensor& t : given) {
      if (t.defined() && t.device() == DeviceType::kCuda) {
        device->index = t.device_index();
        break;
      }
    }
  }
  KPS_ASSIGN_OR_RETURN(const int stream_index, StreamDeviceIndex(schema, stream));
  if (device->index < 0) {
    device->index = stream_index;
  } else if (stream_index >= 0 && stream_index != device->index) {
    return absl::InvalidArgumentError(absl::StrCat("op '", schema.name(), "': the call runs on ",
                                                   DeviceName(*device), " but its stream is on cuda:", stream_index));
  }
  return absl::OkStatus();
}

// 3. Every attribute's value (`attrs` holds a null per attribute): the call's, else the
// schema's default; required ones must be set.
absl::Status ResolveAttrs(const OpSchema& schema, absl::Span<const int> slots, absl::Span<const AttrValue> values,
                          absl::Span<const AttrValue*> attrs) {
  const size_t num_attrs = attrs.size();
  for (size_t k = 0; k < slots.size(); ++k) attrs[slots[k]] = &values[k];
  for (size_t i = 0; i < num_attrs; ++i) {
    if (attrs[i] != nullptr) continue;
    const AttrDef& def = schema.attrs()[i];
    if (def.required) {
      return absl::InvalidArgumentError(absl::StrCat("op '", schema.name(), "': missing required attribute '",
                                                     def.name, "' (", AttrTypeName(def.type), ")"));
    }
    attrs[i] = &def.default_value;
  }
  return absl::OkStatus();
}

// 4. The outputs' shapes and dtypes, from the schema's infer function, each under the
// one shape rule before any kernel sizes a loop or a buffer from it (a broadcast of small
// inputs can describe more than 2^63 elements).
absl::Status InferOutputs(const OpSchema& schema, InferContext& infer) {
  KPS_RETURN_IF_ERROR(schema.infer_fn()(infer));
  for (int i = 0; i < static_cast<int>(schema.outputs().size()); ++i) {
    if (!infer.output_set(i)) {
      return absl::InternalError(absl::StrCat("op '", schema.name(), "': its infer function did not set output '",
                                              schema.outputs()[i].name, "'"));
    }
    if (!infer.output_dynamic(i) && !IsValidShape(infer.output_shape(i).dims())) {
      return ValidateShape(infer.output_shape(i),
                           absl::StrCat("op '", schema.name(), "': output '", schema.outputs()[i].name, "'"));
    }
  }
  return absl::OkStatus();
}

// 5. The dtype kernels are keyed by: the schema's key argument's (an op with neither
// inputs nor outputs has no dtype: its kernels register as float32).
DataType KeyDataType(const OpSchema& schema, absl::Span<const Tensor> inputs, const InferContext& infer) {
  const int key_input = schema.key_input_index();
  if (key_input >= 0 && inputs[key_input].defined()) return inputs[key_input].dtype();
  if (schema.key_output_index() >= 0) return infer.output_dtype(schema.key_output_index());
  if (!schema.outputs().empty()) return infer.output_dtype(0);  // an absent optional key input
  return DataType::kFloat32;
}

// 6. The output tensors (`outputs` holds one undefined tensor per output): the caller's
// (checked against the inference), else new ones on the call's stream; dynamic outputs
// stay undefined for the kernel to allocate. New outputs go on the current GPU, which Run
// made the call's.
absl::Status PrepareOutputs(const OpSchema& schema, const InferContext& infer, absl::Span<const Tensor> given,
                            Device device, const Stream& stream, std::vector<Tensor>* outputs) {
  for (int i = 0; i < static_cast<int>(outputs->size()); ++i) {
    const bool is_given = !given.empty() && given[i].defined();
    if (infer.output_dynamic(i)) {
      if (is_given) {
        return absl::InvalidArgumentError(absl::StrCat(
            "op '", schema.name(), "': output '", schema.outputs()[i].name,
            "' has a shape that depends on the input values, so it cannot be given; take the one the call returns"));
      }
      continue;
    }
    if (is_given) {
      KPS_RETURN_IF_ERROR(CheckGivenOutput(schema, i, given[i], infer, device));
      (*outputs)[i] = given[i];
      continue;
    }
    KPS_ASSIGN_OR_RETURN((*outputs)[i],
                         Tensor::Empty(infer.output_shape(i), infer.output_dtype(i), device.type, stream));
  }
  return absl::OkStatus();
}

// 7. The kernel, with its temporary buffer (freed in stream order after it), and the
// check that it allocated every dynamic output.
absl::Status RunKernel(const KernelDef& def, const CallView& view, KernelContext* ctx) {
  std::shared_ptr<Storage> tmp;
  if (def.infer_tmp_size) {
    const size_t bytes = def.infer_tmp_size(view);
    if (bytes > 0) {
      KPS_ASSIGN_OR_RETURN(tmp, Storage::Allocate(bytes, ctx->device(), ctx->stream()));
      ctx->set_tmp_buffer(tmp->data(), bytes);
    }
  }
  KPS_RETURN_IF_ERROR(def.GetKernel()->Compute(ctx));
  for (int i = 0; i < ctx->num_outputs(); ++i) {
    if (!ctx->output(i).defined()) {
      return absl::InternalError(absl::StrCat("op '", view.schema().name(), "': its kernel (", def.source,
                                              ") did not allocate the dynamic output '",
                                              view.schema().outputs()[i].name, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> Call::Run() {
  KPS_RETURN_IF_ERROR(error_);
  const OpSchema& schema = *schema_;
  Device device;
  KPS_RETURN_IF_ERROR(ResolveDevice(schema, inputs_, device_set_, device_, stream_set_, stream_, &device));
  const Stream stream = stream_set_ ? stream_ : Stream::Default(device.type);
  KPS_RETURN_IF_ERROR(CheckStream(schema, device.type, stream));
  // The kernel, its outputs and its temporaries live on the call's GPU; the caller's
  // current device comes back when Run returns.
  CudaDeviceGuard guard;
  if (device.type == DeviceType::kCuda) {
    KPS_RETURN_IF_ERROR(ResolveGpu(schema, given_outputs_, stream, &device));
    if (device.index >= 0) {
      const absl::Status set = guard.Set(device.index);
      if (!set.ok()) return absl::Status(set.code(), absl::StrCat("op '", schema.name(), "': ", set.message()));
    }
  }
  absl::InlinedVector<const AttrValue*, 4> attrs(schema.attrs().size(), nullptr);
  KPS_RETURN_IF_ERROR(ResolveAttrs(schema, attr_slots_, attr_values_, absl::MakeSpan(attrs)));
  InferContext infer(schema, inputs_, attrs, device.type);
  KPS_RETURN_IF_ERROR(InferOutputs(schema, infer));
  CallView view(schema, inputs_, attrs, device.type);
  KPS_ASSIGN_OR_RETURN(const KernelDef* def,
                       KernelRegistry::Global().Select(view, KeyDataType(schema, inputs_, infer)));
  std::vector<Tensor> outputs(schema.outputs().size());
  KPS_RETURN_IF_ERROR(PrepareOutputs(schema, infer, given_outputs_, device, stream, &outputs));
  KernelContext ctx(schema, inputs_, attrs, device.type, absl::MakeSpan(outputs), stream);
  KPS_RETURN_IF_ERROR(RunKernel(*def, view, &ctx));
  return outputs;
}

absl::StatusOr<std::vector<Call::OutputSpec>> Call::Infer() {
  KPS_RETURN_IF_ERROR(error_);
  const OpSchema& schema = *schema_;
  Device device;
  KPS_RETURN_IF_ERROR(ResolveDevice(schema, inputs_, device_set_, device_, stream_set_, stream_, &device));
  absl::InlinedVector<const AttrValue*, 4> attrs(schema.attrs().size(), nullptr);
  KPS_RETURN_IF_ERROR(ResolveAttrs(schema, attr_slots_, attr_values_, absl::MakeSpan(attrs)));
  InferContext infer(schema, inputs_, attrs, device.type);
  KPS_RETURN_IF_ERROR(InferOutputs(schema, infer));
  std::vector<OutputSpec> specs(schema.outputs().size());
  for (int i = 0; i < static_cast<int>(specs.size()); ++i) {
    specs[i].dynamic = infer.output_dynamic(i);
    if (!specs[i].dynamic) specs[i].shape = infer.output_shape(i);
    specs[i].dtype = infer.output_dtype(i);
  }
  return specs;
}

absl::StatusOr<Tensor> Call::RunOne() {
  if (error_.ok() && schema_->outputs().size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("op '", schema_->name(), "' has ",
                                                   schema_->outputs().size(),
                                                   " outputs; use Run() instead of RunOne()"));
  }
  KPS_ASSIGN_OR_RETURN(std::vector<Tensor> outs, Run());
  return std::move(outs[0]);
}

}  // namespace kps
