#include "io/graph.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "io/mtx.h"
#include "io/npy.h"
#include "registry/status.h"

namespace kps {
namespace io {
namespace {

// Paths are the user's own text, shown whole up to a length no real path reaches; text
// from inside a file is cut shorter (QuoteForMessage's default).
constexpr size_t kMaxPathInMessage = 1024;

std::string QuotePath(const std::string& path) { return QuoteForMessage(path, kMaxPathInMessage); }

// ---- text edge lists ------------------------------------------------------------------

absl::Status BadLine(const std::string& name, int64_t line, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("edge list file ", QuotePath(name), ", line ", line, ": ", problem));
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Splits `line` (no line end) at runs of spaces and tabs. At most `max_fields` + 1 fields
// are returned: one past the most any line may have is enough to say it has too many.
std::vector<absl::string_view> Fields(absl::string_view line, size_t max_fields) {
  std::vector<absl::string_view> fields;
  size_t i = 0;
  while (fields.size() <= max_fields) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    if (i == line.size()) break;
    const size_t start = i;
    while (i < line.size() && !IsBlank(line[i])) ++i;
    fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

// Parses a vertex id: a decimal integer in [0, kMaxVertexId]. `what` says which field.
absl::Status ParseVertexId(absl::string_view field, const std::string& name, int64_t line, absl::string_view what,
                           int64_t* id) {
  const auto all_digits = [](absl::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(c); });
  };
  if (field[0] == '-' && all_digits(field.substr(1))) {
    return BadLine(name, line, absl::StrCat(what, " ", QuoteForMessage(field), " is negative; vertex ids start at 0"));
  }
  if (!all_digits(field)) {
    return BadLine(name, line,
                   absl::StrCat(what, " ", QuoteForMessage(field), " is not a vertex id (a non-negative integer)"));
  }
  // All digits but past int64_t is out of range, not malformed.
  if (!absl::SimpleAtoi(field, id) || *id > kMaxVertexId) {
    return BadLine(name, line,
                   absl::StrCat(what, " ", QuoteForMessage(field), " is larger than the largest vertex id ",
                                kMaxVertexId, " (2^62)"));
  }
  return absl::OkStatus();
}

// The headers a comment line may be: `# vertices N`, `# directed`, `# undirected`.
struct Headers {
  int64_t vertices = -1, vertices_line = 0;
  bool directed = false;
};

absl::Status ParseHeader(absl::string_view comment, const std::string& name, int64_t line, Headers* headers) {
  if (comment.empty() || comment[0] != '#') return absl::OkStatus();
  const std::vector<absl::string_view> words = Fields(comment.substr(1), 2);
  if (words.size() == 1 && words[0] == "directed") headers->directed = true;
  if (words.size() == 1 && words[0] == "undirected") headers->directed = false;
  if (words.size() != 2 || words[0] != "vertices") return absl::OkStatus();
  int64_t n = 0;
  if (!absl::SimpleAtoi(words[1], &n) || n < 0 || n > kMaxVertexId + 1) {
    return BadLine(name, line,
                   absl::StrCat("header ", QuoteForMessage(comment), " does not give a vertex count in [0, ",
                                kMaxVertexId + 1, "]"));
  }
  if (headers->vertices >= 0 && headers->vertices != n) {
    return BadLine(name, line,
                   absl::StrCat("header ", QuoteForMessage(comment), " contradicts line ", headers->vertices_line,
                                ", which gives ", headers->vertices, " vertices"));
  }
  headers->vertices = n;
  headers->vertices_line = line;
  return absl::OkStatus();
}

// ---- graph-tool binary files ------------------------------------------------------------

// The value types of graph-tool's property maps, by their index in the file: enough of
// each to skip its values.
enum class ValueKind { kFixed, kString, kVector, kStringVector };
struct ValueType {
  const char* name;
  ValueKind kind;
  uint64_t bytes;  // a kFixed value's size, or a kVector element's
};
// From the format's table (bool and vector<bool> elements are one byte; long double is
// stored in 16). python::object values are pickles, stored as strings.
constexpr ValueType kValueTypes[] = {
    {"bool", ValueKind::kFixed, 1},
    {"int16_t", ValueKind::kFixed, 2},
    {"int32_t", ValueKind::kFixed, 4},
    {"int64_t", ValueKind::kFixed, 8},
    {"double", ValueKind::kFixed, 8},
    {"long double", ValueKind::kFixed, 16},
    {"string", ValueKind::kString, 0},
    {"vector<bool>", ValueKind::kVector, 1},
    {"vector<int16_t>", ValueKind::kVector, 2},
    {"vector<int32_t>", ValueKind::kVector, 4},
    {"vector<int64_t>", ValueKind::kVector, 8},
    {"vector<double>", ValueKind::kVector, 8},
    {"vector<long double>", ValueKind::kVector, 16},
    {"vector<string>", ValueKind::kStringVector, 0},
    {"python::object", ValueKind::kString, 0},
};
constexpr uint64_t kNumValueTypes = sizeof(kValueTypes) / sizeof(kValueTypes[0]);

// The magic string "⛾ gt" in UTF-8, and the one format version there is.
constexpr absl::string_view kGtMagic("\xe2\x9b\xbe gt", 6);
constexpr uint8_t kGtVersion = 1;

// Reads a graph-tool file's bytes front to back; every read is checked against what is
// left, so a truncated or lying file is an error, never a read past the end.
class GtReader {
 public:
  GtReader(absl::string_view bytes, const std::string& name) : bytes_(bytes), name_(name) {}

