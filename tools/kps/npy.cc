#include "tools/kps/npy.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "registry/status.h"

// .npy stores multi-byte values little-endian and this reader copies them verbatim.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "npy.cc assumes a little-endian host");

namespace kps {
namespace cli {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// NumPy pads the header so the data starts on a 64-byte boundary (aligned loads).
constexpr size_t kHeaderAlignment = 64;

absl::Status BadFile(const std::string& path, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("npy file '", path, "': ", problem));
}

// One value of the header dictionary: a string, a bool, or a tuple of integers.
struct HeaderValue {
  enum Kind { kString, kBool, kTuple } kind = kString;
  std::string str;
  bool boolean = false;
  std::vector<int64_t> tuple;
};

// Parses the Python dict literal NumPy writes, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// A hand-written parser: the grammar is tiny and the tool must not pull in a Python.
class HeaderParser {
 public:
  explicit HeaderParser(absl::string_view text) : text_(text) {}

  // Fills descr, fortran_order and shape; errors say what was expected where.
  absl::Status Parse(std::string* descr, bool* fortran_order, std::vector<int64_t>* shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpace();
    if (!Eat('{')) return Error("expected '{'");
    while (true) {
      SkipSpace();
      if (Eat('}')) break;
      std::string key;
      if (!ParseString(&key)) return Error("expected a quoted key");
      SkipSpace();
      if (!Eat(':')) return Error(absl::StrCat("expected ':' after key '", key, "'"));
      SkipSpace();
      HeaderValue v;
      absl::Status s = ParseValue(&v);
      if (!s.ok()) return s;
      if (key == "descr") {
        if (v.kind != HeaderValue::kString) return Error("'descr' is not a string");
        *descr = v.str;
        have_descr = true;
      } else if (key == "fortran_order") {
        if (v.kind != HeaderValue::kBool) return Error("'fortran_order' is not True or False");
        *fortran_order = v.boolean;
        have_order = true;
      } else if (key == "shape") {
        if (v.kind != HeaderValue::kTuple) return Error("'shape' is not a tuple of integers");
        *shape = v.tuple;
        have_shape = true;
      }  // Other keys: ignored, as NumPy's reader would refuse them but they do no harm.
      SkipSpace();
      if (Eat(',')) continue;
      if (Eat('}')) break;
      return Error("expected ',' or '}'");
    }
    if (!have_descr || !have_order || !have_shape) {
      return Error("the header must have the keys 'descr', 'fortran_order' and 'shape'");
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed header at character ", pos_, ": ", what, " (header: ", text_, ")"));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool EatWord(absl::string_view w) {
    if (text_.substr(pos_, w.size()) == w) {
      pos_ += w.size();
      return true;
    }
    return false;
  }
  bool ParseString(std::string* out) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return false;
    const char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == absl::string_view::npos) return false;
    *out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return true;
  }
  bool ParseInt(int64_t* out) {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() && absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const int digit = text_[pos_] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return false;  // overflow
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) return false;
    Eat('L');  // Python 2 wrote long integers as 3L.
    *out = v;
    return true;
  }
  absl::Status ParseValue(HeaderValue* v) {
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      v->kind = HeaderValue::kString;
      if (!ParseString(&v->str)) return Error("unterminated string");
      return absl::OkStatus();
    }
    if (EatWord("True")) {
      v->kind = HeaderValue::kBool;
      v->boolean = true;
      return absl::OkStatus();
    }
    if (EatWord("False")) {
      v->kind = HeaderValue::kBool;
      v->boolean = false;
      return absl::OkStatus();
    }
    if (Eat('(') || Eat('[')) {
      const char close = text_[pos_ - 1] == '(' ? ')' : ']';
      v->kind = HeaderValue::kTuple;
      while (true) {
        SkipSpace();
        if (Eat(close)) return absl::OkStatus();
        int64_t d;
        if (!ParseInt(&d)) return Error("expected a non-negative integer dimension");
        v->tuple.push_back(d);
        SkipSpace();
        if (Eat(',')) continue;
        if (Eat(close)) return absl::OkStatus();
        return Error("expected ',' or the end of the shape");
      }
    }
    return Error("expected a string, True, False or a tuple");
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// Maps a NumPy descr to a KPS dtype. One-byte types have no byte order ('|'); others
// must be little-endian ('<', or '=' which NumPy uses for native order).
absl::StatusOr<DataType> DataTypeFromDescr(const std::string& path, const std::string& descr) {
  static const struct {
    const char* code;  // descr without its byte-order character
    DataType dtype;
  } kCodes[] = {
      {"b1", DataType::kBool},    {"i1", DataType::kInt8},    {"u1", DataType::kUInt8},
      {"i2", DataType::kInt16},   {"i4", DataType::kInt32},   {"i8", DataType::kInt64},
      {"f2", DataType::kFloat16}, {"f4", DataType::kFloat32}, {"f8", DataType::kFloat64},
  };
  if (descr.size() == 3) {
    const char order = descr[0];
    const std::string code = descr.substr(1);
    for (const auto& c : kCodes) {
      if (code != c.code) continue;
      const bool one_byte = DataTypeSize(c.dtype) == 1;
      if (order == '<' || order == '|' || order == '=' || (one_byte && order == '>')) return c.dtype;
      if (order == '>') {
        return absl::UnimplementedError(absl::StrCat(
            "npy file '", path, "': big-endian dtype '", descr,
            "' is not supported; save it little-endian (arr.astype('<", code, "'))"));
      }
    }
  }
  return absl::UnimplementedError(absl::StrCat(
      "npy file '", path, "': unsupported dtype '", descr,
      "'; supported: |b1 |i1 |u1 <i2 <i4 <i8 <f2 <f4 <f8 (bool, int8, uint8, int16, int32, "
      "int64, float16, float32, float64)"));
}

}  // namespace

