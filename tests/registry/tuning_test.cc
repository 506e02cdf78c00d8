// Tuning knobs (registry/tuning.h): the KPS_TUNE parser on given strings (good entries,
// several families, words, malformed and unknown entries, overflow), the key table, and
// the variable itself read once in a child process, with its one warning line.
#include "registry/tuning.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace kps {
namespace {

// `text` contains `part` (gmock is not a test dependency).
::testing::AssertionResult Has(const std::string& text, absl::string_view part) {
  if (absl::StrContains(text, part)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" lacks \"" << part << "\"";
}
std::string Problems(const TuneSettings& s) { return absl::StrJoin(s.problems, "; "); }

TEST(TuningTest, GoodStringOfSeveralFamilies) {
  const TuneSettings s = ParseTuneString("reduce.tall=2,sort.block_max=1024,sort.radix=ballot,reduce.max_grid=3");
  EXPECT_TRUE(s.problems.empty()) << Problems(s);
  EXPECT_EQ(s.Int("reduce.tall", 1), 2);
  EXPECT_EQ(s.Int("reduce.max_grid", 1 << 30), 3);
  EXPECT_EQ(s.Int("sort.block_max", 4096), 1024);
  EXPECT_EQ(s.Word("sort.radix", "auto"), "ballot");
  EXPECT_EQ(s.ints.size(), 3u);
  EXPECT_EQ(s.words.size(), 1u);
}

TEST(TuningTest, DefaultsWhenAbsent) {
  for (const char* text : {"", ",", " , ,", "reduce.tall=2"}) {
    SCOPED_TRACE(text);
    const TuneSettings s = ParseTuneString(text);
    EXPECT_TRUE(s.problems.empty()) << Problems(s);
    EXPECT_EQ(s.Int("reduce.row_loads", 4), 4);
    EXPECT_EQ(s.Int("sort.block_radix", 1), 1);
    EXPECT_EQ(s.Word("sort.radix", "auto"), "auto");
  }
}

TEST(TuningTest, SpacesNegativesAndTheLastEntryWins) {
  const TuneSettings s = ParseTuneString(" reduce.tall = 0 , reduce.waves=-3,reduce.tall=2,sort.radix= match ");
  EXPECT_TRUE(s.problems.empty()) << Problems(s);
  EXPECT_EQ(s.Int("reduce.tall", 1), 2);
  EXPECT_EQ(s.Int("reduce.waves", 1), -3);
  EXPECT_EQ(s.Word("sort.radix", "auto"), "match");
}

TEST(TuningTest, WordValues) {
  for (const char* word : {"cub", "ballot", "match", "auto"}) {
    const TuneSettings s = ParseTuneString(std::string("sort.radix=") + word);
    EXPECT_TRUE(s.problems.empty()) << Problems(s) << word;
    EXPECT_EQ(s.Word("sort.radix", "auto"), word);
  }
  const TuneSettings s = ParseTuneString("sort.radix=fast,sort.radix=1,sort.radix=,sort.radix=CUB");
  EXPECT_EQ(s.Word("sort.radix", "auto"), "auto");
  ASSERT_EQ(s.problems.size(), 4u) << Problems(s);
  EXPECT_TRUE(Has(s.problems[0], "\"sort.radix=fast\": not one of cub|ballot|match|auto"));
}

TEST(TuningTest, MalformedEntriesAreNamedAndIgnored) {
  const TuneSettings s = ParseTuneString(
      "reduce.tall,tall=2,reduce.row_loads=abc,reduce.col_by=,reduce.col_min=4x,reduce.waves=2.5,sort.block_max=1024");
  EXPECT_EQ(s.Int("sort.block_max", 4096), 1024);  // the good entry after them still counts
  EXPECT_EQ(s.ints.size(), 1u);
  EXPECT_EQ(s.Int("reduce.tall", 1), 1);
  EXPECT_EQ(s.Int("reduce.row_loads", 4), 4);  // not 0, as atoi would have read it
  EXPECT_EQ(s.Int("reduce.col_by", 8), 8);
  ASSERT_EQ(s.problems.size(), 6u) << Problems(s);
  EXPECT_TRUE(Has(s.problems[0], "\"reduce.tall\": no '='"));
  EXPECT_TRUE(Has(s.problems[1], "\"tall=2\": no family"));
  EXPECT_TRUE(Has(s.problems[2], "\"reduce.row_loads=abc\": not an integer"));
  EXPECT_TRUE(Has(s.problems[3], "\"reduce.col_by=\": not an integer"));
  EXPECT_TRUE(Has(s.problems[4], "\"reduce.col_min=4x\": not an integer"));
  EXPECT_TRUE(Has(s.problems[5], "\"reduce.waves=2.5\": not an integer"));
}

TEST(TuningTest, IntegerOverflowIsRejected) {
  const TuneSettings s = ParseTuneString(
      "reduce.row_loads=99999999999999999999,reduce.col_by=-99999999999999999999,reduce.max_grid=9223372036854775807");
  EXPECT_EQ(s.Int("reduce.row_loads", 4), 4);
  EXPECT_EQ(s.Int("reduce.col_by", 8), 8);
  EXPECT_EQ(s.Int("reduce.max_grid", 1), std::numeric_limits<int64_t>::max());
  ASSERT_EQ(s.problems.size(), 2u) << Problems(s);
  EXPECT_TRUE(Has(s.problems[0], "\"reduce.row_loads=99999999999999999999\": not an integer"));
}

TEST(TuningTest, UnknownKeysAreNamedWithTheKnownOnes) {
  const TuneSettings s = ParseTuneString("reduce.tal=2,fft.block=256,reduce.tall=0");
  EXPECT_EQ(s.Int("reduce.tall", 1), 0);
  EXPECT_EQ(s.Int("reduce.tal", 7), 7);
  ASSERT_EQ(s.problems.size(), 2u) << Problems(s);
  // A known family: its keys; an unknown one: every key.
  EXPECT_TRUE(Has(s.problems[0], "\"reduce.tal=2\": unknown key"));
  EXPECT_TRUE(Has(s.problems[0], "reduce.tall"));
  EXPECT_FALSE(absl::StrContains(s.problems[0], "sort."));
  EXPECT_TRUE(Has(s.problems[1], "\"fft.block=256\": unknown key"));
  EXPECT_TRUE(Has(s.problems[1], "sort.radix"));
}

TEST(TuningTest, KeyTableIsSortedAndItsDefaultsParse) {
  const auto keys = TuneKeys();
  ASSERT_FALSE(keys.empty());
  for (size_t i = 0; i < keys.size(); ++i) {
    const TuneKeyInfo& k = keys[i];
    SCOPED_TRACE(std::string(k.name));
    if (i > 0) {
      EXPECT_LT(keys[i - 1].name, k.name);
    }
    const std::vector<absl::string_view> parts = absl::StrSplit(k.name, '.');
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_FALSE(parts[0].empty());
    EXPECT_FALSE(parts[1].empty());
    EXPECT_FALSE(k.doc.empty());
    // The documented default is itself a good entry that sets what it says.
    const TuneSettings s = ParseTuneString(std::string(k.name) + "=" + std::string(k.default_text));
    EXPECT_TRUE(s.problems.empty()) << Problems(s);
    if (k.words.empty()) {
      int64_t v = 0;
      ASSERT_TRUE(absl::SimpleAtoi(k.default_text, &v));
      EXPECT_EQ(s.Int(k.name, v + 1), v);
    } else {
      EXPECT_EQ(s.Word(k.name, ""), k.default_text);
    }
  }
  std::vector<std::string> names;
  for (const TuneKeyInfo& k : keys) names.emplace_back(k.name);
  for (const char* name : {"reduce.max_grid", "reduce.tall", "sort.block_max", "sort.block_radix", "sort.radix"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

// The variable itself, read in a fresh process (the "threadsafe" death-test style re-runs
// this binary), so that this process's own reading, done or not, does not matter: the
// values take, and the bad entries are named on one warning line, once.
TEST(TuningTest, VariableIsReadOnceWithOneWarningLine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("KPS_TUNE", "reduce.tall=2,oops,sort.radix=fast,reduce.row_loads=99999999999999999999", 1);
        ::testing::internal::CaptureStderr();
        const bool values = TuneInt("reduce.tall", 1) == 2 && TuneInt("reduce.row_loads", 4) == 4 &&
                            TuneWord("sort.radix", "auto") == "auto" && TuneInt("sort.block_max", 4096) == 4096;
        setenv("KPS_TUNE", "reduce.tall=0", 1);  // read once: a later change does not count
        const bool once = TuneInt("reduce.tall", 1) == 2;
        const std::string err = ::testing::internal::GetCapturedStderr();
        // glog may add a line of its own before the first message ("Logging before
        // InitGoogleLogging()"): count ours.
        std::vector<absl::string_view> ours;
        for (absl::string_view line : absl::StrSplit(err, '\n')) {
          if (absl::StrContains(line, "KPS_TUNE")) ours.push_back(line);
        }
        const bool warned = ours.size() == 1 && absl::StrContains(ours[0], "KPS_TUNE: ignoring \"oops\"") &&
                            absl::StrContains(ours[0], "\"sort.radix=fast\"") &&
                            absl::StrContains(ours[0], "\"reduce.row_loads=99999999999999999999\"");
        if (!warned) std::fprintf(stderr, "stderr was: %s\n", err.c_str());
        std::exit(values && once && warned ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(TuningTest, CallSiteKeyOutsideTheTableIsAnError) {
  // Fatal in debug builds; in release builds an error line and the default.
  EXPECT_DEBUG_DEATH(EXPECT_EQ(TuneInt("reduce.no_such_knob", 5), 5), "not a known integer key");
  EXPECT_DEBUG_DEATH(EXPECT_EQ(TuneWord("reduce.tall", "x"), "x"), "not a known word key");
}

}  // namespace
}  // namespace kps
