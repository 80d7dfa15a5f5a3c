// Observation masking: which outputs are kept, what the placeholder says, and
// that the rewritten file is an ordinary session.
#include <gtest/gtest.h>

#include "compactor/context.h"
#include "compactor/estimate.h"
#include "compactor/mem_env.h"
#include "compactor/prune.h"
#include "compactor/session.h"
#include "prune/session_builder.h"

namespace compactor {
namespace {

using testing_prune::SessionBuilder;

std::unique_ptr<Session> Load(const std::string& text) {
  auto s = Session::FromString(text, "t.jsonl");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : nullptr;
}

std::vector<std::string> Ids(const RewritePlan& p) {
  std::vector<std::string> ids;
  for (const auto& r : p.outputs) ids.push_back(r.entry_id);
  return ids;
}

MaskOptions Keep(int64_t outputs, int64_t tokens = 0) {
  MaskOptions o;
  o.keep_recent_outputs = outputs;
  o.keep_recent_tokens = tokens;
  return o;
}

TEST(Mask, KeepsTheNewestOutputsVerbatim) {
  SessionBuilder b;
  b.User("go");
  std::string r1 = b.ToolPair("bash", R"({"command":"ls"})", 200);
  std::string r2 = b.ToolPair("bash", R"({"command":"ls"})", 200);
  b.ToolPair("bash", R"({"command":"ls"})", 200);
  b.ToolPair("bash", R"({"command":"ls"})", 200);
  auto s = Load(b.text());
  auto plan = PlanMask(*s, std::nullopt, Keep(2));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Ids(*plan), (std::vector<std::string>{r1, r2}));
  EXPECT_EQ(plan->kept, 2u);
  EXPECT_EQ(Ids(*PlanMask(*s, std::nullopt, Keep(0))).size(), 4u);
  EXPECT_TRUE(PlanMask(*s, std::nullopt, Keep(4))->outputs.empty());
  // A token window keeps more when it reaches further back (the crossing one kept).
  EXPECT_EQ(Ids(*PlanMask(*s, std::nullopt, Keep(1, 401))), (std::vector<std::string>{r1}));
  EXPECT_EQ(Ids(*PlanMask(*s, std::nullopt, Keep(1, 400))), (std::vector<std::string>{r1, r2}));
}

TEST(Mask, PlaceholderNamesToolArgumentsAndSize) {
  SessionBuilder b;
  b.User("go");
  b.ToolPair("bash", R"({"command":"npm test","timeout":30})", 200);
  b.ToolPair("read", R"({"path":"src/a.ts"})", 150, false, /*is_error=*/true);
  auto s = Load(b.text());
  auto plan = PlanMask(*s, std::nullopt, Keep(0));
  ASSERT_EQ(plan->outputs.size(), 2u);
  EXPECT_EQ(plan->outputs[0].replacement,
            "[Masked output of bash(command: \"npm test\", timeout: 30): 200 tokens, 20 lines. "
            "Run the call again if you need it.]");
  EXPECT_EQ(plan->outputs[1].replacement,
            "[Masked error output of read(path: \"src/a.ts\"): 150 tokens, 15 lines. Run the call "
            "again if you need it.]");
  const auto& r = plan->outputs[0];
  EXPECT_EQ(r.tokens_saved, 200 - (static_cast<int64_t>(r.replacement.size()) + 3) / 4);
  EXPECT_EQ(plan->tokens_saved, plan->outputs[0].tokens_saved + plan->outputs[1].tokens_saved);
}

TEST(Mask, LongArgumentsAreClipped) {
  SessionBuilder b;
  b.User("go");
  std::string content(1000, 'y');
  b.ToolPair("write", R"({"path":"a.txt","content":")" + content + R"("})", 400);
  auto s = Load(b.text());
  MaskOptions o = Keep(0);
  o.max_arguments_chars = 60;
  auto plan = PlanMask(*s, std::nullopt, o);
  ASSERT_EQ(plan->outputs.size(), 1u);
  const std::string& p = plan->outputs[0].replacement;
  EXPECT_NE(p.find("write(path: \"a.txt\", content: \"yyy"), std::string::npos) << p;
  EXPECT_NE(p.find("…"), std::string::npos);
  EXPECT_NE(p.find("yyy\"): 400 tokens"), std::string::npos) << p;  // clipped in the middle
  EXPECT_LT(p.size(), 200u);
}

TEST(Mask, LongPathsKeepTheirFileName) {
  SessionBuilder b;
  b.User("go");
  std::string dir;
  for (int i = 0; i < 20; ++i) dir += "/directory" + std::to_string(i);
  b.ToolPair("read", R"({"path":")" + dir + R"(/interactive-mode.ts"})", 400);
  auto s = Load(b.text());
  MaskOptions o = Keep(0);
  o.protected_tools.clear();
  auto plan = PlanMask(*s, std::nullopt, o);
  ASSERT_EQ(plan->outputs.size(), 1u);
  const std::string& p = plan->outputs[0].replacement;
  EXPECT_EQ(p.rfind("[Masked output of read(path: \"/directory0/", 0), 0u) << p;
  EXPECT_NE(p.find("…"), std::string::npos) << p;
  EXPECT_NE(p.find("/interactive-mode.ts\"): 400 tokens"), std::string::npos) << p;
}

TEST(Mask, SmallProtectedAndAlreadyPrunedOutputsStay) {
  SessionBuilder b;
  b.User("go");
  b.ToolPair("bash", "{}", 99);  // below min_output_tokens (100)
  b.ToolPair("skill", R"({"name":"x"})", 500);
  b.ToolPair("bash", "{}", 300, /*already_pruned=*/true);
  std::string big = b.ToolPair("bash", "{}", 100);
  auto s = Load(b.text());
  auto plan = PlanMask(*s, std::nullopt, Keep(0));
  EXPECT_EQ(Ids(*plan), (std::vector<std::string>{big}));
  EXPECT_EQ(plan->already_pruned, 1u);
  EXPECT_EQ(plan->kept, 2u);
  MaskOptions o = Keep(0);
  o.protected_tools.clear();
  o.min_output_tokens = 0;
  EXPECT_EQ(PlanMask(*s, std::nullopt, o)->outputs.size(), 3u);
}

TEST(Mask, OnlyTheContextIsMasked) {
  SessionBuilder b;
  b.User("go");
  b.ToolPair("bash", "{}", 300);  // summarized by the compaction below
  std::string kept_user = b.User("again");
  std::string after = b.ToolPair("bash", "{}", 300);
  b.AddLine(R"({"type":"compaction","id":"cmp","parentId":")" + b.last() +
                R"(","timestamp":"2026-01-01T00:00:05.000Z","summary":"s","firstKeptEntryId":")" +
                kept_user + R"(","tokensBefore":500})",
            "cmp");
  auto s = Load(b.text());
  EXPECT_EQ(Ids(*PlanMask(*s, std::nullopt, Keep(0))), (std::vector<std::string>{after}));
}

