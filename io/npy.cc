#include "io/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "registry/checked_math.h"
#include "registry/shape.h"
#include "registry/status.h"

// .npy stores multi-byte values little-endian and this reader copies them verbatim.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "npy.cc assumes a little-endian host");

namespace kps {
namespace io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// Magic, two version bytes and a 2-byte (1.0) or 4-byte (2.0, 3.0) header length.
constexpr size_t kPreambleV1 = 10;
constexpr size_t kPreambleV2 = 12;
// NumPy pads the header so the data starts on a 64-byte boundary (aligned loads).
constexpr size_t kHeaderAlignment = 64;
// Paths are the user's own text, but may still hold control bytes; they are shown whole
// up to a length no real path reaches.
constexpr size_t kMaxPathInMessage = 1024;

std::string QuotePath(const std::string& path) { return QuoteForMessage(path, kMaxPathInMessage); }

absl::Status BadFile(const std::string& path, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("npy file ", QuotePath(path), ": ", problem));
}

// An errno-derived Status (NotFound for ENOENT, PermissionDenied for EACCES, ...) whose
// message is `what` followed by strerror.
absl::Status ErrnoError(int error_number, absl::string_view what, absl::string_view after = "") {
  return absl::Status(absl::ErrnoToStatusCode(error_number),
                      absl::StrCat(what, ": ", std::strerror(error_number), after));
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
      if (!Eat(':')) return Error(absl::StrCat("expected ':' after key ", QuoteForMessage(key)));
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
  // The header is file text: it is quoted and cut, never echoed whole (a header may be
  // a megabyte long or carry terminal escape sequences).
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("malformed header at character ", pos_, ": ", what,
                                                   " (header: ", QuoteForMessage(text_), ")"));
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
  // A non-negative decimal integer that fits int64 (digits only: a sign, a space or a
  // hex prefix stops it).
  bool ParseInt(int64_t* out) {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() && absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (MulOverflow(v, int64_t{10}, &v) || AddOverflow(v, int64_t{text_[pos_] - '0'}, &v)) return false;
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
        // Checked here, not after: a megabyte of "1," must not build a huge vector.
        if (v->tuple.size() == kMaxNpyRank) {
          return Error(absl::StrCat("the shape has more than ", kMaxNpyRank, " dimensions"));
        }
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
            "npy file ", QuotePath(path), ": big-endian dtype ", QuoteForMessage(descr),
            " is not supported; save it little-endian (arr.astype('<", code, "'))"));
      }
    }
  }
  return absl::UnimplementedError(absl::StrCat(
      "npy file ", QuotePath(path), ": unsupported dtype ", QuoteForMessage(descr),
      "; supported: |b1 |i1 |u1 <i2 <i4 <i8 <f2 <f4 <f8 (bool, int8, uint8, int16, int32, "
      "int64, float16, float32, float64)"));
}

// A C++ bool must hold exactly 0 or 1; NumPy never writes anything else, but a hand-made
// file might, and anything nonzero means true.
void NormalizeBools(Tensor& t) {
  if (t.dtype() != DataType::kBool) return;
  uint8_t* b = static_cast<uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0 ? 1 : 0;
}

// ---- writing -------------------------------------------------------------------------

