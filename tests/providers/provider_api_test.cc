// The provider API registry and what every ProviderApi offers beyond the
// request/response tests of builders_test.cc: incremental stream events (for
// a relay), error reading, and one loopback call per registered API (a new
// API must add its row to Loopback()).
#include "compactor/provider_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "support/fake_llm_server.h"

namespace compactor {
namespace {

using ::testing::ElementsAre;
using testing::FakeLlmServer;
using testing::FakeReply;
using ::testing::HasSubstr;

ModelConfig Model(const std::string& api) {
  ModelConfig m;
  m.name = "m";
  m.api = api;
  m.model_id = "model-x";
  m.base_url = "http://h/v1";
  return m;
}

TEST(ProviderApiRegistryTest, BuiltInsInOrder) {
  std::vector<std::string> names;
  for (const ProviderApi* api : ProviderApis()) names.emplace_back(api->name());
  EXPECT_THAT(names, ElementsAre("openai-chat", "openai-responses", "anthropic", "remote"));
  for (const std::string& n : names) EXPECT_EQ(FindProviderApi(n)->name(), n);
  EXPECT_EQ(FindProviderApi("gemini"), nullptr);
  EXPECT_EQ(FindProviderApi("anthropic")->pi_api(), "anthropic-messages");
  EXPECT_EQ(FindProviderApi("openai-chat")->pi_api(), "openai-completions");
  EXPECT_EQ(FindProviderApi("anthropic")->default_base_url(), "https://api.anthropic.com");
  EXPECT_TRUE(FindProviderApi("remote")->base_url_is_endpoint());
  EXPECT_FALSE(FindProviderApi("remote")->streams());
  EXPECT_FALSE(FindProviderApi("remote")->agent_requests());
  EXPECT_TRUE(FindProviderApi("openai-responses")->native_compaction());
  EXPECT_FALSE(FindProviderApi("openai-chat")->native_compaction());
  auto unknown = ApiOf(Model("gemini"));
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildProviderRequest(Model("gemini"), {}, "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseProviderStream(Model("gemini"), "data: {}\n\n").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ProviderApiRegistryTest, SettingsNameTheRegisteredApis) {
  auto bad = ParseModelConfigs(R"({"models": {"a": {"provider": "gemini", "model": "x"}}})");
  EXPECT_EQ(bad.status().message(),
            "models.a.provider: unknown provider \"gemini\" (expected openai-chat, "
            "openai-responses, anthropic or remote)");
}

// --- incremental streams -------------------------------------------------------

struct Event {
  std::string name, data;
};

std::vector<StreamEventInfo> FeedAll(ProviderStreamParser& p, const std::vector<Event>& events) {
  std::vector<StreamEventInfo> out;
  for (const Event& e : events) out.push_back(p.OnEvent(e.name, e.data));
  return out;
}

TEST(StreamEventTest, AnthropicEventByEvent) {
  auto p = FindProviderApi("anthropic")->NewStreamParser(Model("anthropic"));
  std::vector<StreamEventInfo> info = FeedAll(
      *p,
      {{"message_start",
        R"({"type":"message_start","message":{"usage":{"input_tokens":50,"cache_read_input_tokens":7}}})"},
       {"content_block_start",
        R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})"},
       {"ping", R"({"type":"ping"})"},
       {"content_block_start",
        R"({"type":"content_block_start","index":1,"content_block":{"type":"text","text":"Hi"}})"},
       {"message_delta",
        R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}})"},
       {"message_stop", R"({"type":"message_stop"})"}});
  EXPECT_TRUE(info[0].usage_reported);
  EXPECT_EQ(info[0].usage.input, 50);
  EXPECT_EQ(info[0].usage.cache_read, 7);
  EXPECT_FALSE(info[0].content_started);
  EXPECT_TRUE(info[1].content_started) << "thinking is the first output";
  EXPECT_FALSE(info[2].content_started);
  EXPECT_FALSE(info[3].content_started) << "only the first content block starts the answer";
  EXPECT_EQ(info[4].stop_reason, "stop");
  EXPECT_TRUE(info[4].usage_reported);
  EXPECT_EQ(info[4].usage.output, 3);
  EXPECT_EQ(info[4].usage.input, 50);
  EXPECT_FALSE(info[4].complete);
  EXPECT_TRUE(info[5].complete);
  auto r = p->Finish();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "Hi");
}

TEST(StreamEventTest, ErrorEventsCarryTheOverflowVerdict) {
  auto p = FindProviderApi("anthropic")->NewStreamParser(Model("anthropic"));
  StreamEventInfo e = p->OnEvent(
      "error",
      R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}})");
  EXPECT_TRUE(e.error);
  EXPECT_FALSE(e.transient);
  EXPECT_TRUE(e.overflow.overflow);
  EXPECT_THAT(e.error_message, HasSubstr("prompt is too long"));
  StreamEventInfo after = p->OnEvent("message_stop", R"({"type":"message_stop"})");
  EXPECT_FALSE(after.complete) << "events after an error are ignored";

  auto q = FindProviderApi("anthropic")->NewStreamParser(Model("anthropic"));
  StreamEventInfo overloaded = q->OnEvent(
      "error", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  EXPECT_TRUE(overloaded.transient);
  EXPECT_FALSE(overloaded.overflow.overflow);
}

