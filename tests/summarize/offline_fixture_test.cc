// The offline summarizer on the real fixture sessions: size, speed,
// determinism and the mechanical facts it must carry.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "compactor/context.h"
#include "compactor/file_ops.h"
#include "compactor/session.h"
#include "compactor/summarizer.h"
#include "support/test_util.h"

namespace compactor {
namespace {

std::string Fixture(const std::string& rel) {
  std::string dir = testing::SharedDir();
  if (dir.empty()) return "";
  std::string p = dir + "/fixtures/" + rel;
  return std::filesystem::exists(p) ? p : "";
}

// Messages of the context up to (excluding) the golden first-kept entry.
std::vector<Message> SummarizedPart(const std::string& session_rel, const std::string& golden_rel) {
  std::string sp = Fixture(session_rel), gp = Fixture("pi/expected/" + golden_rel);
  if (sp.empty() || gp.empty()) return {};
  auto golden = nlohmann::json::parse(testing::ReadFileOrDie(gp));
  auto s = Session::Open(sp);
  EXPECT_TRUE(s.ok());
  auto ctx = BuildSessionContext(**s);
  EXPECT_TRUE(ctx.ok());
  int64_t turn_start = golden["preparation"]["turnStartIndexInPath"].get<int64_t>();
  std::vector<int64_t> pos((*s)->size(), -1);
  for (size_t i = 0; i < ctx->path.size(); ++i) pos[ctx->path[i]] = static_cast<int64_t>(i);
  std::vector<Message> out;
  for (const ContextMessage& cm : ctx->messages) {
    if (cm.role == Role::kCompactionSummary) continue;
    if (pos[cm.entry_index] >= turn_start) break;
    auto m = ParseMessage(cm.json());
    EXPECT_TRUE(m.ok());
    out.push_back(std::move(*m));
  }
  return out;
}

TEST(OfflineFixture, LargeSession) {
  std::vector<Message> msgs =
      SummarizedPart("pi/large-session.v3.jsonl", "large-session.v3.k20000.brief+serialized.json");
  if (msgs.empty()) GTEST_SKIP() << "shared/fixtures not found";
  auto summarizer = NewOfflineSummarizer();
  SummaryRequest req;
  req.messages = msgs;
  auto t0 = std::chrono::steady_clock::now();
  auto r = summarizer->Summarize(req);
  auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::cout << *r << "\n---- " << std::chrono::duration<double>(t1 - t0).count() << " s, "
            << EstimateTextTokens(*r) << " tokens vs " << EstimateTextTokens(SerializeForSummary(msgs))
            << "\n";
}

}  // namespace
}  // namespace compactor
