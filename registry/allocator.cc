#include "registry/allocator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

#include "absl/strings/str_cat.h"
#include "registry/logging.h"
#include "registry/status.h"

namespace kps {
namespace {

// No request above this is passed on: rounding it up to an alignment or a block size
// could wrap size_t and hand back a small block for a huge request.
constexpr size_t kMaxAllocationBytes = size_t{1} << 62;

absl::Status TooLarge(const char* device, size_t bytes) {
  return absl::ResourceExhaustedError(absl::StrCat(device, " allocation of ", bytes,
                                                   " bytes refused: more than 2^62 bytes"));
}

class CpuAllocator final : public Allocator {
 public:
  DeviceType device() const override { return DeviceType::kCpu; }
  absl::StatusOr<void*> Allocate(size_t bytes, const Stream&) override {
    if (bytes > kMaxAllocationBytes) return TooLarge("CPU", bytes);
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

// Streams whose freed blocks the allocator keeps for reuse: the legacy default stream
// (nullptr in KPS, which is not built for per-thread default streams), which never goes
// away, and the streams KPS created (OwnedCudaStream), which tell it before they are
// destroyed. A handle the caller owns can be destroyed without a word and its value
// handed to a new stream, whose work would not be ordered after the old one's; and
// cudaStreamPerThread names a different stream in every thread. Their blocks go straight
// back to the runtime's pool.
bool AlwaysCacheable(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy; }

// A PyTorch-style caching allocator over the runtime's stream-ordered pool. A block freed
// on stream S goes on S's free list for its size class; the next allocation of that class
// on S takes it back with no CUDA call at all. Reuse on the same stream is safe without
// events: whatever S queued on the old tensor runs before whatever S queues on the new
// one. On the H100 machine a cudaMallocAsync + cudaFreeAsync pair around an eager call
// cost 1.1-2.9 us of host time, all of it before the kernel starts (bench host rows).
class CudaAllocator final : public Allocator {
 public:
  DeviceType device() const override { return DeviceType::kCuda; }

  absl::StatusOr<void*> Allocate(size_t bytes, const Stream& stream) override {
    int device = -1;
    return AllocateOnCurrent(bytes, stream, &device);
  }

  // Allocate on the current device, which is *device (-1: not known yet, asked and
  // stored there, also for 0 bytes, so that the caller learns it).
  absl::StatusOr<void*> AllocateOnCurrent(size_t bytes, const Stream& stream, int* device_io) {
    if (stream.device() != DeviceType::kCuda) {
      return absl::InvalidArgumentError("CUDA allocation needs a CUDA stream, got a CPU stream");
    }
    if (bytes > kMaxAllocationBytes) return TooLarge("CUDA", bytes);
    if (*device_io < 0) {
      const cudaError_t err = cudaGetDevice(device_io);
      if (err != cudaSuccess && bytes == 0) {
        // 0 bytes never needed a GPU (empty CUDA tensors work without one, as before
        // tensors had an index): record cuda:0, as Storage::Wrap does.
        cudaGetLastError();
        *device_io = 0;
      } else {
        KPS_CUDA_RETURN_IF_ERROR(err, "cudaGetDevice");
      }
    }
    if (bytes == 0) return nullptr;  // nothing to read or write; no pool traffic
    const int device = *device_io;
    const cudaStream_t s = stream.cuda_stream();
    const size_t size = CudaBlockSize(bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (CacheableLocked(s)) {
        auto it = free_.find(Key{device, s, size});
        if (it != free_.end() && !it->second.empty()) {
          void* p = it->second.back();
          it->second.pop_back();
          cached_bytes_ -= size;
          live_[p] = Live{device, s, size};
          return p;
        }
      }
    }
    KPS_RETURN_IF_ERROR(ConfigurePoolOnce(device));
    void* p = nullptr;
    cudaError_t err = cudaMallocAsync(&p, size, s);
    if (err == cudaErrorMemoryAllocation) {
      // Out of memory: give the cached blocks of this device back to the pool and try
      // again; then wait for the device, return the pool's idle memory to the driver and
      // try once more.
      cudaGetLastError();
      ReleaseCached(device, nullptr, /*any_stream=*/true);
      err = cudaMallocAsync(&p, size, s);
      if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        cudaMemPool_t pool;
        if (cudaDeviceSynchronize() == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
          cudaMemPoolTrimTo(pool, 0);
        }
        cudaGetLastError();
        err = cudaMallocAsync(&p, size, s);
      }
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      return CudaErrorToStatus(err, absl::StrCat("cudaMallocAsync of ", bytes, " bytes on device ", device));
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (CacheableLocked(s)) live_[p] = Live{device, s, size};
    return p;
  }

  void Free(void* ptr, const Stream& stream) override { FreeOnDevice(ptr, -1, stream); }

  // Free for a block of CUDA device `device` (-1: the current device's). A cached block
  // goes on the free list of its own device (recorded when it was handed out), so it is
  // only ever reused there; a block given back to the pool is freed with its device
  // current, since the legacy default stream is the current device's.
  void FreeOnDevice(void* ptr, int device, const Stream& stream) {
    if (ptr == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = live_.find(ptr);
      if (it != live_.end()) {
        const Live b = it->second;
        live_.erase(it);
        // The block is freed on the stream it was allocated on (Storage keeps it), so its
        // allocation stream is the one whose order protects it.
        if (b.stream == stream.cuda_stream()) {
          free_[Key{b.device, b.stream, b.size}].push_back(ptr);
          cached_bytes_ += b.size;
          return;
        }
      }
    }
    CudaDeviceGuard guard;
    if (device >= 0 && !guard.Set(device).ok()) {
      cudaGetLastError();
      return;  // the device is gone: so is its memory
    }
    FreeToPool(ptr, stream.cuda_stream());
  }

  void RegisterStream(cudaStream_t s) {
    std::lock_guard<std::mutex> lock(mu_);
    owned_.insert(s);
  }

  // Gives the cached blocks of `device` (every device when negative) freed on `stream`
  // (on any stream when `any_stream`) back to the pool, each ordered on its stream.
  void ReleaseCached(int device, cudaStream_t stream, bool any_stream) {
    struct Block {
      void* p;
      cudaStream_t stream;
      int device;
    };
    std::vector<Block> blocks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = free_.begin(); it != free_.end();) {
        const Key& k = it->first;
        if ((device < 0 || k.device == device) && (any_stream || k.stream == stream)) {
          for (void* p : it->second) blocks.push_back(Block{p, k.stream, k.device});
          cached_bytes_ -= k.size * it->second.size();
          free_.erase(it++);
        } else {
          ++it;
        }
      }
    }
    if (blocks.empty()) return;
    // The legacy default stream is the current device's: a block cached for another
    // device's is freed with that device current, in that stream's order. A stream
    // KPS created names its device itself.
    int current = 0;
    if (cudaGetDevice(&current) != cudaSuccess) {
      cudaGetLastError();
      current = -1;
    }
    for (const Block& b : blocks) {
      const bool switch_device = AlwaysCacheable(b.stream) && current >= 0 && b.device != current;
      if (switch_device && cudaSetDevice(b.device) != cudaSuccess) {
        cudaGetLastError();
        continue;  // the device is gone: so is its memory
      }
      FreeToPool(b.p, b.stream);
      if (switch_device) cudaSetDevice(current);
    }
  }