std::string NpyDescr(DataType dtype) {
  switch (dtype) {
    case DataType::kBool: return "|b1";
    case DataType::kInt8: return "|i1";
    case DataType::kUInt8: return "|u1";
    case DataType::kInt16: return "<i2";
    case DataType::kInt32: return "<i4";
    case DataType::kInt64: return "<i8";
    case DataType::kFloat16: return "<f2";
    case DataType::kBFloat16: return "<f4";  // widened: NumPy has no bfloat16
    case DataType::kFloat32: return "<f4";
    case DataType::kFloat64: return "<f8";
  }
  return "?";
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open npy file '", path, "': ", std::strerror(errno)));
  }
  in.seekg(0, std::ios::end);
  const std::streamoff file_size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (file_size < 0) return BadFile(path, "cannot determine its size");

  // Preamble: magic, version, header length (2 bytes in 1.0, 4 bytes in 2.0 and 3.0).
  char preamble[12];
  const std::streamoff min_preamble = kMagicSize + 4;
  if (file_size < min_preamble || !in.read(preamble, min_preamble)) {
    return BadFile(path, absl::StrCat("too short to be an npy file (", file_size, " bytes)"));
  }
  if (std::memcmp(preamble, kMagic, kMagicSize) != 0) {
    return BadFile(path, "bad magic: it does not start with \\x93NUMPY, so it is not an npy file");
  }
  const int major = static_cast<unsigned char>(preamble[6]);
  const int minor = static_cast<unsigned char>(preamble[7]);
  size_t header_len = 0;
  size_t preamble_size = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(preamble[8]) | (static_cast<unsigned char>(preamble[9]) << 8);
    preamble_size = 10;
  } else if (major == 2 || major == 3) {
    if (file_size < 12 || !in.read(preamble + 10, 2)) return BadFile(path, "truncated header length");
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(preamble[8 + i]);
    preamble_size = 12;
  } else {
    return absl::UnimplementedError(absl::StrCat("npy file '", path, "': format version ", major, ".",
                                                 minor, " is not supported (1.0, 2.0 and 3.0 are)"));
  }
  if (static_cast<std::streamoff>(preamble_size + header_len) > file_size) {
    return BadFile(path, absl::StrCat("truncated header: it claims ", header_len, " bytes but the file has ",
                                      file_size - static_cast<std::streamoff>(preamble_size), " after the preamble"));
  }
  std::string header(header_len, '\0');
  if (header_len > 0 && !in.read(&header[0], static_cast<std::streamsize>(header_len))) {
    return BadFile(path, "cannot read the header");
  }

  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> dims;
  absl::Status parsed = HeaderParser(header).Parse(&descr, &fortran_order, &dims);
  if (!parsed.ok()) return BadFile(path, parsed.message());
  KPS_ASSIGN_OR_RETURN(DataType dtype, DataTypeFromDescr(path, descr));
  if (fortran_order) {
    return absl::UnimplementedError(absl::StrCat(
        "npy file '", path, "': Fortran order (column-major) is not supported; save a C-order "
        "array (np.ascontiguousarray(arr))"));
  }

  // Element count, guarding against a header whose shape overflows 64 bits.
  int64_t numel = 1;
  const int64_t max_elems = std::numeric_limits<int64_t>::max() / 8;
  for (int64_t d : dims) {
    if (d != 0 && numel > max_elems / d) {
      return BadFile(path, absl::StrCat("shape ", DimsToString(dims), " is too large"));
    }
    numel *= d;
  }
  const std::streamoff data_bytes = static_cast<std::streamoff>(numel) *
                                    static_cast<std::streamoff>(DataTypeSize(dtype));
  const std::streamoff have = file_size - static_cast<std::streamoff>(preamble_size + header_len);
  if (have < data_bytes) {
    return BadFile(path, absl::StrCat("truncated data: shape ", DimsToString(dims), " of ", descr, " needs ",
                                      data_bytes, " bytes but the file has ", have));
  }
  if (have > data_bytes) {
    // More bytes than the header accounts for: the header is wrong, or this is not one
    // array (np.savez writes .npz, a zip of arrays).
    return BadFile(path, absl::StrCat("has ", have, " bytes of data but shape ", DimsToString(dims), " of ",
                                      descr, " needs ", data_bytes));
  }

  KPS_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(Shape(dims), dtype, DeviceType::kCpu));
  if (data_bytes > 0 && !in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(data_bytes))) {
    return BadFile(path, "cannot read the data");
  }
  if (dtype == DataType::kBool) {
    // A C++ bool must hold exactly 0 or 1; NumPy never writes anything else, but a
    // hand-made file might, and anything nonzero means true.
    uint8_t* b = static_cast<uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < numel; ++i) b[i] = b[i] != 0 ? 1 : 0;
  }
  return t;
}

