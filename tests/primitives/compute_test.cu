// Device tests of the elementwise compute primitives: Ternary, Any, CycleBinary,
// Constant and Random (Philox), each in a small kernel against host references.
#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <cmath>
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

Tensor Gpu(const Tensor& t) { return *t.To(DeviceType::kCuda); }
Tensor Poisoned(int64_t n, DataType dt) { return *Tensor::Empty(Shape{n}, dt, DeviceType::kCuda); }

struct FmaLike {  // a * b + c, in double so the reference is exact
  __device__ double operator()(double a, double b, double c) const { return a * b + c; }
};
struct SumOfFive {
  __device__ double operator()(const double* args) const { return args[0] + 2 * args[1] + 3 * args[2] + 4 * args[3] + 5 * args[4]; }
};
struct Sub {
  __device__ double operator()(double a, double b) const { return b - a; }
};
struct Seven {
  __device__ float operator()() const { return 7.5f; }
};

template <int NX>
__global__ void TernaryAnyKernel(const double* x, const double* y, const double* z, double* t_out, double* a_out, int n) {
  const int base = blockIdx.x * blockDim.x * NX;
  const int num = n - base;
  double a[NX], b[NX], c[NX], r[NX];
  double ins[5][NX];
  ReadData<double, NX, 1, true>(a, x + base, num);
  ReadData<double, NX, 1, true>(b, y + base, num);
  ReadData<double, NX, 1, true>(c, z + base, num);
  ElementwiseTernary<double, double, NX, 1>(r, a, b, c, FmaLike());
  WriteData<double, NX, 1, true>(t_out + base, r, num);
  for (int i = 0; i < NX; ++i) {
    ins[0][i] = a[i]; ins[1][i] = b[i]; ins[2][i] = c[i]; ins[3][i] = a[i] * 0.5; ins[4][i] = -b[i];
  }
  ElementwiseAny<double, double, NX, 1, SumOfFive, 5>(r, ins, SumOfFive());
  WriteData<double, NX, 1, true>(a_out + base, r, num);
}

TEST(ComputeTest, TernaryAndAny) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  const int n = 5003;
  Tensor x = Gpu(RandomTensor(Shape{n}, DataType::kFloat64, seed));
  Tensor y = Gpu(RandomTensor(Shape{n}, DataType::kFloat64, seed + 1));
  Tensor z = Gpu(RandomTensor(Shape{n}, DataType::kFloat64, seed + 2));
  Tensor t = Poisoned(n, DataType::kFloat64), a = Poisoned(n, DataType::kFloat64);
  TernaryAnyKernel<4><<<(n + 511) / 512, 128>>>(x.data<double>(), y.data<double>(), z.data<double>(), t.data<double>(),
                                                a.data<double>(), n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto vx = ToDoubles(x), vy = ToDoubles(y), vz = ToDoubles(z), vt = ToDoubles(t), va = ToDoubles(a);
  for (int i = 0; i < n; ++i) {
    ASSERT_NEAR(vt[i], vx[i] * vy[i] + vz[i], 1e-12) << i;
    ASSERT_NEAR(va[i], vx[i] + 2 * vy[i] + 3 * vz[i] + 4 * 0.5 * vx[i] - 5 * vy[i], 1e-12) << i;
  }
}

// One bias row of NX values against NY rows of NX: out = row - bias.
template <int NX, int NY>
__global__ void CycleKernel(const double* bias, const double* m, double* out) {
  double b[NX], rows[NX * NY], r[NX * NY];
  for (int i = 0; i < NX; ++i) b[i] = bias[threadIdx.x * NX + i];
  for (int i = 0; i < NX * NY; ++i) rows[i] = m[threadIdx.x * NX * NY + i];
  CycleBinary<double, double, NX, NY>(r, b, rows, Sub());
  for (int i = 0; i < NX * NY; ++i) out[threadIdx.x * NX * NY + i] = r[i];
}

