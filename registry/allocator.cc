#include "registry/allocator.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "registry/logging.h"
#include "registry/status.h"

namespace kps {
namespace {

class CpuAllocator final : public Allocator {
 public:
  DeviceType device() const override { return DeviceType::kCpu; }
  absl::StatusOr<void*> Allocate(size_t bytes, const Stream&) override {
    size_t rounded = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    if (rounded == 0) rounded = kCpuAlignment;
    void* p = std::aligned_alloc(kCpuAlignment, rounded);
    if (p == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat("CPU allocation of ", bytes, " bytes failed"));
    }
    return p;
  }
  void Free(void* ptr, const Stream&) override { std::free(ptr); }
};

class CudaAllocator final : public Allocator {
 public:
  DeviceType device() const override { return DeviceType::kCuda; }

  absl::StatusOr<void*> Allocate(size_t bytes, const Stream& stream) override {
    if (stream.device() != DeviceType::kCuda) {
      return absl::InvalidArgumentError("CUDA allocation needs a CUDA stream, got a CPU stream");
    }
    if (bytes == 0) return nullptr;  // nothing to read or write; no pool traffic
    KPS_RETURN_IF_ERROR(ConfigurePoolOnce());
    void* p = nullptr;
    cudaError_t err = cudaMallocAsync(&p, bytes, stream.cuda_stream());
    if (err != cudaSuccess) {
      cudaGetLastError();
      return CudaErrorToStatus(err, absl::StrCat("cudaMallocAsync of ", bytes, " bytes"));
    }
    return p;
  }

  void Free(void* ptr, const Stream& stream) override {
    if (ptr == nullptr) return;
    // Failure here means the context is gone (process exit) or the stream was destroyed
    // before the tensors on it: nothing useful can be done but say so.
    cudaError_t err = cudaFreeAsync(ptr, stream.cuda_stream());
    if (err != cudaSuccess && err != cudaErrorCudartUnloading) {
      KPS_LOG(WARNING) << "cudaFreeAsync failed: " << cudaGetErrorString(err);
      cudaGetLastError();
    }
  }

 private:
  // The default pool returns memory to the driver at every synchronization unless its
  // release threshold is raised; then a steady workload reuses its blocks and
  // cudaMallocAsync stays a cheap host call on the eager path.
  static absl::Status ConfigurePoolOnce() {
    static std::atomic<uint64_t> configured{0};  // bit per device, first 64 devices
    int dev = 0;
    KPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev), "cudaGetDevice");
    uint64_t bit = dev < 64 ? (uint64_t{1} << dev) : 0;
    if (bit == 0 || (configured.load(std::memory_order_acquire) & bit)) return absl::OkStatus();
    cudaMemPool_t pool;
    KPS_CUDA_RETURN_IF_ERROR(cudaDeviceGetDefaultMemPool(&pool, dev), "cudaDeviceGetDefaultMemPool");
    uint64_t threshold = UINT64_MAX;
    KPS_CUDA_RETURN_IF_ERROR(
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
        "cudaMemPoolSetAttribute(ReleaseThreshold)");
    configured.fetch_or(bit, std::memory_order_release);
    return absl::OkStatus();
  }
};

std::atomic<bool> g_poison{false};

}  // namespace

void SetAllocationPoisoning(bool on) { g_poison.store(on); }
bool AllocationPoisoning() { return g_poison.load(std::memory_order_relaxed); }

Allocator* GetAllocator(DeviceType device) {
  static CpuAllocator* cpu = new CpuAllocator();
  static CudaAllocator* cuda = new CudaAllocator();
  return device == DeviceType::kCuda ? static_cast<Allocator*>(cuda) : cpu;
}

absl::StatusOr<std::shared_ptr<Storage>> Storage::Allocate(size_t bytes, DeviceType device,
                                                          const Stream& stream) {
  Allocator* allocator = GetAllocator(device);
  KPS_ASSIGN_OR_RETURN(void* p, allocator->Allocate(bytes, stream));
  if (bytes > 0 && AllocationPoisoning()) {
    if (device == DeviceType::kCpu) {
      std::memset(p, 0xFF, bytes);
    } else {
      KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0xFF, bytes, stream.cuda_stream()), "cudaMemsetAsync (poison)");
    }
  }
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = p;
  s->bytes_ = bytes;
  s->device_ = device;
  s->free_stream_ = stream;
  s->allocator_ = allocator;
  return s;
}

std::shared_ptr<Storage> Storage::Wrap(void* data, size_t bytes, DeviceType device,
                                       std::function<void(void*)> deleter) {
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = data;
  s->bytes_ = bytes;
  s->device_ = device;
  s->deleter_ = std::move(deleter);
  return s;
}

Storage::~Storage() {
  if (allocator_ != nullptr) {
    allocator_->Free(data_, free_stream_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace kps
