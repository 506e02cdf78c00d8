// Device tests of the IO primitives beyond 1-D ReadData/WriteData: InitWithDataIndex,
// read_lens and tuple loads, 2-D strided loads/stores with conversion, broadcast loads
// (ReadDataBc, ReadDataBcRun, BroadcastConfig, FastDivMod) and reduce loads (ReadDataReduce,
// IndexCalculator), each against host references.
#include <cuda_runtime.h>

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "primitives/primitives.cuh"
#include "registry/tensor.h"
#include "testing/support.h"

namespace kps {
namespace {

using ::kps::testing::FreshSeed;
using ::kps::testing::RandomTensor;
using ::kps::testing::ToDoubles;

template <typename T>
Tensor OnGpu(const std::vector<T>& v) {
  return *Tensor::FromVector(v, Shape{static_cast<int64_t>(v.size())})->To(DeviceType::kCuda);
}
Tensor Poisoned(int64_t n, DataType dt) { return *Tensor::Empty(Shape{n}, dt, DeviceType::kCuda); }

// ---- FastDivMod -------------------------------------------------------------------

std::vector<uint32_t> Divisors(uint64_t seed) {
  std::vector<uint32_t> d = {1, 2, 3, 5, 7, 10, 56, 255, 256, 257, 641, 3136, 65535, 65536, 65537,
                             (1u << 31) - 1, 1u << 31, (1u << 31) + 1, 0xFFFFFFFEu, 0xFFFFFFFFu};
  std::mt19937_64 gen(seed);
  for (int i = 0; i < 20; ++i) d.push_back(static_cast<uint32_t>(gen() % 0xFFFFFFFFu) + 1);
  for (int i = 0; i < 20; ++i) d.push_back(static_cast<uint32_t>(gen() % 5000) + 1);
  return d;
}

TEST(FastDivModTest, HostMatchesDivisionOnRandomAndEdgeDividends) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  std::mt19937_64 gen(seed);
  for (uint32_t d : Divisors(seed)) {
    details::FastDivMod dm(d);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, d + 1, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
    for (int i = 0; i < 200000; ++i) ns.push_back(static_cast<uint32_t>(gen()));
    for (uint32_t n : ns) {
      const auto qr = dm.Divmod(n);
      ASSERT_EQ(qr.quotient, n / d) << n << " / " << d;
      ASSERT_EQ(qr.remainder, n % d) << n << " % " << d;
    }
  }
}

// Every 32-bit dividend for one divisor: counts mismatches.
__global__ void ExhaustiveDivKernel(details::FastDivMod dm, unsigned long long* errors) {
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (uint64_t n = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; n <= 0xFFFFFFFFull; n += step) {
    const auto qr = dm.Divmod(static_cast<uint32_t>(n));
    bad += (qr.quotient != static_cast<uint32_t>(n / dm.divisor)) | (qr.remainder != static_cast<uint32_t>(n % dm.divisor));
  }
  if (bad) atomicAdd(errors, bad);
}

TEST(FastDivModTest, DeviceIsExactForEvery32BitDividend) {
  KPS_SKIP_WITHOUT_GPU();
  Tensor errors = OnGpu<int64_t>({0});
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  // The divisors where round-up multipliers are most fragile, and random ones.
  std::vector<uint32_t> ds = {3, 7, 641, (1u << 31) + 1, 0xFFFFFFFFu, 6700417};
  std::mt19937_64 gen(seed);
  ds.push_back(static_cast<uint32_t>(gen() % 0xFFFFFFFFu) + 1);
  for (uint32_t d : ds) {
    ExhaustiveDivKernel<<<132 * 8, 256>>>(details::FastDivMod(d), reinterpret_cast<unsigned long long*>(errors.data<int64_t>()));
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ((*errors.ToVector<int64_t>())[0], 0);
}

// ---- InitWithDataIndex, read_lens, tuples ------------------------------------------

template <int NX>
__global__ void DataIndexKernel(int64_t* out, int64_t block_offset) {
  int64_t idx[NX];
  InitWithDataIndex<int64_t, NX, 1>(idx, block_offset);
  WriteData<int64_t, NX, 1, false>(out + block_offset, idx, NX * blockDim.x);
}

TEST(IoTest, InitWithDataIndexGivesGlobalIndices) {
  KPS_SKIP_WITHOUT_GPU();
  const int64_t big = (int64_t{1} << 32) + 12345;  // indices past 2^32 stay exact
  for (int block : {32, 256, 1024}) {
    const int64_t n = int64_t{block} * 4;
    Tensor out = Poisoned(n, DataType::kInt64);
    // Offset the pointer back so out + block_offset lands on the buffer.
    DataIndexKernel<4><<<1, block>>>(out.data<int64_t>() - big, big);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<int64_t> got = *out.ToVector<int64_t>();
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], big + i);
  }
}

