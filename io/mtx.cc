#include "io/mtx.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "io/npy.h"
#include "registry/status.h"

namespace kps {
namespace io {
namespace {

// Dimensions past this are refused (KPS's CSR kernels index rows and columns in 64 bits,
// but a text file of more than 2^31 rows is not a real input; it is a typo or an attack).
constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;
// A stored entry takes at least 4 bytes of text ("1 1\n"): a header claiming more entries
// than that allows is refused before anything is allocated.
constexpr int64_t kMinEntryBytes = 4;

struct Entry {
  int64_t row, col;
  double value;
};

absl::Status Bad(const std::string& name, int64_t line, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("Matrix Market file ", QuoteForMessage(name, 1024), ", line ", line, ": ", problem));
}

}  // namespace

absl::StatusOr<CsrMatrix> ParseMatrixMarket(absl::string_view text, const std::string& name) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (lines.empty() || !absl::StartsWith(lines[0], "%%MatrixMarket")) {
    return Bad(name, 1, "does not start with the banner '%%MatrixMarket matrix coordinate FIELD SYMMETRY'");
  }
  // Words split at any whitespace, so files with CRLF line ends read too.
  std::vector<std::string> banner =
      absl::StrSplit(absl::AsciiStrToLower(lines[0]), absl::ByAnyChar(" \t\r"), absl::SkipWhitespace());
  if (banner.size() != 5 || banner[1] != "matrix") {
    return Bad(name, 1, absl::StrCat("banner ", QuoteForMessage(lines[0]),
                                     " is not '%%MatrixMarket matrix FORMAT FIELD SYMMETRY'"));
  }
  if (banner[2] != "coordinate") {
    return Bad(name, 1, absl::StrCat("format ", QuoteForMessage(banner[2]),
                                     " is not supported; KPS reads the sparse 'coordinate' format"));
  }
  const std::string& field = banner[3];
  if (field != "real" && field != "integer" && field != "pattern") {
    return Bad(name, 1, absl::StrCat("field ", QuoteForMessage(field),
                                     " is not supported; KPS reads 'real', 'integer' and 'pattern'"));
  }
  const std::string& symmetry = banner[4];
  if (symmetry != "general" && symmetry != "symmetric" && symmetry != "skew-symmetric") {
    return Bad(name, 1, absl::StrCat("symmetry ", QuoteForMessage(symmetry),
                                     " is not supported; KPS reads 'general', 'symmetric' and 'skew-symmetric'"));
  }
  const bool pattern = field == "pattern";
  const bool mirror = symmetry != "general";
  const double mirror_sign = symmetry == "skew-symmetric" ? -1.0 : 1.0;

  // The size line: the first line after the comments.
  size_t k = 1;
  while (k < lines.size() && (lines[k].empty() || lines[k][0] == '%' || absl::StripAsciiWhitespace(lines[k]).empty())) {
    ++k;
  }
  if (k == lines.size()) return Bad(name, static_cast<int64_t>(k), "no size line 'ROWS COLS ENTRIES'");
  std::vector<absl::string_view> size = absl::StrSplit(lines[k], absl::ByAnyChar(" \t\r"), absl::SkipWhitespace());
  int64_t rows = 0, cols = 0, stored = 0;
  if (size.size() != 3 || !absl::SimpleAtoi(size[0], &rows) || !absl::SimpleAtoi(size[1], &cols) ||
      !absl::SimpleAtoi(size[2], &stored)) {
    return Bad(name, static_cast<int64_t>(k + 1),
               absl::StrCat("size line ", QuoteForMessage(lines[k]), " is not 'ROWS COLS ENTRIES'"));
  }
  if (rows < 0 || cols < 0 || stored < 0 || rows > kMaxDim || cols > kMaxDim) {
    return Bad(name, static_cast<int64_t>(k + 1),
               absl::StrCat("size ", rows, " x ", cols, " with ", stored, " entries is out of range (dimensions in [0, ",
                            kMaxDim, "], entries >= 0)"));
  }
  if (stored > static_cast<int64_t>(text.size()) / kMinEntryBytes + 1) {
    return Bad(name, static_cast<int64_t>(k + 1),
               absl::StrCat("the header claims ", stored, " entries, more than a file of ", text.size(),
                            " bytes can hold"));
  }
  if (mirror && rows != cols) {
    return Bad(name, static_cast<int64_t>(k + 1), absl::StrCat("a ", symmetry, " matrix must be square, not ", rows,
                                                               " x ", cols));
  }

