// kps._kps: the bridge between Python arrays and kps::Call. Arrays come in through DLPack
// (nanobind's ndarray: any object with __dlpack__, a DLPack capsule, or a buffer) without
// a copy, and outputs go back as arrays of the caller's framework that own the KPS tensor
// (freed, in stream order, when the array goes). python/kps/__init__.py is the public API
// over this module: it picks the framework, the stream and the bfloat16 views.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdint>
#include <tuple>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "dist/communicator.h"
#include "dist/rendezvous.h"
#include "registry/allocator.h"
#include "registry/attr.h"
#include "registry/call.h"
#include "registry/data_type.h"
#include "registry/device.h"
#include "registry/op_schema.h"
#include "registry/status.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace nb = nanobind;

namespace kps {
namespace python {
namespace {

// A Status as the Python exception its code stands for, with the message unchanged.
[[noreturn]] void Raise(const absl::Status& s) {
  PyObject* type = PyExc_RuntimeError;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      type = PyExc_ValueError;
      break;
    case absl::StatusCode::kNotFound:
      type = PyExc_LookupError;
      break;
    case absl::StatusCode::kResourceExhausted:
      type = PyExc_MemoryError;
      break;
    case absl::StatusCode::kUnimplemented:
      type = PyExc_NotImplementedError;
      break;
    case absl::StatusCode::kPermissionDenied:
      type = PyExc_PermissionError;
      break;
    case absl::StatusCode::kDeadlineExceeded:
      type = PyExc_TimeoutError;
      break;
    default:
      break;
  }
  PyErr_SetString(type, std::string(s.message()).c_str());
  throw nb::python_error();
}

template <typename T>
T ValueOrRaise(absl::StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return *std::move(v);
}

nb::dlpack::dtype ToDlpack(DataType dt) {
  using nb::dlpack::dtype_code;
  const uint8_t bits = static_cast<uint8_t>(8 * DataTypeSize(dt));
  switch (dt) {
    case DataType::kBool:
      return {static_cast<uint8_t>(dtype_code::Bool), 8, 1};
    case DataType::kUInt8:
      return {static_cast<uint8_t>(dtype_code::UInt), 8, 1};
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
      return {static_cast<uint8_t>(dtype_code::Int), bits, 1};
    case DataType::kBFloat16:
      return {static_cast<uint8_t>(dtype_code::Bfloat), 16, 1};
    default:
      return {static_cast<uint8_t>(dtype_code::Float), bits, 1};
  }
}

std::optional<DataType> FromDlpack(nb::dlpack::dtype d) {
  using nb::dlpack::dtype_code;
  if (d.lanes == 1) {
    switch (static_cast<dtype_code>(d.code)) {
      case dtype_code::Bool:
        if (d.bits == 8) return DataType::kBool;
        break;
      case dtype_code::UInt:
        if (d.bits == 8) return DataType::kUInt8;
        break;
      case dtype_code::Int:
        if (d.bits == 8) return DataType::kInt8;
        if (d.bits == 16) return DataType::kInt16;
        if (d.bits == 32) return DataType::kInt32;
        if (d.bits == 64) return DataType::kInt64;
        break;
      case dtype_code::Float:
        if (d.bits == 16) return DataType::kFloat16;
        if (d.bits == 32) return DataType::kFloat32;
        if (d.bits == 64) return DataType::kFloat64;
        break;
      case dtype_code::Bfloat:
        if (d.bits == 16) return DataType::kBFloat16;
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

// A zero-copy view of an array given by its DLPack fields; `release` frees the array's
// hold on its memory, once the last tensor viewing it goes (with the GIL held: that may be
// after the call, on any thread). `as` reinterprets the elements (a bfloat16 NumPy array
// arrives as its uint16 bits). `what()` names the array in errors (built only then: a
// call's inputs take this path every time).
template <typename What>
absl::StatusOr<Tensor> FromParts(void* data, int device_type, int device_id, nb::dlpack::dtype dtype, int rank,
                                 const int64_t* shape,
                                 const int64_t* strides_or_null, std::function<void()> release,
                                 const std::optional<std::string>& as, What what) {
  auto fail = [&](absl::Status s) {
    if (release) release();
    return s;
  };
  DeviceType device;
  if (device_type == nb::device::cpu::value) {
    device = DeviceType::kCpu;
  } else if (device_type == nb::device::cuda::value || device_type == nb::device::cuda_managed::value) {
    device = DeviceType::kCuda;
  } else {
    return fail(absl::InvalidArgumentError(
        absl::StrCat(what(), " lives on DLPack device type ", device_type, "; KPS takes CPU and CUDA arrays")));
  }
  DataType dt;
  if (as) {
    absl::StatusOr<DataType> parsed = ParseDataType(*as);
    if (!parsed.ok()) return fail(parsed.status());
    dt = *parsed;
    if (DataTypeSize(dt) * 8 != dtype.bits) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat(what(), ": cannot view ", dtype.bits, "-bit elements as ", *as)));
    }
  } else {
    const std::optional<DataType> from = FromDlpack(dtype);
    if (!from) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          what(), " has a dtype KPS does not take (DLPack code ", dtype.code, ", ", dtype.bits, " bits, ",
          dtype.lanes, " lanes); KPS takes bool, int8, uint8, int16, int32, int64, float16, bfloat16, float32, "
          "float64")));
    }
    dt = *from;
  }
  DimVector dims(rank), strides(rank);
  int64_t hi = 0, numel = 1;
  for (int d = rank - 1; d >= 0; --d) {
    dims[d] = shape[d];
    strides[d] = strides_or_null != nullptr ? strides_or_null[d] : (d == rank - 1 ? 1 : strides[d + 1] * dims[d + 1]);
    numel *= dims[d];
  }
  for (int d = 0; d < rank && numel > 0; ++d) {
    if (strides[d] < 0 && dims[d] > 1) {
      return fail(absl::InvalidArgumentError(absl::StrCat(what(), " has a negative stride (", strides[d],
                                                          " along dim ", d, "); KPS views take strides >= 0: pass a copy")));
    }
    hi += strides[d] * (dims[d] - 1);
  }
  const size_t bytes = numel > 0 ? static_cast<size_t>((hi + 1) * static_cast<int64_t>(DataTypeSize(dt))) : 0;
  // DLPack's device_id is the CUDA ordinal: the tensor's GPU (cuda:N).
  std::shared_ptr<Storage> storage =
      Storage::Wrap(data, bytes, Device(device, device_id), [release = std::move(release)](void*) {
    if (release) {
      nb::gil_scoped_acquire gil;
      release();
    }
  });
  return Tensor::FromStorage(std::move(storage), dt, Shape(dims), strides, 0);
}

