// bench_sparse: KPS's spmv (and spmm, once that op is registered) against cuSPARSE in one process, on
// matrix classes built on the host (issue 31). Both libraries read the same device arrays: int32 indptr
// and int32 indices (cuSPARSE's CSR wants one index type for both), float32 or float64 values.
//
//   build/bench_sparse                              # every class, float32, 20 single-call samples
//   build/bench_sparse --dtype f32,f64 --json sparse.json
//   build/bench_sparse --classes stencil2d_5pt,rmat --reps 30
//   build/bench_sparse --scale 0.01 --dry-run       # builds the (small) matrices, prints sizes; no GPU needed
//
// Timing follows /work/shared/PERF.md: "single call" is CUDA events around one call with a synchronize
// between calls, median of --reps, with the L2 cache flushed (a 256 MiB cudaMemsetAsync) before each
// sample; "back to back" is N calls between two events, N chosen so the batch lasts 20 ms or more. At
// --scale 1 every matrix's arrays are larger than a 50-60 MB L2, so back to back reads them from HBM too.
#include <cuda_runtime_api.h>
#include <cusparse.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "registry/call.h"
#include "registry/data_type.h"
#include "registry/device.h"
#include "registry/op_schema.h"
#include "registry/status.h"
#include "registry/stream.h"
#include "registry/tensor.h"

