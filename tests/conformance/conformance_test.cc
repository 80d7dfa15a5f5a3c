// Conformance of `compactor context|stats|plan --json` with pi 0.73.1.
//
// (a) Golden fixtures (no node needed): tests/fixtures/pi/expected/*.json hold
//     the pi oracle's output for the fixture sessions (v1 files and pi's own
//     v3 migrations of them, and a session written through pi's SessionManager).
// (b) Live oracle (node; tests/oracle installs pi 0.73.1 once): a generated
//     corpus (`oracle.mjs corpus`), a session written through pi's API
//     (`write-session`) and a large generated one (`gen-large`), answered by
//     `oracle.mjs batch`.
//
// See docs/conformance.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conformance/conformance_util.h"
#include "support/oracle.h"

namespace compactor::conformance {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = COMPACTOR_SOURCE_DIR;
// $COMPACTOR_CLI overrides the binary under test (e.g. an installed compactor).
const std::string kCli =
    Env("COMPACTOR_CLI").empty() ? std::string(COMPACTOR_CLI_PATH) : Env("COMPACTOR_CLI");

// ---------------------------------------------------------------------------
// Running the CLI

struct CliOutput {
  CommandResult result;
  std::optional<Json> json;
  std::string parse_error;
  std::string command;
};

CliOutput RunCli(const std::vector<std::string>& args) {
  CliOutput out;
  out.command = ShellQuote(kCli);
  for (const auto& a : args) {
    out.command += ' ';
    out.command += ShellQuote(a);
  }
  out.result = RunCommand(out.command);
  if (out.result.exit_code == 0) out.json = ParseJson(out.result.out, &out.parse_error);
  return out;
}

std::string Describe(const CliOutput& out) {
  std::string err = out.result.err.substr(0, 2000);
  return "command: " + out.command + "\nexit code: " + std::to_string(out.result.exit_code) +
         "\nstderr: " + err +
         (out.parse_error.empty() ? "" : "\nJSON parse error: " + out.parse_error);
}

std::vector<std::string> ContextArgs(const fs::path& file, const std::optional<std::string>& leaf) {
  std::vector<std::string> args = {"context", file.string()};
  if (leaf) {
    args.push_back("--leaf");
    args.push_back(*leaf);
  }
  args.push_back("--json");
  return args;
}

// ---------------------------------------------------------------------------
// Comparisons against an oracle object (harness.mjs / oracle_batch.mjs output)

const char* const kEstimateKeys[] = {"heuristicSum", "contextEstimate", "usageTokens",
                                     "trailingTokens"};

// Compares `compactor context --json` output with the oracle. Returns the differences.
std::vector<std::string> CompareContext(const Json& oracle, const Json& actual,
                                        bool compare_leaf_id) {
  std::vector<std::string> diffs;
  if (!actual.is_object()) return {"output is not a JSON object: " + Abbreviate(actual)};
  for (const char* key : {"messages", "thinkingLevel", "model", "leafId"}) {
    if (!actual.contains(key)) diffs.push_back(std::string(key) + ": missing in output");
  }
  if (!diffs.empty()) return diffs;
  // JSON.stringify drops undefined values (e.g. a thinking_level_change without a level).
  auto pi = [&](const char* key) { return oracle.value(key, Json("<absent in pi's output>")); };
  if (compare_leaf_id) JsonDiff(pi("leafId"), actual.at("leafId"), "leafId", &diffs);
  JsonDiff(pi("thinkingLevel"), actual.at("thinkingLevel"), "thinkingLevel", &diffs);
  JsonDiff(pi("model"), actual.at("model"), "model", &diffs);
  JsonDiff(pi("contextMessages"), actual.at("messages"), "messages", &diffs);
  return diffs;
}

std::vector<std::string> CompareEstimate(const Json& oracle, const Json& actual) {
  std::vector<std::string> diffs;
  auto it = actual.find("estimatedTokens");
  if (it == actual.end() || !it->is_object()) return {"estimatedTokens: missing in output"};
  const Json& expected = oracle.at("estimatedTokens");
  for (const char* key : kEstimateKeys) {
    std::string path = std::string("estimatedTokens.") + key;
    if (!it->contains(key)) {
      diffs.push_back(path + ": missing, expected " + Abbreviate(expected.at(key)));
      continue;
    }
    JsonDiff(expected.at(key), it->at(key), path, &diffs);
  }
  return diffs;
}

// `compactor stats --json`: the estimate, plus the counts it shares with pi
// when it prints them (entries, pathLength, contextMessages, leafId,
// thinkingLevel, model).
std::vector<std::string> CompareStats(const Json& oracle, const Json& actual,
                                      bool compare_leaf_id) {
  std::vector<std::string> diffs = CompareEstimate(oracle, actual);
  auto same_if_present = [&](const char* key, const Json& expected) {
    if (actual.contains(key)) JsonDiff(expected, actual.at(key), key, &diffs);
  };
  if (oracle.contains("entries")) same_if_present("entries", oracle.at("entries"));
  if (oracle.contains("pathLength")) same_if_present("pathLength", oracle.at("pathLength"));
  if (oracle.contains("contextMessages") && actual.contains("contextMessages") &&
      actual.at("contextMessages").is_number()) {
    same_if_present("contextMessages", Json(oracle.at("contextMessages").size()));
  }
  for (const char* key : {"leafId", "thinkingLevel", "model"}) {
    if (std::string(key) == "leafId" && !compare_leaf_id) continue;
    same_if_present(key, oracle.value(key, Json("<absent in pi's output>")));
  }
  return diffs;
}

std::vector<std::string> StatsArgs(const fs::path& file, const std::optional<std::string>& leaf) {
  std::vector<std::string> args = {"stats", file.string(), "--json"};
  if (leaf) {
    args.push_back("--leaf");
    args.push_back(*leaf);
  }
  return args;
}

// How `compactor plan` is run: by default Compactor fixes some pi bugs
// (documented deviations below); with --pi-quirks it must match pi exactly.
enum class PlanMode { kDefault, kPiQuirks };

// Compares a `compactor plan --json` preparation with pi's. In kDefault mode the
// documented deviations (docs/compatibility.md, include/compactor/prepare.h)
// are accepted, each only when pi's own numbers
// show the quirk; every acceptance is appended to `accepted`.
std::vector<std::string> ComparePlan(const Json& oracle_prep, const Json& actual_prep,
                                     std::vector<std::string>* accepted,
                                     PlanMode mode = PlanMode::kDefault) {
  std::vector<std::string> diffs;
  const bool lenient = mode == PlanMode::kDefault;
  if (oracle_prep.is_null() || actual_prep.is_null()) {
    if (oracle_prep.is_null() && actual_prep.is_null()) return diffs;
    // Q3/Q6: pi prepares a compaction with nothing to summarize; Compactor
    // reports "nothing to compact" (preparation null).
    if (lenient && actual_prep.is_null() && oracle_prep.value("messagesToSummarize", -1) == 0 &&
        oracle_prep.value("turnPrefixMessages", -1) == 0) {
      accepted->push_back("Q3: preparation null where pi has 0 messages to summarize");
      return diffs;
    }
    JsonDiff(oracle_prep, actual_prep, "preparation", &diffs);
    return diffs;
  }
  if (!actual_prep.is_object()) return {"preparation: not an object: " + Abbreviate(actual_prep)};
  const bool pi_split = oracle_prep.value("isSplitTurn", false);
  const int pi_prefix = oracle_prep.value("turnPrefixMessages", -1);
  const int pi_summarize = oracle_prep.value("messagesToSummarize", -1);
  // Q1: a settings entry right before the cut user message makes pi call the
  // whole previous turn a split-turn prefix; Compactor classifies it as a
  // complete turn (same firstKeptEntryId, prefix folded into the summary).
  const bool same_cut = actual_prep.value("firstKeptEntryId", std::string()) ==
                        oracle_prep.value("firstKeptEntryId", std::string("?"));
  const bool q1 = pi_split && pi_prefix > 0 && same_cut &&
                  actual_prep.value("isSplitTurn", true) == false &&
                  actual_prep.value("turnPrefixMessages", -1) == 0 &&
                  actual_prep.value("messagesToSummarize", -1) == pi_summarize + pi_prefix;
  // Q7: the keep budget is crossed on trailing tool results after the last cut
  // point; pi falls back to keeping everything (nothing to summarize), Compactor
  // cuts at the last cut point and summarizes what is before it.
  const bool q7 =
      pi_summarize == 0 && pi_prefix == 0 && actual_prep.value("messagesToSummarize", 0) > 0;
  for (const char* key :
       {"firstKeptEntryId", "isSplitTurn", "messagesToSummarize", "turnPrefixMessages",
        "tokensBefore", "readFiles", "modifiedFiles", "hasPreviousSummary"}) {
    const std::string k = key;
    std::string path = "preparation." + k;
    if (!actual_prep.contains(key)) {
      diffs.push_back(path + ": missing, expected " + Abbreviate(oracle_prep.at(key)));
      continue;
    }
    std::vector<std::string> field_diffs;
    JsonDiff(oracle_prep.at(key), actual_prep.at(key), path, &field_diffs);
    if (field_diffs.empty()) continue;
    if (lenient && q1 &&
        (k == "isSplitTurn" || k == "turnPrefixMessages" || k == "messagesToSummarize")) {
      accepted->push_back("Q1: " + k + " differs (settings entry before the cut)");
      continue;
    }
    if (lenient && q7 && k != "tokensBefore" && k != "hasPreviousSummary") {
      accepted->push_back("Q7: " + k + " differs (pi keeps everything, Compactor cuts)");
      continue;
    }
    diffs.insert(diffs.end(), field_diffs.begin(), field_diffs.end());
  }
  return diffs;
}

// v1 files get random ids on every migration (in pi and in Compactor), so a
// firstKeptEntryId cannot be compared there.
Json WithoutRandomIds(const Json& prep, bool ids_comparable) {
  if (ids_comparable || !prep.is_object()) return prep;
  Json copy = prep;
  copy["firstKeptEntryId"] = "(random v1 id)";
  return copy;
}

std::vector<std::string> PlanArgs(const fs::path& file, const std::optional<std::string>& leaf,
                                  int64_t keep, int64_t reserve, PlanMode mode) {
  std::vector<std::string> args = {"plan",
                                   file.string(),
                                   "--json",
                                   "--keep-recent-tokens",
                                   std::to_string(keep),
                                   "--reserve-tokens",
                                   std::to_string(reserve)};
  if (leaf) {
    args.push_back("--leaf");
    args.push_back(*leaf);
  }
  if (mode == PlanMode::kPiQuirks) args.push_back("--pi-quirks");
  return args;
}

// `compactor plan` (and its --pi-quirks flag) may not exist yet: exit 2 = usage error.
bool PlanImplemented(const fs::path& any_session, PlanMode mode, std::string* why) {
  std::vector<std::string> args = {"plan", any_session.string(), "--json"};
  if (mode == PlanMode::kPiQuirks) args.push_back("--pi-quirks");
  CliOutput out = RunCli(args);
  if (out.result.exit_code == 2) {
    *why = std::string(mode == PlanMode::kPiQuirks ? "`compactor plan --pi-quirks`"
                                                   : "`compactor plan`") +
           " is not implemented yet (exit 2): " + out.result.err.substr(0, 300);
    return false;
  }
  return true;
}

// Runs `compactor plan` for one case and compares it (estimate and preparation)
// with pi's answer. Returns the differences; acceptances go to `accepted`.
std::vector<std::string> CheckPlan(const fs::path& file, const std::optional<std::string>& leaf,
                                   int64_t keep, int64_t reserve, const Json& oracle,
                                   bool ids_comparable, PlanMode mode,
                                   std::vector<std::string>* accepted) {
  CliOutput out = RunCli(PlanArgs(file, leaf, keep, reserve, mode));
  if (out.result.exit_code != 0 || !out.json) return {Describe(out)};
  std::vector<std::string> diffs = CompareEstimate(oracle, *out.json);
  auto prep = out.json->find("preparation");
  if (prep == out.json->end()) {
    diffs.push_back("preparation: missing in output");
    return diffs;
  }
  auto more = ComparePlan(WithoutRandomIds(oracle.at("preparation"), ids_comparable),
                          WithoutRandomIds(*prep, ids_comparable), accepted, mode);
  diffs.insert(diffs.end(), more.begin(), more.end());
  return diffs;
}

// ---------------------------------------------------------------------------
// (a) Golden fixtures

const fs::path kFixtures = kSourceDir / "tests" / "fixtures" / "pi";

struct GoldenCase {
  const char* name;
  const char* session;   // relative to tests/fixtures/pi
  const char* expected;  // relative to tests/fixtures/pi/expected
  bool at_golden_leaf;   // --leaf the golden's leafId (else the file's own leaf)
  bool compare_leaf_id;  // false for v1 files (ids are random on every migration)
};

const GoldenCase kGoldenCases[] = {
    {"Written", "written.jsonl", "written.k20000.json", false, true},
    {"WrittenK2000", "written.jsonl", "written.k2000.json", false, true},
    // The leaf just before the file's compaction: pi's preparation there is the compaction itself.
    {"WrittenBeforeCompaction", "written.jsonl", "written.before-compaction.k2000.json", true,
     true},
    {"CompactedV3", "compacted.v3.jsonl", "compacted.k20000.json", false, true},
    {"LongV3", "long.v3.jsonl", "long.k20000.json", false, true},
    // The v1 originals migrate to the same messages (ids are not part of any message here).
    {"CompactedV1", "compacted.v1.jsonl", "compacted.k20000.json", false, false},
    {"LongV1", "long.v1.jsonl", "long.k20000.json", false, false},
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {
 protected:
  void SetUp() override {
    const GoldenCase& c = GetParam();
    session_ = kFixtures / c.session;
    ASSERT_TRUE(fs::exists(session_)) << session_.string();
    fs::path expected_path = kFixtures / "expected" / c.expected;
    auto text = ReadFile(expected_path);
    ASSERT_TRUE(text.has_value()) << "missing " << expected_path.string();
    std::string error;
    auto json = ParseJson(*text, &error);
    ASSERT_TRUE(json.has_value()) << expected_path.string() << ": " << error;
    expected_ = std::move(*json);
  }

  std::optional<std::string> Leaf() const {
    if (!GetParam().at_golden_leaf) return std::nullopt;
    return expected_.at("leafId").get<std::string>();
  }

  fs::path session_;
  Json expected_;
};

TEST_P(GoldenTest, ContextMatchesPi) {
  CliOutput out = RunCli(ContextArgs(session_, Leaf()));
  ASSERT_EQ(out.result.exit_code, 0) << Describe(out);
  ASSERT_TRUE(out.json.has_value()) << Describe(out);
  std::vector<std::string> diffs = CompareContext(expected_, *out.json, GetParam().compare_leaf_id);
  EXPECT_TRUE(diffs.empty()) << session_.string() << " leaf " << Leaf().value_or("(file leaf)")
                             << ": output differs from pi 0.73.1\n"
                             << JoinLines(diffs);
}

TEST_P(GoldenTest, StatsMatchesPi) {
  CliOutput out = RunCli(StatsArgs(session_, Leaf()));
  ASSERT_EQ(out.result.exit_code, 0) << Describe(out);
  ASSERT_TRUE(out.json.has_value()) << Describe(out);
  std::vector<std::string> diffs = CompareStats(expected_, *out.json, GetParam().compare_leaf_id);
  EXPECT_TRUE(diffs.empty()) << session_.string() << ": stats differ from pi 0.73.1\n"
                             << JoinLines(diffs);
}

void GoldenPlan(const GoldenCase& c, const fs::path& session,
                const std::optional<std::string>& leaf, const Json& expected, PlanMode mode) {
  std::string why;
  ASSERT_TRUE(PlanImplemented(session, mode, &why)) << why;
  const Json& settings = expected.at("preparation").at("settings");
  std::vector<std::string> accepted;
  std::vector<std::string> diffs = CheckPlan(
      session, leaf, settings.at("keepRecentTokens").get<int64_t>(),
      settings.at("reserveTokens").get<int64_t>(), expected, c.compare_leaf_id, mode, &accepted);
  for (const auto& a : accepted) std::cout << "[ accepted ] " << c.name << ": " << a << "\n";
  EXPECT_TRUE(diffs.empty()) << session.string() << ": plan differs from pi 0.73.1\n"
                             << JoinLines(diffs);
}

TEST_P(GoldenTest, PlanMatchesPi) {
  GoldenPlan(GetParam(), session_, Leaf(), expected_, PlanMode::kDefault);
}

TEST_P(GoldenTest, PlanWithPiQuirksMatchesPiExactly) {
  GoldenPlan(GetParam(), session_, Leaf(), expected_, PlanMode::kPiQuirks);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest, ::testing::ValuesIn(kGoldenCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------
// CLI contract details that need no oracle

TEST(ConformanceCli, ExitCodes) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  EXPECT_EQ(RunCli({"context", (tmp.path() / "missing.jsonl").string(), "--json"}).result.exit_code,
            1)
      << "a missing file is an input error";
  ASSERT_TRUE(WriteFile(tmp.path() / "not-a-session.jsonl", "{\"type\":\"message\"}\n"));
  EXPECT_EQ(
      RunCli({"context", (tmp.path() / "not-a-session.jsonl").string(), "--json"}).result.exit_code,
      1)
      << "a file without a session header is an input error";
  EXPECT_EQ(RunCli({"no-such-command"}).result.exit_code, 2);
  EXPECT_EQ(RunCli({"context"}).result.exit_code, 2) << "missing FILE is a usage error";
  ASSERT_TRUE(
      WriteFile(tmp.path() / "s.jsonl",
                "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:"
                "00.000Z\",\"cwd\":\"/\"}\n{\"type\":\"session_info\",\"id\":\"a1\",\"parentId\":"
                "null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"name\":\"x\"}\n"));
  EXPECT_EQ(RunCli({"context", (tmp.path() / "s.jsonl").string(), "--json"}).result.exit_code, 0);
  // pi silently falls back to the last entry; Compactor reports the unknown id
  // as kInvalidArgument (include/compactor/context.h), i.e. exit code 2.
  EXPECT_EQ(RunCli({"context", (tmp.path() / "s.jsonl").string(), "--leaf", "nope", "--json"})
                .result.exit_code,
            2);
}

// ---------------------------------------------------------------------------
// The comparison itself must be able to fail.

TEST(ConformanceJsonDiff, NumbersCompareByValue) {
  std::vector<std::string> diffs;
  JsonDiff(Json::parse(R"({"a":1,"b":[1e21,0.30000000000000004,-0.0],"c":1000})"),
           Json::parse(R"({"c":1E3,"b":[1000000000000000000000,0.30000000000000004,0],"a":1.0})"),
           "", &diffs);
  EXPECT_TRUE(diffs.empty()) << JoinLines(diffs);
  JsonDiff(Json::parse("0.3"), Json::parse("0.30000000000000004"), "x", &diffs);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0], "x: expected 0.3, got 0.30000000000000004");
}

TEST(ConformanceJsonDiff, ReportsPrecisePaths) {
  std::vector<std::string> diffs;
  Json expected = Json::parse(R"({"messages":[{"content":[{"text":"a"}]},{"role":"user","k":1}]})");
  Json actual =
      Json::parse(R"({"messages":[{"content":[{"text":"b"}]},{"role":"user","x y":true}]})");
  JsonDiff(expected, actual, "", &diffs);
  ASSERT_EQ(diffs.size(), 3u) << JoinLines(diffs);
  EXPECT_EQ(diffs[0], "messages[0].content[0].text: expected \"a\", got \"b\"");
  EXPECT_EQ(diffs[1], "messages[1].k: missing, expected 1");
  EXPECT_EQ(diffs[2], "messages[1][\"x y\"]: unexpected key, got true");
  diffs.clear();
  JsonDiff(Json::parse("[1,2]"), Json::parse("[1,\"2\",3]"), "m", &diffs);
  ASSERT_EQ(diffs.size(), 2u) << JoinLines(diffs);
  EXPECT_EQ(diffs[0], "m: expected 2 elements, got 3");
  EXPECT_EQ(diffs[1], "m[1]: expected 2 (number), got \"2\" (string)");
  diffs.clear();
  JsonDiff(Json(nullptr), Json::object(), "model", &diffs);
  EXPECT_EQ(diffs.size(), 1u);
}

TEST(ConformanceJsonDiff, PlanDeviationsNeedTheQuirk) {
  std::vector<std::string> accepted;
  Json pi = Json::parse(R"({"firstKeptEntryId":"a","isSplitTurn":true,"messagesToSummarize":3,
      "turnPrefixMessages":2,"tokensBefore":10,"readFiles":[],"modifiedFiles":["x"],
      "hasPreviousSummary":false})");
  Json ours = pi;
  ours["isSplitTurn"] = false;  // Q1 requires the prefix folded into messagesToSummarize
  EXPECT_EQ(ComparePlan(pi, ours, &accepted).size(), 1u);
  ours["turnPrefixMessages"] = 0;
  ours["messagesToSummarize"] = 5;
  EXPECT_TRUE(ComparePlan(pi, ours, &accepted).empty());
  EXPECT_EQ(accepted.size(), 3u);
  EXPECT_EQ(ComparePlan(pi, ours, &accepted, PlanMode::kPiQuirks).size(), 3u);
  ours["tokensBefore"] = 11;  // never a documented deviation
  EXPECT_EQ(ComparePlan(pi, ours, &accepted).size(), 1u);
  ours = pi;
  ours["firstKeptEntryId"] = "b";  // Q1 keeps pi's cut
  ours["isSplitTurn"] = false;
  ours["turnPrefixMessages"] = 0;
  ours["messagesToSummarize"] = 5;
  EXPECT_EQ(ComparePlan(pi, ours, &accepted).size(), 4u);
  // Q2 (split turn with an empty prefix) is reproduced, not fixed.
  Json q2 = pi;
  q2["turnPrefixMessages"] = 0;
  ours = q2;
  ours["isSplitTurn"] = false;
  EXPECT_EQ(ComparePlan(q2, ours, &accepted).size(), 1u);
  // Q3: nothing to summarize -> null; Q7: nothing to summarize in pi, a real cut in Compactor.
  Json empty_pi = pi;
  empty_pi["messagesToSummarize"] = 0;
  empty_pi["turnPrefixMessages"] = 0;
  empty_pi["isSplitTurn"] = false;
  EXPECT_TRUE(ComparePlan(empty_pi, Json(nullptr), &accepted).empty());
  EXPECT_FALSE(ComparePlan(empty_pi, Json(nullptr), &accepted, PlanMode::kPiQuirks).empty());
  EXPECT_FALSE(ComparePlan(pi, Json(nullptr), &accepted).empty());
  ours = pi;
  ours["firstKeptEntryId"] = "z";
  EXPECT_TRUE(ComparePlan(empty_pi, ours, &accepted).empty());
  ours["tokensBefore"] = 12;
  EXPECT_EQ(ComparePlan(empty_pi, ours, &accepted).size(), 1u);
  EXPECT_EQ(ComparePlan(empty_pi, ours, &accepted, PlanMode::kPiQuirks).size(), 5u);
}