absl::Status WriteNpy(const std::string& path, const Tensor& t) {
  if (!t.defined()) return absl::InvalidArgumentError(absl::StrCat("WriteNpy('", path, "'): undefined tensor"));
  Tensor host = t;
  if (host.device() != DeviceType::kCpu || !host.is_contiguous()) {
    KPS_ASSIGN_OR_RETURN(host, t.To(DeviceType::kCpu));
  }
  const char* data = static_cast<const char*>(host.raw_data());
  size_t data_bytes = host.nbytes();
  std::vector<float> widened;
  if (host.dtype() == DataType::kBFloat16) {
    const bfloat16* src = host.data<bfloat16>();
    widened.resize(host.numel());
    for (int64_t i = 0; i < host.numel(); ++i) widened[i] = __bfloat162float(src[i]);
    data = reinterpret_cast<const char*>(widened.data());
    data_bytes = widened.size() * sizeof(float);
  }

  const auto& dims = host.shape().dims();
  std::string shape = absl::StrCat("(", absl::StrJoin(dims, ", "), dims.size() == 1 ? ",)" : ")");
  std::string header = absl::StrCat("{'descr': '", NpyDescr(host.dtype()),
                                    "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Version 1.0 holds a header of up to 65535 bytes; only absurd ranks need 2.0.
  size_t preamble = 10;
  int major = 1;
  if (header.size() + 1 + kMagicSize + 4 + kHeaderAlignment > 65535) {
    preamble = 12;
    major = 2;
  }
  const size_t unpadded = preamble + header.size() + 1;  // +1: the terminating newline
  header.append((kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment, ' ');
  header.push_back('\n');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write npy file '", path, "': ", std::strerror(errno)));
  }
  std::string pre(kMagic, kMagicSize);
  pre.push_back(static_cast<char>(major));
  pre.push_back(0);
  const size_t len = header.size();
  for (size_t i = 0; i < preamble - kMagicSize - 2; ++i) pre.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  out.write(pre.data(), static_cast<std::streamsize>(pre.size()));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (data_bytes > 0) out.write(data, static_cast<std::streamsize>(data_bytes));
  out.close();
  if (!out) {
    return absl::DataLossError(absl::StrCat("writing npy file '", path, "' failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace cli
}  // namespace kps
