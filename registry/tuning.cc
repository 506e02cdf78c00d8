#include "registry/tuning.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "registry/logging.h"

namespace kps {
namespace {

// Every knob, sorted by name. The defaults here are for `kps` and the docs; each call site
// passes its own (reduce_tuning_test checks the reduce ones against reduce's Tuning).
constexpr TuneKeyInfo kTuneKeys[] = {
    {"elementwise.tile_min", "", "16",
     "inputs read across their contiguous dim go through shared-memory tiles where that dim and the innermost "
     "both span at least this many elements (0: off)"},
    {"reduce.col_by", "", "8", "lanes along the reduced extent in the column kernel (reduced outer dims)"},
    {"reduce.col_fill", "", "2", "a column reduction's split fills col_fill / 2 x 1024 threads per SM"},
    {"reduce.col_min", "", "16", "fewest reduced rows per lane before the extent is split further"},
    {"reduce.col_solo", "", "768",
     "column reductions with at least this many lanes of outputs per SM give each lane a whole column (0: off)"},
    {"reduce.max_grid", "", "1073741824",
     "caps a grid's x extent (> 0, at most 2^30), so that tests reach the z-extended grids at small sizes"},
    {"reduce.narrow", "", "128",
     "contiguous [R, C] blocks reduced over R with rows of at most this many bytes take the narrow column "
     "kernel (0: off)"},
    {"reduce.narrow_steps", "", "8", "the narrow column kernel's blocks take at least this many steps each"},
    {"reduce.row_loads", "", "4", "most loads per lane on long rows (the lane count is a power of two, 32 to 512)"},
    {"reduce.row_loads_heavy", "", "32", "reduce.row_loads for states of more than 8 bytes (var, argmax)"},
    {"reduce.row_threads", "", "512", "threads per row-kernel block, 256 or 512 (others ignored)"},
    {"reduce.short", "", "1", "the short-row kernel (a warp segment per row): 0 off"},
    {"reduce.tall", "", "1",
     "the tall column kernel: 0 off, 1 where one block per SM covers the outputs, 2 wherever the states fit"},
    {"reduce.tiny", "", "32",
     "contiguous rows back to back of at most this many bytes (and 64) take a thread each, staged through shared "
     "memory (0: off)"},
    {"reduce.waves", "", "1", "a row reduction splits across blocks up to this many waves of resident blocks"},
    {"scan.bands_min", "", "128",
     "scans along an outer dim shorter than this, with columns enough to fill the GPU, take a thread per column "
     "instead of the bands kernel (0: bands for any length)"},
    {"scan.cols_per_sm", "", "256",
     "cummax/cummin along a non-innermost dim with at least this many columns per SM take a thread per few columns"},
    {"sort.block_max", "", "4096", "lines longer than this (at most 4096) go to the device radix sort"},
    {"sort.block_radix", "", "3",
     "lines of 129 to 4096 elements: 1 CUB's block radix sort, 0 the bitonic kernel, 2 KPS's radix primitives, "
     "3 KPS's except where CUB's measured faster"},
    {"sort.per_line", "", "16",
     "at most this many long lines sort one by one, each over the whole device (0: never; else CUB's segmented "
     "sort, a block per line)"},
    {"sort.per_line_keys", "", "4096", "lines sort one by one only where length >= lines * this"},
    {"sort.radix", "cub|ballot|match|auto", "auto",
     "long lines of a 1- to 4-byte dtype sorted whole or one by one: cub takes CUB's radix sort instead of the "
     "onesweep; ballot or match fixes how the onesweep ranks (auto: each pass picks by how many digits occur)"},
    {"sort.thread_lines", "", "32768", "sort.thread_max: only with at least this many lines"},
    {"sort.thread_max", "", "32",
     "lines of at most this many elements (<= 32; 0: never) sort a thread per line in registers"},
    {"spmv.row_max", "", "32",
     "spmv's tiles whose rows all have at most this many entries in the tile take a thread per row (0: the merge "
     "walk everywhere)"},
    {"topk.radix", "", "1",
     "topk's strategies: 1 the radix select and warp-sort paths (topk_cuda.cu), 0 the old ones (selection for "
     "k <= 16, a full sort beyond)"},
    {"topk.select_k", "", "16", "topk.radix=1: the largest k (<= 16) that the selection kernel takes"},
    {"topk.short_max", "", "128", "topk.radix=1: lines of at most this many elements (<= 128) take a warp each"},
    {"topk.split_lines", "", "256",
     "topk.radix=1: at most this many long lines (<= 65535) split each line's radix select across blocks"},
    {"topk.split_min", "", "32768", "topk.radix=1: the shortest line that the split radix select takes"},
    {"triangle.hash", "", "1",
     "triangle_count looks each element up in N+(u) through a hash table in shared memory (0: binary search)"},
    {"triangle.min_side", "", "1",
     "triangle_count walks the shorter of N+(u) and N+(v) for each edge and searches the other (0: always N+(v))"},
};

const TuneKeyInfo* FindKey(absl::string_view name) {
  for (const TuneKeyInfo& k : kTuneKeys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

bool TakesWord(const TuneKeyInfo& key, absl::string_view word) {
  for (absl::string_view w : absl::StrSplit(key.words, '|')) {
    if (w == word) return true;
  }
  return false;
}

// The known keys of `name`'s family, or every key where the family is unknown too.
std::string KnownKeysLike(absl::string_view name) {
  const absl::string_view family = name.substr(0, name.find('.') + 1);  // "reduce."
  std::vector<absl::string_view> same, all;
  for (const TuneKeyInfo& k : kTuneKeys) {
    all.push_back(k.name);
    if (absl::StartsWith(k.name, family)) same.push_back(k.name);
  }
  return absl::StrJoin(same.empty() ? all : same, " ");
}

// KPS_TUNE, parsed at the first lookup; its problems go to stderr then, once.
const TuneSettings& EnvSettings() {
  static const TuneSettings* settings = [] {
    const char* env = std::getenv("KPS_TUNE");
    auto* s = new TuneSettings(ParseTuneString(env != nullptr ? env : ""));
    if (!s->problems.empty()) {
      KPS_LOG(WARNING) << "KPS_TUNE: ignoring " << absl::StrJoin(s->problems, "; ");
    }
    return s;
  }();
  return *settings;
}

// A lookup of a key the table lacks, or of the wrong kind, is a typo at the call site: the
// knob could never be set.
void CheckCallSiteKey(absl::string_view family_key, bool word) {
  const TuneKeyInfo* key = FindKey(family_key);
  if (key == nullptr || key->words.empty() == word) {
    KPS_LOG(DFATAL) << "Tune" << (word ? "Word" : "Int") << "(\"" << family_key
                    << "\"): not a known " << (word ? "word" : "integer") << " key of registry/tuning.cc";
  }
}

}  // namespace

absl::Span<const TuneKeyInfo> TuneKeys() { return kTuneKeys; }

int64_t TuneSettings::Int(absl::string_view family_key, int64_t default_value) const {
  const auto it = ints.find(family_key);
  return it != ints.end() ? it->second : default_value;
}

std::string TuneSettings::Word(absl::string_view family_key, absl::string_view default_value) const {
  const auto it = words.find(family_key);
  return it != words.end() ? it->second : std::string(default_value);
}

TuneSettings ParseTuneString(absl::string_view text) {
  TuneSettings s;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) continue;
    const auto problem = [&](absl::string_view what) { s.problems.push_back(absl::StrCat("\"", entry, "\": ", what)); };
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos) {
      problem("no '=' (entries are family.key=value)");
      continue;
    }
    const absl::string_view name = absl::StripAsciiWhitespace(entry.substr(0, eq));
    const absl::string_view value = absl::StripAsciiWhitespace(entry.substr(eq + 1));
    if (name.find('.') == absl::string_view::npos) {
      problem("no family (entries are family.key=value, e.g. reduce.tall=2)");
      continue;
    }
    const TuneKeyInfo* key = FindKey(name);
    if (key == nullptr) {
      problem(absl::StrCat("unknown key (known: ", KnownKeysLike(name), ")"));
      continue;
    }
    if (!key->words.empty()) {
      if (!TakesWord(*key, value)) {
        problem(absl::StrCat("not one of ", key->words));
        continue;
      }
      s.words[std::string(name)] = std::string(value);
      continue;
    }
    int64_t v = 0;
    if (!absl::SimpleAtoi(value, &v)) {
      problem("not an integer (or out of the int64 range)");
      continue;
    }
    s.ints[std::string(name)] = v;
  }
  return s;
}

int64_t TuneInt(absl::string_view family_key, int64_t default_value) {
  CheckCallSiteKey(family_key, /*word=*/false);
  return EnvSettings().Int(family_key, default_value);
}

std::string TuneWord(absl::string_view family_key, absl::string_view default_value) {
  CheckCallSiteKey(family_key, /*word=*/true);
  return EnvSettings().Word(family_key, default_value);
}

}  // namespace kps
