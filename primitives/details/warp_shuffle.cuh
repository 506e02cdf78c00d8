// Warp-level building blocks of the block primitives: shuffles of any trivially copyable
// type, the member mask of a possibly partial warp, and per-kernel shared scratch arrays.
#pragma once

#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

#include "primitives/details/macros.cuh"

namespace kps {
namespace details {

inline constexpr int kWarpSize = 32;
inline constexpr unsigned kFullWarpMask = 0xffffffffu;

// The member mask of warp `warp` in a block of `block_threads` threads: every lane for a
// full warp, the low (block_threads - 32 * warp) lanes for the last, partial one. Lanes
// that do not exist must not be named in a *_sync mask.
KPS_DEVICE unsigned WarpMemberMask(int block_threads, int warp) {
  const int lanes = block_threads - warp * kWarpSize;
  return lanes >= kWarpSize ? kFullWarpMask : ((1u << lanes) - 1u);
}

// Shuffles move 32-bit words; a T is moved as ceil(sizeof(T) / 4) of them, so one
// helper covers float, double, int64, __half, bfloat16 and small structs alike (a 4-byte
// T is a single SHFL, as with the typed intrinsics).
template <typename T>
struct ShuffleWords {
  static_assert(std::is_trivially_copyable_v<T>, "shuffled types must be trivially copyable");
  static constexpr int kWords = static_cast<int>((sizeof(T) + 3) / 4);
  unsigned w[kWords];
};

template <typename T>
KPS_DEVICE ShuffleWords<T> ToWords(const T& v) {
  ShuffleWords<T> words = {};
  memcpy(words.w, &v, sizeof(T));
  return words;
}

template <typename T>
KPS_DEVICE T FromWords(const ShuffleWords<T>& words, T like) {
  memcpy(&like, words.w, sizeof(T));
  return like;
}

// __shfl_down_sync for any trivially copyable T: lane l receives lane l + delta's `v`
// (its own when l + delta > 31). A source lane outside `mask` gives an undefined value.
template <typename T>
KPS_DEVICE T ShuffleDown(unsigned mask, T v, int delta) {
  ShuffleWords<T> words = ToWords(v);
#pragma unroll
  for (int i = 0; i < ShuffleWords<T>::kWords; ++i) words.w[i] = __shfl_down_sync(mask, words.w[i], delta);
  return FromWords(words, v);
}

// __shfl_up_sync for any trivially copyable T: lane l receives lane l - delta's `v`
// (its own when l < delta).
template <typename T>
KPS_DEVICE T ShuffleUp(unsigned mask, T v, int delta) {
  ShuffleWords<T> words = ToWords(v);
#pragma unroll
  for (int i = 0; i < ShuffleWords<T>::kWords; ++i) words.w[i] = __shfl_up_sync(mask, words.w[i], delta);
  return FromWords(words, v);
}

// __shfl_xor_sync for any trivially copyable T: lane l receives lane (l ^ lane_mask)'s `v`.
template <typename T>
KPS_DEVICE T ShuffleXor(unsigned mask, T v, int lane_mask) {
  ShuffleWords<T> words = ToWords(v);
#pragma unroll
  for (int i = 0; i < ShuffleWords<T>::kWords; ++i) words.w[i] = __shfl_xor_sync(mask, words.w[i], lane_mask);
  return FromWords(words, v);
}

// __shfl_sync for any trivially copyable T: every lane receives lane `src_lane`'s `v`
// (src_lane may differ from lane to lane).
template <typename T>
KPS_DEVICE T ShuffleIdx(unsigned mask, T v, int src_lane) {
  ShuffleWords<T> words = ToWords(v);
#pragma unroll
  for (int i = 0; i < ShuffleWords<T>::kWords; ++i) words.w[i] = __shfl_sync(mask, words.w[i], src_lane);
  return FromWords(words, v);
}

// A statically allocated __shared__ array of N values of T, one per (T, N, Tag) in each
// kernel that calls it; every call in that kernel returns the same memory. Raw storage,
// so that T needs no trivial constructor (__shared__ objects may not have one). Tag keeps
// the scratch arrays of different primitives apart.
template <typename T, int N, typename Tag>
KPS_DEVICE T* SharedScratch() {
  __shared__ alignas(T) unsigned char storage[sizeof(T) * N];
  return reinterpret_cast<T*>(storage);
}

}  // namespace details
}  // namespace kps
