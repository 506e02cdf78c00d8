// Device tests of the first primitives: Init, ReadData / WriteData (1-D, vectorized and
// boundary), ElementwiseUnary / ElementwiseBinary, VectorType. Each runs in a small test
// kernel, sweeping dtypes, NX and block sizes, against host references.
#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "functors/functors.h"
#include "gtest/gtest.h"
#include "primitives/primitives.cuh"
#include "registry/tensor.h"
#include "tests/support/test_support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::RandomTensor;
using ::kps::testing::ToDoubles;

// Static contract of VectorType / VectorSizeFor: 16-byte vectors at most.
static_assert(alignof(details::VectorType<float, 4>) == 16);
static_assert(alignof(details::VectorType<__half, 2>) == 4);
static_assert(details::VectorSizeFor<float, 8>() == 4);
static_assert(details::VectorSizeFor<float, 6>() == 2);
static_assert(details::VectorSizeFor<__half, 8>() == 8);
static_assert(details::VectorSizeFor<double, 3>() == 1);
static_assert(details::MaxVectorSize<int8_t>() == 16);
static_assert(details::MaxVectorSize<double>() == 2);

// Each block moves one tile of blockDim.x * NX elements through registers.
template <typename T, int NX, bool IsBoundary, LoadPolicy Policy = LoadPolicy::kCached>
__global__ void CopyTilesKernel(const T* src, T* dst, int64_t n) {
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_NUM_X) * NX;
  const int64_t base = KPS_BLOCK_ID_X * tile;
  const int num = static_cast<int>(n - base < tile ? n - base : tile);
  T reg[NX];
  ReadData<T, NX, 1, IsBoundary, Policy>(reg, src + base, num);
  WriteData<T, NX, 1, IsBoundary>(dst + base, reg, num);
}

// Registers start at `fill`; a boundary read must leave lanes past `n` at `fill`, which
// the unconditional store then exposes.
template <typename T, int NX>
__global__ void BoundaryKeepsRegistersKernel(const T* src, T* dst, int64_t n, T fill) {
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_NUM_X) * NX;
  const int64_t base = KPS_BLOCK_ID_X * tile;
  const int num = static_cast<int>(n - base < tile ? n - base : tile);
  T reg[NX];
  Init<T, NX>(reg, fill);
  ReadData<T, NX, 1, true>(reg, src + base, num);
  T copy[NX];
  Init<T, NX>(copy, fill);
  Init<T, NX, true>(copy, reg, NX);  // the register-to-register overload
  WriteData<T, NX, 1, false>(dst + base, copy, static_cast<int>(tile));
}

template <typename T, int NX>
__global__ void AddScaledKernel(const T* x, const T* y, T* out, int64_t n, AddScaledFunctor<T> f) {
  const int64_t tile = static_cast<int64_t>(KPS_BLOCK_NUM_X) * NX;
  const int64_t base = KPS_BLOCK_ID_X * tile;
  const int num = static_cast<int>(n - base < tile ? n - base : tile);
  T a[NX], b[NX], r[NX], s[NX];
  ReadData<T, NX, 1, true>(a, x + base, num);
  ReadData<T, NX, 1, true>(b, y + base, num);
  ElementwiseBinary<T, T, NX, 1>(r, a, b, f);
  ElementwiseUnary<T, T, NX, 1>(s, r, IdentityFunctor<T>());
  WriteData<T, NX, 1, true>(out + base, s, num);
}

template <typename T>
class PrimitiveTest : public ::testing::Test {};
using PrimitiveTypes = ::testing::Types<float, __half, __nv_bfloat16, double, int8_t, int64_t>;
TYPED_TEST_SUITE(PrimitiveTest, PrimitiveTypes);

constexpr int kBlockSizes[] = {32, 64, 128, 256, 512, 1024};

// Element i of `src` loaded with LoadStreaming into a[i] and with LoadFromL2 into b[i].
template <typename T>
__global__ void LoadPoliciesKernel(const T* src, T* a, T* b, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    a[i] = LoadStreaming(src + i);
    b[i] = LoadFromL2(src + i);
  }
}

