// Kernels, their context, and the kernel registry.
//
// A kernel implements one op for one (device, dtype) key:
//
//   template <typename T>
//   class MulCpuKernel final : public OpKernel {
//     absl::Status Compute(KernelContext* ctx) const override { ... }
//   };
//   KPS_REGISTER_KERNEL_FOR_TYPES("mul", DeviceType::kCpu, MulCpuKernel, float, double);
//
// An op with a CPU and a CUDA kernel writes them as one class template over the device
// (see KPS_REGISTER_DEVICE_KERNELS below). For one key with options, OneFlow's builder
// style:
//
//   KPS_REGISTER_KERNEL("mul", DeviceType::kCuda, DataType::kFloat32)
//       .SetCreateFn<MulVectorizedKernel>()
//       .SetIsMatchedHob(hob::AllInputsContiguous())
//       .SetPriority(1);
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "registry/hob.h"
#include "registry/op_schema.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace kps {

// Everything a kernel sees of one call: inputs, attributes, allocated outputs, the
// stream, and a temporary buffer sized by the kernel's InferTmpSizeFn.
class KernelContext : public CallView {
 public:
  KernelContext(const OpSchema& schema, absl::Span<const Tensor> inputs,
                absl::Span<const AttrValue* const> attrs, DeviceType device,
                absl::Span<Tensor> outputs, const Stream& stream)
      : CallView(schema, inputs, attrs, device), outputs_(outputs), stream_(stream) {}

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  Tensor& output(int i) const { return outputs_[i]; }
  // Allocates a dynamic output (InferContext::SetDynamicOutput) of `shape`, contiguous,
  // on the call's device and stream, and makes it output(i).
  absl::StatusOr<Tensor*> AllocateOutput(int i, const Shape& shape, DataType dtype) const;
  const Stream& stream() const { return stream_; }
  cudaStream_t cuda_stream() const { return stream_.cuda_stream(); }
  void* tmp_buffer() const { return tmp_buffer_; }
  size_t tmp_size() const { return tmp_size_; }
  void set_tmp_buffer(void* p, size_t bytes) { tmp_buffer_ = p; tmp_size_ = bytes; }

 private:
  absl::Span<Tensor> outputs_;
  Stream stream_;
  void* tmp_buffer_ = nullptr;
  size_t tmp_size_ = 0;
};

// A kernel is created once per registration and shared by every call: Compute must be
// thread-compatible and keep no per-call state in members.
class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual absl::Status Compute(KernelContext* ctx) const = 0;
};

using KernelCreateFn = std::function<std::unique_ptr<OpKernel>()>;
// Bytes of temporary device memory the kernel needs for this call (0: none).
using InferTmpSizeFn = std::function<size_t(const CallView&)>;

struct KernelDef {
  std::string op_name;
  DeviceType device = DeviceType::kCpu;
  DataType dtype = DataType::kFloat32;
  int priority = 0;
  KernelCreateFn create_fn;
  std::optional<Hob> hob;
  InferTmpSizeFn infer_tmp_size;
  std::string source;  // file:line of the registration

  // The kernel instance, created on first use.
  const OpKernel* GetKernel() const;

 private:
  // The instance, published once it exists: after the first call a lookup is one acquire
  // load (std::call_once would set thread-locals and call pthread_once every time).
  mutable std::atomic<const OpKernel*> kernel_{nullptr};
  mutable std::once_flag once_;  // std, not absl: ThreadSanitizer sees pthread_once
  mutable std::unique_ptr<OpKernel> instance_;
};

class KernelBuilder {
 public:
  KernelBuilder(absl::string_view op_name, DeviceType device, DataType dtype,
                const char* file = "", int line = 0);
  template <typename K>
  KernelBuilder& SetCreateFn() {
    def_->create_fn = [] { return std::unique_ptr<OpKernel>(new K()); };
    return *this;
  }
  KernelBuilder& SetCreateFn(KernelCreateFn fn);
  KernelBuilder& SetIsMatchedHob(Hob hob);
  KernelBuilder& SetInferTmpSizeFn(InferTmpSizeFn fn);
  KernelBuilder& SetPriority(int priority);
  std::unique_ptr<KernelDef> Build() { return std::move(def_); }

 private:
  std::unique_ptr<KernelDef> def_;
};