// A zero-copy view of `a` (kept alive by the tensor's storage).
template <typename What>
absl::StatusOr<Tensor> FromArray(const nb::ndarray<>& a, const std::optional<std::string>& as, What what) {
  const int rank = static_cast<int>(a.ndim());
  DimVector shape(rank), strides(rank);
  for (int d = 0; d < rank; ++d) {
    shape[d] = static_cast<int64_t>(a.shape(d));
    strides[d] = static_cast<int64_t>(a.stride(d));
  }
  auto* keep = new nb::ndarray<>(a);
  return FromParts(const_cast<void*>(a.data()), a.device_type(), a.device_id(), a.dtype(), rank, shape.data(),
                   strides.data(),
                   [keep] { delete keep; }, as, what);
}

// DLPack's C ABI (0.8 and later, unversioned capsules named "dltensor"), which the short
// path reads and writes itself: nanobind's ndarray round trip costs more than the call.
namespace dl {
struct Device {
  int32_t device_type;
  int32_t device_id;
};
struct DLTensor {
  void* data;
  Device device;
  int32_t ndim;
  nb::dlpack::dtype dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct Managed {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(Managed*);
};

// A KPS tensor as a DLPack capsule that owns it (freed when the consumer is done, or with
// the capsule if nobody consumes it).
struct Exported {
  Managed managed;
  Tensor tensor;
  DimVector shape, strides;
};

nb::object Export(Tensor t) {
  auto* e = new Exported{};
  e->tensor = std::move(t);
  const Tensor& x = e->tensor;
  e->shape.assign(x.shape().dims().begin(), x.shape().dims().end());
  e->strides.assign(x.strides().begin(), x.strides().end());
  const int device_id = x.device() == DeviceType::kCuda ? x.device_index() : 0;
  e->managed.dl_tensor = {x.numel() > 0 ? const_cast<void*>(x.raw_data()) : nullptr,
                          {x.device() == DeviceType::kCuda ? nb::device::cuda::value : nb::device::cpu::value,
                           device_id},
                          x.rank(),
                          ToDlpack(x.dtype()),
                          e->shape.data(),
                          e->strides.data(),
                          0};
  e->managed.manager_ctx = e;
  e->managed.deleter = [](Managed* m) { delete static_cast<Exported*>(m->manager_ctx); };
  PyObject* capsule = PyCapsule_New(&e->managed, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {  // never consumed
      auto* m = static_cast<Managed*>(PyCapsule_GetPointer(c, "dltensor"));
      m->deleter(m);
    }
  });
  if (capsule == nullptr) {
    delete e;
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

// Takes over an unconsumed "dltensor" capsule (renaming it, as a consumer does), or
// returns nullptr when `capsule` is not one.
Managed* Consume(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return nullptr;
  auto* m = static_cast<Managed*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (m == nullptr || PyCapsule_SetName(capsule, "used_dltensor") != 0) {
    PyErr_Clear();
    return nullptr;
  }
  return m;
}
}  // namespace dl

// `t` as an array of `framework` ("numpy", "torch", "cupy", "jax", "" for a kps.Tensor
// or "capsule" for a DLPack capsule) that owns it. bf16_bits: bfloat16 goes out as its uint16 bits (NumPy
// has no bfloat16; the Python side views them as ml_dtypes.bfloat16).
nb::object ToArray(Tensor t, const std::string& framework, bool bf16_bits, uintptr_t stream = 0);

// An output with no framework to return it in (kps.Tensor's core): a DLPack producer
// that can be consumed any number of times. `stream`: where KPS produced it.
struct PyTensor {
  Tensor tensor;
  uintptr_t stream = 0;

