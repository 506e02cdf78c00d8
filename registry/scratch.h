// Stream scratch: device memory that outlives calls, one block per (device, stream), for
// kernels on the eager path whose temporary needs are small. Taking it costs a lock and a
// map lookup instead of the driver calls of an allocation (cudaMallocAsync and its free
// cost about 1.7 us of host time on the H100 machine, all of it before the kernel starts)
// and of a memset for counters that must start at zero.
//
// It is not a tensor allocator (tensors come from allocator.h's cache over the runtime's
// pool): it also hands out counters that start at zero. A launcher takes the scratch,
// queues its kernels on the same stream and is done with it; the next caller on that
// stream is ordered after those kernels.
//
//   KPS_ASSIGN_OR_RETURN(ScratchSpace s, GetStreamScratch(stream, partial_bytes, groups));
//   KPS_RETURN_IF_ERROR(LaunchKernel<&MyKernel>("MyKernel", grid, block, 0, stream.cuda_stream(), ..., s.data,
//                                               s.tickets));
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "absl/status/statusor.h"
#include "registry/stream.h"

namespace kps {

struct ScratchSpace {
  // At least the bytes asked for, 256-byte aligned; contents undefined.
  void* data = nullptr;
  // At least the count asked for, each 0 when a kernel starts: a kernel that counts on
  // them must set every ticket it moved back to 0 before it ends (typically the block
  // that takes the last ticket of a group). Stream order then hands zeros to the next.
  unsigned* tickets = nullptr;
  size_t num_tickets = 0;  // how many `tickets` holds (for tests that check them all)
};

// The scratch of `stream` (a CUDA stream; the current device's), grown to hold
// `data_bytes` and `num_tickets`. Growing frees the old block in stream order, so
// kernels already queued keep theirs; a pointer is good for the work the caller queues on
// `stream` before its next GetStreamScratch call for that stream. Several host threads
// queueing on one stream must serialize their calls, as they must for the order of
// their kernels anyway.
absl::StatusOr<ScratchSpace> GetStreamScratch(const Stream& stream, size_t data_bytes, size_t num_tickets);
// The same for a caller that knows the current device (`device`, cudaGetDevice's).
absl::StatusOr<ScratchSpace> GetStreamScratch(const Stream& stream, size_t data_bytes, size_t num_tickets,
                                              int device);

// Frees the scratch of `stream` on the current device, ordered after its queued work.
// OwnedCudaStream calls it before destroying its stream; for a stream the caller owns,
// call it before cudaStreamDestroy (otherwise the block stays until the process ends).
void ReleaseStreamScratch(cudaStream_t stream);

}  // namespace kps
