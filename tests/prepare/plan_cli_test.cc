// `compactor plan --json` against pi 0.73.1: the golden outputs in
// tests/fixtures/pi/expected, and (when node is present) the pi oracle itself
// (tests/oracle) on preparation edge cases and generated sessions. Every
// difference must be one of the deviations in docs/compatibility.md; with
// --pi-quirks the output must equal pi's exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "prepare/session_builder.h"
#include "support/oracle.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using Json = nlohmann::json;
using testing_session::SessionBuilder;

constexpr const char* kEstimateFields[] = {"heuristicSum", "contextEstimate", "usageTokens",
                                           "trailingTokens"};
constexpr const char* kPreparationFields[] = {
    "firstKeptEntryId", "isSplitTurn", "messagesToSummarize", "turnPrefixMessages",
    "tokensBefore",     "readFiles",   "modifiedFiles",       "hasPreviousSummary"};

// The contract's fields of a plan or oracle output (the oracle prints more).
Json Contract(const Json& j, bool with_ids = true) {
  Json out = Json::object();
  Json est = Json::object();
  for (const char* f : kEstimateFields) est[f] = j.at("estimatedTokens").at(f);
  out["estimatedTokens"] = est;
  const Json& p = j.at("preparation");
  if (p.is_null()) {
    out["preparation"] = nullptr;
  } else {
    Json prep = Json::object();
    for (const char* f : kPreparationFields) {
      if (!with_ids && std::string(f) == "firstKeptEntryId") continue;
      prep[f] = p.at(f);
    }
    out["preparation"] = prep;
  }
  return out;
}

Json Plan(const std::string& file, int64_t keep, const std::string& leaf, bool pi_quirks) {
  std::vector<std::string> args = {
      "plan", file, "--json", "-q", "--keep-recent-tokens", std::to_string(keep)};
  if (!leaf.empty()) args.insert(args.end(), {"--leaf", leaf});
  if (pi_quirks) args.push_back("--pi-quirks");
  testing::RunResult r = testing::RunCli(args);
  std::string cmd = "plan " + file + " keep " + std::to_string(keep) + " leaf " + leaf;
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  // The contract: exactly one JSON object, nothing else on stdout.
  Json j = Json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << cmd << "\n" << r.out;
  if (j.is_discarded()) return Json();
  EXPECT_EQ(j.size(), 2u) << r.out;
  EXPECT_TRUE(j.contains("estimatedTokens") && j.contains("preparation")) << r.out;
  EXPECT_EQ(j["estimatedTokens"].size(), 4u) << r.out;
  if (!j["preparation"].is_null()) {
    EXPECT_EQ(j["preparation"].size(), 8u) << r.out;
  }
  return j;
}

bool EmptyPreparation(const Json& contract) {
  const Json& p = contract["preparation"];
  return !p.is_null() && p["messagesToSummarize"] == 0 && p["turnPrefixMessages"] == 0;
}

// Checks Compactor's default output against pi's, allowing only the documented
// deviations (docs/compatibility.md). Returns which one applied ("" = none).
std::string ExpectPiOrDocumentedDeviation(const Json& ours, const Json& pi) {
  EXPECT_EQ(ours["estimatedTokens"], pi["estimatedTokens"]);
  if (ours == pi) return "";
  const Json& o = ours["preparation"];
  const Json& p = pi["preparation"];
  if (EmptyPreparation(pi) && o.is_null()) return "nothing-to-compact";
  if (EmptyPreparation(pi) && !o.is_null()) {
    // Huge trailing tool result: pi keeps everything, Compactor cuts later.
    EXPECT_TRUE(o["messagesToSummarize"].get<int>() + o["turnPrefixMessages"].get<int>() > 0);
    EXPECT_NE(o["firstKeptEntryId"], p["firstKeptEntryId"]);
    return "huge-last-tool-result";
  }
  if (!o.is_null() && !p.is_null() && o["firstKeptEntryId"] == p["firstKeptEntryId"] &&
      p["isSplitTurn"] == true && o["isSplitTurn"] == false) {
    // Pulled-back settings entry: same cut, the "prefix" is summarized as history.
    EXPECT_EQ(o["messagesToSummarize"].get<int>(),
              p["messagesToSummarize"].get<int>() + p["turnPrefixMessages"].get<int>());
    EXPECT_EQ(o["turnPrefixMessages"], 0);
    EXPECT_EQ(o["readFiles"], p["readFiles"]);
    EXPECT_EQ(o["modifiedFiles"], p["modifiedFiles"]);
    EXPECT_EQ(o["tokensBefore"], p["tokensBefore"]);
    return "settings-entry-split-turn";
  }
  ADD_FAILURE() << "undocumented difference from pi 0.73.1\nours: " << ours.dump()
                << "\npi:   " << pi.dump();
  return "?";
}