  void ForgetStream(cudaStream_t s) {
    ReleaseCached(-1, s, /*any_stream=*/false);
    std::lock_guard<std::mutex> lock(mu_);
    owned_.erase(s);
    // Blocks of it still in use go to the pool when their tensors go, not to a free list
    // that a later stream with the same handle value would find.
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.stream == s) {
        live_.erase(it++);
      } else {
        ++it;
      }
    }
  }

  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_bytes_;
  }

 private:
  struct Key {
    int device;
    cudaStream_t stream;
    size_t size;
    bool operator==(const Key& o) const { return device == o.device && stream == o.stream && size == o.size; }
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.device, reinterpret_cast<uintptr_t>(k.stream), k.size);
    }
  };
  struct Live {
    int device;
    cudaStream_t stream;
    size_t size;
  };

  static void FreeToPool(void* ptr, cudaStream_t s) {
    // Failure here means the context is gone (process exit) or the stream was destroyed
    // before the tensors on it: nothing useful can be done but say so.
    cudaError_t err = cudaFreeAsync(ptr, s);
    if (err != cudaSuccess && err != cudaErrorCudartUnloading) {
      KPS_LOG(WARNING) << "cudaFreeAsync failed: " << cudaGetErrorString(err);
      cudaGetLastError();
    }
  }

  // The default pool returns memory to the driver at every synchronization unless its
  // release threshold is raised; then blocks the cache does not hold (other sizes, other
  // streams) are still reused without driver calls.
  static absl::Status ConfigurePoolOnce(int dev) {
    static_assert(kMaxCudaDevices <= 64, "a bit per device");
    static std::atomic<uint64_t> configured{0};
    uint64_t bit = dev >= 0 && dev < kMaxCudaDevices ? (uint64_t{1} << dev) : 0;
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

  std::mutex mu_;
  absl::flat_hash_map<Key, std::vector<void*>> free_;
  absl::flat_hash_map<void*, Live> live_;  // blocks handed out that may come back to free_
  absl::flat_hash_set<cudaStream_t> owned_;

  // Whether blocks of stream s are cached (see AlwaysCacheable); mu_ held.
  bool CacheableLocked(cudaStream_t s) const { return AlwaysCacheable(s) || owned_.count(s) > 0; }
  size_t cached_bytes_ = 0;
};

