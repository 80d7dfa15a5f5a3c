// The hand-labelled set (docs/quality.md, "Hand-labelled real sessions"):
// facts and statuses written by hand in tests/eval/labelled/ for the real pi
// sessions in tests/fixtures/pi/, not extracted by the code under test.
#include <gtest/gtest.h>

#include "compactor/context.h"
#include "compactor/eval.h"
#include "compactor/strategy.h"
#include "support/test_util.h"

namespace compactor {
namespace {

struct Labelled {
  const char* session;
  const char* facts;
  const char* split;
  // written.jsonl ends 1,900 tokens after its own compaction: a short tail.
  int64_t keep_recent_tokens;
};
constexpr Labelled kSet[] = {
    {"written.jsonl", "written.facts.json", "tuning", 200},
    {"long.v3.jsonl", "long.v3.facts.json", "tuning", 20000},
    {"compacted.v3.jsonl", "compacted.v3.facts.json", "held-out", 20000},
};

std::string Fixture(const char* name) {
  return std::string(COMPACTOR_SOURCE_DIR) + "/tests/fixtures/pi/" + name;
}
std::string Labels(const char* name) {
  return std::string(COMPACTOR_SOURCE_DIR) + "/tests/eval/labelled/" + name;
}

class LabelledSetTest : public ::testing::TestWithParam<Labelled> {};

// The labels agree with the session: every fact is where the label says,
// the uncompacted context holds every current fact, and the only status
// claims it makes come from summaries already in the file.
TEST_P(LabelledSetTest, LabelsMatchTheSession) {
  const Labelled& l = GetParam();
  auto session = Session::Open(Fixture(l.session));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto facts = ReadFactFile(Labels(l.facts));
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->session, l.session);
  EXPECT_EQ(facts->split, l.split);
  EXPECT_EQ(facts->source, "labelled");
  for (const Fact& f : facts->facts)
    EXPECT_TRUE((*session)->Find(f.entry_id).has_value()) << f.id << " at " << f.entry_id;

  auto ctx = BuildSessionContext(**session);
  ASSERT_TRUE(ctx.ok());
  const std::vector<FactOutcome> out = ScoreFacts(facts->facts, RenderContext(ctx->messages));
  for (size_t i = 0; i < out.size(); ++i) {
    const Fact& f = facts->facts[i];
    EXPECT_TRUE(out[i].mentioned) << f.id << ": " << f.text;
    if (f.superseded_by.empty() && f.status.empty()) {
      EXPECT_TRUE(out[i].retained) << f.id << ": " << f.text;
    }
    EXPECT_FALSE(out[i].stale_as_current) << f.id;
    // The one status claim already in these files: written.jsonl's earlier
    // summary lists the lexer check as In Progress, which the kept tail
    // answered. An earlier summary's outdated item counts against whoever
    // carries it forward, the ceiling included.
    if (f.id == "step-1") {
      EXPECT_EQ(out[i].status_error, "done-as-pending");
    } else {
      EXPECT_EQ(out[i].status_error, "") << f.id;
    }
  }
}

// Each strategy runs over the labelled sessions and reports every measure;
// the figures are in docs/quality.md ("Results").
TEST_P(LabelledSetTest, StrategiesAreScored) {
  const Labelled& l = GetParam();
  auto session = Session::Open(Fixture(l.session));
  ASSERT_TRUE(session.ok());
  auto facts = ReadFactFile(Labels(l.facts));
  ASSERT_TRUE(facts.ok());
  for (const char* name : {"summary", "mask"}) {
    EvalConfig config;
    config.strategy = FindStrategy(name);
    config.compact.settings.keep_recent_tokens = l.keep_recent_tokens;
    auto ev = EvaluateSession(**session, *facts, config);
    ASSERT_TRUE(ev.ok()) << name << ": " << ev.status().ToString();
    EXPECT_EQ(ev->split, l.split);
    // written.jsonl has no tool output old and large enough to mask.
    if (std::string_view(name) == "mask" && std::string_view(l.session) == "written.jsonl") {
      EXPECT_FALSE(ev->compacted);
      continue;
    }
    ASSERT_TRUE(ev->compacted) << name << ": " << ev->skipped_reason;
    EXPECT_EQ(ev->outcomes.size(), facts->facts.size());
    EXPECT_EQ(ev->status.facts, static_cast<int>(facts->facts.size()));
    EXPECT_GE(ev->continuation, 0.0);
    EXPECT_LE(ev->continuation, 5.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Set, LabelledSetTest, ::testing::ValuesIn(kSet),
                         [](const ::testing::TestParamInfo<Labelled>& info) {
                           std::string n = info.param.session;
                           std::string out;
                           for (char c : n.substr(0, n.find('.')))
                             out.push_back(c == '-' ? '_' : c);
                           return out;
                         });

}  // namespace
}  // namespace compactor
