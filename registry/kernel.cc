#include "registry/kernel.h"

#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "registry/logging.h"
#include "registry/name_map.h"
#include "registry/status.h"

namespace kps {

const OpKernel* KernelDef::GetKernel() const {
  if (const OpKernel* k = kernel_.load(std::memory_order_acquire)) return k;
  std::call_once(once_, [this] {
    instance_ = create_fn();
    kernel_.store(instance_.get(), std::memory_order_release);
  });
  return instance_.get();
}

KernelBuilder::KernelBuilder(absl::string_view op_name, DeviceType device, DataType dtype,
                             const char* file, int line)
    : def_(std::make_unique<KernelDef>()) {
  def_->op_name = std::string(op_name);
  def_->device = device;
  def_->dtype = dtype;
  def_->source = absl::StrCat(file, ":", line);
}
KernelBuilder& KernelBuilder::SetCreateFn(KernelCreateFn fn) {
  def_->create_fn = std::move(fn);
  return *this;
}
KernelBuilder& KernelBuilder::SetIsMatchedHob(Hob hob) {
  def_->hob = std::move(hob);
  return *this;
}
absl::StatusOr<Tensor*> KernelContext::AllocateOutput(int i, const Shape& shape, DataType dtype) const {
  if (!IsValidShape(shape.dims())) {
    return ValidateShape(
      shape, absl::StrCat("op '", schema().name(), "': output '", schema().outputs()[i].name, "'"));
  }
  KPS_ASSIGN_OR_RETURN(outputs_[i], Tensor::Empty(shape, dtype, device(), stream_));
  return &outputs_[i];
}

KernelBuilder& KernelBuilder::SetInferTmpSizeFn(InferTmpSizeFn fn) {
  def_->infer_tmp_size = std::move(fn);
  return *this;
}
KernelBuilder& KernelBuilder::SetPriority(int priority) {
  def_->priority = priority;
  return *this;
}

struct KernelRegistry::Impl {
  std::mutex mu;  // serializes registrations; lookups take no lock
  internal::AppendOnlyNameMap<OpKernels> ops;
  std::vector<std::unique_ptr<KernelDef>> defs;              // owns every KernelDef
  std::vector<std::unique_ptr<const KeyKernels>> key_lists;  // every list ever published
  std::vector<absl::Status> errors;
};

namespace {
const KernelRegistry::KeyKernels* EmptyKeyKernels() {
  static const auto* empty = new KernelRegistry::KeyKernels();
  return empty;
}
}  // namespace

KernelRegistry::OpKernels::OpKernels() {
  for (auto& row : by_key_) {
    for (auto& k : row) k.store(EmptyKeyKernels(), std::memory_order_relaxed);
  }
}

KernelRegistry::KernelRegistry() : impl_(std::make_unique<Impl>()) {}

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* r = new KernelRegistry();
  return *r;
}

std::string KeysToString(const std::vector<std::pair<DeviceType, DataType>>& keys) {
  return absl::StrJoin(keys, ", ", [](std::string* out, const std::pair<DeviceType, DataType>& k) {
    absl::StrAppend(out, DeviceTypeName(k.first), ":", DataTypeName(k.second));
  });
}

