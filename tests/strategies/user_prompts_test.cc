#include "compactor/user_prompts.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/strategy.h"
#include "prepare/session_builder.h"
#include "support/compaction_fixtures.h"
#include "support/test_util.h"

namespace compactor {
namespace {

TEST(UserPrompts, TextTokensCountAsciiQuarterAndOthersOne) {
  EXPECT_EQ(PromptTextTokens(""), 0);
  EXPECT_EQ(PromptTextTokens("abcd"), 1);
  EXPECT_EQ(PromptTextTokens("abcde"), 2);
  EXPECT_EQ(PromptTextTokens("日本語"), 3);
  EXPECT_EQ(PromptTextTokens("ab😀"), 2);
}

TEST(UserPrompts, TruncationIsSinglePassAndKeepsCodePoints) {
  EXPECT_EQ(TruncateToPromptTokens("abcdefgh", 1, false), "abcd");
  EXPECT_EQ(TruncateToPromptTokens("abcdefgh", 1, true), "efgh");
  EXPECT_EQ(TruncateToPromptTokens("日本語テキスト", 2, false), "日本");
  EXPECT_EQ(TruncateToPromptTokens("日本語テキスト", 2, true), "スト");
  EXPECT_EQ(TruncateToPromptTokens("a😀b", 1, true), "b");
  EXPECT_EQ(TruncateToPromptTokens("a😀b", 2, true), "a😀b");  // ceil(2/4) + 1 = 2
  EXPECT_EQ(TruncateToPromptTokens("ab😀", 1, true), "😀");
  EXPECT_EQ(TruncateToPromptTokens("anything", 0, false), "");
  // A long CJK text is handled in linear time (the old quadratic re-estimation froze).
  std::string cjk;
  for (int i = 0; i < 200000; ++i) cjk += "語";
  EXPECT_EQ(PromptTextTokens(TruncateToPromptTokens(cjk, 18000, true)), 18000);
}

TEST(UserPrompts, EverythingFitsIsKeptWhole) {
  std::vector<UserPrompt> p{{"a", "first", 0}, {"b", "second", 1}};
  auto sel = SelectUserPrompts(p);
  EXPECT_TRUE(sel.head.empty());
  ASSERT_EQ(sel.tail.size(), 2u);
  EXPECT_EQ(sel.tail[1].tokens, 2 + kPromptMediaTokens);
  EXPECT_FALSE(sel.elided());
}

TEST(UserPrompts, HeadAndTailWithBoundaryCuts) {
  // Ten prompts of 100 tokens (400 ASCII chars each); budget 350 with head 120.
  std::vector<UserPrompt> p;
  for (int i = 0; i < 10; ++i)
    p.push_back({std::string(1, 'e').append(std::to_string(i)),
                 std::string(400, static_cast<char>('a' + i)), 0});
  UserPromptOptions o;
  o.max_tokens = 350;
  o.head_tokens = 120;
  auto sel = SelectUserPrompts(p, o);
  // Tail budget 230: prompts 9 and 8 whole, prompt 7 cut to its last 30 tokens.
  ASSERT_EQ(sel.tail.size(), 3u);
  EXPECT_EQ(sel.tail[0].entry_id, "e7");
  EXPECT_EQ(sel.tail[0].cut, "tail");
  EXPECT_EQ(sel.tail[0].text, std::string(120, 'h'));
  EXPECT_EQ(sel.tail[2].entry_id, "e9");
  // Head budget 120: prompt 0 whole, prompt 1 cut to its first 20 tokens.
  ASSERT_EQ(sel.head.size(), 2u);
  EXPECT_EQ(sel.head[0].cut, "");
  EXPECT_EQ(sel.head[1].entry_id, "e1");
  EXPECT_EQ(sel.head[1].cut, "head");
  EXPECT_EQ(sel.head[1].text, std::string(80, 'b'));
  EXPECT_EQ(sel.total_tokens, 1000);
  EXPECT_EQ(sel.omitted_tokens, 1000 - 350);
  EXPECT_NE(ElisionMarkerText(sel.omitted_tokens).find("650 tokens"), std::string::npos);
}

TEST(UserPrompts, BoundaryBeginningCanFillTheHead) {
  // One huge prompt: the tail keeps its end, the head its beginning.
  std::vector<UserPrompt> p{{"only", std::string(4000, 'x') + std::string(4000, 'y'), 0}};
  UserPromptOptions o;
  o.max_tokens = 300;
  o.head_tokens = 100;
  auto sel = SelectUserPrompts(p, o);
  ASSERT_EQ(sel.tail.size(), 1u);
  EXPECT_EQ(sel.tail[0].text, std::string(800, 'y'));
  ASSERT_EQ(sel.head.size(), 1u);
  EXPECT_EQ(sel.head[0].text, std::string(400, 'x'));
  EXPECT_EQ(sel.head[0].cut, "head");
}

TEST(UserPrompts, SummaryTextHasPrefixAndFallback) {
  EXPECT_NE(UserPromptsSummaryText("  the summary \n").find("\nthe summary"), std::string::npos);
  EXPECT_NE(UserPromptsSummaryText("").find("(no summary available)"), std::string::npos);
}

// A session of `prompts` user prompts of 1000 Kimi tokens (4000 ASCII chars)
// each, every one answered.
std::unique_ptr<Session> PromptsSession(int prompts, std::vector<std::string>* ids) {
  testing_session::SessionBuilder b;
  for (int i = 0; i < prompts; ++i) {
    ids->push_back(b.U(4000, static_cast<char>('a' + i % 26)));
    b.A(40);
  }
  auto s = Session::FromString(b.Jsonl(), "p.jsonl");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

Result<ComputedCompaction> CompactUserPrompts(const Session& session,
                                              const testing::RecordingSummarizer& sum) {
  CompactOptions o = testing::Options(&sum);
  o.strategy = FindStrategy("user-prompts");
  return ComputeCompaction(session, o);
}

TEST(UserPromptsStrategy, ExpandsIntoHeadMarkerTailAndSummary) {
  std::vector<std::string> ids;
  auto session = PromptsSession(30, &ids);
  testing::RecordingSummarizer sum;
  auto c = CompactUserPrompts(*session, sum);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->result.compacted);
  EXPECT_EQ(c->result.strategy, "user-prompts");
  EXPECT_EQ(c->result.kept_user_messages, 20u);  // 2 oldest + 18 newest
  EXPECT_FALSE(c->result.masked_outputs);
  auto after = SessionAfterCompaction(*session, *c);
  ASSERT_TRUE(after.ok());
  // pi's view: one compactionSummary message.
  auto pi = BuildSessionContext(**after);
  ASSERT_TRUE(pi.ok());
  ASSERT_EQ(pi->messages.size(), 1u);
  EXPECT_EQ(pi->messages[0].role, Role::kCompactionSummary);
  // Compactor's view through the registry's expander.
  ContextOptions co;
  co.expander = StrategyExpander();
  auto ours = BuildSessionContext(**after, co);
  ASSERT_TRUE(ours.ok());
  ASSERT_EQ(ours->messages.size(), 22u);
  std::vector<std::string> origins;
  for (const ContextMessage& m : ours->messages) origins.emplace_back(m.origin);
  EXPECT_EQ(origins[0], "kept-prompt");
  EXPECT_EQ(origins[1], "kept-prompt");
  EXPECT_EQ(origins[2], "elision");
  for (size_t i = 3; i < 21; ++i) EXPECT_EQ(origins[i], "kept-prompt") << i;
  EXPECT_EQ(origins[21], "summary");
  // Kept whole: the original stored message itself.
  EXPECT_EQ(ours->messages[0].json(), (*after)->MessageJson(*(*after)->Find(ids[0])));
  EXPECT_EQ((*after)->entry(ours->messages[3].entry_index).id, ids[12]);
  auto marker = nlohmann::json::parse(ours->messages[2].json());
  EXPECT_EQ(marker["content"][0]["text"], ElisionMarkerText(10000));
  auto summary = nlohmann::json::parse(ours->messages[21].json());
  EXPECT_EQ(summary["role"], "user");
  EXPECT_EQ(summary["content"][0]["text"], UserPromptsSummaryText(c->result.summary));
}

// Unreadable details: the expansion declines half-way and the builder shows
// pi's view alone, nothing of the partial expansion.
TEST(UserPromptsStrategy, UnreadableDetailsFallBackToPiView) {
  std::vector<std::string> ids;
  auto session = PromptsSession(3, &ids);
  testing::RecordingSummarizer sum;
  auto c = CompactUserPrompts(*session, sum);
  ASSERT_TRUE(c.ok() && c->result.compacted);
  std::string entry = c->result.entry_json;
  const std::string last_kept = "{\"entryId\":\"" + ids[2] + "\"";
  ASSERT_NE(entry.find(last_kept), std::string::npos);
  entry.replace(entry.find(last_kept), last_kept.size(), "{\"entry\":\"" + ids[2] + "\"");
  auto broken = SessionWithAppended(*session, entry);
  ASSERT_TRUE(broken.ok());
  ContextOptions co;
  co.expander = StrategyExpander();
  auto ctx = BuildSessionContext(**broken, co);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(ContextToJson(*ctx), ContextToJson(*BuildSessionContext(**broken)));
  ASSERT_EQ(ctx->messages.size(), 1u);
}

TEST(UserPromptsStrategy, ReportsItsCounterOnSkipsToo) {
  std::vector<std::string> ids;
  auto session = PromptsSession(3, &ids);
  testing::RecordingSummarizer sum;
  CompactOptions o = testing::Options(&sum);
  o.strategy = FindStrategy("user-prompts");
  o.settings.enabled = false;
  o.only_if_needed = true;
  auto c = ComputeCompaction(*session, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->result.skipped_reason, "disabled");
  EXPECT_EQ(c->result.kept_user_messages, 0u);
  // The CLI prints it for this strategy only.
  ::compactor::testing::TempDir d;
  std::string path = d.Write("s.jsonl", testing::MakeSession(3, 100));
  auto up = ::compactor::testing::RunCli(
      {"compact", path, "--strategy", "user-prompts", "--dry-run", "--json"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(nlohmann::json::parse(up.out)["keptUserMessageCount"], 3);
  auto summary = ::compactor::testing::RunCli({"compact", path, "--dry-run", "--json"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_FALSE(nlohmann::json::parse(summary.out).contains("keptUserMessageCount"));
}

}  // namespace
}  // namespace compactor