namespace kps {
namespace bench_sparse {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kFlushBytes = size_t{256} << 20;  // several times the H100's 50 MB and H200's 60 MB L2
constexpr double kBatchMs = 20.0;                  // PERF.md: a back-to-back batch lasts 20 ms or more
constexpr int kWarmup = 3;
// Seeds of the value streams; the matrices' structure comes from --seed.
constexpr uint64_t kValueSeed = 0x5eed0001;
constexpr uint64_t kXSeed = 0x5eed0002;
constexpr uint64_t kBSeed = 0x5eed0003;

#define BENCH_CUSPARSE_RETURN_IF_ERROR(expr)                                                                 \
  do {                                                                                                       \
    cusparseStatus_t bench_cusparse_status_ = (expr);                                                        \
    if (bench_cusparse_status_ != CUSPARSE_STATUS_SUCCESS) {                                                 \
      return absl::InternalError(absl::StrCat(#expr, ": ", cusparseGetErrorString(bench_cusparse_status_))); \
    }                                                                                                        \
  } while (0)

// ---- values: a counter-based hash, the same on host and device ---------------------------------------
// Values, x and b come from a hash of (seed, position) rather than from mt19937_64 on the host: the device
// fills arrays of billions of elements in milliseconds (spmm's b at k = 128), nothing large crosses PCIe,
// and the host reference recomputes any element it needs without a copy of the array.

__host__ __device__ inline uint64_t Mix64(uint64_t z) {  // the splitmix64 finalizer
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [-1, 1), rounded once to T. 2u - 1 is exact in double, so host and device agree bit for bit.
template <typename T>
__host__ __device__ inline T HashValue(uint64_t seed, uint64_t i) {
  const double u = static_cast<double>(Mix64(i ^ Mix64(seed)) >> 11) * 0x1.0p-53;
  return static_cast<T>(2.0 * u - 1.0);
}

template <typename T>
__global__ void FillHashKernel(T* p, int64_t n, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    p[i] = HashValue<T>(seed, static_cast<uint64_t>(i));
  }
}

template <typename T>
absl::Status FillHash(const Tensor& t, uint64_t seed, cudaStream_t stream) {
  const int64_t n = t.numel();
  if (n == 0) return absl::OkStatus();
  const int64_t blocks = std::min<int64_t>((n + 255) / 256, 4096);
  FillHashKernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(t.data<T>(), n, seed);
  KPS_RETURN_IF_LAUNCH_ERROR("FillHashKernel");
  return absl::OkStatus();
}

template <typename T>
struct CudaType;
template <>
struct CudaType<float> {
  static constexpr cudaDataType kValue = CUDA_R_32F;
  static constexpr const char* kName = "float32";
  static constexpr double kTolerance = 1e-4;
};
template <>
struct CudaType<double> {
  static constexpr cudaDataType kValue = CUDA_R_64F;
  static constexpr const char* kName = "float64";
  static constexpr double kTolerance = 1e-10;
};

// ---- matrices, built on the host ---------------------------------------------------------------------

// A CSR matrix with int32 indptr and indices: both libraries read exactly these bytes.
struct HostCsr {
  int64_t m = 0;
  int64_t n = 0;
  std::vector<int32_t> indptr;   // m + 1
  std::vector<int32_t> indices;  // nnz, sorted within each row
  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
  int64_t RowLength(int64_t r) const { return indptr[r + 1] - indptr[r]; }
};

// The generators draw raw 64-bit words only: std::uniform_int_distribution and std::shuffle are
// implementation-defined, and the matrices must be the same with every standard library.
inline int64_t Bounded(std::mt19937_64& rng, int64_t bound) {  // in [0, bound), bound <= 2^32
  return static_cast<int64_t>(((rng() >> 32) * static_cast<uint64_t>(bound)) >> 32);
}

absl::Status CheckInt32(int64_t m, int64_t n, int64_t nnz) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (m >= kMax || n > kMax || nnz > kMax) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix of ", m, " x ", n, " with ", nnz, " entries does not fit int32 indptr/indices; use a smaller --scale"));
  }
  return absl::OkStatus();
}

// Sorts one row's columns: a counting sort for a row long against n (the 50M-entry row over 1M columns
// takes one pass instead of a 50M-element comparison sort), std::sort otherwise.
void SortRow(int32_t* begin, int32_t* end, int64_t n, std::vector<int64_t>* counts) {
  const int64_t len = end - begin;
  if (len < (int64_t{1} << 16) || len < n / 16) {
    std::sort(begin, end);
    return;
  }
  counts->assign(static_cast<size_t>(n), 0);
  for (int32_t* p = begin; p != end; ++p) ++(*counts)[*p];
  int32_t* out = begin;
  for (int64_t c = 0; c < n; ++c) out = std::fill_n(out, (*counts)[c], static_cast<int32_t>(c));
}

// Rows of the given lengths with uniformly random (duplicates possible: they add up in both libraries)
// columns in [0, n), sorted within rows.
absl::StatusOr<HostCsr> RandomRows(const std::vector<int64_t>& lengths, int64_t n, std::mt19937_64& rng) {
  HostCsr a;
  a.m = static_cast<int64_t>(lengths.size());
  a.n = n;
  int64_t nnz = 0;
  for (int64_t len : lengths) nnz += len;
  KPS_RETURN_IF_ERROR(CheckInt32(a.m, n, nnz));
  a.indptr.resize(a.m + 1);
  a.indices.resize(nnz);
  a.indptr[0] = 0;
  for (int64_t r = 0; r < a.m; ++r) a.indptr[r + 1] = static_cast<int32_t>(a.indptr[r] + lengths[r]);
  for (int64_t e = 0; e < nnz; ++e) a.indices[e] = static_cast<int32_t>(Bounded(rng, n));
  std::vector<int64_t> counts;
  for (int64_t r = 0; r < a.m; ++r) SortRow(&a.indices[a.indptr[r]], &a.indices[a.indptr[r + 1]], n, &counts);
  return a;
}

// A stencil on an nx x ny x nz grid: row (x, y, z) holds the in-grid points at the given offsets. The
// offsets are in lexicographic (dz, dy, dx) order, so each row's columns come out ascending.
absl::StatusOr<HostCsr> Stencil(int64_t nx, int64_t ny, int64_t nz, const std::vector<std::array<int, 3>>& offsets) {
  HostCsr a;
  a.m = a.n = nx * ny * nz;
  KPS_RETURN_IF_ERROR(CheckInt32(a.m, a.n, a.m * static_cast<int64_t>(offsets.size())));
  a.indptr.resize(a.m + 1);
  a.indices.reserve(a.m * offsets.size());
  a.indptr[0] = 0;
  int64_t row = 0;
  for (int64_t z = 0; z < nz; ++z) {
    for (int64_t y = 0; y < ny; ++y) {
      for (int64_t x = 0; x < nx; ++x, ++row) {
        for (const auto& o : offsets) {
          const int64_t zz = z + o[0], yy = y + o[1], xx = x + o[2];
          if (zz < 0 || zz >= nz || yy < 0 || yy >= ny || xx < 0 || xx >= nx) continue;
          a.indices.push_back(static_cast<int32_t>((zz * ny + yy) * nx + xx));
        }
        a.indptr[row + 1] = static_cast<int32_t>(a.indices.size());
      }
    }
  }
  return a;
}

// R-MAT (Chakrabarti, Zhan and Faloutsos 2004) with Graph500's quadrant odds a = 0.57, b = c = 0.19,
// d = 0.05, taken to 1/256 (146, 49, 49, 12) so that one 64-bit draw serves 8 levels. Vertex labels are
// permuted at random (as Graph500 does) so the heavy rows are spread over the matrix instead of
// packed at its start; duplicate edges are merged.
absl::StatusOr<HostCsr> Rmat(int scale, int64_t edge_factor, std::mt19937_64& rng) {
  const int64_t nv = int64_t{1} << scale;
  const int64_t ne = edge_factor * nv;
  KPS_RETURN_IF_ERROR(CheckInt32(nv, nv, ne));
  std::vector<int32_t> perm(nv);
  for (int64_t i = 0; i < nv; ++i) perm[i] = static_cast<int32_t>(i);
  for (int64_t i = nv - 1; i > 0; --i) std::swap(perm[i], perm[Bounded(rng, i + 1)]);  // Fisher-Yates
  std::vector<int32_t> src(ne), dst(ne);
  for (int64_t e = 0; e < ne; ++e) {
    uint64_t bits = 0;
    int left = 0;
    int64_t r = 0, c = 0;
    for (int level = 0; level < scale; ++level) {
      if (left == 0) {
        bits = rng();
        left = 8;
      }
      const unsigned q = bits & 0xff;
      bits >>= 8;
      --left;
      r <<= 1;
      c <<= 1;
      if (q >= 244) {
        r |= 1;
        c |= 1;
      } else if (q >= 195) {
        r |= 1;
      } else if (q >= 146) {
        c |= 1;
      }
    }
    src[e] = perm[r];
    dst[e] = perm[c];
  }
  HostCsr a;
  a.m = a.n = nv;
  a.indptr.assign(nv + 1, 0);
  for (int64_t e = 0; e < ne; ++e) ++a.indptr[src[e] + 1];
  for (int64_t r = 0; r < nv; ++r) a.indptr[r + 1] += a.indptr[r];
  a.indices.resize(ne);
  {
    std::vector<int32_t> next(a.indptr.begin(), a.indptr.end() - 1);
    for (int64_t e = 0; e < ne; ++e) a.indices[next[src[e]]++] = dst[e];
  }
  src = std::vector<int32_t>();
  dst = std::vector<int32_t>();
  // Sort each row, then drop repeated edges in place.
  int64_t out = 0;
  int32_t begin = 0;
  for (int64_t r = 0; r < nv; ++r) {
    const int32_t end = a.indptr[r + 1];
    std::sort(&a.indices[begin], &a.indices[0] + end);
    const int64_t row_start = out;
    for (int32_t e = begin; e < end; ++e) {
      if (out == row_start || a.indices[out - 1] != a.indices[e]) a.indices[out++] = a.indices[e];
    }
    begin = end;
    a.indptr[r + 1] = static_cast<int32_t>(out);
  }
  a.indices.resize(out);
  a.indices.shrink_to_fit();
  return a;
}

int64_t ScaledCount(int64_t count, double scale, int64_t floor) {
  return std::max<int64_t>(floor, std::llround(static_cast<double>(count) * scale));
}
// The side of a grid of `dims` dimensions whose point count scales by `scale`.
int64_t ScaledSide(int64_t side, double scale, int dims) {
  return std::max<int64_t>(4, std::llround(static_cast<double>(side) * std::pow(scale, 1.0 / dims)));
}

struct MatrixClass {
  const char* name;
  const char* description;
  std::function<absl::StatusOr<HostCsr>(double scale, std::mt19937_64& rng)> build;
};

// The sizes at --scale 1 put every matrix's arrays well above a 60 MB L2. random_1_29, empty_95,
// one_long_row and tall_1000 follow python/bench/spmv.py (empty_95 with 4x its rows, so it too is
// far larger than L2).
const std::vector<MatrixClass>& Classes() {
  static const auto* classes = new std::vector<MatrixClass>{
      {"stencil2d_5pt", "2-D 5-point stencil on a 4096^2 grid",
       [](double s, std::mt19937_64&) {
         const int64_t k = ScaledSide(4096, s, 2);
         return Stencil(k, k, 1, {{0, -1, 0}, {0, 0, -1}, {0, 0, 0}, {0, 0, 1}, {0, 1, 0}});
       }},
      {"stencil3d_7pt", "3-D 7-point stencil on a 256^3 grid",
       [](double s, std::mt19937_64&) {
         const int64_t k = ScaledSide(256, s, 3);
         return Stencil(k, k, k, {{-1, 0, 0}, {0, -1, 0}, {0, 0, -1}, {0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {1, 0, 0}});
       }},
      {"stencil3d_27pt", "3-D 27-point stencil on a 160^3 grid",
       [](double s, std::mt19937_64&) {
         const int64_t k = ScaledSide(160, s, 3);
         std::vector<std::array<int, 3>> offsets;
         for (int dz = -1; dz <= 1; ++dz) {
           for (int dy = -1; dy <= 1; ++dy) {
             for (int dx = -1; dx <= 1; ++dx) offsets.push_back({dz, dy, dx});
           }
         }
         return Stencil(k, k, k, offsets);
       }},
      {"banded_17", "banded, n = 8M, bandwidth 2*8+1",
       [](double s, std::mt19937_64&) -> absl::StatusOr<HostCsr> {
         const int64_t n = ScaledCount(8000000, s, 64);
         constexpr int64_t kHalf = 8;
         HostCsr a;
         a.m = a.n = n;
         KPS_RETURN_IF_ERROR(CheckInt32(n, n, n * (2 * kHalf + 1)));
         a.indptr.resize(n + 1);
         a.indices.reserve(n * (2 * kHalf + 1));
         a.indptr[0] = 0;
         for (int64_t r = 0; r < n; ++r) {
           for (int64_t c = std::max<int64_t>(0, r - kHalf); c <= std::min(n - 1, r + kHalf); ++c) {
             a.indices.push_back(static_cast<int32_t>(c));
           }
           a.indptr[r + 1] = static_cast<int32_t>(a.indices.size());
         }
         return a;
       }},
      {"rmat", "R-MAT power-law graph, scale 22 (4M vertices), edge factor 16, duplicates merged",
       [](double s, std::mt19937_64& rng) {
         const int scale = std::max(8, 22 + static_cast<int>(std::lround(std::log2(s))));
         return Rmat(scale, 16, rng);
       }},
      {"random_1_29", "4M x 4M, rows of 1-29 random columns",
       [](double s, std::mt19937_64& rng) {
         const int64_t m = ScaledCount(4000000, s, 64);
         std::vector<int64_t> lengths(m);
         for (int64_t& len : lengths) len = 1 + Bounded(rng, 29);
         return RandomRows(lengths, m, rng);
       }},
      {"empty_95", "16M x 16M, 95% of rows empty, the rest 1-39 random columns",
       [](double s, std::mt19937_64& rng) {
         const int64_t m = ScaledCount(16000000, s, 64);
         std::vector<int64_t> lengths(m);
         for (int64_t& len : lengths) len = Bounded(rng, 100) < 5 ? 1 + Bounded(rng, 39) : 0;
         return RandomRows(lengths, m, rng);
       }},
      {"one_long_row", "100K x 1M, one row of 50M random columns, the others 1",
       [](double s, std::mt19937_64& rng) {
         std::vector<int64_t> lengths(ScaledCount(100000, s, 16), 1);
         lengths[5] = ScaledCount(50000000, s, 1024);
         return RandomRows(lengths, ScaledCount(1000000, s, 64), rng);
       }},
      {"tall_1000", "8M x 1000, 8 random columns a row",
       [](double s, std::mt19937_64& rng) {
         return RandomRows(std::vector<int64_t>(ScaledCount(8000000, s, 64), 8), 1000, rng);
       }},
  };
  return *classes;
}

// The generators' own check: a wrong matrix would make every figure meaningless.
absl::Status ValidateCsr(const HostCsr& a) {
  if (static_cast<int64_t>(a.indptr.size()) != a.m + 1 || a.indptr[0] != 0 || a.indptr[a.m] != a.nnz()) {
    return absl::InternalError("generated indptr is malformed");
  }
  for (int64_t r = 0; r < a.m; ++r) {
    if (a.indptr[r + 1] < a.indptr[r]) return absl::InternalError(absl::StrCat("indptr decreases at ", r));
    for (int32_t e = a.indptr[r]; e < a.indptr[r + 1]; ++e) {
      if (a.indices[e] < 0 || a.indices[e] >= a.n)
        return absl::InternalError(absl::StrCat("column out of range at ", e));
      if (e > a.indptr[r] && a.indices[e] < a.indices[e - 1]) {
        return absl::InternalError(absl::StrCat("columns unsorted in row ", r));
      }
    }
  }
  return absl::OkStatus();
}

// ---- timing ------------------------------------------------------------------------------------------

struct Timing {
  double ms = kNaN;      // single call: median of the samples
  double b2b_ms = kNaN;  // back to back: the batch's time over its calls
  int64_t b2b_calls = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The stream every call runs on, its events, and the L2 flush buffer. Owns the stream: device tensors made
// on it must be gone before the Timer is.
class Timer {
 public:
  static absl::StatusOr<std::unique_ptr<Timer>> Create(int reps) {
    std::unique_ptr<Timer> t(new Timer(reps));
    KPS_ASSIGN_OR_RETURN(OwnedCudaStream s, OwnedCudaStream::Create());
    t->owned_.emplace(std::move(s));
    t->stream_ = t->owned_->stream();
    KPS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&t->start_), "cudaEventCreate");
    KPS_CUDA_RETURN_IF_ERROR(cudaEventCreate(&t->stop_), "cudaEventCreate");
    KPS_ASSIGN_OR_RETURN(t->flush_, t->Empty(Shape{static_cast<int64_t>(kFlushBytes)}, DataType::kUInt8));
    return t;
  }
  ~Timer() {
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (owned_) cudaStreamSynchronize(stream_.cuda_stream());
  }

  const Stream& stream() const { return stream_; }
  cudaStream_t cuda_stream() const { return stream_.cuda_stream(); }

  absl::StatusOr<Tensor> Empty(const Shape& shape, DataType dtype) const {
    return Tensor::Empty(shape, dtype, DeviceType::kCuda, stream_);
  }
  absl::Status Sync() const {
    KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cuda_stream()), "cudaStreamSynchronize");
    return absl::OkStatus();
  }
  // Evicts the previous sample's data from L2 by writing more bytes than it holds.
  absl::Status FlushL2() {
    KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(flush_.raw_data(), ++flush_value_ & 0xff, kFlushBytes, cuda_stream()),
                             "cudaMemsetAsync (L2 flush)");
    return absl::OkStatus();
  }

  // Milliseconds between two events around `calls` calls of fn.
  absl::StatusOr<double> Batch(const std::function<absl::Status()>& fn, int64_t calls) {
    KPS_CUDA_RETURN_IF_ERROR(cudaEventRecord(start_, cuda_stream()), "cudaEventRecord");
    for (int64_t i = 0; i < calls; ++i) KPS_RETURN_IF_ERROR(fn());
    KPS_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop_, cuda_stream()), "cudaEventRecord");
    KPS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    KPS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms);
  }

  // Both timings of fn, which queues its work on stream() and must not synchronize.
  absl::StatusOr<Timing> Time(const std::function<absl::Status()>& fn) {
    for (int i = 0; i < kWarmup; ++i) KPS_RETURN_IF_ERROR(fn());
    KPS_RETURN_IF_ERROR(Sync());
    Timing t;
    std::vector<double> samples;
    for (int i = 0; i < reps_; ++i) {
      // The flush is waited for before the start event: otherwise the call's host-side launch would overlap
      // the flush and the sample would leave out the launch latency a user's single call pays.
      KPS_RETURN_IF_ERROR(FlushL2());
      KPS_RETURN_IF_ERROR(Sync());
      KPS_ASSIGN_OR_RETURN(double ms, Batch(fn, 1));
      samples.push_back(ms);
    }
    t.ms = Median(std::move(samples));
    // A short pilot batch sizes the real one, so that the batch hides the launch gaps and lasts >= 20 ms.
    constexpr int64_t kPilot = 5;
    KPS_ASSIGN_OR_RETURN(double pilot_ms, Batch(fn, kPilot));
    const double per_call = std::max(pilot_ms / kPilot, 1e-4);
    t.b2b_calls = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(kBatchMs / per_call)), 10, 200000);
    KPS_ASSIGN_OR_RETURN(double batch_ms, Batch(fn, t.b2b_calls));
    t.b2b_ms = batch_ms / static_cast<double>(t.b2b_calls);
    return t;
  }

 private:
  explicit Timer(int reps) : reps_(reps) {}
  int reps_;
  std::optional<OwnedCudaStream> owned_;  // declared before flush_: destroyed after it
  Stream stream_;
  Tensor flush_;
  int flush_value_ = 0;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// The copy ceiling of this run's card: a 1 GiB device-to-device cudaMemcpyAsync, read + write counted.