// Registration may happen at any time, also while other threads call ops (a plugin
// opened with dlopen): lookups take no lock and see either the state before a
// registration or after it. Kernels are never removed, so code that registered them must
// stay loaded (open plugins with RTLD_NODELETE or never dlclose them).
//
// Ties: two kernels of one key at one priority. While libraries load, before the first
// kernel is selected, a tie disables the key (both refused, the error recorded and
// returned by every call of it): which one runs must never depend on link order. Once a
// kernel has been selected, the registry is in use and a tying registration is refused
// alone (its error returned to the registrant and recorded); running code keeps working.
class KernelRegistry {
 public:
  // The kernels of one (op, device, dtype) key, highest priority first, or the error of a
  // tie that disabled the key. Immutable once published.
  struct KeyKernels {
    std::vector<const KernelDef*> defs;
    absl::Status error;
  };
  // The kernels of one op, by key.
  class OpKernels {
   public:
    OpKernels();
    // Never null: a key without kernels gives an empty list.
    const KeyKernels& Get(DeviceType device, DataType dtype) const {
      return *by_key_[static_cast<int>(device)][static_cast<int>(dtype)].load(std::memory_order_acquire);
    }

   private:
    friend class KernelRegistry;
    std::atomic<const KeyKernels*> by_key_[kNumDeviceTypes][kNumDataTypes];
  };

  static KernelRegistry& Global();
  // Fails (and records the failure) on a tie; see the class comment for which kernel stays.
  absl::Status Register(std::unique_ptr<KernelDef> def);
  // nullptr when the op has no kernels at all.
  const OpKernels* Find(absl::string_view op_name) const;
  // The (device, dtype) pairs that have a kernel for `op_name`.
  std::vector<std::pair<DeviceType, DataType>> RegisteredKeys(absl::string_view op_name) const;
  // The kernel to run `call`, keyed by `dtype`: the highest-priority candidate whose hob
  // matches. Errors list what is registered, or which predicates failed.
  absl::StatusOr<const KernelDef*> Select(const CallView& call, DataType dtype) const;
  std::vector<absl::Status> registration_errors() const;

 private:
  KernelRegistry();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  // Set by the first Select: from then on a tie refuses the newcomer alone.
  mutable std::atomic<bool> in_use_{false};
};

// "cpu:float32, cuda:float16, ...".
std::string KeysToString(const std::vector<std::pair<DeviceType, DataType>>& keys);

namespace internal {
struct KernelRegistrationTrigger {
  KernelRegistrationTrigger(KernelBuilder& builder);  // NOLINT: implicit by design
  KernelRegistrationTrigger(KernelBuilder&& builder) : KernelRegistrationTrigger(builder) {}  // NOLINT
};

template <template <typename> class Kernel, typename... Ts>
bool RegisterKernelTemplate(const char* op_name, DeviceType device, const char* file, int line) {
  (KernelRegistrationTrigger(
       KernelBuilder(op_name, device, DataTypeOf<Ts>(), file, line).template SetCreateFn<Kernel<Ts>>()),
   ...);
  return true;
}
template <template <typename> class Kernel, typename... Ts>
bool RegisterKernelByWidth(const char* op_name, DeviceType device, const char* file, int line) {
  (KernelRegistrationTrigger(KernelBuilder(op_name, device, DataTypeOf<Ts>(), file, line)
                                 .template SetCreateFn<Kernel<BitsOf<Ts>>>()),
   ...);
  return true;
}

// Kernel<D, T> with the device fixed, as the one-parameter template the registrations take.
template <template <DeviceType, typename> class Kernel, DeviceType D>
struct BindDevice {
  template <typename T>
  using Of = Kernel<D, T>;
};
template <template <DeviceType, typename> class Kernel, typename... Ts>
bool RegisterDeviceKernels(const char* op_name, const char* file, int line) {
  RegisterKernelTemplate<BindDevice<Kernel, DeviceType::kCpu>::template Of, Ts...>(op_name, DeviceType::kCpu, file,
                                                                                  line);
  return RegisterKernelTemplate<BindDevice<Kernel, DeviceType::kCuda>::template Of, Ts...>(
      op_name, DeviceType::kCuda, file, line);
}
template <template <DeviceType, typename> class Kernel, typename... Ts>
bool RegisterDeviceKernelsByWidth(const char* op_name, const char* file, int line) {
  RegisterKernelByWidth<BindDevice<Kernel, DeviceType::kCpu>::template Of, Ts...>(op_name, DeviceType::kCpu, file,
                                                                                 line);
  return RegisterKernelByWidth<BindDevice<Kernel, DeviceType::kCuda>::template Of, Ts...>(
      op_name, DeviceType::kCuda, file, line);
}
}  // namespace internal

