// The combiner concept (functors/combiner.h): the defaults of its optional members, and
// that the library's reduce functors, reducers and scanners are combiners.
#include "functors/combiner.h"

#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "functors/functors.h"
#include "gtest/gtest.h"
#include "ops/reduce/reducers.h"
#include "ops/scan/scanners.h"
#include "testing/support.h"

namespace kps {
namespace {

// A plain binary functor: In = Acc = Out = T, Make is a conversion, Finalize the state.
static_assert(std::is_same_v<CombinerAcc<AddFunctor<float>>, float>);
static_assert(std::is_same_v<CombinerIn<AddFunctor<float>>, float>);
static_assert(std::is_same_v<CombinerOut<LogicalAndFunctor<bool>>, bool>);
// A reducer's own types win.
static_assert(std::is_same_v<CombinerIn<reduce::SumReducer<int8_t>>, int8_t>);
static_assert(std::is_same_v<CombinerAcc<reduce::SumReducer<int8_t>>, int64_t>);
static_assert(std::is_same_v<CombinerOut<reduce::ArgReducer<float, true>>, int64_t>);
static_assert(std::is_same_v<CombinerAcc<scan::DiscountScanner<float>>, scan::DiscountAcc<float>>);

// Counts the elements and sums their squares: a state unlike its elements, with Make and
// Finalize of its own, but no Accumulate (the default folds Make's state in).
struct SquareStats {
  struct State {
    double sum_sq;
    int64_t count;
  };
  using In = float;
  using Acc = State;
  using Out = double;
  State initial() const { return {0.0, 0}; }
  State operator()(State a, State b) const { return {a.sum_sq + b.sum_sq, a.count + b.count}; }
  State Make(float x, int64_t) const { return {static_cast<double>(x) * x, 1}; }
  double Finalize(State s) const { return s.count == 0 ? 0.0 : s.sum_sq / static_cast<double>(s.count); }
};

TEST(Combiner, BinaryFunctorDefaults) {
  std::mt19937_64 gen(::kps::testing::FreshSeed());
  std::uniform_int_distribution<int> pick(-1000, 1000);
  const AddFunctor<int> add;
  int acc = add.initial();
  int64_t want = 0;
  for (int i = 0; i < 100; ++i) {
    const int x = pick(gen);
    acc = CombinerAccumulate(add, acc, x, i);
    want += x;
  }
  EXPECT_EQ(CombinerFinalize(add, acc), want);
  EXPECT_EQ(CombinerMake(add, 7, 3), 7);
  const MaxFunctor<float> max;
  EXPECT_EQ(CombinerAccumulate(max, CombinerAccumulate(max, max.initial(), -3.5f, 0), -7.25f, 1), -3.5f);
}

TEST(Combiner, MakeAndFinalizeOfTheirOwn) {
  const SquareStats f;
  std::mt19937_64 gen(::kps::testing::FreshSeed());
  std::uniform_real_distribution<float> pick(-4.0f, 4.0f);
  std::vector<float> xs(37);
  for (float& x : xs) x = pick(gen);
  SquareStats::State s = f.initial();
  double want = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    s = CombinerAccumulate(f, s, xs[i], static_cast<int64_t>(i));  // f(s, Make(x))
    want += static_cast<double>(xs[i]) * xs[i];
  }
  EXPECT_EQ(s.count, 37);
  EXPECT_DOUBLE_EQ(CombinerFinalize(f, s), want / 37);
  EXPECT_EQ(CombinerFinalize(f, f.initial()), 0.0);
}

TEST(Combiner, ReducersUseTheirAccumulate) {
  // argmax keeps the index that Accumulate is given; the default would not know it.
  const reduce::ArgReducer<float, true> argmax;
  auto a = argmax.initial();
  const float xs[] = {1.5f, -2.0f, 3.25f, 3.25f, 0.0f};
  for (int i = 0; i < 5; ++i) a = CombinerAccumulate(argmax, a, xs[i], i);
  EXPECT_EQ(CombinerFinalize(argmax, a), 2);  // the first of the two maxima
  // mean: Finalize divides by the reduced count.
  reduce::SumReducer<float> mean;
  mean.mean = true;
  mean.divisor = 4.0f;
  float m = mean.initial();
  for (float x : {1.0f, 2.0f, 3.0f, 6.5f}) m = CombinerAccumulate(mean, m, x, 0);
  EXPECT_EQ(CombinerFinalize(mean, m), 3.125f);
}

}  // namespace
}  // namespace kps
