// The summary structure parser and the status claims built on it
// (docs/quality.md, "Status"): layouts of several summarizers and free prose.
#include <gtest/gtest.h>

#include "compactor/eval.h"

namespace compactor {
namespace {

const SummaryItem* Find(const std::vector<SummaryItem>& items, std::string_view needle) {
  for (const SummaryItem& i : items)
    if (i.text.find(needle) != std::string::npos) return &i;
  return nullptr;
}

TEST(SummaryStructureTest, HeadingsOfSeveralLayouts) {
  EXPECT_EQ(ClassifyHeading("Next Steps"), SummarySection::kNextSteps);
  EXPECT_EQ(ClassifyHeading("What's left"), SummarySection::kNextSteps);
  EXPECT_EQ(ClassifyHeading("Done"), SummarySection::kDone);
  EXPECT_EQ(ClassifyHeading("Completed so far"), SummarySection::kDone);
  EXPECT_EQ(ClassifyHeading("In Progress"), SummarySection::kInProgress);
  EXPECT_EQ(ClassifyHeading("Blocked"), SummarySection::kBlocked);
  EXPECT_EQ(ClassifyHeading("Open issues"), SummarySection::kBlocked);
  EXPECT_EQ(ClassifyHeading("Constraints & Preferences"), SummarySection::kConstraints);
  EXPECT_EQ(ClassifyHeading("Ground rules"), SummarySection::kConstraints);
  EXPECT_EQ(ClassifyHeading("Key Decisions"), SummarySection::kDecisions);
  EXPECT_EQ(ClassifyHeading("Original Request"), SummarySection::kGoal);
  EXPECT_EQ(ClassifyHeading("Critical Context"), SummarySection::kContext);
  EXPECT_EQ(ClassifyHeading("Progress"), SummarySection::kContext);
  EXPECT_EQ(ClassifyHeading("modified-files"), SummarySection::kFiles);
  EXPECT_EQ(ClassifyHeading("Lunch"), SummarySection::kOther);
}

TEST(SummaryStructureTest, MarkdownLayout) {
  auto items = ParseSummaryItems(
      "## Goal\nAdd rate limiting.\n\n## Progress\n### Done\n- [x] Added src/limiter.ts\n"
      "### In Progress\n- [ ] Wire the middleware\n\n## Next Steps\n1. Run pnpm test\n");
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].section, SummarySection::kGoal);
  EXPECT_EQ(items[1].section, SummarySection::kDone);
  EXPECT_TRUE(items[1].checked);
  EXPECT_TRUE(ItemClaimsDone(items[1]));
  EXPECT_EQ(items[2].section, SummarySection::kInProgress);
  EXPECT_TRUE(ItemClaimsOpen(items[2]));
  EXPECT_EQ(items[3].section, SummarySection::kNextSteps);
  EXPECT_TRUE(ItemClaimsOpen(items[3]));
}

TEST(SummaryStructureTest, BoldLabelsPlainLabelsAndTags) {
  auto items = ParseSummaryItems(
      "**Finished:**\n- migrated the importer\nStill to do:\n- backfill the table\n"
      "<modified-files>\nsrc/a.py\n</modified-files>\nThe end.\n");
  EXPECT_EQ(Find(items, "migrated")->section, SummarySection::kDone);
  EXPECT_EQ(Find(items, "backfill")->section, SummarySection::kNextSteps);
  EXPECT_EQ(Find(items, "src/a.py")->section, SummarySection::kFiles);
  EXPECT_EQ(Find(items, "The end")->section, SummarySection::kOther);
}

TEST(SummaryStructureTest, InlineLabelsAndProseSentences) {
  auto items = ParseSummaryItems(
      "I changed src/a.ts and src/b.ts. Still failing: the TypeError in parse(). Next: run the "
      "migration.\n**Decision**: keep the cache per worker\n");
  const SummaryItem* failing = Find(items, "TypeError");
  ASSERT_NE(failing, nullptr);
  EXPECT_TRUE(ItemClaimsOpen(*failing));
  EXPECT_FALSE(ItemClaimsDone(*failing));
  EXPECT_EQ(Find(items, "run the migration")->section, SummarySection::kNextSteps);
  EXPECT_EQ(Find(items, "cache per worker")->section, SummarySection::kDecisions);
  EXPECT_EQ(Find(items, "I changed")->section, SummarySection::kOther);
}