  std::vector<int64_t> shape() const { return {tensor.shape().dims().begin(), tensor.shape().dims().end()}; }
  std::string dtype() const { return std::string(DataTypeName(tensor.dtype())); }
  std::string device() const { return DeviceName(tensor.place()); }  // "cpu", "cuda:1"
  std::pair<int, int> DlpackDevice() const {
    const int id = tensor.device() == DeviceType::kCuda ? tensor.device_index() : 0;
    return {tensor.device() == DeviceType::kCuda ? nb::device::cuda::value : nb::device::cpu::value, id};
  }
  // DLPack's rule: the consumer's `stream` waits for the work that produced the tensor.
  nb::object Dlpack(nb::handle consumer) const {
    if (tensor.device() == DeviceType::kCuda && !consumer.is_none()) {
      const intptr_t s = nb::cast<intptr_t>(consumer);
      const auto to = reinterpret_cast<cudaStream_t>(s == 1 || s == 2 ? 0 : s);  // 1, 2: legacy, per-thread default
      if (s != -1 && reinterpret_cast<uintptr_t>(to) != stream) {
        cudaEvent_t ev;
        if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) == cudaSuccess) {
          cudaEventRecord(ev, reinterpret_cast<cudaStream_t>(stream));
          cudaStreamWaitEvent(to, ev, 0);
          cudaEventDestroy(ev);
        }
      }
    }
    return dl::Export(tensor);
  }
};

nb::object ToArray(Tensor t, const std::string& framework, bool bf16_bits, uintptr_t stream) {
  const int rank = t.rank();
  std::vector<size_t> shape(rank);
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  for (int d = 0; d < rank; ++d) shape[d] = static_cast<size_t>(t.shape()[d]);
  nb::dlpack::dtype dt = ToDlpack(t.dtype());
  if (bf16_bits && t.dtype() == DataType::kBFloat16) dt = {static_cast<uint8_t>(nb::dlpack::dtype_code::UInt), 16, 1};
  const int device_type = t.device() == DeviceType::kCuda ? nb::device::cuda::value : nb::device::cpu::value;
  const int device_id = t.device() == DeviceType::kCuda ? t.device_index() : 0;
  if (framework == "capsule") return dl::Export(std::move(t));
  void* data = t.numel() > 0 ? t.raw_data() : nullptr;
  auto* owned = new Tensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  auto make = [&](auto framework_tag) {
    using F = decltype(framework_tag);
    nb::ndarray<F> a(data, shape.size(), shape.data(), owner, strides.data(), dt, device_type, device_id);
    return nb::cast(a, nb::rv_policy::reference);
  };
  if (framework == "numpy") return make(nb::numpy());
  if (framework == "torch") return make(nb::pytorch());
  if (framework == "cupy") return make(nb::cupy());
  if (framework == "jax") return make(nb::jax());
  return nb::cast(PyTensor{*owned, stream});  // "": a kps.Tensor
}


// The Python value `v` as attribute `def` of `op`.
absl::StatusOr<AttrValue> ToAttr(const std::string& op, const AttrDef& def, nb::handle v) {
  auto wrong = [&](const char* want) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op, "': attribute '", def.name, "' takes ", want, ", not ",
                                                   nb::cast<std::string>(nb::str(v.type().attr("__name__")))));
  };
  auto as_int = [&](nb::handle h, int64_t* out) {
    if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr())) return false;
    try {
      *out = nb::cast<int64_t>(nb::int_(h));
    } catch (const std::exception&) {
      return false;
    }
    return true;
  };
  switch (def.type) {
    case AttrType::kBool:
      if (!PyBool_Check(v.ptr())) return wrong("a bool");
      return AttrValue(nb::cast<bool>(v));
    case AttrType::kInt: {
      int64_t i;
      if (!as_int(v, &i)) return wrong("an int");
      return AttrValue(i);
    }
    case AttrType::kFloat:
      if (PyBool_Check(v.ptr()) || !(PyFloat_Check(v.ptr()) || PyIndex_Check(v.ptr()))) return wrong("a float");
      return AttrValue(nb::cast<double>(nb::float_(v)));
    case AttrType::kString:
      if (!nb::isinstance<nb::str>(v)) return wrong("a str");
      return AttrValue(nb::cast<std::string>(v));
    case AttrType::kInts: {
      std::vector<int64_t> ints;
      int64_t i;
      if (as_int(v, &i)) {
        ints.push_back(i);
      } else if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
        for (nb::handle e : v) {
          if (!as_int(e, &i)) return wrong("a list of ints");
          ints.push_back(i);
        }
      } else {
        return wrong("a list of ints");
      }
      return AttrValue(std::move(ints));
    }
    case AttrType::kDataType: {
      // A name; a PyTorch dtype by its str() ("torch.float32"); anything NumPy takes as a
      // dtype (np.float32, np.dtype("f4"), ml_dtypes.bfloat16) by numpy.dtype(v).name.
      std::string name;
      if (nb::isinstance<nb::str>(v)) {
        name = nb::cast<std::string>(v);
      } else {
        nb::handle type = PyType_Check(v.ptr()) ? v : v.type();
        const std::string module = nb::cast<std::string>(nb::str(type.attr("__module__")));
        if (module.rfind("torch", 0) == 0) {
          name = nb::cast<std::string>(nb::str(v));
          if (name.rfind("torch.", 0) == 0) name = name.substr(6);
        } else if (module.rfind("numpy", 0) == 0 || module.rfind("ml_dtypes", 0) == 0) {
          try {
            name = nb::cast<std::string>(nb::module_::import_("numpy").attr("dtype")(v).attr("name"));
          } catch (const nb::python_error&) {
            return wrong("a dtype name (str) or a NumPy/PyTorch dtype");
          }
        } else {
          return wrong("a dtype name (str) or a NumPy/PyTorch dtype");
        }
      }
      KPS_ASSIGN_OR_RETURN(DataType dt, ParseDataType(name));
      return AttrValue(dt);
    }
  }
  return wrong("a value");
}

