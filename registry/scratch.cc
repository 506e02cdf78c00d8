#include "registry/scratch.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "registry/status.h"

namespace kps {
namespace {

struct Entry {
  int device = 0;
  cudaStream_t stream = nullptr;
  void* data = nullptr;
  size_t data_bytes = 0;
  unsigned* tickets = nullptr;
  size_t num_tickets = 0;
};

// Few streams live at once, so a vector searched from the most recent entry is enough.
std::mutex& Mu() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
std::vector<Entry>& Entries() {
  static auto* entries = new std::vector<Entry>();
  return *entries;
}

size_t GrowTo(size_t need, size_t floor) {
  size_t n = floor;
  while (n < need) n *= 2;
  return n;
}

}  // namespace

absl::StatusOr<ScratchSpace> GetStreamScratch(const Stream& stream, size_t data_bytes, size_t num_tickets) {
  if (stream.device() != DeviceType::kCuda) {  // before asking for a device a CPU-only machine lacks
    return absl::InvalidArgumentError("stream scratch needs a CUDA stream, got a CPU stream");
  }
  int device = 0;
  KPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  return GetStreamScratch(stream, data_bytes, num_tickets, device);
}

absl::StatusOr<ScratchSpace> GetStreamScratch(const Stream& stream, size_t data_bytes, size_t num_tickets,
                                              int device) {
  if (stream.device() != DeviceType::kCuda) {
    return absl::InvalidArgumentError("stream scratch needs a CUDA stream, got a CPU stream");
  }
  const cudaStream_t s = stream.cuda_stream();
  std::lock_guard<std::mutex> lock(Mu());
  std::vector<Entry>& entries = Entries();
  auto it = std::find_if(entries.rbegin(), entries.rend(),
                         [&](const Entry& e) { return e.stream == s && e.device == device; });
  Entry* e = nullptr;
  if (it == entries.rend()) {
    entries.push_back(Entry{device, s});
    e = &entries.back();
  } else {
    e = &*it;
  }
  if (data_bytes > e->data_bytes) {
    const size_t bytes = GrowTo(data_bytes, size_t{64} << 10);
    void* p = nullptr;
    KPS_CUDA_RETURN_IF_ERROR(cudaMallocAsync(&p, bytes, s),
                             absl::StrCat("cudaMallocAsync of ", bytes, " bytes of stream scratch"));
    if (e->data != nullptr) cudaFreeAsync(e->data, s);
    e->data = p;
    e->data_bytes = bytes;
  }
  if (num_tickets > e->num_tickets) {
    const size_t count = GrowTo(num_tickets, 1024);
    void* p = nullptr;
    KPS_CUDA_RETURN_IF_ERROR(cudaMallocAsync(&p, count * sizeof(unsigned), s),
                             "cudaMallocAsync of stream scratch tickets");
    const cudaError_t err = cudaMemsetAsync(p, 0, count * sizeof(unsigned), s);
    if (err != cudaSuccess) {
      cudaFreeAsync(p, s);
      KPS_CUDA_RETURN_IF_ERROR(err, "cudaMemsetAsync of stream scratch tickets");
    }
    if (e->tickets != nullptr) cudaFreeAsync(e->tickets, s);
    e->tickets = static_cast<unsigned*>(p);
    e->num_tickets = count;
  }
  return ScratchSpace{e->data, e->tickets, e->num_tickets};
}

void ReleaseStreamScratch(cudaStream_t stream) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  std::lock_guard<std::mutex> lock(Mu());
  std::vector<Entry>& entries = Entries();
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->stream == stream && (stream != nullptr || it->device == device)) {
      if (it->data != nullptr) cudaFreeAsync(it->data, stream);
      if (it->tickets != nullptr) cudaFreeAsync(it->tickets, stream);
      it = entries.erase(it);
    } else {
      ++it;
    }
  }
  cudaGetLastError();  // a failed free (the context is going away) is not the caller's error
}

}  // namespace kps
