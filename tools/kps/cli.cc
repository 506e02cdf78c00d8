#include "tools/kps/cli.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "registry/call.h"
#include "tools/kps/launch.h"
#include "registry/device.h"
#include "registry/kernel.h"
#include "registry/op_schema.h"
#include "registry/status.h"
#include "registry/stream.h"
#include "registry/tensor.h"
#include "registry/tuning.h"
#include "tools/kps/bench.h"
#include "io/graph.h"
#include "io/mtx.h"
#include "io/npy.h"

namespace kps {
namespace cli {

using ::kps::io::NpyOutput;
using ::kps::io::QuoteForMessage;
using ::kps::io::ReadNpy;
using ::kps::io::WriteNpyFiles;
namespace {

constexpr char kUsage[] = R"(usage: kps COMMAND [ARGS]

commands:
  list                       every registered op with its (device:dtype) kernels
      --markdown             instead, the op table of docs/ops.md (inputs, outputs,
                             attributes, kernels, doc), grouped by ops/ folder
  describe OP                OP's inputs, outputs, attributes and registered kernels
  run OP [FLAGS]             run OP once and print its outputs
      --shape 2,3            shape of the random inputs (default 1024; "" is a scalar)
      --dtype float32        dtype of the random inputs (default float32; also f16, bf16,
                             f64, i8, u8, i16, i32, i64, bool)
      --device cpu|cuda|auto where to run (default auto: cuda if a GPU is visible, else cpu);
                             cuda:N (cuda:0, cuda:1, ...) runs on that GPU
      --input NAME=FILE.npy  take input NAME from a .npy file (repeatable). Inputs not
                             given are random: floats uniform in [-2, 2), integers in
                             [-100, 100] ([0, 100] for uint8), bool 50/50; an
                             input 'index' (index_add) is int64[shape[dim]] in range,
                             inputs 'cond' (where) and 'mask' (masked_select) are bool
      --matrix FILE.mtx      a Matrix Market file as the op's CSR inputs (indptr,
                             indices, values in --dtype; spmv); random inputs 'x' and
                             'y' then take the matrix's column and row counts
      --graph FILE           a graph file (edge list text, graph-tool .gt/.gt.gz, or
                             .mtx) as the CSR inputs indptr and indices of its
                             undirected simple graph (triangle_count, graph_orient)
      --attr NAME=VALUE      set attribute NAME (repeatable), e.g. --attr alpha=2
      --seed N               seed of the random inputs (default: a fresh one, printed)
      --check                also run OP on the CPU and compare element by element;
                             exit code 1 unless every output matches
      --out DIR              write each output as DIR/<output name>.npy (bfloat16 is
                             written as float32: NumPy has no bfloat16)
  bench [FLAGS]              time the benchmark workloads and the host cost of an
                             eager call (needs a GPU)
      --json FILE            also write the results as JSON (written atomically; rows keyed
                             by workload name, as the PyTorch side's JSON)
      --filter SUBSTR        only rows whose name contains SUBSTR
      --reps N               timed runs per workload; the median is reported (default 30)
      --warmup N             untimed runs before them (default 5)
      --calls N              back-to-back calls per host-cost row (default 10000)
      --sweep                instead, the sweep: several hundred cases per family
                             (sizes, rows, dims, k, dtypes, broadcasts, strided views)
                             for finding slow shapes; no host-cost rows
      --cases FILE           with --sweep: write the sweep's cases as JSON (for the
                             PyTorch twin, tools/bench_sweep_torch.py) and exit; no GPU
  tune                       the launch knobs KPS_TUNE can set (family.key, default,
                             what it sets) and the value each has in this process
  launch --nproc N -- CMD     N processes of CMD, each with RANK, WORLD_SIZE, LOCAL_RANK,
                             MASTER_ADDR, MASTER_PORT set as torchrun sets them (and
                             NCCL_NVLS_ENABLE=0); --port P, --addr A, --grace SECONDS
                             (after a rank fails, the others get SIGTERM, then SIGKILL)
  help                       this text

Flags take their value as "--flag VALUE" or "--flag=VALUE".
Exit codes: 0 success, 1 the command failed (a failing op call, --check mismatch, I/O,
a bad .npy file), 2 the command line is wrong (unknown command, flag, op, input or
attribute; a value that does not parse).
Files: inputs must be regular .npy files (or, for --matrix and --graph, matrix and graph files); outputs (--out, --json)
are written all or nothing, each to a temporary file beside its target and renamed over it at the end.
)";

// Usage errors (exit code 2) are told apart from failures of the command (exit code 1)
// by a payload, so every helper can return a plain absl::Status.
constexpr char kUsagePayload[] = "kps.cli/usage";

absl::Status UsageError(absl::string_view message) {
  absl::Status s = absl::InvalidArgumentError(message);
  s.SetPayload(kUsagePayload, absl::Cord("1"));
  return s;
}
bool IsUsageError(const absl::Status& s) { return s.GetPayload(kUsagePayload).has_value(); }

// The same status, marked as a usage error (exit code 2): for errors of the registry
// (an unknown op, attribute or input name) that come from what the user typed.
absl::Status AsUsageError(absl::Status s) {
  s.SetPayload(kUsagePayload, absl::Cord("1"));
  return s;
}

// Parses a decimal integer written the one plain way: digits only, a '-' first where T is
// signed (but not "-0"), no leading zero (010 could mean octal), no '+', no spaces, no
// 0x; false also when it does not fit T. absl::SimpleAtoi alone accepts " +7 ", and a
// command line that reads something other than what was typed is worse than one that
// refuses it.
template <typename T>
bool ParseDecimal(absl::string_view text, T* out) {
  absl::string_view digits = text;
  const bool negative = std::is_signed_v<T> && absl::ConsumePrefix(&digits, "-");
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  if (digits.size() > 1 && digits[0] == '0') return false;
  if (negative && digits == "0") return false;
  return absl::SimpleAtoi(text, out);  // the range check
}

// A float attribute value in decimal notation ("2", "-0.5", "1e-3", ".5") or one of
// inf, -inf, nan. Checked character by character before absl::SimpleAtod, which would
// also take surrounding spaces, a leading '+' and (where it falls back to strtod) hex.
bool ParseStrictDouble(absl::string_view text, double* out) {
  absl::string_view body = text;
  absl::ConsumePrefix(&body, "-");
  const std::string lower = absl::AsciiStrToLower(body);
  if (lower == "inf" || lower == "infinity" || lower == "nan") return absl::SimpleAtod(text, out);
  if (body.empty() || !std::all_of(body.begin(), body.end(), [](char c) {
        return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+';
      })) {
    return false;
  }
  // Signs only right after the exponent's e; a digit must come first ("e5" is no number).
  for (size_t i = 0; i < body.size(); ++i) {
    if ((body[i] == '-' || body[i] == '+') && (i == 0 || (body[i - 1] != 'e' && body[i - 1] != 'E'))) return false;
  }
  return absl::SimpleAtod(text, out);
}

// ---- flags -------------------------------------------------------------------------

struct FlagSpec {
  const char* name;  // without the leading "--"
  bool takes_value;
  bool repeatable;
};

class Flags {
 public:
  bool Has(absl::string_view name) const { return values_.count(std::string(name)) > 0; }
  // The value of a flag given once, or `fallback` when absent.
  std::string Get(absl::string_view name, absl::string_view fallback = "") const {
    auto it = values_.find(std::string(name));
    return it == values_.end() ? std::string(fallback) : it->second.front();
  }
  // Every value of a repeatable flag, in command-line order.
  std::vector<std::string> All(absl::string_view name) const {
    auto it = values_.find(std::string(name));
    return it == values_.end() ? std::vector<std::string>() : it->second;
  }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend absl::StatusOr<Flags> ParseFlags(absl::string_view, absl::Span<const std::string>,
                                          absl::Span<const FlagSpec>);
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

absl::StatusOr<Flags> ParseFlags(absl::string_view command, absl::Span<const std::string> args,
                                 absl::Span<const FlagSpec> specs) {
  Flags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      flags.positional_.push_back(arg);
      continue;
    }
    absl::string_view body = arg;
    if (!absl::ConsumePrefix(&body, "--")) {
      return UsageError(absl::StrCat("unknown flag '", arg, "' (flags start with --)"));
    }
    std::string name(body);
    std::optional<std::string> value;
    if (size_t eq = body.find('='); eq != absl::string_view::npos) {
      name = std::string(body.substr(0, eq));
      value = std::string(body.substr(eq + 1));
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : specs) {
      if (name == s.name) spec = &s;
    }
    if (spec == nullptr) {
      std::string msg = absl::StrCat("unknown flag '--", name, "'");
      const FlagSpec* best = nullptr;
      size_t best_distance = 3;  // suggest only near misses: a typo, not another flag
      for (const FlagSpec& s : specs) {
        size_t d = internal::EditDistance(name, s.name);
        if (d < best_distance) {
          best = &s;
          best_distance = d;
        }
      }
      if (best != nullptr) absl::StrAppend(&msg, "; did you mean '--", best->name, "'?");
      std::vector<std::string> names;
      for (const FlagSpec& s : specs) names.push_back(absl::StrCat("--", s.name));
      absl::StrAppend(&msg, " (", command, " takes ",
                      names.empty() ? std::string("no flags") : absl::StrJoin(names, " "), ")");
      return UsageError(msg);
    }
    if (!spec->takes_value) {
      if (value.has_value()) return UsageError(absl::StrCat("flag --", name, " takes no value"));
      value = "";
    } else if (!value.has_value()) {
      if (i + 1 >= args.size() || absl::StartsWith(args[i + 1], "--")) {
        return UsageError(absl::StrCat("flag --", name, " needs a value"));
      }
      value = args[++i];
    }
    std::vector<std::string>& slot = flags.values_[name];
    slot.push_back(*std::move(value));
    if (!spec->repeatable && slot.size() > 1) {
      return UsageError(absl::StrCat("flag --", name, " is given more than once"));
    }
  }
  return flags;
}