// Sets the Python `attrs` on `call`, each converted to its schema type.
void SetAttrs(Call& call, const OpSchema& schema, const nb::dict& attrs) {
  for (auto [key, value] : attrs) {
    const std::string name = nb::cast<std::string>(key);
    const int index = schema.AttrIndex(name);
    if (index < 0) {
      // Run() names the unknown attribute and the op's attributes.
      call.SetAttr(name, AttrValue(false));
      continue;
    }
    call.SetAttr(name, ValueOrRaise(ToAttr(schema.name(), schema.attrs()[index], value)));
  }
}

// The outputs (shape, dtype name, dynamic) op would make from inputs described as (name,
// shape, strides, dtype name, device name), without data: fake tensors for tracing.
std::vector<std::tuple<std::vector<int64_t>, std::string, bool>> InferOp(
    const std::string& op,
    const std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>, std::string, std::string>>&
        inputs,
    const nb::dict& attrs) {
  const OpSchema* schema = ValueOrRaise(OpRegistry::Global().Lookup(op));
  Call call(op);
  std::vector<Tensor> held;
  held.reserve(inputs.size());
  for (const auto& [name, dims, strides, dtype, device] : inputs) {
    const DataType dt = ValueOrRaise(ParseDataType(dtype));
    const Device dev = ValueOrRaise(ParseDevice(device));
    int64_t span = 1;
    for (size_t d = 0; d < dims.size(); ++d) span += dims[d] > 0 ? (dims[d] - 1) * std::max<int64_t>(strides[d], 0) : 0;
    auto storage = Storage::Wrap(nullptr, static_cast<size_t>(span) * DataTypeSize(dt), dev, nullptr);
    held.push_back(ValueOrRaise(Tensor::FromStorage(std::move(storage), dt, Shape(DimVector(dims.begin(), dims.end())),
                                                    strides, 0)));
    call.Input(name, held.back());
  }
  SetAttrs(call, *schema, attrs);
  if (inputs.empty()) call.OnDevice(DeviceType::kCpu);
  std::vector<Call::OutputSpec> specs = ValueOrRaise(call.Infer());
  std::vector<std::tuple<std::vector<int64_t>, std::string, bool>> out;
  for (const Call::OutputSpec& spec : specs) {
    out.emplace_back(std::vector<int64_t>(spec.shape.dims().begin(), spec.shape.dims().end()),
                     std::string(DataTypeName(spec.dtype)), spec.dynamic);
  }
  return out;
}

// Runs `call` with the GIL released (kernels and the allocator may wait); a failure
// raises its exception.
std::vector<Tensor> RunReleased(Call& call) {
  absl::StatusOr<std::vector<Tensor>> out;
  {
    nb::gil_scoped_release release;
    out = call.Run();
  }
  return ValueOrRaise(std::move(out));
}

// `obj` (a DLPack capsule, or anything nanobind's ndarray takes: __dlpack__, a buffer) as
// an ndarray, or a TypeError naming `what`.
template <typename What>
nb::ndarray<> AsArray(nb::handle obj, What what) {
  nb::ndarray<> a;
  if (!nb::try_cast(obj, a)) {
    PyErr_SetString(PyExc_TypeError,
                    absl::StrCat(what(), " is not an array (got ",
                                 nb::cast<std::string>(nb::str(obj.type().attr("__name__"))),
                                 "); KPS takes objects with __dlpack__ or the buffer protocol")
                        .c_str());
    throw nb::python_error();
  }
  return a;
}

