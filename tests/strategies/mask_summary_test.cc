#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/entries.h"
#include "compactor/estimate.h"
#include "compactor/strategy.h"
#include "compactor/writer.h"
#include "support/compaction_fixtures.h"
#include "support/oracle.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing::MakeSession;
using testing::Options;
using testing::RecordingSummarizer;

bool IsPlaceholder(const nlohmann::json& m) {
  return m["role"] == "toolResult" && m["content"][0]["text"].is_string() &&
         m["content"][0]["text"].get<std::string>().rfind("[Masked output of edit(", 0) == 0;
}

std::vector<nlohmann::json> Messages(const SessionContext& ctx) {
  std::vector<nlohmann::json> out;
  for (const ContextMessage& m : ctx.messages) out.push_back(nlohmann::json::parse(m.json()));
  return out;
}

Result<SessionContext> Expanded(const Session& s) {
  ContextOptions co;
  co.expander = StrategyExpander();
  return BuildSessionContext(s, co);
}

// Every tool result of the view follows the assistant message that called it.
void ExpectPairsKept(const std::vector<nlohmann::json>& messages) {
  std::set<std::string> calls;
  for (const nlohmann::json& m : messages) {
    if (m["role"] == "assistant" && m["content"].is_array()) {
      for (const auto& b : m["content"])
        if (b["type"] == "toolCall") calls.insert(b["id"].get<std::string>());
    }
    if (m["role"] == "toolResult") {
      EXPECT_TRUE(calls.count(m["toolCallId"].get<std::string>()))
          << "result without its call: " << m["toolCallId"];
    }
  }
}

// Under the threshold (or with no known window) nothing is summarized: one
// entry, Compactor's view is every message with the old outputs masked, pi's
// view the whole unmasked history behind a one-line note.
TEST(MaskSummaryStrategy, MasksWithoutASummaryWhenMaskingIsEnough) {
  auto session = Session::FromString(MakeSession(20, 2000), "s.jsonl");
  ASSERT_TRUE(session.ok());
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("mask-summary");
  o.settings.context_window = 200000;
  auto c = ComputeCompaction(**session, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const CompactionResult& r = c->result;
  ASSERT_TRUE(r.compacted) << r.skipped_reason;
  EXPECT_EQ(r.output, CompactionOutput::kAppendEntry);
  EXPECT_EQ(r.masked_outputs, 10u);
  EXPECT_EQ(r.messages_summarized, 0u);
  EXPECT_EQ(sum.calls, 0);
  EXPECT_TRUE(r.summary.empty());
  auto entry = nlohmann::json::parse(r.entry_json);
  EXPECT_EQ(entry["type"], "compaction");
  EXPECT_EQ(entry["method"], "mask-summary");
  EXPECT_EQ(entry["parentId"], "e80");
  EXPECT_EQ(entry["firstKeptEntryId"], "e1");
  EXPECT_EQ(entry["details"]["summarized"], false);
  EXPECT_EQ(entry["details"]["masked"].size(), 10u);

  auto after = SessionAfterCompaction(**session, *c);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)->size(), (*session)->size() + 1);
  auto ours = Expanded(**after);
  ASSERT_TRUE(ours.ok());
  std::vector<nlohmann::json> view = Messages(*ours);
  ASSERT_EQ(view.size(), 80u);
  size_t masked = 0;
  for (size_t i = 0; i < view.size(); ++i) {
    if (!IsPlaceholder(view[i])) continue;
    ++masked;
    EXPECT_LT(i, 40u) << "only the 10 oldest results are masked";
  }
  EXPECT_EQ(masked, 10u);
  EXPECT_EQ(view[78]["content"][0]["text"], std::string(2000, 'x'));
  EXPECT_EQ(ours->messages.size(), 80u);
  // Σ estimate of the view is what the entry recorded.
  EXPECT_EQ(entry["tokensAfter"].get<int64_t>(),
            EstimateContextTokens(ours->messages).heuristic_sum);
  ExpectPairsKept(view);

  auto pi = BuildSessionContext(**after);
  ASSERT_TRUE(pi.ok());
  std::vector<nlohmann::json> pv = Messages(*pi);
  ASSERT_EQ(pv.size(), 81u);
  EXPECT_EQ(pv[0]["role"], "compactionSummary");
  for (const nlohmann::json& m : pv) EXPECT_FALSE(IsPlaceholder(m));
}

