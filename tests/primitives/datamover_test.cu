// Device tests of the first primitives: Init, ReadData / WriteData (1-D, vectorized and
// boundary), ElementwiseUnary / ElementwiseBinary, VectorType, and of the data movers of
// upsample and compaction: StoreRepeated, ReadDataGather, ReadDataIf / StoreSelected, and
// of the scans' tile staging, CopyTileStriped.
// Each runs in a small test kernel, sweeping dtypes, NX and block sizes, against host
// references.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "functors/functors.h"
#include "gtest/gtest.h"
#include "primitives/primitives.cuh"
#include "registry/tensor.h"
#include "testing/support.h"

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

// Elements [from, to) of `got` still hold the poison that Tensor::Empty gives a device
// tensor of dtype dt (all-ones bytes: NaN for the floats), so nothing wrote them.
void ExpectPoisoned(const std::vector<double>& got, int64_t from, int64_t to, DataType dt) {
  const double p = ToDoubles(*Tensor::Empty(Shape{1}, dt, DeviceType::kCpu))[0];
  for (int64_t i = from; i < to; ++i) {
    if (p != p) {
      ASSERT_NE(got[i], got[i]) << "element " << i << " past the end was written";
    } else {
      ASSERT_EQ(got[i], p) << "element " << i << " past the end was written";
    }
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
  ExpectPoisoned(got, n, tiles * tile + guard, dt);
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

// ---- StoreRepeated ----

// The store widths the contract promises: the widest power-of-two vector dividing
// NX * R, at most 16 bytes (upsample 2x: NX = 8 / sizeof(T), R = 2, one 16-byte store).
static_assert(details::VectorSizeFor<float, 2 * 2>() == 4);
static_assert(details::VectorSizeFor<uint8_t, 8 * 2>() == 16);
static_assert(details::VectorSizeFor<int16_t, 4 * 2>() == 8);
static_assert(details::VectorSizeFor<double, 1 * 2>() == 2);
static_assert(details::VectorSizeFor<float, 3 * 2>() == 2);

// Thread g loads src[g * NX, + NX) and stores each value R times at dst + g * NX * R.
template <typename T, int NX, int R>
__global__ void StoreRepeatedKernel(const T* src, T* dst, int64_t threads) {
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= threads) return;
  T reg[NX];
#pragma unroll
  for (int i = 0; i < NX; ++i) reg[i] = src[g * NX + i];
  StoreRepeated<T, NX, R>(dst + g * NX * R, reg);
}

// Bitwise: output element j is input element j / R, and the poisoned guard past the
// threads' outputs (0xff bytes) is intact.
template <typename T, int NX, int R>
void CheckStoreRepeated(int block, int64_t threads) {
  const DataType dt = DataTypeOf<T>();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "T size=" << sizeof(T) << " NX=" << NX << " R=" << R << " block=" << block
                                    << " threads=" << threads << " seed=" << seed);
  const int64_t n_in = threads * NX, n_out = n_in * R, guard = 64;
  Tensor src = *RandomTensor(Shape{n_in}, dt, seed).To(DeviceType::kCuda);
  Tensor dst = *Tensor::Empty(Shape{n_out + guard}, dt, DeviceType::kCuda);  // poisoned
  if (threads > 0) {
    StoreRepeatedKernel<T, NX, R><<<static_cast<unsigned>((threads + block - 1) / block), block>>>(
        src.data<T>(), dst.data<T>(), threads);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint8_t> in = testing::DeviceBytes(src.raw_data(), n_in * sizeof(T), nullptr);
  const std::vector<uint8_t> out = testing::DeviceBytes(dst.raw_data(), (n_out + guard) * sizeof(T), nullptr);
  for (int64_t j = 0; j < n_out; ++j) {
    ASSERT_EQ(std::memcmp(&out[j * sizeof(T)], &in[(j / R) * sizeof(T)], sizeof(T)), 0) << "element " << j;
  }
  for (size_t b = n_out * sizeof(T); b < out.size(); ++b) {
    ASSERT_EQ(out[b], 0xff) << "byte " << b << " past the outputs was written";
  }
}

// Every element width of the upsample forward (1, 2, 4, 8 bytes).
template <typename T>
class StoreRepeatedTest : public ::testing::Test {};
using ElementWidthTypes = ::testing::Types<uint8_t, int16_t, float, double>;
TYPED_TEST_SUITE(StoreRepeatedTest, ElementWidthTypes);

TYPED_TEST(StoreRepeatedTest, WritesEachValueRTimesWithNothingPast) {
  KPS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  constexpr int kUpsampleK = sizeof(T) >= 8 ? 1 : 8 / static_cast<int>(sizeof(T));
  for (int block : {32, 256}) {
    for (int64_t threads : {int64_t{0}, int64_t{1}, int64_t{31}, int64_t{257}, int64_t{1000}}) {
      CheckStoreRepeated<T, kUpsampleK, 2>(block, threads);  // upsample 2x, 16-byte stores
      CheckStoreRepeated<T, 1, 2>(block, threads);           // upsample 2x, K = 1
      CheckStoreRepeated<T, 1, 1>(block, threads);
      CheckStoreRepeated<T, 2, 3>(block, threads);
      CheckStoreRepeated<T, 3, 2>(block, threads);
      CheckStoreRepeated<T, 4, 4>(block, threads);
    }
  }
}

// ---- ReadDataGather ----

template <typename IndexT>
struct ReverseMap {
  IndexT n;
  __device__ IndexT operator()(IndexT i) const { return n - 1 - i; }
};

// i -> (i * 7) mod m: repeats and jumps, as an upsampling's source index does.
template <typename IndexT>
struct ModMap {
  IndexT m;
  __device__ IndexT operator()(IndexT i) const { return (i * 7) % m; }
};

// Every thread stores all NX registers (set to `fill` first) to dst[g * NX, + NX), so
// registers the gather must leave alone show `fill`.
template <typename T, int NX, bool IsBoundary, typename IndexT, typename Map>
__global__ void GatherKernel(const T* src, T* dst, IndexT n, Map map, int read_lens, T fill) {
  const IndexT tile = static_cast<IndexT>(blockIdx.x) * blockDim.x * read_lens;
  T reg[NX];
  Init<T, NX>(reg, fill);
  ReadDataGather<T, NX, 1, IsBoundary>(reg, src, tile, map, n, read_lens);
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
#pragma unroll
  for (int i = 0; i < NX; ++i) dst[g * NX + i] = reg[i];
}

template <typename T, int NX, bool IsBoundary, typename IndexT, template <typename> class Map>
void CheckGather(int block, int64_t n, int read_lens, int64_t src_size) {
  const DataType dt = DataTypeOf<T>();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " boundary=" << IsBoundary << " index bytes=" << sizeof(IndexT)
                                    << " block=" << block << " n=" << n << " read_lens=" << read_lens
                                    << " seed=" << seed);
  const int64_t tile = int64_t{block} * read_lens;
  const int64_t blocks = (n + tile - 1) / tile;
  Tensor src = *RandomTensor(Shape{src_size}, dt, seed).To(DeviceType::kCuda);
  Tensor dst = *Tensor::Empty(Shape{blocks * block * NX}, dt, DeviceType::kCuda);
  const T fill = static_cast<T>(static_cast<float>(42));
  const Map<IndexT> map{static_cast<IndexT>(src_size)};
  if (blocks > 0) {
    GatherKernel<T, NX, IsBoundary, IndexT, Map<IndexT>><<<static_cast<unsigned>(blocks), block>>>(
        src.data<T>(), dst.data<T>(), static_cast<IndexT>(n), map, read_lens, fill);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> in = ToDoubles(src), got = ToDoubles(dst);
  for (int64_t g = 0; g < blocks * block; ++g) {
    for (int i = 0; i < NX; ++i) {
      const int64_t index = g * read_lens + i;  // the blocks' tiles are contiguous
      double want = 42.0;
      if (i < read_lens && (!IsBoundary || index < n)) {
        const int64_t from = std::is_same_v<Map<IndexT>, ReverseMap<IndexT>> ? src_size - 1 - index
                                                                             : (index * 7) % src_size;
        want = in[from];
      }
      ASSERT_EQ(got[g * NX + i], want) << "thread " << g << " register " << i;
    }
  }
}

TYPED_TEST(PrimitiveTest, ReadDataGatherFollowsTheIndexMap) {
  KPS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  for (int block : {32, 256}) {
    // Full tiles, no boundary: every index is read.
    CheckGather<T, 1, false, uint32_t, ReverseMap>(block, block * 3, 1, block * 3);
    CheckGather<T, 4, false, int64_t, ReverseMap>(block, block * 4 * 2, 4, block * 4 * 2);
    CheckGather<T, 4, false, uint64_t, ModMap>(block, block * 4, 4, 1021);
    // Partial tiles: indices past n leave their registers alone.
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{255}, int64_t{1021}, int64_t{4097}}) {
      CheckGather<T, 1, true, uint32_t, ModMap>(block, n, 1, 97);
      CheckGather<T, 4, true, uint32_t, ReverseMap>(block, n, 4, n);
      CheckGather<T, 4, true, int64_t, ModMap>(block, n, 3, 257);  // read_lens < NX
      CheckGather<T, 8, true, uint64_t, ReverseMap>(block, n, 8, n);
    }
  }
}