template <int NX, bool IsBoundary>
__global__ void ReadLensKernel(const float* src, float* dst, int num, int read_lens, float fill) {
  float r[NX];
  Init<float, NX>(r, fill);
  ReadData<float, NX, 1, IsBoundary>(r, src, num, read_lens);
  // Every register goes out, so untouched ones show as `fill`.
  for (int i = 0; i < NX; ++i) dst[threadIdx.x * NX + i] = r[i];
}

TEST(IoTest, ReadLensIsHonoured) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  const int block = 64, nx = 8;
  Tensor src = *RandomTensor(Shape{block * nx}, DataType::kFloat32, seed).To(DeviceType::kCuda);
  const std::vector<double> s = ToDoubles(src);
  for (int read_lens : {1, 3, 8}) {
    for (int num : {block * read_lens, 77}) {
      Tensor dst = Poisoned(block * nx, DataType::kFloat32);
      ReadLensKernel<8, true><<<1, block>>>(src.data<float>(), dst.data<float>(), num, read_lens, 42.0f);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<double> d = ToDoubles(dst);
      for (int t = 0; t < block; ++t) {
        for (int i = 0; i < nx; ++i) {
          const int src_index = t * read_lens + i;
          const bool read = i < read_lens && src_index < num;
          ASSERT_EQ(d[t * nx + i], read ? s[src_index] : 42.0) << "thread " << t << " item " << i;
        }
      }
    }
  }
}

using Args = cuda::std::tuple<float, int32_t, __half>;

__global__ void TupleKernel(const float* a, const int32_t* b, const __half* c, double* out, int num) {
  Args args[4];
  ReadData<float, Args, 0, 4, 1, true>(args, a, num);
  ReadData<int32_t, Args, 1, 4, 1, true>(args, b, num);
  ReadData<__half, Args, 2, 4, 1, true>(args, c, num);
  for (int i = 0; i < 4; ++i) {
    const int index = threadIdx.x * 4 + i;
    if (index < num) {
      out[index] = static_cast<double>(cuda::std::get<0>(args[i])) * 1e6 + cuda::std::get<1>(args[i]) +
                   static_cast<double>(__half2float(cuda::std::get<2>(args[i])));
    }
  }
}

TEST(IoTest, TupleReadLoadsEachInputOfAMixedPack) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  const int num = 1021;
  Tensor a = *RandomTensor(Shape{num}, DataType::kFloat32, seed).To(DeviceType::kCuda);
  Tensor b = *RandomTensor(Shape{num}, DataType::kInt32, seed + 1).To(DeviceType::kCuda);
  Tensor c = *RandomTensor(Shape{num}, DataType::kFloat16, seed + 2).To(DeviceType::kCuda);
  Tensor out = Poisoned(num, DataType::kFloat64);
  TupleKernel<<<1, 256>>>(a.data<float>(), b.data<int32_t>(), c.data<__half>(), out.data<double>(), num);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto va = ToDoubles(a), vb = ToDoubles(b), vc = ToDoubles(c), got = ToDoubles(out);
  for (int i = 0; i < num; ++i) ASSERT_EQ(got[i], va[i] * 1e6 + vb[i] + vc[i]) << i;
}

// ---- 2-D strided loads and stores ---------------------------------------------------

// A block reads an [NY x NX] patch per thread from a row-major matrix with `cols`
// columns (stride_nx = blockDim.x columns apart, stride_ny = one row), converting
// float -> double, and writes it transposed-free into the same layout of `dst`.
template <int NX, int NY, bool IsBoundary>
__global__ void Strided2DKernel(const float* src, double* dst, int cols, int rows) {
  double r[NX * NY];
  Init<double, NX * NY>(r, -7.0);
  const int stride_nx = blockDim.x, stride_ny = cols;
  ReadData<float, double, NX, NY, IsBoundary>(r, src, cols, rows * cols, stride_nx, stride_ny);
  WriteData<double, double, NX, NY, IsBoundary>(dst, r, cols, rows * cols, stride_nx, stride_ny);
}