TEST(ComputeTest, CycleBinaryAppliesOneRowToEveryRow) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  constexpr int kNX = 4, kNY = 3, kThreads = 64;
  Tensor bias = Gpu(RandomTensor(Shape{kThreads * kNX}, DataType::kFloat64, seed));
  Tensor m = Gpu(RandomTensor(Shape{kThreads * kNX * kNY}, DataType::kFloat64, seed + 1));
  Tensor out = Poisoned(kThreads * kNX * kNY, DataType::kFloat64);
  CycleKernel<kNX, kNY><<<1, kThreads>>>(bias.data<double>(), m.data<double>(), out.data<double>());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto vb = ToDoubles(bias), vm = ToDoubles(m), vo = ToDoubles(out);
  for (int t = 0; t < kThreads; ++t) {
    for (int y = 0; y < kNY; ++y) {
      for (int x = 0; x < kNX; ++x) {
        const int i = t * kNX * kNY + y * kNX + x;
        ASSERT_EQ(vo[i], vm[i] - vb[t * kNX + x]);
      }
    }
  }
}

__global__ void ConstantKernel(__half* out, int n) {
  __half r[8];
  ElementwiseConstant<float, __half, 8, 1>(r, Seven());
  const int base = blockIdx.x * blockDim.x * 8;
  WriteData<__half, 8, 1, true>(out + base, r, n - base);
}

TEST(ComputeTest, ConstantFillsEveryElement) {
  KPS_SKIP_WITHOUT_GPU();
  const int n = 10007;
  Tensor out = Poisoned(n, DataType::kFloat16);
  ConstantKernel<<<(n + 2047) / 2048, 256>>>(out.data<__half>(), n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (double v : ToDoubles(out)) ASSERT_EQ(v, 7.5);
}

// Element i's four numbers come from Philox subsequence i / 4, so the values depend on
// (seed, offset, i) only, not on the launch shape.
struct Uniform4 {
  __device__ float4 operator()(curandStatePhilox4_32_10_t* s) const { return curand_uniform4(s); }
};

template <int BlockSize>
__global__ void RandomKernel(float* out, int64_t n, uint64_t seed, uint64_t offset) {
  const int64_t group = static_cast<int64_t>(blockIdx.x) * BlockSize + threadIdx.x;  // 4 outputs each
  if (group * 4 >= n) return;
  curandStatePhilox4_32_10_t state;
  curand_init(seed, group, offset, &state);
  float r[4];
  ElementwiseRandom<curandStatePhilox4_32_10_t, float, 4, BlockSize>(r, Uniform4(), &state);
  const int num = static_cast<int>(n - group * 4 < 4 ? n - group * 4 : 4);
  for (int i = 0; i < num; ++i) out[group * 4 + i] = r[i];
}

TEST(ComputeTest, RandomIsReproducibleAcrossLaunchShapes) {
  KPS_SKIP_WITHOUT_GPU();
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE(seed);
  const int64_t n = 100003;
  Tensor a = Poisoned(n, DataType::kFloat32), b = Poisoned(n, DataType::kFloat32), c = Poisoned(n, DataType::kFloat32);
  const int64_t groups = (n + 3) / 4;
  RandomKernel<128><<<static_cast<unsigned>((groups + 127) / 128), 128>>>(a.data<float>(), n, seed, 0);
  RandomKernel<512><<<static_cast<unsigned>((groups + 511) / 512), 512>>>(b.data<float>(), n, seed, 0);
  RandomKernel<512><<<static_cast<unsigned>((groups + 511) / 512), 512>>>(c.data<float>(), n, seed, 8);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto va = ToDoubles(a), vb = ToDoubles(b), vc = ToDoubles(c);
  EXPECT_EQ(va, vb);  // same seed and offset, other launch shape: same numbers
  int same = 0;
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_GT(va[i], 0.0);  // curand_uniform is in (0, 1]
    ASSERT_LE(va[i], 1.0);
    same += va[i] == vc[i];
    mean += va[i];
  }
  mean /= n;
  EXPECT_NEAR(mean, 0.5, 0.01);       // 100k uniforms: the standard error is 0.0009
  EXPECT_LT(same, n / 1000);          // another offset: another stream
}

}  // namespace
}  // namespace kps