// ---- ReadDataIf / StoreSelected ----

// Thread g (tile layout, NX per thread) loads the elements its mask selects and stores
// them at dst + starts[g]; all its registers (set to `fill` first) go to regs[g * NX, + NX).
template <typename T, int NX>
__global__ void SelectKernel(const T* src, const unsigned* masks, const int64_t* starts, T* dst, T* regs,
                             int64_t threads, T fill) {
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= threads) return;
  T reg[NX];
  Init<T, NX>(reg, fill);
  ReadDataIf<T, NX>(reg, src + static_cast<int64_t>(blockIdx.x) * blockDim.x * NX, masks[g]);
  StoreSelected<T, NX>(dst + starts[g], reg, masks[g]);
#pragma unroll
  for (int i = 0; i < NX; ++i) regs[g * NX + i] = reg[i];
}

// `density`: the chance that a position is selected (0: none, 1: all). `src` holds n
// elements exactly, so a selected position past n would read out of bounds (what
// compute-sanitizer reports): masks never select positions >= n.
template <typename T, int NX>
void CheckSelect(int block, int64_t n, double density) {
  const DataType dt = DataTypeOf<T>();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " block=" << block << " n=" << n << " density=" << density
                                    << " seed=" << seed);
  const int64_t threads = (n + NX - 1) / NX;
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(density);
  std::vector<int32_t> masks(threads);
  std::vector<int64_t> starts(threads);
  int64_t total = 0;
  for (int64_t g = 0; g < threads; ++g) {
    uint32_t m = 0;
    for (int i = 0; i < NX; ++i) {
      if (g * NX + i < n && keep(rng)) m |= 1u << i;
    }
    masks[g] = static_cast<int32_t>(m);
    starts[g] = total;
    total += __builtin_popcount(m);
  }
  const int64_t guard = 64;
  Tensor src = *RandomTensor(Shape{n}, dt, seed).To(DeviceType::kCuda);
  Tensor mask_t = *Tensor::FromVector(masks, Shape{threads})->To(DeviceType::kCuda);
  Tensor start_t = *Tensor::FromVector(starts, Shape{threads})->To(DeviceType::kCuda);
  Tensor dst = *Tensor::Empty(Shape{total + guard}, dt, DeviceType::kCuda);  // poisoned
  Tensor regs = *Tensor::Empty(Shape{threads * NX}, dt, DeviceType::kCuda);
  const T fill = static_cast<T>(static_cast<float>(42));
  if (threads > 0) {
    SelectKernel<T, NX><<<static_cast<unsigned>((threads + block - 1) / block), block>>>(
        src.data<T>(), reinterpret_cast<const unsigned*>(mask_t.raw_data()), start_t.data<int64_t>(), dst.data<T>(),
        regs.data<T>(), threads, fill);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> in = ToDoubles(src), got = ToDoubles(dst), got_regs = ToDoubles(regs);
  int64_t k = 0;
  for (int64_t g = 0; g < threads; ++g) {
    for (int i = 0; i < NX; ++i) {
      const bool selected = (static_cast<uint32_t>(masks[g]) >> i) & 1u;
      ASSERT_EQ(got_regs[g * NX + i], selected ? in[g * NX + i] : 42.0) << "thread " << g << " register " << i;
      if (selected) {
        ASSERT_EQ(got[k], in[g * NX + i]) << "output " << k;
        ++k;
      }
    }
  }
  const std::vector<uint8_t> bytes =
      testing::DeviceBytes(dst.data<T>() + total, static_cast<size_t>(guard) * sizeof(T), nullptr);
  for (size_t b = 0; b < bytes.size(); ++b) ASSERT_EQ(bytes[b], 0xff) << "byte " << b << " past the outputs";
}

