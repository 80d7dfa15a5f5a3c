// Black-box tests of the compactor binary: contracts, exit codes, messages.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/test_util.h"

namespace compactor {
namespace {

using testing::FixturePath;
using testing::ReadFileOrDie;
using testing::RunCli;
using testing::TempDir;

constexpr char kSession[] =
    R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})"
    "\n"
    R"({"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"fix the bug","timestamp":1}})"
    "\n"
    R"({"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15},"stopReason":"stop","timestamp":2}})"
    "\n"
    R"({"type":"label","id":"a3","parentId":"a2","timestamp":"2026-01-01T00:00:03.000Z","targetId":"a1","label":"start"})"
    "\n";

TEST(Cli, EveryCommandHasHelp) {
  for (const char* cmd : {"context", "stats", "tree", "tokens", "migrate", "plan", "compact",
                          "prune", "branch", "eval", "export"}) {
    auto r = RunCli({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << cmd << " lacks --json";
  }
  auto top = RunCli({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("Exit codes"), std::string::npos);
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCli({}).exit_code, 2);
  EXPECT_EQ(RunCli({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(RunCli({"context"}).exit_code, 2);
  EXPECT_EQ(RunCli({"context", "x.jsonl", "--no-such-flag"}).exit_code, 2);
}

TEST(Cli, ContextJsonContract) {
  TempDir d;
  std::string f = d.Write("s.jsonl", kSession);
  auto r = RunCli({"context", f, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["leafId"], "a3");
  ASSERT_EQ(j["messages"].size(), 2u);
  EXPECT_EQ(j["messages"][0]["content"], "fix the bug");
  EXPECT_EQ(j["thinkingLevel"], "off");
  EXPECT_EQ(j["model"]["provider"], "p");
  EXPECT_EQ(j["model"]["modelId"], "m");
  auto leaf = RunCli({"context", f, "--json", "--leaf", "a1"});
  ASSERT_EQ(leaf.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(leaf.out)["messages"].size(), 1u);
  auto text = RunCli({"context", f});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("fix the bug"), std::string::npos);
}

TEST(Cli, UnknownLeafIsAUsageErrorNamingTheId) {
  TempDir d;
  std::string f = d.Write("s.jsonl", kSession);
  auto r = RunCli({"context", f, "--json", "--leaf", "zzzz"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("zzzz"), std::string::npos);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, BadInputsGiveOneLineErrorsAndExitOne) {
  TempDir d;
  struct Case {
    std::string name, path, expect;
  } cases[] = {
      {"missing", d.path() + "/missing.jsonl", "no such file"},
      {"directory", d.path(), "is a directory"},
      {"empty", d.Write("empty.jsonl", ""), "empty file"},
      {"not a session", d.Write("notsession.jsonl", "{\"type\":\"message\"}\n"),
       ":1: not a pi session"},
      {"binary", d.Write("bin.jsonl", std::string("\x00\x01\x02garbage", 10)), "not a pi session"},
  };
  for (const Case& c : cases) {
    for (const char* cmd : {"context", "stats", "tree", "tokens", "migrate"}) {
      auto r = RunCli({cmd, c.path});
      EXPECT_EQ(r.exit_code, 1) << c.name << " " << cmd;
      EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.name << " " << cmd << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
    }
  }
}

TEST(Cli, InvalidJsonLineWarnsOrFailsWithStrict) {
  TempDir d;
  std::string text = kSession;
  text.insert(text.find("\n") + 1, "{broken json\n");
  std::string f = d.Write("s.jsonl", text);
  auto r = RunCli({"stats", f, "--json"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("s.jsonl:2: invalid JSON"), std::string::npos) << r.err;
  auto strict = RunCli({"stats", f, "--strict"});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.err.find("s.jsonl:2:"), std::string::npos);
  EXPECT_EQ(ReadFileOrDie(f), text);  // input untouched
}

TEST(Cli, StatsJsonHasTheEstimates) {
  TempDir d;
  std::string f = d.Write("s.jsonl", kSession);
  auto r = RunCli({"stats", f, "--json"});
  ASSERT_EQ(r.exit_code, 0);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["entries"], 3);
  EXPECT_EQ(j["entriesByType"]["message"], 2);
  EXPECT_EQ(j["messagesByRole"]["assistant"], 1);
  EXPECT_EQ(j["pathLength"], 3);
  EXPECT_EQ(j["contextMessages"], 2);
  EXPECT_EQ(j["estimatedTokens"]["usageTokens"], 15);
  EXPECT_EQ(j["estimatedTokens"]["trailingTokens"], 0);
  EXPECT_EQ(j["estimatedTokens"]["contextEstimate"], 15);
  EXPECT_EQ(j["estimatedTokens"]["heuristicSum"], 3 + 1);
}

TEST(Cli, TreeMarksActivePathAndLabels) {
  TempDir d;
  std::string text =
      std::string(kSession) +
      R"({"type":"message","id":"b1","parentId":"a1","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":"other way","timestamp":4}})"
      "\n";
  std::string f = d.Write("s.jsonl", text);
  auto r = RunCli({"tree", f});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("* a1 user: fix the bug  <start>"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("├─   a2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("└─ * b1 user: other way  ← leaf"), std::string::npos) << r.out;
  auto j = RunCli({"tree", f, "--json"});
  ASSERT_EQ(j.exit_code, 0);
  auto t = nlohmann::json::parse(j.out);
  // Version 2: flat, in file order, linked by parentId (docs/cli.md).
  EXPECT_EQ(t["version"], 2);
  EXPECT_EQ(t["leafId"], "b1");
  ASSERT_EQ(t["entries"].size(), 4u);
  EXPECT_EQ(t["entries"][0]["id"], "a1");
  EXPECT_EQ(t["entries"][0]["label"], "start");
  EXPECT_EQ(t["entries"][0]["parentId"], nullptr);
  EXPECT_EQ(t["entries"][0]["active"], true);
  size_t children_of_a1 = 0;
  for (const auto& e : t["entries"]) children_of_a1 += e["parentId"] == "a1" ? 1 : 0;
  EXPECT_EQ(children_of_a1, 2u);
  EXPECT_EQ(t["entries"][1]["active"], false);  // a2: the branch left
}

TEST(Cli, TokensForTextAndSessions) {
  auto r = RunCli({"tokens", "-", "--json"}, "hello world!");
  ASSERT_EQ(r.exit_code, 0);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"], 3);
  EXPECT_EQ(j["utf16Units"], 12);
  TempDir d;
  std::string f = d.Write("s.jsonl", kSession);
  auto s = RunCli({"tokens", f, "--json"});
  ASSERT_EQ(s.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(s.out)["tokens"], 15);
}

TEST(Cli, MigrateNeverTouchesInputUnlessInPlace) {
  TempDir d;
  std::string v1 =
      R"({"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"})"
      "\n"
      R"({"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}})"
      "\n";
  std::string f = d.Write("v1.jsonl", v1);
  auto to_stdout = RunCli({"migrate", f});
  ASSERT_EQ(to_stdout.exit_code, 0);
  EXPECT_NE(to_stdout.out.find("\"version\":3"), std::string::npos);
  EXPECT_EQ(ReadFileOrDie(f), v1);
  std::string out = d.path() + "/v3.jsonl";
  ASSERT_EQ(RunCli({"migrate", f, "-o", out}).exit_code, 0);
  EXPECT_EQ(ReadFileOrDie(out), to_stdout.out);
  EXPECT_EQ(ReadFileOrDie(f), v1);
  auto in_place = RunCli({"migrate", f, "--in-place", "--json"});
  ASSERT_EQ(in_place.exit_code, 0) << in_place.err;
  EXPECT_EQ(ReadFileOrDie(f + ".bak"), v1);
  EXPECT_EQ(ReadFileOrDie(f), to_stdout.out);
  // Re-running on the now-v3 file changes nothing.
  auto again = RunCli({"migrate", f, "--in-place", "--json"});
  EXPECT_EQ(nlohmann::json::parse(again.out)["written"], false);
}

// The pi extension (integrations/pi) relies on this: `compact --dry-run
// --json` prints the entry the strategy would record and writes nothing (no
// append, no backup or lock file, no handoff session).
TEST(Cli, CompactDryRunJsonPrintsTheEntryAndWritesNothing) {
  TempDir d;
  const std::string original = ReadFileOrDie(FixturePath("pi/compacted.v3.jsonl"));
  std::string f = d.Write("s.jsonl", original);
  const std::string handoff_dir = d.path() + "/handoff";
  struct Case {
    const char* strategy;
    const char* entry_type;
  } cases[] = {
      {"summary", "compaction"}, {"user-prompts", "compaction"}, {"handoff", "custom_message"}};
  for (const Case& c : cases) {
    auto r = RunCli({"compact", f, "--dry-run", "--json", "--keep-recent-tokens", "2000",
                     "--strategy", c.strategy, "--handoff-dir", handoff_dir});
    ASSERT_EQ(r.exit_code, 0) << c.strategy << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["written"], false) << c.strategy;
    EXPECT_EQ(j["compacted"], true) << c.strategy;
    ASSERT_TRUE(j["entry"].is_object()) << c.strategy;
    EXPECT_EQ(j["entry"]["type"], c.entry_type) << c.strategy;
    const nlohmann::json& entry = j["entry"];
    if (std::string(c.strategy) == "summary") {
      EXPECT_EQ(entry["summary"], j["summary"]);
      EXPECT_EQ(entry["firstKeptEntryId"], j["firstKeptEntryId"]);
    } else if (std::string(c.strategy) == "user-prompts") {
      // The kept prompts are in the entry's summary text; it keeps nothing
      // before itself (docs/strategies.md).
      EXPECT_EQ(entry["summary"].get<std::string>().rfind("<user-messages>\n", 0), 0u);
      EXPECT_EQ(entry["firstKeptEntryId"], entry["id"]);
    } else {
      EXPECT_NE(entry["content"].dump().find("<handoff-context>"), std::string::npos);
    }
    EXPECT_EQ(ReadFileOrDie(f), original) << c.strategy;
  }
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.path())) {
    EXPECT_EQ(e.path().filename(), "s.jsonl");
    ++files;
  }
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace compactor