// tests/fixtures/pi/NAME and the golden output pi gives for it.
std::string Fixture(const std::string& name) { return testing::FixturePath("pi/" + name); }

Json Golden(const std::string& name) {
  return Json::parse(testing::ReadFileOrDie(Fixture("expected/" + name)));
}

struct GoldenCase {
  const char* session;   // relative to tests/fixtures/pi
  const char* expected;  // relative to tests/fixtures/pi/expected
  int64_t keep;
  bool at_golden_leaf;  // --leaf the golden's leafId (else the file's own leaf)
};

TEST(PlanCliTest, MatchesPiGoldenOutputs) {
  const GoldenCase cases[] = {
      {"compacted.v3.jsonl", "compacted.k20000.json", 20000, false},
      {"long.v3.jsonl", "long.k20000.json", 20000, false},
      {"written.jsonl", "written.k2000.json", 2000, false},
      {"written.jsonl", "written.k20000.json", 20000, false},
      {"written.jsonl", "written.before-compaction.k2000.json", 2000, true},
  };
  int deviations = 0;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.expected);
    std::string file = Fixture(c.session);
    Json full = Golden(c.expected);
    std::string leaf = c.at_golden_leaf ? full.at("leafId").get<std::string>() : "";
    Json golden = Contract(full);
    Json quirks = Plan(file, c.keep, leaf, /*pi_quirks=*/true);
    ASSERT_FALSE(quirks.is_null());
    EXPECT_EQ(quirks, golden);
    Json ours = Plan(file, c.keep, leaf, /*pi_quirks=*/false);
    ASSERT_FALSE(ours.is_null());
    std::string deviation = ExpectPiOrDocumentedDeviation(ours, golden);
    if (!deviation.empty()) {
      // Only the written session at its file leaf has nothing left to summarize.
      EXPECT_EQ(deviation, "nothing-to-compact");
      EXPECT_EQ(std::string(c.session), "written.jsonl");
      EXPECT_FALSE(c.at_golden_leaf);
      ++deviations;
    }
  }
  EXPECT_EQ(deviations, 2);
}

// The v1 originals migrate in memory to the same preparation (ids are random
// in pi's migration, so only the id is not compared).
TEST(PlanCliTest, V1OriginalsMatchTheGoldenCountsOfTheirMigratedCopies) {
  for (const std::string name : {"compacted", "long"}) {
    SCOPED_TRACE(name);
    Json golden = Contract(Golden(name + ".k20000.json"), /*with_ids=*/false);
    Json ours = Plan(Fixture(name + ".v1.jsonl"), 20000, "", false);
    ASSERT_FALSE(ours.is_null());
    EXPECT_EQ(Contract(ours, /*with_ids=*/false), golden);
  }
}

