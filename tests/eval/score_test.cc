#include <gtest/gtest.h>

#include "compactor/context.h"
#include "compactor/eval.h"

namespace compactor {
namespace {

RenderedBlock Block(std::string text, bool exchange = false, bool summary = false) {
  RenderedBlock b;
  b.text = std::move(text);
  b.exchange = exchange;
  b.summary = summary;
  return b;
}

Fact MakeFact(std::string id, FactKind kind, std::string text,
              std::vector<std::string> variants = {},
              std::vector<std::vector<std::string>> qualifiers = {}) {
  Fact f;
  f.id = std::move(id);
  f.kind = kind;
  f.text = std::move(text);
  f.variants = std::move(variants);
  f.qualifiers = std::move(qualifiers);
  return f;
}

FactOutcome ScoreOne(const Fact& f, const std::vector<RenderedBlock>& blocks) {
  return ScoreFacts({f}, blocks).at(0);
}

TEST(NormalizeTest, LowercasesCollapsesWhitespaceAndDropsQuoting) {
  EXPECT_EQ(NormalizeForMatch("  Use `pnpm`,\n\n  NOT \"npm\"  "), "use pnpm, not npm");
  EXPECT_EQ(NormalizeForMatch("**Never** touch\tsrc/generated/"), "never touch src/generated/");
  EXPECT_EQ(NormalizeForMatch(""), "");
}

TEST(ScoreTest, CanonicalTextCaseAndWhitespaceInsensitive) {
  Fact f = MakeFact("c1", FactKind::kConstraint, "use pnpm, not npm");
  EXPECT_TRUE(ScoreOne(f, {Block("Constraints:\n- Use  PNPM,\n not npm.")}).retained);
  EXPECT_FALSE(ScoreOne(f, {Block("We use npm here.")}).retained);
  EXPECT_FALSE(ScoreOne(f, {}).retained);
}

TEST(ScoreTest, AnyVariantCounts) {
  Fact f = MakeFact("c1", FactKind::kConstraint, "use pnpm, not npm", {"pnpm instead of npm"});
  FactOutcome o = ScoreOne(f, {Block("The user wants pnpm instead of npm everywhere.")});
  EXPECT_TRUE(o.mentioned);
  EXPECT_TRUE(o.retained);
}

TEST(ScoreTest, MatchesOnlyAtWordBoundaries) {
  Fact f = MakeFact("m1", FactKind::kFileModified, "src/store.ts");
  EXPECT_FALSE(ScoreOne(f, {Block("edited src/store.tsx")}).retained);
  EXPECT_FALSE(ScoreOne(f, {Block("edited lib/mysrc/store.ts")}).retained);
  EXPECT_TRUE(ScoreOne(f, {Block("edited /repo/src/store.ts, then src/a.ts")}).retained);
  EXPECT_TRUE(ScoreOne(f, {Block("- `src/store.ts` (modified)")}).retained);
}

TEST(ScoreTest, CommandNeedsItsOutcomeNearby) {
  Fact f = MakeFact("k1", FactKind::kCommand, "pnpm tsc --noEmit", {},
                    {{"exit 2", "exit code 2", "exited with code 2", "failed"}});
  // Mentioned without outcome: not retained.
  FactOutcome bare = ScoreOne(f, {Block("Ran pnpm tsc --noEmit.", false, true)});
  EXPECT_TRUE(bare.mentioned);
  EXPECT_FALSE(bare.retained);
  // Outcome within the window of a summary line.
  EXPECT_TRUE(ScoreOne(f, {Block("- `pnpm tsc --noEmit` -> exit 2", false, true)}).retained);
  // Outcome far away in the same prose block does not count.
  std::string far =
      "pnpm tsc --noEmit was run. " + std::string(kQualifierWindow + 50, 'x') + " failed";
  EXPECT_FALSE(ScoreOne(f, {Block(far, false, true)}).retained);
  // In a tool exchange (call + result) the whole block counts.
  std::string exchange = "[tool call] bash\ncommand: pnpm tsc --noEmit\n[tool error]\n" +
                         std::string(5000, 'y') + "\n\nCommand exited with code 2";
  EXPECT_TRUE(ScoreOne(f, {Block(exchange, true)}).retained);
  // The outcome in another block does not count.
  EXPECT_FALSE(ScoreOne(f, {Block("command: pnpm tsc --noEmit", true), Block("exit 2")}).retained);
}

TEST(ScoreTest, DecisionNeedsAReason) {
  Fact f = MakeFact("d1", FactKind::kDecision, "sliding-window counter", {"sliding window"},
                    {{"burst", "boundary"}});
  EXPECT_FALSE(ScoreOne(f, {Block("Decided: sliding window.")}).retained);
  EXPECT_TRUE(
      ScoreOne(f, {Block("Decided: sliding window, since fixed windows allow a burst.")}).retained);
}

class StaleTest : public ::testing::Test {
 protected:
  StaleTest() {
    stale_ =
        MakeFact("d1", FactKind::kDecision, "store the counters in Redis", {"counters in redis"});
    stale_.superseded_by = "d2";
    current_ = MakeFact("d2", FactKind::kDecision, "in-memory LRU store");
  }
  std::vector<FactOutcome> Score(const std::vector<RenderedBlock>& blocks) {
    return ScoreFacts({stale_, current_}, blocks);
  }
  Fact stale_, current_;
};

TEST_F(StaleTest, StaleAloneIsPresentedAsCurrent) {
  auto o = Score({Block("Decisions: store the counters in Redis.")});
  EXPECT_TRUE(o[0].stale);
  EXPECT_TRUE(o[0].mentioned);
  EXPECT_FALSE(o[0].retained);  // stale facts are never "retained"
  EXPECT_TRUE(o[0].stale_as_current);
  EXPECT_FALSE(o[1].retained);
}

TEST_F(StaleTest, StaleFollowedByCurrentIsFine) {
  auto o = Score({Block("We store the counters in Redis."), Block("Now: in-memory LRU store.")});
  EXPECT_FALSE(o[0].stale_as_current);
  EXPECT_TRUE(o[1].retained);
}

TEST_F(StaleTest, CurrentThenStaleUnmarkedIsWrong) {
  auto o = Score({Block("Use an in-memory LRU store."), Block("Plan: counters in Redis.")});
  EXPECT_TRUE(o[0].stale_as_current);
}

TEST_F(StaleTest, MarkedStaleMentionIsFine) {
  for (const char* text :
       {"Counters in Redis were replaced by an in-memory LRU store.",
        "Decision changed: no longer store the counters in Redis.",
        "Originally: counters in Redis (superseded).", "counters in Redis -> per-worker memory"}) {
    auto o = Score({Block("In-memory LRU store."), Block(text)});
    EXPECT_FALSE(o[0].stale_as_current) << text;
  }
}

TEST_F(StaleTest, MarkerOnAnotherLineDoesNotCount) {
  // A summary listing the stale decision as a key decision while another
  // line mentions a change elsewhere still presents it as current.
  auto o = Score(
      {Block("## In Progress\n- [ ] Change of plan: use an in-memory LRU store instead.\n"
             "## Key Decisions\n- **Decision: store the counters in Redis**: shared budget.")});
  EXPECT_TRUE(o[0].stale_as_current);
  auto same_line =
      Score({Block("## Key Decisions\n- counters in Redis (superseded: in-memory LRU store)")});
  EXPECT_FALSE(same_line[0].stale_as_current);
}

TEST_F(StaleTest, AbsentStaleIsFine) {
  auto o = Score({Block("Decisions: in-memory LRU store.")});
  EXPECT_FALSE(o[0].mentioned);
  EXPECT_FALSE(o[0].stale_as_current);
}

TEST(RenderTest, ToolCallAndResultFormOneExchange) {
  std::string jsonl =
      "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\","
      "\"cwd\":\"/w\"}\n"
      "{\"type\":\"message\",\"id\":\"a1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01."
      "000Z\","
      "\"message\":{\"role\":\"user\",\"content\":\"Check types\",\"timestamp\":1}}\n"
      "{\"type\":\"message\",\"id\":\"a2\",\"parentId\":\"a1\",\"timestamp\":\"2026-01-01T00:00:02."
      "000Z\","
      "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Running.\"},"
      "{\"type\":\"toolCall\",\"id\":\"t1\",\"name\":\"bash\",\"arguments\":{\"command\":\"echo "
      "\\\"hi\\\"\"}}],"
      "\"stopReason\":\"toolUse\",\"timestamp\":2}}\n"
      "{\"type\":\"message\",\"id\":\"a3\",\"parentId\":\"a2\",\"timestamp\":\"2026-01-01T00:00:03."
      "000Z\","
      "\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"t1\",\"toolName\":\"bash\","
      "\"content\":"
      "[{\"type\":\"text\",\"text\":\"boom\\n\\nCommand exited with code "
      "3\"}],\"isError\":true,\"timestamp\":3}}\n";
  auto session = Session::FromString(jsonl, "t.jsonl");
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto ctx = BuildSessionContext(**session);
  ASSERT_TRUE(ctx.ok());
  std::vector<RenderedBlock> blocks = RenderContext(ctx->messages);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].text, "Check types");
  EXPECT_EQ(blocks[1].text, "Running.");
  EXPECT_TRUE(blocks[2].exchange);
  // Arguments are unescaped: the command reads as typed.
  EXPECT_NE(blocks[2].text.find("command: echo \"hi\""), std::string::npos);
  EXPECT_NE(blocks[2].text.find("[tool error]\nboom"), std::string::npos);

  Fact f = MakeFact("k", FactKind::kCommand, "echo \"hi\"", {}, {{"exited with code 3"}});
  EXPECT_TRUE(ScoreFacts({f}, blocks)[0].retained);
}

}  // namespace
}  // namespace compactor
