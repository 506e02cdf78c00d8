// Thread/block/grid indexing macros. Kernels written against these (rather than
// threadIdx and friends) could be retargeted to another backend by redefining them.
#pragma once

#include <cuda_runtime.h>

#define KPS_THREAD_ID_X (threadIdx.x)
#define KPS_THREAD_ID_Y (threadIdx.y)
#define KPS_THREAD_ID_Z (threadIdx.z)
#define KPS_BLOCK_NUM_X (blockDim.x)
#define KPS_BLOCK_NUM_Y (blockDim.y)
#define KPS_BLOCK_NUM_Z (blockDim.z)
#define KPS_BLOCK_ID_X (blockIdx.x)
#define KPS_BLOCK_ID_Y (blockIdx.y)
#define KPS_BLOCK_ID_Z (blockIdx.z)
#define KPS_GRID_NUM_X (gridDim.x)
#define KPS_GRID_NUM_Y (gridDim.y)
#define KPS_GRID_NUM_Z (gridDim.z)

// Device functions of the primitive API: always inlined into the calling kernel, so the
// register arrays they take stay in registers.
#define KPS_DEVICE __device__ __forceinline__
#define KPS_HOST_DEVICE __host__ __device__ __forceinline__

// `#pragma unroll` for functions compiled for host and device: host compilers do not
// know the pragma and warn.
#if defined(__CUDA_ARCH__)
#define KPS_PRAGMA_UNROLL _Pragma("unroll")
#else
#define KPS_PRAGMA_UNROLL
#endif