template <typename T, int NX, LoadPolicy Policy = LoadPolicy::kCached>
void CheckCopy(bool boundary, int block, int64_t n, int64_t src_offset) {
  const DataType dt = DataTypeOf<T>();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " block=" << block << " n=" << n
                                    << " boundary=" << boundary << " src_offset=" << src_offset
                                    << " seed=" << seed);
  const int64_t tile = int64_t{block} * NX;
  const int64_t tiles = (n + tile - 1) / tile;
  const int64_t guard = 64;  // poisoned elements past n that nothing may write
  Tensor src = *testing::RandomTensorAtOffset(Shape{n}, dt, seed, src_offset).To(DeviceType::kCuda);
  Tensor dst = *Tensor::Empty(Shape{tiles * tile + guard}, dt, DeviceType::kCuda);  // poisoned
  if (tiles > 0) {
    if (boundary) {
      CopyTilesKernel<T, NX, true, Policy><<<tiles, block>>>(src.data<T>(), dst.data<T>(), n);
    } else {
      CopyTilesKernel<T, NX, false, Policy><<<tiles, block>>>(src.data<T>(), dst.data<T>(), n);
    }
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> want = ToDoubles(src), got = ToDoubles(dst);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
  // Nothing past n was written: the poison (all-ones bytes) is intact.
  Tensor poison = *Tensor::Empty(Shape{1}, dt, DeviceType::kCpu);
  const double p = ToDoubles(poison)[0];
  for (int64_t i = n; i < tiles * tile + guard; ++i) {
    if (p != p) {
      ASSERT_NE(got[i], got[i]) << "element " << i << " past the end was written";
    } else {
      ASSERT_EQ(got[i], p) << "element " << i << " past the end was written";
    }
  }
}

TYPED_TEST(PrimitiveTest, ReadWriteFullTilesVectorized) {
  KPS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  for (int block : kBlockSizes) {
    CheckCopy<T, 1>(false, block, block * 3, 0);
    CheckCopy<T, 2>(false, block, block * 2 * 5, 0);
    CheckCopy<T, 4>(false, block, block * 4 * 2, 0);
    CheckCopy<T, 8>(false, block, block * 8 * 3, 0);
    CheckCopy<T, 16>(false, block, block * 16, 0);
  }
}

TYPED_TEST(PrimitiveTest, ReadDataStreamingPolicyLoadsTheSameValues) {
  KPS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  constexpr LoadPolicy kS = LoadPolicy::kStreaming;
  for (int block : {32, 256, 1024}) {
    CheckCopy<T, 1, kS>(false, block, block * 3, 0);
    CheckCopy<T, 4, kS>(false, block, block * 4 * 2, 0);
    CheckCopy<T, 8, kS>(false, block, block * 8 * 3, 0);
    CheckCopy<T, 16, kS>(false, block, block * 16, 0);
    CheckCopy<T, 4, kS>(true, block, 4097, 1);  // the boundary path ignores the policy
  }
}

TYPED_TEST(PrimitiveTest, LoadStreamingAndLoadFromL2ReadEveryElement) {
  KPS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  const DataType dt = DataTypeOf<T>();
  for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{1021}, int64_t{65537}}) {
    const uint64_t seed = FreshSeed();
    SCOPED_TRACE(::testing::Message() << "n=" << n << " seed=" << seed);
    Tensor src = *testing::RandomTensorAtOffset(Shape{n}, dt, seed, 1).To(DeviceType::kCuda);
    Tensor a = *Tensor::Empty(Shape{n}, dt, DeviceType::kCuda);  // poisoned
    Tensor b = *Tensor::Empty(Shape{n}, dt, DeviceType::kCuda);
    LoadPoliciesKernel<T><<<static_cast<unsigned>((n + 255) / 256), 256>>>(src.data<T>(), a.data<T>(), b.data<T>(), n);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<double> want = ToDoubles(src), got_a = ToDoubles(a), got_b = ToDoubles(b);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got_a[i], want[i]) << "LoadStreaming, element " << i;
      ASSERT_EQ(got_b[i], want[i]) << "LoadFromL2, element " << i;
    }
  }
}

