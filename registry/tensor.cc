#include "registry/tensor.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "registry/checked_math.h"
#include "registry/logging.h"
#include "registry/status.h"

namespace kps {
namespace internal {
void DieOnDataTypeMismatch(DataType have, DataType want) {
  KPS_LOG(FATAL) << "Tensor::data<" << DataTypeName(want) << ">() on a " << DataTypeName(have)
                 << " tensor";
  abort();
}
}  // namespace internal

namespace {

// A CUDA tensor built with a CPU stream (the default argument) uses CUDA's default stream.
Stream StreamFor(DeviceType device, const Stream& stream) {
  if (device == DeviceType::kCuda && stream.device() != DeviceType::kCuda) return Stream::Cuda();
  return stream;
}

// Copies the strided elements at `src` into contiguous `dst`, element by element.
void GatherStrided(char* dst, const char* src, const Shape& shape, absl::Span<const int64_t> strides,
                   size_t elem) {
  const int rank = shape.rank();
  const int64_t n = shape.numel();
  if (n == 0) return;
  DimVector index(rank, 0);
  int64_t src_off = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * elem, src + src_off * static_cast<int64_t>(elem), elem);
    for (int d = rank - 1; d >= 0; --d) {  // odometer increment
      if (++index[d] < shape[d]) {
        src_off += strides[d];
        break;
      }
      src_off -= strides[d] * (shape[d] - 1);
      index[d] = 0;
    }
  }
}

// A CUDA event without timing, destroyed with the object (its pending record completes
// first: cudaEventDestroy defers the release).
class ScopedEvent {
 public:
  ScopedEvent() = default;
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;
  ~ScopedEvent() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  // Creates the event on the current device and records it on `stream` (of that device).
  absl::Status Record(cudaStream_t stream) {
    KPS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    KPS_CUDA_RETURN_IF_ERROR(cudaEventRecord(event_, stream), "cudaEventRecord");
    return absl::OkStatus();
  }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// `src` (a CUDA tensor) copied to GPU `dst_index`, another GPU. The copy is ordered on
// `stream`, which must be the source GPU's (a CPU stream: the source's legacy default
// stream). The target is allocated on its GPU's legacy default stream; the copy waits
// for that allocation, and that stream waits for the copy, so work queued there (and the
// target's eventual free) comes after it. Strided sources go through the host, as
// every strided CUDA source of To.
absl::StatusOr<Tensor> CopyBetweenGpus(const Tensor& src, int dst_index, const Stream& stream) {
  const int src_index = src.device_index();
  const Device target(DeviceType::kCuda, dst_index);
  const std::string what = absl::StrCat("Tensor::To(", DeviceName(target), ") of a ", DeviceName(src.place()),
                                        " tensor");
  if (stream.device_index() >= 0 && stream.device_index() != src_index) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the stream is on cuda:", stream.device_index(),
                                                   "; the copy is ordered on a stream of the source's GPU"));
  }
  if (!src.is_contiguous()) {
    KPS_ASSIGN_OR_RETURN(Tensor host, src.To(DeviceType::kCpu, stream));
    return host.To(target);
  }
  const cudaStream_t s = stream.device() == DeviceType::kCuda ? stream.cuda_stream() : nullptr;
  KPS_ASSIGN_OR_RETURN(Tensor dst, Tensor::Empty(src.shape(), src.dtype(), target));
  if (src.numel() == 0) return dst;
  CudaDeviceGuard guard;
  KPS_RETURN_IF_ERROR(guard.Set(dst_index));
  ScopedEvent allocated, copied;
  KPS_RETURN_IF_ERROR(allocated.Record(nullptr));
  KPS_RETURN_IF_ERROR(guard.Set(src_index));
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(s, allocated.get(), 0), absl::StrCat(what, ": cudaStreamWaitEvent"));
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyPeerAsync(dst.raw_data(), dst_index, src.raw_data(), src_index, src.nbytes(), s),
                           absl::StrCat(what, ": cudaMemcpyPeerAsync"));
  KPS_RETURN_IF_ERROR(copied.Record(s));
  KPS_RETURN_IF_ERROR(guard.Set(dst_index));
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(nullptr, copied.get(), 0), absl::StrCat(what, ": cudaStreamWaitEvent"));
  return dst;
}

}  // namespace