// Splits "NAME=VALUE" (of --input or --attr) at the first '='.
absl::StatusOr<std::pair<std::string, std::string>> SplitNameValue(absl::string_view flag,
                                                                    absl::string_view text) {
  size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return UsageError(absl::StrCat("--", flag, " '", text, "': expected NAME=",
                                   flag == "input" ? "FILE.npy" : "VALUE"));
  }
  return std::make_pair(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
}

absl::StatusOr<int> ParseIntFlag(const Flags& flags, absl::string_view name, int fallback, int min) {
  if (!flags.Has(name)) return fallback;
  int v;
  std::string text = flags.Get(name);
  if (!ParseDecimal(text, &v) || v < min) {
    return UsageError(
        absl::StrCat("--", name, " ", QuoteForMessage(text), ": expected a decimal integer >= ", min));
  }
  return v;
}

// ---- values ------------------------------------------------------------------------

// 16-bit floats convert to double through float (their one conversion to a wider type).
template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return static_cast<float>(v);
  } else {
    return static_cast<double>(v);
  }
}

// A CPU tensor of random values: floats uniform in [-2, 2) (both signs, never all zero,
// inside every dtype's range), integers in [-100, 100] ([0, 100] unsigned, so no
// wrap-around), bool 50/50.
absl::StatusOr<Tensor> RandomTensor(const Shape& shape, DataType dtype, std::mt19937_64& rng) {
  KPS_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(shape, dtype, DeviceType::kCpu));
  const int64_t n = t.numel();
  VisitDataType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    if constexpr (std::is_same_v<T, bool>) {
      std::bernoulli_distribution d(0.5);
      for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
    } else if constexpr (std::is_integral_v<T>) {
      std::uniform_int_distribution<int> d(std::is_signed_v<T> ? -100 : 0, 100);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(d(rng));
    } else if constexpr (std::is_same_v<T, double>) {
      std::uniform_real_distribution<double> d(-2.0, 2.0);
      for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
    } else {
      std::uniform_real_distribution<float> d(-2.0f, 2.0f);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(d(rng));
    }
  });
  return t;
}

// The first `max_count` elements of a contiguous host tensor, comma separated.
std::string FormatValues(const Tensor& host, int64_t max_count) {
  std::string s;
  const int64_t n = std::min(host.numel(), max_count);
  VisitDataType(host.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = host.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) s += ", ";
      if constexpr (std::is_same_v<T, bool>) {
        s += p[i] ? "true" : "false";
      } else if constexpr (std::is_integral_v<T>) {
        absl::StrAppend(&s, static_cast<int64_t>(p[i]));  // int8 would print as a char
      } else {
        absl::StrAppend(&s, absl::StrFormat("%.6g", ToDouble(p[i])));
      }
    }
  });
  if (host.numel() > n) s += ", ...";
  return s;
}

// What --check found for one output.
struct Comparison {
  int64_t mismatches = 0;
  double max_abs_err = 0;
  double max_rel_err = 0;
  int64_t first_bad = -1;
  double first_got = 0;
  double first_want = 0;
};

// Compares two contiguous host tensors of one dtype and shape element by element.
// NaN matches NaN (a kernel that propagates NaN the same way is right); infinities
// must match exactly.
Comparison Compare(const Tensor& got, const Tensor& want, Tolerance tol) {
  Comparison c;
  VisitDataType(got.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* g = got.data<T>();
    const T* w = want.data<T>();
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double a = ToDouble(g[i]);
      const double b = ToDouble(w[i]);
      double err = 0;
      bool ok;
      if constexpr (std::is_integral_v<T>) {
        ok = g[i] == w[i];  // exact, and without int64 -> double rounding
        err = std::fabs(a - b);
      } else if (std::isnan(a) || std::isnan(b)) {
        ok = std::isnan(a) && std::isnan(b);
        err = ok ? 0 : std::numeric_limits<double>::infinity();
      } else if (a == b) {
        ok = true;
      } else {
        err = std::fabs(a - b);
        ok = err <= tol.atol + tol.rtol * std::fabs(b);
      }
      const double rel = err == 0 ? 0 : (b != 0 ? err / std::fabs(b) : std::numeric_limits<double>::infinity());
      c.max_abs_err = std::max(c.max_abs_err, err);
      c.max_rel_err = std::max(c.max_rel_err, rel);
      if (!ok) {
        if (c.mismatches == 0) {
          c.first_bad = i;
          c.first_got = a;
          c.first_want = b;
        }
        ++c.mismatches;
      }
    }
  });
  return c;
}

