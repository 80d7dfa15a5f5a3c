// Never worse than no proxy (docs/serve.md): a summary that takes longer
// than the deadline leaves the request uncompacted; a summary is prepared in
// the background at ~80% of the threshold so the crossing request does not
// wait; two concurrent requests of one conversation never summarize twice;
// a client that goes away cancels the summary written only for it. Real
// threads on loopback, every wait bounded.
#include "serve/summary_jobs.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "compactor/summarizer.h"
#include "serve/compact_hook.h"
#include "serve/compact_requests.h"
#include "serve/serve_fixture.h"

namespace compactor::testing {
namespace {

using namespace std::chrono_literals;
using Fields = std::vector<std::pair<std::string, std::string>>;

const Fields kHeaders = {{"x-api-key", "dummy"},
                         {"anthropic-version", "2023-06-01"},
                         {"content-type", "application/json"},
                         {"x-claude-code-session-id", "conversation-1"}};

// An Anthropic answer to the summary request, sent in `pieces` chunks
// `delay` apart (a slow summary).
ScriptedReply SlowSummary(int pieces, std::chrono::milliseconds delay) {
  std::string body = Json{{"id", "msg_s"},
                          {"type", "message"},
                          {"role", "assistant"},
                          {"model", "claude-sonnet-4-5"},
                          {"content", Json::array({{{"type", "text"}, {"text", "SLOW-SUMMARY"}}})},
                          {"stop_reason", "end_turn"},
                          {"stop_sequence", nullptr},
                          {"usage", {{"input_tokens", 10}, {"output_tokens", 5}}}}
                         .dump();
  ScriptedReply r;
  r.headers = {{"content-type", "application/json"}};
  r.framing = ScriptedReply::Framing::kChunked;
  size_t step = body.size() / static_cast<size_t>(pieces) + 1;
  for (size_t i = 0; i < body.size(); i += step) r.pieces.push_back(body.substr(i, step));
  r.piece_delay = delay;
  return r;
}

// Told by content: the summarization system prompt.
bool IsSummary(const UpstreamRecord& r) {
  return r.body.find(SummarizationSystemPrompt().substr(0, 40)) != std::string::npos;
}

size_t CountSummaries(const std::vector<UpstreamRecord>& all) {
  size_t n = 0;
  for (const UpstreamRecord& r : all) n += IsSummary(r);
  return n;
}

class SummaryJobsTest : public ServeFixture {};

TEST_F(SummaryJobsTest, ASummaryPastTheDeadlineSendsTheRequestUncompacted) {
  StartProxy([](ServeOptions& o) {
    o.context_window = 24000;
    o.summary_deadline_ms = 300;
    o.json_logs = true;
  });
  upstream_.Push(SlowSummary(20, 150ms));  // ~3 s
  std::string body = AnthropicRequest(30, 120).dump();
  auto t0 = std::chrono::steady_clock::now();
  auto res = Fetch(port_, "POST", "/v1/messages", kHeaders, body);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200);
  EXPECT_LT(took, 2500ms) << "the request waited for the slow summary";
  EXPECT_TRUE(res->Header("x-compactor-compacted").empty());
  std::vector<UpstreamRecord> all = upstream_.requests();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_TRUE(IsSummary(all[0]));
  EXPECT_EQ(all[1].body, body);
  auto lines = WaitLogs(1);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("deadline"), std::string::npos) << lines[0];
}

// A window that puts `body` at 90% of the threshold.
int64_t WindowAtNinetyPercent(const std::string& body) {
  auto req = ReadClientRequest("anthropic", body);
  EXPECT_TRUE(req.ok());
  int64_t tokens = serve::EstimateRequestTokens(*req);
  int64_t threshold = tokens * 10 / 9;
  // threshold = window - min(16384, window / 2).
  return threshold * 2 <= 2 * 16384 ? threshold * 2 : threshold + 16384;
}