  std::vector<Entry> entries;
  entries.reserve(static_cast<size_t>(mirror ? 2 * stored : stored));
  int64_t seen = 0;
  for (++k; k < lines.size(); ++k) {
    absl::string_view line = absl::StripAsciiWhitespace(lines[k]);
    if (line.empty() || line[0] == '%') continue;
    const int64_t line_no = static_cast<int64_t>(k + 1);
    if (seen == stored) {
      return Bad(name, line_no, absl::StrCat("more entries than the ", stored, " the size line gives"));
    }
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipWhitespace());
    Entry e{0, 0, 1.0};
    const size_t want = pattern ? 2 : 3;
    bool ok = parts.size() == want && absl::SimpleAtoi(parts[0], &e.row) && absl::SimpleAtoi(parts[1], &e.col);
    if (ok && !pattern) {
      if (field == "integer") {
        int64_t v = 0;
        ok = absl::SimpleAtoi(parts[2], &v);
        e.value = static_cast<double>(v);
      } else {
        ok = absl::SimpleAtod(parts[2], &e.value);
      }
    }
    if (!ok) {
      return Bad(name, line_no, absl::StrCat("entry ", QuoteForMessage(line), " is not 'ROW COL", pattern ? "" : " VALUE",
                                             "' (", field, ")"));
    }
    if (e.row < 1 || e.row > rows || e.col < 1 || e.col > cols) {
      return Bad(name, line_no, absl::StrCat("entry (", e.row, ", ", e.col, ") is outside the ", rows, " x ", cols,
                                             " matrix (indices start at 1)"));
    }
    --e.row;
    --e.col;
    if (mirror && e.col > e.row) {
      return Bad(name, line_no, absl::StrCat("entry (", e.row + 1, ", ", e.col + 1, ") is above the diagonal; a ",
                                             symmetry, " file stores the lower triangle"));
    }
    if (symmetry == "skew-symmetric" && e.row == e.col) {
      return Bad(name, line_no, "a skew-symmetric matrix has no diagonal entries");
    }
    entries.push_back(e);
    if (mirror && e.row != e.col) entries.push_back({e.col, e.row, mirror_sign * e.value});
    ++seen;
  }
  if (seen != stored) {
    return Bad(name, static_cast<int64_t>(lines.size()),
               absl::StrCat("the file has ", seen, " entries but the size line gives ", stored));
  }

  // Sort by (row, col) and sum duplicates, in file order within a duplicate run (a
  // stable sort), so the sums are reproducible.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.row != b.row ? a.row < b.row : a.col < b.col; });
  std::vector<int64_t> indptr(static_cast<size_t>(rows) + 1, 0), cols_out;
  std::vector<double> values;
  cols_out.reserve(entries.size());
  values.reserve(entries.size());
  for (size_t i = 0; i < entries.size();) {
    size_t j = i;
    double sum = 0;
    while (j < entries.size() && entries[j].row == entries[i].row && entries[j].col == entries[i].col) {
      sum += entries[j].value;
      ++j;
    }
    cols_out.push_back(entries[i].col);
    values.push_back(sum);
    ++indptr[static_cast<size_t>(entries[i].row) + 1];
    i = j;
  }
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r) indptr[r + 1] += indptr[r];

  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  a.symmetric = mirror;
  const int64_t nnz = static_cast<int64_t>(cols_out.size());
  KPS_ASSIGN_OR_RETURN(a.indptr, Tensor::FromVector<int64_t>(indptr, Shape{rows + 1}));
  if (cols <= int64_t{2147483647}) {
    std::vector<int32_t> narrow(cols_out.begin(), cols_out.end());
    KPS_ASSIGN_OR_RETURN(a.indices, Tensor::FromVector<int32_t>(narrow, Shape{nnz}));
  } else {
    KPS_ASSIGN_OR_RETURN(a.indices, Tensor::FromVector<int64_t>(cols_out, Shape{nnz}));
  }
  if (!pattern) {
    KPS_ASSIGN_OR_RETURN(a.values, Tensor::FromVector<double>(values, Shape{nnz}));
  }
  return a;
}

absl::StatusOr<CsrMatrix> ReadMatrixMarket(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("Matrix Market file ", QuoteForMessage(path, 1024), ": cannot open: ", std::strerror(errno)));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat("Matrix Market file ", QuoteForMessage(path, 1024), ": read failed"));
  }
  return ParseMatrixMarket(buf.str(), path);
}

}  // namespace io
}  // namespace kps