  absl::Status Bad(absl::string_view problem) const {
    return absl::InvalidArgumentError(
        absl::StrCat("graph-tool file ", QuotePath(name_), ", byte ", start_, ": ", problem));
  }
  uint64_t left() const { return bytes_.size() - pos_; }
  void set_big_endian(bool big) { big_endian_ = big; }

  // Fails unless `count` items of `size` bytes each are left; `what` names them. Errors
  // from here on name the current offset, where the item that failed starts.
  absl::Status Need(uint64_t count, uint64_t size, absl::string_view what) {
    start_ = pos_;
    if (size != 0 && count > left() / size) {
      return Bad(absl::StrCat("truncated: ", what, " needs ", count, " x ", size, " bytes, ", left(), " are left"));
    }
    return absl::OkStatus();
  }
  absl::Status Skip(uint64_t count, uint64_t size, absl::string_view what) {
    KPS_RETURN_IF_ERROR(Need(count, size, what));
    pos_ += static_cast<size_t>(count * size);
    return absl::OkStatus();
  }
  absl::StatusOr<absl::string_view> Bytes(uint64_t n, absl::string_view what) {
    KPS_RETURN_IF_ERROR(Need(n, 1, what));
    absl::string_view out = bytes_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return out;
  }
  // An unsigned integer of `width` bytes in the file's byte order.
  absl::StatusOr<uint64_t> Uint(int width, absl::string_view what) {
    KPS_RETURN_IF_ERROR(Need(1, static_cast<uint64_t>(width), what));
    return UintUnchecked(width);
  }
  uint64_t UintUnchecked(int width) {
    start_ = pos_;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes_.data() + pos_);
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) {
      const int shift = 8 * (big_endian_ ? width - 1 - i : i);
      v |= static_cast<uint64_t>(p[i]) << shift;
    }
    pos_ += static_cast<size_t>(width);
    return v;
  }
  // A string: an 8-byte length, then that many bytes.
  absl::StatusOr<absl::string_view> String(absl::string_view what) {
    KPS_ASSIGN_OR_RETURN(const uint64_t n, Uint(8, absl::StrCat("the length of ", what)));
    return Bytes(n, what);
  }

  // Skips `count` values of value type `type`.
  absl::Status SkipValues(const ValueType& type, uint64_t count, absl::string_view what) {
    switch (type.kind) {
      case ValueKind::kFixed:
        return Skip(count, type.bytes, what);
      case ValueKind::kString:
        // Each value takes at least its 8-byte length, so the loop ends within left() / 8
        // steps even when `count` is a lie.
        for (uint64_t i = 0; i < count; ++i) KPS_RETURN_IF_ERROR(String(what).status());
        return absl::OkStatus();
      case ValueKind::kVector:
        for (uint64_t i = 0; i < count; ++i) {
          KPS_ASSIGN_OR_RETURN(const uint64_t n, Uint(8, absl::StrCat("the length of ", what)));
          KPS_RETURN_IF_ERROR(Skip(n, type.bytes, what));
        }
        return absl::OkStatus();
      case ValueKind::kStringVector:
        for (uint64_t i = 0; i < count; ++i) {
          KPS_ASSIGN_OR_RETURN(const uint64_t n, Uint(8, absl::StrCat("the length of ", what)));
          for (uint64_t j = 0; j < n; ++j) KPS_RETURN_IF_ERROR(String(what).status());
        }
        return absl::OkStatus();
    }
    return Bad("unknown value kind");  // not reached: every kind is handled above
  }

 private:
  absl::string_view bytes_;
  const std::string& name_;
  size_t pos_ = 0;
  size_t start_ = 0;  // where the item read last starts: the offset errors name
  bool big_endian_ = false;
};