TEST(Mask, RewrittenContextShrinksByTheSavings) {
  SessionBuilder b;
  b.User("go");
  for (int i = 0; i < 12; ++i) b.ToolPair("bash", R"({"command":"make"})", 250 + i);
  auto s = Load(b.text());
  MemEnvOptions at42;
  at42.start_ms = 42;
  auto env = NewMemEnv(at42);
  ApplyOptions ao;
  ao.env = env.get();
  auto r = MaskObservations(*s, std::nullopt, MaskOptions{}, ao);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->plan.outputs.size(), 2u);  // 12 results, the newest 10 kept
  auto before = BuildSessionContext(*s);
  auto masked = Load(r->rewritten);
  auto after = BuildSessionContext(*masked);
  ASSERT_TRUE(before.ok() && after.ok());
  ASSERT_EQ(before->messages.size(), after->messages.size());
  EXPECT_EQ(EstimateContextTokens(before->messages).heuristic_sum -
                EstimateContextTokens(after->messages).heuristic_sum,
            r->plan.tokens_saved);
  auto m = ParseMessage(masked->MessageJson(r->plan.outputs[0].entry_index));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->JoinedText(), r->plan.outputs[0].replacement);
  // Masked outputs carry prunedAt, so pruning and masking again skip them.
  EXPECT_NE(masked->MessageJson(r->plan.outputs[0].entry_index).find("\"prunedAt\":42"),
            std::string::npos);
  auto again = PlanMask(*masked, std::nullopt, MaskOptions{});
  EXPECT_TRUE(again->outputs.empty());
  EXPECT_EQ(again->already_pruned, 2u);
  // Nothing to mask: the text is the session's v3 form, unchanged.
  SessionBuilder small;
  small.User("hi");
  auto none = MaskObservations(*Load(small.text()), std::nullopt);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->plan.outputs.empty());
  EXPECT_EQ(none->rewritten, small.text());
}

}  // namespace
}  // namespace compactor
