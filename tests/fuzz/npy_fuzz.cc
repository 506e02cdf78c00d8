// libFuzzer target for the .npy reader: any bytes must give a Status or a tensor that is
// consistent with the header it came from, never a crash, a hang or undefined behaviour
// (built with -fsanitize=fuzzer,address,undefined).
//
//   npy_fuzz tests/fuzz/corpus/npy            # explore from the seed corpus
//   npy_fuzz -runs=20000 tests/fuzz/corpus/npy  # a bounded run, as ctest does
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "registry/checked_math.h"
#include "registry/tensor.h"
#include "io/npy.h"

namespace {

// Reports a broken invariant and aborts, so libFuzzer saves the input.
[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "npy_fuzz: invariant violated: %s\n", what);
  std::abort();
}

void CheckTensor(absl::string_view bytes, const kps::Tensor& t) {
  if (!t.defined()) Fail("a parsed tensor is undefined");
  if (t.device() != kps::DeviceType::kCpu) Fail("a parsed tensor is not on the CPU");
  if (!t.is_contiguous()) Fail("a parsed tensor is not contiguous");
  // numel must be the product of the dims, computed here independently and checked.
  int64_t numel = 1;
  for (int64_t d : t.shape().dims()) {
    if (d < 0) Fail("a negative dim");
    if (kps::MulOverflow(numel, d, &numel)) Fail("the dims overflow int64");
  }
  if (numel != t.numel()) Fail("numel is not the product of the dims");
  if (numel > kps::kMaxNumel) Fail("numel exceeds kMaxNumel");
  if (!kps::ValidateShape(t.shape(), "fuzz").ok()) Fail("a parsed shape breaks ValidateShape");
  int64_t nbytes = 0;
  if (kps::MulOverflow(numel, static_cast<int64_t>(kps::DataTypeSize(t.dtype())), &nbytes)) {
    Fail("nbytes overflows");
  }
  if (static_cast<int64_t>(t.nbytes()) != nbytes) Fail("nbytes is not numel * element size");
  // The data must come from the input: it cannot be longer than the input.
  if (static_cast<uint64_t>(nbytes) > bytes.size()) Fail("more data bytes than input bytes");
  if (nbytes > 0 && t.raw_data() == nullptr) Fail("non-empty tensor without storage");
  // The header parser agrees with the whole-file parser.
  absl::StatusOr<kps::io::NpyHeader> h = kps::io::ParseNpyHeader(bytes, bytes.size(), "fuzz input");
  if (!h.ok()) Fail("ParseNpy succeeded where ParseNpyHeader fails");
  if (h->dtype != t.dtype() || h->numel != numel || h->data_bytes != static_cast<size_t>(nbytes) ||
      h->data_offset + h->data_bytes != bytes.size()) {
    Fail("ParseNpyHeader disagrees with the tensor");
  }
  // Touch every byte (ASan checks the storage really has nbytes), and bools are 0 or 1.
  const unsigned char* p = static_cast<const unsigned char*>(t.raw_data());
  unsigned sum = 0;
  for (int64_t i = 0; i < nbytes; ++i) {
    sum += p[i];
    if (t.dtype() == kps::DataType::kBool && p[i] > 1) Fail("a bool byte other than 0 or 1");
  }
  (void)sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  // ReadNpy's use: the bytes are only the start of a longer file. Whatever the header
  // claims, an accepted header must lie within the bytes given, and its data within the
  // claimed file.
  const uint64_t file_size = uint64_t{size} * 2 + 1;
  absl::StatusOr<kps::io::NpyHeader> head = kps::io::ParseNpyHeader(bytes, file_size, "fuzz input");
  if (head.ok() && (head->data_offset > size || head->data_offset + head->data_bytes != file_size)) {
    Fail("ParseNpyHeader accepted a header past the given bytes or a wrong data length");
  }
  absl::StatusOr<kps::Tensor> t = kps::io::ParseNpy(bytes, "fuzz input");
  if (t.ok()) {
    CheckTensor(bytes, *t);
  } else {
    // An error message must stay short and printable whatever the file holds (its
    // header is quoted and cut): no raw control byte, no echo of a huge header.
    const absl::string_view m = t.status().message();
    if (m.size() > 4096) Fail("an error message over 4096 bytes");
    for (char c : m) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (u < 0x20 || u >= 0x7F) Fail("a non-printable byte in an error message");
    }
  }
  return 0;
}