// Runs `op` on `arrays` (the inputs in schema order, None where absent; DLPack capsules or
// objects AsArray takes) with `attrs` on `stream` (a cudaStream_t as an int; 0 the default
// stream), or on `device` when there are no inputs. `views`: None, or per input a dtype
// name (or None) its elements are reinterpreted as (bfloat16 NumPy arrays come as uint16).
// Returns the outputs as arrays of `framework`, each with whether it holds bfloat16 bits.
std::vector<std::pair<nb::object, bool>> CallOp(const std::string& op, const nb::list& arrays, const nb::object& views,
                                                const nb::dict& attrs, uintptr_t stream, const std::string& device,
                                                const std::string& framework, bool bf16_bits) {
  const OpSchema* schema = ValueOrRaise(OpRegistry::Global().Lookup(op));
  const size_t n = nb::len(arrays);
  if (n > schema->inputs().size()) {
    Raise(absl::InvalidArgumentError(
        absl::StrCat("op '", op, "' takes ", schema->inputs().size(), " inputs, got ", n)));
  }
  Call call(op);
  bool any = false, any_cuda = false;
  std::vector<Tensor> held;
  held.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    nb::handle obj = arrays[k];
    if (obj.is_none()) continue;
    const std::string& name = schema->inputs()[k].name;
    auto what = [&] { return absl::StrCat("op '", op, "': input '", name, "'"); };
    std::optional<std::string> as;
    if (!views.is_none()) {
      nb::handle v = views[k];
      if (!v.is_none()) as = nb::cast<std::string>(v);
    }
    held.push_back(ValueOrRaise(FromArray(AsArray(obj, what), as, what)));
    any = true;
    any_cuda = any_cuda || held.back().device() == DeviceType::kCuda;
    call.Input(name, held.back());
  }
  SetAttrs(call, *schema, attrs);
  const Device dev = any ? Device(DeviceType::kCpu) : ValueOrRaise(ParseDevice(device));
  if (any_cuda || (!any && dev.type == DeviceType::kCuda)) {
    call.OnStream(Stream::Cuda(reinterpret_cast<cudaStream_t>(stream)));
  }
  if (!any) call.OnDevice(dev);
  std::vector<Tensor> tensors = RunReleased(call);
  std::vector<std::pair<nb::object, bool>> result;
  result.reserve(tensors.size());
  for (Tensor& t : tensors) {
    const bool bits = bf16_bits && t.dtype() == DataType::kBFloat16;
    result.emplace_back(ToArray(std::move(t), framework, bf16_bits, stream), bits);
  }
  return result;
}

// What the short path needs of PyTorch and NumPy, found in sys.modules on first use (the
// module never imports either): their array types, torch's C-level DLPack export and
// import, and its current-stream query. Leaked on purpose: it outlives the interpreter's
// teardown order.
struct Frameworks {
  PyObject* torch_tensor = nullptr;  // the exact type torch.Tensor; subclasses go the long way
  PyObject* numpy_array = nullptr;
  nb::object to_dlpack, from_dlpack, current_stream;
};

Frameworks& Known() {
  static Frameworks* f = new Frameworks();
  return *f;
}

bool IsTorchTensor(PyObject* type) {
  Frameworks& f = Known();
  if (f.torch_tensor == nullptr) {
    PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
    if (torch == nullptr) return false;
    nb::handle t(torch);
    if (!nb::hasattr(t, "Tensor") || !nb::hasattr(t, "_C")) return false;  // torch half imported
    nb::object c = t.attr("_C");
    if (!nb::hasattr(c, "_to_dlpack") || !nb::hasattr(c, "_from_dlpack")) return false;
    f.to_dlpack = c.attr("_to_dlpack");
    f.from_dlpack = c.attr("_from_dlpack");
    f.current_stream = nb::getattr(c, "_cuda_getCurrentRawStream", nb::none());
    f.torch_tensor = nb::object(t.attr("Tensor")).release().ptr();
  }
  return type == f.torch_tensor;
}

bool IsNumpyArray(PyObject* type) {
  Frameworks& f = Known();
  if (f.numpy_array == nullptr) {
    PyObject* numpy = PyDict_GetItemString(PyImport_GetModuleDict(), "numpy");  // borrowed
    if (numpy == nullptr) return false;
    f.numpy_array = nb::object(nb::handle(numpy).attr("ndarray")).release().ptr();
  }
  return type == f.numpy_array;
}