// Reads the text of --attr NAME=TEXT as the type the schema gives attribute `def`. Numbers
// must read fully (ParseDecimal, ParseStrictDouble); a value that does not read is a
// usage error naming the op and the attribute.
absl::StatusOr<AttrValue> ParseAttrText(const std::string& op, const AttrDef& def, absl::string_view text) {
  const std::string where = absl::StrCat("--attr: op '", op, "': attribute '", def.name, "'");
  const auto bad = [&](absl::string_view what) {
    return UsageError(absl::StrCat(where, ": cannot read ", QuoteForMessage(text), " as ", AttrTypeName(def.type),
                                   " (", what, ")"));
  };
  switch (def.type) {
    case AttrType::kInt: {
      int64_t v;
      if (!ParseDecimal(text, &v)) return bad("a decimal integer in int64 range, e.g. -1");
      return AttrValue(v);
    }
    case AttrType::kInts: {
      std::vector<int64_t> values;
      for (absl::string_view part : absl::StrSplit(text, ',')) {
        int64_t v;
        if (!ParseDecimal(absl::StripAsciiWhitespace(part), &v)) {
          return bad(absl::StrCat("element ", QuoteForMessage(absl::StripAsciiWhitespace(part)),
                                  " is not a decimal integer in int64 range; write e.g. 0,-1"));
        }
        values.push_back(v);
      }
      return AttrValue(std::move(values));
    }
    case AttrType::kFloat: {
      double v;
      if (!ParseStrictDouble(text, &v)) return bad("a number such as 2, -0.5, 1e-3, inf or nan");
      return AttrValue(v);
    }
    default: {
      absl::StatusOr<AttrValue> v = ParseAttrValue(def.type, text);
      if (!v.ok()) return UsageError(absl::StrCat(where, ": ", v.status().message()));
      return v;
    }
  }
}

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// ---- commands ----------------------------------------------------------------------

void PrintRegistrationWarnings(std::ostream& err) {
  for (const absl::Status& s : OpRegistry::Global().registration_errors()) {
    err << "warning: an op registration failed: " << s.message() << "\n";
  }
  for (const absl::Status& s : KernelRegistry::Global().registration_errors()) {
    err << "warning: a kernel registration failed: " << s.message() << "\n";
  }
}

// ---- list --markdown: the op table of docs/ops.md ----------------------------------

// Text for one markdown table cell: '|' escaped, line breaks as spaces.
std::string MarkdownCell(absl::string_view text) {
  std::string s;
  for (char c : text) {
    if (c == '|') {
      s += "\\|";
    } else {
      s += (c == '\n' || c == '\r') ? ' ' : c;
    }
  }
  return s;
}

// Where `s` would end to keep its parentheses and backquotes balanced if cut at `at`:
// `at`, or the start of the group still open there (trailing spaces dropped).
size_t BalancedCut(const std::string& s, size_t at) {
  std::vector<size_t> open;
  bool quoted = false;
  size_t quote_at = 0;
  for (size_t i = 0; i < at && i < s.size(); ++i) {
    if (s[i] == '`') {
      quoted = !quoted;
      quote_at = i;
    } else if (!quoted && s[i] == '(') {
      open.push_back(i);
    } else if (!quoted && s[i] == ')' && !open.empty()) {
      open.pop_back();
    }
  }
  if (quoted) at = quote_at;
  if (!open.empty()) at = std::min(at, open.front());
  while (at > 0 && s[at - 1] == ' ') --at;
  return at;
}

// One line of the op table from an op's doc: its first sentence (up to a period followed
// by a space and a capital letter); past 140 characters, up to its first ':' or ';'
// outside parentheses, and failing that cut at a word with " ...". `kps describe` prints
// the whole doc.
std::string OneLineDoc(absl::string_view doc) {
  std::string s(absl::StripAsciiWhitespace(doc));
  for (size_t i = 0; i + 2 < s.size(); ++i) {
    if (s[i] == '.' && s[i + 1] == ' ' && absl::ascii_isupper(static_cast<unsigned char>(s[i + 2]))) {
      s.resize(i + 1);
      break;
    }
  }
  constexpr size_t kMax = 140;
  if (s.size() <= kMax) return s;
  int depth = 0;
  for (size_t i = 0; i < kMax; ++i) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0 && i >= 20 && (s[i] == ':' || s[i] == ';')) return s.substr(0, i);
  }
  const size_t space = s.rfind(' ', kMax - 4);
  s.resize(BalancedCut(s, space == std::string::npos ? kMax - 4 : space));
  return s + " ...";
}


// A set of dtypes (one bit per DataType): "all 10", "all but bool, u8" when at most two
// are missing, else the list in enum order.
std::string DataTypeSetText(unsigned bits) {
  std::vector<std::string> have, missing;
  for (int i = 0; i < kNumDataTypes; ++i) {
    (((bits >> i) & 1u) ? have : missing).emplace_back(ShortDataTypeName(static_cast<DataType>(i)));
  }
  if (missing.empty()) return absl::StrCat("all ", kNumDataTypes);
  if (missing.size() <= 2 && have.size() > missing.size()) return absl::StrCat("all but ", absl::StrJoin(missing, ", "));
  return absl::StrJoin(have, ", ");
}

// The registered (device, dtype) kernels of `schema`, devices with the same dtypes
// merged: "cpu, cuda: all 10". The dtype is the key argument's, named when it is not
// the first input ("(of out)" for generators).
std::string KernelsText(const OpSchema& schema) {
  unsigned bits[kNumDeviceTypes] = {};
  for (const auto& [device, dtype] : KernelRegistry::Global().RegisteredKeys(schema.name())) {
    bits[static_cast<int>(device)] |= 1u << static_cast<int>(dtype);
  }
  std::vector<std::string> parts;
  bool done[kNumDeviceTypes] = {};
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    if (bits[d] == 0 || done[d]) continue;
    std::vector<std::string> devices;
    for (int e = d; e < kNumDeviceTypes; ++e) {
      if (bits[e] == bits[d]) {
        devices.emplace_back(DeviceTypeName(static_cast<DeviceType>(e)));
        done[e] = true;
      }
    }
    parts.push_back(absl::StrCat(absl::StrJoin(devices, ", "), ": ", DataTypeSetText(bits[d])));
  }
  if (parts.empty()) return "none";
  std::string s = absl::StrJoin(parts, "; ");
  if (schema.inputs().empty() || schema.key_arg() != schema.inputs()[0].name) {
    absl::StrAppend(&s, " (of `", schema.key_arg(), "`)");
  }
  return s;
}