absl::StatusOr<double> CopyGBps(Timer& timer) {
  constexpr int64_t kBytes = int64_t{1} << 30;
  KPS_ASSIGN_OR_RETURN(Tensor src, timer.Empty(Shape{kBytes}, DataType::kUInt8));
  KPS_ASSIGN_OR_RETURN(Tensor dst, timer.Empty(Shape{kBytes}, DataType::kUInt8));
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(src.raw_data(), 1, kBytes, timer.cuda_stream()), "cudaMemsetAsync");
  KPS_ASSIGN_OR_RETURN(Timing t, timer.Time([&]() -> absl::Status {
    KPS_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst.raw_data(), src.raw_data(), kBytes, cudaMemcpyDeviceToDevice, timer.cuda_stream()),
        "cudaMemcpyAsync");
    return absl::OkStatus();
  }));
  return 2.0 * static_cast<double>(kBytes) / t.ms / 1e6;
}

// ---- results -----------------------------------------------------------------------------------------

// One cuSPARSE algorithm, with or without its preprocessing step.
struct CusparseResult {
  std::string name;  // "ALG_DEFAULT", "CSR_ALG2+pre", ...
  bool preprocess = false;
  std::string note;  // set when it did not run (not supported for this matrix or layout)
  Timing timing;
};

struct Row {
  std::string op;  // "spmv" or "spmm"
  std::string cls;
  std::string dtype;
  int64_t k = 0;  // spmm's dense columns; 0 for spmv
  int64_t m = 0, n = 0, nnz = 0;
  double bytes = 0;  // the fewest bytes moved: indptr + indices + values + x (b) + y (c), each once
  bool ok = true;
  std::string error;
  // Worst |result - host reference| / sum_j |a_ij x_j| over the rows checked (all for spmv, a sample for
  // spmm): a bound that stays meaningful where a row's terms cancel.
  double kps_err = kNaN;
  double cusparse_err = kNaN;
  Timing kps;
  std::vector<CusparseResult> cusparse;
};

// The fastest cuSPARSE variant's time for one measure, among those with preprocessing or without
// (`preprocess`), or among all (`any`).
double BestCusparse(const Row& row, bool any, bool preprocess, double Timing::*measure, std::string* name = nullptr) {
  double best = kNaN;
  for (const CusparseResult& c : row.cusparse) {
    if (!c.note.empty() || (!any && c.preprocess != preprocess)) continue;
    const double v = c.timing.*measure;
    if (std::isnan(best) || v < best) {
      best = v;
      if (name != nullptr) *name = c.name;
    }
  }
  return best;
}

std::string Num(double v, int decimals) {
  return std::isnan(v) ? std::string("n/a") : absl::StrFormat("%.*f", decimals, v);
}

// ---- correctness -------------------------------------------------------------------------------------

// The worst normalized difference |got - want| / (mag + tiny) over a set of values, where mag is the
// magnitude sum_j |a_ij x_j| of the row: the error a reordered floating-point sum can have, which a plain
// relative error overstates for rows whose terms cancel. A NaN (a row never written: outputs start as
// 0xFF bytes) counts as infinite.
struct Disagreement {
  double worst = 0;
  int64_t where = -1;
  double got = 0, want = 0, mag = 0;
  void Add(int64_t i, double g, double w, double m) {
    double e = std::fabs(g - w) / (m + 1e-30);
    if (std::isnan(e)) e = std::numeric_limits<double>::infinity();
    if (e > worst || where < 0) {
      worst = e;
      where = i;
      got = g;
      want = w;
      mag = m;
    }
  }
  std::string Describe(const char* what, const char* unit) const {
    return absl::StrFormat("%s at %s %d: %.9g vs %.9g (sum |a*x| %.6g; normalized error %.3g)", what, unit, where, got,
                           want, mag, worst);
  }
};

// ---- cuSPARSE ------------------------------------------------------------------------------------------

struct CusparseDeleter {
  void operator()(cusparseContext* p) const { cusparseDestroy(p); }
  void operator()(cusparseSpMatDescr* p) const { cusparseDestroySpMat(p); }
  void operator()(cusparseDnVecDescr* p) const { cusparseDestroyDnVec(p); }
  void operator()(cusparseDnMatDescr* p) const { cusparseDestroyDnMat(p); }
};
template <typename P>
using CusparsePtr = std::unique_ptr<P, CusparseDeleter>;

// cusparseSpMV_preprocess came with CUDA 12.4.
#if CUDART_VERSION >= 12040
constexpr bool kHaveSpmvPreprocess = true;
#else
constexpr bool kHaveSpmvPreprocess = false;
#endif

