// The host side of a scan's CUDA launch: picks the kernel (scan_kernels.cuh) for the
// call's lines, sizes its grid, launches it; the CUDA part of the scan ops' kernel
// (ScanOn<kCuda>) and KPS_SCAN_OP, which registers a scan op's schema and CPU and CUDA kernels.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "ops/scan/scan_ops.h"
#include "primitives/cumsum.cuh"
#include "registry/allocator.h"
#include "registry/cuda_launch.h"
#include "registry/device.h"
#include "registry/logging.h"
#include "registry/status.h"
#include "registry/tuning.h"
#include "ops/scan/scan_kernels.cuh"

namespace kps {
namespace scan {

template <typename Scanner>
constexpr int64_t LookbackTile() {
  return int64_t{kScanBlock} * LookbackItems<CombinerAcc<Scanner>>();
}

template <typename Scanner>
absl::Status LaunchLookback(const CombinerIn<Scanner>* x, const ScanShape& sh, const Scanner& s,
                            CombinerOut<Scanner>* out, int64_t* index, const Stream& stream) {
  using Acc = CombinerAcc<Scanner>;
  constexpr int kItems = LookbackItems<Acc>();
  const int64_t tiles_per_row = (sh.length + LookbackTile<Scanner>() - 1) / LookbackTile<Scanner>();
  const int64_t tiles = tiles_per_row * sh.outer;
  if (tiles > 0x7fffffff) {
    return absl::UnimplementedError(absl::StrCat("scan on CUDA: ", tiles, " tiles of ", LookbackTile<Scanner>(),
                                                 " elements; at most 2^31 - 1 are supported"));
  }
  LookbackLevels lv;
  int64_t entries = 0;
  for (int64_t n = tiles_per_row;; n = (n + kLookbackFan - 1) / kLookbackFan) {
    KPS_CHECK(lv.count <= kMaxLookbackLevels);  // 2^31 tiles take 7 levels
    lv.offset[lv.count - 1] = entries;
    lv.per_row[lv.count - 1] = n;
    entries += n * sh.outer;
    if (n <= kLookbackFan) break;
    ++lv.count;
  }
  // One buffer: the flag words (zeroed), then the states.
  const size_t head = sizeof(unsigned long long) * entries;
  const size_t bytes = head + (LookbackStates<Acc>::kPacked ? 0 : entries * sizeof(Acc));
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> state, Storage::Allocate(bytes, DeviceType::kCuda, stream));
  char* p = static_cast<char*>(state->data());
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p, 0, head, stream.cuda_stream()), "cudaMemsetAsync of the scan tile flags");
  LookbackStates<Acc> st{reinterpret_cast<unsigned long long*>(p), reinterpret_cast<Acc*>(p + head)};
  KPS_RETURN_IF_ERROR((LaunchKernel<&ScanLookbackKernel<Scanner, kItems>>(
      "ScanLookbackKernel", static_cast<unsigned>(tiles), kScanBlock, 0, stream.cuda_stream(), x, s, sh, out, index,
      st, lv, tiles_per_row)));
  return absl::OkStatus();
}

// ScanColsKernel over K adjacent columns per thread (scan_kernels.cuh states what K > 1
// needs), in one pass, or in three when segments > 1.
template <typename Scanner, int K>
absl::Status LaunchCols(const CombinerIn<Scanner>* x, const ScanShape& sh, const Scanner& s,
                        CombinerOut<Scanner>* out, int64_t* index, int64_t segments, int64_t seg_len,
                        const Stream& stream) {
  using Acc = CombinerAcc<Scanner>;
  constexpr int64_t kMaxGrid = int64_t{1} << 30;
  constexpr auto kKernel = &ScanColsKernel<Scanner, K, kColsBatch>;
  const int64_t cols = sh.outer * sh.inner;
  const int64_t blocks = (cols / K * segments + 255) / 256;
  const unsigned grid = static_cast<unsigned>(std::min(blocks, kMaxGrid));
  cudaStream_t cs = stream.cuda_stream();
  if (segments == 1) {
    return LaunchKernel<kKernel>("ScanColsKernel", grid, 256, 0, cs, x, s, sh, out, index, seg_len, 1, nullptr, false);
  }
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Storage> state,
                       Storage::Allocate(static_cast<size_t>(cols * segments) * sizeof(Acc), DeviceType::kCuda,
                                         stream));
  Acc* states = static_cast<Acc*>(state->data());
  KPS_RETURN_IF_ERROR((LaunchKernel<kKernel>("ScanColsKernel", grid, 256, 0, cs, x, s, sh, out, index, seg_len,
                                             segments, states, true)));
  KPS_RETURN_IF_ERROR((LaunchKernel<&ScanCarriesKernel<Scanner>>(
      "ScanCarriesKernel", static_cast<unsigned>((cols + 255) / 256), 256, 0, cs, s, states, cols, segments)));
  return LaunchKernel<kKernel>("ScanColsKernel", grid, 256, 0, cs, x, s, sh, out, index, seg_len, segments, states,
                               false);
}

