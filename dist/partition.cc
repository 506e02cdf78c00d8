// The partitioner, the partition files and the host model of the distributed triangle count
// (dist/partition.h has the contract and the file layout).
#include "dist/partition.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "io/npy.h"
#include "registry/status.h"

namespace kps {
namespace dist {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'K', 'P', 'S', 'P', 'A', 'R', 'T', '\0'};
constexpr char kFormatName[] = "kps-partition";
// Far above any cluster, low enough that a hostile manifest cannot make the reader allocate
// per-rank tables of gigabytes.
constexpr int64_t kMaxRanks = int64_t{1} << 20;
// Vertex ids stay below 2^62 so that sizes in bytes (ids times 8) never overflow int64.
constexpr int64_t kMaxVertices = int64_t{1} << 62;
// A manifest of kMaxRanks ranks is about 200 MB; anything longer is not one of ours.
constexpr int64_t kMaxManifestBytes = int64_t{1} << 28;
// JSON nesting in our manifest is 3 deep; the limit keeps recursion bounded on hostile input.
constexpr int kMaxJsonDepth = 16;

std::string Quote(const std::string& path) { return io::QuoteForMessage(path, 200); }

int IndexBytes(DataType dtype) { return dtype == DataType::kInt32 ? 4 : 8; }

// --- little-endian encoding ----------------------------------------------------------------
// Byte by byte, so the format is the same whatever the host's byte order.
void PutU64(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetU64(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
int64_t GetI64(const char* p) { return static_cast<int64_t>(GetU64(p, 8)); }
// An index of `bytes` bytes, sign-extended (a negative int32 on disk stays negative and is
// then refused by the range check).
int64_t GetIndex(const char* p, int bytes) {
  if (bytes == 8) return GetI64(p);
  return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(GetU64(p, 4))));
}

// --- a strict reader of the JSON subset the manifest uses ---------------------------------
// Objects, arrays, strings, integers, true, false and null; a number with a fraction or an
// exponent is an error, since every number in a manifest is an integer.
struct Json {
  enum class Kind { kNull, kBool, kInt, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  int64_t integer = 0;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;

  const Json* Find(absl::string_view key) const {
    for (const auto& [k, v] : object) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

class JsonParser {
 public:
  explicit JsonParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<Json> ParseDocument() {
    Json value;
    KPS_RETURN_IF_ERROR(ParseValue(0, &value));
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the top-level value");
    return value;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("at byte ", pos_, ": ", what));
  }
  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Consume(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  absl::Status ParseValue(int depth, Json* out) {
    if (depth > kMaxJsonDepth) return Error("nested too deeply");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("unexpected end of text");
    const char c = text_[pos_];
    if (c == '{') return ParseObject(depth, out);
    if (c == '[') return ParseArray(depth, out);
    if (c == '"') {
      out->kind = Json::Kind::kString;
      return ParseString(&out->string);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseInteger(out);
    if (Consume("true") || Consume("false")) {
      out->kind = Json::Kind::kBool;
      out->boolean = c == 't';
      return absl::OkStatus();
    }
    if (Consume("null")) {
      out->kind = Json::Kind::kNull;
      return absl::OkStatus();
    }
    return Error(absl::StrCat("unexpected character ", io::QuoteForMessage(text_.substr(pos_, 1))));
  }

  absl::Status ParseInteger(Json* out) {
    const size_t start = pos_;
    bool negative = false;
    if (text_[pos_] == '-') {
      negative = true;
      ++pos_;
    }
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') return Error("malformed number");
    uint64_t magnitude = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (magnitude > (uint64_t{1} << 63) / 10 || magnitude * 10 > (uint64_t{1} << 63) - digit) {
        pos_ = start;
        return Error("integer out of the int64 range");
      }
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
      return Error("a number that is not an integer");
    }
    if (!negative && magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      pos_ = start;
      return Error("integer out of the int64 range");
    }
    out->kind = Json::Kind::kInt;
    out->integer = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
    return absl::OkStatus();
  }

  absl::Status ParseString(std::string* out) {
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= text_.size()) return Error("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return absl::OkStatus();
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in a string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) return Error("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          // Our writer escapes nothing beyond ASCII; a \u escape is decoded for the Basic
          // Multilingual Plane as UTF-8 (surrogates are kept as they are, never combined).
          if (pos_ + 4 > text_.size()) return Error("truncated \\u escape");
          uint32_t code = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = text_[pos_++];
            code <<= 4;
            if (h >= '0' && h <= '9') code |= static_cast<uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f') code |= static_cast<uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') code |= static_cast<uint32_t>(h - 'A' + 10);
            else return Error("malformed \\u escape");
          }
          if (code < 0x80) {
            out->push_back(static_cast<char>(code));
          } else if (code < 0x800) {
            out->push_back(static_cast<char>(0xc0 | (code >> 6)));
            out->push_back(static_cast<char>(0x80 | (code & 0x3f)));
          } else {
            out->push_back(static_cast<char>(0xe0 | (code >> 12)));
            out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
            out->push_back(static_cast<char>(0x80 | (code & 0x3f)));
          }
          break;
        }
        default:
          return Error("unknown escape in a string");
      }
    }
  }

  absl::Status ParseArray(int depth, Json* out) {
    out->kind = Json::Kind::kArray;
    ++pos_;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      out->array.emplace_back();
      KPS_RETURN_IF_ERROR(ParseValue(depth + 1, &out->array.back()));
      SkipSpace();
      if (pos_ >= text_.size()) return Error("unterminated array");
      const char c = text_[pos_++];
      if (c == ']') return absl::OkStatus();
      if (c != ',') return Error("expected ',' or ']' in an array");
    }
  }

  absl::Status ParseObject(int depth, Json* out) {
    out->kind = Json::Kind::kObject;
    ++pos_;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') return Error("expected a string key in an object");
      std::string key;
      KPS_RETURN_IF_ERROR(ParseString(&key));
      for (const auto& kv : out->object) {
        if (kv.first == key) return Error(absl::StrCat("duplicate key ", io::QuoteForMessage(key)));
      }
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':') return Error("expected ':' after a key");
      ++pos_;
      out->object.emplace_back(std::move(key), Json());
      KPS_RETURN_IF_ERROR(ParseValue(depth + 1, &out->object.back().second));
      SkipSpace();
      if (pos_ >= text_.size()) return Error("unterminated object");
      const char c = text_[pos_++];
      if (c == '}') return absl::OkStatus();
      if (c != ',') return Error("expected ',' or '}' in an object");
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// --- reading files -------------------------------------------------------------------------