template <int NX, int NY>
void Check2D(int block, int cols, int rows) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "NX=" << NX << " NY=" << NY << " block=" << block << " cols=" << cols
                                    << " rows=" << rows << " seed=" << seed);
  Tensor src = *RandomTensor(Shape{rows * cols}, DataType::kFloat32, seed).To(DeviceType::kCuda);
  Tensor dst = Poisoned(rows * cols, DataType::kFloat64);
  const bool full = cols == block * NX && rows == NY;
  if (full) {
    Strided2DKernel<NX, NY, false><<<1, block>>>(src.data<float>(), dst.data<double>(), cols, rows);
  } else {
    Strided2DKernel<NX, NY, true><<<1, block>>>(src.data<float>(), dst.data<double>(), cols, rows);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto s = ToDoubles(src), d = ToDoubles(dst);
  // Element (row y, col x) is owned by thread x % block, register (y, x / block), when
  // x < block * NX and y < NY: exactly those were copied; the rest stay poisoned (NaN).
  for (int y = 0; y < rows; ++y) {
    for (int x = 0; x < cols; ++x) {
      const bool covered = x < block * NX && y < NY;
      if (covered) {
        ASSERT_EQ(d[y * cols + x], s[y * cols + x]) << y << "," << x;
      } else {
        ASSERT_TRUE(std::isnan(d[y * cols + x])) << "written outside the patch at " << y << "," << x;
      }
    }
  }
}

TEST(IoTest, ReadWrite2DStridedWithConversion) {
  KPS_SKIP_WITHOUT_GPU();
  for (int block : {32, 128, 1024}) {
    Check2D<1, 1>(block, block, 1);
    Check2D<4, 1>(block, block * 4, 1);
    Check2D<1, 3>(block, block, 3);
    Check2D<2, 4>(block, block * 2, 4);       // full patch, no bounds checks
    Check2D<2, 4>(block, block * 2 - 5, 3);   // ragged in both directions
    Check2D<4, 2>(block, block + 3, 5);       // more rows than the patch
  }
}

// ---- broadcast loads -------------------------------------------------------------------

// Each thread loads NX consecutive output elements (1-D layout) of the broadcast input.
template <int NX>
__global__ void Bc1DKernel(const float* src, float* out, details::BroadcastConfig cfg, int64_t n) {
  const int64_t tile = int64_t{blockDim.x} * NX;
  const int64_t block_offset = blockIdx.x * tile;
  float r[NX];
  ReadDataBc<float, NX, 1, true>(r, src, block_offset, cfg, n);
  WriteData<float, NX, 1, true>(out + block_offset, r, static_cast<int>(n - block_offset < tile ? n - block_offset : tile));
}

// 2-D layout: element (idy, idx) of thread t is output index base + t + idx * blockDim.x
// + idy * blockDim.x * NX.
template <int NX, int NY>
__global__ void Bc2DKernel(const float* src, float* out, details::BroadcastConfig cfg, int64_t n) {
  const int64_t tile = int64_t{blockDim.x} * NX * NY;
  const int64_t block_offset = blockIdx.x * tile;
  float r[NX * NY];
  Init<float, NX * NY>(r, 0.0f);
  const int stride_nx = blockDim.x, stride_ny = blockDim.x * NX;
  ReadDataBc<float, NX, NY, true>(r, src, block_offset, cfg, n, stride_nx, stride_ny);
  // The valid part of a partial tile is a prefix of the linear order, not a rectangle,
  // so the store checks each element's index (2-D WriteData bounds a rectangle).
  for (int idy = 0; idy < NY; ++idy) {
    for (int idx = 0; idx < NX; ++idx) {
      const int64_t index = block_offset + threadIdx.x + idx * stride_nx + idy * stride_ny;
      if (index < n) out[index] = r[idy * NX + idx];
    }
  }
}