// ---------------------------------------------------------------------------
// (b) Live oracle over the generated corpus and make_session.mjs sessions

struct PlanSettings {
  int64_t keep_recent_tokens = 20000;
  int64_t reserve_tokens = 16384;
};

struct OracleCase {
  std::string source;  // "corpus", "write_session" or "gen_large"
  fs::path file;
  std::optional<std::string> leaf;
  std::string why;
  bool compare_leaf_id = true;
  std::vector<PlanSettings> plans;
  std::vector<Json> oracle;  // one result per plan (plan 0 also serves context and stats)

  std::string Label() const {
    return file.filename().string() + (leaf ? " --leaf " + *leaf : std::string(" (file leaf)")) +
           (why.empty() ? "" : " [" + why + "]");
  }
};

class OracleConformance : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason_ = new std::string();
    cases_ = new std::vector<OracleCase>();
    tmp_ = new TempDir();
    Prepare();
  }
  static void TearDownTestSuite() {
    delete tmp_;
    delete cases_;
    delete skip_reason_;
  }

  // Runs oracle.mjs; on failure records why in setup_error_ and returns nullopt.
  static std::optional<std::string> Oracle(const std::vector<std::string>& args) {
    compactor::testing::RunResult r = compactor::testing::RunOracle(args);
    if (r.exit_code == 0) return r.out;
    setup_error_ = "oracle.mjs " + args.front() + " failed (exit " + std::to_string(r.exit_code) +
                   "): " + r.err.substr(0, 2000);
    return std::nullopt;
  }

  static void Prepare() {
    const compactor::testing::OracleStatus& status = compactor::testing::Oracle();
    if (status.tool_missing) {
      *skip_reason_ = "pi oracle: " + status.message;
      return;
    }
    if (!status.ready) {
      setup_error_ = status.message;
      return;
    }
    if (tmp_->path().empty()) {
      setup_error_ = "could not create a temp dir";
      return;
    }
    // 1. the corpus
    fs::path corpus = tmp_->path() / "corpus";
    if (!Oracle({"corpus", corpus.string()})) return;
    auto manifest_text = ReadFile(corpus / "manifest.json");
    std::string error;
    auto manifest = manifest_text ? ParseJson(*manifest_text, &error) : std::nullopt;
    if (!manifest) {
      setup_error_ = "bad manifest.json: " + error;
      return;
    }
    for (const Json& f : manifest->at("files")) {
      std::vector<PlanSettings> plans;
      for (const Json& p : f.at("plans")) {
        plans.push_back(
            {p.at("keepRecentTokens").get<int64_t>(), p.at("reserveTokens").get<int64_t>()});
      }
      for (const Json& l : f.at("leaves")) {
        OracleCase c;
        c.source = "corpus";
        c.file = corpus / f.at("name").get<std::string>();
        if (!l.at("id").is_null()) c.leaf = l.at("id").get<std::string>();
        c.why = l.value("why", "");
        c.compare_leaf_id = f.value("compareLeafId", true);
        c.plans = plans;
        cases_->push_back(std::move(c));
      }
    }
    // 2. a session written through pi's SessionManager (another seed than the
    //    fixture's); every entry it names is a leaf
    fs::path written = tmp_->path() / "written.jsonl";
    auto made = Oracle({"write-session", written.string(), "--seed", "2"});
    if (!made) return;
    auto info = ParseJson(*made, &error);
    if (!info) {
      setup_error_ = "write-session printed no JSON: " + error;
      return;
    }
    std::vector<std::pair<std::optional<std::string>, std::string>> leaves = {
        {std::nullopt, "file leaf"}};
    for (auto it = info->at("ids").begin(); it != info->at("ids").end(); ++it) {
      leaves.emplace_back(it->get<std::string>(), it.key());
    }
    for (const auto& [leaf, why] : leaves) {
      OracleCase c;
      c.source = "write_session";
      c.file = written;
      c.leaf = leaf;
      c.why = why;
      c.plans = {{20000, 16384}, {2000, 16384}};
      cases_->push_back(std::move(c));
    }
    // 3. a realistic generated session with many compactions and branch summaries
    fs::path large = tmp_->path() / "gen-large.jsonl";
    if (!Oracle({"gen-large", large.string(), "--entries", "2000", "--compact-every", "6",
                 "--branch-every", "25", "--seed", "7"})) {
      return;
    }
    OracleCase c;
    c.source = "gen_large";
    c.file = large;
    c.why = "gen-large, compaction every 6 turns, branch every 25";
    c.plans = {{20000, 16384}, {5000, 16384}};
    cases_->push_back(std::move(c));
    // 4. one batch run of the oracle for every (case, plan)
    Json jobs = Json::array();
    for (const OracleCase& c : *cases_) {
      for (const PlanSettings& p : c.plans) {
        jobs.push_back({{"file", c.file.string()},
                        {"leaf", c.leaf ? Json(*c.leaf) : Json(nullptr)},
                        {"keepRecentTokens", p.keep_recent_tokens},
                        {"reserveTokens", p.reserve_tokens}});
      }
    }
    fs::path jobs_path = tmp_->path() / "jobs.json";
    WriteFile(jobs_path, jobs.dump());
    auto answers = Oracle({"batch", jobs_path.string()});
    if (!answers) return;
    const std::string& out = *answers;
    std::vector<Json> results;
    size_t start = 0;
    while (start < out.size()) {
      size_t end = out.find('\n', start);
      if (end == std::string::npos) end = out.size();
      if (end > start) {
        auto r = ParseJson(std::string_view(out).substr(start, end - start), &error);
        if (!r) {
          setup_error_ = "oracle output is not JSON: " + error;
          return;
        }
        results.push_back(std::move(*r));
      }
      start = end + 1;
    }
    if (results.size() != jobs.size()) {
      setup_error_ = "oracle answered " + std::to_string(results.size()) + " of " +
                     std::to_string(jobs.size()) + " jobs";
      return;
    }
    size_t k = 0;
    for (OracleCase& c : *cases_) {
      for (size_t i = 0; i < c.plans.size(); ++i) c.oracle.push_back(std::move(results[k++]));
    }
  }

  void SetUp() override {
    if (!skip_reason_->empty()) GTEST_SKIP() << *skip_reason_;
    ASSERT_TRUE(setup_error_.empty()) << setup_error_;
    ASSERT_FALSE(cases_->empty());
  }

  // Compares `compactor context` with the oracle for every case from `source`.
  static void CheckContext(const std::string& source) {
    size_t checked = 0;
    for (const OracleCase& c : *cases_) {
      if (c.source != source) continue;
      const Json& oracle = c.oracle.at(0);
      if (oracle.contains("error")) {
        ADD_FAILURE() << c.Label() << ": the oracle failed: " << oracle.at("error");
        continue;
      }
      CliOutput out = RunCli(ContextArgs(c.file, c.leaf));
      ++checked;
      if (out.result.exit_code != 0 || !out.json) {
        ADD_FAILURE() << c.Label() << ":\n"
                      << Describe(out) << "\npi reads this file: leafId "
                      << Abbreviate(oracle.at("leafId")) << ", "
                      << oracle.at("contextMessages").size() << " context messages";
        continue;
      }
      std::vector<std::string> diffs = CompareContext(oracle, *out.json, c.compare_leaf_id);
      if (!diffs.empty()) {
        ADD_FAILURE() << c.Label() << ": context differs from pi 0.73.1\n" << JoinLines(diffs);
      }
    }
    EXPECT_GT(checked, 0u);
  }

  static inline std::string* skip_reason_ = nullptr;
  static inline std::string setup_error_;
  static inline std::vector<OracleCase>* cases_ = nullptr;
  static inline TempDir* tmp_ = nullptr;
};