TEST_F(SummaryJobsTest, ASummaryPreparedAtEightyPercentServesTheCrossingRequest) {
  std::string first = AnthropicRequest(30, 120).dump();
  const int64_t window = WindowAtNinetyPercent(first);
  StartProxy([window](ServeOptions& o) { o.context_window = window; });
  auto res = Fetch(port_, "POST", "/v1/messages", kHeaders, first);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200);
  EXPECT_TRUE(res->Header("x-compactor-compacted").empty());
  // The request went as sent; the summary was prepared besides it.
  ASSERT_TRUE(upstream_.WaitForRequests(2, 10s));
  std::vector<UpstreamRecord> all = upstream_.requests();
  size_t client = IsSummary(all[0]) ? 1 : 0;
  EXPECT_EQ(all[client].body, first);
  EXPECT_TRUE(IsSummary(all[1 - client]));

  // The next request crosses the threshold: compacted with the prepared
  // summary (or by joining it if still running), no new summary request.
  std::string second = AnthropicRequest(36, 120).dump();
  auto res2 = Fetch(port_, "POST", "/v1/messages", kHeaders, second);
  ASSERT_TRUE(res2.has_value());
  EXPECT_EQ(res2->status, 200);
  EXPECT_FALSE(res2->Header("x-compactor-compacted").empty());
  all = upstream_.requests();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(CountSummaries(all), 1u);
  EXPECT_LT(all[2].body.size(), second.size());
}

TEST_F(SummaryJobsTest, TwoConcurrentRequestsOfOneConversationSummarizeOnce) {
  StartProxy([](ServeOptions& o) { o.context_window = 24000; });
  upstream_.Push(SlowSummary(8, 100ms));  // ~0.8 s: the second request arrives meanwhile
  std::string body = AnthropicRequest(30, 120).dump();
  auto send = [&] { return Fetch(port_, "POST", "/v1/messages", kHeaders, body); };
  auto a = std::async(std::launch::async, send);
  ASSERT_TRUE(upstream_.WaitForRequests(1, 10s));  // the summary is being written
  auto b = std::async(std::launch::async, send);
  auto ra = a.get();
  auto rb = b.get();
  ASSERT_TRUE(ra.has_value());
  ASSERT_TRUE(rb.has_value());
  EXPECT_EQ(ra->status, 200);
  EXPECT_EQ(rb->status, 200);
  EXPECT_FALSE(ra->Header("x-compactor-compacted").empty());
  EXPECT_FALSE(rb->Header("x-compactor-compacted").empty());
  std::vector<UpstreamRecord> all = upstream_.requests();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(CountSummaries(all), 1u);
  // Both got the identical summary bytes.
  EXPECT_EQ(all[1].body, all[2].body);
}

TEST_F(SummaryJobsTest, AClientThatGoesAwayCancelsItsSummary) {
  StartProxy([](ServeOptions& o) { o.context_window = 24000; });
  upstream_.Push(SlowSummary(50, 200ms));  // ~10 s
  RawClient c;
  ASSERT_TRUE(c.Connect(port_));
  ASSERT_TRUE(
      c.Send(RequestBytes("POST", "/v1/messages", kHeaders, AnthropicRequest(30, 120).dump())));
  ASSERT_TRUE(upstream_.WaitForRequests(1, 10s));
  c.Close();
  // The summary request is aborted long before its reply ends, and the
  // client's request never goes upstream.
  EXPECT_TRUE(upstream_.WaitForClientLeft(5s));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(upstream_.request_count(), 1u);
}