// Closes a file descriptor on scope exit unless released (the error paths of the writer).
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Writes all of [data, data + size) to `fd`, through short writes and EINTR.
absl::Status WriteAll(int fd, const char* data, size_t size, const std::string& what) {
  while (size > 0) {
    // Chunks of at most 1 GiB: Linux writes at most about 2 GiB per call anyway.
    const ssize_t n = ::write(fd, data, std::min<size_t>(size, size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, what);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// The preamble and padded header np.save writes for a C-order array of `dims` and `descr`.
std::string EncodeHeader(absl::Span<const int64_t> dims, const std::string& descr) {
  std::string shape = absl::StrCat("(", absl::StrJoin(dims, ", "), dims.size() == 1 ? ",)" : ")");
  std::string header =
      absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Version 1.0 holds a header of up to 65535 bytes; only absurd ranks need 2.0.
  size_t preamble = kPreambleV1;
  int major = 1;
  if (header.size() + 1 + kPreambleV1 + kHeaderAlignment > 65535) {
    preamble = kPreambleV2;
    major = 2;
  }
  const size_t unpadded = preamble + header.size() + 1;  // +1: the terminating newline
  header.append((kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment, ' ');
  header.push_back('\n');
  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const size_t len = header.size();
  for (size_t i = 0; i < preamble - kMagicSize - 2; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  return out + header;
}

// The directory part of `path` ("." when it has none) and its last component.
std::pair<std::string, std::string> SplitPath(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// Creates a new, empty temporary file next to `target` (same directory, so rename() can
// move it over the target). O_EXCL|O_NOFOLLOW: an existing file or symlink of that name
// is never opened, so another user cannot redirect the write.
absl::StatusOr<int> CreateTempFile(const std::string& target, std::string* temp_path) {
  const auto [dir, base] = SplitPath(target);
  thread_local std::mt19937_64 rng(std::random_device{}());
  for (int attempt = 0;; ++attempt) {
    // The base name is cut so the temp name stays under NAME_MAX (255) with its suffix.
    *temp_path = absl::StrCat(dir, "/.", base.substr(0, 200), ".tmp-",
                              absl::StrFormat("%012x", rng() & 0xFFFFFFFFFFFFull));
    const int fd = ::open(temp_path->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno == EEXIST && attempt < 16) continue;  // a name clash: draw another
    return ErrnoError(errno, absl::StrCat("cannot write npy file ", QuotePath(target),
                                          ": cannot create a temporary file in ", QuotePath(dir)));
  }
}

// Makes a written temporary file durable and closes it, before it is renamed over its
// target: without the fsync a crash soon after could leave the new name on a file whose
// data never reached the disk; close() can report a deferred write error (NFS, quotas).
absl::Status SyncAndClose(FdCloser& fd, const std::string& what) {
  if (::fsync(fd.get()) != 0 && errno != EINVAL) return ErrnoError(errno, what);
  if (::close(fd.release()) != 0) return ErrnoError(errno, what);
  return absl::OkStatus();
}

// Writes `t` as a complete .npy file into the open, empty file `fd` and closes it.
// `target` names the file in errors.
absl::Status WriteNpyToFd(int fd, const std::string& target, const Tensor& t) {
  FdCloser fd_owner(fd);
  Tensor host = t;
  if (host.device() != DeviceType::kCpu || !host.is_contiguous()) {
    KPS_ASSIGN_OR_RETURN(host, t.To(DeviceType::kCpu));
  }
  const char* data = static_cast<const char*>(host.raw_data());
  size_t data_bytes = host.nbytes();
  std::vector<float> widened;
  if (host.dtype() == DataType::kBFloat16) {
    const bfloat16* src = host.data<bfloat16>();
    widened.resize(static_cast<size_t>(host.numel()));
    for (int64_t i = 0; i < host.numel(); ++i) widened[i] = __bfloat162float(src[i]);
    data = reinterpret_cast<const char*>(widened.data());
    data_bytes = widened.size() * sizeof(float);
  }
  const std::string what = absl::StrCat("writing npy file ", QuotePath(target));
  const std::string head = EncodeHeader(absl::MakeConstSpan(host.shape().dims()), NpyDescr(host.dtype()));
  KPS_RETURN_IF_ERROR(WriteAll(fd_owner.get(), head.data(), head.size(), what));
  if (data_bytes > 0) KPS_RETURN_IF_ERROR(WriteAll(fd_owner.get(), data, data_bytes, what));
  return SyncAndClose(fd_owner, what);
}

}  // namespace

std::string QuoteForMessage(absl::string_view text, size_t max_bytes) {
  const absl::string_view shown = text.substr(0, max_bytes);
  std::string out = "'";
  for (const char c : shown) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u >= 0x20 && u < 0x7F) {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, absl::StrFormat("\\x%02x", u));
    }
  }
  out.push_back('\'');
  if (shown.size() < text.size()) absl::StrAppend(&out, "... (", text.size(), " bytes)");
  return out;
}

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

absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view head, uint64_t file_size,
                                         const std::string& path) {
  // Preamble: magic, version, header length (2 bytes in 1.0, 4 bytes in 2.0 and 3.0).
  if (file_size < kPreambleV1 || head.size() < kPreambleV1) {
    return BadFile(path, absl::StrCat("too short to be an npy file (", file_size, " bytes)"));
  }
  if (std::memcmp(head.data(), kMagic, kMagicSize) != 0) {
    return BadFile(path, "bad magic: it does not start with \\x93NUMPY, so it is not an npy file");
  }
  const auto byte = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(head[i])); };
  const uint64_t major = byte(6);
  const uint64_t minor = byte(7);
  uint64_t header_len = 0;
  size_t preamble_size = 0;
  if (major == 1) {
    header_len = byte(8) | (byte(9) << 8);
    preamble_size = kPreambleV1;
  } else if (major == 2 || major == 3) {
    if (file_size < kPreambleV2 || head.size() < kPreambleV2) return BadFile(path, "truncated header length");
    header_len = byte(8) | (byte(9) << 8) | (byte(10) << 16) | (byte(11) << 24);
    preamble_size = kPreambleV2;
  } else {
    return absl::UnimplementedError(absl::StrCat("npy file ", QuotePath(path), ": format version ", major, ".",
                                                 minor, " is not supported (1.0, 2.0 and 3.0 are)"));
  }
  if (header_len > kMaxNpyHeaderBytes) {
    return BadFile(path, absl::StrCat("its header claims ", header_len, " bytes; this reader accepts at most ",
                                      kMaxNpyHeaderBytes, " (a real header is under 2 KB)"));
  }
  // Both terms are small now (preamble <= 12, header <= 1 MiB): the sum cannot wrap.
  const uint64_t data_offset = preamble_size + header_len;
  if (data_offset > file_size) {
    return BadFile(path, absl::StrCat("truncated header: it claims ", header_len, " bytes but the file has ",
                                      file_size - preamble_size, " after the preamble"));
  }
  if (head.size() < data_offset) {
    // The caller broke ParseNpyHeader's contract: not a property of the file.
    return absl::InternalError(absl::StrCat("npy file ", QuotePath(path), ": only ", head.size(),
                                            " bytes of its start were given to the header parser"));
  }
  const absl::string_view header = head.substr(preamble_size, header_len);

  std::string descr;
  bool fortran_order = false;
  NpyHeader h;
  absl::Status parsed = HeaderParser(header).Parse(&descr, &fortran_order, &h.dims);
  if (!parsed.ok()) return BadFile(path, parsed.message());
  KPS_ASSIGN_OR_RETURN(h.dtype, DataTypeFromDescr(path, descr));
  if (fortran_order) {
    return absl::UnimplementedError(absl::StrCat(
        "npy file ", QuotePath(path), ": Fortran order (column-major) is not supported; save a C-order "
        "array (np.ascontiguousarray(arr))"));
  }
  // The project's one shape rule: a zero dim does not excuse the others (their product
  // sizes the strides), so (0, 2^62, 2^62) is refused like (2^62, 2^62, 0).
  KPS_RETURN_IF_ERROR(ValidateShape(absl::MakeConstSpan(h.dims), absl::StrCat("npy file ", QuotePath(path))));
  int64_t numel = 1;
  for (int64_t d : h.dims) {
    if (MulOverflow(numel, d, &numel)) {  // cannot happen after ValidateShape; kept as the guard
      return BadFile(path, absl::StrCat("shape ", DimsToString(h.dims), " is too large"));
    }
  }
  int64_t data_bytes = 0;
  if (MulOverflow(numel, static_cast<int64_t>(DataTypeSize(h.dtype)), &data_bytes)) {
    return BadFile(path, absl::StrCat("shape ", DimsToString(h.dims), " is too large"));
  }
  const uint64_t have = file_size - data_offset;
  if (have < static_cast<uint64_t>(data_bytes)) {
    return BadFile(path, absl::StrCat("truncated data: shape ", DimsToString(h.dims), " of ", QuoteForMessage(descr),
                                      " needs ", data_bytes, " bytes but the file has ", have));
  }
  if (have > static_cast<uint64_t>(data_bytes)) {
    // More bytes than the header accounts for: the header is wrong, or this is not one
    // array (np.savez writes .npz, a zip of arrays).
    return BadFile(path, absl::StrCat("has ", have, " bytes of data but shape ", DimsToString(h.dims), " of ",
                                      QuoteForMessage(descr), " needs ", data_bytes));
  }
  h.numel = numel;
  h.data_offset = static_cast<size_t>(data_offset);
  h.data_bytes = static_cast<size_t>(data_bytes);
  return h;
}

absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes, const std::string& name_for_errors) {
  KPS_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(bytes, bytes.size(), name_for_errors));
  KPS_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(Shape(h.dims), h.dtype, DeviceType::kCpu));
  if (h.data_bytes > 0) std::memcpy(t.raw_data(), bytes.data() + h.data_offset, h.data_bytes);
  NormalizeBools(t);
  return t;
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  // O_NONBLOCK: opening a FIFO that has no writer would otherwise wait forever; the
  // fstat below then refuses it. (It changes nothing for a regular file.)
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("cannot open npy file ", QuotePath(path)));
  FdCloser closer(fd);
  // The checks look at the opened file, not the name, so nothing can swap it in between.
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(errno, absl::StrCat("cannot stat npy file ", QuotePath(path)));
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "is a directory"
                       : S_ISFIFO(st.st_mode) ? "is not a regular file (fifo)"
                       : S_ISCHR(st.st_mode)  ? "is not a regular file (character device)"
                       : S_ISBLK(st.st_mode)  ? "is not a regular file (block device)"
                       : S_ISSOCK(st.st_mode) ? "is not a regular file (socket)"
                                              : "is not a regular file";
    return absl::InvalidArgumentError(absl::StrCat("npy file ", QuotePath(path), ": ", kind));
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);

  // Reads up to `size` bytes at `dst`; fewer only at end of file.
  const auto read_some = [&](char* dst, size_t size) -> absl::StatusOr<size_t> {
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::read(fd, dst + done, std::min<size_t>(size - done, size_t{1} << 30));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoError(errno, absl::StrCat("reading npy file ", QuotePath(path)));
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    return done;
  };

  // The preamble and the longest header allowed, in one read; ParseNpyHeader checks
  // every length in it against the file size.
  std::string head(static_cast<size_t>(std::min<uint64_t>(file_size, kPreambleV2 + kMaxNpyHeaderBytes)), '\0');
  KPS_ASSIGN_OR_RETURN(size_t got, read_some(head.data(), head.size()));
  if (got < head.size()) return BadFile(path, "it became shorter while being read");
  KPS_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(head, file_size, path));

  KPS_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(Shape(h.dims), h.dtype, DeviceType::kCpu));
  char* dst = static_cast<char*>(t.raw_data());
  // Part of the data may already be in `head`; the rest goes straight into the tensor.
  const size_t in_head = std::min(h.data_bytes, head.size() - std::min(head.size(), h.data_offset));
  if (in_head > 0) std::memcpy(dst, head.data() + h.data_offset, in_head);
  if (h.data_bytes > in_head) {
    KPS_ASSIGN_OR_RETURN(size_t rest, read_some(dst + in_head, h.data_bytes - in_head));
    if (rest < h.data_bytes - in_head) return BadFile(path, "it became shorter while being read");
  }
  NormalizeBools(t);
  return t;
}