// The folder under ops/ that holds the registration ("reduce"), and the file's path from
// the repository root ("ops/reduce/reduce_op.cc"); both empty outside ops/.
std::pair<std::string, std::string> OpFamilyAndFile(const OpSchema& schema) {
  absl::string_view source = schema.source();
  if (size_t colon = source.rfind(':'); colon != absl::string_view::npos) source = source.substr(0, colon);
  const size_t at = source.rfind("/ops/");
  if (at == absl::string_view::npos) return {};
  const absl::string_view file = source.substr(at + 1);  // "ops/reduce/reduce_op.cc"
  const absl::string_view rest = file.substr(4);
  const size_t slash = rest.find('/');
  return {std::string(slash == absl::string_view::npos ? "ops" : rest.substr(0, slash)), std::string(file)};
}

// docs/ops.md: every registered op, grouped by the ops/ folder that registers it, one
// row each (name linked to its file, inputs, outputs, attributes, kernels, first line of
// the doc). Deterministic: it depends only on the registrations, so a test can compare
// it with the file in the source tree.
void PrintOpsMarkdown(const std::vector<const OpSchema*>& ops, std::ostream& out) {
  std::map<std::string, std::vector<std::pair<const OpSchema*, std::string>>> families;
  for (const OpSchema* op : ops) {
    auto [family, file] = OpFamilyAndFile(*op);
    families[family.empty() ? std::string("other") : family].emplace_back(op, file);
  }
  out << "# Ops\n\n"
      << "Generated by `build/kps list --markdown > docs/ops.md` from the registered schemas; "
         "do not edit (the `ops_table` test fails when this file and the registry differ).\n\n"
      << ops.size() << " ops. Dtypes: bool, i8, u8, i16, i32, i64, f16, bf16, f32, f64 (\"all 10\"); "
         "kernels are keyed by the first input's dtype unless another argument is named. "
         "Attributes read `name: type = default`; one without a default is required. "
         "`kps describe OP` prints an op's full documentation.\n";
  for (const auto& [family, members] : families) {
    out << "\n## " << family << "\n\n"
        << "| op | inputs | outputs | attributes | kernels | doc |\n"
        << "|---|---|---|---|---|---|\n";
    for (const auto& [op, file] : members) {
      std::vector<std::string> inputs, outputs, attrs;
      for (const ArgDef& a : op->inputs()) {
        inputs.push_back(absl::StrCat(a.name, a.optional ? "?" : "",
                                      a.dtype ? absl::StrCat(": ", ShortDataTypeName(*a.dtype)) : ""));
      }
      for (const ArgDef& a : op->outputs()) outputs.push_back(a.name);
      for (const AttrDef& a : op->attrs()) {
        attrs.push_back(absl::StrCat(a.name, ": ", AttrTypeName(a.type),
                                     a.required ? "" : absl::StrCat(" = ", AttrValueToString(a.default_value))));
      }
      const std::string name = absl::StrCat("`", op->name(), "`");
      if (inputs.empty()) inputs.push_back("none");
      if (outputs.empty()) outputs.push_back("none");
      out << "| " << (file.empty() ? name : absl::StrCat("[", name, "](../", file, ")")) << " | "
          << MarkdownCell(absl::StrJoin(inputs, ", ")) << " | " << MarkdownCell(absl::StrJoin(outputs, ", "))
          << " | " << MarkdownCell(absl::StrJoin(attrs, ", ")) << " | " << MarkdownCell(KernelsText(*op)) << " | "
          << MarkdownCell(OneLineDoc(op->doc())) << " |\n";
    }
  }
}

absl::Status CmdList(const Flags& flags, std::ostream& out, std::ostream& err) {
  if (!flags.positional().empty()) {
    return UsageError(absl::StrCat("list takes no arguments (got '", flags.positional()[0],
                                   "'); to see one op, use 'kps describe OP'"));
  }
  PrintRegistrationWarnings(err);
  const std::vector<const OpSchema*> ops = OpRegistry::Global().All();
  if (flags.Has("markdown")) {
    PrintOpsMarkdown(ops, out);
    return absl::OkStatus();
  }
  size_t width = 0;
  for (const OpSchema* op : ops) width = std::max(width, op->name().size());
  for (const OpSchema* op : ops) {
    auto keys = KernelRegistry::Global().RegisteredKeys(op->name());
    out << op->name() << std::string(width - op->name().size() + 2, ' ')
        << (keys.empty() ? std::string("(no kernels registered)") : KeysToString(keys)) << "\n";
  }
  out << ops.size() << (ops.size() == 1 ? " op" : " ops") << "\n";
  return absl::OkStatus();
}

// The knobs of registry/tuning.h: each key, its default, the value KPS_TUNE gives it here
// (with the entries it ignored), and what it sets.
absl::Status CmdTune(const Flags& flags, std::ostream& out) {
  if (!flags.positional().empty()) {
    return UsageError(absl::StrCat("tune takes no arguments (got '", flags.positional()[0], "')"));
  }
  const char* env = std::getenv("KPS_TUNE");
  const TuneSettings set = ParseTuneString(env != nullptr ? env : "");
  out << "KPS_TUNE=" << (env != nullptr ? QuoteForMessage(env) : std::string("(not set)")) << "\n";
  for (const std::string& problem : set.problems) out << "  ignored: " << problem << "\n";
  size_t width = 0;
  for (const TuneKeyInfo& k : TuneKeys()) width = std::max(width, k.name.size());
  for (const TuneKeyInfo& k : TuneKeys()) {
    out << k.name << std::string(width - k.name.size() + 2, ' ') << "default " << k.default_text;
    if (k.words.empty()) {
      if (auto it = set.ints.find(k.name); it != set.ints.end()) out << ", set to " << it->second;
    } else {
      if (auto it = set.words.find(k.name); it != set.words.end()) out << ", set to " << it->second;
      out << " (" << k.words << ")";
    }
    out << ": " << k.doc << "\n";
  }
  return absl::OkStatus();
}

absl::Status CmdDescribe(const Flags& flags, std::ostream& out) {
  if (flags.positional().size() != 1) {
    return UsageError("describe takes exactly one op name, e.g. 'kps describe add'");
  }
  absl::StatusOr<const OpSchema*> found = OpRegistry::Global().Lookup(flags.positional()[0]);
  if (!found.ok()) return AsUsageError(found.status());
  const OpSchema* schema = *found;
  out << schema->Describe();
  const auto keys = KernelRegistry::Global().RegisteredKeys(schema->name());
  out << "  registered kernels (device:dtype): " << (keys.empty() ? std::string("none") : KeysToString(keys))
      << "\n";
  // The schema's Kernels() list is a promise; say if the build does not keep it.
  std::vector<std::pair<DeviceType, DataType>> missing;
  for (DeviceType d : schema->declared_devices()) {
    for (DataType t : schema->declared_dtypes()) {
      if (std::find(keys.begin(), keys.end(), std::make_pair(d, t)) == keys.end()) missing.emplace_back(d, t);
    }
  }
  if (!missing.empty()) out << "  warning: declared but not registered: " << KeysToString(missing) << "\n";
  out << "  defined at " << schema->source() << "\n";
  return absl::OkStatus();
}

