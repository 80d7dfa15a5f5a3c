// Tool-output pruning (oh-my-pi 15.7.2 rules over pi's estimate) on
// hand-built sessions whose token counts are exact by construction, and the
// in-place rewrite.
#include "compactor/prune.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "compactor/context.h"
#include "compactor/mem_env.h"
#include "compactor/session.h"
#include "prune/session_builder.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing_prune::SessionBuilder;

std::unique_ptr<Session> Load(const std::string& text) {
  auto s = Session::FromString(text, "t.jsonl");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : nullptr;
}

PruneOptions Small(int64_t protect, int64_t minimum) {
  PruneOptions o;
  o.protect_tokens = protect;
  o.minimum_savings = minimum;
  return o;
}

std::vector<std::string> Ids(const RewritePlan& p) {
  std::vector<std::string> ids;
  for (const auto& r : p.outputs) ids.push_back(r.entry_id);
  return ids;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

constexpr int64_t kFixedMs = 1700000000123;
// An Env whose wall clock stands at kFixedMs ("prunedAt").
std::unique_ptr<MemEnv> FixedEnv() {
  MemEnvOptions o;
  o.start_ms = kFixedMs;
  return NewMemEnv(o);
}

TEST(PruneNotice, IsOhMyPisText) { EXPECT_EQ(PruneNotice(412), "[Output truncated - 412 tokens]"); }

TEST(Prune, DefaultsAreOhMyPis) {
  PruneOptions o;
  EXPECT_EQ(o.protect_tokens, 40000);
  EXPECT_EQ(o.minimum_savings, 20000);
  EXPECT_EQ(o.protected_tools, (std::vector<std::string>{"skill", "read"}));
  EXPECT_EQ(o.min_prune_tokens, 0);
  EXPECT_FALSE(o.only_in_context);
}

// The check is made before adding: the result that crosses the window is
// protected, the first one that starts at or past it is not.
TEST(Prune, ProtectionWindowBoundary) {
  SessionBuilder b;
  b.User("go");
  std::string r1 = b.ToolPair("bash", R"({"command":"a"})", 30);
  std::string r2 = b.ToolPair("bash", R"({"command":"b"})", 30);
  std::string r3 = b.ToolPair("bash", R"({"command":"c"})", 50);  // 60 -> 110: crosses, protected
  std::string r4 = b.ToolPair("bash", R"({"command":"d"})", 60);  // 0 -> 60: protected
  auto s = Load(b.text());
  auto plan = PlanPrune(*s, std::nullopt, Small(100, 0));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Ids(*plan), (std::vector<std::string>{r1, r2}));
  EXPECT_EQ(plan->kept, 2u);
  EXPECT_EQ(plan->scanned, 4u);

  // Exactly at the limit: the next (older) result is a candidate.
  auto at = PlanPrune(*s, std::nullopt, Small(110, 0));
  EXPECT_EQ(Ids(*at), (std::vector<std::string>{r1, r2}));
  auto above = PlanPrune(*s, std::nullopt, Small(111, 0));
  EXPECT_EQ(Ids(*above), (std::vector<std::string>{r1}));
  auto all = PlanPrune(*s, std::nullopt, Small(0, 0));
  EXPECT_EQ(Ids(*all), (std::vector<std::string>{r1, r2, r3, r4}));
}

TEST(Prune, SavingsAreTokensMinusTheNoticeQuarterChars) {
  SessionBuilder b;
  b.User("go");
  std::string old = b.ToolPair("bash", "{}", 100);
  b.ToolPair("bash", "{}", 10);
  auto s = Load(b.text());
  auto plan = PlanPrune(*s, std::nullopt, Small(10, 0));
  ASSERT_EQ(plan->outputs.size(), 1u);
  const ReplacedOutput& r = plan->outputs[0];
  EXPECT_EQ(r.entry_id, old);
  EXPECT_EQ(r.tokens, 100);
  EXPECT_EQ(r.replacement, "[Output truncated - 100 tokens]");  // 31 chars -> 8 tokens
  EXPECT_EQ(r.tokens_saved, 92);
  EXPECT_EQ(plan->tokens_saved, 92);
}

