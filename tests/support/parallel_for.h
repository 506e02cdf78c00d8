// Host loops over billions of elements on several threads, for the tests of tensors past
// 2^31 elements (tests/ops/*/large_test.cc), whose references and checks would take minutes
// on one thread.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

namespace kps {
namespace test_support {

inline constexpr int kTestThreads = 16;

// Runs body(thread, begin, end) over [0, n) cut into kTestThreads contiguous chunks, one
// thread each, and waits for them.
template <typename Body>
void ParallelFor(int64_t n, Body body) {
  std::vector<std::thread> pool;
  for (int t = 0; t < kTestThreads; ++t) {
    const int64_t b = n * t / kTestThreads, e = n * (t + 1) / kTestThreads;
    pool.emplace_back([=] { body(t, b, e); });
  }
  for (auto& th : pool) th.join();
}

}  // namespace test_support
}  // namespace kps