TEST_F(OracleConformance, CorpusContextMatchesPi) { CheckContext("corpus"); }

TEST_F(OracleConformance, WrittenSessionContextMatchesPi) { CheckContext("write_session"); }

TEST_F(OracleConformance, GenLargeContextMatchesPi) { CheckContext("gen_large"); }

TEST_F(OracleConformance, StatsMatchesPi) {
  size_t checked = 0;
  for (const OracleCase& c : *cases_) {
    if (c.oracle.at(0).contains("error")) continue;
    CliOutput out = RunCli(StatsArgs(c.file, c.leaf));
    ++checked;
    if (out.result.exit_code != 0 || !out.json) {
      ADD_FAILURE() << c.Label() << ":\n" << Describe(out);
      continue;
    }
    std::vector<std::string> diffs = CompareStats(c.oracle.at(0), *out.json, c.compare_leaf_id);
    if (!diffs.empty()) {
      ADD_FAILURE() << c.Label() << ": stats differ from pi 0.73.1\n" << JoinLines(diffs);
    }
  }
  EXPECT_GT(checked, 0u);
}

void OraclePlans(const std::vector<OracleCase>& cases, PlanMode mode) {
  std::string why;
  ASSERT_TRUE(PlanImplemented(cases.front().file, mode, &why)) << why;
  std::map<std::string, int> accepted_counts;
  for (const OracleCase& c : cases) {
    for (size_t i = 0; i < c.plans.size(); ++i) {
      const Json& oracle = c.oracle.at(i);
      if (oracle.contains("error")) continue;
      std::vector<std::string> accepted;
      std::vector<std::string> diffs =
          CheckPlan(c.file, c.leaf, c.plans[i].keep_recent_tokens, c.plans[i].reserve_tokens,
                    oracle, c.compare_leaf_id, mode, &accepted);
      for (const auto& a : accepted) accepted_counts[a.substr(0, a.find(':'))]++;
      if (!diffs.empty()) {
        ADD_FAILURE() << c.Label() << " keep " << c.plans[i].keep_recent_tokens
                      << ": plan differs from pi 0.73.1\n"
                      << JoinLines(diffs);
      }
    }
  }
  for (const auto& [id, n] : accepted_counts) {
    std::cout << "[ accepted ] documented deviation " << id << ": " << n << " time(s)\n";
  }
}

TEST_F(OracleConformance, PlanMatchesPi) { OraclePlans(*cases_, PlanMode::kDefault); }

TEST_F(OracleConformance, PlanWithPiQuirksMatchesPiExactly) {
  OraclePlans(*cases_, PlanMode::kPiQuirks);
}

}  // namespace
}  // namespace compactor::conformance