template <typename Scanner>
absl::Status LaunchScan(const CombinerIn<Scanner>* x, const ScanShape& sh, const Scanner& s,
                        CombinerOut<Scanner>* out, int64_t* index, const Stream& stream) {
  constexpr int64_t kMaxGrid = int64_t{1} << 30;
  if (sh.inner == 1) {
    // Rows: a block each, unless too few to fill the GPU (a 1-D scan is one row): then
    // tiles of every row in one pass with the look-back above (chunks scanned in three
    // passes would move 1.5 times the bytes: about 2000 GB/s on cumsum_f32_256M).
    const int64_t want_blocks = int64_t{CudaMultiprocessorCount()} * 8;
    if (sh.outer < want_blocks / 2 && sh.length >= 8 * LookbackTile<Scanner>()) {
      return LaunchLookback(x, sh, s, out, index, stream);
    }
    const unsigned grid = static_cast<unsigned>(std::min(sh.outer, kMaxGrid));
    KPS_RETURN_IF_ERROR((LaunchKernel<&ScanRowsKernel<Scanner>>("ScanRowsKernel", grid, kScanBlock, 0,
                                                                stream.cuda_stream(), x, s, sh, out, index)));
  } else {
    // Columns: a thread per K adjacent columns in one pass when there are columns enough
    // to keep the memory busy (each thread has kColsBatch loads of K-vectors in flight),
    // else bands (one pass, the dim's lines spread over a block) where the state allows,
    // else the dim cut into segments, scanned in three passes (segment aggregates, carries
    // per column in segment order, the scan from the carries). Every cut depends only on
    // the shape and the SM count, so results stay reproducible.
    using Acc = CombinerAcc<Scanner>;
    using In = CombinerIn<Scanner>;
    using Out = CombinerOut<Scanner>;
    const int64_t sms = CudaMultiprocessorCount();
    const int64_t cols = sh.outer * sh.inner;
    // A thread per column once there are cols_per_sm columns per SM: bands ran a dim of 256
    // over 64K columns at half of PyTorch's thread-per-column speed (logcumsumexp, H200),
    // spending several combines per element on their cross-thread scan.
    // KPS_TUNE scan.cols_per_sm; awaiting measurement.
    // Only for scans with an index (cummax, cummin), whose states are too large for bands.
    // The others keep bands, then one column per thread: K adjacent columns per thread
    // left K times fewer threads, and a thread per column ahead of bands ran cumsum and
    // logcumsumexp at 0.14-0.76x of bands' or K = 1's speed (H200 run T2: logcumsumexp
    // bf16 over dim 1 of [64, 256, 1024] 62 GB/s vs bands 431, cumsum i32 over dim 0 of
    // [33, 524288] 833 vs 2279) while cummax gained 1.1-2.5x.
    constexpr bool kColsFirst = Scanner::kHasIndex;
    static const int64_t cols_per_sm = TuneInt("scan.cols_per_sm", 256);
    const bool many_cols = kColsFirst && cols >= sms * cols_per_sm;
    constexpr int kK = 16 / sizeof(In) >= 1 ? 16 / sizeof(In) : 1;
    const int64_t bands_per_slice = (sh.inner + kBandLanes * kK - 1) / (kBandLanes * kK);
    // Bands when the lines are vectors of 16 bytes, a band would be at least half used,
    // and there are bands enough to fill the GPU; else threads per column below. Not for
    // states of more than 32 bytes per vector (cummax's value and index, integer sums of
    // 8-bit types): their registers would spill.
    // Bands walk the dim in stripes of (kScanBlock / kBandLanes) x kBandRows = 128 lines: a
    // shorter dim leaves most of a band's threads idle while its cross-thread scan still
    // runs, so where columns alone fill the GPU a thread per column takes it instead
    // (logcumsumexp over dim 0 of [33, 524288], H200: bands 0.87 ms, PyTorch 0.059).
    // KPS_TUNE scan.bands_min (0: bands for any length); awaiting measurement.
    static const int64_t bands_min = TuneInt("scan.bands_min", kScanBlock / kBandLanes * kBandRows);
    const bool short_dim = sh.length < bands_min && cols >= sms * 1024;
    if constexpr (sizeof(Acc) * kK <= 32) {
      if (!many_cols && !short_dim && sh.inner % kK == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
          reinterpret_cast<uintptr_t>(out) % 16 == 0 && 2 * sh.inner >= kBandLanes * kK &&
          sh.outer * bands_per_slice >= sms && sh.outer * bands_per_slice <= kMaxGrid) {
        KPS_RETURN_IF_ERROR((LaunchKernel<&ScanBandsKernel<Scanner, kK>>(
            "ScanBandsKernel", static_cast<unsigned>(sh.outer * bands_per_slice), kScanBlock, 0, stream.cuda_stream(),
            x, s, sh, out, index, bands_per_slice)));
        return absl::OkStatus();
      }
    }
    int64_t segments = 1, seg_len = sh.length;
    if (!many_cols && sh.length >= 256) {
      segments = std::min<int64_t>((sms * 1024 + cols - 1) / cols, sh.length / 64);
      seg_len = (sh.length + segments - 1) / segments;
      segments = (sh.length + seg_len - 1) / seg_len;
    }
    constexpr int kV = ColsVecWidth<Scanner>();
    auto aligned = [](const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; };
    const bool vec = kColsFirst && kV > 1 && sh.inner % kV == 0 && aligned(x, kVectorsAlign<In, kV>) &&
                     aligned(out, kVectorsAlign<Out, kV>) &&
                     (!Scanner::kHasIndex || aligned(index, kVectorsAlign<int64_t, kV>));
    if constexpr (kColsFirst && kV > 1) {
      if (vec) return LaunchCols<Scanner, kV>(x, sh, s, out, index, segments, seg_len, stream);
    }
    return LaunchCols<Scanner, 1>(x, sh, s, out, index, segments, seg_len, stream);
  }
  return absl::OkStatus();
}