// Host reference: out[index] = in[offset of the broadcast/strided coordinate].
std::vector<double> BroadcastRef(const std::vector<double>& in, const std::vector<int64_t>& out_dims,
                                 const std::vector<int64_t>& in_strides) {
  int64_t n = 1;
  for (int64_t d : out_dims) n *= d;
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0;
    for (int d = static_cast<int>(out_dims.size()) - 1; d >= 0; --d) {
      off += (rem % out_dims[d]) * in_strides[d];
      rem /= out_dims[d];
    }
    out[i] = in[off];
  }
  return out;
}

struct BcCase {
  std::vector<int64_t> out_dims, in_dims;
};

TEST(IoTest, ReadDataBcFollowsNumpyBroadcasting) {
  KPS_SKIP_WITHOUT_GPU();
  const BcCase cases[] = {
      {{8, 1000}, {1, 1000}},              // row
      {{1000, 7}, {1000, 1}},              // column
      {{3, 5, 7}, {1, 1, 1}},              // scalar
      {{4, 16, 9, 9}, {1, 16, 1, 1}},      // NCHW bias
      {{2, 3, 4, 5, 6, 7}, {2, 1, 4, 1, 6, 1}},
      {{5, 1, 3, 1, 2, 3, 2, 2}, {1, 1, 3, 1, 1, 3, 1, 2}},  // rank 8
      {{17, 1}, {17, 1}},                  // no broadcast, size-1 dim
  };
  for (const BcCase& c : cases) {
    const uint64_t seed = FreshSeed();
    int64_t in_n = 1, n = 1;
    for (int64_t d : c.in_dims) in_n *= d;
    for (int64_t d : c.out_dims) n *= d;
    SCOPED_TRACE(::testing::Message() << "out " << DimsToString(c.out_dims) << " in " << DimsToString(c.in_dims)
                                      << " seed " << seed);
    Tensor in = *RandomTensor(Shape{in_n}, DataType::kFloat32, seed).To(DeviceType::kCuda);
    const int rank = static_cast<int>(c.out_dims.size());
    auto cfg = details::BroadcastConfig::FromShapes(c.out_dims.data(), c.in_dims.data(), rank);
    ASSERT_FALSE(cfg.use_64bit);
    std::vector<int64_t> strides(rank);
    for (int d = rank - 1, s = 1; d >= 0; --d) {
      strides[d] = c.in_dims[d] == 1 && c.out_dims[d] != 1 ? 0 : s;
      s *= static_cast<int>(c.in_dims[d]);
    }
    const std::vector<double> want = BroadcastRef(ToDoubles(in), c.out_dims, strides);
    // Host path of the config agrees with the reference too (and the 64-bit path).
    for (int64_t i = 0; i < n; i += 1 + n / 97) {
      ASSERT_EQ(cfg.Offset(i), cfg.Offset64(i));
    }
    for (int block : {32, 256}) {
      Tensor out = Poisoned(n, DataType::kFloat32);
      const int64_t tile = block * 4;
      Bc1DKernel<4><<<static_cast<unsigned>((n + tile - 1) / tile), block>>>(in.data<float>(), out.data<float>(), cfg, n);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(ToDoubles(out), want) << "1-D, block " << block;
      Tensor out2 = Poisoned(n, DataType::kFloat32);
      const int64_t tile2 = block * 2 * 3;
      Bc2DKernel<2, 3><<<static_cast<unsigned>((n + tile2 - 1) / tile2), block>>>(in.data<float>(), out2.data<float>(), cfg, n);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(ToDoubles(out2), want) << "2-D, block " << block;
    }
  }
}

