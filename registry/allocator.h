// Allocators and Storage: the memory behind tensors.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "registry/device.h"
#include "registry/stream.h"

namespace kps {

// CPU buffers are aligned to this, so every vector width is usable on any fresh buffer.
inline constexpr size_t kCpuAlignment = 64;

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DeviceType device() const = 0;
  // `bytes` may be 0: the result is then a valid, unique pointer that must not be read.
  virtual absl::StatusOr<void*> Allocate(size_t bytes, const Stream& stream) = 0;
  // Returns the memory, ordered after the work queued on `stream`.
  virtual void Free(void* ptr, const Stream& stream) = 0;
};

// The process-wide allocator of `device`.
//
// CUDA memory comes from the runtime's stream-ordered pool (cudaMallocAsync on the
// call's stream, release threshold raised so the pool keeps what it has), with a cache in
// front of it: a block freed on the legacy default stream or on a stream KPS created
// (OwnedCudaStream) waits on that stream's free list for its size
// class (CudaBlockSize), and the next allocation of that class on that stream takes it
// back without a CUDA call. Same-stream reuse needs no event: the stream orders the old
// tensor's work before the new one's. Blocks of streams the caller owns (and of
// cudaStreamPerThread, a different stream in each thread) go straight back to the pool,
// since such a stream may be destroyed and its handle reused unannounced.
// When the pool runs out, the cache is given back and the allocation tried again.
Allocator* GetAllocator(DeviceType device);

// The size the CUDA allocator reserves for `bytes`: whole 512-byte units up to 1 MiB,
// above that whole eighths of the power of two at or below it (at most 12.5% more).
size_t CudaBlockSize(size_t bytes);

// Bytes of CUDA memory held in the allocator's free lists, on every device.
size_t CachedCudaBytes();

// Gives every cached CUDA block back to the runtime's pool (each freed in the order of
// the stream it was cached for), like torch.cuda.empty_cache(): for a process that is
// done with a large working set, or that hands memory to another library.
void ReleaseCachedCudaMemory();

namespace internal {
// OwnedCudaStream announces its stream when created and before destroying it: blocks
// freed on it are cached only in between.
void RegisterOwnedCudaStream(cudaStream_t stream);
void ForgetOwnedCudaStream(cudaStream_t stream);
}  // namespace internal

// For tests: while on, every new Storage::Allocate block is filled with 0xFF bytes
// (NaN for floats, -1 for integers) before it is returned, so an element a kernel
// fails to write shows up in the comparison instead of passing as stale data.
void SetAllocationPoisoning(bool on);
bool AllocationPoisoning();

// A block of memory owned by an allocator, shared by every tensor viewing it.
class Storage {
 public:
  // `bytes` on `device`: CUDA memory on GPU `device.index` (-1: the stream's GPU if it
  // records one, else the current GPU), taken with that GPU current and given back with
  // it current. A GPU that does not exist, or a `stream` recorded as another GPU's, is an
  // InvalidArgument error.
  static absl::StatusOr<std::shared_ptr<Storage>> Allocate(size_t bytes, Device device,
                                                          const Stream& stream);
  // Wraps memory the caller owns; `deleter` (may be empty) runs when the last tensor goes.
  // CUDA memory of index -1 is recorded as the current device's.
  static std::shared_ptr<Storage> Wrap(void* data, size_t bytes, Device device,
                                       std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  DeviceType device() const { return device_; }
  // The CUDA device ordinal of the memory; -1 on the CPU.
  int device_index() const { return device_index_; }
  Device place() const { return Device(device_, device_index_); }

 private:
  Storage() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  DeviceType device_ = DeviceType::kCpu;
  int device_index_ = -1;
  Stream free_stream_;                   // where an allocator-owned block is freed
  Allocator* allocator_ = nullptr;       // null for wrapped memory
  std::function<void(void*)> deleter_;   // for wrapped memory
};

}  // namespace kps