// A byte that must be 0 or 1.
absl::StatusOr<bool> Flag(GtReader& in, absl::string_view what) {
  KPS_ASSIGN_OR_RETURN(const uint64_t b, in.Uint(1, what));
  if (b > 1) return in.Bad(absl::StrCat(what, " is ", b, ", not 0 or 1"));
  return b == 1;
}

// The bytes of the file at `path`; `kind` names the format in errors. POSIX reads rather
// than an ifstream, which opens a directory and then reads it as an empty file: for an
// edge list that would be a valid, empty graph.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, absl::string_view kind) {
  const auto error = [&](int error_number, absl::string_view what) {
    return absl::Status(absl::ErrnoToStatusCode(error_number),
                        absl::StrCat(kind, " file ", QuotePath(path), ": ", what, ": ", std::strerror(error_number)));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error(errno, "cannot open");
  std::string bytes;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return error(EISDIR, "cannot read");
  }
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error_number = errno;
      ::close(fd);
      return error(error_number, "read failed");
    }
    if (got == 0) break;
    bytes.append(buf, static_cast<size_t>(got));
  }
  ::close(fd);
  return bytes;
}

// The shortest decimal form of `v` that reads back to the same double.
std::string ShortestDouble(double v) {
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

bool EndsWithNoCase(absl::string_view s, absl::string_view suffix) {
  return s.size() >= suffix.size() && absl::EqualsIgnoreCase(s.substr(s.size() - suffix.size()), suffix);
}

}  // namespace

absl::StatusOr<EdgeList> ParseEdgeList(absl::string_view text, const std::string& name) {
  EdgeList g;
  Headers headers;
  size_t columns = 0;  // of the first edge line; every other edge line must match it
  int64_t first_edge_line = 0, max_id = -1, max_id_line = 0;
  int64_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == absl::string_view::npos) end = text.size();
    // Stripping the whitespace also drops a CRLF file's \r.
    const absl::string_view line = absl::StripAsciiWhitespace(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty()) continue;
    if (line[0] == '#' || line[0] == '%') {
      KPS_RETURN_IF_ERROR(ParseHeader(line, name, line_no, &headers));
      continue;
    }
    const std::vector<absl::string_view> fields = Fields(line, 3);
    if (fields.size() != 2 && fields.size() != 3) {
      return BadLine(name, line_no, absl::StrCat("edge ", QuoteForMessage(line), " is not 'U V' or 'U V WEIGHT'"));
    }
    if (columns == 0) {
      columns = fields.size();
      first_edge_line = line_no;
    } else if (fields.size() != columns) {
      return BadLine(
          name, line_no,
          absl::StrCat("edge ", QuoteForMessage(line), " has ", fields.size(), " fields but the first edge (line ",
                       first_edge_line, ") has ", columns, "; a file is weighted on every line or on none"));
    }
    int64_t u = 0, v = 0;
    KPS_RETURN_IF_ERROR(ParseVertexId(fields[0], name, line_no, "source", &u));
    KPS_RETURN_IF_ERROR(ParseVertexId(fields[1], name, line_no, "target", &v));
    if (columns == 3) {
      double w = 0;
      if (!absl::SimpleAtod(fields[2], &w) || !std::isfinite(w)) {
        return BadLine(name, line_no, absl::StrCat("weight ", QuoteForMessage(fields[2]), " is not a finite number"));
      }
      g.weights.push_back(w);
    }
    g.src.push_back(u);
    g.dst.push_back(v);
    if (std::max(u, v) > max_id) {
      max_id = std::max(u, v);
      max_id_line = line_no;
    }
  }
  g.directed = headers.directed;
  g.num_vertices = max_id + 1;
  if (headers.vertices >= 0) {
    if (headers.vertices < g.num_vertices) {
      return BadLine(name, max_id_line,
                     absl::StrCat("vertex id ", max_id, " is not below the ", headers.vertices,
                                  " vertices of the header on line ", headers.vertices_line));
    }
    g.num_vertices = headers.vertices;
  }
  return g;
}

absl::StatusOr<EdgeList> ReadEdgeList(const std::string& path) {
  KPS_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path, "edge list"));
  return ParseEdgeList(text, path);
}