TEST(Prune, MinimumSavingsIsAllOrNothing) {
  SessionBuilder b;
  b.User("go");
  b.ToolPair("bash", "{}", 100);  // saves 92
  b.ToolPair("edit", "{}", 50);   // "[Output truncated - 50 tokens]" 30 chars -> 8: saves 42
  b.ToolPair("bash", "{}", 10);   // protected
  auto s = Load(b.text());
  auto below = PlanPrune(*s, std::nullopt, Small(10, 135));
  EXPECT_TRUE(below->outputs.empty());
  EXPECT_EQ(below->tokens_saved, 0);
  EXPECT_EQ(below->candidate_savings, 134);
  EXPECT_EQ(below->candidate_count, 2u);
  EXPECT_NE(below->skipped_reason.find("below the minimum"), std::string::npos);
  auto exact = PlanPrune(*s, std::nullopt, Small(10, 134));
  EXPECT_EQ(exact->outputs.size(), 2u);
  EXPECT_EQ(exact->tokens_saved, 134);
}

TEST(Prune, TinyOutputsSaveNothingButArePruned) {
  // oh-my-pi 15.7.2 has no minimum size: a 3-token output becomes a longer
  // notice and saves 0 (never negative).
  SessionBuilder b;
  b.User("go");
  b.ToolPair("bash", "{}", 3);
  b.ToolPair("bash", "{}", 100);
  b.ToolPair("bash", "{}", 1);
  auto s = Load(b.text());
  auto plan = PlanPrune(*s, std::nullopt, Small(1, 0));
  ASSERT_EQ(plan->outputs.size(), 2u);
  EXPECT_EQ(plan->outputs[0].tokens, 3);
  EXPECT_EQ(plan->outputs[0].tokens_saved, 0);
  EXPECT_EQ(plan->tokens_saved, 92);
  PruneOptions o = Small(1, 0);
  o.min_prune_tokens = 4;
  auto with_min = PlanPrune(*s, std::nullopt, o);
  ASSERT_EQ(with_min->outputs.size(), 1u);
  EXPECT_EQ(with_min->outputs[0].tokens, 100);
}

TEST(Prune, ReadAndSkillAreNeverPrunedButCount) {
  SessionBuilder b;
  b.User("go");
  std::string old_bash = b.ToolPair("bash", "{}", 100);
  b.ToolPair("read", R"({"path":"a"})", 500);
  b.ToolPair("skill", R"({"name":"x"})", 500);
  b.ToolPair("read", R"({"path":"b"})", 100);  // newest: protected by the window
  auto s = Load(b.text());
  // The window (100) is filled by the newest read; the older read and skill
  // are past it yet stay; the bash result behind them is pruned.
  auto plan = PlanPrune(*s, std::nullopt, Small(100, 0));
  EXPECT_EQ(Ids(*plan), (std::vector<std::string>{old_bash}));
  EXPECT_EQ(plan->kept, 3u);
  // Protecting nothing by name prunes them too.
  PruneOptions o = Small(100, 0);
  o.protected_tools.clear();
  EXPECT_EQ(PlanPrune(*s, std::nullopt, o)->outputs.size(), 3u);
}

TEST(Prune, AlreadyPrunedCountTowardTheWindowAndAreSkipped) {
  SessionBuilder b;
  b.User("go");
  std::string old = b.ToolPair("bash", "{}", 80);
  std::string pruned = b.ToolPair("bash", "{}", 120, /*already_pruned=*/true);
  b.ToolPair("bash", "{}", 10);
  auto s = Load(b.text());
  // newest 10 (protected, acc 10) -> pruned one adds 120 (acc 130) -> old is a candidate.
  auto plan = PlanPrune(*s, std::nullopt, Small(100, 0));
  EXPECT_EQ(Ids(*plan), (std::vector<std::string>{old}));
  EXPECT_EQ(plan->already_pruned, 1u);
  // Without the pruned result's 120 tokens the old one would be protected.
  SessionBuilder c;
  c.User("go");
  c.ToolPair("bash", "{}", 80);
  c.ToolPair("bash", "{}", 10);
  EXPECT_TRUE(PlanPrune(*Load(c.text()), std::nullopt, Small(100, 0))->outputs.empty());
}