// Writes each output as DIR/<output name>.npy, all or nothing (WriteNpyFiles), creating
// DIR and missing parents first; if writing fails, the directories it created are removed
// again (only while empty), so a failed run leaves nothing new behind.
absl::Status WriteOutputs(const std::string& out_dir, const OpSchema& schema, const std::vector<Tensor>& outputs,
                          std::ostream& out) {
  namespace fs = std::filesystem;
  std::vector<fs::path> created;  // deepest first
  std::error_code ec;
  fs::path dir = fs::path(out_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "out/" names "out"
  for (fs::path p = dir; !p.empty() && !fs::exists(fs::symlink_status(p, ec)); p = p.parent_path()) {
    created.push_back(p);
    if (p == p.parent_path()) break;
  }
  const auto remove_created = [&] {
    for (const fs::path& p : created) ::rmdir(p.c_str());
  };
  fs::create_directories(out_dir, ec);
  if (ec) {
    remove_created();
    return absl::PermissionDeniedError(
        absl::StrCat("--out: cannot create directory ", QuoteForMessage(out_dir, 1024), ": ", ec.message()));
  }
  std::vector<NpyOutput> files;
  for (size_t i = 0; i < outputs.size(); ++i) {
    files.push_back({(fs::path(out_dir) / (schema.outputs()[i].name + ".npy")).string(), outputs[i]});
  }
  absl::Status s = WriteNpyFiles(files);
  if (!s.ok()) {
    remove_created();
    return absl::Status(s.code(), absl::StrCat("--out: ", s.message()));
  }
  for (const NpyOutput& f : files) {
    out << "wrote " << f.path
        << (f.tensor.dtype() == DataType::kBFloat16 ? " (bfloat16 written as float32)" : "") << "\n";
  }
  return absl::OkStatus();
}

// What `kps run` was asked, read from the command line before anything runs (so a typo
// costs nothing).
struct RunRequest {
  std::string op;
  Shape shape{1024};
  DataType dtype = DataType::kFloat32;
  std::optional<Device> device;  // empty: auto
  uint64_t seed = 0;
  std::map<std::string, std::string> input_files;             // input name -> .npy path
  std::string matrix_file;                                     // --matrix: the CSR inputs
  std::string graph_file;                                      // --graph: the CSR inputs
  std::vector<std::pair<std::string, std::string>> attr_texts;  // as given
  bool check = false;
  std::string out_dir;
};

using NamedValues = std::vector<std::pair<std::string, AttrValue>>;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Step 1: the flags, each parsed in full; every mistake is a usage error.
absl::StatusOr<RunRequest> ParseRunFlags(const Flags& flags) {
  if (flags.positional().size() != 1) {
    return UsageError("run takes exactly one op name, e.g. 'kps run add --shape 2,3'");
  }
  RunRequest r;
  r.op = flags.positional()[0];
  if (flags.Has("shape")) {
    auto s = ParseShape(flags.Get("shape"));
    if (!s.ok()) return UsageError(absl::StrCat("--shape: ", s.status().message()));
    r.shape = *s;
  }
  if (flags.Has("dtype")) {
    auto d = ParseDataType(flags.Get("dtype"));
    if (!d.ok()) return UsageError(absl::StrCat("--dtype: ", d.status().message()));
    r.dtype = *d;
  }
  const std::string device_text = flags.Get("device", "auto");
  if (absl::AsciiStrToLower(device_text) != "auto") {
    auto d = ParseDevice(device_text);
    if (!d.ok()) return UsageError(absl::StrCat("--device: ", d.status().message(), " (or auto)"));
    r.device = *d;
  }
  if (flags.Has("seed")) {
    if (!ParseDecimal(flags.Get("seed"), &r.seed)) {
      return UsageError(absl::StrCat("--seed ", QuoteForMessage(flags.Get("seed")),
                                     ": expected a decimal integer in [0, 2^64)"));
    }
  } else {
    r.seed = (static_cast<uint64_t>(std::random_device()()) << 32) | std::random_device()();
  }
  for (const std::string& text : flags.All("input")) {
    KPS_ASSIGN_OR_RETURN(auto nv, SplitNameValue("input", text));
    if (!r.input_files.emplace(nv.first, nv.second).second) {
      return UsageError(absl::StrCat("--input: input '", nv.first, "' is given twice"));
    }
  }
  r.matrix_file = flags.Get("matrix");
  if (flags.Has("matrix") && r.matrix_file.empty()) return UsageError("--matrix needs a Matrix Market file");
  r.graph_file = flags.Get("graph");
  if (flags.Has("graph") && r.graph_file.empty()) return UsageError("--graph needs a graph file");
  if (!r.matrix_file.empty() && !r.graph_file.empty()) {
    return UsageError("--matrix and --graph both give the CSR inputs");
  }
  const std::string csr_flag = r.matrix_file.empty() ? "--graph" : "--matrix";
  for (const char* csr : {"indptr", "indices", "values"}) {
    if ((!r.matrix_file.empty() || !r.graph_file.empty()) && r.input_files.count(csr) > 0) {
      return UsageError(absl::StrCat("--input ", csr, " and ", csr_flag, " both give input '", csr, "'"));
    }
  }
  for (const std::string& text : flags.All("attr")) {
    KPS_ASSIGN_OR_RETURN(auto nv, SplitNameValue("attr", text));
    r.attr_texts.push_back(std::move(nv));
  }
  r.check = flags.Has("check");
  r.out_dir = flags.Get("out");
  if (flags.Has("out") && r.out_dir.empty()) return UsageError("--out needs a directory");
  return r;
}

// Step 2: the attributes, typed by the schema, and the input names, checked before any
// file is read. A name the schema lacks is a usage error with exactly the message (and
// "did you mean") kps::Call gives the C++ API.
absl::StatusOr<NamedValues> ResolveRunArgs(const RunRequest& r, const OpSchema& schema) {
  NamedValues attrs;
  for (const auto& [name, text] : r.attr_texts) {
    const int i = schema.AttrIndex(name);
    if (i < 0) {
      Call trial(r.op);
      trial.SetAttr(name, AttrValue(std::string(text)));
      return AsUsageError(trial.Run().status());
    }
    for (const auto& [seen, value] : attrs) {
      if (seen == name) return UsageError(absl::StrCat("--attr: attribute '", name, "' is given twice"));
    }
    KPS_ASSIGN_OR_RETURN(AttrValue v, ParseAttrText(r.op, schema.attrs()[i], text));
    attrs.emplace_back(name, std::move(v));
  }
  if ((!r.matrix_file.empty() || !r.graph_file.empty()) &&
      (schema.InputIndex("indptr") < 0 || schema.InputIndex("indices") < 0)) {
    return UsageError(absl::StrCat(r.matrix_file.empty() ? "--graph" : "--matrix", ": op '", r.op,
                                   "' has no CSR inputs (indptr, indices, values)"));
  }
  for (const auto& [name, path] : r.input_files) {
    if (schema.InputIndex(name) < 0) {
      Call trial(r.op);
      trial.Input(name, Tensor());
      return AsUsageError(trial.Run().status());
    }
  }
  return attrs;
}

// Step 3: the device: --device, else the GPU when there is one.
// --device cuda:N makes GPU N current for the whole run.
absl::StatusOr<DeviceType> PickRunDevice(const RunRequest& r) {
  const Device device = r.device.value_or(CudaAvailable() ? DeviceType::kCuda : DeviceType::kCpu);
  if (device.type == DeviceType::kCuda && !CudaAvailable()) {
    return absl::FailedPreconditionError(
        "--device cuda: no CUDA GPU is visible to this process (no driver or no device); run on "
        "the CPU with --device cpu, or use --device auto to take the GPU only when there is one");
  }
  if (device.index >= 0) {
    const absl::Status exists = CheckCudaDevice(device.index);
    if (!exists.ok()) return absl::InvalidArgumentError(absl::StrCat("--device: ", exists.message()));
    KPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device.index), "cudaSetDevice");
  }
  return device.type;
}

