// Reading and writing NumPy .npy files, so `kps run` can take inputs from and hand
// outputs to Python (np.load / np.save) without any other format in between.
//
//   absl::StatusOr<kps::Tensor> x = kps::cli::ReadNpy("x.npy");      // a CPU tensor
//   absl::Status s = kps::cli::WriteNpy("out.npy", *x);
//
// Supported: format versions 1.0, 2.0 and 3.0 on read (1.0 is written, 2.0 when the
// header is too long for 1.0), C order only, and the little-endian dtypes
// |b1 |i1 |u1 <i2 <i4 <i8 <f2 <f4 <f8 (the KPS dtypes bool, int8, uint8, int16, int32,
// int64, float16, float32, float64).
//
// bfloat16 has no NumPy dtype, so WriteNpy writes a bfloat16 tensor as <f4: widening
// bfloat16 to float32 is exact, and np.load gives the same values. Reading such a file
// gives a float32 tensor.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "registry/tensor.h"

namespace kps {
namespace cli {

// Reads the .npy file at `path` into a new contiguous CPU tensor. Errors (NotFound,
// InvalidArgument, Unimplemented) name the file and say what is wrong: bad magic,
// unsupported version or dtype, Fortran order, a malformed header, truncated data.
absl::StatusOr<Tensor> ReadNpy(const std::string& path);

// Writes `t` (any device, any layout: it is copied to a contiguous host tensor first if
// needed) to `path` as a C-order .npy file, replacing the file if it exists.
absl::Status WriteNpy(const std::string& path, const Tensor& t);

// The NumPy dtype string ("<f4", "|b1", ...) a tensor of `dtype` is written as.
std::string NpyDescr(DataType dtype);

}  // namespace cli
}  // namespace kps
