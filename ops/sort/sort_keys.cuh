// Radix keys: every dtype mapped to an unsigned integer whose unsigned order is the
// sort order KPS promises (NaN largest, -0.0 equal to +0.0), so that one sorting kernel
// per key width serves all ten dtypes. 1-, 2- and 4-byte dtypes use 32-bit keys (with
// 8, 16 or 32 significant bits), 8-byte dtypes 64-bit keys. Descending order is the
// same key with its significant bits complemented; stability comes from the index
// payload, never from the key.
//
// The dtype is a runtime argument: the branch on it is uniform over the grid, costs a
// few instructions per element, and keeps the sort kernels from being instantiated
// once per dtype (their bitonic networks are the expensive part to compile).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "ops/common/element_bits.cuh"
#include "primitives/radix.cuh"
#include "registry/data_type.h"

namespace kps {
namespace sort {

// The significant bits of a dtype's key: its width.
__host__ __device__ inline int KeyBits(DataType dt) {
  switch (dt) {
    case DataType::kBool:
    case DataType::kInt8:
    case DataType::kUInt8:
      return 8;
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 16;
    case DataType::kInt32:
    case DataType::kFloat32:
      return 32;
    default:
      return 64;
  }
}
inline bool WideKey(DataType dt) { return KeyBits(dt) == 64; }

// All significant bits set: the complement mask of a descending sort.
template <typename K>
__host__ __device__ inline K KeyMask(int bits) {
  return bits >= static_cast<int>(sizeof(K) * 8) ? ~K(0) : static_cast<K>((K(1) << bits) - 1);
}

namespace detail {

// IEEE bits -> ordered key: NaNs (any payload, any sign) become the largest key, both
// zeros the key of +0.0; negatives are complemented, non-negatives get the sign bit.
// Selects, not branches: a branch per element kept the loads of a batch from issuing
// together in the topk scan.
template <typename K>
__device__ __forceinline__ K FloatBitsKey(K b, int bits, K exp_mask) {
  const K sign = K(1) << (bits - 1);
  const K mag = b & (sign - 1);
  K key = (b & sign) ? (~b & KeyMask<K>(bits)) : (b | sign);
  key = mag == 0 ? sign : key;                          // +-0
  return mag > exp_mask ? KeyMask<K>(bits) : key;       // NaN
}

}  // namespace detail

// The ascending key of a `dt` element from its raw bits (zero-extended into K).
template <typename K>
__device__ __forceinline__ K KeyOfBits(K b, DataType dt) {
  switch (dt) {
    case DataType::kBool:
      return b != 0 ? 1 : 0;
    case DataType::kUInt8:
      return b;
    case DataType::kInt8:
      return b ^ K(0x80u);
    case DataType::kInt16:
      return b ^ K(0x8000u);
    case DataType::kFloat16:
      return detail::FloatBitsKey<K>(b, 16, K(0x7c00));
    case DataType::kBFloat16:
      return detail::FloatBitsKey<K>(b, 16, K(0x7f80));
    case DataType::kInt32:
      return b ^ K(0x80000000u);
    case DataType::kFloat32:
      return detail::FloatBitsKey<K>(b, 32, K(0x7f800000u));
    case DataType::kInt64:
      return static_cast<K>(static_cast<uint64_t>(b) ^ (uint64_t{1} << 63));
    case DataType::kFloat64:
      if constexpr (sizeof(K) == 8) return detail::FloatBitsKey<K>(b, 64, K(0x7ff0000000000000ull));
      return 0;  // unreachable: 8-byte dtypes always use 64-bit keys
  }
  return 0;
}

// The ascending key of element i of a `dt` array at p.
template <typename K>
__device__ __forceinline__ K LoadKey(const void* p, int64_t i, DataType dt) {
  switch (KeyBits(dt)) {
    case 8:
      return KeyOfBits<K>(static_cast<const uint8_t*>(p)[i], dt);
    case 16:
      return KeyOfBits<K>(static_cast<const uint16_t*>(p)[i], dt);
    case 32:
      return KeyOfBits<K>(static_cast<const uint32_t*>(p)[i], dt);
    default:
      return KeyOfBits<K>(static_cast<K>(static_cast<const uint64_t*>(p)[i]), dt);
  }
}

// The 32-bit keys (^ flip) of N elements of a 1- to 4-byte `dt` array at p + offset, a
// strided run (kps::ReadDataStriped): key[j] is element first + j * stride, or the key
// of raw bits 0 where that is not below num. All N loads issue before any key is made: a
// dtype switch between them made each load wait for the one before (the onesweep's
// first pass took 1.09 ms against 0.57 for a later one).
template <int N>
__device__ __forceinline__ void LoadKeyRun(const void* p, DataType dt, int64_t offset, int first, int stride, int num,
                                           uint32_t flip, uint32_t* key) {
  switch (KeyBits(dt)) {
    case 8:
      kps::ReadDataStriped<uint8_t, uint32_t, N>(key, static_cast<const uint8_t*>(p) + offset, first, stride, num, 0u);
      break;
    case 16:
      kps::ReadDataStriped<uint16_t, uint32_t, N>(key, static_cast<const uint16_t*>(p) + offset, first, stride, num,
                                                  0u);
      break;
    default:
      kps::ReadDataStriped<uint32_t, uint32_t, N>(key, static_cast<const uint32_t*>(p) + offset, first, stride, num,
                                                  0u);
      break;
  }
#pragma unroll
  for (int j = 0; j < N; ++j) key[j] = KeyOfBits<uint32_t>(key[j], dt) ^ flip;
}

// The bits of the value whose ascending key is `key`, or false where the key stands for
// several values (the NaNs, the two zeros): then the caller reads the element itself.
template <typename K>
__device__ __forceinline__ bool KeyToBits(K key, DataType dt, uint64_t* bits) {
  switch (dt) {
    case DataType::kBool:
    case DataType::kUInt8:
      *bits = key;
      return true;
    case DataType::kInt8:
      *bits = key ^ 0x80u;
      return true;
    case DataType::kInt16:
      *bits = key ^ 0x8000u;
      return true;
    case DataType::kInt32:
      *bits = static_cast<uint32_t>(key) ^ 0x80000000u;
      return true;
    case DataType::kInt64:
      *bits = static_cast<uint64_t>(key) ^ (uint64_t{1} << 63);
      return true;
    default:
      break;
  }
  const int width = KeyBits(dt);
  const uint64_t sign = uint64_t{1} << (width - 1);
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  const uint64_t k = static_cast<uint64_t>(key);
  if (k == mask || k == sign) return false;  // NaN or zero
  *bits = (k & sign) ? (k ^ sign) : (~k & mask);
  return true;
}

}  // namespace sort
}  // namespace kps
