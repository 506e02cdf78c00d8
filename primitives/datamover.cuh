// Data-movement primitives: global memory <-> registers, block-cooperatively.
//
// The KPS layout for 1-D data: a block works on a tile of KPS_BLOCK_NUM_X * NX contiguous
// elements; thread t owns elements [t * NX, t * NX + NX) of the tile and keeps them in a
// register array of NX (x NY) values. Kernels offset `src`/`dst` to the tile's start, so
// `num` (the valid elements left in the tile) fits in an int even for tensors of more
// than 2^31 elements.
//
//   float x[4], y[4];
//   kps::ReadData<float, 4, 1, false>(x, in + tile_start, tile_size);   // full tile
//   kps::ReadData<float, 4, 1, true>(y, in + tail_start, remaining);    // last tile
#pragma once

#include "primitives/details/macros.cuh"
#include "primitives/details/vector_type.cuh"

namespace kps {

// Sets all NX registers of `dst` to `init_data`.
template <typename T, int NX>
KPS_DEVICE void Init(T* dst, T init_data) {
#pragma unroll
  for (int i = 0; i < NX; ++i) dst[i] = init_data;
}

// Copies registers: dst[i] = src[i] for i < NX; with IsBoundary, only for i < num
// (the rest of `dst` is left as it was, e.g. as set by the other Init).
template <typename T, int NX, bool IsBoundary = false>
KPS_DEVICE void Init(T* dst, const T* src, int num) {
#pragma unroll
  for (int i = 0; i < NX; ++i) {
    if (!IsBoundary || i < num) dst[i] = src[i];
  }
}

// 1-D load of this thread's NX contiguous elements of the tile at `src`
// (elements [KPS_THREAD_ID_X * NX, + NX)). NY must be 1 for the 1-D form.
//
// IsBoundary == false: every element is in range and `src` is aligned to the vector
// width (the largest power of two dividing NX with at most 16 bytes); the load is
// vectorized. IsBoundary == true: only elements with tile index < `num` are read, one
// by one; registers of the others are left untouched.
template <typename T, int NX, int NY, bool IsBoundary = false>
KPS_DEVICE void ReadData(T* dst, const T* __restrict__ src, int num) {
  static_assert(NY == 1, "1-D ReadData: NY must be 1");
  const int thread_offset = static_cast<int>(KPS_THREAD_ID_X) * NX;
  if (IsBoundary) {
#pragma unroll
    for (int i = 0; i < NX; ++i) {
      if (thread_offset + i < num) dst[i] = src[thread_offset + i];
    }
  } else {
    constexpr int kVec = details::VectorSizeFor<T, NX>();
    using Vec = details::VectorType<T, kVec>;
    const Vec* vsrc = reinterpret_cast<const Vec*>(src + thread_offset);
#pragma unroll
    for (int v = 0; v < NX / kVec; ++v) {
      Vec tmp = vsrc[v];
#pragma unroll
      for (int i = 0; i < kVec; ++i) dst[v * kVec + i] = tmp.val[i];
    }
  }
}

// 1-D store of this thread's NX contiguous elements to the tile at `dst`; the mirror of
// ReadData (same layout, alignment and boundary rules).
template <typename T, int NX, int NY, bool IsBoundary = false>
KPS_DEVICE void WriteData(T* dst, const T* src, int num) {
  static_assert(NY == 1, "1-D WriteData: NY must be 1");
  const int thread_offset = static_cast<int>(KPS_THREAD_ID_X) * NX;
  if (IsBoundary) {
#pragma unroll
    for (int i = 0; i < NX; ++i) {
      if (thread_offset + i < num) dst[thread_offset + i] = src[i];
    }
  } else {
    constexpr int kVec = details::VectorSizeFor<T, NX>();
    using Vec = details::VectorType<T, kVec>;
    Vec* vdst = reinterpret_cast<Vec*>(dst + thread_offset);
#pragma unroll
    for (int v = 0; v < NX / kVec; ++v) {
      Vec tmp;
#pragma unroll
      for (int i = 0; i < kVec; ++i) tmp.val[i] = src[v * kVec + i];
      vdst[v] = tmp;
    }
  }
}

}  // namespace kps