absl::Status WriteNpyFiles(absl::Span<const NpyOutput> outputs) {
  // 1. Check every target before writing anything, so the common failures (a directory
  //    in the way, a missing or unreadable directory, a name given twice) leave nothing.
  std::set<std::string> seen;
  for (const NpyOutput& o : outputs) {
    if (!o.tensor.defined()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot write npy file ", QuotePath(o.path), ": undefined tensor"));
    }
    if (o.path.empty() || o.path.back() == '/') {
      return absl::InvalidArgumentError(absl::StrCat("cannot write npy file ", QuotePath(o.path), ": not a file name"));
    }
    if (!seen.insert(o.path).second) {
      return absl::InvalidArgumentError(absl::StrCat("npy file ", QuotePath(o.path), " is to be written twice"));
    }
    struct stat st;
    if (::lstat(o.path.c_str(), &st) == 0) {
      // rename() cannot replace a directory with a file; anything else (a file, a
      // symlink, a FIFO) is replaced as a directory entry.
      if (S_ISDIR(st.st_mode)) {
        return ErrnoError(EISDIR, absl::StrCat("cannot write npy file ", QuotePath(o.path)));
      }
    } else if (errno != ENOENT) {
      return ErrnoError(errno, absl::StrCat("cannot write npy file ", QuotePath(o.path)));
    }
  }

  // 2. Write every temporary file in full. On failure remove all of them.
  std::vector<std::string> temps;
  const auto remove_temps = [&](size_t from) {
    for (size_t i = from; i < temps.size(); ++i) ::unlink(temps[i].c_str());
  };
  for (const NpyOutput& o : outputs) {
    std::string temp;
    absl::StatusOr<int> fd = CreateTempFile(o.path, &temp);
    if (!fd.ok()) {
      remove_temps(0);
      return fd.status();
    }
    temps.push_back(temp);
    absl::Status s = WriteNpyToFd(*fd, o.path, o.tensor);
    if (!s.ok()) {
      remove_temps(0);
      return s;
    }
  }

  // 3. Rename each over its target: each rename is atomic (a reader sees the old file or
  //    the new one, never a part), but the set of renames is not.
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (::rename(temps[i].c_str(), outputs[i].path.c_str()) != 0) {
      const int error_number = errno;
      remove_temps(i);
      std::string after;
      if (i > 0) {
        std::vector<std::string> done;
        for (size_t j = 0; j < i; ++j) done.push_back(QuotePath(outputs[j].path));
        after = absl::StrCat("; already replaced before this failure: ", absl::StrJoin(done, ", "));
      }
      return ErrnoError(error_number,
                        absl::StrCat("cannot write npy file ", QuotePath(outputs[i].path), " (renaming ",
                                     QuotePath(temps[i]), " over it)"),
                        after);
    }
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return ErrnoError(EISDIR, absl::StrCat("cannot write ", QuotePath(path)));
  }
  std::string temp;
  KPS_ASSIGN_OR_RETURN(int fd, CreateTempFile(path, &temp));
  FdCloser fd_owner(fd);
  const std::string what = absl::StrCat("writing ", QuotePath(path));
  absl::Status s = WriteAll(fd_owner.get(), contents.data(), contents.size(), what);
  if (s.ok()) s = SyncAndClose(fd_owner, what);
  if (s.ok() && ::rename(temp.c_str(), path.c_str()) != 0) s = ErrnoError(errno, what);
  if (!s.ok()) ::unlink(temp.c_str());
  return s;
}

absl::Status WriteNpy(const std::string& path, const Tensor& t) {
  const NpyOutput one[] = {{path, t}};
  return WriteNpyFiles(one);
}

}  // namespace io
}  // namespace kps
