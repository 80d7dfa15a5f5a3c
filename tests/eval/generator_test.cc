#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "compactor/context.h"
#include "compactor/estimate.h"
#include "compactor/eval.h"
#include "support/test_util.h"

namespace compactor {
namespace {

TEST(GeneratorTest, SameSeedSameBytes) {
  GeneratedSession a = GenerateEvalSession({3, 120000});
  GeneratedSession b = GenerateEvalSession({3, 120000});
  EXPECT_EQ(a.name, "eval-0003");
  EXPECT_EQ(a.jsonl, b.jsonl);
  EXPECT_EQ(FactFileToJson(a.facts), FactFileToJson(b.facts));
  GeneratedSession c = GenerateEvalSession({4, 120000});
  EXPECT_NE(a.jsonl, c.jsonl);
}

TEST(GeneratorTest, CorpusFilesAreDeterministic) {
  testing::TempDir d1, d2;
  auto p1 = WriteEvalCorpus(d1.path(), 2, 10, 100000);
  auto p2 = WriteEvalCorpus(d2.path(), 2, 10, 100000);
  ASSERT_TRUE(p1.ok() && p2.ok());
  ASSERT_EQ(p1->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(testing::ReadFileOrDie((*p1)[i]), testing::ReadFileOrDie((*p2)[i]));
    std::string facts = (*p1)[i].substr(0, (*p1)[i].size() - 6) + ".facts.json";
    auto f = ReadFactFile(facts);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_FALSE(f->facts.empty());
  }
}

class GeneratedSessionTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(GeneratedSessionTest, LoadsAndPlantsScorableFacts) {
  GeneratedSession g = GenerateEvalSession({GetParam()});
  std::vector<LoadWarning> warnings;
  LoadOptions load;
  load.strict = true;
  auto session = Session::FromString(g.jsonl, g.name + ".jsonl", load);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  EXPECT_TRUE((*session)->warnings().empty());
  EXPECT_EQ((*session)->header().version, 3);
  auto ctx = BuildSessionContext(**session);
  ASSERT_TRUE(ctx.ok());

  // Sizes that exceed typical thresholds, with usage that tracks the content.
  ContextEstimate est = EstimateContextTokens(ctx->messages);
  EXPECT_GE(est.heuristic_sum, 100000);
  EXPECT_LE(est.heuristic_sum, 250000);
  EXPECT_GE(est.tokens, 100000);
  EXPECT_LE(est.tokens, 260000);

  // Every kind is planted, with at least one revised fact whose replacement exists.
  std::set<FactKind> kinds;
  int stale = 0;
  std::set<std::string> ids;
  for (const Fact& f : g.facts.facts) {
    kinds.insert(f.kind);
    EXPECT_TRUE(ids.insert(f.id).second) << f.id;
    ASSERT_TRUE((*session)->Find(f.entry_id).has_value()) << f.id << " at " << f.entry_id;
    if (!f.superseded_by.empty()) ++stale;
  }
  EXPECT_EQ(kinds.size(), static_cast<size_t>(kFactKindCount));
  EXPECT_GE(stale, 1);

  // The uncompacted context (the ceiling) holds every current fact and never
  // presents a stale one as current: the planted texts and the scorer agree.
  std::vector<FactOutcome> outcomes = ScoreFacts(g.facts.facts, RenderContext(ctx->messages));
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const Fact& f = g.facts.facts[i];
    if (f.superseded_by.empty()) {
      EXPECT_TRUE(outcomes[i].retained) << f.id << ": " << f.text;
    } else {
      EXPECT_TRUE(outcomes[i].mentioned) << f.id;
      EXPECT_FALSE(outcomes[i].stale_as_current) << f.id << ": " << f.text;
    }
  }

  // Most facts sit where a default compaction (20k recent tokens kept)
  // summarizes, and some in the kept tail.
  std::vector<size_t> path = (*session)->PathTo(*(*session)->Leaf());
  int64_t tail = 0;
  size_t tail_start = path.size();
  while (tail_start > 0 && tail < 20000) {
    --tail_start;
    tail += EstimateMessageTokens((*session)->MessageJson(path[tail_start]));
  }
  std::set<std::string> tail_ids;
  for (size_t i = tail_start; i < path.size(); ++i)
    tail_ids.insert(std::string((*session)->entry(path[i]).id));
  size_t in_tail = 0;
  for (const Fact& f : g.facts.facts) in_tail += tail_ids.count(f.entry_id);
  EXPECT_GE(in_tail, 1u);
  EXPECT_LE(in_tail * 4, g.facts.facts.size()) << "more than a quarter of the facts in the tail";
}

INSTANTIATE_TEST_SUITE_P(Seeds, GeneratedSessionTest, ::testing::Values(1, 2, 3, 4, 5, 6, 17, 42));

TEST(GeneratorTest, PiLoadsGeneratedSessions) {
  if (!testing::HaveNode()) GTEST_SKIP() << "node not on PATH: pi oracle check skipped";
  const std::string shared = testing::SharedDir();
  if (shared.empty()) GTEST_SKIP() << "../shared not found: pi oracle check skipped";
  testing::TempDir dir;
  auto paths = WriteEvalCorpus(dir.path(), 2, 1, 100000);
  ASSERT_TRUE(paths.ok());
  for (const std::string& path : *paths) {
    auto run = testing::RunProgram({shared + "/tools/pi-oracle/run.sh", "harness.mjs", path,
                                    "20000", "16384", "--messages", "brief"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto j = nlohmann::json::parse(run.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << run.out.substr(0, 500);
    auto session = Session::Open(path);
    ASSERT_TRUE(session.ok());
    auto ctx = BuildSessionContext(**session);
    ASSERT_TRUE(ctx.ok());
    EXPECT_EQ(j["contextMessages"].size(), ctx->messages.size());
    // pi's own file tracking over the part it would summarize finds only
    // files the generator planted as modified.
    auto facts = ReadFactFile(path.substr(0, path.size() - 6) + ".facts.json");
    ASSERT_TRUE(facts.ok());
    std::set<std::string> planted;
    for (const Fact& f : facts->facts)
      if (f.kind == FactKind::kFileModified) planted.insert(f.text);
    const auto& modified = j["preparation"]["modifiedFiles"];
    EXPECT_FALSE(modified.empty());
    for (const auto& m : modified) EXPECT_TRUE(planted.count(m.get<std::string>())) << m;
  }
}

}  // namespace
}  // namespace compactor