absl::StatusOr<EdgeList> ParseGraphTool(absl::string_view bytes, const std::string& name) {
  GtReader in(bytes, name);
  KPS_ASSIGN_OR_RETURN(const absl::string_view magic, in.Bytes(kGtMagic.size(), "the magic bytes"));
  if (magic != kGtMagic) {
    return absl::InvalidArgumentError(absl::StrCat("graph-tool file ", QuotePath(name), ": starts with ",
                                                   QuoteForMessage(magic),
                                                   ", not graph-tool's magic bytes e2 9b be 20 67 74"));
  }
  KPS_ASSIGN_OR_RETURN(const uint64_t version, in.Uint(1, "the format version"));
  if (version != kGtVersion) {
    return in.Bad(absl::StrCat("format version ", version, " is not supported; KPS reads version ", kGtVersion));
  }
  KPS_ASSIGN_OR_RETURN(const bool big_endian, Flag(in, "the byte order flag"));
  in.set_big_endian(big_endian);
  // graph-tool writes every number, the comment's length included, in the writing
  // machine's order, which is what the flag records.
  KPS_RETURN_IF_ERROR(in.String("the comment").status());

  EdgeList g;
  KPS_ASSIGN_OR_RETURN(g.directed, Flag(in, "the directed flag"));
  KPS_ASSIGN_OR_RETURN(const uint64_t n, in.Uint(8, "the vertex count"));
  if (n > static_cast<uint64_t>(kMaxVertexId)) {
    return in.Bad(absl::StrCat("vertex count ", n, " is more than KPS reads (2^62)"));
  }
  // Each vertex's list starts with its 8-byte length: a count the file cannot hold is
  // refused here, before the loop.
  KPS_RETURN_IF_ERROR(in.Need(n, 8, absl::StrCat("the out-neighbour counts of ", n, " vertices")));
  g.num_vertices = static_cast<int64_t>(n);
  // Neighbour ids take the fewest bytes of 1, 2, 4, 8 that hold every id below N, as
  // graph-tool's writer chooses them (N = 255 is still 1 byte, N = 256 needs 2).
  const int width = n <= 0xFFu ? 1 : n <= 0xFFFFu ? 2 : n <= 0xFFFFFFFFu ? 4 : 8;
  for (uint64_t v = 0; v < n; ++v) {
    KPS_ASSIGN_OR_RETURN(const uint64_t degree, in.Uint(8, "an out-neighbour count"));
    KPS_RETURN_IF_ERROR(
        in.Need(degree, static_cast<uint64_t>(width), absl::StrCat("the ", degree, " out-neighbours of vertex ", v)));
    for (uint64_t k = 0; k < degree; ++k) {
      const uint64_t u = in.UintUnchecked(width);
      if (u >= n) {
        return in.Bad(absl::StrCat("vertex ", v, " has out-neighbour ", u, ", not below the vertex count ", n));
      }
      g.src.push_back(static_cast<int64_t>(v));
      g.dst.push_back(static_cast<int64_t>(u));
    }
  }

  // The property maps: checked and skipped. Each record is a key type, the name, the
  // value type, then the values: one for a graph property, N for a vertex property, one
  // per edge in adjacency order for an edge property. (The format page's prose puts the
  // value type before the name; its own hexdump of lesmis, and graph-tool's code, put it
  // after, as here.)
  KPS_ASSIGN_OR_RETURN(const uint64_t num_props, in.Uint(8, "the property map count"));
  for (uint64_t i = 0; i < num_props; ++i) {
    const std::string which = absl::StrCat("property map ", i);
    KPS_ASSIGN_OR_RETURN(const uint64_t key, in.Uint(1, absl::StrCat("the key type of ", which)));
    if (key > 2) return in.Bad(absl::StrCat(which, " has key type ", key, ", not 0 (graph), 1 (vertex) or 2 (edge)"));
    KPS_ASSIGN_OR_RETURN(const absl::string_view prop_name, in.String(absl::StrCat("the name of ", which)));
    const std::string what = absl::StrCat(which, " (", QuoteForMessage(prop_name), ")");
    KPS_ASSIGN_OR_RETURN(const uint64_t type, in.Uint(1, absl::StrCat("the value type of ", what)));
    if (type >= kNumValueTypes) {
      return in.Bad(absl::StrCat(what, " has value type ", type, "; graph-tool's are 0 to ", kNumValueTypes - 1));
    }
    const uint64_t count = key == 0 ? 1 : key == 1 ? n : static_cast<uint64_t>(g.src.size());
    KPS_RETURN_IF_ERROR(
        in.SkipValues(kValueTypes[type], count, absl::StrCat("the ", kValueTypes[type].name, " values of ", what)));
  }
  if (in.left() != 0) {
    return in.Bad(absl::StrCat(in.left(), " bytes follow the last property map; a graph-tool file ends there"));
  }
  return g;
}