TEST(IoTest, ReadDataBcOfAStridedInput) {
  KPS_SKIP_WITHOUT_GPU();
  // A transposed [7, 300] view of a [300, 7] buffer, broadcast against [4, 7, 300].
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  Tensor in = *RandomTensor(Shape{300 * 7}, DataType::kFloat32, seed).To(DeviceType::kCuda);
  const std::vector<int64_t> out_dims = {4, 7, 300}, strides = {0, 1, 7};
  details::BroadcastConfig cfg(out_dims.data(), strides.data(), 3);
  const int64_t n = 4 * 7 * 300;
  Tensor out = Poisoned(n, DataType::kFloat32);
  Bc1DKernel<4><<<static_cast<unsigned>((n + 1023) / 1024), 256>>>(in.data<float>(), out.data<float>(), cfg, n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(ToDoubles(out), BroadcastRef(ToDoubles(in), out_dims, strides));
}

// ReadDataBcRun: a thread's NX outputs in one innermost run of the output, one offset per run.
template <int NX, bool kNarrow>
__global__ void BcRunKernel(const float* src, float* out, details::BroadcastConfig cfg, int64_t inner_stride,
                            bool vector, int64_t n) {
  const int64_t tile = int64_t{blockDim.x} * NX;
  const int64_t block_offset = blockIdx.x * tile;
  const int num = static_cast<int>(n - block_offset < tile ? n - block_offset : tile);
  float r[NX];
  Init<float, NX>(r, 0.0f);
  if (num == tile) {
    ReadDataBcRun<float, NX, false, kNarrow>(r, src, block_offset, cfg, inner_stride, vector, num);
  } else {
    ReadDataBcRun<float, NX, true, kNarrow>(r, src, block_offset, cfg, inner_stride, vector, num);
  }
  WriteData<float, NX, 1, true>(out + block_offset, r, num);
}

TEST(IoTest, ReadDataBcRunLoadsWholeInnermostRuns) {
  KPS_SKIP_WITHOUT_GPU();
  struct RunCase {
    std::vector<int64_t> out_dims, in_strides;  // in_strides: the input's stride per output dim
    int64_t in_n;
    bool vector;  // inner stride 1 and every run start 4-aligned
  };
  const RunCase cases[] = {
      {{8, 1000}, {0, 1}, 1000, true},          // a row broadcast down the rows: vector loads
      {{8, 1000}, {0, 1}, 1000, false},         // the same, element by element
      {{1000, 8}, {1, 0}, 1000, false},         // a column: inner stride 0, one load per run
      {{4, 7, 300}, {0, 1, 7}, 2100, false},    // a transposed view: inner stride 7
      {{3, 5, 12}, {60, 12, 1}, 180, true},     // no broadcast
      {{5, 1, 44}, {0, 0, 1}, 44, true},        // partial last tile
  };
  for (const RunCase& c : cases) {
    const uint64_t seed = FreshSeed();
    int64_t n = 1;
    for (int64_t d : c.out_dims) n *= d;
    SCOPED_TRACE(::testing::Message() << "out " << DimsToString(c.out_dims) << " vector " << c.vector << " seed "
                                      << seed);
    Tensor in = *RandomTensor(Shape{c.in_n}, DataType::kFloat32, seed).To(DeviceType::kCuda);
    const int rank = static_cast<int>(c.out_dims.size());
    details::BroadcastConfig cfg(c.out_dims.data(), c.in_strides.data(), rank);
    const std::vector<double> want = BroadcastRef(ToDoubles(in), c.out_dims, c.in_strides);
    const int64_t inner_stride = c.in_strides[rank - 1];
    for (int block : {32, 128}) {
      Tensor out = Poisoned(n, DataType::kFloat32);
      const unsigned blocks = static_cast<unsigned>((n + block * 4 - 1) / (block * 4));
      BcRunKernel<4, true><<<blocks, block>>>(in.data<float>(), out.data<float>(), cfg, inner_stride, c.vector, n);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(ToDoubles(out), want) << "NX 4, 32-bit offsets, block " << block;
      Tensor out1 = Poisoned(n, DataType::kFloat32);
      const unsigned blocks1 = static_cast<unsigned>((n + block - 1) / block);
      BcRunKernel<1, false><<<blocks1, block>>>(in.data<float>(), out1.data<float>(), cfg, inner_stride, false, n);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(ToDoubles(out1), want) << "NX 1, 64-bit-capable offsets, block " << block;
    }
  }
}

TEST(IoTest, ReadDataBcThrough64BitPathOnDevice) {
  KPS_SKIP_WITHOUT_GPU();
  // The 64-bit path on a small problem: forced on, it must give what the 32-bit path
  // gives (a real > 2^32-element output is left to the op-level tests).
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  const std::vector<int64_t> out_dims = {6, 33, 17}, in_dims = {6, 1, 17};
  auto cfg = details::BroadcastConfig::FromShapes(out_dims.data(), in_dims.data(), 3);
  cfg.use_64bit = true;
  const int64_t n = 6 * 33 * 17;
  Tensor in = *RandomTensor(Shape{6 * 17}, DataType::kFloat32, seed).To(DeviceType::kCuda);
  Tensor out = Poisoned(n, DataType::kFloat32);
  Bc1DKernel<4><<<static_cast<unsigned>((n + 511) / 512), 128>>>(in.data<float>(), out.data<float>(), cfg, n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(ToDoubles(out), BroadcastRef(ToDoubles(in), out_dims, {17, 0, 1}));
}

TEST(IoTest, BroadcastConfigTakesThe64BitPathPast2To32) {
  // [2^20, 2^13] broadcast from [1, 2^13]: 2^33 output elements. Checked on the host
  // path (the device runs the same code): sampled indices past 2^32 map correctly.
  const std::vector<int64_t> out_dims = {int64_t{1} << 20, int64_t{1} << 13}, in_dims = {1, int64_t{1} << 13};
  auto cfg = details::BroadcastConfig::FromShapes(out_dims.data(), in_dims.data(), 2);
  EXPECT_TRUE(cfg.use_64bit);
  for (int64_t i : {int64_t{0}, (int64_t{1} << 32) - 1, int64_t{1} << 32, (int64_t{1} << 32) + 8191,
                    (int64_t{1} << 33) - 1}) {
    EXPECT_EQ(cfg.Offset(i), i % 8192) << i;
  }
}

// ---- reduce loads ----------------------------------------------------------------------

// Sums, per kept index k (one per threadIdx.y when reducing the last dim, one per
// threadIdx.x otherwise), the reduced elements this thread loads, then writes
// per-thread partial sums; the host adds the partials up.
template <int NY>
__global__ void ReduceLoadKernel(const float* src, double* partial, details::IndexCalculator cal, int kept,
                                 int reduced, bool reduce_last_dim) {
  double r[NY];
  Init<double, NY>(r, 0.0);
  const int k = reduce_last_dim ? threadIdx.y : threadIdx.x;
  const int stride_ny = reduce_last_dim ? blockDim.x : blockDim.y;
  auto identity = [](float x) { return x; };
  // The linear index space is [kept, reduced] row-major: block_offset = k * reduced.
  ReadDataReduce<float, double, 1, NY, details::IndexCalculator, decltype(identity), true>(
      r, src, k * reduced, cal, kept, reduced, 1, stride_ny, identity, reduce_last_dim);
  double sum = 0;
  for (int i = 0; i < NY; ++i) sum += r[i];
  partial[threadIdx.y * blockDim.x + threadIdx.x] = sum;
}

TEST(IoTest, ReadDataReduceThroughAnIndexCalculator) {
  KPS_SKIP_WITHOUT_GPU();
  // Input [A=6, B=50, C=5]; reduce over B (the middle dim), keep (A, C) = 30 outputs.
  // Index space [kept=30, reduced=50]: kept index a*5+c, reduced index b.
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  const int A = 6, B = 50, C = 5, kept = A * C;
  Tensor in = *RandomTensor(Shape{A * B * C}, DataType::kFloat32, seed).To(DeviceType::kCuda);
  const auto v = ToDoubles(in);
  // Calculator over [a, c, b] -> offset a*B*C + b*C + c.
  const int64_t dims[] = {A, C, B}, strides[] = {B * C, 1, C};
  details::IndexCalculator cal(dims, strides, 3);
  for (bool last : {true, false}) {
    const dim3 block = last ? dim3(16, kept) : dim3(kept, 16);
    constexpr int kNY = 4;  // 16 lanes x 4 registers cover 64 >= 50 reduced elements
    Tensor partial = Poisoned(16 * kept, DataType::kFloat64);
    ReduceLoadKernel<kNY><<<1, block>>>(in.data<float>(), partial.data<double>(), cal, kept, B, last);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto p = ToDoubles(partial);
    for (int k = 0; k < kept; ++k) {
      double want = 0, got = 0;
      const int a = k / C, c = k % C;
      for (int b = 0; b < B; ++b) want += v[a * B * C + b * C + c];
      for (int lane = 0; lane < 16; ++lane) got += last ? p[k * 16 + lane] : p[lane * kept + k];
      EXPECT_NEAR(got, want, 1e-9) << "kept " << k << " reduce_last_dim " << last;
    }
  }
}

}  // namespace
}  // namespace kps