// Step 4: the inputs on the host, in schema order: from files, else random (every name
// was checked in step 2).
absl::StatusOr<NamedTensors> MakeRunInputs(const RunRequest& r, const OpSchema& schema, const NamedValues& attrs,
                                           std::ostream& out) {
  std::mt19937_64 rng(r.seed);
  NamedTensors inputs;
  std::map<std::string, Tensor> csr;  // --matrix's inputs by name
  Shape x_shape = r.shape, y_shape = r.shape;
  if (!r.matrix_file.empty()) {
    KPS_ASSIGN_OR_RETURN(io::CsrMatrix a, io::ReadMatrixMarket(r.matrix_file));
    out << "  matrix " << a.rows << " x " << a.cols << ", " << a.indices.numel() << " entries"
        << (a.symmetric ? " (symmetric, both triangles)" : "") << " from " << r.matrix_file << "\n";
    csr["indptr"] = a.indptr;
    csr["indices"] = a.indices;
    if (a.values.defined() && schema.InputIndex("values") >= 0) {
      Call cast("cast");
      cast.Input("x", a.values).SetAttr("dtype", AttrValue(r.dtype));
      KPS_ASSIGN_OR_RETURN(csr["values"], cast.RunOne());
    }
    x_shape = Shape{a.cols};
    y_shape = Shape{a.rows};
  }
  if (!r.graph_file.empty()) {
    // The file's edges as the symmetric simple graph (graph_from_edges on the CPU).
    KPS_ASSIGN_OR_RETURN(io::EdgeList g, io::ReadGraph(r.graph_file));
    const auto edges = static_cast<int64_t>(g.src.size());
    KPS_ASSIGN_OR_RETURN(Tensor src, Tensor::FromVector(g.src, Shape{edges}));
    KPS_ASSIGN_OR_RETURN(Tensor dst, Tensor::FromVector(g.dst, Shape{edges}));
    if (g.num_vertices <= INT32_MAX) {  // int32 neighbour ids halve the bytes the graph ops read
      KPS_ASSIGN_OR_RETURN(src, Call("cast").Input("x", src).Attr("dtype", DataType::kInt32).RunOne());
      KPS_ASSIGN_OR_RETURN(dst, Call("cast").Input("x", dst).Attr("dtype", DataType::kInt32).RunOne());
    }
    KPS_ASSIGN_OR_RETURN(std::vector<Tensor> adj, Call("graph_from_edges").Input("src", src).Input("dst", dst)
                                                      .Attr("num_vertices", g.num_vertices).OnDevice(DeviceType::kCpu)
                                                      .Run());
    out << "  graph " << g.num_vertices << " vertices, " << edges << " edges in the file, " << adj[1].numel() / 2
        << " undirected edges without self loops and duplicates, from " << r.graph_file << "\n";
    csr["indptr"] = adj[0];
    csr["indices"] = adj[1];
    x_shape = y_shape = Shape{g.num_vertices};
  }
  for (const ArgDef& arg : schema.inputs()) {
    auto file = r.input_files.find(arg.name);
    auto from_matrix = csr.find(arg.name);
    if (from_matrix != csr.end()) {
      out << "  input " << arg.name << ": " << DataTypeName(from_matrix->second.dtype())
          << from_matrix->second.shape().ToString() << " from the " << (r.matrix_file.empty() ? "graph" : "matrix")
          << "\n";
      inputs.emplace_back(arg.name, from_matrix->second);
    } else if (!csr.empty() && (arg.name == "x" || arg.name == "y") && file == r.input_files.end()) {
      // Dense operands of a sparse op: x has the matrix's columns, y its rows.
      const Shape& shape = arg.name == "x" ? x_shape : y_shape;
      if (arg.optional) {
        out << "  input " << arg.name << ": not given (optional)\n";
        continue;
      }
      KPS_ASSIGN_OR_RETURN(Tensor t, RandomTensor(shape, r.dtype, rng));
      out << "  input " << arg.name << ": " << DataTypeName(r.dtype) << shape.ToString() << " random\n";
      inputs.emplace_back(arg.name, std::move(t));
    } else if (file != r.input_files.end()) {
      KPS_ASSIGN_OR_RETURN(Tensor t, ReadNpy(file->second));
      out << "  input " << arg.name << ": " << DataTypeName(t.dtype()) << t.shape().ToString() << " from "
          << file->second << "\n";
      inputs.emplace_back(arg.name, std::move(t));
    } else if (arg.optional) {
      out << "  input " << arg.name << ": not given (optional)\n";
    } else if (arg.name == "index" && schema.AttrIndex("dim") >= 0) {
      // Ops that select along `dim` (index_add): a valid int64 index, one entry per
      // position of dim (so a source of --shape fits), values in range.
      int64_t dim = 0;
      for (const auto& [name, value] : attrs) {
        if (name == "dim" && std::holds_alternative<int64_t>(value)) dim = std::get<int64_t>(value);
      }
      if (dim < 0) dim += r.shape.rank();
      const int64_t size = dim >= 0 && dim < r.shape.rank() ? r.shape[static_cast<int>(dim)] : 1;
      std::vector<int64_t> values(static_cast<size_t>(size));
      std::uniform_int_distribution<int64_t> pick(0, std::max<int64_t>(size - 1, 0));
      for (int64_t& v : values) v = pick(rng);
      KPS_ASSIGN_OR_RETURN(Tensor t, Tensor::FromVector<int64_t>(values, Shape{size}));
      out << "  input " << arg.name << ": int64[" << size << "] random in [0, " << size << ")\n";
      inputs.emplace_back(arg.name, std::move(t));
    } else {
      // Inputs of a fixed dtype (where's `cond`, masked_select's `mask`) keep it whatever
      // --dtype says.
      const DataType dt = arg.dtype.value_or(r.dtype);
      KPS_ASSIGN_OR_RETURN(Tensor t, RandomTensor(r.shape, dt, rng));
      out << "  input " << arg.name << ": " << DataTypeName(dt) << r.shape.ToString() << " random\n";
      inputs.emplace_back(arg.name, std::move(t));
    }
  }
  return inputs;
}