template <>
struct ScanOn<DeviceType::kCuda> {
  template <typename Scanner>
  static absl::Status Run(const CombinerIn<Scanner>* x, const ScanShape& sh, const Scanner& s,
                          CombinerOut<Scanner>* out, int64_t* index, const Stream& stream) {
    return LaunchScan(x, sh, s, out, index, stream);
  }
};

}  // namespace scan
}  // namespace kps

// Registers scan op `name`: its schema (input x; attributes dim, exclusive, reverse; the
// outputs of ScanRule `rule`), and CPU and CUDA kernels for the element types `...`, both
// running `ScannerOrMaker<T>` (a scanner, or a Maker that builds one from the call). The
// schema builder is the expression's value, so that .Attr(...) and .Doc(...) follow:
//
//   KPS_SCAN_OP("cumsum", kSumLike, SumScanner, KPS_ALL_CPP_TYPES).Doc("Running sum along `dim`.");
#define KPS_SCAN_OP(name, rule, ScannerOrMaker, ...)                                                     \
  KPS_REGISTER_DEVICE_KERNELS(name, ::kps::scan::ScanKernel<ScannerOrMaker>::Kernel, __VA_ARGS__);         \
  static ::kps::internal::OpRegistrationTrigger KPS_CONCAT(kps_scan_op_, __COUNTER__) =                  \
      ::kps::scan::ScanSchema(::kps::OpSchemaBuilder(name, __FILE__, __LINE__), ::kps::scan::ScanRule::rule)
