// Times example_softmax beside KPS's built-in row sum (`sum` over dim 1: one read of
// the same rows, the floor a row-wise op can hope for) and KPS's `neg` (one read and
// one write of the same tensor, the ceiling of an op that writes what it reads) on
// [N, C] tensors of 256 MiB of float32 (the same element counts in bfloat16). Each is timed
// as a single call (CUDA events around one eager call on the default stream, its output
// allocation included, median of 30 after 5 warm-ups) and back to back (30 calls
// between two events, per call). One line per (op, dtype, shape), as softmax_torch.py
// prints PyTorch's:
//
//   op=example_softmax dtype=float32 shape=[65536,1024] single_ms=... single_GBps=... b2b_ms=... b2b_GBps=...
//
// GB/s count the fewest bytes each op must move: softmax and neg read x and write out
// (2 * numel * elem), the row sum reads x and writes one value per row.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "registry/call.h"
#include "registry/data_type.h"
#include "registry/device.h"
#include "registry/status.h"

namespace {

constexpr int kWarmup = 5;
constexpr int kReps = 30;
constexpr int64_t kNumel = (int64_t{256} << 20) / 4;  // 256 MiB of float32

struct Times {
  double single_ms = 0;
  double b2b_ms = 0;
};

absl::StatusOr<Times> Time(const std::function<absl::Status()>& call) {
  cudaEvent_t start = nullptr, stop = nullptr;
  KPS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start), "cudaEventCreate");
  KPS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop), "cudaEventCreate");
  auto timed = [&](int calls) -> absl::StatusOr<double> {
    KPS_CUDA_RETURN_IF_ERROR(cudaEventRecord(start, nullptr), "cudaEventRecord");
    for (int i = 0; i < calls; ++i) KPS_RETURN_IF_ERROR(call());
    KPS_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop, nullptr), "cudaEventRecord");
    KPS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    KPS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    return ms;
  };
  Times t;
  absl::Status status = [&]() -> absl::Status {
    for (int i = 0; i < kWarmup; ++i) KPS_RETURN_IF_ERROR(call());
    KPS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<double> singles;
    for (int i = 0; i < kReps; ++i) {
      KPS_ASSIGN_OR_RETURN(const double ms, timed(1));
      singles.push_back(ms);
    }
    std::sort(singles.begin(), singles.end());
    t.single_ms = kReps % 2 ? singles[kReps / 2] : (singles[kReps / 2 - 1] + singles[kReps / 2]) / 2;
    KPS_ASSIGN_OR_RETURN(const double all_ms, timed(kReps));
    t.b2b_ms = all_ms / kReps;
    return absl::OkStatus();
  }();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status.ok()) return status;
  return t;
}

void Print(const char* op, kps::DataType dtype, int64_t rows, int64_t cols, double bytes, const Times& t) {
  std::printf("op=%s dtype=%s shape=[%lld,%lld] single_ms=%.4f single_GBps=%.1f b2b_ms=%.4f b2b_GBps=%.1f\n", op,
              std::string(kps::DataTypeName(dtype)).c_str(), static_cast<long long>(rows),
              static_cast<long long>(cols), t.single_ms, bytes / t.single_ms / 1e6, t.b2b_ms,
              bytes / t.b2b_ms / 1e6);
  std::fflush(stdout);
}

// The first row of a softmax output sums to 1: a broken kernel must not pass as fast.
absl::Status CheckFirstRow(const kps::Tensor& out, int64_t cols) {
  const size_t elem = kps::DataTypeSize(out.dtype());
  std::vector<unsigned char> bytes(static_cast<size_t>(cols) * elem);
  KPS_CUDA_RETURN_IF_ERROR(cudaMemcpy(bytes.data(), out.raw_data(), bytes.size(), cudaMemcpyDeviceToHost),
                           "cudaMemcpy");
  double sum = 0;
  for (int64_t c = 0; c < cols; ++c) {
    if (out.dtype() == kps::DataType::kBFloat16) {
      sum += __bfloat162float(reinterpret_cast<const kps::bfloat16*>(bytes.data())[c]);
    } else {
      sum += reinterpret_cast<const float*>(bytes.data())[c];
    }
  }
  if (!(std::abs(sum - 1.0) < 0.05)) {
    return absl::InternalError(absl::StrCat("example_softmax: the first row sums to ", sum, ", not 1"));
  }
  return absl::OkStatus();
}

absl::Status Run() {
  for (kps::DataType dtype : {kps::DataType::kFloat32, kps::DataType::kBFloat16}) {
    const double elem = static_cast<double>(kps::DataTypeSize(dtype));
    for (int64_t cols : {1024, 2048, 4096, 8192, 16384}) {
      const int64_t rows = kNumel / cols;
      KPS_ASSIGN_OR_RETURN(const kps::Tensor x, kps::Call("normal")
                                                    .Attr("shape", std::vector<int64_t>{rows, cols})
                                                    .Attr("dtype", dtype)
                                                    .Attr("seed", cols)
                                                    .OnDevice(kps::DeviceType::kCuda)
                                                    .RunOne());
      KPS_ASSIGN_OR_RETURN(const kps::Tensor first, kps::Call("example_softmax").Input("x", x).RunOne());
      KPS_RETURN_IF_ERROR(CheckFirstRow(first, cols));
      const double numel = static_cast<double>(rows) * static_cast<double>(cols);
      KPS_ASSIGN_OR_RETURN(const Times softmax, Time([&] {
                             return kps::Call("example_softmax").Input("x", x).Run().status();
                           }));
      Print("example_softmax", dtype, rows, cols, 2 * numel * elem, softmax);
      KPS_ASSIGN_OR_RETURN(const Times sum, Time([&] {
                             return kps::Call("sum").Input("x", x).Attr("dims", std::vector<int64_t>{1}).Run().status();
                           }));
      Print("kps_sum_dim1", dtype, rows, cols, numel * elem + static_cast<double>(rows) * elem, sum);
      KPS_ASSIGN_OR_RETURN(const Times neg, Time([&] { return kps::Call("neg").Input("x", x).Run().status(); }));
      Print("kps_neg", dtype, rows, cols, 2 * numel * elem, neg);
    }
  }
  return absl::OkStatus();
}

}  // namespace

int main() {
  if (!kps::CudaAvailable()) {
    std::fprintf(stderr, "softmax_bench: no CUDA device\n");
    return 1;
  }
  const absl::Status s = Run();
  if (!s.ok()) {
    std::fprintf(stderr, "softmax_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
