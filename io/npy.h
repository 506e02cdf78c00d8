// Reading and writing NumPy .npy files, so `kps run` can take inputs from and hand
// outputs to Python (np.load / np.save) without any other format in between.
//
//   absl::StatusOr<kps::Tensor> x = kps::io::ReadNpy("x.npy");      // a CPU tensor
//   absl::Status s = kps::io::WriteNpy("out.npy", *x);
//
// Supported: format versions 1.0, 2.0 and 3.0 on read (1.0 is written, 2.0 when the
// header is too long for 1.0), C order only, and the little-endian dtypes
// |b1 |i1 |u1 <i2 <i4 <i8 <f2 <f4 <f8 (the KPS dtypes bool, int8, uint8, int16, int32,
// int64, float16, float32, float64).
//
// bfloat16 has no NumPy dtype, so WriteNpy writes a bfloat16 tensor as <f4: widening
// bfloat16 to float32 is exact, and np.load gives the same values. Reading such a file
// gives a float32 tensor.
//
// Files are untrusted input: every size in them is checked against the file's length
// with overflow-checked arithmetic, shapes obey kps::ValidateShape, and text taken from a
// file reaches an error message only through QuoteForMessage (escaped and truncated).
// This file depends on the registry only (not on cli.cc), so a fuzz target can link it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "registry/tensor.h"

namespace kps {
namespace io {

// The longest .npy header this reader accepts. NumPy's own np.load refuses headers over
// 10000 bytes by default; a header of a rank-64 array is under 2 KB, so 1 MiB only keeps
// a hostile length field from making the reader allocate gigabytes.
inline constexpr size_t kMaxNpyHeaderBytes = size_t{1} << 20;
// NumPy arrays have at most 64 dimensions (NPY_MAXDIMS in NumPy 2; 32 before).
inline constexpr size_t kMaxNpyRank = 64;

// Quotes `text` for an error message: wrapped in single quotes, printable ASCII kept,
// backslash and quote escaped, any other byte written as \xNN (so no terminal escape
// sequence passes); when `text` is longer than `max_bytes`, only its first `max_bytes`
// bytes are shown, followed by "... (N bytes)". For any text a file or a user supplies.
//
//   QuoteForMessage("a\x1b[2Jb")  == "'a\\x1b[2Jb'"
std::string QuoteForMessage(absl::string_view text, size_t max_bytes = 80);

// What the preamble and header of a .npy file say about its array.
struct NpyHeader {
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> dims;  // valid under kps::ValidateShape
  int64_t numel = 0;
  size_t data_offset = 0;  // where the data starts: preamble plus header
  size_t data_bytes = 0;   // numel * element size; the file holds exactly this after the header
};

// Parses the preamble and header of a .npy file of `file_size` bytes whose first bytes
// are `head`. `head` must hold the first min(file_size, 12 + kMaxNpyHeaderBytes) bytes of
// the file (more is fine). Checks everything short of reading the data: magic, version,
// header length against the file size, the header dictionary, dtype, shape, and that the
// data length is exactly numel * element size. `name_for_errors` (a path) is quoted in
// every message.
absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view head, uint64_t file_size,
                                         const std::string& name_for_errors);

// Parses a whole .npy file held in memory into a new contiguous CPU tensor (the entry
// point of the fuzz target; ReadNpy shares its checks through ParseNpyHeader).
absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes, const std::string& name_for_errors);

// Reads the .npy file at `path` into a new contiguous CPU tensor. Only regular files are
// read: a directory, FIFO or device is refused at once (a FIFO without a writer does not
// block). Errors (NotFound, InvalidArgument, Unimplemented, ...) name the file and say
// what is wrong: not a regular file, bad magic, unsupported version or dtype, Fortran
// order, a malformed header, truncated data.
absl::StatusOr<Tensor> ReadNpy(const std::string& path);

// One file for WriteNpyFiles.
struct NpyOutput {
  std::string path;
  Tensor tensor;
};

// Writes each tensor (any device, any layout: copied to a contiguous host tensor first
// if needed) to its path as a C-order .npy file, all or nothing as far as POSIX allows:
// every file is first written in full to a new temporary file in its target's directory
// (created with O_EXCL|O_NOFOLLOW, mode 0644 less the umask, fsync'ed, every write and
// close checked), and only when all of them are written are they renamed over their
// targets. rename() replaces a symlink at the target itself, never the file it points
// to. On any failure every temporary file is removed, and an existing target is left as
// it was. The renames themselves are one step each, not one atomic step together: if a
// later rename fails (rare: every target is checked before, e.g. for a directory in the
// way), the earlier targets are already replaced and the error says which. A process
// killed mid-write leaves its hidden temporary files (".NAME.tmp-XXXXXXXXXXXX") behind.
absl::Status WriteNpyFiles(absl::Span<const NpyOutput> outputs);

// WriteNpyFiles for one file: writes `t` to `path`, replacing it atomically.
absl::Status WriteNpy(const std::string& path, const Tensor& t);

// Writes `contents` to `path` the way WriteNpyFiles writes one file: a new temporary file
// beside it (never through a symlink), fully written and synced, then renamed over it; on
// failure nothing new is left. For the tool's other outputs (kps bench --json).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// The NumPy dtype string ("<f4", "|b1", ...) a tensor of `dtype` is written as.
std::string NpyDescr(DataType dtype);

}  // namespace io
}  // namespace kps
