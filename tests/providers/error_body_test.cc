// How failed LLM requests are described (issue 12, case 10): the API key is
// redacted before any cut, HTML error pages become one line, the Responses
// API's in-stream "error" event is retried like a 5xx, and the context-overflow
// messages of TGI and vLLM are recognised, over HTTP and in a stream. The end
// to end cases run against the loopback fake server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "compactor/mem_env.h"
#include "compactor/providers.h"
#include "support/fake_llm_server.h"

namespace compactor {
namespace {

using testing::FakeLlmServer;
using testing::FakeReply;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Req;

constexpr std::string_view kKey = "sk-proj-SECRET0123456789abcdefghijklmnop";

// Whether `text` holds any piece of the key long enough to matter: 4 bytes of
// its beginning or 8 consecutive bytes from anywhere in it.
bool LeaksKey(std::string_view text) {
  if (text.find(kKey.substr(0, 4)) != std::string_view::npos) return true;
  for (size_t i = 0; i + 8 <= kKey.size(); ++i) {
    if (text.find(kKey.substr(i, 8)) != std::string_view::npos) return true;
  }
  return false;
}

// An error body that echoes the key so that it straddles byte `at` of the body.
std::string EchoAcross(size_t at) {
  std::string body = R"({"error":{"message":")";
  body += std::string(at - body.size() - kKey.size() / 2, 'x');
  body += "Incorrect API key provided: ";
  body += kKey;
  body += R"(","code":"invalid_api_key"}})";
  return body;
}

TEST(ErrorBodyTest, KeyAcrossTheCutIsRedactedBeforeTheCut) {
  // Every position of the key around the 4,000-byte cut.
  for (size_t at = 3950; at < 4050; ++at) {
    std::string body = EchoAcross(at);
    std::string described = DescribeHttpFailure(401, body, kKey);
    EXPECT_FALSE(LeaksKey(described)) << "key at " << at << ": " << described.substr(3900);
    EXPECT_LE(described.size(), 4000u + 20u);
  }
  // The status line still says what happened when the key is early.
  EXPECT_THAT(DescribeHttpFailure(401, EchoAcross(100), kKey),
              HasSubstr("Incorrect API key provided: [redacted]"));
}

TEST(ErrorBodyTest, TextCutInsideTheKeyLeavesNoPrefix) {
  // A body the transport already cut inside the key (the stream's raw cap).
  std::string cut = "error: key " + std::string(kKey.substr(0, 20));
  EXPECT_EQ(RedactSecret(cut, kKey), "error: key [redacted]");
  EXPECT_EQ(RedactSecret(cut + "...", kKey), "error: key [redacted]...");
  EXPECT_FALSE(LeaksKey(DescribeHttpFailure(400, cut, kKey)));
  // Fewer than 4 bytes of it say nothing and stay (ordinary text ends so).
  EXPECT_EQ(RedactSecret("ends with sk-", kKey), "ends with sk-");
  // Whole occurrences as before.
  EXPECT_EQ(RedactSecret("key sk-abc and sk-abc", "sk-abc"), "key [redacted] and [redacted]");
}

constexpr const char* kNginx502 =
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n"
    "</body>\r\n</html>\r\n";

TEST(ErrorBodyTest, HtmlErrorPageBecomesOneLine) {
  EXPECT_EQ(DescribeHttpFailure(502, kNginx502), "502 502 Bad Gateway (HTML error page)");
  // No title: the first heading; entities decoded, markup and line breaks gone.
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<body>\n<h1>Service &amp; gateway\n  "
      "timed out</h1>\n<p>Ray ID: 8a1b</p>\n</body>\n</html>";
  EXPECT_EQ(DescribeHttpFailure(504, page), "504 Service & gateway timed out (HTML error page)");
  // Neither: the page's text, bounded.
  std::string bare = "<html><body><p>" + std::string(5000, 'z') + "</p></body></html>";
  std::string d = DescribeHttpFailure(503, bare);
  EXPECT_THAT(d, Not(HasSubstr("<")));
  EXPECT_LT(d.size(), 300u);
  // A key inside the page is gone too.
  std::string leaky =
      "<html><head><title>Denied for " + std::string(kKey) + "</title></head></html>";
  EXPECT_EQ(DescribeHttpFailure(403, leaky, kKey), "403 Denied for [redacted] (HTML error page)");
}

