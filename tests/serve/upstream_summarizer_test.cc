// `--summarizer upstream` (the default): the summary is written by the
// client's own model, through its own API and upstream, with its own
// credentials; the summary request stays inside the window (chunks folded
// into the running summary); a failed summary sends the request upstream
// uncompacted and overflow recovery still applies. All three APIs, against
// the fake upstream on loopback (it answers a request without tools with
// text: that text is the summary).
#include "serve/upstream_summarizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compactor/summarizer.h"
#include "serve/compact_requests.h"
#include "serve/serve_fixture.h"

namespace compactor::testing {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

constexpr char kSecret[] = "sk-test-secret-0123456789";
constexpr char kSummaryText[] = "SUMMARY-FROM-THE-CLIENTS-MODEL";

struct Api {
  const char* name;
  const char* path;
  Json (*make)(int, int);
  Fields headers;
};

const Api kApis[] = {
    {"anthropic",
     "/v1/messages",
     AnthropicRequest,
     {{"x-api-key", kSecret},
      {"anthropic-version", "2023-06-01"},
      {"content-type", "application/json"}}},
    {"openai-chat",
     "/v1/chat/completions",
     ChatRequest,
     {{"authorization", std::string("Bearer ") + kSecret}, {"content-type", "application/json"}}},
    {"openai-responses",
     "/v1/responses",
     ResponsesRequest,
     {{"authorization", std::string("Bearer ") + kSecret}, {"content-type", "application/json"}}},
};

// Told by content: the summarization system prompt (no internal header
// reaches a real upstream).
bool IsSummaryRequest(const UpstreamRecord& r) {
  return r.body.find(SummarizationSystemPrompt().substr(0, 40)) != std::string::npos;
}

class UpstreamSummarizerTest : public ServeFixture, public ::testing::WithParamInterface<Api> {
 protected:
  void SetUp() override {
    ApiReplyOptions o;
    o.text = kSummaryText;
    upstream_.set_api_options(o);
  }
  std::vector<UpstreamRecord> Summaries() {
    std::vector<UpstreamRecord> out;
    for (const UpstreamRecord& r : upstream_.requests()) {
      if (IsSummaryRequest(r)) out.push_back(r);
    }
    return out;
  }
  bool LogsContain(std::string_view s) {
    for (const std::string& l : logs()) {
      if (l.find(s) != std::string::npos) return true;
    }
    return false;
  }
};

TEST_P(UpstreamSummarizerTest, SummaryByTheClientsModelWithItsCredentials) {
  const Api& a = GetParam();
  StartProxy([](ServeOptions& o) { o.context_window = 24000; });
  std::string body = a.make(30, 120).dump();
  auto res = Fetch(port_, "POST", a.path, a.headers, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_FALSE(res->Header("x-compactor-compacted").empty());
  std::vector<UpstreamRecord> summaries = Summaries();
  ASSERT_EQ(summaries.size(), 1u) << "the summarized part fits the window: one request";
  const UpstreamRecord& s = summaries[0];
  // Same API path, same model, the client's credentials, no tools.
  EXPECT_EQ(s.target, a.path);
  Json sj = Json::parse(s.body);
  EXPECT_EQ(sj["model"], Json::parse(body)["model"]);
  EXPECT_FALSE(sj.contains("tools"));
  EXPECT_TRUE(s.Header("x-compactor-request").empty()) << "an internal header went upstream";
  for (const auto& [name, value] : a.headers) {
    if (name != "content-type") {
      EXPECT_EQ(s.Header(name), value) << name;
    }
  }
  // The request upstream after it carries that summary and is smaller.
  ASSERT_EQ(upstream_.request_count(), 2u);
  const UpstreamRecord sent = upstream_.requests()[1];  // a copy: requests() returns one
  EXPECT_FALSE(IsSummaryRequest(sent));
  EXPECT_NE(sent.body.find(kSummaryText), std::string::npos);
  EXPECT_LT(sent.body.size(), body.size() / 2);
  EXPECT_FALSE(LogsContain(kSecret));
}

// serve.markSummaryRequests (test harnesses): the summary requests, and only
// they, carry x-compactor-request: summary.
TEST_P(UpstreamSummarizerTest, SummaryRequestsAreMarkedOnlyWhenAsked) {
  const Api& a = GetParam();
  StartProxy([](ServeOptions& o) {
    o.context_window = 12000;
    o.mark_summary_requests = true;
  });
  auto res = Fetch(port_, "POST", a.path, a.headers, a.make(30, 120).dump());
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200) << res->body;
  // One or more summary requests (chunks), then the client's.
  std::vector<UpstreamRecord> all = upstream_.requests();
  ASSERT_GE(all.size(), 2u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].Header("x-compactor-request"), IsSummaryRequest(all[i]) ? "summary" : "") << i;
  }
  EXPECT_FALSE(IsSummaryRequest(all.back()));
}