// Reads a whole regular file; NotFound when it does not exist, InvalidArgument when it is
// not a regular file, or when it is longer than `max_bytes` and `truncate` is false; with
// `truncate`, only its first `max_bytes` bytes are read.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, int64_t max_bytes, bool truncate = false) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return absl::UnavailableError(absl::StrCat("cannot stat ", Quote(path), ": ", ec.message()));
    }
    return absl::NotFoundError(absl::StrCat("missing file ", Quote(path)));
  }
  if (!fs::is_regular_file(st)) return absl::InvalidArgumentError(absl::StrCat(Quote(path), " is not a regular file"));
  uintmax_t size = fs::file_size(path, ec);
  if (truncate) size = std::min<uintmax_t>(size, static_cast<uintmax_t>(max_bytes));
  if (ec) return absl::UnavailableError(absl::StrCat("cannot read the size of ", Quote(path), ": ", ec.message()));
  if (size > static_cast<uintmax_t>(max_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(Quote(path), " is ", size, " bytes, more than the ", max_bytes,
                                                   " expected"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot open ", Quote(path)));
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) {
    return absl::DataLossError(absl::StrCat(Quote(path), " shrank while being read: got ", in.gcount(), " of ",
                                            size, " bytes"));
  }
  return bytes;
}

std::string JoinPath(const std::string& dir, const std::string& name) { return (fs::path(dir) / name).string(); }

// --- manifest fields -----------------------------------------------------------------------

class ManifestReader {
 public:
  explicit ManifestReader(std::string path) : path_(std::move(path)) {}

  absl::Status Malformed(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("manifest ", Quote(path_), " is malformed: ", what));
  }

  absl::StatusOr<const Json*> Field(const Json& obj, absl::string_view key, Json::Kind kind,
                                    absl::string_view where) const {
    const Json* v = obj.Find(key);
    if (v == nullptr) return Malformed(absl::StrCat(where, "field '", key, "' is missing"));
    if (v->kind != kind) {
      static constexpr const char* kNames[] = {"null", "a boolean", "an integer", "a string", "an array", "an object"};
      return Malformed(absl::StrCat(where, "field '", key, "' is not ", kNames[static_cast<int>(kind)]));
    }
    return v;
  }

  absl::StatusOr<int64_t> Int(const Json& obj, absl::string_view key, int64_t lo, int64_t hi,
                              absl::string_view where = "") const {
    KPS_ASSIGN_OR_RETURN(const Json* v, Field(obj, key, Json::Kind::kInt, where));
    if (v->integer < lo || v->integer > hi) {
      return Malformed(absl::StrCat(where, "field '", key, "' is ", v->integer, ", outside [", lo, ", ", hi, "]"));
    }
    return v->integer;
  }

  absl::StatusOr<std::string> String(const Json& obj, absl::string_view key, absl::string_view where = "") const {
    KPS_ASSIGN_OR_RETURN(const Json* v, Field(obj, key, Json::Kind::kString, where));
    return v->string;
  }

  // An array of exactly `size` integers in [lo, hi].
  absl::StatusOr<std::vector<int64_t>> Ints(const Json& obj, absl::string_view key, size_t size, int64_t lo,
                                            int64_t hi, absl::string_view where = "") const {
    KPS_ASSIGN_OR_RETURN(const Json* v, Field(obj, key, Json::Kind::kArray, where));
    if (v->array.size() != size) {
      return Malformed(absl::StrCat(where, "field '", key, "' has ", v->array.size(), " entries, expected ", size));
    }
    std::vector<int64_t> out;
    out.reserve(size);
    for (size_t i = 0; i < size; ++i) {
      const Json& e = v->array[i];
      if (e.kind != Json::Kind::kInt || e.integer < lo || e.integer > hi) {
        return Malformed(absl::StrCat(where, "field '", key, "' entry ", i, " is not an integer in [", lo, ", ", hi,
                                      "]"));
      }
      out.push_back(e.integer);
    }
    return out;
  }

 private:
  std::string path_;
};

absl::Status CheckSplits(const std::vector<int64_t>& splits, int64_t n, absl::string_view what) {
  if (splits.empty() || splits.front() != 0 || splits.back() != n) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must run from 0 to n = ", n));
  }
  for (size_t i = 1; i < splits.size(); ++i) {
    if (splits[i] < splits[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " decrease at ", i, ": ", splits[i - 1], " then ", splits[i]));
    }
  }
  return absl::OkStatus();
}

// Checks that p is a well-formed partition of n vertices.
absl::Status CheckPartition(const Partition& p, int64_t n) {
  if (p.grid_rows < 1 || p.grid_cols < 1 || static_cast<int64_t>(p.grid_rows) * p.grid_cols != p.num_ranks) {
    return absl::InvalidArgumentError(absl::StrCat("partition grid ", p.grid_rows, " x ", p.grid_cols,
                                                   " does not hold num_ranks = ", p.num_ranks));
  }
  if (p.scheme == Scheme::k1D && p.grid_cols != 1) {
    return absl::InvalidArgumentError("a 1-D partition has one column range");
  }
  if (p.num_vertices != n) {
    return absl::InvalidArgumentError(absl::StrCat("partition is of ", p.num_vertices, " vertices, the graph has ", n));
  }
  if (p.row_splits.size() != static_cast<size_t>(p.grid_rows) + 1 ||
      p.col_splits.size() != static_cast<size_t>(p.grid_cols) + 1) {
    return absl::InvalidArgumentError("partition splits do not match its grid");
  }
  KPS_RETURN_IF_ERROR(CheckSplits(p.row_splits, n, "row splits"));
  return CheckSplits(p.col_splits, n, "column splits");
}