template <typename T>
absl::StatusOr<CusparsePtr<cusparseSpMatDescr>> MakeCsr(const HostCsr& a, const Tensor& indptr, const Tensor& indices,
                                                        const Tensor& values) {
  cusparseSpMatDescr_t mat = nullptr;
  BENCH_CUSPARSE_RETURN_IF_ERROR(cusparseCreateCsr(&mat, a.m, a.n, a.nnz(), indptr.raw_data(), indices.raw_data(),
                                                   values.raw_data(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                                   CUSPARSE_INDEX_BASE_ZERO, CudaType<T>::kValue));
  return CusparsePtr<cusparseSpMatDescr>(mat);
}

// The fewest bytes a product must move: indptr, indices and values once, the dense operand once
// (n x k), the output once (m x k).
double MinBytes(const HostCsr& a, size_t value_bytes, int64_t k) {
  return static_cast<double>(a.m + 1) * 4 + static_cast<double>(a.nnz()) * (4 + value_bytes) +
         static_cast<double>(a.n + a.m) * static_cast<double>(k) * value_bytes;
}

// The timing of one row, once its results agreed: KPS's call, then each cuSPARSE variant that ran (the
// results of row->cusparse without a note, in order, each with its `live` state; cusparse_call(l) queues one
// call of it). Where the results disagreed (`errors`), row says so and nothing is timed.
template <typename Live, typename CusparseCall>
absl::Status TimeRow(const std::vector<std::string>& errors, const std::function<absl::Status()>& kps_call,
                     const std::vector<Live>& live, Timer& timer, Row* row, const CusparseCall& cusparse_call) {
  if (!errors.empty()) {
    row->ok = false;
    row->error = absl::StrJoin(errors, "; ");
    return absl::OkStatus();
  }
  KPS_ASSIGN_OR_RETURN(row->kps, timer.Time(kps_call));
  size_t next = 0;
  for (CusparseResult& res : row->cusparse) {
    if (!res.note.empty()) continue;
    const Live& l = live[next++];
    KPS_ASSIGN_OR_RETURN(res.timing, timer.Time([&]() { return cusparse_call(l); }));
  }
  return absl::OkStatus();
}

// ---- spmv ------------------------------------------------------------------------------------------------

template <typename T>
absl::StatusOr<Row> BenchSpmv(const std::string& cls, const HostCsr& a, const Tensor& indptr, const Tensor& indices,
                              Timer& timer, cusparseHandle_t handle) {
  Row row;
  row.op = "spmv";
  row.cls = cls;
  row.dtype = CudaType<T>::kName;
  row.m = a.m;
  row.n = a.n;
  row.nnz = a.nnz();
  row.bytes = MinBytes(a, sizeof(T), 1);
  const DataType dtype = DataTypeOf<T>();
  const double tol = CudaType<T>::kTolerance;
  cudaStream_t stream = timer.cuda_stream();
  KPS_ASSIGN_OR_RETURN(Tensor values, timer.Empty(Shape{a.nnz()}, dtype));
  KPS_ASSIGN_OR_RETURN(Tensor x, timer.Empty(Shape{a.n}, dtype));
  KPS_ASSIGN_OR_RETURN(Tensor y_kps, timer.Empty(Shape{a.m}, dtype));
  KPS_ASSIGN_OR_RETURN(Tensor y_cus, timer.Empty(Shape{a.m}, dtype));
  KPS_RETURN_IF_ERROR(FillHash<T>(values, kValueSeed, stream));
  KPS_RETURN_IF_ERROR(FillHash<T>(x, kXSeed, stream));

  // The host reference, in double, from the same hashed values.
  std::vector<double> xh(a.n), ref(a.m), mag(a.m);
  for (int64_t j = 0; j < a.n; ++j) xh[j] = static_cast<double>(HashValue<T>(kXSeed, j));
  for (int64_t r = 0; r < a.m; ++r) {
    double s = 0, s_abs = 0;
    for (int32_t e = a.indptr[r]; e < a.indptr[r + 1]; ++e) {
      const double p = static_cast<double>(HashValue<T>(kValueSeed, e)) * xh[a.indices[e]];
      s += p;
      s_abs += std::fabs(p);
    }
    ref[r] = s;
    mag[r] = s_abs;
  }

  // KPS: check=false, so the call queues its kernels and returns (no validation sync); y preallocated,
  // as cuSPARSE's is.
  const Stream kstream = timer.stream();
  auto kps_call = [&]() -> absl::Status {
    return Call("spmv")
        .Input("indptr", indptr)
        .Input("indices", indices)
        .Input("values", values)
        .Input("x", x)
        .Output("out", y_kps)
        .Attr("check", false)
        .OnStream(kstream)
        .Run()
        .status();
  };
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(y_kps.raw_data(), 0xff, y_kps.nbytes(), stream), "cudaMemsetAsync");
  if (absl::Status s = kps_call(); !s.ok()) {
    row.ok = false;
    row.error = absl::StrCat("KPS spmv failed: ", s.ToString());
    return row;
  }
  KPS_RETURN_IF_ERROR(timer.Sync());
  KPS_ASSIGN_OR_RETURN(std::vector<T> got_kps, y_kps.ToVector<T>(kstream));
  Disagreement kps_vs_ref;
  for (int64_t r = 0; r < a.m; ++r) kps_vs_ref.Add(r, got_kps[r], ref[r], mag[r]);
  row.kps_err = kps_vs_ref.worst;
  std::vector<std::string> errors;
  if (!(kps_vs_ref.worst <= tol)) errors.push_back(kps_vs_ref.Describe("KPS vs the host reference", "row"));

  // cuSPARSE: each algorithm with and without preprocessing, each on a descriptor of its own (the
  // preprocessing's analysis belongs to the matrix descriptor). Buffers are allocated here, outside
  // the timing.
  struct Live {
    CusparsePtr<cusparseSpMatDescr> mat;
    CusparsePtr<cusparseDnVecDescr> vx, vy;
    Tensor buffer;
    cusparseSpMVAlg_t alg;
  };
  const T alpha = 1, beta = 0;
  const cudaDataType ctype = CudaType<T>::kValue;
  std::vector<Live> live;
  const std::pair<cusparseSpMVAlg_t, const char*> algs[] = {{CUSPARSE_SPMV_ALG_DEFAULT, "ALG_DEFAULT"},
                                                            {CUSPARSE_SPMV_CSR_ALG2, "CSR_ALG2"}};
  double cus_err = 0;
  for (const auto& [alg, alg_name] : algs) {
    for (bool pre : {false, true}) {
      CusparseResult res;
      res.name = absl::StrCat(alg_name, pre ? "+pre" : "");
      res.preprocess = pre;
      if (pre && !kHaveSpmvPreprocess) {
        res.note = "cusparseSpMV_preprocess needs CUDA 12.4 or later";
        row.cusparse.push_back(std::move(res));
        continue;
      }
      Live l;
      l.alg = alg;
      KPS_ASSIGN_OR_RETURN(l.mat, MakeCsr<T>(a, indptr, indices, values));
      cusparseDnVecDescr_t v = nullptr;
      BENCH_CUSPARSE_RETURN_IF_ERROR(cusparseCreateDnVec(&v, a.n, x.raw_data(), ctype));
      l.vx.reset(v);
      BENCH_CUSPARSE_RETURN_IF_ERROR(cusparseCreateDnVec(&v, a.m, y_cus.raw_data(), ctype));
      l.vy.reset(v);
      size_t buffer_bytes = 0;
      cusparseStatus_t st = cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, l.mat.get(),
                                                    l.vx.get(), &beta, l.vy.get(), ctype, alg, &buffer_bytes);
      if (st == CUSPARSE_STATUS_SUCCESS) {
        KPS_ASSIGN_OR_RETURN(l.buffer, timer.Empty(Shape{std::max<int64_t>(1, buffer_bytes)}, DataType::kUInt8));
#if CUDART_VERSION >= 12040
        if (pre) {
          st = cusparseSpMV_preprocess(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, l.mat.get(), l.vx.get(), &beta,
                                       l.vy.get(), ctype, alg, l.buffer.raw_data());
        }
#endif
      }
      if (st == CUSPARSE_STATUS_SUCCESS) {
        KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(y_cus.raw_data(), 0xff, y_cus.nbytes(), stream), "cudaMemsetAsync");
        st = cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, l.mat.get(), l.vx.get(), &beta, l.vy.get(),
                          ctype, alg, l.buffer.raw_data());
      }
      if (st != CUSPARSE_STATUS_SUCCESS) {
        res.note = cusparseGetErrorString(st);
        row.cusparse.push_back(std::move(res));
        continue;
      }
      KPS_RETURN_IF_ERROR(timer.Sync());
      KPS_ASSIGN_OR_RETURN(std::vector<T> got, y_cus.ToVector<T>(kstream));
      Disagreement vs_ref, vs_kps;
      for (int64_t r = 0; r < a.m; ++r) {
        vs_ref.Add(r, got[r], ref[r], mag[r]);
        vs_kps.Add(r, got_kps[r], got[r], mag[r]);
      }
      cus_err = std::max(cus_err, vs_ref.worst);
      if (!(vs_kps.worst <= tol)) {
        errors.push_back(absl::StrCat(vs_kps.Describe(absl::StrCat("KPS vs cuSPARSE ", res.name).c_str(), "row"),
                                      "; cuSPARSE vs the host reference: ", Num(vs_ref.worst, 12)));
      }
      row.cusparse.push_back(std::move(res));
      live.push_back(std::move(l));
    }
  }
  row.cusparse_err = cus_err;
  KPS_RETURN_IF_ERROR(TimeRow(errors, kps_call, live, timer, &row, [&](const Live& l) -> absl::Status {
    BENCH_CUSPARSE_RETURN_IF_ERROR(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, l.mat.get(),
                                                l.vx.get(), &beta, l.vy.get(), ctype, l.alg, l.buffer.raw_data()));
    return absl::OkStatus();
  }));
  return row;
}

