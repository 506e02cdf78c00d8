#include "testing/op_test.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "io/npy.h"
#include "registry/allocator.h"
#include "registry/call.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"
#include "registry/tensor.h"

namespace kps {
namespace testing {
namespace {

constexpr uint8_t kGivenOutputPoison = 0x5A;  // fresh allocations are 0xFF (SetAllocationPoisoning)
constexpr int kMaxReportedElements = 5;

// NumPy broadcasting of `shapes`; nullopt when they do not broadcast.
std::optional<Shape> Broadcast(const std::vector<Shape>& shapes) {
  int rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.rank());
  std::vector<int64_t> dims(static_cast<size_t>(rank), 1);
  for (const Shape& s : shapes) {
    for (int i = 0; i < s.rank(); ++i) {
      int64_t& d = dims[static_cast<size_t>(rank - s.rank() + i)];
      const int64_t e = s[i];
      if (e == d || e == 1) continue;
      if (d != 1) return std::nullopt;
      d = e;
    }
  }
  return Shape(dims);
}

// Row-major index of `out_index` into a tensor of `shape` broadcast to out's rank.
int64_t BroadcastIndex(const Shape& shape, const std::vector<int64_t>& out_index) {
  const int skip = static_cast<int>(out_index.size()) - shape.rank();
  int64_t i = 0;
  for (int d = 0; d < shape.rank(); ++d) {
    const int64_t e = shape[d];
    i = i * e + (e == 1 ? 0 : out_index[static_cast<size_t>(skip + d)]);
  }
  return i;
}

bool IsFloat(DataType dt) { return IsFloatingPoint(dt); }

// The dtype's special values: NaN, +-inf, -0, and its largest and lowest finite values
// (integers: their range's ends).
std::vector<double> Specials(DataType dt) {
  switch (dt) {
    case DataType::kBool: return {0.0, 1.0};
    case DataType::kInt8: return {-128.0, 127.0, 0.0};
    case DataType::kUInt8: return {0.0, 255.0};
    case DataType::kInt16: return {-32768.0, 32767.0, 0.0};
    case DataType::kInt32: return {-2147483648.0, 2147483647.0, 0.0};
    case DataType::kInt64: return {-9007199254740992.0, 9007199254740992.0, 0.0};  // exact in double
    default: break;
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double big = dt == DataType::kFloat16 ? 65504.0
                     : dt == DataType::kBFloat16 ? 3.3895313892515355e38
                     : dt == DataType::kFloat32 ? static_cast<double>(std::numeric_limits<float>::max())
                                                : std::numeric_limits<double>::max();
  return {std::numeric_limits<double>::quiet_NaN(), inf, -inf, -0.0, big, -big};
}

// `n` values for an input of dtype dt.
std::vector<double> Draw(int64_t n, DataType dt, const Values& v, std::mt19937_64& gen) {
  std::vector<double> out(static_cast<size_t>(n));
  const std::vector<double> specials = Specials(dt);
  std::uniform_int_distribution<int> pick_special(0, 7);
  std::uniform_int_distribution<size_t> which(0, specials.size() - 1);
  if (dt == DataType::kBool) {
    std::bernoulli_distribution b(0.5);
    for (double& x : out) x = b(gen) ? 1.0 : 0.0;
    return out;
  }
  if (!IsFloat(dt) || v.integral) {
    double lo = std::ceil(v.lo), hi = std::floor(v.hi);
    if (!IsFloat(dt)) {
      const std::vector<double> range = Specials(dt);
      lo = std::max(lo, range[0]);
      hi = std::min(hi, range[1]);
    }
    if (hi < lo) hi = lo;
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (double& x : out) x = static_cast<double>(d(gen));
  } else {
    std::uniform_real_distribution<double> d(v.lo, v.hi);
    for (double& x : out) x = d(gen);
  }
  if (v.specials) {
    for (double& x : out)
      if (pick_special(gen) == 0) x = specials[which(gen)];
  }
  for (double& x : out) x = RoundTo(dt, x);  // what the stored input holds
  return out;
}

// ulps of dtype at magnitude max(|want|, 1): the default tolerance.
double UlpTolerance(DataType dt, double want, double ulps) {
  const double mag = std::max(std::fabs(want), 1.0);
  switch (dt) {
    case DataType::kFloat16: return ulps * mag * std::ldexp(1.0, -10);
    case DataType::kBFloat16: return ulps * mag * std::ldexp(1.0, -7);
    case DataType::kFloat32: return ulps * mag * std::ldexp(1.0, -23);
    case DataType::kFloat64: return ulps * mag * std::ldexp(1.0, -52);
    default: return 0.0;
  }
}

std::string AttrValueString(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return x;
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return absl::StrJoin(x, ",");
        } else if constexpr (std::is_same_v<T, DataType>) {
          return std::string(DataTypeName(x));
        } else {
          return absl::StrCat(x);
        }
      },
      v);
}