// Over the threshold after masking: the oldest part is summarized (cut by
// the masked sizes, the summarizer reading the original outputs), the rest
// kept with its old outputs masked.
TEST(MaskSummaryStrategy, SummarizesWhatMaskingLeavesOverTheThreshold) {
  auto session = Session::FromString(MakeSession(20, 2000), "s.jsonl");
  ASSERT_TRUE(session.ok());
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("mask-summary");
  // The newest 2 outputs kept: ~1,700 tokens after masking (18 masked turns
  // of ~38, 2 of ~513), over the threshold of 2000 - 800.
  o.mask.keep_recent_outputs = 2;
  o.settings.keep_recent_tokens = 1200;
  o.settings.context_window = 2000;
  o.settings.reserve_tokens = 800;
  auto c = ComputeCompaction(**session, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const CompactionResult& r = c->result;
  ASSERT_TRUE(r.compacted) << r.skipped_reason;
  EXPECT_GE(sum.calls, 1);  // two when the cut splits a turn
  EXPECT_GT(r.messages_summarized, 0u);
  EXPECT_FALSE(r.summary.empty());
  EXPECT_GT(r.masked_outputs, 0u);
  auto entry = nlohmann::json::parse(r.entry_json);
  EXPECT_EQ(entry["details"]["summarized"], true);
  EXPECT_EQ(entry["summary"], r.summary);
  const std::string first_kept = entry["firstKeptEntryId"];
  EXPECT_NE(first_kept, "e1");

  // The summary strategy with the same keep budget cuts later: masking lets
  // more of the history stay.
  CompactOptions so = o;
  so.strategy = FindStrategy("summary");
  auto sc = ComputeCompaction(**session, so);
  ASSERT_TRUE(sc.ok() && sc->result.compacted);
  EXPECT_LT(r.messages_summarized, sc->result.messages_summarized);

  auto after = SessionAfterCompaction(**session, *c);
  ASSERT_TRUE(after.ok());
  auto ours = Expanded(**after);
  ASSERT_TRUE(ours.ok());
  std::vector<nlohmann::json> view = Messages(*ours);
  ASSERT_FALSE(view.empty());
  EXPECT_EQ(view[0]["role"], "compactionSummary");
  EXPECT_EQ(view[0]["summary"], r.summary);
  ExpectPairsKept(view);
  size_t masked = 0;
  for (const nlohmann::json& m : view) masked += IsPlaceholder(m) ? 1 : 0;
  EXPECT_GT(masked, 0u);
  EXPECT_EQ(entry["tokensAfter"].get<int64_t>(),
            EstimateContextTokens(ours->messages).heuristic_sum);

  // pi: the same summary and the same kept entries, unmasked.
  auto pi = BuildSessionContext(**after);
  ASSERT_TRUE(pi.ok());
  std::vector<nlohmann::json> pv = Messages(*pi);
  ASSERT_EQ(pv.size(), view.size());
  EXPECT_EQ(pv[0], view[0]);
  for (const nlohmann::json& m : pv) EXPECT_FALSE(IsPlaceholder(m));
  ExpectPairsKept(pv);
}

// The leaf is the entry itself: a second run does nothing; after more turns
// a second entry keeps the first one's placeholders and adds its own.
TEST(MaskSummaryStrategy, IsIdempotentAndChains) {
  testing::TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(20, 2000));
  const std::string original = *Env::Default()->ReadFile(path);
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("mask-summary");
  o.settings.context_window = 200000;
  auto first = CompactFile(path, o);
  ASSERT_TRUE(first.ok() && first->compacted);
  const std::string written = *Env::Default()->ReadFile(path);
  EXPECT_EQ(written.substr(0, original.size()), original) << "append-only";
  auto again = CompactFile(path, o);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->compacted);
  EXPECT_EQ(again->skipped_reason, "already compacted");
  EXPECT_EQ(*Env::Default()->ReadFile(path), written);

  // Five more turns after the entry.
  std::vector<std::string> lines;
  std::string parent = first->entry_id;
  for (int t = 0; t < 5; ++t) {
    const std::string n = std::to_string(t);
    std::vector<std::pair<std::string, std::string>> msgs = {
        {"u" + n, R"({"role":"user","content":"more )" + n + R"(","timestamp":5})"},
        {"a" + n,
         R"({"role":"assistant","content":[{"type":"toolCall","id":"k)" + n +
             R"(","name":"edit","arguments":{"path":"g)" + n +
             R"(.ts"}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":6})"},
        {"r" + n, R"({"role":"toolResult","toolCallId":"k)" + n +
                      R"(","toolName":"edit","content":[{"type":"text","text":")" +
                      std::string(2000, 'y') + R"("}],"isError":false,"timestamp":7})"}};
    for (auto& [id, msg] : msgs) {
      lines.push_back(MakeMessageEntry({id, parent, "2026-01-01T00:00:09.000Z"}, msg));
      parent = id;
    }
  }
  ASSERT_TRUE(AppendLines(path, lines).ok());
  auto second = CompactFile(path, o);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_TRUE(second->compacted) << second->skipped_reason;
  EXPECT_EQ(second->masked_outputs, 15u);  // 25 results, the newest 10 kept
  auto s = Session::Open(path);
  ASSERT_TRUE(s.ok());
  auto ours = Expanded(**s);
  ASSERT_TRUE(ours.ok());
  std::vector<nlohmann::json> view = Messages(*ours);
  EXPECT_EQ(view.size(), 80u + 15u);
  size_t masked = 0;
  for (const nlohmann::json& m : view) masked += IsPlaceholder(m) ? 1 : 0;
  EXPECT_EQ(masked, 15u);
  ExpectPairsKept(view);
}

// pi 0.73.1 loads the file and builds the context Compactor says it builds
// (its own view: `compactor context` without --expand).
TEST(MaskSummaryOracle, PiLoadsTheEntry) {
  COMPACTOR_REQUIRE_ORACLE();
  testing::TempDir d;
  RecordingSummarizer sum;
  for (int64_t window : {200000, 6000}) {
    std::string path = d.Write("w" + std::to_string(window) + ".jsonl", MakeSession(20, 2000));
    CompactOptions o = Options(&sum);
    o.strategy = FindStrategy("mask-summary");
    o.settings.context_window = window;
    o.settings.reserve_tokens = 2000;
    auto r = CompactFile(path, o);
    ASSERT_TRUE(r.ok() && r->compacted);
    testing::ExpectPiBuildsOurContextAfterATurn(path, r->entry_id,
                                                "window " + std::to_string(window));
  }
}

}  // namespace
}  // namespace compactor
