#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/strategy.h"
#include "support/compaction_fixtures.h"

namespace compactor {
namespace {

using testing::MakeSession;
using testing::Options;
using testing::RecordingSummarizer;

std::unique_ptr<Session> Load(int turns, int chars) {
  auto s = Session::FromString(MakeSession(turns, chars), "s.jsonl");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(SummaryStrategy, AppendsAPiCompactionThatKeepsTheRecentMessages) {
  auto session = Load(20, 2000);
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("summary");
  auto c = ComputeCompaction(*session, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const CompactionResult& r = c->result;
  ASSERT_TRUE(r.compacted);
  EXPECT_EQ(r.strategy, "summary");
  EXPECT_EQ(r.output, CompactionOutput::kAppendEntry);
  EXPECT_FALSE(r.kept_user_messages);  // counters of other strategies stay unset
  EXPECT_FALSE(r.masked_outputs);
  EXPECT_EQ(sum.calls, r.split_turn ? 2 : 1);  // a split turn's prefix is summarized apart
  auto entry = nlohmann::json::parse(r.entry_json);
  EXPECT_EQ(entry["type"], "compaction");
  EXPECT_EQ(entry["method"], "summary");
  EXPECT_EQ(entry["tokensAfter"], r.tokens_after);
  EXPECT_EQ(entry["firstKeptEntryId"], r.first_kept_entry_id);
  EXPECT_EQ(entry["parentId"], "e80");  // appended at the leaf

  // pi's view after the compaction: the summary, then the kept messages.
  auto after = SessionAfterCompaction(*session, *c);
  ASSERT_TRUE(after.ok());
  auto ctx = BuildSessionContext(**after);
  ASSERT_TRUE(ctx.ok());
  ASSERT_GT(ctx->messages.size(), 1u);
  EXPECT_EQ(ctx->messages[0].role, Role::kCompactionSummary);
  EXPECT_EQ((*after)->entry(ctx->messages[1].entry_index).id, r.first_kept_entry_id);
  // The strategy writes no representation of its own: the expanded view is pi's.
  ContextOptions expanded;
  expanded.expander = StrategyExpander();
  auto ours = BuildSessionContext(**after, expanded);
  ASSERT_TRUE(ours.ok());
  EXPECT_EQ(ContextToJson(*ours), ContextToJson(*ctx));
}

// Each summary is told what comes after its messages (to retire what that
// revises): the history the turn prefix and the kept messages, the turn
// prefix the kept messages.
class LaterRecorder : public Summarizer {
 public:
  explicit LaterRecorder(bool reads_later = true) : reads_later_(reads_later) {}
  std::string_view name() const override { return "later-recorder"; }
  bool ReadsLaterMessages() const override { return reads_later_; }
  Result<std::string> Summarize(const SummaryRequest& r) const override {
    std::lock_guard<std::mutex> lock(mu);
    AwaitMessages(r, r.messages.size() + LaterMessageCount(r));
    size_t& slot = r.kind == SummaryKind::kTurnPrefix ? prefix_later : history_later;
    slot = LaterMessageCount(r);
    if (r.kind == SummaryKind::kTurnPrefix) prefix_messages = r.messages.size();
    if (!r.later_messages.empty() && !r.later_messages.back().empty()) {
      last_later_role = r.later_messages.back().back().role;
    }
    return std::string("S");
  }
  mutable std::mutex mu;
  mutable size_t history_later = 0, prefix_later = 0, prefix_messages = 0;
  mutable Role last_later_role = Role::kOther;

 private:
  bool reads_later_;
};

TEST(SummaryStrategy, SummariesSeeTheMessagesAfterThemAsLater) {
  bool split = false;
  for (int chars : {2000, 9000}) {  // the second splits a turn
    auto session = Load(20, chars);
    LaterRecorder sum;
    CompactOptions o = Options(&sum);
    o.strategy = FindStrategy("summary");
    auto c = ComputeCompaction(*session, o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    const CompactionResult& r = c->result;
    ASSERT_TRUE(r.compacted);
    auto after = SessionAfterCompaction(*session, *c);
    ASSERT_TRUE(after.ok());
    auto ctx = BuildSessionContext(**after);
    ASSERT_TRUE(ctx.ok());
    const size_t kept = ctx->messages.size() - 1;  // all but the summary
    ASSERT_GT(kept, 0u);
    EXPECT_EQ(sum.history_later, r.turn_prefix_messages + kept) << chars;
    if (r.split_turn) {
      split = true;
      EXPECT_EQ(sum.prefix_later, kept) << chars;
    }
    EXPECT_EQ(sum.last_later_role, ctx->messages.back().role) << chars;
  }
  EXPECT_TRUE(split) << "no case split a turn";
}

// A summarizer that does not read later messages (an LLM prompt leaves them
// out) is not handed the kept ones: they are not parsed for it. The turn
// prefix still follows the history, parsed for its own summary anyway.
TEST(SummaryStrategy, KeptMessagesGoOnlyToASummarizerThatReadsThem) {
  auto session = Load(20, 9000);  // splits a turn
  LaterRecorder sum(/*reads_later=*/false);
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("summary");
  auto c = ComputeCompaction(*session, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->result.split_turn);
  EXPECT_EQ(sum.history_later, c->result.turn_prefix_messages);
  EXPECT_EQ(sum.prefix_later, 0u);
}

TEST(SummaryStrategy, ContextFullIsTheSameStrategy) {
  auto session = Load(20, 2000);
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.settings.strategy = "context-full";  // no options.strategy: the settings name it
  auto c = ComputeCompaction(*session, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->result.strategy, "summary");
  EXPECT_EQ(nlohmann::json::parse(c->result.entry_json)["method"], "summary");
}

TEST(SummaryStrategy, OnlyIfNeededSkipsBelowTheThreshold) {
  auto session = Load(20, 2000);
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("summary");
  o.only_if_needed = true;
  o.settings.context_window = 1000000;
  auto c = ComputeCompaction(*session, o);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->result.compacted);
  EXPECT_EQ(c->result.skipped_reason.rfind("below threshold: ", 0), 0u) << c->result.skipped_reason;
  EXPECT_EQ(sum.calls, 0);
  o.settings.context_window = 30000;
  auto fired = ComputeCompaction(*session, o);
  ASSERT_TRUE(fired.ok());
  EXPECT_TRUE(fired->result.compacted);
}

TEST(SummaryStrategy, ABeforeCompactHookCanSupplyTheSummary) {
  auto session = Load(20, 2000);
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  CompactionHooks hooks;
  std::string seen_strategy;
  hooks.OnBeforeCompact([&](const BeforeCompactEvent& e) {
    seen_strategy = std::string(e.strategy);
    BeforeCompactResult b;
    b.compaction = SuppliedCompaction{"supplied", std::nullopt, 123.0, "", ""};
    return b;
  });
  o.hooks = &hooks;
  auto c = ComputeCompaction(*session, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(seen_strategy, "summary");
  EXPECT_EQ(sum.calls, 0);
  EXPECT_TRUE(c->result.from_hook);
  EXPECT_EQ(c->result.summary, "supplied");
  EXPECT_EQ(c->result.tokens_before, 123.0);
  auto entry = nlohmann::json::parse(c->result.entry_json);
  EXPECT_EQ(entry["fromHook"], true);
  EXPECT_FALSE(entry.contains("details"));  // the hook gave none
}

}  // namespace
}  // namespace compactor