absl::Status CopyBytes(void* dst, DeviceType dst_device, const void* src, DeviceType src_device,
                       size_t bytes, const Stream& stream) {
  if (bytes == 0) return absl::OkStatus();
  if (dst_device == DeviceType::kCpu && src_device == DeviceType::kCpu) {
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  Stream s = StreamFor(DeviceType::kCuda, stream);
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.cuda_stream()),
                           "cudaMemcpyAsync");
  if (dst_device == DeviceType::kCpu || src_device == DeviceType::kCpu) {
    KPS_RETURN_IF_ERROR(s.Synchronize());
  }
  return absl::OkStatus();
}

void Tensor::SetLayout(const Shape& shape, absl::Span<const int64_t> strides, int64_t offset) {
  shape_ = shape;
  strides_.assign(strides.begin(), strides.end());
  offset_ = offset;
  numel_ = shape.numel();
  contiguous_ = IsContiguous(shape_, strides_);
}

absl::StatusOr<Tensor> Tensor::Empty(const Shape& shape, DataType dtype, Device device,
                                     const Stream& stream) {
  KPS_RETURN_IF_ERROR(ValidateShape(shape, "Tensor::Empty"));
  if (device.type == DeviceType::kCuda && device.index >= 0) {
    KPS_RETURN_IF_ERROR(CheckCudaDevice(device.index));  // before any CUDA call: no GPU is not a crash
  }
  Tensor t;
  t.dtype_ = dtype;
  t.device_ = device.type;
  t.SetLayout(shape, ContiguousStrides(shape), 0);
  KPS_ASSIGN_OR_RETURN(t.storage_, Storage::Allocate(t.nbytes(), device, StreamFor(device.type, stream)));
  t.device_index_ = t.storage_->device_index();
  return t;
}

absl::StatusOr<Tensor> Tensor::FromStorage(std::shared_ptr<Storage> storage, DataType dtype,
                                           const Shape& shape, absl::Span<const int64_t> strides,
                                           int64_t offset) {
  if (storage == nullptr) return absl::InvalidArgumentError("Tensor::FromStorage: null storage");
  if (static_cast<int>(strides.size()) != shape.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("Tensor view: ", strides.size(),
                                                   " strides for shape ", shape.ToString()));
  }
  if (offset < 0) return absl::InvalidArgumentError("Tensor view: negative offset");
  KPS_RETURN_IF_ERROR(ValidateShape(shape, "Tensor view"));
  const auto out_of_range = [&](const std::string& why) {
    return absl::OutOfRangeError(absl::StrCat("Tensor view: shape ", shape.ToString(), " strides ",
                                              DimsToString(strides), " offset ", offset, " ", why));
  };
  // The last element's index, offset + sum((size - 1) * stride), in checked arithmetic:
  // a wrapped sum would pass the bounds check below and let a copy read far outside.
  int64_t last = offset;
  for (int i = 0; i < shape.rank(); ++i) {
    if (strides[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("Tensor view: negative stride (shape ",
                                                     shape.ToString(), ", strides ",
                                                     DimsToString(strides), ")"));
    }
    int64_t reach = 0;
    if (shape[i] > 0 && (MulOverflow(shape[i] - 1, strides[i], &reach) || AddOverflow(last, reach, &last))) {
      return out_of_range("reaches past element 2^63");
    }
  }
  const int64_t capacity = static_cast<int64_t>(storage->bytes() / DataTypeSize(dtype));
  if (shape.numel() > 0 && last >= capacity) {
    return out_of_range(absl::StrCat("reaches element ", last, " of a storage holding ", capacity));
  }
  Tensor t;
  t.dtype_ = dtype;
  t.device_ = storage->device();
  t.device_index_ = storage->device_index();
  t.storage_ = std::move(storage);
  t.SetLayout(shape, strides, offset);
  return t;
}

absl::StatusOr<Tensor> Tensor::AsStrided(const Shape& shape, absl::Span<const int64_t> strides,
                                         int64_t offset) const {
  return FromStorage(storage_, dtype_, shape, strides, offset);
}

