// Tensor: a typed, strided view of shared storage on one device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "registry/allocator.h"
#include "registry/data_type.h"
#include "registry/device.h"
#include "registry/shape.h"
#include "registry/stream.h"

namespace kps {

namespace internal {
[[noreturn]] void DieOnDataTypeMismatch(DataType have, DataType want);
}  // namespace internal

class Tensor {
 public:
  // An undefined tensor (defined() is false): the value of an absent optional input.
  Tensor() = default;

  // A new contiguous tensor, uninitialized. CUDA memory is allocated on `stream`, on GPU
  // `device.index` (-1, as for a plain DeviceType::kCuda: the stream's GPU if it records
  // one, else the current GPU); a GPU that does not exist is an InvalidArgument error.
  // E.g. Empty(shape, dtype, Device(DeviceType::kCuda, 1)).
  static absl::StatusOr<Tensor> Empty(const Shape& shape, DataType dtype, Device device,
                                      const Stream& stream = Stream());
  // A new CPU tensor holding a copy of `values` (row-major, values.size() == numel).
  template <typename T>
  static absl::StatusOr<Tensor> FromVector(const std::vector<T>& values, const Shape& shape);
  // A view of existing storage. Checks that every element lies inside the storage.
  static absl::StatusOr<Tensor> FromStorage(std::shared_ptr<Storage> storage, DataType dtype,
                                            const Shape& shape, absl::Span<const int64_t> strides,
                                            int64_t offset);

  bool defined() const { return storage_ != nullptr; }
  DataType dtype() const { return dtype_; }
  DeviceType device() const { return device_; }  // the dispatch key
  // The CUDA device ordinal of the storage (>= 0 on CUDA); -1 on the CPU.
  int device_index() const { return device_index_; }
  Device place() const { return Device(device_, device_index_); }  // e.g. cuda:1
  const Shape& shape() const { return shape_; }
  const DimVector& strides() const { return strides_; }
  int64_t offset() const { return offset_; }  // in elements, from the storage's start
  int rank() const { return shape_.rank(); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * DataTypeSize(dtype_); }
  bool is_contiguous() const { return contiguous_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Address of element 0.
  void* raw_data() const {
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(DataTypeSize(dtype_));
  }
  // Typed address of element 0; aborts if T is not the tensor's type (an internal bug).
  template <typename T>
  T* data() const {
    if (DataTypeOf<T>() != dtype_) internal::DieOnDataTypeMismatch(dtype_, DataTypeOf<T>());
    return static_cast<T*>(raw_data());
  }

  // A view with another shape/strides/offset over the same storage (bounds checked).
  absl::StatusOr<Tensor> AsStrided(const Shape& shape, absl::Span<const int64_t> strides,
                                   int64_t offset) const;
  // Elements [start, end) of dimension `dim`, as a view.
  absl::StatusOr<Tensor> Slice(int dim, int64_t start, int64_t end) const;
  // Swaps two dimensions, as a view.
  absl::StatusOr<Tensor> Transpose(int dim0, int dim1) const;

  // A contiguous copy on `device`. Copies between host and device are ordered on
  // `stream` and complete before this returns when either side is the CPU. A strided
  // CUDA source is gathered through the host. CUDA work runs with the GPU of the CUDA
  // end current (the source's when both are). A CUDA target of index -1 is the source's
  // GPU for a CUDA source, else the current one. Between two GPUs the copy is a peer
  // copy ordered on `stream` (the source GPU's), and the target GPU's default stream
  // waits for it (events, no host wait).
  absl::StatusOr<Tensor> To(Device device, const Stream& stream = Stream()) const;

  // The elements as a host vector of T (copying from the device if needed).
  template <typename T>
  absl::StatusOr<std::vector<T>> ToVector(const Stream& stream = Stream()) const;

  // "Tensor(float32[2, 3], cuda:0)".
  std::string DebugString() const;

 private:
  void SetLayout(const Shape& shape, absl::Span<const int64_t> strides, int64_t offset);

  std::shared_ptr<Storage> storage_;
  DataType dtype_ = DataType::kFloat32;
  DeviceType device_ = DeviceType::kCpu;
  int device_index_ = -1;
  Shape shape_;
  DimVector strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  bool contiguous_ = true;
};

// Copies `bytes` between buffers on any devices, ordered on `stream` (synchronously
// when an end is on the CPU, so the host buffer is safe to use on return). CUDA work is
// queued on the current GPU (a null stream is its legacy default stream): make the CUDA
// end's device current first (CudaDeviceGuard), as Tensor::To does.
absl::Status CopyBytes(void* dst, DeviceType dst_device, const void* src, DeviceType src_device,
                       size_t bytes, const Stream& stream);

template <typename T>
absl::StatusOr<Tensor> Tensor::FromVector(const std::vector<T>& values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape.numel()) {
    return absl::InvalidArgumentError("Tensor::FromVector: " + std::to_string(values.size()) +
                                      " values for shape " + shape.ToString());
  }
  auto t = Empty(shape, DataTypeOf<T>(), DeviceType::kCpu);
  if (!t.ok()) return t.status();
  T* dst = t->template data<T>();
  for (size_t i = 0; i < values.size(); ++i) dst[i] = values[i];
  return t;
}

template <typename T>
absl::StatusOr<std::vector<T>> Tensor::ToVector(const Stream& stream) const {
  if (DataTypeOf<T>() != dtype_) {
    return absl::InvalidArgumentError("Tensor::ToVector: asked for " +
                                      std::string(DataTypeName(DataTypeOf<T>())) +
                                      " from a " + std::string(DataTypeName(dtype_)) + " tensor");
  }
  auto host = To(DeviceType::kCpu, stream);
  if (!host.ok()) return host.status();
  const T* p = host->template data<T>();
  return std::vector<T>(p, p + numel_);
}

}  // namespace kps