TEST(ErrorBodyTest, TextBodiesAreOneLineJsonAsSent) {
  EXPECT_EQ(DescribeHttpFailure(500, "upstream failed\r\nretry later\n"),
            "500 upstream failed retry later");
  EXPECT_EQ(DescribeHttpFailure(429, "{\"a\":1}\n"), "429 {\"a\":1}");
  EXPECT_EQ(DescribeHttpFailure(400, ""), "400 status code (no body)");
  std::string long_text(5000, 'q');
  EXPECT_EQ(DescribeHttpFailure(500, long_text), "500 " + std::string(4000, 'q') + "...");
  // A cut never splits a UTF-8 sequence.
  std::string wide = std::string(3999, 'a') + "\xC3\xA9" + "tail";
  EXPECT_EQ(DescribeHttpFailure(500, wide), "500 " + std::string(3999, 'a') + "...");
}

// --- end to end --------------------------------------------------------------

class ErrorCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start()) << "cannot bind 127.0.0.1";
    env_->SetEnvVar("ERROR_TEST_KEY", std::string(kKey));
    options_.transport = NewCurlTransport();
    options_.env = env_.get();
    options_.on_attempt = [this](const std::string&, int, const Status& s) {
      log_.push_back(s.ToString());
    };
  }
  ModelConfig Model(std::string kind, bool stream = false) {
    ModelConfig m;
    m.name = "m";
    m.api = kind;
    m.base_url = server_.base_url() + (kind == "anthropic" ? "" : "/v1");
    m.model_id = "model";
    m.api_key_env = "ERROR_TEST_KEY";
    m.timeout_ms = 5000;
    m.stream = stream;
    return m;
  }
  static FakeReply Sse(std::string body) {
    return FakeReply(200, std::move(body), "text/event-stream");
  }

  FakeLlmServer server_;
  std::unique_ptr<MemEnv> env_ = NewMemEnv();  // waits are recorded, not slept
  CallOptions options_;
  std::vector<std::string> log_;
};

TEST_F(ErrorCallTest, KeyEchoedAcrossTheCutNeverReachesTheMessageOrTheLog) {
  for (bool stream : {false, true}) {
    server_.Push(FakeReply(401, EchoAcross(4000)));
    CallOutcome out = CallModel(Model("openai-chat", stream), Req("s", "u", 10), options_);
    ASSERT_FALSE(out.result.ok());
    EXPECT_TRUE(out.failure.auth);
    EXPECT_FALSE(LeaksKey(out.result.status().message())) << stream;
    for (const std::string& line : log_) EXPECT_FALSE(LeaksKey(line)) << line.substr(3900);
  }
}

TEST_F(ErrorCallTest, HtmlPageFromAProxyIsOneLineAndRetried) {
  server_.Push(FakeReply(502, kNginx502, "text/html"));
  server_.Push(FakeReply(200, FakeLlmServer::ChatReply("fine")));
  CallOutcome out = CallModel(Model("openai-chat"), Req("s", "u", 10), options_);
  ASSERT_TRUE(out.result.ok()) << out.result.status().ToString();
  EXPECT_EQ(out.attempts, 2);
  ASSERT_EQ(log_.size(), 2u);
  EXPECT_THAT(log_[0], HasSubstr("502 502 Bad Gateway (HTML error page)"));
  EXPECT_EQ(log_[0].find('\n'), std::string::npos) << log_[0];
}

// The Responses API reports a failure mid-stream as its own event type.
constexpr const char* kResponsesServerError =
    "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}"
    "\n\nevent: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"The "
    "server had an error processing your request.\",\"param\":null,\"sequence_number\":2}\n\n";

