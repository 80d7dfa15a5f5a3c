// Cut-point selection on in-memory entry views. The quirk cases are the ones
// `tests/oracle/oracle.mjs quirks` runs through pi 0.73.1; the expected pi
// values below are its output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "compactor/prepare.h"

namespace compactor {
namespace {

using ::testing::ElementsAre;

// Token sizes as pi estimates quirks.mjs's messages: ceil(chars / 4); an
// assistant with a read tool call adds "read" + {"path":"x.ts"} = 19 chars.
CutEntry U(int chars) { return {EntryType::kMessage, Role::kUser, (chars + 3) / 4}; }
CutEntry A(int chars, bool tool = false) {
  return {EntryType::kMessage, Role::kAssistant, (chars + (tool ? 19 : 0) + 3) / 4};
}
CutEntry T(int chars) { return {EntryType::kMessage, Role::kToolResult, (chars + 3) / 4}; }
CutEntry Bash(int chars) { return {EntryType::kMessage, Role::kBashExecution, (chars + 3) / 4}; }
CutEntry Setting() { return {EntryType::kThinkingLevelChange, Role::kOther, 0}; }
CutEntry Label() { return {EntryType::kLabel, Role::kOther, 0}; }
CutEntry CustomMsg(int chars) { return {EntryType::kCustomMessage, Role::kOther, (chars + 3) / 4}; }
CutEntry BranchSummary(int chars) {
  return {EntryType::kBranchSummary, Role::kOther, (chars + 3) / 4};
}
CutEntry Compaction() { return {EntryType::kCompaction, Role::kOther, 0}; }

constexpr CutOptions kPi{.pi_quirks = true};

TEST(FindValidCutPointsTest, NeverAToolResultNorMetadata) {
  std::vector<CutEntry> es = {U(4),
                              A(4, true),
                              T(4),
                              A(4),
                              Setting(),
                              Label(),
                              Bash(4),
                              CustomMsg(4),
                              BranchSummary(4),
                              Compaction(),
                              {EntryType::kCustom, Role::kOther, 0},
                              {EntryType::kMessage, Role::kCustom, 1},
                              {EntryType::kMessage, Role::kOther, 1}};
  EXPECT_THAT(FindValidCutPoints(es, 0, es.size()), ElementsAre(0, 1, 3, 6, 7, 8, 11));
  EXPECT_THAT(FindValidCutPoints(es, 2, 7), ElementsAre(3, 6));
}

TEST(FindTurnStartIndexTest, UserBashCustomMessageOrBranchSummary) {
  std::vector<CutEntry> es = {U(4), A(4, true), T(4), A(4), Bash(4), A(4), CustomMsg(4), A(4)};
  EXPECT_EQ(FindTurnStartIndex(es, 3, 0), 0u);
  EXPECT_EQ(FindTurnStartIndex(es, 5, 0), 4u);
  EXPECT_EQ(FindTurnStartIndex(es, 7, 0), 6u);
  EXPECT_EQ(FindTurnStartIndex(es, 3, 1), std::nullopt);
}

TEST(FindCutPointTest, NoCutPointsKeepsFromStart) {
  std::vector<CutEntry> es = {Setting(), T(400), Label()};
  CutPoint c = FindCutPoint(es, 0, es.size(), 10);
  EXPECT_EQ(c.first_kept_index, 0u);
  EXPECT_FALSE(c.is_split_turn);
  EXPECT_EQ(c.turn_start_index, std::nullopt);
}

TEST(FindCutPointTest, EverythingFitsKeepsFromTheFirstCutPoint) {
  std::vector<CutEntry> es = {T(40), U(40), A(40), U(40), A(40)};
  CutPoint c = FindCutPoint(es, 0, es.size(), 20000);
  EXPECT_EQ(c.first_kept_index, 1u);
  EXPECT_FALSE(c.is_split_turn);
}

TEST(FindCutPointTest, CutAtAssistantInsideATurnIsASplitTurn) {
  // Quirks Q4: one user turn with six tool rounds (pi: cut 9, turn start 0).
  std::vector<CutEntry> es = {U(100)};
  for (int i = 0; i < 6; ++i) {
    es.push_back(A(100, true));
    es.push_back(T(8000));
  }
  es.push_back(A(100));
  for (const CutOptions& o : {CutOptions{}, kPi}) {
    CutPoint c = FindCutPoint(es, 0, es.size(), 5000, o);
    EXPECT_EQ(c.first_kept_index, 9u);
    EXPECT_EQ(c.turn_start_index, 0u);
    EXPECT_TRUE(c.is_split_turn);
  }
}

TEST(FindCutPointTest, MetadataBeforeTheCutIsPulledInUntilAMessageOrCompaction) {
  std::vector<CutEntry> es = {U(4000), A(4000), Compaction(), Label(), Setting(), U(4000), A(4000)};
  CutPoint c = FindCutPoint(es, 0, es.size(), 1500);
  EXPECT_EQ(c.first_kept_index, 3u);  // stops after the compaction entry
  EXPECT_FALSE(c.is_split_turn);
}

// pi 0.73.1 quirk Q1: a thinking-level change right before the kept user
// message. pi (quirks.mjs): cut 6, turn start 2, split, 2 summarized + 4 prefix.
// Compactor: same first kept entry, not a split turn.
std::vector<CutEntry> Q1Entries() {
  return {U(400),    A(400), U(400),       A(400, true), T(4000), A(400),
          Setting(), U(400), A(400, true), T(4000),      A(400)};
}

TEST(FindCutPointTest, Q1PiQuirkSettingEntryMakesASplitTurn) {
  auto es = Q1Entries();
  CutPoint c = FindCutPoint(es, 0, es.size(), 1300, kPi);
  EXPECT_EQ(c.first_kept_index, 6u);
  EXPECT_EQ(c.turn_start_index, 2u);
  EXPECT_TRUE(c.is_split_turn);
}

TEST(FindCutPointTest, Q1FixedSettingEntryBeforeKeptUserIsNotASplitTurn) {
  auto es = Q1Entries();
  CutPoint c = FindCutPoint(es, 0, es.size(), 1300);
  EXPECT_EQ(c.first_kept_index, 6u);
  EXPECT_EQ(c.turn_start_index, std::nullopt);
  EXPECT_FALSE(c.is_split_turn);
  // keep=1200 crosses inside the last turn: both agree (pi: cut 8, turn start 7).
  for (const CutOptions& o : {CutOptions{}, kPi}) {
    CutPoint d = FindCutPoint(es, 0, es.size(), 1200, o);
    EXPECT_EQ(d.first_kept_index, 8u);
    EXPECT_EQ(d.turn_start_index, 7u);
    EXPECT_TRUE(d.is_split_turn);
  }
}

// Quirk Q2: the cut is pulled back onto a custom_message; pi reports a split
// turn whose prefix is empty (turn start == cut). Kept as pi does it.
TEST(FindCutPointTest, Q2CustomMessageCutMatchesPi) {
  std::vector<CutEntry> es = {U(400),         A(400, true), T(4000), A(400),
                              CustomMsg(400), A(400, true), T(4000), A(400)};
  for (const CutOptions& o : {CutOptions{}, kPi}) {
    CutPoint c = FindCutPoint(es, 0, es.size(), 1200, o);
    EXPECT_EQ(c.first_kept_index, 4u);
    EXPECT_EQ(c.turn_start_index, 4u);
    EXPECT_TRUE(c.is_split_turn);
  }
}

// Quirk Q5 (kept as pi): custom_message sizes do not count toward the budget.
TEST(FindCutPointTest, Q5CustomMessageSizeIsNotCounted) {
  std::vector<CutEntry> es = {U(400), A(400), CustomMsg(40000), U(40), A(40)};
  CutPoint c = FindCutPoint(es, 0, es.size(), 1000);
  EXPECT_EQ(c.first_kept_index, 0u);
}

// Quirk Q7: the newest message is a tool result larger than the budget.
std::vector<CutEntry> Q7Entries() {
  return {U(4000), A(4000), U(4000), A(4000), U(400), A(100, true), T(200000)};
}

TEST(FindCutPointTest, Q7PiQuirkHugeLastToolResultKeepsEverything) {
  auto es = Q7Entries();
  CutPoint c = FindCutPoint(es, 0, es.size(), 20000, kPi);
  EXPECT_EQ(c.first_kept_index, 0u);
  EXPECT_FALSE(c.is_split_turn);
}

TEST(FindCutPointTest, Q7FixedHugeLastToolResultCutsAtTheLastCutPoint) {
  auto es = Q7Entries();
  CutPoint c = FindCutPoint(es, 0, es.size(), 20000);
  EXPECT_EQ(c.first_kept_index, 5u);  // the assistant whose call produced the result
  EXPECT_EQ(c.turn_start_index, 4u);
  EXPECT_TRUE(c.is_split_turn);
  // With a final assistant after the result both agree (quirks Q7b: cut 7, turn start 4).
  es.push_back(A(100));
  for (const CutOptions& o : {CutOptions{}, kPi}) {
    CutPoint d = FindCutPoint(es, 0, es.size(), 20000, o);
    EXPECT_EQ(d.first_kept_index, 7u);
    EXPECT_EQ(d.turn_start_index, 4u);
  }
}

TEST(FindCutPointTest, RespectsTheBoundaryStart) {
  std::vector<CutEntry> es = {U(4000), A(4000), U(4000), A(4000), U(4000), A(4000)};
  CutPoint c = FindCutPoint(es, 2, es.size(), 100000);
  EXPECT_EQ(c.first_kept_index, 2u);
  c = FindCutPoint(es, 3, es.size(), 100000);
  EXPECT_EQ(c.first_kept_index, 3u);
  EXPECT_FALSE(c.is_split_turn);  // no turn start at or after the boundary
  EXPECT_EQ(c.turn_start_index, std::nullopt);
}

TEST(FindCutPointLastTurnsTest, KeepsTheLastNTurns) {
  std::vector<CutEntry> es = {U(10), A(10, true), T(10),    A(10), Setting(),
                              U(10), A(10),       Bash(10), U(10), A(10)};
  CutPoint c = FindCutPointLastTurns(es, 0, es.size(), 2);
  EXPECT_EQ(c.first_kept_index, 7u);  // bash execution starts a turn
  EXPECT_FALSE(c.is_split_turn);
  c = FindCutPointLastTurns(es, 0, es.size(), 3);
  EXPECT_EQ(c.first_kept_index, 4u);  // the setting before the user message comes along
  EXPECT_FALSE(c.is_split_turn);
  c = FindCutPointLastTurns(es, 0, es.size(), 6);  // fewer turns than asked: keep all
  EXPECT_EQ(c.first_kept_index, 0u);
}

TEST(FindCutPointLastMessagesTest, NeverStartsWithAToolResult) {
  std::vector<CutEntry> es = {U(10), A(10), U(10), A(10, true), T(10), T(10), A(10)};
  // Last 4 messages would start at A(10, true) (index 3): safe.
  CutPoint c = FindCutPointLastMessages(es, 0, es.size(), 4);
  EXPECT_EQ(c.first_kept_index, 3u);
  EXPECT_TRUE(c.is_split_turn);
  EXPECT_EQ(c.turn_start_index, 2u);
  // Last 3 would start at a tool result: moved back to its call.
  c = FindCutPointLastMessages(es, 0, es.size(), 3);
  EXPECT_EQ(c.first_kept_index, 3u);
  // Last 5 start at the user message.
  c = FindCutPointLastMessages(es, 0, es.size(), 5);
  EXPECT_EQ(c.first_kept_index, 2u);
  EXPECT_FALSE(c.is_split_turn);
  c = FindCutPointLastMessages(es, 0, es.size(), 100);
  EXPECT_EQ(c.first_kept_index, 0u);
}

TEST(FindCutPointLastMessagesTest, DoesNotSeparateACallFromItsResultAcrossACustomMessage) {
  // An extension message injected between a tool call and its result.
  std::vector<CutEntry> es = {U(10), A(10, true), CustomMsg(10), T(10), A(10)};
  CutPoint c = FindCutPointLastMessages(es, 0, es.size(), 3);
  EXPECT_EQ(c.first_kept_index, 1u);  // not the custom message at 2
}

TEST(OpencodeTailBudgetTest, ClampedBetween2kAnd8k) {
  EXPECT_EQ(OpencodeTailBudget(0), 2000);
  EXPECT_EQ(OpencodeTailBudget(4000), 2000);
  EXPECT_EQ(OpencodeTailBudget(20000), 5000);
  EXPECT_EQ(OpencodeTailBudget(183616), 8000);
}

TEST(FindCutPointOpencodeTest, LastTwoUserTurnsWithinBudget) {
  // Three user turns of 300 tokens each.
  std::vector<CutEntry> es;
  for (int t = 0; t < 3; ++t) {
    es.push_back(U(400));
    es.push_back(A(400, true));
    es.push_back(T(400));
    es.push_back(A(338));  // 85 tokens -> turn = 100 + 105 + 100 + 85 = 390
  }
  CutPoint c = FindCutPointOpencode(es, 0, es.size(), 2000);
  EXPECT_EQ(c.first_kept_index, 4u);  // two turns (780 tokens) fit
  EXPECT_FALSE(c.is_split_turn);
  c = FindCutPointOpencode(es, 0, es.size(), 500);
  EXPECT_EQ(c.first_kept_index, 8u);  // only the newest fits
  // The newest turn alone is too big: start inside it where the rest fits.
  c = FindCutPointOpencode(es, 0, es.size(), 300);
  EXPECT_EQ(c.first_kept_index, 9u);  // 105 + 100 + 85 = 290
  EXPECT_TRUE(c.is_split_turn);
  EXPECT_EQ(c.turn_start_index, 8u);
  // Even the last message is over budget: its own cut point (never a tool result).
  c = FindCutPointOpencode(es, 0, es.size(), 10);
  EXPECT_EQ(c.first_kept_index, 11u);
}

}  // namespace
}  // namespace compactor