// Registers one kernel for (op, device, dtype); chain the builder's setters after it.
#define KPS_REGISTER_KERNEL(op_name, device, dtype)                                \
  static ::kps::internal::KernelRegistrationTrigger KPS_CONCAT(kps_kernel_, __COUNTER__) = \
      ::kps::KernelBuilder(op_name, device, dtype, __FILE__, __LINE__)

// Registers Kernel<T> for each listed C++ type T, keyed by DataTypeOf<T>().
#define KPS_REGISTER_KERNEL_FOR_TYPES(op_name, device, Kernel, ...)                \
  static const bool KPS_CONCAT(kps_kernels_, __COUNTER__) =                        \
      ::kps::internal::RegisterKernelTemplate<Kernel, __VA_ARGS__>(op_name, device, __FILE__, __LINE__)

// For kernels that only move elements: registers Kernel<BitsOf<T>> (one class per element
// width, uint8_t to uint64_t) under DataTypeOf<T>() for each listed T, so that ten dtypes
// instantiate four kernels.
//
//   KPS_REGISTER_KERNEL_BY_WIDTH("my_gather", DeviceType::kCuda, MyGatherCudaKernel,
//                                KPS_ALL_CPP_TYPES);
#define KPS_REGISTER_KERNEL_BY_WIDTH(op_name, device, Kernel, ...)                 \
  static const bool KPS_CONCAT(kps_kernels_, __COUNTER__) =                        \
      ::kps::internal::RegisterKernelByWidth<Kernel, __VA_ARGS__>(op_name, device, __FILE__, __LINE__)

// The one glue pattern for an op's CPU and CUDA kernels (OneFlow's kernel over DeviceType
// with a per-device functor; phi's kernel template over a context). The op's kernel is one
// class template over the device and the element type. Its Compute resolves the call once,
// the same way on every device (attributes, shapes, plans, functors, contiguous inputs),
// and hands the resolved arguments to the device's part: a class specialised per device,
// the CPU one in host code, the CUDA one in the op's .cu file.
//
//   template <DeviceType D> struct Conv1dOn;            // conv1d_ops.h: declared
//   template <> struct Conv1dOn<DeviceType::kCpu> {...};  // the host loop
//   template <> struct Conv1dOn<DeviceType::kCuda> {...}; // conv1d_cuda.cu: the launches
//
//   template <DeviceType D, typename T>
//   class Conv1dKernel final : public OpKernel {
//     absl::Status Compute(KernelContext* ctx) const override {
//       KPS_ASSIGN_OR_RETURN(const Conv1dGeometry g, ResolveConv1d(*ctx));  // once
//       ...
//       return Conv1dOn<D>::template Run<T>(ctx, g, x, w);
//     }
//   };
//   KPS_REGISTER_DEVICE_KERNELS("conv1d", Conv1dKernel, KPS_CONV1D_CPP_TYPES);
//
// registers Kernel<kCpu, T> and Kernel<kCuda, T> for every listed T. It instantiates both
// devices' parts, so it sits at the end of the .cu file that defines the CUDA part.
#define KPS_REGISTER_DEVICE_KERNELS(op_name, Kernel, ...)                          \
  static const bool KPS_CONCAT(kps_kernels_, __COUNTER__) =                        \
      ::kps::internal::RegisterDeviceKernels<Kernel, __VA_ARGS__>(op_name, __FILE__, __LINE__)

// The same for kernels that only move elements: Kernel<D, BitsOf<T>> under each listed T.
#define KPS_REGISTER_DEVICE_KERNELS_BY_WIDTH(op_name, Kernel, ...)                 \
  static const bool KPS_CONCAT(kps_kernels_, __COUNTER__) =                        \
      ::kps::internal::RegisterDeviceKernelsByWidth<Kernel, __VA_ARGS__>(op_name, __FILE__, __LINE__)

}  // namespace kps
