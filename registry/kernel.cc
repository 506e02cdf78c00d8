#include "registry/kernel.h"

#include <algorithm>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "registry/logging.h"
#include "registry/status.h"

namespace kps {

const OpKernel* KernelDef::GetKernel() const {
  absl::call_once(once_, [this] { instance_ = create_fn(); });
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
  std::mutex mu;  // registration only
  absl::flat_hash_map<std::string, std::unique_ptr<OpKernels>> ops;
  std::vector<std::unique_ptr<KernelDef>> defs;  // owns every KernelDef
  std::vector<absl::Status> errors;
};

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* r = new KernelRegistry();
  return *r;
}

KernelRegistry::Impl* KernelRegistry::impl() const {
  if (!impl_) impl_ = std::make_unique<Impl>();
  return impl_.get();
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
  Impl* im = impl();
  std::lock_guard<std::mutex> lock(im->mu);
  auto& entry = im->ops[def->op_name];
  if (!entry) entry = std::make_unique<OpKernels>();
  const int dev = static_cast<int>(def->device);
  const int dt = static_cast<int>(def->dtype);
  auto& list = entry->by_key[dev][dt];
  for (const KernelDef* other : list) {
    if (other->priority == def->priority) {
      absl::Status s = absl::AlreadyExistsError(absl::StrCat(
          "op '", def->op_name, "': two ", DeviceTypeName(def->device), ":",
          DataTypeName(def->dtype), " kernels at priority ", def->priority, " (", other->source,
          " and ", def->source, "); give one a different SetPriority so the choice does not "
          "depend on link order"));
      entry->error[dev][dt] = s;
      im->errors.push_back(s);
      return s;
    }
  }
  const KernelDef* raw = def.get();
  im->defs.push_back(std::move(def));
  list.push_back(raw);
  std::stable_sort(list.begin(), list.end(),
                   [](const KernelDef* a, const KernelDef* b) { return a->priority > b->priority; });
  return absl::OkStatus();
}

const KernelRegistry::OpKernels* KernelRegistry::Find(absl::string_view op_name) const {
  Impl* im = impl();
  auto it = im->ops.find(op_name);
  return it == im->ops.end() ? nullptr : it->second.get();
}

std::vector<std::pair<DeviceType, DataType>> KernelRegistry::RegisteredKeys(absl::string_view op_name) const {
  std::vector<std::pair<DeviceType, DataType>> keys;
  const OpKernels* k = Find(op_name);
  if (k == nullptr) return keys;
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    for (int t = 0; t < kNumDataTypes; ++t) {
      if (!k->by_key[d][t].empty()) keys.emplace_back(static_cast<DeviceType>(d), static_cast<DataType>(t));
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
  const int dev = static_cast<int>(call.device());
  const int dt = static_cast<int>(dtype);
  if (table == nullptr || table->by_key[dev][dt].empty()) {
    auto keys = RegisteredKeys(schema.name());
    return absl::NotFoundError(absl::StrCat(
        "op '", schema.name(), "' has no ", DeviceTypeName(call.device()), " kernel for dtype ",
        DataTypeName(dtype), " (from '", schema.key_arg(), "'); registered (device:dtype): ",
        keys.empty() ? std::string("none") : KeysToString(keys)));
  }
  if (!table->error[dev][dt].ok()) return table->error[dev][dt];
  const auto& list = table->by_key[dev][dt];
  for (const KernelDef* def : list) {
    if (!def->hob || (*def->hob)(call)) return def;
  }
  std::string why;
  for (const KernelDef* def : list) {
    absl::StrAppend(&why, why.empty() ? "" : "; ", "priority ", def->priority, ": ",
                    def->hob->DebugString(), " is false");
  }
  return absl::NotFoundError(absl::StrCat("op '", schema.name(), "': no ", DeviceTypeName(call.device()),
                                          ":", DataTypeName(dtype), " kernel matches this call (",
                                          why, ")"));
}

std::vector<absl::Status> KernelRegistry::registration_errors() const {
  std::lock_guard<std::mutex> lock(impl()->mu);
  return impl()->errors;
}

namespace internal {
KernelRegistrationTrigger::KernelRegistrationTrigger(KernelBuilder& builder) {
  absl::Status s = KernelRegistry::Global().Register(builder.Build());
  if (!s.ok()) KPS_LOG(ERROR) << "KPS_REGISTER_KERNEL: " << s;
}
}  // namespace internal

}  // namespace kps