absl::Status KernelRegistry::Register(std::unique_ptr<KernelDef> def) {
  if (!def->create_fn) {
    return absl::InvalidArgumentError(absl::StrCat("kernel for op '", def->op_name, "' at ",
                                                   def->source, " has no SetCreateFn"));
  }
  Impl* im = impl_.get();
  std::lock_guard<std::mutex> lock(im->mu);
  OpKernels* entry = im->ops.Insert(def->op_name, std::make_unique<OpKernels>()).first;
  auto& slot = entry->by_key_[static_cast<int>(def->device)][static_cast<int>(def->dtype)];
  const KeyKernels* old = slot.load(std::memory_order_relaxed);
  auto next = std::make_unique<KeyKernels>(*old);
  for (const KernelDef* other : old->defs) {
    if (other->priority != def->priority) continue;
    const bool in_use = in_use_.load(std::memory_order_acquire);
    absl::Status s = absl::AlreadyExistsError(absl::StrCat(
        "op '", def->op_name, "': two ", DeviceTypeName(def->device), ":", DataTypeName(def->dtype),
        " kernels at priority ", def->priority, " (", other->source, " and ", def->source, "); ",
        in_use ? "the later one is refused (ops are already running)"
               : "both are refused; give one a different SetPriority so the choice does not depend "
                 "on link order"));
    im->errors.push_back(s);
    if (!in_use) {
      next->error = s;
      slot.store(next.get(), std::memory_order_release);
      im->key_lists.push_back(std::move(next));
    }
    return s;
  }
  const KernelDef* raw = def.get();
  im->defs.push_back(std::move(def));
  next->defs.push_back(raw);
  std::stable_sort(next->defs.begin(), next->defs.end(),
                   [](const KernelDef* a, const KernelDef* b) { return a->priority > b->priority; });
  slot.store(next.get(), std::memory_order_release);
  im->key_lists.push_back(std::move(next));
  return absl::OkStatus();
}

const KernelRegistry::OpKernels* KernelRegistry::Find(absl::string_view op_name) const {
  return impl_->ops.Find(op_name);
}

std::vector<std::pair<DeviceType, DataType>> KernelRegistry::RegisteredKeys(absl::string_view op_name) const {
  std::vector<std::pair<DeviceType, DataType>> keys;
  const OpKernels* k = Find(op_name);
  if (k == nullptr) return keys;
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    for (int t = 0; t < kNumDataTypes; ++t) {
      const auto device = static_cast<DeviceType>(d);
      const auto dtype = static_cast<DataType>(t);
      if (!k->Get(device, dtype).defs.empty()) keys.emplace_back(device, dtype);
    }
  }
  return keys;
}

absl::StatusOr<const KernelDef*> KernelRegistry::Select(const CallView& call, DataType dtype) const {
  const OpSchema& schema = call.schema();
  // The op's kernel table is cached on its schema: one string hash per op, ever.
  const OpKernels* table = static_cast<const OpKernels*>(schema.kernel_table_cache.load(std::memory_order_acquire));
  if (table == nullptr) {
    table = Find(schema.name());
    if (table != nullptr) schema.kernel_table_cache.store(table, std::memory_order_release);
  }
  const KeyKernels& key = table != nullptr ? table->Get(call.device(), dtype) : *EmptyKeyKernels();
  if (!key.error.ok()) return key.error;
  if (key.defs.empty()) {
    auto keys = RegisteredKeys(schema.name());
    return absl::NotFoundError(absl::StrCat(
        "op '", schema.name(), "' has no ", DeviceTypeName(call.device()), " kernel for dtype ",
        DataTypeName(dtype), " (from '", schema.key_arg(), "'); registered (device:dtype): ",
        keys.empty() ? std::string("none") : KeysToString(keys)));
  }
  for (const KernelDef* def : key.defs) {
    if (!def->hob || (*def->hob)(call)) {
      // A load, not a store, on every call after the first: the flag's cache line stays shared.
      if (!in_use_.load(std::memory_order_relaxed)) in_use_.store(true, std::memory_order_release);
      return def;
    }
  }
  std::string why;
  for (const KernelDef* def : key.defs) {
    absl::StrAppend(&why, why.empty() ? "" : "; ", "priority ", def->priority, ": ",
                    def->hob->DebugString(), " is false");
  }
  return absl::NotFoundError(absl::StrCat("op '", schema.name(), "': no ", DeviceTypeName(call.device()),
                                          ":", DataTypeName(dtype), " kernel matches this call (",
                                          why, ")"));
}

std::vector<absl::Status> KernelRegistry::registration_errors() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->errors;
}

namespace internal {
KernelRegistrationTrigger::KernelRegistrationTrigger(KernelBuilder& builder) {
  absl::Status s = KernelRegistry::Global().Register(builder.Build());
  if (!s.ok()) KPS_LOG(ERROR) << "KPS_REGISTER_KERNEL: " << s;
}
}  // namespace internal

}  // namespace kps