// ---- spmm ------------------------------------------------------------------------------------------------

// The rows spmm's result is checked on: about a thousand spread over the matrix, the last and the
// longest, leaving out any whose host reference would cost more than ~2^27 multiply-adds.
std::vector<int64_t> SampleRows(const HostCsr& a, int64_t k) {
  std::vector<int64_t> rows;
  const int64_t want = std::min<int64_t>(a.m, 1024);
  for (int64_t i = 0; i < want; ++i) rows.push_back(i * a.m / want);
  int64_t longest = 0;
  for (int64_t r = 0; r < a.m; ++r) {
    if (a.RowLength(r) > a.RowLength(longest)) longest = r;
  }
  rows.push_back(longest);
  if (a.m > 0) rows.push_back(a.m - 1);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  rows.erase(
      std::remove_if(rows.begin(), rows.end(), [&](int64_t r) { return a.RowLength(r) * k > (int64_t{1} << 27); }),
      rows.end());
  return rows;
}

// Copies the sampled rows of a [m, k] row-major device matrix to the host.
template <typename T>
absl::StatusOr<std::vector<T>> GatherRows(const Tensor& c, const std::vector<int64_t>& rows, int64_t k,
                                          cudaStream_t stream) {
  std::vector<T> out(rows.size() * k);
  for (size_t i = 0; i < rows.size(); ++i) {
    KPS_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out.data() + i * k, c.data<T>() + rows[i] * k, k * sizeof(T), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync");
  }
  KPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return out;
}

template <typename T>
absl::StatusOr<Row> BenchSpmm(const std::string& cls, const HostCsr& a, const Tensor& indptr, const Tensor& indices,
                              int64_t k, Timer& timer, cusparseHandle_t handle) {
  Row row;
  row.op = "spmm";
  row.cls = cls;
  row.dtype = CudaType<T>::kName;
  row.k = k;
  row.m = a.m;
  row.n = a.n;
  row.nnz = a.nnz();
  row.bytes = MinBytes(a, sizeof(T), k);
  const DataType dtype = DataTypeOf<T>();
  const double tol = CudaType<T>::kTolerance;
  cudaStream_t stream = timer.cuda_stream();
  KPS_ASSIGN_OR_RETURN(Tensor values, timer.Empty(Shape{a.nnz()}, dtype));
  KPS_ASSIGN_OR_RETURN(Tensor b, timer.Empty(Shape{a.n, k}, dtype));
  // One output for both libraries (at k = 128 a second one would cost gigabytes): each run is checked
  // right after it, from a poisoned start.
  KPS_ASSIGN_OR_RETURN(Tensor c, timer.Empty(Shape{a.m, k}, dtype));
  KPS_RETURN_IF_ERROR(FillHash<T>(values, kValueSeed, stream));
  KPS_RETURN_IF_ERROR(FillHash<T>(b, kBSeed, stream));

  const std::vector<int64_t> rows = SampleRows(a, k);
  std::vector<double> ref(rows.size() * k, 0.0), mag(rows.size() * k, 0.0);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int32_t e = a.indptr[rows[i]]; e < a.indptr[rows[i] + 1]; ++e) {
      const double v = static_cast<double>(HashValue<T>(kValueSeed, e));
      const uint64_t base = static_cast<uint64_t>(a.indices[e]) * k;
      for (int64_t j = 0; j < k; ++j) {
        const double p = v * static_cast<double>(HashValue<T>(kBSeed, base + j));
        ref[i * k + j] += p;
        mag[i * k + j] += std::fabs(p);
      }
    }
  }
  auto compare = [&](const std::vector<T>& got, const std::vector<double>& want) {
    Disagreement d;
    for (size_t i = 0; i < got.size(); ++i) d.Add(rows[i / k] * k + i % k, got[i], want[i], mag[i]);
    return d;
  };

  const OpSchema* schema = OpRegistry::Global().Find("spmm");
  if (schema == nullptr || schema->inputs().size() < 4 || schema->outputs().empty()) {
    row.ok = false;
    row.error = "KPS's spmm schema is not spmm(indptr, indices, values?, b, ...) -> out";
    return row;
  }
  const Stream kstream = timer.stream();
  auto kps_call = [&]() -> absl::Status {
    Call call("spmm");
    call.Input(schema->inputs()[0].name, indptr)
        .Input(schema->inputs()[1].name, indices)
        .Input(schema->inputs()[2].name, values)
        .Input(schema->inputs()[3].name, b)
        .Output(schema->outputs()[0].name, c)
        .OnStream(kstream);
    if (schema->AttrIndex("check") >= 0) call.Attr("check", false);
    return call.Run().status();
  };
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c.raw_data(), 0xff, c.nbytes(), stream), "cudaMemsetAsync");
  if (absl::Status s = kps_call(); !s.ok()) {
    row.ok = false;
    row.error = absl::StrCat("KPS spmm failed: ", s.ToString());
    return row;
  }
  KPS_ASSIGN_OR_RETURN(std::vector<T> got_kps, GatherRows<T>(c, rows, k, stream));
  const Disagreement kps_vs_ref = compare(got_kps, ref);
  row.kps_err = kps_vs_ref.worst;
  std::vector<std::string> errors;
  if (!(kps_vs_ref.worst <= tol))
    errors.push_back(kps_vs_ref.Describe("KPS vs the host reference", "element (row * k + column)"));

  struct Live {
    CusparsePtr<cusparseSpMatDescr> mat;
    CusparsePtr<cusparseDnMatDescr> mb, mc;
    Tensor buffer;
    cusparseSpMMAlg_t alg;
  };
  const T alpha = 1, beta = 0;
  const cudaDataType ctype = CudaType<T>::kValue;
  const auto op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  std::vector<Live> live;
  const std::pair<cusparseSpMMAlg_t, const char*> algs[] = {{CUSPARSE_SPMM_ALG_DEFAULT, "ALG_DEFAULT"},
                                                            {CUSPARSE_SPMM_CSR_ALG2, "CSR_ALG2"},
                                                            {CUSPARSE_SPMM_CSR_ALG3, "CSR_ALG3"}};
  double cus_err = 0;
  for (const auto& [alg, alg_name] : algs) {
    for (bool pre : {false, true}) {
      CusparseResult res;
      res.name = absl::StrCat(alg_name, pre ? "+pre" : "");
      res.preprocess = pre;
      Live l;
      l.alg = alg;
      KPS_ASSIGN_OR_RETURN(l.mat, MakeCsr<T>(a, indptr, indices, values));
      cusparseDnMatDescr_t d = nullptr;
      BENCH_CUSPARSE_RETURN_IF_ERROR(cusparseCreateDnMat(&d, a.n, k, k, b.raw_data(), ctype, CUSPARSE_ORDER_ROW));
      l.mb.reset(d);
      BENCH_CUSPARSE_RETURN_IF_ERROR(cusparseCreateDnMat(&d, a.m, k, k, c.raw_data(), ctype, CUSPARSE_ORDER_ROW));
      l.mc.reset(d);
      size_t buffer_bytes = 0;
      cusparseStatus_t st = cusparseSpMM_bufferSize(handle, op, op, &alpha, l.mat.get(), l.mb.get(), &beta, l.mc.get(),
                                                    ctype, alg, &buffer_bytes);
      if (st == CUSPARSE_STATUS_SUCCESS) {
        KPS_ASSIGN_OR_RETURN(l.buffer, timer.Empty(Shape{std::max<int64_t>(1, buffer_bytes)}, DataType::kUInt8));
        if (pre) {
          st = cusparseSpMM_preprocess(handle, op, op, &alpha, l.mat.get(), l.mb.get(), &beta, l.mc.get(), ctype, alg,
                                       l.buffer.raw_data());
        }
      }
      if (st == CUSPARSE_STATUS_SUCCESS) {
        KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c.raw_data(), 0xff, c.nbytes(), stream), "cudaMemsetAsync");
        st = cusparseSpMM(handle, op, op, &alpha, l.mat.get(), l.mb.get(), &beta, l.mc.get(), ctype, alg,
                          l.buffer.raw_data());
      }
      if (st != CUSPARSE_STATUS_SUCCESS) {
        res.note = cusparseGetErrorString(st);
        row.cusparse.push_back(std::move(res));
        continue;
      }
      KPS_ASSIGN_OR_RETURN(std::vector<T> got, GatherRows<T>(c, rows, k, stream));
      const Disagreement vs_ref = compare(got, ref);
      const Disagreement vs_kps = compare(got_kps, std::vector<double>(got.begin(), got.end()));
      cus_err = std::max(cus_err, vs_ref.worst);
      if (!(vs_kps.worst <= tol)) {
        errors.push_back(absl::StrCat(
            vs_kps.Describe(absl::StrCat("KPS vs cuSPARSE ", res.name).c_str(), "element (row * k + column)"),
            "; cuSPARSE vs the host reference: ", Num(vs_ref.worst, 12)));
      }
      row.cusparse.push_back(std::move(res));
      live.push_back(std::move(l));
    }
  }
  row.cusparse_err = cus_err;
  KPS_RETURN_IF_ERROR(TimeRow(errors, kps_call, live, timer, &row, [&](const Live& l) -> absl::Status {
    BENCH_CUSPARSE_RETURN_IF_ERROR(cusparseSpMM(handle, op, op, &alpha, l.mat.get(), l.mb.get(), &beta, l.mc.get(),
                                                ctype, l.alg, l.buffer.raw_data()));
    return absl::OkStatus();
  }));
  return row;
}