TYPED_TEST(PrimitiveTest, ReadWriteBoundaryAnySizeAndAlignment) {
  KPS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  for (int block : {32, 256, 1024}) {
    for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{31}, int64_t{255}, int64_t{257}, int64_t{1021},
                      int64_t{4097}, int64_t{65537}}) {
      for (int64_t off : {0, 1, 3}) {
        CheckCopy<T, 1>(true, block, n, off);
        CheckCopy<T, 3>(true, block, n, off);
        CheckCopy<T, 4>(true, block, n, off);
        CheckCopy<T, 8>(true, block, n, off);
      }
    }
  }
}

template <typename T, int NX>
void CheckBoundaryKeepsRegisters(int block, int64_t n) {
  const DataType dt = DataTypeOf<T>();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " block=" << block << " n=" << n << " seed=" << seed);
  const int64_t tile = int64_t{block} * NX;
  const int64_t tiles = (n + tile - 1) / tile;
  Tensor src = *RandomTensor(Shape{n}, dt, seed).To(DeviceType::kCuda);
  Tensor dst = *Tensor::Empty(Shape{tiles * tile}, dt, DeviceType::kCuda);
  const T fill = static_cast<T>(static_cast<float>(42));
  BoundaryKeepsRegistersKernel<T, NX><<<tiles, block>>>(src.data<T>(), dst.data<T>(), n, fill);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> want = ToDoubles(src), got = ToDoubles(dst);
  for (int64_t i = 0; i < tiles * tile; ++i) {
    ASSERT_EQ(got[i], i < n ? want[i] : 42.0) << "element " << i;
  }
}

TYPED_TEST(PrimitiveTest, BoundaryReadLeavesOtherRegistersAlone) {
  KPS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  for (int block : {32, 128, 1024}) {
    CheckBoundaryKeepsRegisters<T, 1>(block, 97);
    CheckBoundaryKeepsRegisters<T, 4>(block, 1000);
    CheckBoundaryKeepsRegisters<T, 5>(block, 3 * block * 5 - 2);
  }
}

template <typename T, int NX>
void CheckAddScaled(int block, int64_t n, double alpha) {
  const DataType dt = DataTypeOf<T>();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " block=" << block << " n=" << n << " seed=" << seed);
  const int64_t tile = int64_t{block} * NX;
  const int64_t tiles = (n + tile - 1) / tile;
  Tensor x = *RandomTensor(Shape{n}, dt, seed).To(DeviceType::kCuda);
  Tensor y = *RandomTensor(Shape{n}, dt, seed + 1).To(DeviceType::kCuda);
  Tensor out = *Tensor::Empty(Shape{n}, dt, DeviceType::kCuda);
  AddScaledKernel<T, NX><<<tiles, block>>>(x.data<T>(), y.data<T>(), out.data<T>(), n,
                                           AddScaledFunctor<T>(static_cast<MPType<T>>(alpha)));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> a = ToDoubles(x), b = ToDoubles(y), got = ToDoubles(out);
  for (int64_t i = 0; i < n; ++i) {
    double ref;
    if constexpr (std::is_integral_v<T>) {  // integers wrap: compute in int64, narrow
      ref = static_cast<double>(static_cast<T>(static_cast<int64_t>(a[i]) +
                                               static_cast<int64_t>(alpha) * static_cast<int64_t>(b[i])));
    } else {
      ref = testing::RoundTo(dt, a[i] + alpha * b[i]);
    }
    ASSERT_NEAR(got[i], ref, testing::Tolerance(dt, ref) + 1e-300) << "element " << i;
  }
}

TYPED_TEST(PrimitiveTest, ElementwiseBinaryAndUnaryApplyTheFunctor) {
  KPS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  for (int block : {32, 256, 1024}) {
    CheckAddScaled<T, 1>(block, 1000, 2.0);
    CheckAddScaled<T, 4>(block, 4099, -3.0);
    CheckAddScaled<T, 8>(block, 8 * block * 2, 1.0);
  }
}

}  // namespace
}  // namespace kps