// kps.call's short path, for calls whose inputs are all torch.Tensor (not requiring grad)
// or all numpy.ndarray (not bfloat16), on the caller's current stream: everything in one
// C++ function. Returns the output (`outputs_type(*outputs)` for several, None for none),
// or NotImplemented for any other call, which the Python side then runs the long way
// (and which raises the same errors for bad input).
nb::object FastCall(const std::string& op, nb::handle inputs, const nb::dict& attrs, nb::handle outputs_type) {
  const OpSchema* schema = ValueOrRaise(OpRegistry::Global().Lookup(op));
  nb::object seq = nb::steal(PySequence_Fast(inputs.ptr(), "inputs must be a sequence"));
  if (!seq.is_valid()) throw nb::python_error();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  if (n > static_cast<Py_ssize_t>(schema->inputs().size())) return nb::borrow(Py_NotImplemented);
  enum { kNone, kTorch, kNumpy } framework = kNone;
  Frameworks& known = Known();
  int cuda_device = -1;
  Call call(op);
  std::vector<Tensor> held;
  held.reserve(n);
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* obj = items[k];
    if (obj == Py_None) continue;
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj));
    nb::ndarray<> a;
    if (IsTorchTensor(type)) {
      if (framework == kNumpy) return nb::borrow(Py_NotImplemented);
      framework = kTorch;
      nb::object grad = nb::steal(PyObject_GetAttrString(obj, "requires_grad"));
      if (!grad.is_valid()) throw nb::python_error();
      if (grad.ptr() != Py_False) return nb::borrow(Py_NotImplemented);  // torch's refusal, the long way
      nb::object capsule = known.to_dlpack(nb::handle(obj));
      dl::Managed* m = dl::Consume(capsule.ptr());
      if (m == nullptr) return nb::borrow(Py_NotImplemented);
      const dl::DLTensor& d = m->dl_tensor;
      const std::string& name = schema->inputs()[k].name;
      held.push_back(ValueOrRaise(FromParts(
          static_cast<char*>(d.data) + d.byte_offset, d.device.device_type, d.device.device_id, d.dtype, d.ndim,
          d.shape, d.strides,
          [m] { m->deleter(m); }, std::nullopt, [&] { return absl::StrCat("op '", op, "': input '", name, "'"); })));
      if (held.back().device() == DeviceType::kCuda) cuda_device = d.device.device_id;
      call.Input(name, held.back());
      continue;
    } else if (IsNumpyArray(type)) {
      if (framework == kTorch) return nb::borrow(Py_NotImplemented);
      framework = kNumpy;
      if (!nb::try_cast(nb::handle(obj), a)) {
        PyErr_Clear();
        return nb::borrow(Py_NotImplemented);  // bfloat16 and dtypes KPS lacks: the long way
      }
    } else {
      return nb::borrow(Py_NotImplemented);
    }
    const std::string& name = schema->inputs()[k].name;
    held.push_back(ValueOrRaise(
        FromArray(a, std::nullopt, [&] { return absl::StrCat("op '", op, "': input '", name, "'"); })));
    if (held.back().device() == DeviceType::kCuda) cuda_device = a.device_id();
    call.Input(name, held.back());
  }
  if (framework == kNone) return nb::borrow(Py_NotImplemented);  // no inputs: `device` decides
  SetAttrs(call, *schema, attrs);
  uintptr_t stream = 0;
  if (cuda_device >= 0) {
    if (!known.current_stream.is_none()) stream = nb::cast<uintptr_t>(known.current_stream(cuda_device));
    // torch's current stream of that GPU: recorded, so the call need not ask the runtime.
    call.OnStream(Stream::Cuda(reinterpret_cast<cudaStream_t>(stream), cuda_device));
  }
  std::vector<Tensor> tensors = RunReleased(call);
  auto wrap = [&](Tensor& t) -> nb::object {
    if (framework == kTorch) return known.from_dlpack(dl::Export(std::move(t)));
    const bool bf16 = t.dtype() == DataType::kBFloat16;
    nb::object a = ToArray(std::move(t), "numpy", true, stream);
    if (bf16) a = a.attr("view")(nb::module_::import_("ml_dtypes").attr("bfloat16"));
    return a;
  };
  if (tensors.empty()) return nb::none();
  if (tensors.size() == 1) return wrap(tensors[0]);
  nb::list outs;
  for (Tensor& t : tensors) outs.append(wrap(t));
  return outputs_type(*outs);
}

nb::object AttrToPython(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> nb::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, DataType>) {
          return nb::str(std::string(DataTypeName(x)).c_str());
        } else {
          return nb::cast(x);
        }
      },
      v);
}

// The schema of `op` as plain Python values, for kps.ops' generated functions.
nb::dict SchemaDict(const std::string& op) {
  const OpSchema* s = ValueOrRaise(OpRegistry::Global().Lookup(op));
  nb::dict d;
  d["name"] = s->name();
  d["doc"] = s->doc();
  nb::list inputs, outputs, attrs;
  for (const ArgDef& a : s->inputs()) {
    nb::dict i;
    i["name"] = a.name;
    i["doc"] = a.doc;
    i["optional"] = a.optional;
    inputs.append(i);
  }
  for (const ArgDef& a : s->outputs()) {
    nb::dict o;
    o["name"] = a.name;
    o["doc"] = a.doc;
    outputs.append(o);
  }
  for (const AttrDef& a : s->attrs()) {
    nb::dict t;
    t["name"] = a.name;
    t["type"] = std::string(::kps::AttrTypeName(a.type));
    t["required"] = a.required;
    t["default"] = a.required ? nb::none() : AttrToPython(a.default_value);
    t["doc"] = a.doc;
    attrs.append(t);
  }
  d["inputs"] = inputs;
  d["outputs"] = outputs;
  d["attrs"] = attrs;
  return d;
}