absl::StatusOr<EdgeList> ReadGraphTool(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    // gzopen leaves errno from open() when the file could not be opened, 0 when zlib
    // itself failed (out of memory).
    const int error_number = errno;
    return absl::Status(error_number != 0 ? absl::ErrnoToStatusCode(error_number) : absl::StatusCode::kInternal,
                        absl::StrCat("graph-tool file ", QuotePath(path), ": cannot open: ",
                                     error_number != 0 ? std::strerror(error_number) : "zlib could not allocate"));
  }
  // A larger buffer than zlib's 8 KiB default: fewer read() calls on large networks.
  gzbuffer(f, 1u << 17);
  std::string bytes;
  constexpr unsigned kChunk = 1u << 20;
  for (;;) {
    const size_t at = bytes.size();
    bytes.resize(at + kChunk);
    const int got = gzread(f, &bytes[at], kChunk);
    if (got < 0) {
      int zerr = 0;
      const std::string message = gzerror(f, &zerr);
      gzclose(f);
      return absl::DataLossError(
          absl::StrCat("graph-tool file ", QuotePath(path), ": read failed after ", at, " bytes: ", message));
    }
    bytes.resize(at + static_cast<size_t>(got));
    if (got == 0) break;
  }
  // gzread does not fail on a compressed stream cut short: it returns what it could
  // decompress and leaves Z_BUF_ERROR to be asked for, which would read as a shorter file.
  int zerr = Z_OK;
  const std::string message = gzerror(f, &zerr);
  gzclose(f);
  if (zerr != Z_OK) {
    return absl::DataLossError(absl::StrCat("graph-tool file ", QuotePath(path), ": the gzip stream is cut short or ",
                                            "damaged after ", bytes.size(), " decompressed bytes: ", message));
  }
  return ParseGraphTool(bytes, path);
}

absl::StatusOr<EdgeList> ReadGraph(const std::string& path) {
  if (EndsWithNoCase(path, ".gt") || EndsWithNoCase(path, ".gt.gz")) return ReadGraphTool(path);
  if (!EndsWithNoCase(path, ".mtx")) return ReadEdgeList(path);

  KPS_ASSIGN_OR_RETURN(const CsrMatrix a, ReadMatrixMarket(path));
  EdgeList g;
  g.num_vertices = std::max(a.rows, a.cols);
  g.directed = !a.symmetric;
  const int64_t* indptr = a.indptr.data<int64_t>();
  const bool narrow = a.indices.dtype() == DataType::kInt32;
  const double* values = a.values.defined() ? a.values.data<double>() : nullptr;
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t k = indptr[r]; k < indptr[r + 1]; ++k) {
      const int64_t c = narrow ? a.indices.data<int32_t>()[k] : a.indices.data<int64_t>()[k];
      // The reader mirrored a symmetric file's triangle; an undirected edge is kept once.
      if (a.symmetric && c > r) continue;
      g.src.push_back(r);
      g.dst.push_back(c);
      if (values != nullptr) g.weights.push_back(values[k]);
    }
  }
  return g;
}

absl::Status WriteEdgeList(const std::string& path, const EdgeList& graph) {
  const auto bad = [&](absl::string_view problem) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write edge list ", QuotePath(path), ": ", problem));
  };
  const size_t m = graph.src.size();
  if (graph.dst.size() != m || (!graph.weights.empty() && graph.weights.size() != m)) {
    return bad(absl::StrCat("src, dst and weights have ", m, ", ", graph.dst.size(), " and ", graph.weights.size(),
                            " entries; they must match (or weights be empty)"));
  }
  if (graph.num_vertices < 0 || graph.num_vertices > kMaxVertexId + 1) {
    return bad(absl::StrCat("num_vertices ", graph.num_vertices, " is outside [0, ", kMaxVertexId + 1, "]"));
  }
  std::string text =
      absl::StrCat("# vertices ", graph.num_vertices, "\n", graph.directed ? "# directed" : "# undirected", "\n");
  text.reserve(text.size() + m * 16);
  for (size_t i = 0; i < m; ++i) {
    const int64_t u = graph.src[i], v = graph.dst[i];
    if (u < 0 || u >= graph.num_vertices || v < 0 || v >= graph.num_vertices) {
      return bad(absl::StrCat("edge ", i, " (", u, ", ", v, ") has a vertex outside [0, ", graph.num_vertices, ")"));
    }
    absl::StrAppend(&text, u, " ", v);
    if (!graph.weights.empty()) {
      if (!std::isfinite(graph.weights[i])) return bad(absl::StrCat("edge ", i, " has weight ", graph.weights[i]));
      absl::StrAppend(&text, " ", ShortestDouble(graph.weights[i]));
    }
    text += '\n';
  }
  return WriteFileAtomically(path, text);
}

}  // namespace io
}  // namespace kps
