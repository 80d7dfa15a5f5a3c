#include <gtest/gtest.h>

#include <filesystem>
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

TEST(HandoffStrategy, ComputesANewSessionThatStartsFromTheDocument) {
  TempDir d;
  // A thinking level change first: the new session carries it over.
  std::string text = MakeSession(5, 100);
  const std::string level = R"({"type":"thinking_level_change","id":"t1","parentId":"e20",)"
                            R"("timestamp":"2026-01-01T00:00:02.000Z","thinkingLevel":"high"})";
  auto session = Session::FromString(text + level + "\n", d.path() + "/old.jsonl");
  ASSERT_TRUE(session.ok());
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("handoff");
  o.handoff_dir = d.path() + "/next";
  auto c = ComputeCompaction(**session, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const CompactionResult& r = c->result;
  ASSERT_TRUE(r.compacted);
  EXPECT_EQ(r.strategy, "handoff");
  EXPECT_EQ(r.output, CompactionOutput::kNewSession);
  EXPECT_EQ(sum.last_kind, SummaryKind::kHandoff);
  EXPECT_EQ(r.messages_summarized, 20u);
  EXPECT_TRUE(r.first_kept_entry_id.empty());  // nothing is kept verbatim
  EXPECT_EQ(r.output_path.rfind(d.path() + "/next/2026-01-01T00-00-00-000Z_", 0), 0u)
      << r.output_path;
  EXPECT_FALSE(std::filesystem::exists(d.path() + "/next"));  // computed, not written
  EXPECT_TRUE(c->rewritten_jsonl.empty());
  EXPECT_FALSE(c->rewrite_plan);

  auto next = SessionAfterCompaction(**session, *c);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ((*next)->header().parent_session, d.path() + "/old.jsonl");
  EXPECT_EQ((*next)->path(), r.output_path);
  auto ctx = BuildSessionContext(**next);
  ASSERT_TRUE(ctx.ok());
  ASSERT_EQ(ctx->messages.size(), 1u);
  EXPECT_EQ(ctx->messages[0].role, Role::kCustom);
  EXPECT_EQ((*next)->entry(ctx->messages[0].entry_index).id, r.entry_id);
  EXPECT_EQ(ctx->thinking_level, "high");
  ASSERT_TRUE(ctx->model);
  EXPECT_EQ(ctx->model->model_id, "m");
  auto message = nlohmann::json::parse(ctx->messages[0].json());
  EXPECT_EQ(message["customType"], "handoff");
  EXPECT_EQ(message["details"]["parentSession"], d.path() + "/old.jsonl");
  EXPECT_NE(message["content"].get<std::string>().find("<handoff-context>\n" + r.summary),
            std::string::npos);
}

TEST(HandoffStrategy, CompactFileWritesTheNewFileOnly) {
  TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(5, 100));
  std::string before = testing::ReadFileOrDie(path);
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("handoff");
  auto r = CompactFile(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->compacted);
  EXPECT_EQ(testing::ReadFileOrDie(path), before);         // the old session is left as it is
  EXPECT_EQ(r->output_path.rfind(d.path() + "/", 0), 0u);  // next to the old one
  EXPECT_TRUE(Session::Open(r->output_path).ok());
}

TEST(HandoffStrategy, NeedsTwoMessages) {
  auto session = Session::FromString(MakeSession(0, 0), "s.jsonl");
  ASSERT_TRUE(session.ok());
  RecordingSummarizer sum;
  CompactOptions o = Options(&sum);
  o.strategy = FindStrategy("handoff");
  auto c = ComputeCompaction(**session, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->result.skipped_reason, "nothing to summarize");
  EXPECT_EQ(sum.calls, 0);
}

}  // namespace
}  // namespace compactor