std::string ShapesString(const std::vector<Shape>& shapes) {
  std::vector<std::string> s;
  for (const Shape& sh : shapes) s.push_back(sh.ToString());
  return absl::StrJoin(s, " ");
}

enum class Layout { kContiguous, kOffset, kStrided };
const char* LayoutName(Layout l) {
  return l == Layout::kContiguous ? "contiguous" : (l == Layout::kOffset ? "offset 1" : "strided");
}

// `values` of `shape` on `device`, laid out as `layout`: contiguous; one element into its
// buffer (misaligned for vector loads); or every other element of a buffer twice as long
// in the last dim.
absl::StatusOr<Tensor> Place(const std::vector<double>& values, const Shape& shape, DataType dt, DeviceType device,
                             Layout layout) {
  std::vector<double> buffer;
  const DimVector contiguous = ContiguousStrides(shape);
  std::vector<int64_t> strides(contiguous.begin(), contiguous.end());
  int64_t offset = 0;
  if (layout == Layout::kContiguous) {
    buffer = values;
  } else if (layout == Layout::kOffset) {
    buffer.assign(values.size() + 1, 3.0);
    std::copy(values.begin(), values.end(), buffer.begin() + 1);
    offset = 1;
  } else {
    buffer.assign(2 * values.size() + 1, -3.0);
    for (size_t i = 0; i < values.size(); ++i) buffer[2 * i] = values[i];
    for (int64_t& s : strides) s *= 2;
  }
  const Tensor host = HostFromDoubles(buffer, Shape{static_cast<int64_t>(buffer.size())}, dt);
  absl::StatusOr<Tensor> flat = host.To(device);
  if (!flat.ok()) return flat.status();
  return flat->AsStrided(shape, strides, offset);
}

// One case: the dtype, the input shapes, the attribute set, the layout, its seed.
struct Case {
  DataType dtype;
  std::vector<Shape> shapes;
  const AttrSet* attrs;
  Layout layout;
  uint64_t seed;
};

}  // namespace

double HostTensor::At(absl::Span<const int64_t> index) const {
  int64_t i = 0;
  for (int d = 0; d < shape.rank(); ++d) i = i * shape[d] + index[static_cast<size_t>(d)];
  return values[static_cast<size_t>(i)];
}

RefCall::RefCall(const std::string& op, DataType dtype, std::vector<std::string> names,
                 std::vector<HostTensor> inputs, ::kps::testing::AttrSet attrs)
    : op_(op), dtype_(dtype), names_(std::move(names)), inputs_(std::move(inputs)), attrs_(std::move(attrs)) {}

const HostTensor& RefCall::input(absl::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return inputs_[i];
  ADD_FAILURE() << "op '" << op_ << "': the reference reads input '" << name << "', which the test does not declare";
  static const HostTensor kNone;
  return kNone;
}

const AttrValue* RefCall::Find(absl::string_view name) const {
  for (const NamedAttr& a : attrs_)
    if (a.name == name) return &a.value;
  const OpSchema* schema = OpRegistry::Global().Find(op_);
  if (schema != nullptr) {
    const int i = schema->AttrIndex(name);
    if (i >= 0 && !schema->attrs()[static_cast<size_t>(i)].required) {
      return &schema->attrs()[static_cast<size_t>(i)].default_value;
    }
  }
  ADD_FAILURE() << "op '" << op_ << "': the reference reads attribute '" << name
                << "', which neither the attribute set nor the schema's defaults give";
  return nullptr;
}