TEST(Prune, OutputsAreListedOldestFirstWithPathPositions) {
  SessionBuilder b;
  b.User("go");                                   // path index 0
  std::string a = b.ToolPair("bash", "{}", 40);   // 1, 2
  std::string c = b.ToolPair("write", "{}", 40);  // 3, 4
  b.ToolPair("bash", "{}", 40);
  auto s = Load(b.text());
  auto plan = PlanPrune(*s, std::nullopt, Small(40, 0));
  ASSERT_EQ(plan->outputs.size(), 2u);
  EXPECT_EQ(plan->outputs[0].entry_id, a);
  EXPECT_EQ(plan->outputs[0].path_index, 2u);
  EXPECT_EQ(plan->outputs[0].tool_name, "bash");
  EXPECT_EQ(plan->outputs[0].tool_call_id, "call1");
  EXPECT_EQ(plan->outputs[1].entry_id, c);
  EXPECT_EQ(plan->outputs[1].path_index, 4u);
  EXPECT_EQ(plan->outputs[1].tool_name, "write");
}

TEST(Prune, FollowsTheChosenLeafOnly) {
  SessionBuilder b;
  std::string root = b.User("go");
  std::string on_a = b.ToolPair("bash", "{}", 100);
  b.ToolPair("bash", "{}", 10);
  std::string leaf_a = b.last();
  b.SetParent(root);
  std::string on_b = b.ToolPair("bash", "{}", 100);
  b.ToolPair("bash", "{}", 10);
  auto s = Load(b.text());
  auto default_leaf = PlanPrune(*s, std::nullopt, Small(10, 0));
  EXPECT_EQ(Ids(*default_leaf), (std::vector<std::string>{on_b}));
  auto a = PlanPrune(*s, s->Find(leaf_a), Small(10, 0));
  EXPECT_EQ(Ids(*a), (std::vector<std::string>{on_a}));
  EXPECT_EQ(PlanPrune(*s, 999, {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Prune, EmptySessionPlansNothing) {
  SessionBuilder b;
  auto s = Load(b.text());
  auto plan = PlanPrune(*s, std::nullopt, {});
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->outputs.empty());
}

// oh-my-pi 15.7.2 scans the whole path, summarized entries included;
// only_in_context restricts to what the context still holds.
TEST(Prune, OnlyInContextSkipsSummarizedEntries) {
  SessionBuilder b;
  b.User("go");
  std::string before = b.ToolPair("bash", "{}", 100);
  std::string kept_user = b.User("again");
  std::string after = b.ToolPair("bash", "{}", 100);
  std::string compaction =
      R"({"type":"compaction","id":"cmp","parentId":")" + b.last() +
      R"(","timestamp":"2026-01-01T00:00:05.000Z","summary":"s","firstKeptEntryId":")" + kept_user +
      R"(","tokensBefore":500})";
  b.AddLine(compaction, "cmp");
  b.ToolPair("bash", "{}", 10);
  auto s = Load(b.text());
  EXPECT_EQ(Ids(*PlanPrune(*s, std::nullopt, Small(10, 0))),
            (std::vector<std::string>{before, after}));
  PruneOptions o = Small(10, 0);
  o.only_in_context = true;
  EXPECT_EQ(Ids(*PlanPrune(*s, std::nullopt, o)), (std::vector<std::string>{after}));
}

TEST(Prune, TokenizerCounterSumsTextFragmentsAndImages) {
  // A stand-in tokenizer: one token per space-separated word.
  auto words = [](std::string_view t) -> int64_t {
    int64_t n = 0;
    bool in = false;
    for (char ch : t) {
      if (ch != ' ' && !in) n++;
      in = ch != ' ';
    }
    return n;
  };
  MessageTokenCounter c = TokenizerCounter(words);
  EXPECT_EQ(c(R"({"role":"toolResult","content":"one two three"})"), 3);
  EXPECT_EQ(
      c(R"({"role":"toolResult","content":[{"type":"text","text":"a b"},{"type":"image","data":"xx","mimeType":"image/png"},{"type":"text","text":"c"}]})"),
      3 + kOmpImageTokens);
  EXPECT_EQ(c("not json"), 0);
  // Plugged into the planner, it decides the window and the notice numbers.
  SessionBuilder b;
  b.User("go");
  b.Add(
      R"({"role":"toolResult","toolCallId":"x","toolName":"bash","content":[{"type":"text","text":"w w w w w"}],"isError":false,"timestamp":3})");
  b.Add(
      R"({"role":"toolResult","toolCallId":"y","toolName":"bash","content":[{"type":"text","text":"w w"}],"isError":false,"timestamp":3})");
  auto s = Load(b.text());
  PruneOptions o = Small(2, 0);
  o.count_tokens = c;
  auto plan = PlanPrune(*s, std::nullopt, o);
  ASSERT_EQ(plan->outputs.size(), 1u);
  EXPECT_EQ(plan->outputs[0].replacement, "[Output truncated - 5 tokens]");
  EXPECT_EQ(plan->outputs[0].tokens_saved, 0);  // 5 - ceil(29/4)
}