TYPED_TEST(PrimitiveTest, ReadDataIfAndStoreSelectedMoveOnlyTheMaskedElements) {
  KPS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  for (int block : {32, 256}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{17}, int64_t{4096}, int64_t{65537}}) {
      for (double density : {0.0, 0.02, 0.5, 1.0}) {
        CheckSelect<T, 16>(block, n, density);  // compaction's kItems
        CheckSelect<T, 1>(block, n, density);
        CheckSelect<T, 32>(block, n, density);
      }
    }
  }
}

// ---- CopyTileStriped ----

// Block b stages tile b of `src` in shared memory with CopyTileStriped, then each thread
// reads its run of NX from there (the blocked arrangement) and writes it to `dst` with the
// 1-D WriteData, and the whole tile goes back out with CopyTileStriped to dst2.
template <typename T, int NX, int kThreads>
__global__ void StageTileKernel(const T* src, T* dst, T* dst2) {
  constexpr int kTile = kThreads * NX;
  __shared__ alignas(16) T stage[kTile];
  const int64_t base = static_cast<int64_t>(KPS_BLOCK_ID_X) * kTile;
  CopyTileStriped<T, kTile, kThreads>(stage, src + base);
  __syncthreads();
  T v[NX];
  ReadData<T, NX, 1, false>(v, stage, kTile);
  WriteData<T, NX, 1, false>(dst + base, v, kTile);
  __syncthreads();
  CopyTileStriped<T, kTile, kThreads>(dst2 + base, stage);
}

