// Tuning knobs: launch choices that one environment variable, KPS_TUNE, can change, so
// that one benchmark run can compare them. The defaults (at each call site) are the
// measured choices; the knobs are for measuring and for tests that must reach a path at
// small sizes, not for users.
//
// Syntax: comma-separated `family.key=value` entries, e.g.
//
//   KPS_TUNE=reduce.tall=2,sort.block_max=1024,sort.radix=ballot
//
// Values are integers (decimal, int64 range), except the keys that take a word (TuneKeys()
// lists them with their words). The variable is read once, at the first lookup. An entry
// without '=' or '.', with an unknown key, a value that is not an integer or a word the
// key does not take is ignored, and all such entries are named on one warning line on
// stderr, once. Surrounding spaces and empty entries are skipped; a later entry for the
// same key replaces an earlier one.
//
//   const int64_t block_max = std::min<int64_t>(TuneInt("sort.block_max", 4096), 4096);
//
// Lookups are thread-safe and cheap, but each family reads its knobs once into a static
// struct anyway (reduce_tuning.h's GetTuning), so hot paths do no lookups.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace kps {

// One known knob: the table in tuning.cc lists every one (and is the list `KPS_TUNE`
// accepts), so that a typo is a warning instead of a setting that silently does nothing.
struct TuneKeyInfo {
  absl::string_view name;          // "family.key"
  absl::string_view words;         // the words it takes, "a|b|c"; empty for an integer
  absl::string_view default_text;  // the default, as written in KPS_TUNE
  absl::string_view doc;           // what it sets, one line
};

// Every known knob, sorted by name.
absl::Span<const TuneKeyInfo> TuneKeys();

// The knobs one KPS_TUNE string sets, and what was wrong with the entries it ignored.
struct TuneSettings {
  // std::map, not a hash map: a dozen keys, and this header reaches nvcc (reduce_tuning.h).
  std::map<std::string, int64_t, std::less<>> ints;
  std::map<std::string, std::string, std::less<>> words;
  // One per ignored entry, naming it: `"reduce.tal=2": unknown key`.
  std::vector<std::string> problems;

  // The value of `family_key` if the string set it, else `default_value`.
  int64_t Int(absl::string_view family_key, int64_t default_value) const;
  std::string Word(absl::string_view family_key, absl::string_view default_value) const;
};

// Parses a KPS_TUNE string (the variable's reader, and tests without setenv).
TuneSettings ParseTuneString(absl::string_view text);

// The value of the integer knob `family_key` ("reduce.tall") in KPS_TUNE, or
// `default_value` where the variable does not set it. `family_key` must be an integer
// key of TuneKeys() (an error is logged otherwise, fatal in debug builds).
int64_t TuneInt(absl::string_view family_key, int64_t default_value);
// The same for a knob that takes a word ("sort.radix").
std::string TuneWord(absl::string_view family_key, absl::string_view default_value);

}  // namespace kps