TEST_P(UpstreamSummarizerTest, LongHistoryIsSummarizedInChunksInsideTheWindow) {
  const Api& a = GetParam();
  constexpr int64_t kWindow = 6000;
  StartProxy([](ServeOptions& o) { o.context_window = kWindow; });
  std::string body = a.make(40, 120).dump();
  auto res = Fetch(port_, "POST", a.path, a.headers, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200) << res->body;
  std::vector<UpstreamRecord> summaries = Summaries();
  ASSERT_GE(summaries.size(), 3u) << "a history ~4x the window needs several chunks";
  for (size_t i = 0; i < summaries.size(); ++i) {
    // Bytes / 4 over-counts pi's estimate (JSON syntax): a safe bound.
    EXPECT_LE(static_cast<int64_t>(summaries[i].body.size()) / 4, kWindow) << "chunk " << i;
    // Every chunk after the first folds into the running summary.
    if (i > 0) {
      EXPECT_NE(summaries[i].body.find(kSummaryText), std::string::npos) << i;
    }
  }
  const UpstreamRecord sent = upstream_.requests().back();  // a copy: requests() returns one
  EXPECT_FALSE(IsSummaryRequest(sent));
  EXPECT_NE(sent.body.find(kSummaryText), std::string::npos);
}

ScriptedReply Failure(const std::string& echo) {
  ScriptedReply r;
  r.status = 500;
  r.reason = "Internal Server Error";
  r.headers = {{"content-type", "application/json"}};
  r.pieces = {R"({"error":{"message":"summary backend down, key )" + echo + R"("}})"};
  return r;
}

ScriptedReply Overflow(const Api& a) {
  ScriptedReply r;
  r.status = 400;
  r.reason = "Bad Request";
  r.headers = {{"content-type", "application/json"}};
  r.pieces = {
      std::string(a.name) == "anthropic"
          ? R"({"type":"error","error":{"type":"invalid_request_error",)"
            R"("message":"prompt is too long: 250000 tokens > 200000 maximum"}})"
          : R"({"error":{"message":"This model's maximum context length is 128000 )"
            R"(tokens.","type":"invalid_request_error","code":"context_length_exceeded"}})"};
  return r;
}

TEST_P(UpstreamSummarizerTest, FailedSummaryForwardsUncompactedAndOverflowRecoveryStillApplies) {
  const Api& a = GetParam();
  StartProxy([](ServeOptions& o) {
    o.context_window = 24000;
    o.json_logs = true;
  });
  // The summary fails (one try and one retry), the client's request goes
  // as sent, the upstream refuses it as too long, the proxy compacts (this
  // summary works) and retries.
  upstream_.Push(Failure(kSecret));
  upstream_.Push(Failure(kSecret));
  upstream_.Push(Overflow(a));
  std::string body = a.make(30, 120).dump();
  auto res = Fetch(port_, "POST", a.path, a.headers, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200) << res->body;
  std::vector<UpstreamRecord> all = upstream_.requests();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_TRUE(IsSummaryRequest(all[0]));
  EXPECT_TRUE(IsSummaryRequest(all[1]));
  EXPECT_EQ(all[2].body, body);  // uncompacted
  EXPECT_TRUE(IsSummaryRequest(all[3]));
  EXPECT_NE(all[4].body.find(kSummaryText), std::string::npos);
  EXPECT_LT(all[4].body.size(), body.size());
  auto lines = WaitLogs(1);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("compactError"), std::string::npos) << lines[0];
  EXPECT_FALSE(LogsContain(kSecret));
}

INSTANTIATE_TEST_SUITE_P(Apis, UpstreamSummarizerTest, ::testing::ValuesIn(kApis),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

TEST(SummaryOutputCapTest, AQuarterOfASmallWindowPisDefaultOtherwise) {
  EXPECT_EQ(serve::SummaryOutputCap(6000), 1500);
  EXPECT_EQ(serve::SummaryOutputCap(0), DefaultMaxOutputTokens(SummaryKind::kHistory));
  EXPECT_EQ(serve::SummaryOutputCap(1'000'000), DefaultMaxOutputTokens(SummaryKind::kHistory));
}

}  // namespace
}  // namespace compactor::testing