// Step 5: one call of `op` on `device`; `ms` gets its wall time, including waiting for
// the GPU.
absl::StatusOr<std::vector<Tensor>> RunOnce(const std::string& op, const NamedTensors& inputs,
                                            const NamedValues& attrs, DeviceType device, double* ms) {
  Call call(op);
  call.OnDevice(device);  // ops without inputs (fill, arange, uniform) run where asked
  for (const auto& [name, t] : inputs) {
    if (!t.defined() || device == DeviceType::kCpu) {
      call.Input(name, t);
    } else {
      KPS_ASSIGN_OR_RETURN(Tensor on_device, t.To(device));
      call.Input(name, on_device);
    }
  }
  for (const auto& [name, value] : attrs) call.SetAttr(name, value);
  if (device == DeviceType::kCuda) KPS_RETURN_IF_ERROR(Stream::Default(device).Synchronize());  // inputs copied
  const auto start = std::chrono::steady_clock::now();
  auto outs = call.Run();
  if (outs.ok()) KPS_RETURN_IF_ERROR(Stream::Default(device).Synchronize());
  *ms = MillisecondsSince(start);
  return outs;
}

// Step 6 (--check): each output against the CPU kernel's; what differs, or "" when all match.
absl::StatusOr<std::string> CheckAgainstCpu(const RunRequest& r, const OpSchema& schema, const NamedTensors& inputs,
                                            const NamedValues& attrs, DeviceType device,
                                            const std::vector<Tensor>& host_outputs, std::ostream& out) {
  double cpu_ms = 0;
  KPS_ASSIGN_OR_RETURN(std::vector<Tensor> want, RunOnce(r.op, inputs, attrs, DeviceType::kCpu, &cpu_ms));
  if (device == DeviceType::kCpu) {
    out << "check: the op ran on the CPU, so this compares the CPU kernel with a second run of itself\n";
  }
  std::string failure;
  for (size_t i = 0; i < host_outputs.size(); ++i) {
    const std::string& name = schema.outputs()[i].name;
    const Tensor& got = host_outputs[i];
    const Tensor& ref = want[i];
    if (got.dtype() != ref.dtype() || got.shape() != ref.shape()) {
      out << "check " << name << ": FAIL: " << DeviceTypeName(device) << " gave " << DataTypeName(got.dtype())
          << got.shape().ToString() << ", cpu gave " << DataTypeName(ref.dtype()) << ref.shape().ToString() << "\n";
      absl::StrAppend(&failure, failure.empty() ? "" : "; ", "output '", name, "' has another dtype or shape");
      continue;
    }
    const Tolerance tol = ToleranceFor(got.dtype());
    const Comparison c = Compare(got, ref, tol);
    out << absl::StrFormat("check %s against cpu: max abs err %g, max rel err %g, %d of %d elements outside ",
                           name, c.max_abs_err, c.max_rel_err, c.mismatches, got.numel())
        << (tol.rtol == 0 && tol.atol == 0 ? std::string("exact equality")
                                           : absl::StrFormat("atol %g + rtol %g", tol.atol, tol.rtol))
        << ": " << (c.mismatches == 0 ? "PASS" : "FAIL") << "\n";
    if (c.mismatches > 0) {
      out << absl::StrFormat("  first mismatch at flat index %d: got %.9g, want %.9g\n", c.first_bad,
                             c.first_got, c.first_want);
      absl::StrAppend(&failure, failure.empty() ? "" : "; ", "output '", name, "' differs from the CPU's in ",
                      c.mismatches, " of ", got.numel(), " elements");
    }
  }
  return failure;
}

absl::Status CmdRun(const Flags& flags, std::ostream& out) {
  KPS_ASSIGN_OR_RETURN(const RunRequest r, ParseRunFlags(flags));
  absl::StatusOr<const OpSchema*> found = OpRegistry::Global().Lookup(r.op);
  if (!found.ok()) return AsUsageError(found.status());
  const OpSchema& schema = **found;
  KPS_ASSIGN_OR_RETURN(const NamedValues attrs, ResolveRunArgs(r, schema));
  KPS_ASSIGN_OR_RETURN(const DeviceType device, PickRunDevice(r));

  out << "op " << r.op << " on " << DeviceTypeName(device) << ", seed " << r.seed << "\n";
  KPS_ASSIGN_OR_RETURN(const NamedTensors inputs, MakeRunInputs(r, schema, attrs, out));
  for (const auto& [name, value] : attrs) out << "  attr " << name << " = " << AttrValueToString(value) << "\n";

  double ms = 0;
  KPS_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, RunOnce(r.op, inputs, attrs, device, &ms));
  std::vector<Tensor> host_outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    KPS_ASSIGN_OR_RETURN(Tensor host, outputs[i].To(DeviceType::kCpu));
    out << "output " << schema.outputs()[i].name << ": " << DataTypeName(host.dtype()) << host.shape().ToString()
        << " on " << DeviceName(outputs[i].place()) << "\n  " << FormatValues(host, 8) << "\n";
    host_outputs.push_back(std::move(host));
  }
  // Wall clock of the whole call (validation, output allocation, kernel, waiting for it):
  // what a user of the eager API waits. A process's first call also pays one-time setup.
  out << absl::StrFormat("time: %.3f ms (one kps::Call on %s, wall clock, until the outputs are ready)\n", ms,
                         DeviceTypeName(device));

  std::string failure;
  if (r.check) {
    KPS_ASSIGN_OR_RETURN(failure, CheckAgainstCpu(r, schema, inputs, attrs, device, host_outputs, out));
  }
  // Written even when the check fails: the files are what one wants to look at then.
  if (!r.out_dir.empty()) KPS_RETURN_IF_ERROR(WriteOutputs(r.out_dir, schema, host_outputs, out));
  if (!failure.empty()) return absl::InternalError(absl::StrCat("--check FAILED: ", failure));
  return absl::OkStatus();
}

absl::Status CmdBench(const Flags& flags, std::ostream& out) {
  if (!flags.positional().empty()) {
    return UsageError(absl::StrCat("bench takes no arguments (got '", flags.positional()[0],
                                   "'); pick workloads with --filter"));
  }
  BenchOptions options;
  options.json_path = flags.Get("json");
  options.filter = flags.Get("filter");
  KPS_ASSIGN_OR_RETURN(options.reps, ParseIntFlag(flags, "reps", options.reps, 1));
  KPS_ASSIGN_OR_RETURN(options.warmup, ParseIntFlag(flags, "warmup", options.warmup, 0));
  KPS_ASSIGN_OR_RETURN(options.calls, ParseIntFlag(flags, "calls", options.calls, 1));
  options.sweep = flags.Has("sweep");
  const std::string cases = flags.Get("cases");
  if (!cases.empty()) {  // the sweep's case list, for the PyTorch twin: no GPU needed
    if (!options.sweep) return UsageError("--cases FILE writes the sweep's cases: give it with --sweep");
    absl::Status s = io::WriteFileAtomically(cases, WorkloadsJson(SweepWorkloads()));
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("--cases: ", s.message()));
    out << "wrote " << SweepWorkloads().size() << " sweep cases to " << cases << "\n";
    return absl::OkStatus();
  }
  return RunBench(options, out);
}

