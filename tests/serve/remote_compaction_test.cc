// Codex's remote compaction through the proxy: with an upstream that offers
// none, the proxy answers a compaction_trigger with exactly one compaction
// item (streamed and not) and expands that item into its summary when it
// comes back; with remoteCompaction "upstream" the trigger passes through.
#include "serve/remote_compaction.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "serve/api.h"
#include "serve/compact_requests.h"
#include "serve/serve_fixture.h"
#include "support/test_util.h"

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

// With a store, the item refers to its summary in the store's summary cache
// (not the text), is expanded from there, and when the store lost it (wiped)
// the request is answered with a clear error instead of going upstream
// without its history.
class RemoteCompactionStoreTest : public ServeFixture {
 protected:
  void StartWithStore() {
    StartProxy(
        [this](ServeOptions& o) {
          o.summarizer = "offline";
          o.store = store_->path();
        },
        [this](serve::Server& s) {
          auto svc = serve::SessionService::Install(s, s.options());
          ASSERT_TRUE(svc.ok()) << svc.status().ToString();
          service_ = std::move(svc).value();
        });
  }
  void TearDown() override {
    ServeFixture::TearDown();
    service_.reset();
  }
  std::unique_ptr<TempDir> store_ = std::make_unique<TempDir>();
  std::unique_ptr<serve::SessionService> service_;
};

TEST_F(RemoteCompactionStoreTest, TheItemRefersToTheStoredSummaryAndAWipedStoreIsAnError) {
  StartWithStore();
  auto res = Fetch(port_, "POST", "/v1/responses", kHeaders, Trigger(false).dump());
  ASSERT_TRUE(res.has_value());
  ASSERT_EQ(res->status, 200) << res->body;
  Json items = OutputItems(*res);
  ASSERT_EQ(items.size(), 1u) << res->body;
  const Json item = items[0];
  std::string content = item["encrypted_content"];
  ASSERT_EQ(content.rfind(serve::kProxyCompactionRef, 0), 0u) << content;
  std::optional<std::string> stored =
      service_->store().FindSummary(content.substr(serve::kProxyCompactionRef.size()));
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(content.find(stored->substr(0, 20)), std::string::npos) << "a reference, not the text";

  Json next = ResponsesRequest(1, 10);
  next["input"].insert(next["input"].begin(), item);
  auto res2 = Fetch(port_, "POST", "/v1/responses", kHeaders, next.dump());
  ASSERT_TRUE(res2.has_value());
  EXPECT_EQ(res2->status, 200);
  ASSERT_EQ(upstream_.request_count(), 1u);
  Json sent = Json::parse(upstream_.requests()[0].body);
  EXPECT_EQ(sent["input"][0]["role"], "user");
  EXPECT_NE(sent["input"][0].dump().find(Json(*stored).dump().substr(1, 20)), std::string::npos);

  // The store is wiped: the summary is gone.
  server_->Shutdown();
  server_.reset();
  service_.reset();
  store_ = std::make_unique<TempDir>();
  StartWithStore();
  auto res3 = Fetch(port_, "POST", "/v1/responses", kHeaders, next.dump());
  ASSERT_TRUE(res3.has_value());
  EXPECT_EQ(res3->status, 409);
  EXPECT_NE(res3->body.find("compaction_summary_missing"), std::string::npos) << res3->body;
  EXPECT_EQ(upstream_.request_count(), 1u) << "nothing goes upstream without its history";
}

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