absl::StatusOr<Tensor> Tensor::Slice(int dim, int64_t start, int64_t end) const {
  if (dim < 0 || dim >= rank() || start < 0 || end < start || end > shape_[dim]) {
    return absl::OutOfRangeError(absl::StrCat("Tensor::Slice(", dim, ", ", start, ", ", end,
                                              ") of shape ", shape_.ToString()));
  }
  Shape s = shape_;
  s[dim] = end - start;
  return AsStrided(s, strides_, offset_ + start * strides_[dim]);
}

absl::StatusOr<Tensor> Tensor::Transpose(int dim0, int dim1) const {
  if (dim0 < 0 || dim0 >= rank() || dim1 < 0 || dim1 >= rank()) {
    return absl::OutOfRangeError(absl::StrCat("Tensor::Transpose(", dim0, ", ", dim1,
                                              ") of rank ", rank()));
  }
  Shape s = shape_;
  DimVector st = strides_;
  std::swap(s[dim0], s[dim1]);
  std::swap(st[dim0], st[dim1]);
  return AsStrided(s, st, offset_);
}

absl::StatusOr<Tensor> Tensor::To(Device target, const Stream& stream) const {
  if (!defined()) return absl::InvalidArgumentError("Tensor::To on an undefined tensor");
  if (target.type == DeviceType::kCuda && target.index >= 0) {
    KPS_RETURN_IF_ERROR(CheckCudaDevice(target.index));
  }
  if (device_ == DeviceType::kCuda && target.type == DeviceType::kCuda && target.index >= 0 &&
      target.index != device_index_) {
    return CopyBetweenGpus(*this, target.index, stream);
  }
  // At most one GPU is involved: run with it current (a null stream is its default one).
  const int gpu = device_ == DeviceType::kCuda ? device_index_ : target.index;
  CudaDeviceGuard guard;
  if (gpu >= 0) KPS_RETURN_IF_ERROR(guard.Set(gpu));
  const DeviceType device = target.type;
  KPS_ASSIGN_OR_RETURN(Tensor dst, Empty(shape_, dtype_, device == DeviceType::kCuda ? Device(device, gpu) : target,
                                         stream));
  if (numel_ == 0) return dst;
  if (contiguous_) {
    KPS_RETURN_IF_ERROR(CopyBytes(dst.raw_data(), device, raw_data(), device_, nbytes(), stream));
    return dst;
  }
  // Strided: bring the span the view covers to the host, gather, and send it on.
  const size_t elem = DataTypeSize(dtype_);
  int64_t span = 1;
  for (int i = 0; i < rank(); ++i) span += (shape_[i] - 1) * strides_[i];
  Tensor host_span;
  const char* src = static_cast<const char*>(raw_data());
  if (device_ == DeviceType::kCuda) {
    KPS_ASSIGN_OR_RETURN(host_span, Empty(Shape{span}, dtype_, DeviceType::kCpu));
    KPS_RETURN_IF_ERROR(CopyBytes(host_span.raw_data(), DeviceType::kCpu, src, device_,
                                  span * elem, stream));
    src = static_cast<const char*>(host_span.raw_data());
  }
  if (device == DeviceType::kCpu) {
    GatherStrided(static_cast<char*>(dst.raw_data()), src, shape_, strides_, elem);
    return dst;
  }
  KPS_ASSIGN_OR_RETURN(Tensor packed, Empty(shape_, dtype_, DeviceType::kCpu));
  GatherStrided(static_cast<char*>(packed.raw_data()), src, shape_, strides_, elem);
  KPS_RETURN_IF_ERROR(CopyBytes(dst.raw_data(), device, packed.raw_data(), DeviceType::kCpu,
                                nbytes(), stream));
  return dst;
}

std::string Tensor::DebugString() const {
  if (!defined()) return "Tensor(undefined)";
  return absl::StrCat("Tensor(", DataTypeName(dtype_), shape_.ToString(), ", ",
                      DeviceName(place()), contiguous_ ? "" : ", strided", ")");
}

}  // namespace kps
