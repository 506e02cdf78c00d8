// kps::testing::OpTest: an op-level test as a declaration. Name the op, describe its
// inputs (value ranges, which special values make sense), its attribute sets and its
// shapes, give a host reference computed in double, and the kit runs the op on every
// dtype the registry has for it on the test's device:
//
//   KPS_OP_TEST(AxpbyTest, MatchesTheReference) {
//     return kps::testing::OpTest("axpby")
//         .Input("x")
//         .Input("y")
//         .AttrSet({{"a", 2.5}, {"b", -0.5}})
//         .AttrSet({})  // the schema's defaults
//         .Reference([](const kps::testing::RefCall& c) {
//           const double a = c.Attr<double>("a"), b = c.Attr<double>("b");
//           return c.Map([&](double x, double y) { return a * x + b * y; });
//         });
//   }
//
// KPS_OP_TEST defines two GoogleTest tests, Suite.Name_cpu and Suite.Name_cuda. The cuda
// one skips without a GPU, and fails instead when KPS_REQUIRE_GPU=1. For every (dtype,
// shape, attribute set, input layout) case the kit
//   - draws fresh random inputs (a fresh seed per run, printed on failure; KPS_TEST_SEED
//     replays one), with the special values (NaN, +-inf, -0, the dtype's extremes) an
//     input allows;
//   - runs the op twice, into outputs poisoned with two different byte patterns (fresh
//     allocations are 0xFF, outputs passed in are 0x5A), so that an element the kernel
//     does not write fails in every dtype;
//   - compares every output with the reference (dtype, shape, then each element under the
//     dtype's tolerance; NaN must be NaN, infinities exact, integers exact);
//   - on CUDA, compares with the CPU kernel on the same inputs;
//   - for ops declared Deterministic(), requires the two runs to be bitwise equal;
//   - tries input layouts at a misaligned offset and, when the schema takes strided
//     inputs, as strided views.
// It then checks the errors the schema implies: each required input missing, an unknown
// attribute, each attribute with a value of the wrong type, a dtype without a kernel, and
// (for ops declared Broadcasts()) shapes that do not broadcast: each must be an error
// Status naming the op. A failing case prints one line to reproduce it: the seed and the
// test filter, and a `kps run` command over its inputs written as .npy files.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "registry/attr.h"
#include "registry/data_type.h"
#include "registry/device.h"
#include "registry/shape.h"
#include "testing/support.h"

namespace kps {
namespace testing {

// A tensor on the host: its dtype, shape and elements as double in row-major order.
// References read their inputs and write their outputs in this form.
struct HostTensor {
  DataType dtype = DataType::kFloat32;
  Shape shape;
  std::vector<double> values;
  // Optional, for outputs a reference returns: |got - want| allowed per element, in
  // place of the test's Ulps/Tolerance (a reduction's bound grows with its slice).
  std::vector<double> tolerance;

  int64_t numel() const { return static_cast<int64_t>(values.size()); }
  double operator[](int64_t i) const { return values[static_cast<size_t>(i)]; }
  // The element at a row-major multi-index of shape's rank.
  double At(absl::Span<const int64_t> index) const;
};

// What the values of an input may be.
struct Values {
  double lo = -4.0, hi = 4.0;  // floats uniform in [lo, hi); integers in [lo, hi] within the dtype
  bool integral = false;       // floats hold whole numbers (ops that are exact on them)
  bool specials = false;       // about 1 in 8 elements: NaN, +-inf, -0, the dtype's extremes

