// The `kps` command line: list and describe the registered ops, run one op on random or
// .npy inputs (optionally checking the device's result against the CPU's), and benchmark.
//
//   kps list
//   kps list --markdown > docs/ops.md     (the generated op table; a test compares them)
//   kps describe add
//   kps run add --shape 2,3 --dtype f16 --device cuda --attr alpha=2 --check --out /tmp/o
//   kps run add --input x=x.npy --input y=y.npy --out /tmp/o
//   kps bench --json kps_bench.json --filter add_
//
// The logic is a library function rather than main() so tests can drive every command
// in-process and read what it printed.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "registry/data_type.h"
#include "registry/shape.h"

namespace kps {
namespace cli {

// Exit codes of RunCli.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // the command ran and failed (bad op call, FAIL, I/O, a bad file)
// The command line itself is wrong: an unknown command, flag, op, attribute or input
// name, a value that does not parse (a number must read fully), a flag given twice.
inline constexpr int kExitUsage = 2;

// Runs the command line `args` (without argv[0]): normal output goes to `out`, errors
// and warnings to `err`. Returns the process exit code. Never throws or aborts on bad
// input: every problem becomes a message on `err` and a nonzero code.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Parses a shape as given to --shape: "2,3", "[2, 3]", "(2,3)" or "2x3"; "" or "[]" is
// a scalar (rank 0). Dimensions are non-negative decimal integers written plainly (digits
// only: no sign, no leading zero, no spaces inside); "0x10" is refused, not read as
// [0, 10], since it reads as hexadecimal too. The shape must pass kps::ValidateShape
// (product of the dims, zero dims counted as 1, at most 2^60).
absl::StatusOr<Shape> ParseShape(absl::string_view text);

// A dtype's short name, as --dtype accepts it ("f32", "bf16", "i8", "bool", ...).
absl::string_view ShortDataTypeName(DataType t);

// The comparison tolerance `kps run --check` uses for outputs of `dtype`: an element
// passes when |got - want| <= atol + rtol * |want|. Zero for integers and bool (exact).
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
Tolerance ToleranceFor(DataType dtype);

}  // namespace cli
}  // namespace kps