// The numbers in the words come from pi's golden output for the same file.
TEST(PlanCliTest, WordsModeExplainsBothSides) {
  const Json g = Golden("compacted.k20000.json");
  const Json& p = g.at("preparation");
  ASSERT_TRUE(p.at("isSplitTurn").get<bool>()) << "the fixture's last turn must be split";
  testing::RunResult r = testing::RunCli({"plan", Fixture("compacted.v3.jsonl")});
  ASSERT_EQ(r.exit_code, 0);
  auto n = [&](const char* key) { return std::to_string(p.at(key).get<int64_t>()); };
  EXPECT_THAT(r.out,
              ::testing::HasSubstr("Would summarize: " + n("messagesToSummarize") + " messages (~" +
                                   n("messagesToSummarizeEstTokens") + " estimated"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("Would keep verbatim:"));
  EXPECT_THAT(r.out,
              ::testing::HasSubstr("entry " + p.at("firstKeptEntryId").get<std::string>() + " (" +
                                   p.at("firstKeptEntryRole").get<std::string>() + ", #" +
                                   n("firstKeptEntryIndexInPath") + " on the path)"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("Split turn:"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("first " + n("turnPrefixMessages") + " messages"));
  EXPECT_THAT(r.out,
              ::testing::HasSubstr(
                  "Context size: " +
                  std::to_string(g.at("estimatedTokens").at("contextEstimate").get<int64_t>()) +
                  " tokens"));
}

TEST(PlanCliTest, SettingsFileAndCommandLineOverrides) {
  std::string file = Fixture("compacted.v3.jsonl");
  testing::TempDir tmp;
  std::string settings = tmp.Write(
      "settings.json", R"({"compaction": {"keepRecentTokens": 2000, "keepPolicy": "tokens"}})");
  testing::RunResult from_file = testing::RunCli({"plan", file, "--json", "--settings", settings});
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  testing::RunResult flags =
      testing::RunCli({"plan", file, "--json", "--keep-recent-tokens", "2000"});
  EXPECT_EQ(from_file.out, flags.out);
  testing::RunResult overridden = testing::RunCli(
      {"plan", file, "--json", "--settings", settings, "--keep-recent-tokens", "20000"});
  testing::RunResult defaults = testing::RunCli({"plan", file, "--json"});
  EXPECT_EQ(overridden.out, defaults.out);
  EXPECT_NE(from_file.out, defaults.out);
  // Keep policies other than pi's.
  std::string turns = tmp.Write("turns.json", R"({"keepPolicy": "turns", "keepTurns": 1})");
  testing::RunResult t = testing::RunCli({"plan", file, "--json", "--settings", turns});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  Json j = Json::parse(t.out);
  // The fixture's last turn is the one pi splits at keepRecentTokens 20000:
  // keeping the last turn whole cuts at its start, so the history pi
  // summarizes is summarized and the turn prefix is kept instead.
  const Json pi = Golden("compacted.k20000.json")["preparation"];
  ASSERT_TRUE(pi["isSplitTurn"].get<bool>());
  EXPECT_EQ(j["preparation"]["isSplitTurn"], false);
  EXPECT_EQ(j["preparation"]["turnPrefixMessages"], 0);
  EXPECT_EQ(j["preparation"]["messagesToSummarize"], pi["messagesToSummarize"]);
  EXPECT_NE(j["preparation"]["firstKeptEntryId"], pi["firstKeptEntryId"]);
  // A broken settings file is a usage error naming the file.
  std::string broken = tmp.Write("broken.json", R"({"reserveTokens": "lots"})");
  testing::RunResult b = testing::RunCli({"plan", file, "--json", "--settings", broken});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_TRUE(b.out.empty());
  EXPECT_THAT(b.err, ::testing::HasSubstr("broken.json: reserveTokens"));
  // Unknown keys only warn.
  std::string typo = tmp.Write("typo.json", R"({"keepRecentTokns": 1})");
  testing::RunResult w = testing::RunCli({"plan", file, "--json", "--settings", typo});
  EXPECT_EQ(w.exit_code, 0);
  EXPECT_EQ(w.out, defaults.out);
  EXPECT_THAT(w.err, ::testing::HasSubstr("unknown key \"keepRecentTokns\""));
}

TEST(PlanCliTest, WordsModeWhenNothingToCompact) {
  const Json g = Golden("written.k20000.json");
  ASSERT_TRUE(EmptyPreparation(Contract(g))) << "pi summarizes nothing at the written file's leaf";
  testing::RunResult r = testing::RunCli({"plan", Fixture("written.jsonl")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("Nothing to compact"));
  EXPECT_THAT(r.out, ::testing::HasSubstr(
                         "Context size: " +
                         std::to_string(g["estimatedTokens"]["contextEstimate"].get<int64_t>()) +
                         " tokens"));
}

TEST(PlanCliTest, UsageErrors) {
  testing::RunResult r = testing::RunCli({"plan", "/nonexistent/x.jsonl", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty());
  EXPECT_THAT(r.err, ::testing::HasSubstr("/nonexistent/x.jsonl"));
  std::string file = Fixture("long.v3.jsonl");
  r = testing::RunCli({"plan", file, "--json", "--leaf", "nosuchid"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  r = testing::RunCli({"plan", file, "--json", "--keep-policy", "everything"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("unknown keep policy"));
}

// ---------------------------------------------------------------------------
// Against the pi oracle (needs node).

class PiOracleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    COMPACTOR_REQUIRE_ORACLE();
    tmp_ = std::make_unique<testing::TempDir>();
    dir_ = tmp_->path();
  }

  std::string Write(const std::string& name, const SessionBuilder& b) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << b.Jsonl();
    return path;
  }

  Json Oracle(const std::string& file, int64_t keep, const std::string& leaf) {
    std::vector<std::string> argv = {"inspect",   file,    "--keep",     std::to_string(keep),
                                     "--reserve", "16384", "--messages", "none"};
    if (!leaf.empty()) argv.insert(argv.end(), {"--leaf", leaf});
    testing::RunResult r = testing::RunOracle(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Json j = Json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j.is_discarded() ? Json() : Contract(j);
  }

  // Compares one (file, keep, leaf); returns the deviation that applied.
  std::string Compare(const std::string& file, int64_t keep, const std::string& leaf = "") {
    SCOPED_TRACE(file + " keep " + std::to_string(keep) + " leaf " + leaf);
    Json pi = Oracle(file, keep, leaf);
    if (pi.is_null()) return "?";
    EXPECT_EQ(Plan(file, keep, leaf, /*pi_quirks=*/true), pi);
    return ExpectPiOrDocumentedDeviation(Plan(file, keep, leaf, false), pi);
  }

  std::unique_ptr<testing::TempDir> tmp_;
  std::filesystem::path dir_;
};

TEST_F(PiOracleTest, QuirkSessionsShowExactlyTheDocumentedDeviations) {
  // Q1: a thinking-level change right before the kept user message.
  SessionBuilder q1;
  q1.U(400);
  q1.A(400);
  q1.U(400);
  q1.A(400, true);
  q1.T(4000);
  q1.A(400);
  q1.Setting();
  q1.U(400);
  q1.A(400, true);
  q1.T(4000);
  q1.A(400);
  std::string f1 = Write("q1.jsonl", q1);
  EXPECT_EQ(Compare(f1, 1300), "settings-entry-split-turn");
  EXPECT_EQ(Compare(f1, 1200), "");

  // Q2: the cut pulled back onto a custom_message (kept as pi does it).
  SessionBuilder q2;
  q2.U(400);
  q2.A(400, true);
  q2.T(4000);
  q2.A(400);
  q2.CustomMessage(400);
  q2.A(400, true);
  q2.T(4000);
  q2.A(400);
  EXPECT_EQ(Compare(Write("q2.jsonl", q2), 1200), "");

  // Q3: everything fits.
  SessionBuilder q3;
  q3.U(40);
  q3.A(40);
  q3.U(40);
  q3.A(40);
  EXPECT_EQ(Compare(Write("q3.jsonl", q3), 20000), "nothing-to-compact");

  // Q7: the newest message is a huge tool result; Q7b: an assistant follows it.
  SessionBuilder q7;
  q7.U(4000);
  q7.A(4000);
  q7.U(4000);
  q7.A(4000);
  q7.U(400);
  q7.A(100, true);
  q7.T(200000);
  std::string f7 = Write("q7.jsonl", q7);
  EXPECT_EQ(Compare(f7, 20000), "huge-last-tool-result");
  q7.A(100);
  EXPECT_EQ(Compare(Write("q7b.jsonl", q7), 20000), "");
}

TEST_F(PiOracleTest, CompactionsBranchesAndMetadata) {
  SessionBuilder b;
  b.Setting();
  std::string u1 = b.U(4000);
  b.A(400, true, "read", "a.ts");
  b.T(2000);
  b.A(400, true, "edit", "b.ts");
  b.T(100);
  std::string fork = b.A(400);
  b.Label(u1);
  std::string u2 = b.U(3000);
  b.A(400, true, "write", "c.ts");
  b.T(100);
  b.Bash(800);
  b.A(400);
  b.CustomMessage(600);
  b.Compaction("first summary", u2, R"({"readFiles":["a.ts"],"modifiedFiles":["b.ts"]})");
  b.U(2000);
  b.A(4000, true, "read", "d.ts");
  b.T(6000);
  std::string before_branch = b.A(400);
  b.BranchSummary("went elsewhere", before_branch);
  b.BranchSummary("", before_branch);
  b.U(1000);
  b.A(3000);
  std::string main_leaf = b.A(200);
  // A second branch from `fork` without the compaction.
  b.SetLeaf(fork);
  b.U(5000);
  std::string side_leaf = b.A(5000, true, "edit", "side.ts");
  b.T(50);
  std::string file = Write("tree.jsonl", b);
  for (int64_t keep : {500, 2000, 5000, 20000}) {
    Compare(file, keep, main_leaf);
    Compare(file, keep, side_leaf);
    Compare(file, keep, before_branch);
  }
}

// Tool calls whose JSON repeats keys: pi reads them through JSON.parse (the
// last value wins); so must the file operations, fast path or not.
TEST_F(PiOracleTest, RepeatedKeysInToolCalls) {
  std::string text =
      R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})"
      "\n";
  std::string parent;
  int n = 0;
  auto add = [&](const std::string& message) {
    std::string id = "e" + std::to_string(++n);
    text += R"({"type":"message","id":")" + id + R"(","parentId":)" +
            (parent.empty() ? std::string("null") : "\"" + parent + "\"") +
            R"(,"timestamp":"2026-01-01T00:00:01.000Z","message":)" + message + "}\n";
    parent = id;
  };
  const std::string usage =
      R"("usage":{"input":10,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":11})";
  const std::vector<std::string> calls = {
      R"({"type":"toolCall","id":"c","name":"read","arguments":{"path":"first.ts","path":"second.ts"}})",
      R"({"type":"toolCall","id":"c","name":"bash","name":"edit","arguments":{"path":"named.ts"}})",
      R"({"type":"toolCall","id":"c","name":"write","arguments":{"path":"a.ts"},"arguments":{"path":"b.ts"}})",
      // (A last "type" of "text" would make pi 0.73.1 crash: a text block without text.)
      R"({"type":"text","id":"c","name":"read","arguments":{"path":"typed.ts"},"type":"toolCall"})",
      R"({"type":"toolCall","id":"c","name":"read","arguments":{"path":"x.ts","path":1}})",
  };
  for (size_t t = 0; t < calls.size(); ++t) {
    add(R"({"role":"user","content":"step )" + std::to_string(t) + " " + std::string(4000, 'u') +
        R"(","timestamp":1})");
    add(R"({"role":"assistant","content":[)" + calls[t] + R"(],"provider":"p","model":"m",)" +
        usage + R"(,"stopReason":"toolUse","timestamp":2})");
    add(R"({"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":")" +
        std::string(8000, 'y') + R"("}],"isError":false,"timestamp":3})");
  }
  // A whole message with repeated "role" and "content" keys.
  add(R"({"role":"user","content":[{"type":"toolCall","id":"c","name":"read","arguments":{"path":"hidden.ts"}}],)"
      R"("content":[{"type":"toolCall","id":"c","name":"edit","arguments":{"path":"shown.ts"}}],)"
      R"("role":"assistant","provider":"p","model":"m",)" +
      usage + R"(,"stopReason":"toolUse","timestamp":2})");
  add(R"({"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"p","model":"m",)" +
      usage + R"(,"stopReason":"stop","timestamp":4})");
  add(R"({"role":"user","content":")" + std::string(12000, 'q') + R"(","timestamp":5})");
  add(R"({"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m",)" +
      usage + R"(,"stopReason":"stop","timestamp":6})");
  std::string file = (dir_ / "repeated.jsonl").string();
  std::ofstream(file) << text;
  for (int64_t keep : {2000, 4000}) {
    EXPECT_EQ(Compare(file, keep), "");
  }
  Json plan = Plan(file, 2000, "", false);
  EXPECT_EQ(plan["preparation"]["readFiles"], Json::array({"second.ts", "typed.ts"}))
      << plan.dump();
}

TEST_F(PiOracleTest, GeneratedSessions) {
  for (int seed : {1}) {
    std::string file = (dir_ / ("gen" + std::to_string(seed) + ".jsonl")).string();
    testing::RunResult gen =
        testing::RunOracle({"gen-large", file, "--entries", "400", "--compact-every", "25",
                            "--branch-every", "100", "--seed", std::to_string(seed)});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    // Leaves: the file's leaf and entries a third and two thirds in.
    std::vector<std::string> ids;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      Json e = Json::parse(line, nullptr, false);
      if (!e.is_discarded() && e.contains("id") && e["id"].is_string()) ids.push_back(e["id"]);
    }
    ASSERT_GT(ids.size(), 30u);
    for (const std::string& leaf : {std::string(), ids[ids.size() / 3], ids[2 * ids.size() / 3]}) {
      Compare(file, 20000, leaf);
      Compare(file, 3000, leaf);
    }
  }
}

}  // namespace
}  // namespace compactor
