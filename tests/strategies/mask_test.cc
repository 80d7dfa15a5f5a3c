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

TEST(MaskStrategy, ComputesTheRewrittenSessionWithoutASummary) {
  auto session = Session::FromString(MakeSession(20, 2000), "s.jsonl");
  ASSERT_TRUE(session.ok());
  CompactOptions o = Options(nullptr);
  o.strategy = FindStrategy("mask");
  auto c = ComputeCompaction(**session, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const CompactionResult& r = c->result;
  ASSERT_TRUE(r.compacted);
  EXPECT_EQ(r.strategy, "mask");
  EXPECT_EQ(r.output, CompactionOutput::kRewriteFile);
  EXPECT_EQ(r.masked_outputs, 10u);  // 20 results, the newest 10 kept
  EXPECT_FALSE(r.kept_user_messages);
  EXPECT_EQ(r.messages_summarized, 0u);
  EXPECT_TRUE(r.summary.empty());
  EXPECT_TRUE(r.entry_json.empty());  // no entry: the results are changed in place
  ASSERT_TRUE(c->rewrite_plan);
  EXPECT_EQ(c->rewrite_plan->outputs.size(), 10u);

  auto after = SessionAfterCompaction(**session, *c);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)->size(), (*session)->size());
  auto ctx = BuildSessionContext(**after);
  ASSERT_TRUE(ctx.ok());
  auto oldest = nlohmann::json::parse(ctx->messages[2].json());
  EXPECT_EQ(oldest["role"], "toolResult");
  EXPECT_EQ(oldest["content"][0]["text"].get<std::string>().rfind("[Masked output of edit(", 0),
            0u);
  EXPECT_TRUE(oldest.contains("prunedAt"));
  auto newest = nlohmann::json::parse(ctx->messages[ctx->messages.size() - 2].json());
  EXPECT_EQ(newest["content"][0]["text"], std::string(2000, 'x'));
}

TEST(MaskStrategy, ReportsItsCounterOnSkipsToo) {
  auto session = Session::FromString(MakeSession(3, 2000), "s.jsonl");
  ASSERT_TRUE(session.ok());
  CompactOptions o = Options(nullptr);
  o.strategy = FindStrategy("mask");
  auto c = ComputeCompaction(**session, o);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->result.compacted);  // 3 results, all within the newest 10
  EXPECT_FALSE(c->result.skipped_reason.empty());
  EXPECT_EQ(c->result.masked_outputs, 0u);
  testing::TempDir d;
  std::string path = d.Write("s.jsonl", MakeSession(3, 2000));
  auto cli = testing::RunCli({"compact", path, "--strategy", "mask", "--json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  auto j = nlohmann::json::parse(cli.out);
  EXPECT_EQ(j["strategy"], "mask");
  EXPECT_EQ(j["maskedOutputs"], 0);
  EXPECT_FALSE(j.contains("keptUserMessageCount"));
}

}  // namespace
}  // namespace compactor