// ---- output ------------------------------------------------------------------------------------------

struct Report {
  std::string device;
  int runtime_version = 0;
  int cusparse_version = 0;
  int64_t l2_bytes = 0;
  double scale = 1;
  int reps = 0;
  uint64_t seed = 0;
  double copy_gbps = kNaN;
  std::vector<Row> rows;
  std::vector<std::string> notes;
};

void PrintSpmvHeader(std::ostream& out) {
  out << "| class | dtype | m | n | nnz | KPS ms | cuSPARSE ms | ratio | KPS b2b ms | cuSPARSE b2b ms | ratio b2b "
         "| cuSPARSE+pre ms | cuSPARSE+pre b2b ms | ratio pre b2b | KPS GB/s | KPS GB/s b2b | % copy b2b "
         "| fastest cuSPARSE b2b |\n"
      << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
}

void PrintSpmmHeader(std::ostream& out) {
  out << "| class | dtype | k | m | n | nnz | KPS ms | cuSPARSE ms | ratio | KPS b2b ms | cuSPARSE b2b ms "
         "| ratio b2b | KPS GB/s | KPS GB/s b2b | % copy b2b | fastest cuSPARSE b2b |\n"
      << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
}

void PrintRow(const Row& r, double copy_gbps, std::ostream& out) {
  out << "| " << r.cls << " | " << r.dtype << " | ";
  if (r.op == "spmm") out << r.k << " | ";
  out << r.m << " | " << r.n << " | " << r.nnz << " | ";
  if (!r.ok) {
    out << "FAILED (see below) |\n";
    return;
  }
  const bool spmv = r.op == "spmv";
  std::string fastest;
  // spmv keeps cuSPARSE with and without preprocessing apart; spmm takes the fastest of all.
  const double cus_ms = BestCusparse(r, !spmv, false, &Timing::ms);
  const double cus_b2b = BestCusparse(r, !spmv, false, &Timing::b2b_ms, &fastest);
  out << Num(r.kps.ms, 4) << " | " << Num(cus_ms, 4) << " | " << Num(cus_ms / r.kps.ms, 2) << " | "
      << Num(r.kps.b2b_ms, 4) << " | " << Num(cus_b2b, 4) << " | " << Num(cus_b2b / r.kps.b2b_ms, 2) << " | ";
  if (spmv) {
    std::string fastest_pre;
    const double pre_ms = BestCusparse(r, false, true, &Timing::ms);
    const double pre_b2b = BestCusparse(r, false, true, &Timing::b2b_ms, &fastest_pre);
    out << Num(pre_ms, 4) << " | " << Num(pre_b2b, 4) << " | " << Num(pre_b2b / r.kps.b2b_ms, 2) << " | ";
    if (!fastest_pre.empty()) fastest = absl::StrCat(fastest, ", ", fastest_pre);
  }
  const double gbps = r.bytes / r.kps.ms / 1e6, gbps_b2b = r.bytes / r.kps.b2b_ms / 1e6;
  out << Num(gbps, 0) << " | " << Num(gbps_b2b, 0) << " | " << Num(100 * gbps_b2b / copy_gbps, 0) << " | "
      << (fastest.empty() ? "none ran" : fastest) << " |\n";
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) { return std::isfinite(v) ? absl::StrFormat("%.9g", v) : "null"; }

std::string JsonRow(const Row& r, double copy_gbps) {
  const bool spmv = r.op == "spmv";
  const double cus_ms = BestCusparse(r, !spmv, false, &Timing::ms);
  const double cus_b2b = BestCusparse(r, !spmv, false, &Timing::b2b_ms);
  const double pre_ms = spmv ? BestCusparse(r, false, true, &Timing::ms) : kNaN;
  const double pre_b2b = spmv ? BestCusparse(r, false, true, &Timing::b2b_ms) : kNaN;
  std::vector<std::string> variants;
  for (const CusparseResult& c : r.cusparse) {
    variants.push_back(
        absl::StrCat("{\"name\": ", JsonString(c.name), ", \"preprocess\": ", c.preprocess ? "true" : "false",
                     ", \"ms\": ", JsonNumber(c.timing.ms), ", \"b2b_ms\": ", JsonNumber(c.timing.b2b_ms),
                     ", \"b2b_calls\": ", c.timing.b2b_calls, ", \"note\": ", JsonString(c.note), "}"));
  }
  const double b2b_gbps = r.bytes / r.kps.b2b_ms / 1e6;
  return absl::StrCat(
      "{\"op\": ", JsonString(r.op), ", \"class\": ", JsonString(r.cls), ", \"dtype\": ", JsonString(r.dtype),
      ", \"k\": ", r.k, ", \"m\": ", r.m, ", \"n\": ", r.n, ", \"nnz\": ", r.nnz, ", \"bytes\": ", JsonNumber(r.bytes),
      ", \"ok\": ", r.ok ? "true" : "false", ", \"error\": ", JsonString(r.error),
      ", \"kps_ms\": ", JsonNumber(r.kps.ms), ", \"kps_b2b_ms\": ", JsonNumber(r.kps.b2b_ms),
      ", \"kps_b2b_calls\": ", r.kps.b2b_calls, ", \"cusparse_ms\": ", JsonNumber(cus_ms),
      ", \"cusparse_b2b_ms\": ", JsonNumber(cus_b2b), ", \"cusparse_pre_ms\": ", JsonNumber(pre_ms),
      ", \"cusparse_pre_b2b_ms\": ", JsonNumber(pre_b2b), ", \"ratio\": ", JsonNumber(cus_ms / r.kps.ms),
      ", \"ratio_b2b\": ", JsonNumber(cus_b2b / r.kps.b2b_ms),
      ", \"ratio_pre_b2b\": ", JsonNumber(pre_b2b / r.kps.b2b_ms),
      ", \"kps_GBps\": ", JsonNumber(r.bytes / r.kps.ms / 1e6), ", \"kps_b2b_GBps\": ", JsonNumber(b2b_gbps),
      ", \"pct_copy_b2b\": ", JsonNumber(100 * b2b_gbps / copy_gbps), ", \"kps_err\": ", JsonNumber(r.kps_err),
      ", \"cusparse_err\": ", JsonNumber(r.cusparse_err), ", \"cusparse_variants\": [", absl::StrJoin(variants, ", "),
      "]}");
}