// ---- kps.dist: communicators and the named groups (python/kps/dist.py is the API) ------

// A timeout in seconds from Python: finite and > 0, else ValueError.
absl::Duration Seconds(double s, const char* what) {
  if (!(s > 0) || s > 1e9) {
    Raise(absl::InvalidArgumentError(absl::StrCat(what, ": timeout_s must be > 0 seconds (and finite), got ", s)));
  }
  return absl::Seconds(s);
}

void BindDist(nb::module_& m) {
  using dist::Communicator;
  using CommPtr = std::shared_ptr<Communicator>;
  nb::class_<Communicator>(m, "Communicator",
                           "An NCCL communicator: this process's rank in a group of size ranks on CUDA device "
                           "`device`. Made by kps.dist.init_world, split or placeholder.")
      .def_prop_ro("rank", &Communicator::rank)
      .def_prop_ro("size", &Communicator::size)
      .def_prop_ro("device", &Communicator::cuda_device, "the CUDA ordinal (cuda:N) of this rank's GPU")
      .def_prop_ro("timeout_s", [](const Communicator& c) { return absl::ToDoubleSeconds(c.timeout()); })
      .def_prop_ro("aborted", &Communicator::aborted)
      .def("__repr__", [](const Communicator& c) { return absl::StrCat("<kps.dist.Group ", c.Describe(), ">"); })
      // Waits (GIL released) for the work queued on `stream` (a cudaStream_t as an int, 0 the
      // legacy default stream), polling NCCL; the timeout or a peer's failure aborts and raises.
      .def("synchronize", [](const Communicator& c, uintptr_t stream, std::optional<double> timeout_s) {
        const Stream s = Stream::Cuda(reinterpret_cast<cudaStream_t>(stream), c.cuda_device());
        const absl::Duration limit = timeout_s ? Seconds(*timeout_s, "synchronize") : c.timeout();
        absl::Status st;
        {
          nb::gil_scoped_release release;
          st = c.Synchronize(s, limit);
        }
        if (!st.ok()) Raise(st);
      }, nb::arg("stream") = 0, nb::arg("timeout_s").none() = nb::none())
      // Collective (every rank of this group calls it); a negative color joins none: None.
      // `name`: the new communicator also becomes that group (set here, in C++, so that the
      // table never holds a reference to a Python object).
      .def("split", [](const Communicator& c, int color, int key, std::optional<std::string> name) {
        absl::StatusOr<CommPtr> sub;
        {
          nb::gil_scoped_release release;
          sub = c.Split(color, key);
        }
        CommPtr comm = ValueOrRaise(std::move(sub));
        if (comm != nullptr && name) dist::SetGroup(*name, comm);
        return comm;
      }, nb::arg("color"), nb::arg("key"), nb::arg("name").none() = nb::none())
      .def("abort", &Communicator::Abort);
  m.def("dist_init_world", [](double timeout_s) {
    const absl::Duration timeout = Seconds(timeout_s, "init_world");
    absl::StatusOr<CommPtr> world;
    {
      nb::gil_scoped_release release;  // the rendezvous waits for the other ranks
      world = dist::InitWorld(timeout);
    }
    return ValueOrRaise(std::move(world));
  }, nb::arg("timeout_s"));
  // A placeholder (rank, size, no NCCL) for shape inference, set as group `name` if given.
  m.def("dist_placeholder", [](int rank, int size, std::optional<std::string> name) {
    if (size < 1 || rank < 0 || rank >= size) {
      Raise(absl::InvalidArgumentError(absl::StrCat("placeholder: rank ", rank, " is not in 0..size-1 (size ", size,
                                                    ")")));
    }
    CommPtr comm = Communicator::Placeholder(rank, size);
    if (name) dist::SetGroup(*name, comm);
    return comm;
  }, nb::arg("rank"), nb::arg("size"), nb::arg("name").none() = nb::none());
  m.def("dist_get_group", [](const std::string& name) { return ValueOrRaise(dist::GetGroup(name)); },
        nb::arg("name"));
  // Only removal from Python: a communicator Python handed in would tie the table to it.
  m.def("dist_remove_group", [](const std::string& name) { dist::SetGroup(name, nullptr); },
        nb::arg("name"), nb::call_guard<nb::gil_scoped_release>());
  m.def("dist_group_names", &dist::GroupNames);
  // GIL released: the last reference to a communicator finalizes it (bounded by its timeout).
  m.def("dist_clear_groups", &dist::ClearGroups, nb::call_guard<nb::gil_scoped_release>());
  m.def("dist_nccl_library", [] {
    const dist::NcclLibraryInfo info = ValueOrRaise(dist::NcclLibrary());
    return std::make_tuple(info.path, info.version, info.version_string);
  });
  m.def("dist_process_info", [] {
    const dist::ProcessInfo p = ValueOrRaise(dist::ProcessInfoFromEnv());
    nb::dict d;
    d["rank"] = p.rank;
    d["world_size"] = p.world_size;
    d["local_rank"] = p.local_rank;
    d["local_world_size"] = p.local_world_size;
    d["master_addr"] = p.master_addr;
    d["master_port"] = p.master_port;
    d["source"] = p.source;
    return d;
  });
}

}  // namespace
}  // namespace python
}  // namespace kps