// The entries of sorted `row` within [range.begin, range.end).
absl::Span<const int64_t> Clip(absl::Span<const int64_t> row, VertexRange range) {
  auto lo = std::lower_bound(row.begin(), row.end(), range.begin);
  auto hi = std::lower_bound(lo, row.end(), range.end);
  return row.subspan(static_cast<size_t>(lo - row.begin()), static_cast<size_t>(hi - lo));
}

int64_t IntersectionSize(absl::Span<const int64_t> a, absl::Span<const int64_t> b) {
  int64_t count = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] < b[j]) {
      ++i;
    } else if (b[j] < a[i]) {
      ++j;
    } else {
      ++count;
      ++i;
      ++j;
    }
  }
  return count;
}

std::string RankFileContents(const RankPartition& r) {
  const int ib = IndexBytes(r.index_dtype);
  std::string out;
  out.reserve(static_cast<size_t>(kRankHeaderBytes) + r.indptr.size() * 8 + r.indices.size() * ib);
  out.append(kMagic, sizeof(kMagic));
  PutU64(&out, kPartitionFormatVersion, 4);
  PutU64(&out, static_cast<uint64_t>(ib), 4);
  for (int64_t v : {int64_t{r.rank}, int64_t{r.num_ranks}, r.rows.begin, r.rows.end, r.cols.begin, r.cols.end,
                    r.num_vertices, r.num_edges()}) {
    PutU64(&out, static_cast<uint64_t>(v), 8);
  }
  for (int64_t v : r.indptr) PutU64(&out, static_cast<uint64_t>(v), 8);
  for (int64_t v : r.indices) PutU64(&out, static_cast<uint64_t>(v), ib);
  return out;
}

std::string Hex64(uint64_t v) { return absl::StrFormat("%016x", v); }

bool ParseHex64(absl::string_view s, uint64_t* out) {
  if (s.size() != 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v |= static_cast<uint64_t>(c - 'a' + 10);
    else return false;
  }
  *out = v;
  return true;
}

std::string RangeJson(VertexRange r) { return absl::StrCat("[", r.begin, ", ", r.end, "]"); }

std::string IntsJson(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) absl::StrAppend(&out, i ? ", " : "", v[i]);
  return out + "]";
}

// Rank files are "rank-RRRRR-of-PPPPP.<16 hex>.kpsp"; this says whether `name` is one, so a
// rewrite removes only files of this format.
bool IsRankFileName(const std::string& name) {
  return name.size() > 10 && name.compare(0, 5, "rank-") == 0 && name.compare(name.size() - 5, 5, ".kpsp") == 0;
}

absl::StatusOr<RankPartition> LoadWithManifest(const std::string& dir, const Manifest& m, int rank) {
  const Partition& p = m.partition;
  if (rank < 0 || rank >= p.num_ranks) {
    return absl::OutOfRangeError(absl::StrCat("rank ", rank, " is out of range: the partition in ", Quote(dir),
                                              " has ", p.num_ranks, " ranks [0, ", p.num_ranks, ")"));
  }
  const ManifestRank& mr = m.ranks[static_cast<size_t>(rank)];
  const std::string path = JoinPath(dir, mr.file);
  const std::string prefix = absl::StrCat("partition file ", Quote(path), " (rank ", rank, "): ");
  // One byte past the manifest's size is read, so that a longer file is reported below by its
  // size, without ever reading a hostile file of any length.
  KPS_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path, mr.bytes + 1, /*truncate=*/true));
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size < static_cast<int64_t>(sizeof(kMagic)) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "bad magic: not a KPS partition file"));
  }
  if (size < kRankHeaderBytes) {
    return absl::DataLossError(absl::StrCat(prefix, "truncated: ", size, " bytes, shorter than the ",
                                            kRankHeaderBytes, "-byte header"));
  }
  const char* h = bytes.data();
  const uint32_t version = static_cast<uint32_t>(GetU64(h + 8, 4));
  if (version != kPartitionFormatVersion) {
    return absl::UnimplementedError(absl::StrCat(prefix, "format version ", version, ", this reader reads ",
                                                 kPartitionFormatVersion));
  }
  if (size < mr.bytes) {
    return absl::DataLossError(absl::StrCat(prefix, "truncated: ", size, " bytes, the manifest says ", mr.bytes));
  }
  if (size > mr.bytes) {
    return absl::DataLossError(absl::StrCat(prefix, "size mismatch: longer than the ", mr.bytes,
                                            " bytes the manifest says"));
  }
  const uint64_t hash = Fnv1a64(bytes);
  if (hash != mr.fnv1a64) {
    return absl::DataLossError(absl::StrCat(prefix, "checksum mismatch: fnv1a64 of the file is ", Hex64(hash),
                                            ", the manifest says ", Hex64(mr.fnv1a64)));
  }
  // The header must agree with the manifest field by field.
  const int ib = static_cast<int>(GetU64(h + 12, 4));
  const int64_t fields[8] = {GetI64(h + 16), GetI64(h + 24), GetI64(h + 32), GetI64(h + 40),
                             GetI64(h + 48), GetI64(h + 56), GetI64(h + 64), GetI64(h + 72)};
  const int64_t expected[8] = {rank,         p.num_ranks,  mr.rows.begin,  mr.rows.end,
                               mr.cols.begin, mr.cols.end, p.num_vertices, mr.edges};
  static constexpr const char* kFieldNames[8] = {"rank",    "num_ranks", "row_begin",    "row_end",
                                                 "col_begin", "col_end", "num_vertices", "num_edges"};
  if (ib != IndexBytes(m.index_dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "header says ", ib, "-byte indices, the manifest says ",
                                                   DataTypeName(m.index_dtype)));
  }
  for (int i = 0; i < 8; ++i) {
    if (fields[i] != expected[i]) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "header field ", kFieldNames[i], " is ", fields[i],
                                                     ", the manifest says ", expected[i]));
    }
  }
  // The manifest's ranges and counts are checked and bounded (ReadManifest), so these sizes
  // do not overflow; the file's size must be exactly what they add up to.
  const int64_t rows = mr.rows.size();
  const int64_t want = kRankHeaderBytes + (rows + 1) * 8 + mr.edges * ib;
  if (size != want) {
    return absl::DataLossError(absl::StrCat(prefix, "size mismatch: ", size, " bytes, the header's counts need ",
                                            want));
  }
  RankPartition r;
  r.rank = rank;
  r.num_ranks = p.num_ranks;
  r.num_vertices = p.num_vertices;
  r.rows = mr.rows;
  r.cols = mr.cols;
  r.index_dtype = m.index_dtype;
  r.indptr.resize(static_cast<size_t>(rows + 1));
  const char* q = h + kRankHeaderBytes;
  for (int64_t i = 0; i <= rows; ++i, q += 8) {
    const int64_t v = GetI64(q);
    if ((i == 0 && v != 0) || (i > 0 && v < r.indptr[i - 1]) || v > mr.edges || (i == rows && v != mr.edges)) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "indptr[", i, "] = ", v,
                                                     " breaks indptr's rule (from 0, non-decreasing, to ", mr.edges,
                                                     ")"));
    }
    r.indptr[static_cast<size_t>(i)] = v;
  }
  r.indices.resize(static_cast<size_t>(mr.edges));
  for (int64_t u = 0; u < rows; ++u) {
    for (int64_t e = r.indptr[u]; e < r.indptr[u + 1]; ++e, q += ib) {
      const int64_t v = GetIndex(q, ib);
      const int64_t gu = r.rows.begin + u;
      if (!r.cols.Contains(v) || v == gu || (e > r.indptr[u] && v <= r.indices[e - 1])) {
        return absl::InvalidArgumentError(absl::StrCat(prefix, "entry ", e, " of row ", gu, " is ", v,
                                                       ": entries must lie in the column range [", r.cols.begin,
                                                       ", ", r.cols.end, "), ascending, without self loops"));
      }
      r.indices[static_cast<size_t>(e)] = v;
    }
  }
  return r;
}

}  // namespace

