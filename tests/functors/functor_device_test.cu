// Every functor in a CUDA kernel against the same independent long-double references as
// the host test (functor_check.h states the accepted error per functor and dtype), and
// Apply2 (the packed float16 / bfloat16 path) against the scalar path element by element.
#include <cuda_runtime.h>

#include <tuple>
#include <utility>
#include <vector>

#include "tests/functors/functor_check.h"

namespace kps {
namespace testing {
namespace functor_check {
namespace {

constexpr int kBlock = 256;

template <typename Out, typename F, typename... In>
__global__ void MapKernel(F f, Out* out, int64_t n, const In*... in) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = f(in[i]...);
}

// scalar[i] = f(a[i][, b[i]]); packed lanes (2j, 2j+1) = f.Apply2(pack j of a[, b]).
template <typename T, bool kBinary, typename F>
__global__ void Apply2Kernel(F f, const T* a, const T* b, T* scalar, T* packed, int64_t n_pairs) {
  using P = Packed2Type<T>;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n_pairs) return;
  const P pa(a[2 * j], a[2 * j + 1]);
  P r;
  if constexpr (kBinary) {
    const P pb(b[2 * j], b[2 * j + 1]);
    r = f.Apply2(pa, pb);
    scalar[2 * j] = f(a[2 * j], b[2 * j]);
    scalar[2 * j + 1] = f(a[2 * j + 1], b[2 * j + 1]);
  } else {
    r = f.Apply2(pa);
    scalar[2 * j] = f(a[2 * j]);
    scalar[2 * j + 1] = f(a[2 * j + 1]);
  }
  packed[2 * j] = r.x;
  packed[2 * j + 1] = r.y;
}

// Device memory for one array, poisoned (all bits set) on allocation, freed at scope
// exit. Not a template, so each Map instantiation stays small.
class DeviceBytes {
 public:
  __attribute__((noinline)) explicit DeviceBytes(size_t bytes) : bytes_(bytes) {
    EXPECT_EQ(cudaMalloc(&p_, std::max<size_t>(bytes, 1)), cudaSuccess);
    EXPECT_EQ(cudaMemset(p_, 0xff, std::max<size_t>(bytes, 1)), cudaSuccess);
  }
  __attribute__((noinline)) DeviceBytes(const void* host, size_t bytes) : DeviceBytes(bytes) {
    EXPECT_EQ(cudaMemcpy(p_, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  template <typename E>
  DeviceBytes(const std::vector<E>& v) : DeviceBytes(v.data(), v.size() * sizeof(E)) {}  // NOLINT
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  __attribute__((noinline)) ~DeviceBytes() { cudaFree(p_); }
  __attribute__((noinline)) void CopyTo(void* host) const {
    EXPECT_EQ(cudaMemcpy(host, p_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  template <typename E>
  Raw<E>* get() const {
    return static_cast<Raw<E>*>(p_);
  }

 private:
  void* p_ = nullptr;
  size_t bytes_;
};

inline unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::max<int64_t>((n + kBlock - 1) / kBlock, 1)); }

// Checks the launch and waits for it.
__attribute__((noinline)) inline void Finish() {
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// One input of Map (a distinct type per element type, for the tuple of inputs).
template <typename E>
struct Buffer : DeviceBytes {
  Buffer(const std::vector<E>& v) : DeviceBytes(v) {}  // NOLINT: implicit, for the tuple
};

struct DeviceApplier {
  template <typename Out, typename F, typename... E>
  static Vec<Out> Map(const F& f, const std::vector<E>&... xs) {
    const int64_t n = static_cast<int64_t>(std::get<0>(std::forward_as_tuple(xs...)).size());
    std::tuple<Buffer<E>...> in(xs...);
    DeviceBytes out(n * sizeof(Elem<Out>));
    std::apply(
        [&](const auto&... d) {
          MapKernel<Raw<Elem<Out>>, F, Raw<E>...><<<Blocks(n), kBlock>>>(f, out.get<Elem<Out>>(), n,
                                                                          d.template get<E>()...);
        },
        in);
    Finish();
    Vec<Out> result(n);
    out.CopyTo(result.data());
    return result;
  }

  template <typename T, bool kBinary, typename F>
  static std::pair<Vec<T>, Vec<T>> Apply2(const F& f, const Vec<T>& a, const Vec<T>& b) {
    const int64_t pairs = static_cast<int64_t>(a.size() / 2);
    DeviceBytes da(a), db(b), scalar(a.size() * sizeof(T)), packed(a.size() * sizeof(T));
    Apply2Kernel<T, kBinary><<<Blocks(pairs), kBlock>>>(f, da.get<T>(), db.get<T>(), scalar.get<T>(),
                                                        packed.get<T>(), pairs);
    Finish();
    std::pair<Vec<T>, Vec<T>> result(Vec<T>(a.size()), Vec<T>(a.size()));
    scalar.CopyTo(result.first.data());
    packed.CopyTo(result.second.data());
    return result;
  }
};

KPS_DEFINE_FUNCTOR_TESTS(FunctorDevice, DeviceApplier, KPS_SKIP_WITHOUT_GPU())

}  // namespace
}  // namespace functor_check
}  // namespace testing
}  // namespace kps
