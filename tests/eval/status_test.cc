// Status correctness (docs/quality.md, "Status"): what the summary claims
// about each fact, not only whether it mentions it.
#include <gtest/gtest.h>

#include "compactor/eval.h"

namespace compactor {
namespace {

RenderedBlock Summary(std::string text) {
  RenderedBlock b;
  b.summary = true;
  b.text = std::move(text);
  return b;
}

RenderedBlock Verbatim(std::string text) {
  RenderedBlock b;
  b.text = std::move(text);
  return b;
}

Fact MakeFact(std::string id, FactKind kind, std::string text) {
  Fact f;
  f.id = std::move(id);
  f.kind = kind;
  f.text = std::move(text);
  return f;
}

Fact Error(bool fixed) {
  Fact f = MakeFact("e1", FactKind::kError, "TypeError: limit is undefined");
  f.fixed = fixed;
  return f;
}

std::string ErrorOf(const std::vector<Fact>& facts, const std::vector<RenderedBlock>& blocks,
                    size_t i = 0) {
  return ScoreFacts(facts, blocks).at(i).status_error;
}

TEST(StatusTest, OpenErrorShownAsResolvedIsFalseResolved) {
  const Fact open = Error(false);
  EXPECT_EQ(ErrorOf({open}, {Summary("## Done\n- [x] Fixed TypeError: limit is undefined\n")}),
            "false-resolved");
  EXPECT_EQ(ErrorOf({open}, {Summary("- Error in `pnpm test`: TypeError: limit is undefined -> "
                                     "resolved (later `pnpm test -t cap` exit 0)")}),
            "false-resolved");
  EXPECT_EQ(ErrorOf({open}, {Summary("The TypeError: limit is undefined is fixed now.")}),
            "false-resolved");
  // Open, or stated without a claim: right.
  EXPECT_EQ(ErrorOf({open}, {Summary("## Blocked\n- TypeError: limit is undefined\n")}), "");
  EXPECT_EQ(ErrorOf({open}, {Summary("- TypeError: limit is undefined (not fixed)")}), "");
  EXPECT_EQ(ErrorOf({open}, {Summary("## Critical Context\n- TypeError: limit is undefined")}), "");
  // The verbatim tail is history: it claims nothing.
  EXPECT_EQ(ErrorOf({open}, {Verbatim("## Done\n- [x] Fixed TypeError: limit is undefined")}), "");
}

TEST(StatusTest, FixedErrorListedAsTheThingToFix) {
  const Fact fixed = Error(true);
  EXPECT_EQ(ErrorOf({fixed}, {Summary("## Next Steps\n1. Fix TypeError: limit is undefined\n")}),
            "fixed-as-open");
  EXPECT_EQ(ErrorOf({fixed}, {Summary("## Blocked\n- TypeError: limit is undefined\n")}),
            "fixed-as-open");
  EXPECT_EQ(ErrorOf({fixed}, {Summary("## Done\n- Fixed TypeError: limit is undefined\n")}), "");
  FactOutcome o =
      ScoreFacts({fixed}, {Summary("## Done\n- Fixed TypeError: limit is undefined")})[0];
  EXPECT_TRUE(o.retained);
  EXPECT_TRUE(o.status_right);
}

TEST(StatusTest, SupersededValueInTheSummaryIsPresentedAsCurrent) {
  Fact old_value = MakeFact("c1", FactKind::kConstraint, "Node 18");
  old_value.superseded_by = "c2";
  Fact new_value = MakeFact("c2", FactKind::kConstraint, "Node 20");
  const std::vector<Fact> facts = {old_value, new_value};
  // Listed as a constraint while the revision sits elsewhere (later in the
  // summary or in the kept tail): presented as current.
  EXPECT_EQ(ErrorOf(facts, {Summary("## Constraints\n- Must run on Node 18\n## Next Steps\n- "
                                    "Test on Node 20 (the user moved to it)")}),
            "stale-as-current");
  EXPECT_EQ(ErrorOf(facts, {Summary("## Constraints\n- Must run on Node 18"),
                            Verbatim("Update: we are on Node 20 now.")}),
            "stale-as-current");
  // Marked as replaced, on its own item: right.
  EXPECT_EQ(ErrorOf(facts, {Summary("## Constraints\n- Node 18 -> Node 20 (revised)")}), "");
  EXPECT_EQ(ErrorOf(facts, {Summary("- Must run on Node 20 instead of Node 18")}), "");
  EXPECT_EQ(ErrorOf(facts, {Summary("- ~~Node 18~~ Node 20")}), "");
  // Direction matters: "X instead of Y" replaces Y, not X.
  EXPECT_EQ(ErrorOf(facts, {Summary("- Run on Node 18 instead of Node 20")}), "stale-as-current");
  // History in the kept tail is no claim.
  EXPECT_EQ(ErrorOf(facts, {Verbatim("It must run on Node 18."), Verbatim("Now Node 20.")}), "");
}

TEST(StatusTest, ABareInsteadAdoptsWhatItsClauseNames) {
  Fact old_value = MakeFact("c1", FactKind::kConstraint, "batches of 500");
  old_value.superseded_by = "c2";
  Fact new_value = MakeFact("c2", FactKind::kConstraint, "batches of 100");
  const std::vector<Fact> facts = {old_value, new_value};
  // "use X instead" presents X as what to do now.
  EXPECT_EQ(ErrorOf(facts, {Summary("The DBA says: use batches of 500 instead.")}),
            "stale-as-current");
  EXPECT_EQ(ErrorOf(facts, {Summary("- Insert in batches of 500 instead")}), "stale-as-current");
  // The clause before "...; use Y instead" names what Y replaces, though the
  // scorer reads each clause as an item.
  EXPECT_EQ(ErrorOf(facts, {Summary("Correction: the DBA says batches of 500 lock the stock "
                                    "table too long; use batches of 100 instead.")}),
            "");
  EXPECT_EQ(ErrorOf(facts, {Summary("- Batches of 500 locked the table, so batches of 100 "
                                    "instead")}),
            "");
  // Only the clause right before it: an unrelated clause in between breaks it.
  EXPECT_EQ(ErrorOf(facts, {Summary("Keep batches of 500; the index is fine; add a retry "
                                    "instead.")}),
            "stale-as-current");
}

TEST(StatusTest, GoalsAndConstraintsNeverUnderDone) {
  Fact c = MakeFact("c1", FactKind::kConstraint, "never modify src/generated/");
  EXPECT_EQ(ErrorOf({c}, {Summary("### Done\n- [x] One more thing: Never modify src/generated/")}),
            "under-done");
  EXPECT_EQ(ErrorOf({c}, {Summary("- [x] never modify src/generated/")}), "under-done");
  EXPECT_EQ(ErrorOf({c}, {Summary("## Constraints\n- Never modify src/generated/")}), "");
  Fact g = MakeFact("g1", FactKind::kGoal, "per-client rate limiting");
  EXPECT_EQ(ErrorOf({g}, {Summary("## Completed\n- per-client rate limiting")}), "under-done");
  EXPECT_EQ(ErrorOf({g}, {Summary("## Goal\nAdd per-client rate limiting.")}), "");
}

TEST(StatusTest, DoneStepsAndRejectedOptions) {
  Fact step = MakeFact("n1", FactKind::kNextStep, "run the alembic migration");
  step.status = "done";
  EXPECT_EQ(ErrorOf({step}, {Summary("## Next Steps\n- Run the alembic migration")}),
            "done-as-pending");
  EXPECT_EQ(ErrorOf({step}, {Summary("## Done\n- Ran: run the alembic migration (done)")}), "");
  FactOutcome o = ScoreFacts({step}, {Summary("nothing")})[0];
  EXPECT_FALSE(o.retained);  // not expected to be retained
  EXPECT_TRUE(o.status_right);

  Fact option = MakeFact("d1", FactKind::kDecision, "a Redis sidecar");
  option.status = "rejected";
  EXPECT_EQ(ErrorOf({option}, {Summary("## Key Decisions\n- **Use a Redis sidecar**: shared")}),
            "rejected-as-decided");
  EXPECT_EQ(ErrorOf({option}, {Summary("- Rejected a Redis sidecar (edge workers)")}), "");
  EXPECT_EQ(ErrorOf({option}, {Summary("- In-memory store rather than a Redis sidecar")}), "");
}

TEST(StatusTest, AggregatesAndContinuation) {
  Fact goal = MakeFact("g1", FactKind::kGoal, "per-client rate limiting");
  Fact open = Error(false);
  Fact file = MakeFact("m1", FactKind::kFileModified, "src/limiter.ts");
  const std::vector<Fact> facts = {goal, open, file};
  const std::vector<RenderedBlock> good = {
      Summary("## Goal\nper-client rate limiting\n## Blocked\n- TypeError: limit is undefined\n"
              "## Files\n- src/limiter.ts")};
  const std::vector<RenderedBlock> bad = {
      Summary("## Done\n- [x] per-client rate limiting\n- [x] Fixed TypeError: limit is "
              "undefined\n- src/limiter.ts")};
  auto good_out = ScoreFacts(facts, good);
  auto bad_out = ScoreFacts(facts, bad);
  StatusScore s = ScoreStatus(facts, bad_out);
  EXPECT_EQ(s.open_errors, 1);
  EXPECT_EQ(s.false_resolved, 1);
  EXPECT_EQ(s.standing, 1);
  EXPECT_EQ(s.under_done, 1);
  EXPECT_EQ(s.right, 1);  // the file
  EXPECT_DOUBLE_EQ(ContinuationScore(facts, good_out), 5.0);
  // Goal wrong, open work wrong, files right: 5 * (0 + 0 + 1) / 3.
  EXPECT_NEAR(ContinuationScore(facts, bad_out), 5.0 / 3, 1e-9);
}

TEST(ArtifactTest, PathsCommandsAndNumbersOfTheReplacedPart) {
  RenderedBlock call;
  call.exchange = true;
  call.text =
      "[tool call] bash\ncommand: pnpm test -- --reporter dot\n[tool result]\n142 passed, 3 "
      "failed in 12.4s\np99 812ms on src/limiter.ts:41:7\n";
  RenderedBlock look;
  look.exchange = true;
  look.text = "[tool call] bash\ncommand: grep -rn limit src\n[tool result]\nsrc/a.ts:3: limit\n";
  RenderedBlock after;
  after.summary = true;
  after.text = "- `pnpm test -- --reporter dot`: 142 passed; latency 812 ms\n";
  ArtifactScore a = MeasureArtifacts({call, look}, {after});
  EXPECT_EQ(a.commands, 1);  // grep is exploration
  EXPECT_EQ(a.commands_kept, 1);
  EXPECT_EQ(a.paths, 2);  // src/limiter.ts, src/a.ts
  EXPECT_EQ(a.paths_kept, 0);
  EXPECT_EQ(a.numbers, 4);  // 142, 3, 12.4, 812 (41 and 7 are a position)
  EXPECT_EQ(a.numbers_kept, 2);
}

}  // namespace
}  // namespace compactor