  static Values Range(double lo, double hi) { return Values{lo, hi}; }
  static Values WithSpecials(double lo = -4.0, double hi = 4.0) { return Values{lo, hi, false, true}; }
};

// One named attribute value for an attribute set (converted as Call::Attr converts).
struct NamedAttr {
  NamedAttr(const char* name, AttrValue value) : name(name), value(std::move(value)) {}
  NamedAttr(const char* name, double value) : name(name), value(value) {}
  NamedAttr(const char* name, int value) : name(name), value(int64_t{value}) {}
  NamedAttr(const char* name, int64_t value) : name(name), value(value) {}
  NamedAttr(const char* name, bool value) : name(name), value(value) {}
  NamedAttr(const char* name, const char* value) : name(name), value(std::string(value)) {}
  NamedAttr(const char* name, std::vector<int64_t> value) : name(name), value(std::move(value)) {}
  NamedAttr(const char* name, DataType value) : name(name), value(value) {}
  std::string name;
  AttrValue value;
};
using AttrSet = std::vector<NamedAttr>;

// What a reference sees: the case's inputs as HostTensors (as stored in their dtypes),
// its attributes (the set's, else the schema's defaults) and the dtype under test.
class RefCall {
 public:
  RefCall(const std::string& op, DataType dtype, std::vector<std::string> names, std::vector<HostTensor> inputs,
          AttrSet attrs);

  DataType dtype() const { return dtype_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const HostTensor& input(int i) const { return inputs_[static_cast<size_t>(i)]; }
  const HostTensor& input(absl::string_view name) const;
  // Attribute `name` as T (bool, int64_t, double, std::string, std::vector<int64_t>,
  // DataType); an integer reads as double too. The set's value, else the schema's
  // default; a missing or mistyped attribute fails the test and gives T().
  template <typename T>
  T Attr(absl::string_view name) const;

  // Elementwise references over the inputs broadcast to one shape (NumPy rules), into
  // one output of dtype `out` (default: dtype()).
  std::vector<HostTensor> Map(const std::function<double(double)>& f, std::optional<DataType> out = {}) const;
  std::vector<HostTensor> Map(const std::function<double(double, double)>& f,
                              std::optional<DataType> out = {}) const;
  std::vector<HostTensor> Map(const std::function<double(double, double, double)>& f,
                              std::optional<DataType> out = {}) const;

  // A reduction of input 0 over `dims` (empty: every dim; negative dims count from the
  // end), keepdim as the reduce ops take it, into one output of dtype `out`: each output
  // element is f(slice, &tolerance), slice holding the reduced elements in row-major
  // order; f may set the element's tolerance (default: the test's).
  using SliceFn = std::function<double(const std::vector<double>& slice, double* tolerance)>;
  std::vector<HostTensor> Reduce(std::vector<int64_t> dims, bool keepdim, const SliceFn& f, DataType out) const;

  // Outputs of input 0's shape computed line by line along `dim` (negative: from the
  // end), one per dtype in `outs`: f(line, values, tolerances) fills values[k] (and, if it
  // likes, tolerances[k]) with output k's elements at the line's positions. For scans.
  using LineFn = std::function<void(const std::vector<double>& line, std::vector<std::vector<double>>& values,
                                    std::vector<std::vector<double>>& tolerances)>;
  std::vector<HostTensor> AlongDim(int64_t dim, const std::vector<DataType>& outs, const LineFn& f) const;

 private:
  const AttrValue* Find(absl::string_view name) const;
  std::vector<HostTensor> MapN(const std::function<double(const double*)>& f, std::optional<DataType> out) const;

  std::string op_;
  DataType dtype_;
  std::vector<std::string> names_;
  std::vector<HostTensor> inputs_;
  AttrSet attrs_;
};

using Reference = std::function<std::vector<HostTensor>(const RefCall&)>;

// |got - want| allowed for an output element of dtype whose reference value is `want`
// (already rounded to dtype). Default: exact for integers and bool; for floats
// `ulps` units in the last place of dtype at max(|want|, 1) (16-bit: of their epsilon).
using ToleranceFn = std::function<double(DataType dtype, double want, const RefCall& call)>;

// The declaration. Every setter returns *this; Run() executes it on one device.
class OpTest {
 public:
  explicit OpTest(std::string op);

