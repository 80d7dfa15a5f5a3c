// The offline summarizer on the fixture sessions (tests/fixtures/pi): the span
// pi would summarize at keepRecentTokens 20000 / 2000.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "compactor/context.h"
#include "compactor/estimate.h"
#include "compactor/file_ops.h"
#include "compactor/session.h"
#include "compactor/summarizer.h"
#include "support/test_util.h"

namespace compactor {
namespace {

double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Case {
  std::string session;
  std::string golden;
};

// The messages before the golden turn start (pi's messagesToSummarize for a
// split turn), from the previous compaction's first kept entry on.
std::vector<Message> HistorySpan(const Case& c) {
  std::string sp = testing::FixturePath(c.session);
  std::string gp = testing::FixturePath("pi/expected/" + c.golden);
  auto golden = nlohmann::json::parse(testing::ReadFileOrDie(gp));
  ContextOptions o;
  o.leaf_id = golden["leafId"].get<std::string>();
  auto s = Session::Open(sp);
  if (!s.ok()) {
    ADD_FAILURE() << s.status().ToString();
    return {};
  }
  auto ctx = BuildSessionContext(**s, o);
  if (!ctx.ok()) {
    ADD_FAILURE() << ctx.status().ToString();
    return {};
  }
  int64_t end = golden["preparation"]["turnStartIndexInPath"].get<int64_t>();
  std::vector<int64_t> pos((*s)->size(), -1);
  for (size_t i = 0; i < ctx->path.size(); ++i) pos[ctx->path[i]] = static_cast<int64_t>(i);
  std::vector<Message> out;
  for (const ContextMessage& cm : ctx->messages) {
    if (cm.role == Role::kCompactionSummary) continue;
    if (pos[cm.entry_index] >= end) break;
    auto m = ParseMessage(cm.json());
    if (!m.ok()) {
      ADD_FAILURE() << m.status().ToString();
      return {};
    }
    out.push_back(std::move(*m));
  }
  EXPECT_EQ(out.size(), golden["preparation"]["messagesToSummarize"].get<size_t>());
  return out;
}

class OfflineOnFixtures : public ::testing::TestWithParam<Case> {};

TEST_P(OfflineOnFixtures, CarriesTheArtifactTrailAndShrinks) {
  std::vector<Message> msgs = HistorySpan(GetParam());
  ASSERT_FALSE(msgs.empty());
  auto summarizer = NewOfflineSummarizer();
  SummaryRequest req;
  req.messages = msgs;
  double t0 = ThreadSeconds();
  auto r = summarizer->Summarize(req);
  double secs = ThreadSeconds() - t0;
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*summarizer->Summarize(req), *r) << "not deterministic";

  // Every modified file of the span is named in the summary.
  FileOps ops;
  ExtractFileOps(msgs, ops);
  FileLists lists = ComputeFileLists(ops);
  for (const std::string& f : lists.modified_files) {
    EXPECT_NE(r->find("`" + f + "`"), std::string::npos) << f;
  }
  int64_t in = 0;
  for (const Message& m : msgs) in += EstimateMessageTokens(m);
  int64_t out = EstimateTextTokens(*r);
  std::cout << GetParam().golden << ": " << msgs.size() << " messages, " << in << " -> " << out
            << " tokens (" << 100.0 * (1.0 - static_cast<double>(out) / static_cast<double>(in))
            << "% reduction), " << secs * 1000 << " ms CPU\n";
  // COMPACTOR_DUMP_SUMMARY=1 prints the summary for review.
  if (std::getenv("COMPACTOR_DUMP_SUMMARY") != nullptr) std::cout << *r << "\n";
  if (in > 20000) {
    EXPECT_LE(out * 100, in * 15) << "less than 85% reduction";
  }
  for (const char* h :
       {"## Goal", "## Constraints & Preferences", "### Done", "### In Progress", "### Blocked",
        "## Key Decisions", "## Next Steps", "## Critical Context"}) {
    EXPECT_NE(r->find(h), std::string::npos) << h;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OfflineOnFixtures,
                         ::testing::Values(Case{"pi/written.jsonl",
                                                "written.before-compaction.k2000.json"},
                                           Case{"pi/long.v3.jsonl", "long.k20000.json"},
                                           Case{"pi/compacted.v3.jsonl", "compacted.k20000.json"}));

}  // namespace
}  // namespace compactor
