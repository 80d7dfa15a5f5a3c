// PrepareCompaction over in-memory sessions: pi 0.73.1 semantics, the three
// documented deviations (docs/compatibility.md) and the other keep policies.
#include "compactor/prepare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "prepare/session_builder.h"

namespace compactor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_session::SessionBuilder;

std::unique_ptr<Session> Load(const SessionBuilder& b) {
  auto s = Session::FromString(b.Jsonl(), "test.jsonl");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

PrepareResult Prepare(const Session& s, int64_t keep, bool pi_quirks = false,
                      KeepPolicy policy = KeepPolicy::kRecentTokens) {
  PrepareOptions o;
  o.settings.keep_recent_tokens = keep;
  o.settings.keep_policy = policy;
  o.pi_quirks = pi_quirks;
  auto r = PrepareCompaction(s, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : PrepareResult{};
}

std::vector<std::string> Ids(const Session& s, const std::vector<ContextMessage>& ms) {
  std::vector<std::string> out;
  for (const auto& m : ms) out.emplace_back(s.entry(m.entry_index).id);
  return out;
}

TEST(PrepareCompactionTest, EmptySessionHasNothingToPrepare) {
  SessionBuilder b;
  auto s = Load(b);
  PrepareResult r = Prepare(*s, 20000);
  EXPECT_FALSE(r.preparation);
  EXPECT_EQ(r.skip, PrepareSkip::kEmptySession);
}

TEST(PrepareCompactionTest, LeafIsACompactionMeansAlreadyCompacted) {
  SessionBuilder b;
  std::string u = b.U(4000);
  b.A(4000);
  b.Compaction("S", u);
  auto s = Load(b);
  for (bool quirks : {false, true}) {
    PrepareResult r = Prepare(*s, 10, quirks);
    EXPECT_FALSE(r.preparation);
    EXPECT_EQ(r.skip, PrepareSkip::kAlreadyCompacted);
    EXPECT_EQ(r.skip_reason, "Already compacted");
  }
}

TEST(PrepareCompactionTest, SplitTurnListsAndTokens) {
  SessionBuilder b;
  std::string u1 = b.U(4000);  // 1000
  std::string a1 = b.A(4000);  // 1000
  std::string u2 = b.U(400);   // 100
  std::string a2 = b.A(100, true, "edit", "src/a.ts");
  std::string t2 = b.T(8000);  // 2000
  std::string a3 = b.A(100, true, "read", "src/b.ts");
  std::string t3 = b.T(8000);
  std::string a4 = b.A(100);
  auto s = Load(b);
  PrepareResult r = Prepare(*s, 3000);
  ASSERT_TRUE(r.preparation);
  const CompactionPreparation& p = *r.preparation;
  // 25 + 2000 + 31 = 2056 < 3000; + 2000 (t2) crosses -> cut at a3 (inside u2's turn).
  EXPECT_EQ(p.first_kept_entry_id, a3);
  EXPECT_TRUE(p.is_split_turn);
  EXPECT_EQ(p.turn_start_path_index, 2u);
  EXPECT_THAT(Ids(*s, p.messages_to_summarize), ElementsAre(u1, a1));
  EXPECT_THAT(Ids(*s, p.turn_prefix_messages), ElementsAre(u2, a2, t2));
  EXPECT_EQ(p.messages_to_summarize_tokens, 2000);
  EXPECT_EQ(p.turn_prefix_tokens, 100 + 31 + 2000);
  EXPECT_EQ(p.kept_messages, 3u);
  EXPECT_EQ(p.kept_tokens, 31 + 2000 + 25);
  EXPECT_EQ(p.tokens_before, r.estimate.tokens);
  EXPECT_FALSE(p.previous_summary);
  // File operations come from both summarized ranges.
  EXPECT_TRUE(p.file_lists.read_files.empty());
  EXPECT_THAT(p.file_lists.modified_files, ElementsAre("src/a.ts"));
}

// #2608 regression: the second compaction starts at the first one's kept entry,
// passes its summary, and carries its file lists unless it came from a hook.
TEST(PrepareCompactionTest, SecondCompactionResumesAtThePreviousFirstKeptEntry) {
  for (bool from_hook : {false, true}) {
    SessionBuilder b;
    b.U(4000, 'x');
    b.A(400);
    std::string q2 = b.U(4000, 'y');
    std::string r2 = b.A(400, true, "write", "new.ts");
    b.T(40);
    std::string r2b = b.A(400);
    std::string q3 = b.U(400, 'z');
    b.A(400);
    b.Compaction("SUMMARY-1", q2,
                 R"({"readFiles":["old-read.ts","new.ts"],"modifiedFiles":["m.ts"]})", from_hook);
    std::string q4 = b.U(4000);
    std::string r4 = b.A(4000);
    auto s = Load(b);
    // r4 alone (1000 tokens) crosses 900: cut at r4, inside q4's turn.
    PrepareResult r = Prepare(*s, 900);
    ASSERT_TRUE(r.preparation) << r.skip_reason;
    const CompactionPreparation& p = *r.preparation;
    EXPECT_EQ(p.boundary_start_path_index, 2u);
    ASSERT_TRUE(p.previous_summary);
    EXPECT_EQ(*p.previous_summary, "SUMMARY-1");
    EXPECT_EQ(p.first_kept_entry_id, r4);
    EXPECT_TRUE(p.is_split_turn);
    // Summarized: from q2 (not from after the compaction entry), compaction skipped.
    ASSERT_FALSE(p.messages_to_summarize.empty());
    EXPECT_EQ(s->entry(p.messages_to_summarize.front().entry_index).id, q2);
    EXPECT_EQ(p.messages_to_summarize.size(), 6u);  // q2 r2 t r2b q3 a3
    EXPECT_THAT(Ids(*s, p.turn_prefix_messages), ElementsAre(q4));
    if (from_hook) {
      EXPECT_TRUE(p.file_lists.read_files.empty());
      EXPECT_THAT(p.file_lists.modified_files, ElementsAre("new.ts"));
    } else {
      EXPECT_THAT(p.file_lists.read_files, ElementsAre("old-read.ts"));  // new.ts was written
      EXPECT_THAT(p.file_lists.modified_files, ElementsAre("m.ts", "new.ts"));
    }
  }
}

// Deviation 1 (pi quirk Q3/Q6): nothing to summarize -> no preparation.
TEST(PrepareCompactionTest, DeviationNothingToSummarizeYieldsNoPreparation) {
  SessionBuilder b;
  b.U(40);
  b.A(40);
  b.U(40);
  b.A(40);
  auto s = Load(b);
  PrepareResult ours = Prepare(*s, 20000);
  EXPECT_FALSE(ours.preparation);
  EXPECT_EQ(ours.skip, PrepareSkip::kNothingToCompact);
  EXPECT_THAT(ours.skip_reason, HasSubstr("Nothing to compact"));
  PrepareResult pi = Prepare(*s, 20000, /*pi_quirks=*/true);
  ASSERT_TRUE(pi.preparation);
  EXPECT_TRUE(pi.preparation->messages_to_summarize.empty());
  EXPECT_TRUE(pi.preparation->turn_prefix_messages.empty());
  EXPECT_EQ(pi.preparation->first_kept_path_index, 0u);
}

// Deviation 2 (pi quirk Q1): quirks.mjs case "setting-entry-before-user", keep 1300.
TEST(PrepareCompactionTest, DeviationSettingEntryBeforeKeptUserIsNotASplitTurn) {
  SessionBuilder b;
  b.U(400);
  b.A(400);
  b.U(400);
  b.A(400, true);
  b.T(4000);
  b.A(400);
  std::string setting = b.Setting();
  b.U(400);
  b.A(400, true);
  b.T(4000);
  b.A(400);
  auto s = Load(b);
  PrepareResult pi = Prepare(*s, 1300, /*pi_quirks=*/true);
  ASSERT_TRUE(pi.preparation);
  EXPECT_EQ(pi.preparation->first_kept_entry_id, setting);
  EXPECT_TRUE(pi.preparation->is_split_turn);
  EXPECT_EQ(pi.preparation->messages_to_summarize.size(), 2u);  // quirks.mjs: 2
  EXPECT_EQ(pi.preparation->turn_prefix_messages.size(), 4u);   // quirks.mjs: 4
  PrepareResult ours = Prepare(*s, 1300);
  ASSERT_TRUE(ours.preparation);
  EXPECT_EQ(ours.preparation->first_kept_entry_id, setting);  // same cut
  EXPECT_FALSE(ours.preparation->is_split_turn);
  EXPECT_EQ(ours.preparation->messages_to_summarize.size(), 6u);
  EXPECT_TRUE(ours.preparation->turn_prefix_messages.empty());
}

// Deviation 3 (pi quirk Q7): quirks.mjs case "huge trailing toolResult".
TEST(PrepareCompactionTest, DeviationHugeLastToolResultStillSummarizesTheRest) {
  SessionBuilder b;
  b.U(4000);
  b.A(4000);
  b.U(4000);
  b.A(4000);
  std::string u = b.U(400);
  std::string call = b.A(100, true);
  b.T(200000);
  auto s = Load(b);
  PrepareResult pi = Prepare(*s, 20000, /*pi_quirks=*/true);
  ASSERT_TRUE(pi.preparation);  // pi: an empty preparation that keeps everything
  EXPECT_EQ(pi.preparation->first_kept_path_index, 0u);
  EXPECT_TRUE(pi.preparation->messages_to_summarize.empty());
  PrepareResult ours = Prepare(*s, 20000);
  ASSERT_TRUE(ours.preparation);
  EXPECT_EQ(ours.preparation->first_kept_entry_id, call);
  EXPECT_TRUE(ours.preparation->is_split_turn);
  EXPECT_EQ(ours.preparation->messages_to_summarize.size(), 4u);
  EXPECT_THAT(Ids(*s, ours.preparation->turn_prefix_messages), ElementsAre(u));
}

// pi's preparation maps an empty branch summary to a message although the
// context skips it; the counts must follow pi.
TEST(PrepareCompactionTest, EmptyBranchSummaryCountsAsAMessageToSummarize) {
  SessionBuilder b;
  std::string u = b.U(4000);
  b.A(4000);
  std::string bs = b.BranchSummary("", u);
  b.U(4000);
  std::string last = b.A(4000);
  auto s = Load(b);
  PrepareResult r = Prepare(*s, 1000);
  ASSERT_TRUE(r.preparation);
  EXPECT_EQ(r.context.messages.size(), 4u);
  EXPECT_EQ(r.preparation->first_kept_entry_id, last);
  // u, a, (empty) branch summary; then the split-turn prefix holds the last user.
  EXPECT_EQ(r.preparation->messages_to_summarize.size(), 3u);
  EXPECT_EQ(r.preparation->messages_to_summarize[2].role, Role::kBranchSummary);
  EXPECT_THAT(std::string(r.preparation->messages_to_summarize[2].json()),
              HasSubstr("\"summary\":\"\""));
}

TEST(PrepareCompactionTest, LeafOptionAndUnknownLeaf) {
  SessionBuilder b;
  b.U(4000);
  std::string a = b.A(4000);
  b.U(4000);
  b.A(4000);
  auto s = Load(b);
  PrepareOptions o;
  o.settings.keep_recent_tokens = 500;
  o.leaf_id = a;
  auto r = PrepareCompaction(*s, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->context.path.size(), 2u);
  ASSERT_TRUE(r->preparation);
  EXPECT_EQ(r->preparation->first_kept_entry_id, a);
  o.leaf_id = "nope";
  auto bad = PrepareCompaction(*s, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(PrepareCompactionTest, InvalidSettingsAreRejected) {
  SessionBuilder b;
  b.U(10);
  auto s = Load(b);
  PrepareOptions o;
  o.settings.keep_turns = 0;
  EXPECT_EQ(PrepareCompaction(*s, o).status().code(), StatusCode::kInvalidArgument);
  // Preparation does not read the strategy: an unknown name is refused where
  // it is resolved (Engine.UnknownStrategyIsRefusedBeforeAnyWork).
  o.settings.keep_turns = 1;
  o.settings.strategy = "everything";
  EXPECT_TRUE(PrepareCompaction(*s, o).ok());
  // An unknown keep policy fails where the name is parsed.
  EXPECT_EQ(ParseKeepPolicy("everything").status().code(), StatusCode::kInvalidArgument);
}

SessionBuilder ThreeTurns(std::vector<std::string>* ids) {
  SessionBuilder b;
  for (int t = 0; t < 3; ++t) {
    ids->push_back(b.U(400));
    ids->push_back(b.A(400, true));
    ids->push_back(b.T(400));
    ids->push_back(b.A(338));
  }
  return b;
}

TEST(PrepareCompactionTest, KeepLastTurnsPolicy) {
  std::vector<std::string> ids;
  auto s = Load(ThreeTurns(&ids));
  PrepareOptions o;
  o.settings.keep_policy = KeepPolicy::kLastTurns;
  o.settings.keep_turns = 2;
  auto r = PrepareCompaction(*s, o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->preparation);
  EXPECT_EQ(r->preparation->first_kept_entry_id, ids[4]);
  EXPECT_FALSE(r->preparation->is_split_turn);
  EXPECT_EQ(r->preparation->messages_to_summarize.size(), 4u);
  EXPECT_EQ(r->preparation->keep_policy, KeepPolicy::kLastTurns);
  o.settings.keep_turns = 3;  // everything is kept
  r = PrepareCompaction(*s, o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->preparation);
  EXPECT_EQ(r->skip, PrepareSkip::kNothingToCompact);
}

TEST(PrepareCompactionTest, KeepLastMessagesPolicyNeverStartsWithAToolResult) {
  std::vector<std::string> ids;
  auto s = Load(ThreeTurns(&ids));
  PrepareOptions o;
  o.settings.keep_policy = KeepPolicy::kLastMessages;
  o.settings.keep_messages = 2;  // would start at the last tool result
  auto r = PrepareCompaction(*s, o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->preparation);
  EXPECT_EQ(r->preparation->first_kept_entry_id, ids[9]);  // its tool call
  EXPECT_TRUE(r->preparation->is_split_turn);
  EXPECT_EQ(r->preparation->messages_to_summarize.size(), 8u);
  EXPECT_THAT(Ids(*s, r->preparation->turn_prefix_messages), ElementsAre(ids[8]));
}

TEST(PrepareCompactionTest, OpencodePolicyUsesTheWindowForItsBudget) {
  std::vector<std::string> ids;
  auto s = Load(ThreeTurns(&ids));  // turns of 390 tokens
  PrepareOptions o;
  o.settings.keep_policy = KeepPolicy::kOpencode;
  o.settings.context_window = 0;  // budget 2000: two turns fit
  auto r = PrepareCompaction(*s, o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->preparation);
  EXPECT_EQ(r->preparation->first_kept_entry_id, ids[4]);
  EXPECT_FALSE(r->preparation->is_split_turn);
}

}  // namespace
}  // namespace compactor