TEST(ConversationsTest, StartJoinsTheRunningJobAndCommitsItsSummary) {
  Env* env = Env::Default();
  serve::Conversations conversations(env);
  auto offline = std::shared_ptr<const Summarizer>(NewOfflineSummarizer());
  Json req = AnthropicRequest(6, 40);
  auto parsed = ReadClientRequest("anthropic", req.dump());
  ASSERT_TRUE(parsed.ok());
  serve::SummaryWork work;
  work.prefix = {"a", "b"};
  work.messages = serve::ItemMessages(*FindProviderApi("anthropic"), *parsed, 0, 6);
  work.summarizer = offline;
  bool started = false;
  auto job = conversations.Start("c", work, &started);
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(started);
  bool joined_started = true;
  auto joined = conversations.Start("c", work, &joined_started);
  ASSERT_TRUE(joined.ok());
  if (!(*job)->done()) {
    // Still running: the second start joined it.
    EXPECT_FALSE(joined_started);
  }
  EXPECT_EQ(conversations.Wait(*job, 10'000, {}), serve::Conversations::WaitEnd::kDone);
  EXPECT_EQ(conversations.Wait(*joined, 10'000, {}), serve::Conversations::WaitEnd::kDone);
  ASSERT_TRUE((*job)->result().ok());
  auto prior = conversations.Prior("c");
  ASSERT_NE(prior, nullptr);
  EXPECT_EQ(prior->prefix, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(prior->summary.empty());
  // Shared, not copied, from one request to the next.
  EXPECT_EQ(conversations.Prior("c").get(), prior.get());
  EXPECT_TRUE(conversations.FirstWarning("c"));
  EXPECT_FALSE(conversations.FirstWarning("c"));
}

// The table keeps at most max_conversations; the least recently used goes
// first, and comes back with its summary from the durable cache (found by
// the longest cached prefix of its request).
TEST(ConversationsTest, TheLeastRecentlyUsedIsEvictedAndRestoredFromTheDurableCache) {
  std::map<std::string, std::string> stored;
  serve::DurableSummaries durable;
  durable.put = [&](const std::string& k, const std::string& v) { stored[k] = v; };
  durable.find = [&](const std::string& k) -> std::optional<std::string> {
    auto it = stored.find(k);
    if (it == stored.end()) return std::nullopt;
    return it->second;
  };
  serve::Conversations conversations(Env::Default(), {2, &durable});
  auto parsed = ReadClientRequest("anthropic", AnthropicRequest(6, 40).dump());
  ASSERT_TRUE(parsed.ok());
  // A summary of items [0, 6) is put when its job ends.
  serve::SummaryWork work;
  work.prefix = serve::SummaryOf(*parsed, 6, "").prefix;
  work.messages = serve::ItemMessages(*FindProviderApi("anthropic"), *parsed, 0, 6);
  work.summarizer = std::shared_ptr<const Summarizer>(NewOfflineSummarizer());
  bool started = false;
  auto job = conversations.Start("a", work, &started);
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(conversations.Wait(*job, 10'000, {}), serve::Conversations::WaitEnd::kDone);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored.begin()->first, serve::SummaryKeys(*parsed)[6]);
  const std::string summary = conversations.Prior("a")->summary;
  conversations.Commit("b", {{"x"}, "b's"});
  (void)conversations.Prior("a");  // a is used again: b is now the oldest
  conversations.Commit("c", {{"y"}, "c's"});
  EXPECT_EQ(conversations.size(), 2u);
  EXPECT_EQ(conversations.Prior("b"), nullptr);
  EXPECT_NE(conversations.Prior("a"), nullptr);
  conversations.Commit("d", {{"z"}, "d's"});  // evicts c (a was used after it)
  EXPECT_EQ(conversations.Prior("c"), nullptr);
  conversations.Commit("e", {{"z"}, "e's"});  // evicts a
  EXPECT_EQ(conversations.Prior("a"), nullptr);
  // Back: the longest cached prefix of its request, once per stay.
  auto restored = conversations.Restore("a", *parsed);
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->summary, summary);
  EXPECT_EQ(restored->prefix.size(), 6u);
  EXPECT_EQ(serve::MatchedPrefix(*parsed, *restored), 6u);
  EXPECT_EQ(conversations.Restore("a", *parsed), nullptr);
  // The key is the content's: another conversation with the same items
  // finds the same summary.
  auto other = conversations.Restore("new", *parsed);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->summary, summary);
}

}  // namespace
}  // namespace compactor::testing