TEST(SummaryStructureTest, NegatedDoneWordsAreOpen) {
  for (const char* text :
       {"- TypeError: x is undefined (not fixed)", "- Error in `pnpm test`: boom -> NOT resolved",
        "- the IntegrityError is still failing", "- [ ] fix the import error",
        "- Fix the TS2345 in src/a.ts"}) {
    auto items = ParseSummaryItems(text);
    ASSERT_EQ(items.size(), 1u) << text;
    EXPECT_TRUE(ItemClaimsOpen(items[0])) << text;
    EXPECT_FALSE(ItemClaimsDone(items[0])) << text;
  }
  for (const char* text : {"- TypeError: x is undefined (fixed)",
                           "- Error in `pnpm test`: boom -> resolved (later pnpm test exit 0)",
                           "The IntegrityError is resolved.", "- \xe2\x9c\x93 import error"}) {
    auto items = ParseSummaryItems(text);
    ASSERT_EQ(items.size(), 1u) << text;
    EXPECT_TRUE(ItemClaimsDone(items[0])) << text;
  }
  // A done cue overrides the section's default: "(done)" under Next Steps.
  auto items = ParseSummaryItems("## Next Steps\n- run the migration (done)\n- deploy\n");
  EXPECT_FALSE(ItemClaimsOpen(items[0]));
  EXPECT_TRUE(ItemClaimsOpen(items[1]));
}

TEST(SummaryStructureTest, NoiseLines) {
  auto items = ParseSummaryItems(
      "## Critical Context\n- \xe2\xa0\x8b Installing dependencies\n"
      "- \xe2\x94\x82 build \xe2\x94\x82 ok \xe2\x94\x82\n- Ran `cd /repo && sed -i 's/a/b/' "
      "x.ts`\n"
      "- [=======>      ] 52%\n- pnpm test -> exit 0\n## Constraints\n"
      "- {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n- Use pnpm\n");
  int noise = 0;
  for (const SummaryItem& i : items) noise += i.noise;
  EXPECT_EQ(noise, 5);
  EXPECT_FALSE(Find(items, "pnpm test")->noise);
  EXPECT_FALSE(Find(items, "Use pnpm")->noise);
}

TEST(SummaryStructureTest, ShapeCountsNoiseAndItemsRepeatedAcrossSections) {
  RenderedBlock b;
  b.summary = true;
  b.text =
      "## Done\n- [x] Added the per-key limiter in src/limiter.ts\n"
      "## In Progress\n- Added the per-key limiter in src/limiter.ts\n"
      "## Next Steps\n- Added the per-key limiter in src/limiter.ts\n- \xe2\xa0\x99 working\n";
  RenderedBlock verbatim;
  verbatim.text = "## Done\n- Added the per-key limiter in src/limiter.ts\n";
  SummaryShape shape = MeasureSummaryShape({b, verbatim});
  EXPECT_EQ(shape.items, 4);
  EXPECT_EQ(shape.noise, 1);
  EXPECT_EQ(shape.duplicated, 2);
}

// A repeat is a repeat in the same section too, behind a short label, or cut
// off with "..."; the file-list tags are data, not items.
TEST(SummaryStructureTest, ShapeCountsRepeatsInOneSectionLabelledOrCutOff) {
  RenderedBlock b;
  b.summary = true;
  b.text =
      "## Original Request\nFor webp use the encoder quality of the jpeg section, not your own.\n"
      "- For webp use the encoder quality of the jpeg section, not your own.\n"
      "## Context for Suffix\n- Continue with: For webp use the encoder quality of the jp...\n"
      "- Files read: `packages/web-ui/src/modes/interactive/renderer.ts`, `src/a.ts`\n"
      "- For webp use a new encoder entirely\n\n"
      "<read-files>\npackages/web-ui/src/modes/interactive/renderer.ts\n</read-files>\n";
  SummaryShape shape = MeasureSummaryShape({b});
  EXPECT_EQ(shape.duplicated, 2) << ::testing::PrintToString(shape.duplicated_examples);
}

}  // namespace
}  // namespace compactor