template <typename T, int NX, int kThreads>
void CheckStageTile(int64_t tiles) {
  const DataType dt = DataTypeOf<T>();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " threads=" << kThreads << " tiles=" << tiles
                                    << " seed=" << seed);
  const int64_t n = tiles * kThreads * NX, guard = 64;
  Tensor src = *RandomTensor(Shape{n}, dt, seed).To(DeviceType::kCuda);
  Tensor dst = *Tensor::Empty(Shape{n + guard}, dt, DeviceType::kCuda);  // poisoned
  Tensor dst2 = *Tensor::Empty(Shape{n + guard}, dt, DeviceType::kCuda);
  StageTileKernel<T, NX, kThreads><<<tiles, kThreads>>>(src.data<T>(), dst.data<T>(), dst2.data<T>());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> want = ToDoubles(src), got = ToDoubles(dst), got2 = ToDoubles(dst2);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(got[i], want[i]) << "run read from the staged tile, element " << i;
    ASSERT_EQ(got2[i], want[i]) << "tile copied back, element " << i;
  }
  ExpectPoisoned(got2, n, n + guard, dt);
}

TYPED_TEST(PrimitiveTest, CopyTileStripedStagesWholeTiles) {
  KPS_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  constexpr int kRun = 16 / sizeof(T) > 1 ? 16 / sizeof(T) : 2;  // a run of whole 16-byte vectors
  for (int64_t tiles : {int64_t{1}, int64_t{3}, int64_t{17}}) {
    CheckStageTile<T, kRun, 256>(tiles);      // the scans' staged tiles (256 x 16 bytes)
    CheckStageTile<T, 2 * kRun, 128>(tiles);
    CheckStageTile<T, kRun, 32>(tiles);       // one warp
  }
}

}  // namespace
}  // namespace kps
