// Codex's remote compaction through the proxy: with an upstream that offers
// none, the proxy answers a compaction_trigger with exactly one compaction
// item (streamed and not) and expands that item into its summary when it
// comes back; with remoteCompaction "upstream" the trigger passes through.
#include "serve/remote_compaction.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/compact_requests.h"
#include "serve/serve_fixture.h"

namespace compactor::testing {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

const Fields kHeaders = {{"authorization", "Bearer dummy"},
                         {"content-type", "application/json"},
                         {"x-codex-beta-features", "remote_compaction_v2"},
                         {"session-id", "codex-1"}};

Json Trigger(bool stream) {
  Json r = ResponsesRequest(6, 40);
  r["input"].push_back({{"type", "compaction_trigger"}});
  r["stream"] = stream;
  return r;
}

// The output items of a Responses answer, streamed or not.
Json OutputItems(const RawResponse& res) {
  if (res.Header("content-type").rfind("text/event-stream", 0) != 0) {
    return Json::parse(res.body)["output"];
  }
  Json items = Json::array();
  size_t pos = 0;
  while ((pos = res.body.find("data: ", pos)) != std::string::npos) {
    size_t end = res.body.find('\n', pos);
    Json e = Json::parse(res.body.substr(pos + 6, end - pos - 6));
    if (e["type"] == "response.output_item.done") items.push_back(e["item"]);
    pos = end;
  }
  return items;
}

class RemoteCompactionTest : public ServeFixture, public ::testing::WithParamInterface<bool> {};

TEST_P(RemoteCompactionTest, TheProxyAnswersTheTriggerAndExpandsItsItemLater) {
  const bool stream = GetParam();
  StartProxy([](ServeOptions& o) { o.summarizer = "offline"; });
  auto res = Fetch(port_, "POST", "/v1/responses", kHeaders, Trigger(stream).dump());
  ASSERT_TRUE(res.has_value());
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(upstream_.request_count(), 0u) << "the trigger must not reach this upstream";
  Json items = OutputItems(*res);
  ASSERT_EQ(items.size(), 1u) << res->body;
  const Json& item = items[0];
  EXPECT_EQ(item["type"], "compaction");
  std::string content = item["encrypted_content"];
  ASSERT_EQ(content.rfind(serve::kProxyCompaction, 0), 0u);
  std::string summary = content.substr(serve::kProxyCompaction.size());
  EXPECT_FALSE(summary.empty());
  EXPECT_FALSE(res->Header("x-compactor-compacted").empty());

  // Codex's next request: its history replaced by that item, then new work.
  Json next = ResponsesRequest(1, 10);
  next["input"].insert(next["input"].begin(), item);
  auto res2 = Fetch(port_, "POST", "/v1/responses", kHeaders, next.dump());
  ASSERT_TRUE(res2.has_value());
  EXPECT_EQ(res2->status, 200);
  ASSERT_EQ(upstream_.request_count(), 1u);
  Json sent = Json::parse(upstream_.requests()[0].body);
  const Json& first = sent["input"][0];
  EXPECT_EQ(first["type"], "message");
  EXPECT_EQ(first["role"], "user");
  EXPECT_NE(first.dump().find("<summary>"), std::string::npos);
  EXPECT_EQ(sent.dump().find("\"compaction\""), std::string::npos);
  EXPECT_EQ(sent["input"].size(), next["input"].size());
  EXPECT_EQ(sent["tools"], next["tools"]);
}

INSTANTIATE_TEST_SUITE_P(StreamOrNot, RemoteCompactionTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "stream" : "json"; });

TEST_F(ServeFixture, RemoteCompactionUpstreamPassesTheTriggerThrough) {
  StartProxy([](ServeOptions& o) { o.remote_compaction = "upstream"; });
  std::string body = Trigger(false).dump();
  auto res = Fetch(port_, "POST", "/v1/responses", kHeaders, body);
  ASSERT_TRUE(res.has_value());
  ASSERT_EQ(upstream_.request_count(), 1u);
  EXPECT_EQ(upstream_.requests()[0].body, body);
}

TEST(RemoteCompactionUnitTest, KnownUpstreamsCompactRemotely) {
  EXPECT_TRUE(serve::UpstreamCompactsRemotely("https://api.openai.com"));
  EXPECT_TRUE(serve::UpstreamCompactsRemotely("https://chatgpt.com/backend-api/codex"));
  EXPECT_FALSE(serve::UpstreamCompactsRemotely("http://127.0.0.1:8080"));
  EXPECT_FALSE(serve::UpstreamCompactsRemotely("https://notchatgpt.com"));
}

}  // namespace
}  // namespace compactor::testing