TEST(StreamEventTest, ChatAndResponses) {
  auto chat = FindProviderApi("openai-chat")->NewStreamParser(Model("openai-chat"));
  auto c =
      FeedAll(*chat, {{"", R"({"choices":[{"delta":{"role":"assistant","content":""}}]})"},
                      {"", R"({"choices":[{"delta":{"content":"He"}}]})"},
                      {"", R"({"choices":[{"delta":{"content":"y"}}]})"},
                      {"", R"({"choices":[{"delta":{},"finish_reason":"length"}]})"},
                      {"", R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}})"},
                      {"", "[DONE]"}});
  EXPECT_FALSE(c[0].content_started) << "an empty delta is not output";
  EXPECT_TRUE(c[1].content_started);
  EXPECT_FALSE(c[2].content_started);
  EXPECT_EQ(c[3].stop_reason, "length");
  EXPECT_TRUE(c[4].usage_reported);
  EXPECT_EQ(c[4].usage.input, 9);
  EXPECT_TRUE(c[5].complete);
  EXPECT_EQ(chat->Finish()->text, "Hey");

  auto resp = FindProviderApi("openai-responses")->NewStreamParser(Model("openai-responses"));
  auto r = FeedAll(
      *resp,
      {{"response.created", R"({"type":"response.created"})"},
       {"response.output_item.added",
        R"({"type":"response.output_item.added","item":{"type":"reasoning"}})"},
       {"response.output_text.delta", R"({"type":"response.output_text.delta","delta":"A"})"},
       {"response.failed",
        R"({"type":"response.failed","response":{"status":"failed","output":[],"error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}})"}});
  EXPECT_FALSE(r[0].content_started);
  EXPECT_TRUE(r[1].content_started);
  EXPECT_FALSE(r[2].content_started);
  EXPECT_TRUE(r[3].complete);
  EXPECT_TRUE(r[3].error);
  EXPECT_TRUE(r[3].overflow.overflow);
  auto failed = resp->Finish();
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->stop_reason, "error");
}

// --- errors ------------------------------------------------------------------

TEST(ProviderErrorTest, ReadsTypeMessageAndVerdict) {
  ProviderError a =
      FindProviderApi("anthropic")
          ->ReadError(
              400,
              R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}})");
  EXPECT_EQ(a.type, "invalid_request_error");
  EXPECT_EQ(a.detail, "prompt is too long: 210000 tokens > 200000 maximum");
  EXPECT_TRUE(a.overflow.overflow);
  EXPECT_FALSE(a.retryable);
  EXPECT_THAT(a.message, ::testing::StartsWith("400 {\"type\":\"error\""));

  ProviderError o = FindProviderApi("openai-responses")
                        ->ReadError(400, R"({"error":{"message":"Your input exceeds the context )"
                                         R"(window of this model.","type":"invalid_request_error",)"
                                         R"("code":"context_length_exceeded"}})");
  EXPECT_EQ(o.type, "context_length_exceeded");
  EXPECT_TRUE(o.overflow.overflow);

  ProviderError limited = FindProviderApi("openai-chat")
                              ->ReadError(429, R"({"error":{"message":"Rate limit reached"}})");
  EXPECT_FALSE(limited.overflow.overflow);
  EXPECT_TRUE(limited.retryable);
  ProviderError auth = FindProviderApi("openai-chat")->ReadError(401, "");
  EXPECT_TRUE(auth.auth);
  EXPECT_FALSE(auth.retryable);
  EXPECT_EQ(auth.message, "401 status code (no body)");
  ProviderError payload =
      FindProviderApi("anthropic")
          ->ReadError(
              413,
              R"({"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}})");
  EXPECT_TRUE(payload.overflow.payload);
  EXPECT_FALSE(payload.overflow.overflow);
  ProviderError remote = FindProviderApi("remote")->ReadError(500, R"({"error":"boom"})");
  EXPECT_EQ(remote.detail, "boom");
  EXPECT_TRUE(remote.retryable);
}

// --- one loopback call per registered API ------------------------------------

struct LoopbackRow {
  const char* api;
  std::string base_suffix;  // appended to the server's URL
  std::string path;         // where the request must arrive
  std::function<std::string(const std::string& text)> reply;
};

const std::vector<LoopbackRow>& Loopback() {
  static const std::vector<LoopbackRow> rows = {
      {"openai-chat", "/v1", "/v1/chat/completions",
       [](const std::string& t) { return FakeLlmServer::ChatReply(t); }},
      {"openai-responses", "/v1", "/v1/responses",
       [](const std::string& t) { return FakeLlmServer::ResponsesReply(t); }},
      {"anthropic", "", "/v1/messages",
       [](const std::string& t) { return FakeLlmServer::AnthropicReply(t); }},
      {"remote", "/summarize", "/summarize",
       [](const std::string& t) { return FakeLlmServer::RemoteReply(t); }},
  };
  return rows;
}

TEST(ProviderApiLoopbackTest, EveryRegisteredApiAnswersThroughCurl) {
  FakeLlmServer server;
  ASSERT_TRUE(server.Start());
  CallOptions options;
  options.transport = NewCurlTransport();
  for (const ProviderApi* api : ProviderApis()) {
    const LoopbackRow* row = nullptr;
    for (const LoopbackRow& r : Loopback()) {
      if (api->name() == r.api) row = &r;
    }
    ASSERT_NE(row, nullptr) << api->name() << " has no loopback test row";
    ModelConfig m = Model(std::string(api->name()));
    m.base_url = server.base_url() + row->base_suffix;
    m.timeout_ms = 5000;
    server.Push(FakeReply(200, row->reply("answer from " + m.api)));
    size_t before = server.request_count();
    CallOutcome out = CallModel(m, testing::Req("sys", "hello", 100), options);
    ASSERT_TRUE(out.result.ok()) << api->name() << ": " << out.result.status().ToString();
    EXPECT_EQ(out.result->text, "answer from " + m.api);
    ASSERT_EQ(server.request_count(), before + 1);
    EXPECT_EQ(server.requests().back().path, row->path) << api->name();
    EXPECT_THAT(server.requests().back().body, HasSubstr("hello")) << api->name();
  }
}

}  // namespace
}  // namespace compactor
