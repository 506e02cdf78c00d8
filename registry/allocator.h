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

// The process-wide allocator of `device`. CUDA memory comes from the runtime's
// stream-ordered pool (cudaMallocAsync on the call's stream), whose release threshold
// KPS raises so freed blocks are reused instead of returned to the driver.
Allocator* GetAllocator(DeviceType device);

// For tests: while on, every new Storage::Allocate block is filled with 0xFF bytes
// (NaN for floats, -1 for integers) before it is returned, so an element a kernel
// fails to write shows up in the comparison instead of passing as stale data.
void SetAllocationPoisoning(bool on);
bool AllocationPoisoning();

// A block of memory owned by an allocator, shared by every tensor viewing it.
class Storage {
 public:
  static absl::StatusOr<std::shared_ptr<Storage>> Allocate(size_t bytes, DeviceType device,
                                                          const Stream& stream);
  // Wraps memory the caller owns; `deleter` (may be empty) runs when the last tensor goes.
  static std::shared_ptr<Storage> Wrap(void* data, size_t bytes, DeviceType device,
                                       std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  DeviceType device() const { return device_; }

 private:
  Storage() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  DeviceType device_ = DeviceType::kCpu;
  Stream free_stream_;                   // where an allocator-owned block is freed
  Allocator* allocator_ = nullptr;       // null for wrapped memory
  std::function<void(void*)> deleter_;   // for wrapped memory
};

}  // namespace kps