std::vector<HostTensor> RefCall::MapN(const std::function<double(const double*)>& f,
                                      std::optional<DataType> out) const {
  std::vector<Shape> shapes;
  for (const HostTensor& t : inputs_) shapes.push_back(t.shape);
  const std::optional<Shape> shape = Broadcast(shapes);
  if (!shape) {
    ADD_FAILURE() << "op '" << op_ << "': RefCall::Map over shapes that do not broadcast: " << ShapesString(shapes);
    return {};
  }
  HostTensor r{out.value_or(dtype_), *shape, std::vector<double>(static_cast<size_t>(shape->numel()))};
  std::vector<int64_t> index(static_cast<size_t>(shape->rank()), 0);
  std::vector<double> args(inputs_.size());
  for (int64_t i = 0; i < shape->numel(); ++i) {
    for (size_t k = 0; k < inputs_.size(); ++k) args[k] = inputs_[k][BroadcastIndex(inputs_[k].shape, index)];
    r.values[static_cast<size_t>(i)] = f(args.data());
    for (int d = shape->rank() - 1; d >= 0; --d) {  // next row-major index
      if (++index[static_cast<size_t>(d)] < (*shape)[d]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
  return {r};
}

std::vector<HostTensor> RefCall::Map(const std::function<double(double)>& f, std::optional<DataType> out) const {
  return MapN([&](const double* a) { return f(a[0]); }, out);
}
std::vector<HostTensor> RefCall::Map(const std::function<double(double, double)>& f,
                                     std::optional<DataType> out) const {
  return MapN([&](const double* a) { return f(a[0], a[1]); }, out);
}
std::vector<HostTensor> RefCall::Map(const std::function<double(double, double, double)>& f,
                                     std::optional<DataType> out) const {
  return MapN([&](const double* a) { return f(a[0], a[1], a[2]); }, out);
}

std::vector<HostTensor> RefCall::Reduce(std::vector<int64_t> dims, bool keepdim, const SliceFn& f,
                                        DataType out) const {
  const HostTensor& x = inputs_.front();
  const int rank = x.shape.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), dims.empty());
  for (int64_t d : dims) {
    const int64_t n = d < 0 ? d + rank : d;
    if (n < 0 || n >= rank) {
      ADD_FAILURE() << "op '" << op_ << "': RefCall::Reduce over dim " << d << " of a rank-" << rank << " input";
      return {};
    }
    reduced[static_cast<size_t>(n)] = true;
  }
  std::vector<int64_t> out_dims, kept, red;  // kept / red: the input dims of each kind, in order
  for (int d = 0; d < rank; ++d) {
    if (reduced[static_cast<size_t>(d)]) {
      red.push_back(d);
      if (keepdim) out_dims.push_back(1);
    } else {
      kept.push_back(d);
      out_dims.push_back(x.shape[d]);
    }
  }
  const Shape out_shape(out_dims);
  HostTensor r{out, out_shape, std::vector<double>(static_cast<size_t>(out_shape.numel())),
               std::vector<double>(static_cast<size_t>(out_shape.numel()), -1.0)};
  const DimVector strides = ContiguousStrides(x.shape);
  int64_t slice_n = 1;
  for (int64_t d : red) slice_n *= x.shape[static_cast<int>(d)];
  std::vector<double> slice(static_cast<size_t>(slice_n));
  std::vector<int64_t> ko(kept.size(), 0);
  bool any_tolerance = false;
  for (int64_t o = 0; o < out_shape.numel(); ++o) {
    int64_t base = 0;
    for (size_t k = 0; k < kept.size(); ++k) base += ko[k] * strides[static_cast<size_t>(kept[k])];
    std::vector<int64_t> ri(red.size(), 0);
    for (int64_t j = 0; j < slice_n; ++j) {
      int64_t off = base;
      for (size_t k = 0; k < red.size(); ++k) off += ri[k] * strides[static_cast<size_t>(red[k])];
      slice[static_cast<size_t>(j)] = x[off];
      for (int k = static_cast<int>(red.size()) - 1; k >= 0; --k) {
        if (++ri[static_cast<size_t>(k)] < x.shape[static_cast<int>(red[static_cast<size_t>(k)])]) break;
        ri[static_cast<size_t>(k)] = 0;
      }
    }
    double tol = -1.0;
    r.values[static_cast<size_t>(o)] = f(slice, &tol);
    r.tolerance[static_cast<size_t>(o)] = tol;
    any_tolerance |= tol >= 0;
    for (int k = static_cast<int>(kept.size()) - 1; k >= 0; --k) {
      if (++ko[static_cast<size_t>(k)] < x.shape[static_cast<int>(kept[static_cast<size_t>(k)])]) break;
      ko[static_cast<size_t>(k)] = 0;
    }
  }
  if (!any_tolerance) r.tolerance.clear();
  return {r};
}

std::vector<HostTensor> RefCall::AlongDim(int64_t dim, const std::vector<DataType>& outs, const LineFn& f) const {
  const HostTensor& x = inputs_.front();
  const int rank = x.shape.rank();
  const int64_t d = dim < 0 ? dim + std::max(rank, 1) : dim;
  if (d < 0 || d >= std::max(rank, 1)) {
    ADD_FAILURE() << "op '" << op_ << "': RefCall::AlongDim over dim " << dim << " of a rank-" << rank << " input";
    return {};
  }
  // A rank-0 input is one line of one element.
  const int64_t len = rank == 0 ? 1 : x.shape[static_cast<int>(d)];
  int64_t inner = 1;
  for (int i = static_cast<int>(d) + 1; i < rank; ++i) inner *= x.shape[i];
  const int64_t lines = len == 0 ? 0 : x.numel() / len;
  std::vector<HostTensor> r;
  for (DataType dt : outs) {
    r.push_back({dt, x.shape, std::vector<double>(x.values.size()), std::vector<double>(x.values.size(), -1.0)});
  }
  bool any_tolerance = false;
  std::vector<double> line(static_cast<size_t>(len));
  for (int64_t l = 0; l < lines; ++l) {
    const int64_t base = (l / inner) * len * inner + l % inner;
    for (int64_t j = 0; j < len; ++j) line[static_cast<size_t>(j)] = x[base + j * inner];
    std::vector<std::vector<double>> values(outs.size()), tols(outs.size());
    f(line, values, tols);
    for (size_t k = 0; k < outs.size(); ++k) {
      for (int64_t j = 0; j < len; ++j) {
        const int64_t e = base + j * inner;
        r[k].values[static_cast<size_t>(e)] =
            static_cast<size_t>(j) < values[k].size() ? values[k][static_cast<size_t>(j)] : 0.0;
        if (static_cast<size_t>(j) < tols[k].size()) {
          r[k].tolerance[static_cast<size_t>(e)] = tols[k][static_cast<size_t>(j)];
          any_tolerance = true;
        }
      }
    }
  }
  if (!any_tolerance)
    for (HostTensor& t : r) t.tolerance.clear();
  return r;
}

OpTest::OpTest(std::string op) : op_(std::move(op)) {}
OpTest& OpTest::Input(std::string name, Values values) {
  inputs_.push_back({std::move(name), std::nullopt, values});
  return *this;
}
OpTest& OpTest::Input(std::string name, DataType dtype, Values values) {
  inputs_.push_back({std::move(name), dtype, values});
  return *this;
}
OpTest& OpTest::AttrSet(::kps::testing::AttrSet attrs) {
  attr_sets_.push_back(std::move(attrs));
  return *this;
}
OpTest& OpTest::Shapes(std::vector<std::vector<Shape>> shapes) {
  for (auto& s : shapes) shapes_.push_back(std::move(s));
  return *this;
}
OpTest& OpTest::EdgeShapes() {
  edge_shapes_ = true;
  return *this;
}
OpTest& OpTest::Broadcasts() {
  broadcasts_ = true;
  return *this;
}
OpTest& OpTest::Reference(::kps::testing::Reference ref) {
  ref_ = std::move(ref);
  return *this;
}
OpTest& OpTest::Ulps(double ulps) {
  ulps_ = ulps;
  return *this;
}
OpTest& OpTest::Tolerance(ToleranceFn fn) {
  tolerance_ = std::move(fn);
  return *this;
}
OpTest& OpTest::Deterministic() {
  deterministic_ = true;
  return *this;
}
OpTest& OpTest::Dtypes(std::vector<DataType> dtypes) {
  dtypes_ = std::move(dtypes);
  return *this;
}
OpTest& OpTest::NoErrorCases() {
  error_cases_ = false;
  return *this;
}

uint64_t RunSeed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("KPS_TEST_SEED");
    if (s != nullptr && s[0] != '\0') return static_cast<uint64_t>(std::strtoull(s, nullptr, 0));
    return FreshSeed();
  }();
  return seed;
}