// --- the rewrite ---------------------------------------------------------

TEST(ApplyRewrite, RewritesOnlyThePlannedLinesInPlace) {
  SessionBuilder b;
  b.User("go");
  std::string old = b.ToolPair("bash", R"({"command":"ls"})", 100);
  b.ToolPair("bash", "{}", 10);
  auto s = Load(b.text());
  auto plan = PlanPrune(*s, std::nullopt, Small(10, 0));
  ASSERT_EQ(plan->outputs.size(), 1u);
  auto env = FixedEnv();
  ApplyOptions ao;
  ao.env = env.get();
  auto text = ApplyRewrite(*s, *plan, ao);
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto before = Lines(b.text()), after = Lines(*text);
  ASSERT_EQ(before.size(), after.size());
  const size_t changed = s->entry(*s->Find(old)).line - 1;
  for (size_t i = 0; i < before.size(); ++i)
    if (i != changed) {
      EXPECT_EQ(before[i], after[i]) << "line " << i + 1;
    }
  EXPECT_EQ(
      after[changed],
      R"({"type":"message","id":")" + old +
          R"(","parentId":"e2","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"toolResult","toolCallId":"call1","toolName":"bash","content":[{"type":"text","text":"[Output truncated - 100 tokens]"}],"details":{"k":1},"isError":false,"timestamp":3,"prunedAt":1700000000123}})");

  // The result loads, the message is a pruned result, and pruning again
  // finds nothing new (the pruned result is skipped).
  auto again = Load(*text);
  auto ctx = BuildSessionContext(*again);
  ASSERT_TRUE(ctx.ok());
  auto m = ParseMessage(again->MessageJson(*again->Find(old)));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->JoinedText(), "[Output truncated - 100 tokens]");
  auto replan = PlanPrune(*again, std::nullopt, Small(10, 0));
  EXPECT_TRUE(replan->outputs.empty());
  EXPECT_EQ(replan->already_pruned, 1u);
}

TEST(ApplyRewrite, OriginalTextKeepsBlankMalformedAndCrlfLines) {
  SessionBuilder b;
  b.User("go");
  std::string old = b.ToolPair("bash", "{}", 100);
  b.ToolPair("bash", "{}", 10);
  // A malformed line, a blank line and a CRLF ending on the pruned line.
  std::string text = b.text();
  size_t pos = text.find(R"("id":")" + old + "\"");
  size_t eol = text.find('\n', pos);
  text.insert(eol, "\r");
  text += "{not json\n\n";
  auto s = Load(text);
  ASSERT_EQ(s->warnings().size(), 1u);
  auto plan = PlanPrune(*s, std::nullopt, Small(10, 0));
  ASSERT_EQ(plan->outputs.size(), 1u);
  auto env = FixedEnv();
  ApplyOptions ao;
  ao.env = env.get();
  ao.original_text = text;
  auto out = ApplyRewrite(*s, *plan, ao);
  ASSERT_TRUE(out.ok()) << out.status().message();
  auto before = Lines(text), after = Lines(*out);
  ASSERT_EQ(before.size(), after.size());
  size_t changed = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    if (before[i] == after[i]) continue;
    changed++;
    EXPECT_NE(after[i].find("[Output truncated - 100 tokens]"), std::string::npos);
    EXPECT_EQ(after[i].back(), '\r');
  }
  EXPECT_EQ(changed, 1u);
  EXPECT_TRUE(out->ends_with("}\n{not json\n\n"));
  // Without the original bytes the base is the v3 form: the malformed and
  // blank lines are gone, the rest is the same.
  ao.original_text.reset();
  auto v3 = ApplyRewrite(*s, *plan, ao);
  EXPECT_EQ(Lines(*v3).size(), before.size() - 2);
}

