#include "compactor/branch.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compactor/context.h"
#include "compactor/entries.h"
#include "support/oracle.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing::ReadFileOrDie;
using testing::TempDir;

class EchoSummarizer : public Summarizer {
 public:
  std::string_view name() const override { return "echo"; }
  Result<std::string> Summarize(const SummaryRequest& r) const override {
    COMPACTOR_RETURN_IF_ERROR(CheckSummarizable(r));
    kind = r.kind;
    count = r.messages.size();
    return std::string("BRANCH SUMMARY");
  }
  mutable SummaryKind kind = SummaryKind::kHistory;
  mutable size_t count = 0;
};

// root user -> assistant a1 -> user u2 (edit) -> assistant a2 -> toolResult -> assistant a3
//                           \-> user b1 -> assistant b2 (the other branch, written last)
std::string Tree() {
  std::string t = MakeSessionHeader({"s", "2026-01-01T00:00:00.000Z", "/w", ""}) + "\n";
  auto msg = [&](const std::string& id, const std::string& parent, const std::string& m) {
    t += MakeMessageEntry({id, parent, "2026-01-01T00:00:01.000Z"}, m) + "\n";
  };
  msg("u1", "", R"({"role":"user","content":"start","timestamp":1})");
  msg("a1", "u1",
      R"({"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m","stopReason":"stop","timestamp":2})");
  msg("u2", "a1", R"({"role":"user","content":"try approach A","timestamp":3})");
  msg("a2", "u2",
      R"({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"src/a.ts"}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":4})");
  msg("r2", "a2",
      R"({"role":"toolResult","toolCallId":"c1","toolName":"edit","content":[{"type":"text","text":"edited"}],"isError":false,"timestamp":5})");
  msg("a3", "r2",
      R"({"role":"assistant","content":[{"type":"text","text":"A is done"}],"provider":"p","model":"m","stopReason":"stop","timestamp":6})");
  return t;
}

TEST(Branch, SummarizesTheAbandonedBranchAndMovesTheLeaf) {
  TempDir d;
  std::string path = d.Write("t.jsonl", Tree());
  std::string before = ReadFileOrDie(path);
  EchoSummarizer sum;
  BranchOptions o;
  o.target_id = "a1";
  o.summarize = true;
  o.summarizer = &sum;
  o.label = "back-to-start";
  auto r = BranchFile(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->old_leaf_id, "a3");
  EXPECT_EQ(r->common_ancestor_id, "a1");
  EXPECT_EQ(sum.kind, SummaryKind::kBranch);
  EXPECT_EQ(sum.count, 3u);  // u2, a2, a3 (tool results are left out)
  EXPECT_EQ(r->entries_summarized, (std::vector<std::string>{"u2", "a2", "a3"}));
  EXPECT_EQ(r->modified_files, (std::vector<std::string>{"src/a.ts"}));
  EXPECT_EQ(r->summary.rfind(kBranchSummaryPreamble, 0), 0u);
  EXPECT_NE(r->summary.find("BRANCH SUMMARY\n\n<modified-files>\nsrc/a.ts\n</modified-files>"),
            std::string::npos);
  std::string after = ReadFileOrDie(path);
  EXPECT_EQ(after.substr(0, before.size()), before);
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  const Session& ss = **s;
  const Entry& bs = ss.entry(ss.size() - 2);
  EXPECT_EQ(bs.type, EntryType::kBranchSummary);
  EXPECT_EQ(bs.parent_id, "a1");
  EXPECT_EQ(bs.from_id, "a1");  // pi: fromId = the new parent
  EXPECT_EQ(ss.LabelOf(bs.id).value_or(""), "back-to-start");
  auto ctx = BuildSessionContext(ss);
  ASSERT_TRUE(ctx.ok());
  ASSERT_EQ(ctx->messages.size(), 3u);  // start, ok, branch summary
  EXPECT_EQ(ctx->messages[2].role, Role::kBranchSummary);
}

TEST(Branch, UserTargetReEditsFromItsParentAndPlainMovesPersist) {
  TempDir d;
  std::string path = d.Write("t.jsonl", Tree());
  BranchOptions o;
  o.target_id = "u2";
  auto r = BranchFile(path, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->editor_text, "try approach A");
  EXPECT_TRUE(r->summary.empty());
  auto s = Session::Open(path);
  const Session& ss = **s;
  const Entry& marker = ss.entry(ss.size() - 1);
  EXPECT_EQ(marker.type, EntryType::kBranchSummary);
  EXPECT_EQ(marker.parent_id, "a1");
  auto ctx = BuildSessionContext(ss);
  ASSERT_EQ(ctx->messages.size(), 2u);  // the empty marker adds nothing

  BranchOptions same;
  same.target_id = marker.id;
  auto noop = BranchFile(path, same);
  ASSERT_TRUE(noop.ok());
  EXPECT_TRUE(noop->noop);

  BranchOptions bad;
  bad.target_id = "zzz";
  EXPECT_EQ(BranchFile(path, bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(Branch, HooksCanCancelOrSupplyTheSummary) {
  TempDir d;
  std::string path = d.Write("t.jsonl", Tree());
  std::string before = ReadFileOrDie(path);
  CompactionHooks cancel;
  cancel.OnBeforeTree([](const BeforeTreeEvent&) {
    return BeforeTreeResult{true, std::nullopt, ""};
  });
  BranchOptions o;
  o.target_id = "a1";
  o.summarize = true;
  o.hooks = &cancel;
  EXPECT_EQ(BranchFile(path, o).status().code(), StatusCode::kCancelled);
  EXPECT_EQ(ReadFileOrDie(path), before);

  CompactionHooks supply;
  std::string after_new_leaf;
  supply.OnBeforeTree([](const BeforeTreeEvent& e) {
    EXPECT_EQ(e.entries_to_summarize.size(), 4u);
    return BeforeTreeResult{false, std::string("hook summary"), ""};
  });
  supply.OnAfterTree([&](const AfterTreeEvent& e) { after_new_leaf = e.new_leaf_id; });
  o.hooks = &supply;
  auto r = BranchFile(path, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->from_hook);
  EXPECT_EQ(r->summary, "hook summary");
  EXPECT_EQ(after_new_leaf, r->new_leaf_id);
  EXPECT_EQ(nlohmann::json::parse(r->appended[0])["fromHook"], true);
}

TEST(BranchOracle, PiBuildsTheSameContextAfterABranchSummary) {
  COMPACTOR_REQUIRE_ORACLE();
  TempDir d;
  std::string path = d.Write("t.jsonl", Tree());
  EchoSummarizer sum;
  BranchOptions o;
  o.target_id = "a1";
  o.summarize = true;
  o.summarizer = &sum;
  ASSERT_TRUE(BranchFile(path, o).ok());
  auto pi = testing::RunOracle({"inspect", path, "--messages", "full"});
  ASSERT_EQ(pi.exit_code, 0) << pi.err;
  auto ours = testing::RunCli({"context", path, "--json"});
  ASSERT_EQ(ours.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(ours.out)["messages"],
            nlohmann::json::parse(pi.out)["contextMessages"]);
}

}  // namespace
}  // namespace compactor
