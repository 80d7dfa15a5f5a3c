// The independent generator (docs/quality.md, "Independent corpus").
#include <gtest/gtest.h>

#include <set>

#include "compactor/context.h"
#include "compactor/eval.h"
#include "compactor/strategy.h"

namespace compactor {
namespace {

GeneratedSession Independent(uint64_t seed, int64_t tokens = 160000) {
  GeneratorOptions o;
  o.seed = seed;
  o.target_tokens = tokens;
  o.style = GeneratorStyle::kIndependent;
  return GenerateEvalSession(o);
}

TEST(IndependentGeneratorTest, DeterministicAndNamedApart) {
  GeneratedSession a = Independent(7, 80000);
  GeneratedSession b = Independent(7, 80000);
  EXPECT_EQ(a.jsonl, b.jsonl);
  EXPECT_EQ(FactFileToJson(a.facts), FactFileToJson(b.facts));
  EXPECT_NE(a.jsonl, Independent(8, 80000).jsonl);
  EXPECT_EQ(a.name, "ind-0007");
  EXPECT_TRUE(a.notes.empty());  // its agent keeps no notes
  EXPECT_EQ(a.facts.source, "generated-independent");
}

TEST(IndependentGeneratorTest, SplitsBySeed) {
  EXPECT_EQ(Independent(4, 50000).facts.split, "held-out");
  EXPECT_EQ(Independent(5, 50000).facts.split, "tuning");
  EXPECT_EQ(GenerateEvalSession({8, 50000}).facts.split, "held-out");
  EXPECT_EQ(GenerateEvalSession({9, 50000}).facts.split, "tuning");
}

TEST(IndependentGeneratorTest, LengthsVaryWithTheSeed) {
  std::set<int64_t> sizes;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    GeneratedSession g = Independent(seed);
    auto s = Session::FromString(g.jsonl, g.name + ".jsonl");
    ASSERT_TRUE(s.ok());
    auto ctx = BuildSessionContext(**s);
    ASSERT_TRUE(ctx.ok());
    sizes.insert(static_cast<int64_t>(g.jsonl.size()) / 40000);  // coarse buckets
  }
  EXPECT_EQ(sizes.size(), 3u);
}

class IndependentSessionTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(IndependentSessionTest, PlantedFactsHoldInTheUncompactedContext) {
  GeneratedSession g = Independent(GetParam());
  auto session = Session::FromString(g.jsonl, g.name + ".jsonl");
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto ctx = BuildSessionContext(**session);
  ASSERT_TRUE(ctx.ok());
  const std::vector<RenderedBlock> blocks = RenderContext(ctx->messages);

  std::set<FactKind> kinds;
  int stale = 0, rejected = 0, done = 0, open_errors = 0, fixed_errors = 0;
  for (const Fact& f : g.facts.facts) {
    kinds.insert(f.kind);
    ASSERT_TRUE((*session)->Find(f.entry_id).has_value()) << f.id;
    stale += !f.superseded_by.empty();
    rejected += f.status == "rejected";
    done += f.status == "done";
    if (f.fixed) (*f.fixed ? fixed_errors : open_errors) += 1;
  }
  EXPECT_EQ(kinds.size(), static_cast<size_t>(kFactKindCount));
  EXPECT_GE(stale, 1);
  EXPECT_EQ(rejected, 1);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(open_errors, 2);  // the false fix and the piped run
  EXPECT_EQ(fixed_errors, 1);

  const std::vector<FactOutcome> out = ScoreFacts(g.facts.facts, blocks);
  for (size_t i = 0; i < out.size(); ++i) {
    const Fact& f = g.facts.facts[i];
    EXPECT_TRUE(out[i].mentioned) << f.id << ": " << f.text;
    if (f.superseded_by.empty() && f.status.empty()) {
      EXPECT_TRUE(out[i].retained) << f.id << ": " << f.text;
    }
    EXPECT_FALSE(out[i].stale_as_current) << f.id;
    EXPECT_TRUE(out[i].status_error.empty()) << f.id << ": " << out[i].status_error;
  }

  // Values occur only in tool outputs: never in what the user or the agent says.
  for (const Fact& f : g.facts.facts) {
    if (f.kind != FactKind::kValue) continue;
    const std::string needle = NormalizeForMatch(f.text);
    for (const RenderedBlock& b : blocks) {
      if (b.exchange) continue;
      EXPECT_EQ(NormalizeForMatch(b.text).find(needle), std::string::npos)
          << f.text << " stated in: " << b.text.substr(0, 200);
    }
  }
}

TEST_P(IndependentSessionTest, MostFactsFallInTheSummarizedPart) {
  GeneratedSession g = Independent(GetParam());
  auto session = Session::FromString(g.jsonl, g.name + ".jsonl");
  ASSERT_TRUE(session.ok());
  EvalConfig config;
  config.strategy = FindStrategy("summary");
  auto ev = EvaluateSession(**session, g.facts, config);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  if (!ev->compacted) GTEST_SKIP() << ev->skipped_reason;
  int in_summarized = 0, current = 0;
  for (const FactOutcome& o : ev->outcomes) {
    if (o.stale || !o.status.empty()) continue;
    ++current;
    in_summarized += o.in_summarized_part;
  }
  EXPECT_GE(in_summarized * 4, current * 3) << in_summarized << "/" << current;
  EXPECT_LT(in_summarized, current);  // the last file and the next step are kept verbatim
}

INSTANTIATE_TEST_SUITE_P(Seeds, IndependentSessionTest, ::testing::Values(1, 2, 3, 4, 5, 6));

}  // namespace
}  // namespace compactor