// Written whole to a temporary file and renamed over FILE, so a reader never sees half a report (it is
// rewritten after every row, so a run cut short still leaves the rows it finished).
absl::Status WriteJson(const std::string& path, const Report& report) {
  std::vector<std::string> rows, notes;
  for (const Row& r : report.rows) rows.push_back(JsonRow(r, report.copy_gbps));
  for (const std::string& n : report.notes) notes.push_back(JsonString(n));
  const std::string text = absl::StrCat(
      "{\"tool\": \"bench_sparse\", \"device\": ", JsonString(report.device),
      ", \"cuda_runtime\": ", report.runtime_version, ", \"cusparse\": ", report.cusparse_version,
      ", \"l2_bytes\": ", report.l2_bytes, ", \"scale\": ", JsonNumber(report.scale), ", \"reps\": ", report.reps,
      ", \"seed\": ", report.seed, ", \"copy_GBps\": ", JsonNumber(report.copy_gbps), ",\n \"rows\": [\n  ",
      absl::StrJoin(rows, ",\n  "), "],\n \"notes\": [", absl::StrJoin(notes, ", "), "]}\n");
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

// ---- options -----------------------------------------------------------------------------------------

struct Options {
  std::vector<std::string> classes;  // empty: every class
  std::vector<std::string> spmm_classes = {"stencil2d_5pt", "random_1_29", "rmat"};
  std::vector<int64_t> spmm_k = {8, 32, 128};
  bool run_spmv = true;
  bool run_spmm = true;
  std::vector<std::string> dtypes = {"float32"};
  int reps = 20;
  double scale = 1.0;
  uint64_t seed = 1;
  std::string json;
  bool dry_run = false;
  bool list = false;
};

constexpr const char* kUsage =
    "usage: bench_sparse [--classes a,b,c] [--dtype f32|f64|f32,f64] [--reps N] [--scale S] [--json FILE]\n"
    "                    [--ops spmv,spmm] [--spmm-classes a,b] [--k 8,32,128] [--seed N] [--dry-run] [--list]\n"
    "  KPS's spmv (check=false) against cuSPARSE's SpMV, and spmm against SpMM when KPS registers spmm,\n"
    "  on matrix classes built on the host; prints a markdown table per op.\n"
    "  --classes   classes to run (default: all; --list names them)\n"
    "  --dtype     value type(s): f32 (default), f64, or f32,f64 for both passes\n"
    "  --reps      single-call samples, each after an L2 flush; the median is reported (default 20)\n"
    "  --scale     multiplies each matrix's row count (and R-MAT's vertex count); < 1 for quick checks\n"
    "  --json      also write the results to FILE (rewritten after each row)\n"
    "  --ops       spmv, spmm or both (default both; spmm is skipped when KPS has no such op)\n"
    "  --spmm-classes  classes spmm runs on (default stencil2d_5pt,random_1_29,rmat; --classes filters)\n"
    "  --k         spmm's dense column counts (default 8,32,128)\n"
    "  --seed      the matrices' structure seed (default 1)\n"
    "  --dry-run   build and check the selected matrices, print their sizes, time nothing (no GPU needed)\n";

absl::StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options o;
  auto known_class = [](const std::string& name) {
    for (const MatrixClass& c : Classes()) {
      if (name == c.name) return true;
    }
    return false;
  };
  auto class_list = [&](absl::string_view v, std::vector<std::string>* out) -> absl::Status {
    out->clear();
    for (absl::string_view s : absl::StrSplit(v, ',', absl::SkipEmpty())) {
      if (!known_class(std::string(s))) {
        std::vector<std::string> names;
        for (const MatrixClass& c : Classes()) names.push_back(c.name);
        return absl::InvalidArgumentError(
            absl::StrCat("unknown class '", s, "'; classes: ", absl::StrJoin(names, ", ")));
      }
      out->push_back(std::string(s));
    }
    return absl::OkStatus();
  };
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    const bool boolean = flag == "--dry-run" || flag == "--list" || flag == "--help" || flag == "-h";
    static const char* const kValued[] = {"--classes", "--spmm-classes", "--dtype", "--ops", "--k",
                                          "--reps",    "--scale",        "--seed",  "--json"};
    const std::string name = flag.substr(0, flag.find('='));
    if (!boolean && std::find(std::begin(kValued), std::end(kValued), name) == std::end(kValued)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", name));
    }
    if (size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (!boolean) {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a value"));
      value = argv[++i];
    }
    if (flag == "--help" || flag == "-h") {
      return absl::CancelledError("help");
    } else if (flag == "--dry-run") {
      o.dry_run = true;
    } else if (flag == "--list") {
      o.list = true;
    } else if (flag == "--classes") {
      KPS_RETURN_IF_ERROR(class_list(value, &o.classes));
    } else if (flag == "--spmm-classes") {
      KPS_RETURN_IF_ERROR(class_list(value, &o.spmm_classes));
    } else if (flag == "--dtype") {
      o.dtypes.clear();
      for (absl::string_view s : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        if (s == "f32" || s == "float32") {
          o.dtypes.push_back("float32");
        } else if (s == "f64" || s == "float64") {
          o.dtypes.push_back("float64");
        } else {
          return absl::InvalidArgumentError(absl::StrCat("--dtype '", s, "': expected f32 or f64"));
        }
      }
    } else if (flag == "--ops") {
      o.run_spmv = o.run_spmm = false;
      for (absl::string_view s : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        if (s == "spmv") {
          o.run_spmv = true;
        } else if (s == "spmm") {
          o.run_spmm = true;
        } else {
          return absl::InvalidArgumentError(absl::StrCat("--ops '", s, "': expected spmv or spmm"));
        }
      }
    } else if (flag == "--k") {
      o.spmm_k.clear();
      for (absl::string_view s : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        int64_t k = 0;
        if (!absl::SimpleAtoi(s, &k) || k < 1) return absl::InvalidArgumentError(absl::StrCat("--k '", s, "'"));
        o.spmm_k.push_back(k);
      }
    } else if (flag == "--reps") {
      if (!absl::SimpleAtoi(value, &o.reps) || o.reps < 1) {
        return absl::InvalidArgumentError(absl::StrCat("--reps '", value, "': expected a positive integer"));
      }
    } else if (flag == "--scale") {
      if (!absl::SimpleAtod(value, &o.scale) || !(o.scale > 0) || o.scale > 16) {
        return absl::InvalidArgumentError(absl::StrCat("--scale '", value, "': expected a number in (0, 16]"));
      }
    } else if (flag == "--seed") {
      if (!absl::SimpleAtoi(value, &o.seed)) return absl::InvalidArgumentError(absl::StrCat("--seed '", value, "'"));
    } else if (flag == "--json") {
      o.json = value;
    }
  }
  if (o.dtypes.empty()) return absl::InvalidArgumentError("--dtype names no type");
  return o;
}

// ---- driver ------------------------------------------------------------------------------------------

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