TEST(ApplyRewrite, RefusesTextThatDoesNotMatchTheSession) {
  SessionBuilder b;
  b.User("go");
  b.ToolPair("bash", "{}", 100);
  b.ToolPair("bash", "{}", 10);
  auto s = Load(b.text());
  auto plan = PlanPrune(*s, std::nullopt, Small(10, 0));
  ApplyOptions ao;
  std::string other = b.text();
  other.replace(other.find("abcd"), 4, "ABCD");
  ao.original_text = other;
  const auto changed_line = 1 + std::count(other.begin(), other.begin() + other.find("ABCD"), '\n');
  Status changed = ApplyRewrite(*s, *plan, ao).status();
  EXPECT_EQ(changed.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(changed.message(),
            "t.jsonl:" + std::to_string(changed_line) +
                ": the file does not match the loaded session (changed since it was read?)");
  std::string shorter = b.text().substr(0, b.text().find("\n") + 1);
  ao.original_text = shorter;
  Status short_status = ApplyRewrite(*s, *plan, ao).status();
  EXPECT_EQ(short_status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(short_status.message(), "t.jsonl: the file is shorter than the loaded session");
  // A plan naming a non-result entry is a caller error.
  RewritePlan bad;
  bad.outputs.push_back(ReplacedOutput{});
  bad.outputs[0].entry_index = 0;
  EXPECT_EQ(ApplyRewrite(*s, bad, {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ApplyRewrite, V1FileStaysV1WithOtherLinesIdentical) {
  std::string v1 =
      R"({"type":"session","id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})"
      "\n"
      R"({"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"go","timestamp":1}})"
      "\n"
      R"({"type":"message","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":")" +
      std::string(200, 'x') +
      R"("}],"isError":false,"timestamp":2}})"
      "\n"
      R"({"type":"message","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"c2","toolName":"bash","content":"ok","isError":false,"timestamp":3}})"
      "\n";
  const std::string& fixed = v1;
  auto s = Load(fixed);
  ASSERT_TRUE(s->migrated());
  auto plan = PlanPrune(*s, std::nullopt, Small(1, 0));
  ASSERT_EQ(plan->outputs.size(), 1u);
  auto env = FixedEnv();
  ApplyOptions ao;
  ao.env = env.get();
  ao.original_text = fixed;
  auto out = ApplyRewrite(*s, *plan, ao);
  ASSERT_TRUE(out.ok()) << out.status().message();
  auto before = Lines(fixed), after = Lines(*out);
  ASSERT_EQ(before.size(), after.size());
  EXPECT_EQ(before[0], after[0]);
  EXPECT_EQ(before[1], after[1]);
  EXPECT_EQ(before[3], after[3]);
  EXPECT_EQ(after[2].find("\"id\""), std::string::npos);  // still a v1 line
  auto again = Load(*out);
  EXPECT_TRUE(again->migrated());
  EXPECT_EQ(PlanPrune(*again, std::nullopt, Small(1, 0))->already_pruned, 1u);
}

// --- files ----------------------------------------------------------------

TEST(WriteRewrittenSession, InPlaceKeepsABackupAndOutputLeavesTheInput) {
  testing::TempDir d;
  SessionBuilder b;
  b.User("go");
  b.ToolPair("bash", "{}", 100);
  b.ToolPair("bash", "{}", 10);
  std::string path = d.Write("s.jsonl", b.text());
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  auto plan = PlanPrune(**s, std::nullopt, Small(10, 0));

  WriteRewrittenOptions wo;
  wo.output_path = d.path() + "/out.jsonl";
  testing::FixedClockEnv clock(kFixedMs);  // real files, a fixed "prunedAt"
  wo.env = &clock;
  auto out = WriteRewrittenSession(**s, path, *plan, wo);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_FALSE(out->backup_path);
  EXPECT_EQ(testing::ReadFileOrDie(path), b.text());
  std::string rewritten = testing::ReadFileOrDie(wo.output_path);
  EXPECT_NE(rewritten, b.text());

  wo.output_path.clear();
  auto in_place = WriteRewrittenSession(**s, path, *plan, wo);
  ASSERT_TRUE(in_place.ok());
  ASSERT_TRUE(in_place->backup_path);
  EXPECT_EQ(*in_place->backup_path, path + ".bak");
  EXPECT_EQ(testing::ReadFileOrDie(path + ".bak"), b.text());
  EXPECT_EQ(testing::ReadFileOrDie(path), rewritten);

  // The file no longer matches the loaded session: nothing is written.
  EXPECT_EQ(WriteRewrittenSession(**s, path, *plan, wo).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(testing::ReadFileOrDie(path), rewritten);
  // An empty plan writes nothing.
  auto none = WriteRewrittenSession(**s, path, RewritePlan{}, wo);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->output_path.empty());
  EXPECT_EQ(WriteRewrittenSession(**s, d.path() + "/missing.jsonl", *plan, wo).status().code(),
            StatusCode::kNotFound);
}

