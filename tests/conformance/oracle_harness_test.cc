// The pi oracle harness itself (tests/oracle): the checked-in fixtures and
// goldens are exactly what it produces today, and pi shows the quirks that
// Compactor's documented deviations are about.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "support/oracle.h"
#include "support/test_util.h"

namespace compactor {
namespace {

namespace fs = std::filesystem;

std::set<std::string> FilesUnder(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).string());
  }
  return out;
}

// `oracle.mjs fixtures` regenerates tests/fixtures/pi byte for byte: the
// sessions are reproducible and the goldens are pi 0.73.1's answers (a change
// of pi's behaviour, or of a generator without regenerating, fails here).
TEST(OracleFixtures, RegeneratedByteForByte) {
  COMPACTOR_REQUIRE_ORACLE();
  testing::TempDir tmp;
  testing::RunResult r = testing::RunOracle({"fixtures", tmp.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path checked_in = testing::FixturePath("pi");
  std::set<std::string> want = FilesUnder(checked_in);
  ASSERT_EQ(FilesUnder(tmp.path()), want);
  EXPECT_GE(want.size(), 12u);
  for (const std::string& f : want) {
    EXPECT_TRUE(testing::ReadFileOrDie(tmp.path() + "/" + f) ==
                testing::ReadFileOrDie((checked_in / f).string()))
        << f << " differs from `tests/oracle/run.sh fixtures tests/fixtures/pi`";
  }
}

// pi 0.73.1's preparation on each quirk shape (tests/oracle/lib/quirks.mjs):
// the behaviour docs/compatibility.md describes and Compactor's plan deviates
// from by default (checked against pi in OracleConformance.Plan*).
TEST(OracleQuirks, PiShowsTheDocumentedQuirks) {
  COMPACTOR_REQUIRE_ORACLE();
  testing::RunResult r = testing::RunOracle({"quirks"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, nlohmann::json> by;
  size_t start = 0;
  while (start < r.out.size()) {
    size_t end = r.out.find('\n', start);
    auto j = nlohmann::json::parse(r.out.substr(start, end - start));
    by[j["name"].get<std::string>() + "@" + std::to_string(j["keepRecentTokens"].get<int>())] = j;
    start = end + 1;
  }
  ASSERT_EQ(by.size(), 10u) << r.out;
  // Q1: the settings entry before the cut user message makes the whole
  // previous turn a "turn prefix".
  const auto& q1 = by["q1-settings-before-cut@1300"];
  EXPECT_EQ(q1["firstKept"], "thinking_level_change:");
  EXPECT_EQ(q1["isSplitTurn"], true);
  EXPECT_GT(q1["turnPrefixMessages"].get<int>(), 0);
  // Q2: a cut on a custom_message is a split turn with an empty prefix.
  const auto& q2 = by["q2-custom-message-cut@1200"];
  EXPECT_EQ(q2["firstKept"], "custom_message:");
  EXPECT_EQ(q2["isSplitTurn"], true);
  EXPECT_EQ(q2["turnPrefixMessages"], 0);
  // Q3, Q5: a preparation that summarizes nothing.
  for (const char* k : {"q3-everything-fits@20000", "q5-big-custom-message@1000"}) {
    EXPECT_EQ(by[k]["messagesToSummarize"], 0) << k;
    EXPECT_EQ(by[k]["turnPrefixMessages"], 0) << k;
  }
  // Q6: the second compaction resumes at the first one's kept entry.
  EXPECT_EQ(by["q6-kept-window-holds-compaction@1100"]["hasPreviousSummary"], true);
  // Q7: a huge newest tool result makes pi keep everything; Q7b: not when
  // an assistant message follows it.
  EXPECT_EQ(by["q7-huge-trailing-tool-result@20000"]["messagesToSummarize"], 0);
  EXPECT_EQ(by["q7-huge-trailing-tool-result@20000"]["turnPrefixMessages"], 0);
  EXPECT_GT(by["q7b-huge-tool-result-then-assistant@20000"]["messagesToSummarize"].get<int>(), 0);
}

}  // namespace
}  // namespace compactor