CudaAllocator* GetCudaAllocator() {
  static CudaAllocator* cuda = new CudaAllocator();
  return cuda;
}

}  // namespace

size_t CudaBlockSize(size_t bytes) {
  constexpr size_t kSmall = size_t{1} << 20;
  if (bytes <= kSmall) return (std::max<size_t>(bytes, 1) + 511) / 512 * 512;
  size_t step = kSmall / 8;  // an eighth of the power of two at or below `bytes`
  while (step * 16 <= bytes) step *= 2;
  return (bytes + step - 1) / step * step;
}

size_t CachedCudaBytes() { return GetCudaAllocator()->cached_bytes(); }

void ReleaseCachedCudaMemory() { GetCudaAllocator()->ReleaseCached(-1, nullptr, /*any_stream=*/true); }

namespace internal {
void RegisterOwnedCudaStream(cudaStream_t s) { GetCudaAllocator()->RegisterStream(s); }
void ForgetOwnedCudaStream(cudaStream_t s) { GetCudaAllocator()->ForgetStream(s); }
}  // namespace internal

namespace {

std::atomic<bool> g_poison{false};

}  // namespace

void SetAllocationPoisoning(bool on) { g_poison.store(on); }
bool AllocationPoisoning() { return g_poison.load(std::memory_order_relaxed); }

Allocator* GetAllocator(DeviceType device) {
  static CpuAllocator* cpu = new CpuAllocator();
  return device == DeviceType::kCuda ? static_cast<Allocator*>(GetCudaAllocator()) : cpu;
}

absl::StatusOr<std::shared_ptr<Storage>> Storage::Allocate(size_t bytes, Device device,
                                                          const Stream& stream) {
  Allocator* allocator = GetAllocator(device.type);
  void* p = nullptr;
  int index = -1;  // the CUDA device, learnt below
  CudaDeviceGuard guard;
  if (device.type == DeviceType::kCpu) {
    KPS_ASSIGN_OR_RETURN(p, allocator->Allocate(bytes, stream));
  } else {
    // Index -1 takes the stream's GPU where the stream records one, else the current GPU.
    const int want = device.index >= 0 ? device.index : stream.device_index();
    if (stream.device_index() >= 0 && stream.device_index() != want) {
      return absl::InvalidArgumentError(absl::StrCat("CUDA allocation on cuda:", want, " with a stream of cuda:",
                                                     stream.device_index()));
    }
    if (want >= 0) {
      KPS_RETURN_IF_ERROR(guard.Set(want));
      index = want;
    }
    KPS_ASSIGN_OR_RETURN(p, GetCudaAllocator()->AllocateOnCurrent(bytes, stream, &index));
  }
  if (bytes > 0 && AllocationPoisoning()) {
    if (device.type == DeviceType::kCpu) {
      std::memset(p, 0xFF, bytes);
    } else {
      KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0xFF, bytes, stream.cuda_stream()), "cudaMemsetAsync (poison)");
    }
  }
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = p;
  s->bytes_ = bytes;
  s->device_ = device.type;
  s->device_index_ = index;
  s->free_stream_ = stream;
  s->allocator_ = allocator;
  return s;
}

std::shared_ptr<Storage> Storage::Wrap(void* data, size_t bytes, Device device,
                                       std::function<void(void*)> deleter) {
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = data;
  s->bytes_ = bytes;
  s->device_ = device.type;
  s->device_index_ = device.index;
  if (device.type == DeviceType::kCuda && device.index < 0) {
    // No GPU (a placeholder for shape inference): index 0, so that every CUDA storage has one.
    absl::StatusOr<int> current = CurrentCudaDevice();
    if (!current.ok()) cudaGetLastError();
    s->device_index_ = current.ok() ? *current : 0;
  }
  s->deleter_ = std::move(deleter);
  return s;
}

Storage::~Storage() {
  if (allocator_ != nullptr) {
    if (device_ == DeviceType::kCuda) {
      GetCudaAllocator()->FreeOnDevice(data_, device_index_, free_stream_);
    } else {
      allocator_->Free(data_, free_stream_);
    }
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace kps