NB_MODULE(_kps, m) {
  using namespace kps::python;  // NOLINT: the module's own functions
  m.doc() = "KPS's extension module; use the kps package instead.";
  nb::class_<PyTensor>(m, "Tensor")
      .def_prop_ro("shape", &PyTensor::shape)
      .def_prop_ro("dtype", &PyTensor::dtype)
      .def_prop_ro("device", &PyTensor::device)
      .def("__dlpack__", [](const PyTensor& t, nb::handle stream, nb::kwargs) { return t.Dlpack(stream); },
           nb::arg("stream").none() = nb::none(), nb::arg("kwargs"))
      .def("__dlpack_device__", &PyTensor::DlpackDevice)
      .def("numpy_bits", [](const PyTensor& t) {
        if (t.tensor.device() != kps::DeviceType::kCpu) {
          Raise(absl::FailedPreconditionError("kps.Tensor.numpy(): the tensor is on cuda; copy it to the CPU first"));
        }
        return ToArray(t.tensor, "numpy", true);
      });
  m.def("call", &CallOp, nb::arg("op"), nb::arg("arrays"), nb::arg("views").none(), nb::arg("attrs"),
        nb::arg("stream"), nb::arg("device"), nb::arg("framework"), nb::arg("bf16_bits"),
        "Runs op on the arrays (inputs in schema order, None where absent) with attrs on a CUDA stream (an int) "
        "or the CPU.");
  m.def("fast_call", &FastCall, nb::arg("op"), nb::arg("inputs"), nb::arg("attrs"), nb::arg("outputs_type").none(),
        "kps.call's short path (all torch tensors or all NumPy arrays, current stream), or NotImplemented.");
  m.def("list_ops", [] {
    std::vector<std::string> names;
    for (const kps::OpSchema* s : kps::OpRegistry::Global().All()) names.push_back(s->name());
    return names;
  });
  m.def("describe", [](const std::string& op) {
    return kps::python::ValueOrRaise(kps::OpRegistry::Global().Lookup(op))->Describe();
  });
  m.def("schema", &SchemaDict, nb::arg("op"));
  m.def("infer", &InferOp, nb::arg("op"), nb::arg("inputs"), nb::arg("attrs"),
        "Output (shape, dtype, dynamic) per output for inputs (name, shape, strides, dtype, device), no data.");
  m.def("cuda_device_count", [] { return kps::CudaDeviceCount(); });
  BindDist(m);
  // For python/bench/overhead.py: host microseconds per C++ eager kps::Call("add") on two
  // 1-element float32 tensors of `device` (n calls, then one sync), in this process;
  // `on_stream`: with OnStream(the legacy default stream), as kps.call sets it.
  m.def("_eager_add_host_us", [](int n, const std::string& device, bool on_stream) {
    const kps::Device dev = ValueOrRaise(kps::ParseDevice(device));
    kps::Tensor x = ValueOrRaise(kps::Tensor::Empty(kps::Shape{1}, kps::DataType::kFloat32, dev));
    kps::Tensor y = ValueOrRaise(kps::Tensor::Empty(kps::Shape{1}, kps::DataType::kFloat32, dev));
    auto run = [&] {
      kps::Call call("add");
      call.Input("x", x).Input("y", y);
      if (on_stream) call.OnStream(kps::Stream::Cuda(nullptr));
      return call.Run().status();
    };
    absl::Status st;
    double us = 0;
    {
      nb::gil_scoped_release release;
      for (int i = 0; i < 100 && st.ok(); ++i) st = run();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n && st.ok(); ++i) st = run();
      const auto t1 = std::chrono::steady_clock::now();
      if (dev.type == kps::DeviceType::kCuda) cudaDeviceSynchronize();
      us = std::chrono::duration<double, std::micro>(t1 - t0).count() / std::max(n, 1);
    }
    if (!st.ok()) Raise(st);
    return us;
  }, nb::arg("n"), nb::arg("device"), nb::arg("on_stream") = false);
  // For tests: the address KPS's tensor over `array` starts at (zero copy: the array's).
  m.def("data_pointer", [](nb::handle array, std::optional<std::string> view_as) {
    auto what = [] { return std::string("array"); };
    const kps::Tensor t = ValueOrRaise(FromArray(AsArray(array, what), view_as, what));
    return reinterpret_cast<uintptr_t>(t.numel() > 0 ? t.raw_data() : nullptr);
  }, nb::arg("array"), nb::arg("view_as").none() = nb::none());
}