// Runs one declaration on one device.
class OpTestRunner {
 public:
  OpTestRunner(const OpTest& t, DeviceType device) : t_(t), device_(device) {}

  void Run() {
    schema_ = OpRegistry::Global().Find(t_.op_);
    if (schema_ == nullptr) {
      ADD_FAILURE() << "op '" << t_.op_ << "' is not registered";
      return;
    }
    if (!t_.ref_) {
      ADD_FAILURE() << "op '" << t_.op_ << "': the OpTest declares no Reference";
      return;
    }
    if (t_.inputs_.size() != schema_->inputs().size()) {
      ADD_FAILURE() << "op '" << t_.op_ << "': the OpTest declares " << t_.inputs_.size() << " inputs, the schema "
                    << schema_->inputs().size();
      return;
    }
    for (size_t i = 0; i < t_.inputs_.size(); ++i) {
      if (t_.inputs_[i].name != schema_->inputs()[i].name) {
        ADD_FAILURE() << "op '" << t_.op_ << "': input " << i << " is '" << schema_->inputs()[i].name
                      << "' in the schema, '" << t_.inputs_[i].name << "' in the OpTest";
        return;
      }
    }
    const std::vector<DataType> dtypes = Dtypes();
    if (dtypes.empty()) {
      ADD_FAILURE() << "op '" << t_.op_ << "' has no kernel on " << DeviceTypeName(device_) << " to test";
      return;
    }
    cases_run_ = 0;
    for (DataType dt : dtypes) RunDtype(dt);
    if (t_.error_cases_) RunErrorCases(dtypes);
    std::cout << "[ kps op test ] " << t_.op_ << " on " << DeviceTypeName(device_) << ": " << cases_run_
              << " cases over " << dtypes.size() << " dtypes (KPS_TEST_SEED=" << RunSeed() << ")\n";
  }