constexpr FlagSpec kListFlags[] = {{"markdown", false, false}};
constexpr FlagSpec kRunFlags[] = {
    {"shape", true, false}, {"dtype", true, false}, {"device", true, false}, {"input", true, true},
    {"attr", true, true},   {"seed", true, false},  {"check", false, false}, {"out", true, false},
    {"matrix", true, false}, {"graph", true, false},
};
constexpr FlagSpec kBenchFlags[] = {
    {"json", true, false}, {"filter", true, false}, {"reps", true, false},
    {"warmup", true, false}, {"calls", true, false}, {"sweep", false, false}, {"cases", true, false},
};

absl::Status Dispatch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::string& command = args[0];
  const absl::Span<const std::string> rest = absl::MakeConstSpan(args).subspan(1);
  if (command == "list") {
    KPS_ASSIGN_OR_RETURN(Flags flags, ParseFlags(command, rest, kListFlags));
    return CmdList(flags, out, err);
  }
  if (command == "describe") {
    KPS_ASSIGN_OR_RETURN(Flags flags, ParseFlags(command, rest, {}));
    return CmdDescribe(flags, out);
  }
  if (command == "run") {
    KPS_ASSIGN_OR_RETURN(Flags flags, ParseFlags(command, rest, kRunFlags));
    return CmdRun(flags, out);
  }
  if (command == "bench") {
    KPS_ASSIGN_OR_RETURN(Flags flags, ParseFlags(command, rest, kBenchFlags));
    return CmdBench(flags, out);
  }
  if (command == "tune") {
    KPS_ASSIGN_OR_RETURN(Flags flags, ParseFlags(command, rest, {}));
    return CmdTune(flags, out);
  }
  std::string msg = absl::StrCat("unknown command '", command, "'");
  // The closest command within two edits, the first listed on a tie.
  const char* closest = nullptr;
  int best = 3;
  for (const char* known : {"list", "describe", "run", "bench", "tune", "launch", "help"}) {
    const int d = internal::EditDistance(command, known);
    if (d < best) {
      best = d;
      closest = known;
    }
  }
  if (closest != nullptr) absl::StrAppend(&msg, "; did you mean '", closest, "'?");
  return UsageError(absl::StrCat(msg, " (commands: list, describe, run, bench, tune, launch, help)"));
}

}  // namespace

absl::StatusOr<Shape> ParseShape(absl::string_view text) {
  absl::string_view t = absl::StripAsciiWhitespace(text);
  const bool bracket = absl::ConsumePrefix(&t, "[");
  const bool paren = !bracket && absl::ConsumePrefix(&t, "(");
  if ((bracket && !absl::ConsumeSuffix(&t, "]")) || (paren && !absl::ConsumeSuffix(&t, ")"))) {
    return absl::InvalidArgumentError(absl::StrCat("unbalanced brackets in shape ", QuoteForMessage(text)));
  }
  t = absl::StripAsciiWhitespace(t);
  // A scalar. Built in place: GCC 12 warns (falsely) about moving an empty InlinedVector.
  if (t.empty()) return absl::StatusOr<Shape>(absl::in_place);
  std::vector<int64_t> dims;
  const std::vector<absl::string_view> groups = absl::StrSplit(t, ',');
  for (size_t g = 0; g < groups.size(); ++g) {
    const absl::string_view group = absl::StripAsciiWhitespace(groups[g]);
    if (group.empty() && g + 1 == groups.size() && g > 0) break;  // Python's "(5,)"
    // "0x10" reads as [0, 10] with 'x' as the separator, but as sixteen to anyone who
    // writes C: refused rather than guessed. ("4x0x2" is not ambiguous: a number does
    // not start after an 'x'.)
    if (absl::StartsWith(group, "0x")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dimension ", QuoteForMessage(group), " in shape ", QuoteForMessage(text),
          " reads as hexadecimal; dims are decimal: write 0,", group.substr(2), " for a zero dim then ",
          group.substr(2)));
    }
    for (absl::string_view part : absl::StrSplit(group, 'x')) {
      part = absl::StripAsciiWhitespace(part);
      int64_t d;
      if (!ParseDecimal(part, &d) || d < 0) {
        return absl::InvalidArgumentError(absl::StrCat("bad dimension ", QuoteForMessage(part), " in shape ",
                                                       QuoteForMessage(text),
                                                       "; expected non-negative decimal integers, e.g. 2,3"));
      }
      dims.push_back(d);
    }
  }
  // The project's one shape rule (dims >= 0, product with zero dims counted as 1 at most
  // 2^60), as for every other shape that enters KPS.
  KPS_RETURN_IF_ERROR(ValidateShape(absl::MakeConstSpan(dims), absl::StrCat("shape ", QuoteForMessage(text))));
  return Shape(dims);
}

Tolerance ToleranceFor(DataType dtype) {
  // Half the unit roundoff of each format is the floor; these leave room for a kernel
  // that computes in another order or with FMA (f16 has 11 significant bits, bf16 8).
  switch (dtype) {
    case DataType::kFloat16: return {1e-2, 1e-2};
    case DataType::kBFloat16: return {2e-2, 2e-2};
    case DataType::kFloat32: return {1e-5, 1e-5};
    case DataType::kFloat64: return {1e-12, 1e-12};
    default: return {0, 0};
  }
}

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    out << kUsage;
    return kExitUsage;  // no command is a usage error, for scripts; the text says what to do
  }
  // launch passes everything after "--" to its command, --help included.
  if (args[0] == "launch") return RunLaunch(args, out, err);
  const bool wants_help = args[0] == "help" || std::any_of(args.begin(), args.end(), [](const std::string& a) {
                            return a == "--help" || a == "-h";
                          });
  if (wants_help) {
    out << kUsage;
    return kExitOk;
  }
  absl::Status status;
  // The standard library reports failure to allocate (a huge --shape) only by throwing;
  // a command-line tool should say so, not abort.
  try {
    status = Dispatch(args, out, err);
  } catch (const std::exception& e) {
    status = absl::ResourceExhaustedError(absl::StrCat("unexpected failure: ", e.what()));
  }
  if (status.ok()) return kExitOk;
  err << "kps " << args[0] << ": " << status.message() << "\n";
  if (IsUsageError(status)) {
    err << "run 'kps help' for usage\n";
    return kExitUsage;
  }
  return kExitError;
}

absl::string_view ShortDataTypeName(DataType t) {
  switch (t) {
    case DataType::kBool: return "bool";
    case DataType::kInt8: return "i8";
    case DataType::kUInt8: return "u8";
    case DataType::kInt16: return "i16";
    case DataType::kInt32: return "i32";
    case DataType::kInt64: return "i64";
    case DataType::kFloat16: return "f16";
    case DataType::kBFloat16: return "bf16";
    case DataType::kFloat32: return "f32";
    case DataType::kFloat64: return "f64";
  }
  return "?";
}

}  // namespace cli
}  // namespace kps
