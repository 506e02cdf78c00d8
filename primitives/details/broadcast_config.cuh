// BroadcastConfig: maps an output element's linear index to the offset of the input
// element it reads, for NumPy broadcasting and strided inputs.
#pragma once

#include <cstdint>

#include "primitives/details/fast_divmod.cuh"

namespace kps {
namespace details {

inline constexpr int kMaxBroadcastRank = 8;

// The output's dims (row-major, innermost last) and, per output dim, the input's stride
// in elements (0 where the input is broadcast along that dim). Outputs of up to 2^32 - 1
// elements use FastDivMod on 32-bit indices; larger ones take the 64-bit path (plain
// 64-bit division: correct at any size, slower), chosen once on the host.
//
//   int64_t out[] = {64, 256, 56, 56}, in[] = {1, 256, 1, 1};
//   auto cfg = BroadcastConfig::FromShapes(out, in, 4);   // host; pass by value
//   ... ReadDataBc<float, 4, 1, true>(regs, bias, offset, cfg, numel);
struct BroadcastConfig {
  int rank = 0;
  bool use_64bit = false;
  FastDivMod divmoders[kMaxBroadcastRank];
  uint32_t strides[kMaxBroadcastRank] = {};
  int64_t dims64[kMaxBroadcastRank] = {};
  int64_t strides64[kMaxBroadcastRank] = {};

  BroadcastConfig() = default;

  // From the output's dims and the input's stride per output dim (rank <= 8).
  __host__ BroadcastConfig(const int64_t* out_dims, const int64_t* in_strides, int r) : rank(r) {
    int64_t numel = 1;
    int64_t max_offset = 0;
    for (int i = 0; i < r; ++i) {
      numel *= out_dims[i];
      if (out_dims[i] > 0) max_offset += (out_dims[i] - 1) * in_strides[i];
    }
    use_64bit = numel > int64_t{0xFFFFFFFF} || max_offset > int64_t{0xFFFFFFFF};
    for (int i = 0; i < r; ++i) {
      dims64[i] = out_dims[i];
      strides64[i] = in_strides[i];
      const int64_t d = out_dims[i] > 0 ? out_dims[i] : 1;
      divmoders[i] = FastDivMod(d <= int64_t{0xFFFFFFFF} ? static_cast<uint32_t>(d) : 1u);
      strides[i] = static_cast<uint32_t>(in_strides[i]);
    }
  }

  // From the output's and a contiguous input's dims of the same rank; an input dim of 1
  // against a larger output dim is broadcast.
  __host__ static BroadcastConfig FromShapes(const int64_t* out_dims, const int64_t* in_dims, int r) {
    int64_t strides[kMaxBroadcastRank];
    int64_t s = 1;
    for (int i = r - 1; i >= 0; --i) {
      strides[i] = (in_dims[i] == 1 && out_dims[i] != 1) ? 0 : s;
      s *= in_dims[i];
    }
    return BroadcastConfig(out_dims, strides, r);
  }

  // Input offset of output element `index` (index < 2^32; use_64bit must be false).
  KPS_HOST_DEVICE uint32_t Offset32(uint32_t index) const {
    uint32_t offset = 0;
KPS_PRAGMA_UNROLL
    for (int i = kMaxBroadcastRank - 1; i >= 0; --i) {
      if (i >= rank) continue;
      const FastDivMod::Result qr = divmoders[i].Divmod(index);
      offset += qr.remainder * strides[i];
      index = qr.quotient;
    }
    return offset;
  }

  // Input offset of output element `index`, for any size.
  KPS_HOST_DEVICE int64_t Offset64(int64_t index) const {
    int64_t offset = 0;
    for (int i = rank - 1; i >= 0; --i) {
      const int64_t d = dims64[i] > 0 ? dims64[i] : 1;
      const int64_t q = index / d;
      offset += (index - q * d) * strides64[i];
      index = q;
    }
    return offset;
  }

  // Offset through whichever path the config chose.
  KPS_HOST_DEVICE int64_t Offset(int64_t index) const {
    return use_64bit ? Offset64(index) : static_cast<int64_t>(Offset32(static_cast<uint32_t>(index)));
  }
};

// Maps a linear index over a subset of a tensor's dims (e.g. its reduced dims, or its
// kept dims) to the element offset, through FastDivMod: dims[i] and strides[i] describe
// the subset, innermost last. Used by ReadDataReduce.
struct IndexCalculator {
  int rank = 0;
  FastDivMod divmoders[kMaxBroadcastRank];
  int64_t strides[kMaxBroadcastRank] = {};

  IndexCalculator() = default;
  __host__ IndexCalculator(const int64_t* dims, const int64_t* dim_strides, int r) : rank(r) {
    for (int i = 0; i < r; ++i) {
      divmoders[i] = FastDivMod(static_cast<uint32_t>(dims[i] > 0 ? dims[i] : 1));
      strides[i] = dim_strides[i];
    }
  }

  // Element offset of subset index `index` (< 2^32).
  KPS_HOST_DEVICE int64_t operator()(uint32_t index) const {
    int64_t offset = 0;
KPS_PRAGMA_UNROLL
    for (int i = kMaxBroadcastRank - 1; i >= 0; --i) {
      if (i >= rank) continue;
      const FastDivMod::Result qr = divmoders[i].Divmod(index);
      offset += static_cast<int64_t>(qr.remainder) * strides[i];
      index = qr.quotient;
    }
    return offset;
  }
};

}  // namespace details
}  // namespace kps