 private:
  std::vector<DataType> Dtypes() const {
    std::vector<DataType> out;
    for (const auto& [dev, dt] : KernelRegistry::Global().RegisteredKeys(t_.op_)) {
      if (dev != device_) continue;
      if (!t_.dtypes_.empty() && std::find(t_.dtypes_.begin(), t_.dtypes_.end(), dt) == t_.dtypes_.end()) continue;
      out.push_back(dt);
    }
    return out;
  }

  std::vector<std::vector<Shape>> ShapeSets() const {
    std::vector<std::vector<Shape>> sets = t_.shapes_;
    const size_t n = t_.inputs_.size();
    if (t_.edge_shapes_ || sets.empty()) {
      std::vector<Shape> shapes = {Shape{}};
      for (int64_t s : {0, 1, 2, 3, 7, 31, 127, 255, 256, 257, 1023, 1024, 1025, 4093, 65535, 65536, 65537}) {
        shapes.push_back(Shape{s});
      }
      for (Shape s : {Shape{3, 257}, Shape{17, 0}, Shape{2, 3, 5}, Shape{64, 33}}) shapes.push_back(s);
      for (const Shape& s : shapes) sets.push_back(std::vector<Shape>(n, s));
    }
    if (t_.broadcasts_ && n >= 2) {
      const std::vector<std::pair<Shape, Shape>> pairs = {
          {Shape{4, 1, 5}, Shape{3, 5}}, {Shape{7}, Shape{}}, {Shape{257, 1}, Shape{1, 33}}, {Shape{2, 1}, Shape{0}}};
      for (const auto& [a, b] : pairs) {
        std::vector<Shape> set(n, a);
        set[1] = b;
        sets.push_back(set);
      }
    }
    return sets;
  }

  std::vector<const AttrSet*> AttrSets() const {
    static const AttrSet kDefaults;
    std::vector<const AttrSet*> out;
    for (const AttrSet& a : t_.attr_sets_) out.push_back(&a);
    if (out.empty()) out.push_back(&kDefaults);
    return out;
  }

  DataType InputDtype(size_t i, DataType dt) const {
    if (t_.inputs_[i].dtype) return *t_.inputs_[i].dtype;
    if (schema_->inputs()[i].dtype) return *schema_->inputs()[i].dtype;
    return dt;
  }

  void RunDtype(DataType dt) {
    std::vector<Layout> layouts = {Layout::kContiguous, Layout::kOffset};
    if (!schema_->requires_contiguous_inputs()) layouts.push_back(Layout::kStrided);
    uint64_t k = 0;
    for (const std::vector<Shape>& shapes : ShapeSets()) {
      for (const AttrSet* attrs : AttrSets()) {
        for (Layout layout : layouts) {
          // Layouts other than contiguous on a few shapes only: they test addressing, not sizes.
          const int64_t numel = shapes.empty() ? 0 : shapes[0].numel();
          if (layout != Layout::kContiguous && (numel < 2 || numel > 70000)) continue;
          Case c{dt, shapes, attrs, layout, RunSeed() ^ (0x9E3779B97F4A7C15ull * ++k)};
          if (!RunCase(c)) return;  // the first failing case of a dtype is enough
        }
      }
    }
  }

  // Runs the op on `device` with the case's inputs; outputs allocated (poisoned by the
  // allocator) or, with `given`, passed in filled with kGivenOutputPoison.
  absl::StatusOr<std::vector<Tensor>> Call(DeviceType device, const std::vector<Tensor>& inputs, const Case& c,
                                           const std::vector<Tensor>* given) const {
    ::kps::Call call(t_.op_);
    for (size_t i = 0; i < inputs.size(); ++i) call.Input(t_.inputs_[i].name, inputs[i]);
    for (const NamedAttr& a : *c.attrs) call.SetAttr(a.name, a.value);
    if (given != nullptr) {
      for (size_t i = 0; i < given->size(); ++i) call.Output(schema_->outputs()[i].name, (*given)[i]);
    }
    if (inputs.empty()) call.OnDevice(device);
    return call.Run();
  }

  // Fills `like`'s shapes and dtypes with the given-output poison on `device`.
  static absl::StatusOr<std::vector<Tensor>> PoisonedLike(const std::vector<Tensor>& like, DeviceType device) {
    std::vector<Tensor> out;
    for (const Tensor& t : like) {
      absl::StatusOr<Tensor> e = Tensor::Empty(t.shape(), t.dtype(), DeviceType::kCpu);
      if (!e.ok()) return e.status();
      if (e->nbytes() > 0) std::memset(e->raw_data(), kGivenOutputPoison, e->nbytes());
      absl::StatusOr<Tensor> d = e->To(device);
      if (!d.ok()) return d.status();
      out.push_back(*std::move(d));
    }
    return out;
  }

