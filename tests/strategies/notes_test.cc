#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/strategy.h"
#include "support/compaction_fixtures.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing::MakeSession;
using testing::Options;
using testing::RecordingSummarizer;
using testing::TempDir;

TEST(NotesStrategy, TheNotesAreTheSummaryAndNoSummarizerRuns) {
  TempDir d;
  auto session = Session::FromString(MakeSession(20, 2000), "s.jsonl");
  ASSERT_TRUE(session.ok());
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("notes");
  // The keep policy is the last keepMessages messages whatever the settings say.
  o.settings.keep_policy = KeepPolicy::kRecentTokens;
  o.settings.keep_recent_tokens = 1000000;
  o.settings.keep_messages = 2;
  o.notes_path = d.Write("notes.md", "\n  - goal: ship it\n\n");
  auto c = ComputeCompaction(**session, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const CompactionResult& r = c->result;
  ASSERT_TRUE(r.compacted);
  EXPECT_EQ(sum.calls, 0);
  EXPECT_EQ(r.strategy, "notes");
  EXPECT_EQ(r.output, CompactionOutput::kAppendEntry);
  EXPECT_EQ(r.summary, "- goal: ship it");
  // The last 2 messages would start at a tool result: its call is kept too.
  EXPECT_EQ(r.first_kept_entry_id, "e78");
  auto entry = nlohmann::json::parse(r.entry_json);
  EXPECT_EQ(entry["method"], "notes");
  EXPECT_EQ(entry["summary"], "- goal: ship it");
  auto after = SessionAfterCompaction(**session, *c);
  ASSERT_TRUE(after.ok());
  auto ctx = BuildSessionContext(**after);
  ASSERT_TRUE(ctx.ok());
  ASSERT_EQ(ctx->messages.size(), 4u);  // the notes, then call, result and answer
  EXPECT_EQ(ctx->messages[0].role, Role::kCompactionSummary);
}

TEST(NotesStrategy, NeedsANotesFileAndSkipsEmptyNotes) {
  TempDir d;
  auto session = Session::FromString(MakeSession(20, 2000), "s.jsonl");
  ASSERT_TRUE(session.ok());
  CompactOptions o = Options(nullptr);
  o.strategy = FindStrategy("notes");
  auto missing = ComputeCompaction(**session, o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message(), "the notes strategy needs a notes file (--notes FILE)");
  o.notes_path = d.Write("empty.md", " \n\t\n");
  auto empty = ComputeCompaction(**session, o);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->result.compacted);
  EXPECT_EQ(empty->result.skipped_reason, "empty notes");
  o.notes_path = d.path() + "/absent.md";
  EXPECT_FALSE(ComputeCompaction(**session, o).ok());
}

}  // namespace
}  // namespace compactor