TEST_F(ErrorCallTest, ResponsesInStreamServerErrorIsRetried) {
  server_.Push(Sse(kResponsesServerError));
  server_.Push(FakeReply(200, FakeLlmServer::ResponsesReply("after the retry")));
  CallOutcome out = CallModel(Model("openai-responses", true), Req("s", "u", 10), options_);
  ASSERT_TRUE(out.result.ok()) << out.result.status().ToString();
  EXPECT_EQ(out.result->text, "after the retry");
  EXPECT_EQ(out.attempts, 2);
  EXPECT_EQ(env_->Sleeps().size(), 1u);
  EXPECT_THAT(log_[0], HasSubstr("The server had an error processing your request."));
}

TEST_F(ErrorCallTest, ResponsesFailedResponseWithServerErrorIsRetried) {
  server_.Push(
      Sse("event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":"
          "\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"Something went wrong\"},"
          "\"output\":[]}}\n\n"));
  server_.Push(FakeReply(200, FakeLlmServer::ResponsesReply("ok")));
  CallOutcome out = CallModel(Model("openai-responses", true), Req("s", "u", 10), options_);
  ASSERT_TRUE(out.result.ok()) << out.result.status().ToString();
  EXPECT_EQ(out.attempts, 2);
}

TEST_F(ErrorCallTest, ResponsesInStreamErrorWithOtherCodeIsNotRetried) {
  server_.Push(
      Sse("event: error\ndata: {\"type\":\"error\",\"code\":\"invalid_prompt\","
          "\"message\":\"Invalid prompt.\",\"param\":null}\n\n"));
  CallOutcome out = CallModel(Model("openai-responses", true), Req("s", "u", 10), options_);
  ASSERT_FALSE(out.result.ok());
  EXPECT_EQ(out.attempts, 1);
  EXPECT_THAT(out.result.status().message(), HasSubstr("Invalid prompt."));
}

// Exact texts of Hugging Face text-generation-inference and vLLM.
constexpr const char* kTgi422 =
    "{\"error\":\"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
    "Given: 4000 `inputs` tokens and 500 `max_new_tokens`\",\"error_type\":\"validation\"}";
constexpr const char* kVllm400 =
    "{\"object\":\"error\",\"message\":\"The decoder prompt (length 5000) is longer than the "
    "maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number "
    "of text tokens.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}";

TEST_F(ErrorCallTest, TgiAndVllmOverflowOverHttp) {
  server_.Push(FakeReply(422, kTgi422));
  CallOutcome tgi = CallModel(Model("openai-chat"), Req("s", "u", 10), options_);
  ASSERT_FALSE(tgi.result.ok());
  EXPECT_TRUE(tgi.failure.overflow.overflow) << tgi.result.status().ToString();
  EXPECT_EQ(tgi.attempts, 1);
  EXPECT_EQ(tgi.failure.http_status, 422);

  server_.Push(FakeReply(400, kVllm400));
  CallOutcome vllm = CallModel(Model("openai-chat"), Req("s", "u", 10), options_);
  ASSERT_FALSE(vllm.result.ok());
  EXPECT_TRUE(vllm.failure.overflow.overflow) << vllm.result.status().ToString();
  EXPECT_EQ(vllm.attempts, 1);
}

TEST_F(ErrorCallTest, TgiAndVllmOverflowInAStream) {
  server_.Push(Sse(std::string("data: ") + kTgi422 + "\n\n"));
  CallOutcome tgi = CallModel(Model("openai-chat", true), Req("s", "u", 10), options_);
  ASSERT_FALSE(tgi.result.ok());
  EXPECT_TRUE(tgi.failure.overflow.overflow) << tgi.result.status().ToString();

  server_.Push(Sse(
      "data: {\"error\":{\"message\":\"The decoder prompt (length 5000) is longer than the maximum "
      "model length of 4096.\",\"type\":\"BadRequestError\",\"code\":400}}\n\n"));
  CallOutcome vllm = CallModel(Model("openai-chat", true), Req("s", "u", 10), options_);
  ASSERT_FALSE(vllm.result.ok());
  EXPECT_TRUE(vllm.failure.overflow.overflow) << vllm.result.status().ToString();
}

}  // namespace
}  // namespace compactor