// --- graphs and partitions -----------------------------------------------------------------

uint64_t Fnv1a64(absl::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;  // the FNV-1a 64 offset basis
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;  // the FNV 64 prime
  }
  return h;
}

absl::string_view SchemeName(Scheme scheme) { return scheme == Scheme::k1D ? "1d" : "2d"; }

int Partition::RowRangeOf(int64_t v) const {
  // upper_bound skips empty ranges: the last range starting at or before v is the one holding it.
  return static_cast<int>(std::upper_bound(row_splits.begin(), row_splits.end(), v) - row_splits.begin()) - 1;
}
int Partition::ColRangeOf(int64_t v) const {
  return static_cast<int>(std::upper_bound(col_splits.begin(), col_splits.end(), v) - col_splits.begin()) - 1;
}

absl::Status ValidateOrientedCsr(const HostCsr& g) {
  if (g.index_dtype != DataType::kInt32 && g.index_dtype != DataType::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat("graph index dtype must be int32 or int64, got ",
                                                   DataTypeName(g.index_dtype)));
  }
  if (g.indptr.empty()) return absl::InvalidArgumentError("graph indptr is empty: it needs n + 1 >= 1 entries");
  const int64_t n = g.num_vertices();
  const int64_t id_limit = g.index_dtype == DataType::kInt32 ? (int64_t{1} << 31) : kMaxVertices;
  if (n > id_limit) {
    return absl::InvalidArgumentError(absl::StrCat("graph has ", n, " vertices, more than ",
                                                   DataTypeName(g.index_dtype), " ids can name"));
  }
  if (g.indptr[0] != 0) return absl::InvalidArgumentError(absl::StrCat("graph indptr[0] is ", g.indptr[0], ", not 0"));
  if (g.indptr[n] != g.num_edges()) {
    return absl::InvalidArgumentError(absl::StrCat("graph indptr[n] is ", g.indptr[n], ", but there are ",
                                                   g.num_edges(), " indices"));
  }
  for (int64_t u = 0; u < n; ++u) {
    if (g.indptr[u + 1] < g.indptr[u] || g.indptr[u + 1] > g.num_edges()) {
      return absl::InvalidArgumentError(absl::StrCat("graph indptr decreases or overruns at ", u + 1, ": ",
                                                     g.indptr[u], " then ", g.indptr[u + 1]));
    }
    for (int64_t e = g.indptr[u]; e < g.indptr[u + 1]; ++e) {
      const int64_t v = g.indices[e];
      if (v < 0 || v >= n || v == u || (e > g.indptr[u] && v <= g.indices[e - 1])) {
        return absl::InvalidArgumentError(absl::StrCat("graph entry ", e, " (row ", u, ") is ", v,
                                                       ": indices must be in [0, ", n,
                                                       "), strictly ascending per row, without self loops"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<HostCsr> HostCsrFromTensors(const Tensor& indptr, const Tensor& indices) {
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"indptr", &indptr}, {"indices", &indices}}) {
    if (!t->defined() || t->rank() != 1 || (t->dtype() != DataType::kInt32 && t->dtype() != DataType::kInt64)) {
      return absl::InvalidArgumentError(absl::StrCat("graph ", name, " must be a 1-D int32 or int64 tensor, got ",
                                                     t->defined() ? t->DebugString() : "an undefined tensor"));
    }
    if (!t->is_contiguous()) {
      return absl::InvalidArgumentError(absl::StrCat("graph ", name, " must be contiguous"));
    }
  }
  HostCsr g;
  g.index_dtype = indices.dtype();
  auto widen = [](const Tensor& t, std::vector<int64_t>* out) -> absl::Status {
    if (t.dtype() == DataType::kInt64) {
      KPS_ASSIGN_OR_RETURN(*out, t.ToVector<int64_t>());
    } else {
      KPS_ASSIGN_OR_RETURN(std::vector<int32_t> v, t.ToVector<int32_t>());
      out->assign(v.begin(), v.end());
    }
    return absl::OkStatus();
  };
  KPS_RETURN_IF_ERROR(widen(indptr, &g.indptr));
  KPS_RETURN_IF_ERROR(widen(indices, &g.indices));
  KPS_RETURN_IF_ERROR(ValidateOrientedCsr(g));
  return g;
}

absl::StatusOr<std::vector<int64_t>> EdgeBalancedSplits(absl::Span<const int64_t> prefix, int parts) {
  if (parts < 1 || parts > kMaxRanks) {
    return absl::InvalidArgumentError(absl::StrCat("the number of parts must be in [1, ", kMaxRanks, "], got ", parts));
  }
  if (prefix.empty() || prefix.front() != 0) {
    return absl::InvalidArgumentError("a prefix sum of n + 1 >= 1 entries starting at 0 is needed");
  }
  const int64_t n = static_cast<int64_t>(prefix.size()) - 1;
  const int64_t total = prefix.back();
  std::vector<int64_t> splits(static_cast<size_t>(parts) + 1, n);
  splits[0] = 0;
  for (int k = 1; k < parts; ++k) {
    if (n < parts) {
      // Too few vertices for a non-empty range each: one vertex a range, the rest empty.
      splits[k] = std::min<int64_t>(k, n);
      continue;
    }
    // The first vertex whose prefix reaches k/parts of the edges; 128-bit so k * total
    // cannot overflow.
    const int64_t target = static_cast<int64_t>(static_cast<__int128>(total) * k / parts);
    int64_t b = std::lower_bound(prefix.begin(), prefix.end(), target) - prefix.begin();
    // Every range keeps at least one vertex: after the previous boundary, and leaving one
    // vertex for each range still to come.
    b = std::max(b, splits[k - 1] + 1);
    b = std::min(b, n - (parts - k));
    splits[k] = b;
  }
  return splits;
}

absl::StatusOr<Partition> Partition1D(const HostCsr& g, int num_ranks) {
  if (num_ranks < 1) return absl::InvalidArgumentError(absl::StrCat("num_ranks must be >= 1, got ", num_ranks));
  // A 1-D partition is the P x 1 grid: one column range, so every block is whole rows.
  KPS_ASSIGN_OR_RETURN(Partition p, Partition2D(g, num_ranks, 1));
  p.scheme = Scheme::k1D;
  return p;
}

absl::StatusOr<Partition> Partition2D(const HostCsr& g, int num_ranks) {
  if (num_ranks < 1) return absl::InvalidArgumentError(absl::StrCat("num_ranks must be >= 1, got ", num_ranks));
  int side = 0;
  while (static_cast<int64_t>(side + 1) * (side + 1) <= num_ranks) ++side;
  if (static_cast<int64_t>(side) * side != num_ranks) {
    return absl::InvalidArgumentError(absl::StrCat("a 2-D partition needs a perfect square number of ranks, got ",
                                                   num_ranks, "; pass the grid (rows, cols) explicitly instead"));
  }
  return Partition2D(g, side, side);
}

absl::StatusOr<Partition> Partition2D(const HostCsr& g, int grid_rows, int grid_cols) {
  if (grid_rows < 1 || grid_cols < 1 || static_cast<int64_t>(grid_rows) * grid_cols > kMaxRanks) {
    return absl::InvalidArgumentError(absl::StrCat("the grid must be at least 1 x 1 and at most ", kMaxRanks,
                                                   " ranks, got ", grid_rows, " x ", grid_cols));
  }
  KPS_RETURN_IF_ERROR(ValidateOrientedCsr(g));
  Partition p;
  p.scheme = Scheme::k2D;
  p.grid_rows = grid_rows;
  p.grid_cols = grid_cols;
  p.num_ranks = grid_rows * grid_cols;
  p.num_vertices = g.num_vertices();
  KPS_ASSIGN_OR_RETURN(p.row_splits, EdgeBalancedSplits(g.indptr, grid_rows));
  if (grid_cols == 1) {
    p.col_splits = {0, p.num_vertices};
  } else {
    // Column ranges balance the in-edges: the prefix sum of in-degrees.
    std::vector<int64_t> in_prefix(g.indptr.size(), 0);
    for (int64_t v : g.indices) ++in_prefix[static_cast<size_t>(v) + 1];
    for (size_t i = 1; i < in_prefix.size(); ++i) in_prefix[i] += in_prefix[i - 1];
    KPS_ASSIGN_OR_RETURN(p.col_splits, EdgeBalancedSplits(in_prefix, grid_cols));
  }
  return p;
}

absl::StatusOr<RankPartition> ExtractRank(const HostCsr& g, const Partition& p, int rank) {
  KPS_RETURN_IF_ERROR(CheckPartition(p, g.num_vertices()));
  if (rank < 0 || rank >= p.num_ranks) {
    return absl::OutOfRangeError(absl::StrCat("rank ", rank, " is out of range [0, ", p.num_ranks, ")"));
  }
  RankPartition r;
  r.rank = rank;
  r.num_ranks = p.num_ranks;
  r.num_vertices = p.num_vertices;
  r.rows = p.Rows(rank);
  r.cols = p.Cols(rank);
  r.index_dtype = g.index_dtype;
  r.indptr.reserve(static_cast<size_t>(r.rows.size()) + 1);
  r.indptr.push_back(0);
  for (int64_t u = r.rows.begin; u < r.rows.end; ++u) {
    const auto row = absl::MakeConstSpan(g.indices).subspan(g.indptr[u], g.indptr[u + 1] - g.indptr[u]);
    const auto piece = Clip(row, r.cols);
    r.indices.insert(r.indices.end(), piece.begin(), piece.end());
    r.indptr.push_back(static_cast<int64_t>(r.indices.size()));
  }
  return r;
}

absl::StatusOr<std::vector<RemoteRowRequest>> RemoteRowsNeeded(const RankPartition& local, const Partition& p) {
  KPS_RETURN_IF_ERROR(CheckPartition(p, p.num_vertices));
  if (local.rank < 0 || local.rank >= p.num_ranks || local.num_ranks != p.num_ranks ||
      local.rows.begin != p.Rows(local.rank).begin || local.rows.end != p.Rows(local.rank).end ||
      local.cols.begin != p.Cols(local.rank).begin || local.cols.end != p.Cols(local.rank).end ||
      local.indptr.size() != static_cast<size_t>(local.rows.size()) + 1) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", local.rank, "'s block does not belong to this partition"));
  }
  // The rows whose whole N+ this rank needs: its own u with an edge here, and every v.
  std::vector<int64_t> needed = local.indices;
  for (int64_t u = local.rows.begin; u < local.rows.end; ++u) {
    if (!local.Row(u).empty()) needed.push_back(u);
  }
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  std::vector<std::vector<int64_t>> by_owner(static_cast<size_t>(p.num_ranks));
  for (int64_t x : needed) {
    if (x < 0 || x >= p.num_vertices) {
      return absl::InvalidArgumentError(absl::StrCat("rank ", local.rank, "'s block names vertex ", x,
                                                     ", outside [0, ", p.num_vertices, ")"));
    }
    const int row = p.RowRangeOf(x);
    for (int c = 0; c < p.grid_cols; ++c) {
      const int owner = p.RankAt(row, c);
      if (owner != local.rank) by_owner[static_cast<size_t>(owner)].push_back(x);
    }
  }
  std::vector<RemoteRowRequest> out;
  for (int owner = 0; owner < p.num_ranks; ++owner) {
    auto& list = by_owner[static_cast<size_t>(owner)];
    if (list.empty()) continue;
    RemoteRowRequest req;
    req.owner = owner;
    req.request_bytes = static_cast<int64_t>(list.size()) * IndexBytes(local.index_dtype);
    req.vertices = std::move(list);
    out.push_back(std::move(req));
  }
  return out;
}

absl::StatusOr<std::vector<RemoteRowRequest>> RemoteRowsNeeded(const HostCsr& g, const Partition& p, int rank) {
  KPS_ASSIGN_OR_RETURN(RankPartition local, ExtractRank(g, p, rank));
  KPS_ASSIGN_OR_RETURN(std::vector<RemoteRowRequest> out, RemoteRowsNeeded(local, p));
  const int ib = IndexBytes(g.index_dtype);
  for (RemoteRowRequest& req : out) {
    req.response_bytes = 0;
    for (int64_t x : req.vertices) {
      const auto row = absl::MakeConstSpan(g.indices).subspan(g.indptr[x], g.indptr[x + 1] - g.indptr[x]);
      req.response_bytes += 8 + static_cast<int64_t>(Clip(row, p.Cols(req.owner)).size()) * ib;
    }
  }
  return out;
}

// --- files ---------------------------------------------------------------------------------

absl::Status WritePartitions(const std::string& dir, const HostCsr& g, const Partition& p) {
  KPS_RETURN_IF_ERROR(ValidateOrientedCsr(g));
  KPS_RETURN_IF_ERROR(CheckPartition(p, g.num_vertices()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot create ", Quote(dir), ": ", ec.message()));

  std::vector<std::string> contents;
  std::vector<RankPartition> ranks;
  uint64_t generation = Fnv1a64(absl::StrCat(g.num_vertices(), "/", g.num_edges(), "/", p.num_ranks));
  for (int r = 0; r < p.num_ranks; ++r) {
    KPS_ASSIGN_OR_RETURN(RankPartition rp, ExtractRank(g, p, r));
    contents.push_back(RankFileContents(rp));
    // The generation tag hashes every file's hash, so new contents get new names.
    generation = (generation ^ Fnv1a64(contents.back())) * 0x100000001b3ULL;
    ranks.push_back(std::move(rp));
  }
  std::string manifest = absl::StrCat("{\n  \"format\": \"", kFormatName, "\",\n  \"version\": ",
                                      kPartitionFormatVersion, ",\n  \"scheme\": \"", SchemeName(p.scheme),
                                      "\",\n  \"num_ranks\": ", p.num_ranks, ",\n  \"grid\": [", p.grid_rows, ", ",
                                      p.grid_cols, "],\n  \"num_vertices\": ", g.num_vertices(),
                                      ",\n  \"num_edges\": ", g.num_edges(), ",\n  \"index_dtype\": \"",
                                      DataTypeName(g.index_dtype), "\",\n  \"row_splits\": ", IntsJson(p.row_splits),
                                      ",\n  \"col_splits\": ", IntsJson(p.col_splits), ",\n  \"ranks\": [");
  std::set<std::string> names;
  for (int r = 0; r < p.num_ranks; ++r) {
    const std::string name = absl::StrFormat("rank-%05d-of-%05d.%s.kpsp", r, p.num_ranks, Hex64(generation));
    KPS_RETURN_IF_ERROR(io::WriteFileAtomically(JoinPath(dir, name), contents[r]));
    names.insert(name);
    const RankPartition& rp = ranks[r];
    absl::StrAppend(&manifest, r ? "," : "", "\n    {\"rank\": ", r, ", \"file\": \"", name,
                    "\", \"rows\": ", RangeJson(rp.rows), ", \"cols\": ", RangeJson(rp.cols),
                    ", \"edges\": ", rp.num_edges(), ", \"bytes\": ", contents[r].size(), ", \"fnv1a64\": \"",
                    Hex64(Fnv1a64(contents[r])), "\"}");
  }
  absl::StrAppend(&manifest, "\n  ]\n}\n");
  // Last: until this rename a reader sees the previous manifest and the files it names.
  KPS_RETURN_IF_ERROR(io::WriteFileAtomically(JoinPath(dir, kManifestName), manifest));
  // Best effort: rank files of earlier writes, which no manifest names any more.
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    std::error_code ignored;
    if (IsRankFileName(name) && names.count(name) == 0 && e.is_regular_file(ignored)) fs::remove(e.path(), ignored);
  }
  return absl::OkStatus();
}

absl::Status WritePartitions(const std::string& dir, const HostCsr& g, Scheme scheme, int num_ranks) {
  KPS_ASSIGN_OR_RETURN(Partition p, scheme == Scheme::k1D ? Partition1D(g, num_ranks) : Partition2D(g, num_ranks));
  return WritePartitions(dir, g, p);
}

absl::StatusOr<Manifest> ReadManifest(const std::string& dir) {
  const std::string path = JoinPath(dir, kManifestName);
  KPS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, kMaxManifestBytes));
  ManifestReader reader(path);
  auto doc = JsonParser(text).ParseDocument();
  if (!doc.ok()) return reader.Malformed(doc.status().message());
  if (doc->kind != Json::Kind::kObject) return reader.Malformed("the top level is not an object");
  const Json& j = *doc;

  KPS_ASSIGN_OR_RETURN(std::string format, reader.String(j, "format"));
  if (format != kFormatName) {
    return reader.Malformed(absl::StrCat("format is ", io::QuoteForMessage(format), ", not '", kFormatName, "'"));
  }
  KPS_ASSIGN_OR_RETURN(int64_t version, reader.Int(j, "version", 0, std::numeric_limits<int64_t>::max()));
  if (version != kPartitionFormatVersion) {
    return absl::UnimplementedError(absl::StrCat("manifest ", Quote(path), " has format version ", version,
                                                 ", this reader reads ", kPartitionFormatVersion));
  }
  Manifest m;
  Partition& p = m.partition;
  KPS_ASSIGN_OR_RETURN(std::string scheme, reader.String(j, "scheme"));
  if (scheme == "1d") {
    p.scheme = Scheme::k1D;
  } else if (scheme == "2d") {
    p.scheme = Scheme::k2D;
  } else {
    return reader.Malformed(absl::StrCat("scheme is ", io::QuoteForMessage(scheme), ", not '1d' or '2d'"));
  }
  KPS_ASSIGN_OR_RETURN(int64_t num_ranks, reader.Int(j, "num_ranks", 1, kMaxRanks));
  KPS_ASSIGN_OR_RETURN(std::vector<int64_t> grid, reader.Ints(j, "grid", 2, 1, kMaxRanks));
  if (grid[0] * grid[1] != num_ranks) {
    return reader.Malformed(absl::StrCat("grid ", grid[0], " x ", grid[1], " does not hold num_ranks = ", num_ranks));
  }
  if (p.scheme == Scheme::k1D && grid[1] != 1) return reader.Malformed("a 1d scheme must have a grid of P x 1");
  p.num_ranks = static_cast<int>(num_ranks);
  p.grid_rows = static_cast<int>(grid[0]);
  p.grid_cols = static_cast<int>(grid[1]);
  KPS_ASSIGN_OR_RETURN(p.num_vertices, reader.Int(j, "num_vertices", 0, kMaxVertices));
  KPS_ASSIGN_OR_RETURN(m.num_edges, reader.Int(j, "num_edges", 0, kMaxVertices));
  KPS_ASSIGN_OR_RETURN(std::string dtype, reader.String(j, "index_dtype"));
  if (dtype == "int32") {
    m.index_dtype = DataType::kInt32;
  } else if (dtype == "int64") {
    m.index_dtype = DataType::kInt64;
  } else {
    return reader.Malformed(absl::StrCat("index_dtype is ", io::QuoteForMessage(dtype), ", not 'int32' or 'int64'"));
  }
  if (m.index_dtype == DataType::kInt32 && p.num_vertices > (int64_t{1} << 31)) {
    return reader.Malformed(absl::StrCat(p.num_vertices, " vertices cannot be named by int32 indices"));
  }
  KPS_ASSIGN_OR_RETURN(p.row_splits, reader.Ints(j, "row_splits", static_cast<size_t>(p.grid_rows) + 1, 0,
                                                 p.num_vertices));
  KPS_ASSIGN_OR_RETURN(p.col_splits, reader.Ints(j, "col_splits", static_cast<size_t>(p.grid_cols) + 1, 0,
                                                 p.num_vertices));
  for (const auto& [splits, name] : {std::pair<const std::vector<int64_t>*, const char*>{&p.row_splits, "row_splits"},
                                     {&p.col_splits, "col_splits"}}) {
    if (absl::Status s = CheckSplits(*splits, p.num_vertices, name); !s.ok()) return reader.Malformed(s.message());
  }

  KPS_ASSIGN_OR_RETURN(const Json* ranks, reader.Field(j, "ranks", Json::Kind::kArray, ""));
  if (ranks->array.size() != static_cast<size_t>(p.num_ranks)) {
    return reader.Malformed(absl::StrCat("'ranks' has ", ranks->array.size(), " entries, but num_ranks is ",
                                         p.num_ranks));
  }
  int64_t edge_sum = 0;
  std::set<std::string> files;
  for (int r = 0; r < p.num_ranks; ++r) {
    const Json& e = ranks->array[static_cast<size_t>(r)];
    const std::string where = absl::StrCat("ranks[", r, "]: ");
    if (e.kind != Json::Kind::kObject) return reader.Malformed(absl::StrCat(where, "not an object"));
    ManifestRank mr;
    KPS_ASSIGN_OR_RETURN(int64_t rank, reader.Int(e, "rank", 0, kMaxRanks, where));
    if (rank != r) return reader.Malformed(absl::StrCat(where, "says rank ", rank));
    KPS_ASSIGN_OR_RETURN(mr.file, reader.String(e, "file", where));
    if (mr.file.empty() || mr.file == "." || mr.file == ".." || mr.file == kManifestName ||
        mr.file.find_first_of(std::string("/\\\0", 3)) != std::string::npos) {
      return reader.Malformed(absl::StrCat(where, "file ", io::QuoteForMessage(mr.file),
                                           " is not a plain file name in the directory"));
    }
    if (!files.insert(mr.file).second) {
      return reader.Malformed(absl::StrCat(where, "file ", io::QuoteForMessage(mr.file), " is named twice"));
    }
    KPS_ASSIGN_OR_RETURN(std::vector<int64_t> rows, reader.Ints(e, "rows", 2, 0, p.num_vertices, where));
    KPS_ASSIGN_OR_RETURN(std::vector<int64_t> cols, reader.Ints(e, "cols", 2, 0, p.num_vertices, where));
    mr.rows = {rows[0], rows[1]};
    mr.cols = {cols[0], cols[1]};
    const VertexRange want_rows = p.Rows(r), want_cols = p.Cols(r);
    if (mr.rows.begin != want_rows.begin || mr.rows.end != want_rows.end || mr.cols.begin != want_cols.begin ||
        mr.cols.end != want_cols.end) {
      return reader.Malformed(absl::StrCat(where, "ranges rows ", RangeJson(mr.rows), " cols ", RangeJson(mr.cols),
                                           " differ from the splits' ", RangeJson(want_rows), " ",
                                           RangeJson(want_cols)));
    }
    KPS_ASSIGN_OR_RETURN(mr.edges, reader.Int(e, "edges", 0, m.num_edges, where));
    KPS_ASSIGN_OR_RETURN(mr.bytes, reader.Int(e, "bytes", 0, std::numeric_limits<int64_t>::max(), where));
    // 128-bit: rows and edges are each below 2^62, so their byte counts can pass 2^63.
    const __int128 want_bytes = __int128{kRankHeaderBytes} + (__int128{mr.rows.size()} + 1) * 8 +
                                __int128{mr.edges} * IndexBytes(m.index_dtype);
    if (want_bytes >= std::numeric_limits<int64_t>::max()) {
      return reader.Malformed(absl::StrCat(where, "its rows and edges make a file too large to hold"));
    }
    if (mr.bytes != static_cast<int64_t>(want_bytes)) {
      return reader.Malformed(absl::StrCat(where, "bytes is ", mr.bytes, ", but its rows and edges make ",
                                           static_cast<int64_t>(want_bytes)));
    }
    KPS_ASSIGN_OR_RETURN(std::string hash, reader.String(e, "fnv1a64", where));
    if (!ParseHex64(hash, &mr.fnv1a64)) {
      return reader.Malformed(absl::StrCat(where, "fnv1a64 ", io::QuoteForMessage(hash),
                                           " is not 16 lowercase hex digits"));
    }
    edge_sum += mr.edges;  // each at most num_edges < 2^62, summed at most 2^20 times: no overflow
    m.ranks.push_back(std::move(mr));
  }
  if (edge_sum != m.num_edges) {
    return reader.Malformed(absl::StrCat("the ranks' edges sum to ", edge_sum, ", but num_edges is ", m.num_edges));
  }
  return m;
}