  // The line that reproduces case `c`: the seed and filter, and a kps run command over the
  // inputs written as .npy files.
  std::string Repro(const Case& c, const std::vector<HostTensor>& inputs) const {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string line = absl::StrCat("reproduce: KPS_TEST_SEED=", RunSeed(), " <this test binary> --gtest_filter=",
                                    info ? absl::StrCat(info->test_suite_name(), ".", info->name()) : "?");
    std::error_code ec;
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path(ec) / absl::StrCat("kps-case-", t_.op_, "-", c.seed);
    if (ec || (!std::filesystem::create_directories(dir, ec) && ec)) return line;
    std::string cmd = absl::StrCat("kps run ", t_.op_, " --device ", DeviceTypeName(device_));
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string path = (dir / (t_.inputs_[i].name + ".npy")).string();
      const Tensor t = HostFromDoubles(inputs[i].values, inputs[i].shape, inputs[i].dtype);
      if (!io::WriteNpy(path, t).ok()) return line;
      absl::StrAppend(&cmd, " --input ", t_.inputs_[i].name, "=", path);
    }
    for (const NamedAttr& a : *c.attrs) absl::StrAppend(&cmd, " --attr ", a.name, "=", AttrValueString(a.value));
    absl::StrAppend(&line, "\n   or: ", cmd, " --check");
    if (c.dtype == DataType::kBFloat16) absl::StrAppend(&line, " (bfloat16 inputs are written as float32)");
    return line;
  }

  // |got - want| allowed for element i of `want` (whose value rounded to its dtype is w).
  double ElementTolerance(const HostTensor& want, int64_t i, double w, const RefCall& call) const {
    const double given = want.tolerance.empty() ? -1.0 : want.tolerance[static_cast<size_t>(i)];
    if (given >= 0) return given;
    return t_.tolerance_ ? t_.tolerance_(want.dtype, w, call) : UlpTolerance(want.dtype, w, t_.ulps_);
  }

  // Compares `got` with `want` element by element; appends what differs to `why`.
  bool Compare(const Tensor& got_t, const HostTensor& want, const RefCall& call, const std::string& what,
               std::string* why) const {
    if (got_t.dtype() != want.dtype) {
      absl::StrAppend(why, what, " has dtype ", DataTypeName(got_t.dtype()), ", the reference says ",
                      DataTypeName(want.dtype), "\n");
      return false;
    }
    if (got_t.shape() != want.shape) {
      absl::StrAppend(why, what, " has shape ", got_t.shape().ToString(), ", the reference says ",
                      want.shape.ToString(), "\n");
      return false;
    }
    const std::vector<double> got = ToDoubles(got_t);
    int bad = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      // Integer references are exact already (and int64's ends do not survive a cast).
      const double w = IsFloat(want.dtype) ? RoundTo(want.dtype, want[i]) : want[i];
      const double g = got[static_cast<size_t>(i)];
      bool ok;
      if (std::isnan(w)) {
        ok = std::isnan(g);
      } else if (std::isinf(w) || !IsFloat(want.dtype)) {
        ok = g == w;
      } else {
        ok = std::fabs(g - w) <= ElementTolerance(want, i, w, call);
      }
      if (!ok && ++bad <= kMaxReportedElements) {
        absl::StrAppend(why, what, "[", i, "] = ", g, ", want ", w, "\n");
      }
    }
    if (bad > kMaxReportedElements) absl::StrAppend(why, what, ": ", bad, " elements differ in all\n");
    return bad == 0;
  }

  static bool BitwiseEqual(const Tensor& a, const Tensor& b) {
    const absl::StatusOr<Tensor> ha = a.To(DeviceType::kCpu), hb = b.To(DeviceType::kCpu);
    if (!ha.ok() || !hb.ok() || ha->nbytes() != hb->nbytes()) return false;
    return ha->nbytes() == 0 || std::memcmp(ha->raw_data(), hb->raw_data(), ha->nbytes()) == 0;
  }

  // Runs one case; false (after reporting) when it failed.
  bool RunCase(const Case& c) {
    ++cases_run_;
    std::mt19937_64 gen(c.seed);
    std::vector<HostTensor> host;
    std::vector<Tensor> inputs;
    std::vector<std::string> names;
    for (size_t i = 0; i < t_.inputs_.size(); ++i) {
      const DataType dt = InputDtype(i, c.dtype);
      const Shape& shape = c.shapes[i];
      host.push_back({dt, shape, Draw(shape.numel(), dt, t_.inputs_[i].values, gen)});
      names.push_back(t_.inputs_[i].name);
      absl::StatusOr<Tensor> x = Place(host.back().values, shape, dt, device_, c.layout);
      if (!x.ok()) {
        ADD_FAILURE() << "op '" << t_.op_ << "': could not place input '" << names.back() << "': " << x.status();
        return false;
      }
      inputs.push_back(*std::move(x));
    }
    std::vector<std::string> attr_text;
    for (const NamedAttr& a : *c.attrs) attr_text.push_back(absl::StrCat(a.name, "=", AttrValueString(a.value)));
    const std::string label =
        absl::StrCat("op '", t_.op_, "' on ", DeviceTypeName(device_), ", ", DataTypeName(c.dtype), ", shapes ",
                     ShapesString(c.shapes), ", ", LayoutName(c.layout), ", attrs {", absl::StrJoin(attr_text, ", "),
                     "}");
    auto fail = [&](const std::string& why) {
      ADD_FAILURE() << label << ":\n" << why << Repro(c, host);
      return false;
    };

    const RefCall ref_call(t_.op_, c.dtype, names, host, *c.attrs);
    const std::vector<HostTensor> want = t_.ref_(ref_call);
    absl::StatusOr<std::vector<Tensor>> first = Call(device_, inputs, c, nullptr);
    if (!first.ok()) return fail(absl::StrCat("the call failed: ", first.status().ToString(), "\n"));
    if (first->size() != want.size()) {
      return fail(absl::StrCat("the op gave ", first->size(), " outputs, the reference ", want.size(), "\n"));
    }
    std::string why;
    bool ok = true;
    for (size_t i = 0; i < want.size(); ++i) {
      ok &= Compare((*first)[i], want[i], ref_call, absl::StrCat("output '", schema_->outputs()[i].name, "'"), &why);
    }
    if (!ok) return fail(why);

    // Again into outputs poisoned with another pattern: an unwritten element fails in any
    // dtype. Ops whose outputs are sized by their values take no given outputs.
    absl::StatusOr<std::vector<Tensor>> given = PoisonedLike(*first, device_);
    if (!given.ok()) return fail(absl::StrCat("could not allocate outputs: ", given.status().ToString(), "\n"));
    absl::StatusOr<std::vector<Tensor>> second = Call(device_, inputs, c, &*given);
    if (second.ok()) {
      for (size_t i = 0; i < want.size(); ++i) {
        ok &= Compare((*second)[i], want[i], ref_call,
                      absl::StrCat("output '", schema_->outputs()[i].name, "' (second run, outputs passed in)"), &why);
      }
      if (!ok) return fail(why);
    }
    // Deterministic ops: the same bits every run (a third run, outputs allocated).
    if (t_.deterministic_) {
      absl::StatusOr<std::vector<Tensor>> third = Call(device_, inputs, c, nullptr);
      if (!third.ok()) return fail(absl::StrCat("the third call failed: ", third.status().ToString(), "\n"));
      for (size_t i = 0; i < want.size(); ++i) {
        if (!BitwiseEqual((*first)[i], (*third)[i])) {
          absl::StrAppend(&why, "output '", schema_->outputs()[i].name,
                          "' differs bitwise between two runs of an op declared deterministic\n");
          ok = false;
        }
      }
      if (!ok) return fail(why);
    }
    // CUDA against the CPU kernel on the same inputs.
    if (device_ == DeviceType::kCuda && HasKernel(DeviceType::kCpu, c.dtype)) {
      std::vector<Tensor> cpu_inputs;
      for (size_t i = 0; i < host.size(); ++i) {
        cpu_inputs.push_back(HostFromDoubles(host[i].values, host[i].shape, host[i].dtype));
      }
      absl::StatusOr<std::vector<Tensor>> cpu = Call(DeviceType::kCpu, cpu_inputs, c, nullptr);
      if (!cpu.ok()) return fail(absl::StrCat("the CPU call failed: ", cpu.status().ToString(), "\n"));
      for (size_t i = 0; i < want.size(); ++i) {
        // Each within its tolerance of the reference: within twice it of each other.
        HostTensor cpu_out{(*cpu)[i].dtype(), (*cpu)[i].shape(), ToDoubles((*cpu)[i])};
        if (cpu_out.shape == want[i].shape) {
          cpu_out.tolerance.resize(cpu_out.values.size());
          for (int64_t e = 0; e < cpu_out.numel(); ++e) {
            const double w = IsFloat(want[i].dtype) ? RoundTo(want[i].dtype, want[i][e]) : want[i][e];
            cpu_out.tolerance[static_cast<size_t>(e)] = 2 * ElementTolerance(want[i], e, w, ref_call);
          }
        }
        ok &= Compare((*first)[i], cpu_out, ref_call,
                      absl::StrCat("output '", schema_->outputs()[i].name, "' against the CPU kernel's"), &why);
      }
      if (!ok) return fail(why);
    }
    return true;
  }

  bool HasKernel(DeviceType device, DataType dt) const {
    for (const auto& [d, t] : KernelRegistry::Global().RegisteredKeys(t_.op_))
      if (d == device && t == dt) return true;
    return false;
  }

  // Each must be an error Status naming the op.
  void ExpectError(const std::string& what, const absl::StatusOr<std::vector<Tensor>>& r) const {
    if (r.ok()) {
      ADD_FAILURE() << "op '" << t_.op_ << "' on " << DeviceTypeName(device_) << ": " << what << " was accepted";
    } else if (r.status().message().find(absl::StrCat("'", t_.op_, "'")) == absl::string_view::npos) {
      ADD_FAILURE() << "op '" << t_.op_ << "': the error for " << what << " does not name the op: " << r.status();
    }
  }

  void RunErrorCases(const std::vector<DataType>& dtypes) const {
    const DataType dt = dtypes.front();
    std::mt19937_64 gen(RunSeed());
    const Shape shape{5};
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < t_.inputs_.size(); ++i) {
      const DataType idt = InputDtype(i, dt);
      inputs.push_back(*Place(Draw(5, idt, t_.inputs_[i].values, gen), shape, idt, device_, Layout::kContiguous));
    }
    const AttrSet& attrs = t_.attr_sets_.empty() ? AttrSet{} : t_.attr_sets_.front();
    auto call = [&](const std::vector<Tensor>& in, const std::vector<bool>& skip, const AttrSet& a) {
      ::kps::Call c(t_.op_);
      for (size_t i = 0; i < in.size(); ++i)
        if (!skip[i]) c.Input(t_.inputs_[i].name, in[i]);
      for (const NamedAttr& x : a) c.SetAttr(x.name, x.value);
      if (in.empty()) c.OnDevice(device_);
      return c.Run();
    };
    const std::vector<bool> none(inputs.size(), false);
    // Each required input missing.
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (schema_->inputs()[i].optional) continue;
      std::vector<bool> skip = none;
      skip[i] = true;
      ExpectError(absl::StrCat("a call without input '", t_.inputs_[i].name, "'"), call(inputs, skip, attrs));
    }
    // An unknown attribute.
    AttrSet unknown = attrs;
    unknown.push_back({"kps_test_no_such_attribute", 1.0});
    ExpectError("an unknown attribute", call(inputs, none, unknown));
    // Each attribute with a value of another type (a string; for string attributes a list).
    for (const AttrDef& def : schema_->attrs()) {
      AttrSet wrong;
      for (const NamedAttr& a : attrs)
        if (a.name != def.name) wrong.push_back(a);
      if (def.type == AttrType::kString) {
        wrong.push_back({def.name.c_str(), std::vector<int64_t>{1, 2}});
      } else {
        wrong.push_back({def.name.c_str(), "not a number"});
      }
      ExpectError(absl::StrCat("attribute '", def.name, "' given a value of the wrong type"),
                  call(inputs, none, wrong));
    }
    // A dtype without a kernel on this device, for the inputs that follow the dtype under test.
    for (DataType other : kAllDataTypes) {
      if (HasKernel(device_, other) || inputs.empty()) continue;
      std::vector<Tensor> in;
      for (size_t i = 0; i < t_.inputs_.size(); ++i) {
        const DataType idt = t_.inputs_[i].dtype || schema_->inputs()[i].dtype ? InputDtype(i, dt) : other;
        in.push_back(*Place(Draw(5, idt, Values{}, gen), shape, idt, device_, Layout::kContiguous));
      }
      ExpectError(absl::StrCat("dtype ", DataTypeName(other), " (no kernel)"), call(in, none, attrs));
      break;
    }
    // Shapes that do not broadcast.
    if (t_.broadcasts_ && inputs.size() >= 2) {
      std::vector<Tensor> in = inputs;
      const DataType idt = InputDtype(1, dt);
      in[1] = *Place(Draw(4, idt, t_.inputs_[1].values, gen), Shape{4}, idt, device_, Layout::kContiguous);
      ExpectError("inputs of shapes [5] and [4]", call(in, none, attrs));
    }
  }

  const OpTest& t_;
  DeviceType device_;
  const OpSchema* schema_ = nullptr;
  int64_t cases_run_ = 0;
};

void OpTest::Run(DeviceType device) const { OpTestRunner(*this, device).Run(); }

void RunOpTest(const OpTest& test, DeviceType device) {
  if (device == DeviceType::kCuda) KPS_SKIP_WITHOUT_GPU();
  test.Run(device);
}

}  // namespace testing
}  // namespace kps