// Another writer (taking no lock, as pi) appends while the rewrite is being
// built: right after the rewrite mapped the file.
class AppendDuringRewrite : public EnvWrapper {
 public:
  AppendDuringRewrite(MemEnv* env, std::string line) : EnvWrapper(env), env_(env), line_(line) {}
  Result<std::unique_ptr<MappedFile>> MapFile(const std::string& path) override {
    auto mapped = EnvWrapper::MapFile(path);
    if (++maps_ == 1) {
      EXPECT_TRUE(env_->AppendByOther(path, line_).ok());
    }
    return mapped;
  }

 private:
  MemEnv* env_;
  std::string line_;
  int maps_ = 0;
};

TEST(WriteRewrittenSession, CarriesOverAnAppendMeanwhileAndSurvivesFaults) {
  testing::MemDir d;
  SessionBuilder b;
  b.User("go");
  b.ToolPair("bash", "{}", 100);
  b.ToolPair("bash", "{}", 10);
  std::string path = d.Write("s.jsonl", b.text());
  LoadOptions lo;
  lo.env = d.env();
  auto s = Session::Open(path, lo);
  ASSERT_TRUE(s.ok());
  auto plan = PlanPrune(**s, std::nullopt, Small(10, 0));
  ASSERT_FALSE(plan->outputs.empty());

  const std::string appended = R"({"type":"custom","id":"zz","parentId":null})"
                               "\n";
  AppendDuringRewrite racing(d.env(), appended);
  WriteRewrittenOptions wo;
  wo.env = &racing;
  auto raced = WriteRewrittenSession(**s, path, *plan, wo);
  ASSERT_TRUE(raced.ok()) << raced.status().ToString();
  EXPECT_EQ(raced->carried_bytes, appended.size());
  const std::string pruned = d.Read(path);
  EXPECT_NE(pruned.substr(0, pruned.size() - appended.size()), b.text());
  EXPECT_EQ(pruned.substr(pruned.size() - appended.size()), appended);  // the entry is kept
  EXPECT_EQ(d.Read(path + ".bak"), b.text() + appended);
  EXPECT_EQ(testing::Names(d.env(), d.path()),
            (std::vector<std::string>{"s.jsonl", "s.jsonl.bak", "s.jsonl.lock"}));

  // A failed rename or fsync leaves the file as it was and no temporary file.
  wo.env = d.env();
  d.Write("s.jsonl", b.text() + appended);
  std::string before = d.Read(path);
  for (MemEnvOp op : {MemEnvOp::kRename, MemEnvOp::kSync, MemEnvOp::kWrite}) {
    d.env()->FailNth(op, 1);
    auto failed = WriteRewrittenSession(**s, path, *plan, wo);
    EXPECT_EQ(failed.status().code(), StatusCode::kIoError) << static_cast<int>(op);
    EXPECT_EQ(d.Read(path), before);
    for (const std::string& name : testing::Names(d.env(), d.path()))
      EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
  }
  // A rewrite that returned OK survives a crash right after it.
  auto ok = WriteRewrittenSession(**s, path, *plan, wo);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  std::string rewritten = d.Read(path);
  EXPECT_NE(rewritten, before);
  d.env()->Crash();
  EXPECT_EQ(d.Read(path), rewritten);
  EXPECT_EQ(d.Read(path + ".bak"), before);
}

}  // namespace
}  // namespace compactor