  // Declares the op's next input (schema order is the op's, names must match it).
  OpTest& Input(std::string name, Values values = {});
  // An input whose dtype is fixed (an index, a mask) whatever the dtype under test.
  OpTest& Input(std::string name, DataType dtype, Values values = {});
  // Adds one attribute set; without any, the kit runs the schema's defaults only.
  OpTest& AttrSet(::kps::testing::AttrSet attrs);
  // Shapes to run, one shape per input. Default: EdgeShapes().
  OpTest& Shapes(std::vector<std::vector<Shape>> shapes);
  // Every input of the same shape, for each of: rank 0, 0, 1, primes, 2^k +- 1, tile
  // edges up to 65537, and a few 2-D and 3-D shapes.
  OpTest& EdgeShapes();
  // The inputs broadcast (NumPy rules): adds broadcasting shape pairs to the cases and
  // shapes that do not broadcast to the error cases.
  OpTest& Broadcasts();
  OpTest& Reference(::kps::testing::Reference ref);
  // Default: 2 ulps (see ToleranceFn); or a function of the case.
  OpTest& Ulps(double ulps);
  OpTest& Tolerance(ToleranceFn fn);
  // Outputs must be bitwise equal between two runs on the same inputs.
  OpTest& Deterministic();
  // Only these dtypes (default: every dtype with a kernel on the device).
  OpTest& Dtypes(std::vector<DataType> dtypes);
  // Skips the error cases (for ops whose schema is not the point of the test).
  OpTest& NoErrorCases();

  // Runs every case on `device`, reporting failures through GoogleTest.
  void Run(DeviceType device) const;

  const std::string& op() const { return op_; }

 private:
  struct InputDecl {
    std::string name;
    std::optional<DataType> dtype;
    Values values;
  };
  friend class OpTestRunner;

  std::string op_;
  std::vector<InputDecl> inputs_;
  std::vector<::kps::testing::AttrSet> attr_sets_;
  std::vector<std::vector<Shape>> shapes_;
  bool edge_shapes_ = false;
  bool broadcasts_ = false;
  ::kps::testing::Reference ref_;
  ToleranceFn tolerance_;
  double ulps_ = 2.0;
  bool deterministic_ = false;
  std::vector<DataType> dtypes_;
  bool error_cases_ = true;
};

// The seed of this run: KPS_TEST_SEED when set, else a fresh one.
uint64_t RunSeed();

// Runs `test` on `device`, skipping (or failing under KPS_REQUIRE_GPU=1) a CUDA run
// without a GPU. What KPS_OP_TEST's tests call.
void RunOpTest(const OpTest& test, DeviceType device);

template <typename T>
T RefCall::Attr(absl::string_view name) const {
  const AttrValue* v = Find(name);
  if (v == nullptr) return T();
  if constexpr (std::is_same_v<T, double>) {
    if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  }
  if (const auto* t = std::get_if<T>(v)) return *t;
  ADD_FAILURE() << "op '" << op_ << "': the reference reads attribute '" << name << "' with another type";
  return T();
}

}  // namespace testing
}  // namespace kps

// Defines Suite.Name_cpu and Suite.Name_cuda from a function body returning the OpTest.
#define KPS_OP_TEST(Suite, Name)                                                              \
  static ::kps::testing::OpTest KpsOpTestDecl_##Suite##_##Name();                             \
  TEST(Suite, Name##_cpu) {                                                                  \
    ::kps::testing::RunOpTest(KpsOpTestDecl_##Suite##_##Name(), ::kps::DeviceType::kCpu);    \
  }                                                                                          \
  TEST(Suite, Name##_cuda) {                                                                 \
    ::kps::testing::RunOpTest(KpsOpTestDecl_##Suite##_##Name(), ::kps::DeviceType::kCuda);   \
  }                                                                                          \
  static ::kps::testing::OpTest KpsOpTestDecl_##Suite##_##Name()