absl::StatusOr<HostCsr> BuildClass(const MatrixClass& c, const Options& o) {
  // Each class's structure depends on the seed and its own name only, not on which classes run before it.
  // The name is hashed with FNV-1a, not std::hash, whose values differ between standard libraries.
  uint64_t name_hash = 0xcbf29ce484222325ull;
  for (const char* p = c.name; *p != '\0'; ++p)
    name_hash = (name_hash ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
  std::mt19937_64 rng(Mix64(o.seed) ^ Mix64(name_hash));
  KPS_ASSIGN_OR_RETURN(HostCsr a, c.build(o.scale, rng));
  KPS_RETURN_IF_ERROR(ValidateCsr(a));
  return a;
}

absl::StatusOr<std::pair<Tensor, Tensor>> Upload(const HostCsr& a, const Timer& timer) {
  KPS_ASSIGN_OR_RETURN(Tensor indptr, timer.Empty(Shape{a.m + 1}, DataType::kInt32));
  KPS_ASSIGN_OR_RETURN(Tensor indices, timer.Empty(Shape{a.nnz()}, DataType::kInt32));
  KPS_RETURN_IF_ERROR(CopyBytes(indptr.raw_data(), DeviceType::kCuda, a.indptr.data(), DeviceType::kCpu,
                                indptr.nbytes(), timer.stream()));
  KPS_RETURN_IF_ERROR(CopyBytes(indices.raw_data(), DeviceType::kCuda, a.indices.data(), DeviceType::kCpu,
                                indices.nbytes(), timer.stream()));
  return std::make_pair(std::move(indptr), std::move(indices));
}

int Main(int argc, char** argv) {
  absl::StatusOr<Options> parsed = ParseOptions(argc, argv);
  if (!parsed.ok()) {
    if (absl::IsCancelled(parsed.status())) {
      std::cout << kUsage;
      return 0;
    }
    std::cerr << "bench_sparse: " << parsed.status().message() << "\n" << kUsage;
    return 2;
  }
  const Options& o = *parsed;
  std::vector<const MatrixClass*> selected;
  for (const MatrixClass& c : Classes()) {
    if (o.classes.empty() || std::find(o.classes.begin(), o.classes.end(), c.name) != o.classes.end()) {
      selected.push_back(&c);
    }
  }
  if (o.list) {
    for (const MatrixClass& c : Classes()) std::cout << absl::StrFormat("%-16s %s\n", c.name, c.description);
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  if (o.dry_run) {
    std::cout << "| class | m | n | nnz | longest row | MB (f32) | MB (f64) | build s |\n"
                 "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const MatrixClass* c : selected) {
      const auto t0 = std::chrono::steady_clock::now();
      absl::StatusOr<HostCsr> a = BuildClass(*c, o);
      if (!a.ok()) {
        std::cerr << "bench_sparse: " << c->name << ": " << a.status().message() << "\n";
        return 1;
      }
      int64_t longest = 0;
      for (int64_t r = 0; r < a->m; ++r) longest = std::max(longest, a->RowLength(r));
      std::cout << absl::StrFormat("| %s | %d | %d | %d | %d | %.0f | %.0f | %.1f |\n", c->name, a->m, a->n, a->nnz(),
                                   longest, MinBytes(*a, 4, 1) / 1e6, MinBytes(*a, 8, 1) / 1e6, Seconds(t0));
    }
    return 0;
  }
  if (!CudaAvailable()) {
    std::cerr << "bench_sparse: no CUDA device: this benchmark times KPS's spmv/spmm against cuSPARSE on a GPU, "
                 "and no CUDA GPU is visible to this process (no driver or no device). Run it on a machine with "
                 "a GPU; --dry-run builds the matrices and prints their sizes without one.\n";
    return 1;
  }

  auto fail = [](const absl::Status& s) {
    std::cerr << "bench_sparse: " << s << "\n";
    return 1;
  };
  Report report;
  report.scale = o.scale;
  report.reps = o.reps;
  report.seed = o.seed;
  {
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
      return fail(absl::InternalError("cudaGetDeviceProperties failed"));
    }
    report.device = prop.name;
    report.l2_bytes = prop.l2CacheSize;
    cudaRuntimeGetVersion(&report.runtime_version);
  }
  absl::StatusOr<std::unique_ptr<Timer>> made = Timer::Create(o.reps);
  if (!made.ok()) return fail(made.status());
  Timer& timer = **made;
  CusparsePtr<cusparseContext> handle;
  {
    cusparseHandle_t h = nullptr;
    if (cusparseStatus_t st = cusparseCreate(&h); st != CUSPARSE_STATUS_SUCCESS) {
      return fail(absl::InternalError(absl::StrCat("cusparseCreate: ", cusparseGetErrorString(st))));
    }
    handle.reset(h);
    cusparseSetStream(h, timer.cuda_stream());
    cusparseGetVersion(h, &report.cusparse_version);
  }
  if (absl::StatusOr<double> copy = CopyGBps(timer); copy.ok()) {
    report.copy_gbps = *copy;
  } else {
    return fail(copy.status());
  }
  std::cout << absl::StrFormat(
      "device: %s (L2 %.0f MB), CUDA runtime %d, cuSPARSE %d\n"
      "device copy: %.0f GB/s (1 GiB cudaMemcpyAsync device to device, read + write, median of %d)\n"
      "single call: events around one call, synchronized, L2 flushed before each, median of %d; back to back: "
      "N calls between two events, N making >= 20 ms. ratio = cuSPARSE time / KPS time (> 1: KPS faster). "
      "GB/s: indptr + indices + values + x + y, each once. KPS: check=false, output preallocated.\n",
      report.device, report.l2_bytes / 1e6, report.runtime_version, report.cusparse_version, report.copy_gbps, o.reps,
      o.reps);
  auto save = [&]() {
    if (o.json.empty()) return;
    if (absl::Status s = WriteJson(o.json, report); !s.ok()) std::cerr << "bench_sparse: " << s << "\n";
  };
  auto progress = [&](const std::string& what) {
    std::cerr << absl::StrFormat("[%7.1f s] %s\n", Seconds(start), what);
  };

  // spmm runs on the classes of --spmm-classes that --classes keeps; their host matrices are kept from
  // the spmv pass rather than built twice.
  const bool have_spmm = OpRegistry::Global().Find("spmm") != nullptr;
  std::vector<const MatrixClass*> spmm_selected;
  if (o.run_spmm) {
    if (!have_spmm) {
      report.notes.push_back("spmm: KPS has no op 'spmm' in this build; the spmm comparison was skipped");
    } else {
      for (const MatrixClass* c : selected) {
        if (std::find(o.spmm_classes.begin(), o.spmm_classes.end(), c->name) != o.spmm_classes.end()) {
          spmm_selected.push_back(c);
        }
      }
      if (spmm_selected.empty()) report.notes.push_back("spmm: no class of --spmm-classes is selected");
    }
  }
  std::map<std::string, HostCsr> kept;
  auto run_row = [&](absl::StatusOr<Row> row) -> absl::Status {
    if (!row.ok()) return row.status();
    PrintRow(*row, report.copy_gbps, std::cout);
    std::cout.flush();
    if (!row->ok) {
      const std::string msg = absl::StrCat("MISMATCH ", row->op, " ", row->cls, " ", row->dtype,
                                           row->k ? absl::StrCat(" k=", row->k) : "", ": ", row->error);
      std::cerr << "bench_sparse: " << msg << "\n";
      report.notes.push_back(msg);
    }
    report.rows.push_back(*std::move(row));
    save();
    return absl::OkStatus();
  };

  if (o.run_spmv) {
    std::cout << "\n## spmv\n\n";
    PrintSpmvHeader(std::cout);
    for (const MatrixClass* c : selected) {
      progress(absl::StrCat("building ", c->name));
      absl::StatusOr<HostCsr> a = BuildClass(*c, o);
      if (!a.ok()) return fail(a.status());
      progress(absl::StrFormat("%s: %d x %d, %d entries; timing", c->name, a->m, a->n, a->nnz()));
      absl::StatusOr<std::pair<Tensor, Tensor>> d = Upload(*a, timer);
      if (!d.ok()) return fail(d.status());
      for (const std::string& dtype : o.dtypes) {
        absl::Status s = dtype == "float32"
                             ? run_row(BenchSpmv<float>(c->name, *a, d->first, d->second, timer, handle.get()))
                             : run_row(BenchSpmv<double>(c->name, *a, d->first, d->second, timer, handle.get()));
        if (!s.ok()) return fail(s);
      }
      if (std::find(spmm_selected.begin(), spmm_selected.end(), c) != spmm_selected.end()) {
        kept.emplace(c->name, *std::move(a));
      }
    }
  }
  if (!spmm_selected.empty()) {
    std::cout << "\n## spmm (B [n, k] and C [m, k] row-major; cuSPARSE: the fastest of ALG_DEFAULT, CSR_ALG2 and "
                 "CSR_ALG3, each with and without cusparseSpMM_preprocess)\n\n";
    PrintSpmmHeader(std::cout);
    for (const MatrixClass* c : spmm_selected) {
      auto it = kept.find(c->name);
      if (it == kept.end()) {
        progress(absl::StrCat("building ", c->name));
        absl::StatusOr<HostCsr> a = BuildClass(*c, o);
        if (!a.ok()) return fail(a.status());
        it = kept.emplace(c->name, *std::move(a)).first;
      }
      const HostCsr& a = it->second;
      absl::StatusOr<std::pair<Tensor, Tensor>> d = Upload(a, timer);
      if (!d.ok()) return fail(d.status());
      for (const std::string& dtype : o.dtypes) {
        for (int64_t k : o.spmm_k) {
          progress(absl::StrFormat("spmm %s %s k=%d", c->name, dtype, k));
          absl::Status s = dtype == "float32"
                               ? run_row(BenchSpmm<float>(c->name, a, d->first, d->second, k, timer, handle.get()))
                               : run_row(BenchSpmm<double>(c->name, a, d->first, d->second, k, timer, handle.get()));
          if (!s.ok()) return fail(s);
        }
      }
      kept.erase(it);
    }
  }

  bool mismatch = false;
  int64_t small = 0;
  for (const Row& r : report.rows) {
    mismatch = mismatch || !r.ok;
    if (r.ok && r.bytes < 2.0 * static_cast<double>(report.l2_bytes)) ++small;
  }
  if (small > 0) {
    report.notes.push_back(absl::StrCat(small,
                                        " row(s) move less than twice the L2 cache (--scale < 1?): their "
                                        "back-to-back figures read partly from L2"));
  }
  save();
  if (!report.notes.empty()) {
    std::cout << "\n";
    for (const std::string& n : report.notes) std::cout << "- " << n << "\n";
  }
  progress("done");
  if (mismatch) {
    std::cerr << "bench_sparse: FAILED: KPS and cuSPARSE disagree on at least one matrix (rows marked FAILED)\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace bench_sparse
}  // namespace kps

int main(int argc, char** argv) { return kps::bench_sparse::Main(argc, argv); }