absl::StatusOr<RankPartition> LoadPartition(const std::string& dir, int rank) {
  KPS_ASSIGN_OR_RETURN(Manifest m, ReadManifest(dir));
  return LoadWithManifest(dir, m, rank);
}

// --- the host model of the distributed count ------------------------------------------------

absl::StatusOr<PartitionedCount> CountTrianglesPartitioned(const std::string& dir) {
  KPS_ASSIGN_OR_RETURN(Manifest m, ReadManifest(dir));
  const Partition& p = m.partition;
  std::vector<RankPartition> blocks;
  blocks.reserve(static_cast<size_t>(p.num_ranks));
  for (int r = 0; r < p.num_ranks; ++r) {
    KPS_ASSIGN_OR_RETURN(RankPartition b, LoadWithManifest(dir, m, r));
    blocks.push_back(std::move(b));
  }
  const int ib = IndexBytes(m.index_dtype);
  PartitionedCount out;
  out.per_rank.assign(static_cast<size_t>(p.num_ranks), 0);
  out.fetched_bytes.assign(static_cast<size_t>(p.num_ranks), 0);
  for (int r = 0; r < p.num_ranks; ++r) {
    const RankPartition& local = blocks[static_cast<size_t>(r)];
    KPS_ASSIGN_OR_RETURN(std::vector<RemoteRowRequest> requests, RemoteRowsNeeded(local, p));
    // "Receive" the pieces: each owner answers with its piece of every row asked for. Only
    // these and the rank's own block are read below, as on a real rank.
    std::vector<absl::flat_hash_map<int64_t, absl::Span<const int64_t>>> received(static_cast<size_t>(p.num_ranks));
    for (const RemoteRowRequest& req : requests) {
      const RankPartition& owner = blocks[static_cast<size_t>(req.owner)];
      auto& got = received[static_cast<size_t>(req.owner)];
      int64_t bytes = req.request_bytes;
      for (int64_t x : req.vertices) {
        const absl::Span<const int64_t> piece = owner.Row(x);
        got[x] = piece;
        bytes += 8 + static_cast<int64_t>(piece.size()) * ib;
      }
      out.fetched_bytes[static_cast<size_t>(r)] += bytes;
    }
    // A whole row N+(x): its pieces in column order, so ascending. std::unordered_map for its
    // pointer stability: N+(u) is held while rows N+(v) are added.
    std::unordered_map<int64_t, std::vector<int64_t>> assembled;
    auto whole_row = [&](int64_t x) -> absl::StatusOr<const std::vector<int64_t>*> {
      auto it = assembled.find(x);
      if (it != assembled.end()) return &it->second;
      std::vector<int64_t> row;
      const int grid_row = p.RowRangeOf(x);
      for (int c = 0; c < p.grid_cols; ++c) {
        const int owner = p.RankAt(grid_row, c);
        absl::Span<const int64_t> piece;
        if (owner == r) {
          piece = local.Row(x);
        } else {
          auto found = received[static_cast<size_t>(owner)].find(x);
          if (found == received[static_cast<size_t>(owner)].end()) {
            return absl::InternalError(absl::StrCat("rank ", r, " needs row ", x, " from rank ", owner,
                                                    " but did not ask for it"));
          }
          piece = found->second;
        }
        row.insert(row.end(), piece.begin(), piece.end());
      }
      return &assembled.emplace(x, std::move(row)).first->second;
    };
    int64_t count = 0;
    for (int64_t u = local.rows.begin; u < local.rows.end; ++u) {
      const auto edges = local.Row(u);
      if (edges.empty()) continue;
      KPS_ASSIGN_OR_RETURN(const std::vector<int64_t>* nu, whole_row(u));
      for (int64_t v : edges) {
        KPS_ASSIGN_OR_RETURN(const std::vector<int64_t>* nv, whole_row(v));
        count += IntersectionSize(*nu, *nv);
      }
    }
    out.per_rank[static_cast<size_t>(r)] = count;
    out.triangles += count;
  }
  return out;
}

}  // namespace dist
}  // namespace kps
