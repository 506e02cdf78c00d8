// Function qualifiers that let functors compile both in nvcc (host and device) and in a
// plain C++ compiler (host only, for CPU kernels).
#pragma once

#if defined(__CUDACC__)
#define KPS_FUNCTOR_HD __host__ __device__ __forceinline__
#else
#define KPS_FUNCTOR_HD inline
#endif
