// FastDivMod: division by a run-time constant through a multiply and a shift.
#pragma once

#include <cstdint>

#include "primitives/details/macros.cuh"

namespace kps {
namespace details {

// Divides 32-bit unsigned integers by a fixed divisor d in [1, 2^32 - 1] with one
// high multiply, one add and one shift (Granlund & Montgomery's round-up method), exact
// for every 32-bit dividend: the add is done in 64 bits, so n + umulhi(n, m) cannot
// overflow (a 32-bit add, as some libraries use, is only exact for n < 2^31).
//
//   FastDivMod dm(7);          // on the host, passed to a kernel by value
//   uint32_t q = dm.Div(n);    // n / 7
//   auto qr = dm.Divmod(n);    // {n / 7, n % 7}
struct FastDivMod {
  struct Result {
    uint32_t quotient;
    uint32_t remainder;
  };

  FastDivMod() = default;
  // shift = ceil(log2 d); multiplier = floor(2^32 * (2^shift - d) / d) + 1, which fits
  // 32 bits because 2^shift - d < d.
  __host__ __device__ explicit FastDivMod(uint32_t d) : divisor(d) {
    uint32_t s = 0;
    while (s < 32 && (uint64_t{1} << s) < d) ++s;
    shift = s;
    multiplier = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << s) - d)) / d + 1);
  }

  KPS_HOST_DEVICE uint32_t Div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t t = __umulhi(n, multiplier);
#else
    const uint32_t t = static_cast<uint32_t>((static_cast<uint64_t>(n) * multiplier) >> 32);
#endif
    return static_cast<uint32_t>((static_cast<uint64_t>(t) + n) >> shift);
  }

  KPS_HOST_DEVICE Result Divmod(uint32_t n) const {
    const uint32_t q = Div(n);
    return {q, n - q * divisor};
  }

  uint32_t divisor = 1;
  uint32_t multiplier = 1;
  uint32_t shift = 0;
};

}  // namespace details
}  // namespace kps
