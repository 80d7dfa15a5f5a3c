// End-to-end provider calls through libcurl against a fake LLM server on
// 127.0.0.1: exact request bodies and headers, the retry timeline (fake clock),
// fallback, overflow shrinking, timeouts, malformed and truncated replies,
// cancellation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "compactor/llm_summarizer.h"
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
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kKey = "sk-test-SECRET-0123456789";

// The waits a MemEnv was asked for (it records them instead of sleeping; its
// clock advances by them).
std::vector<milliseconds> SleepsOf(const MemEnv& env) {
  std::vector<milliseconds> out;
  for (int64_t ms : env.Sleeps()) out.emplace_back(ms);
  return out;
}

// Real time, with the environment variables of another Env.
class RealTimeEnv : public EnvWrapper {
 public:
  explicit RealTimeEnv(Env* vars) : EnvWrapper(Env::Default()), vars_(vars) {}
  std::optional<std::string> GetEnvVar(const std::string& name) override {
    return vars_->GetEnvVar(name);
  }

 private:
  Env* vars_;
};

class ProviderCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start()) << "cannot bind 127.0.0.1";
    env_->SetEnvVar("TEST_KEY", kKey);
    env_->SetEnvVar("OTHER_KEY", "sk-other-key-999");
    options_.transport = NewCurlTransport();
    options_.env = env_.get();  // starts at 2026-01-01T00:00:00Z
    options_.on_attempt = [this](const std::string&, int, const Status& s) {
      std::lock_guard<std::mutex> lock(log_mu_);
      attempt_log_.push_back(s.ToString());
    };
  }

  ModelConfig Model(std::string kind, const std::string& name = "primary") {
    ModelConfig m;
    m.name = name;
    m.api = kind;
    m.base_url = server_.base_url() + (kind == "anthropic" ? "" : "/v1");
    if (kind == "remote") m.base_url = server_.base_url() + "/summarize";
    m.model_id = "model-" + name;
    m.api_key_env = "TEST_KEY";
    m.timeout_ms = 5000;
    return m;
  }

  static SummaryRequestText Text(std::string conversation = "[User]: hello") {
    SummaryRequestText t;
    t.system_prompt = "You summarize.";
    t.user_prompt = "<conversation>\n" + conversation + "\n</conversation>\n\nSummarize it.";
    t.max_tokens = 13107;
    return t;
  }

  std::vector<std::string> AttemptLog() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return attempt_log_;
  }

  FakeLlmServer server_;
  std::unique_ptr<MemEnv> env_ = NewMemEnv();
  RealTimeEnv real_time_{env_.get()};
  CallOptions options_;
  std::mutex log_mu_;
  std::vector<std::string> attempt_log_;
};

// --- normal summaries, exact requests ---------------------------------------

TEST_F(ProviderCallTest, OpenAiChatSummary) {
  server_.Push({200, FakeLlmServer::ChatReply("## Goal\nShip it.")});
  ModelConfig m = Model("openai-chat");
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "## Goal\nShip it.");
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  EXPECT_EQ(reqs[0].headers["authorization"], std::string("Bearer ") + kKey);
  EXPECT_EQ(reqs[0].headers["content-type"], "application/json");
  EXPECT_EQ(
      reqs[0].body,
      R"({"model":"model-primary","messages":[{"role":"system","content":"You summarize."},)"
      R"({"role":"user","content":"<conversation>\n[User]: hello\n</conversation>\n\nSummarize it."}],)"
      R"("max_tokens":13107,"stream":false})");
}

TEST_F(ProviderCallTest, AnthropicSummary) {
  server_.Push({200, FakeLlmServer::AnthropicReply("S1")});
  ModelConfig m = Model("anthropic");
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "S1") << "thinking blocks are discarded";
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/messages");
  EXPECT_EQ(reqs[0].headers["x-api-key"], kKey);
  EXPECT_EQ(reqs[0].headers["anthropic-version"], "2023-06-01");
  EXPECT_EQ(reqs[0].headers.count("authorization"), 0u);
  EXPECT_EQ(reqs[0].body,
            R"({"model":"model-primary","max_tokens":13107,"system":"You summarize.",)"
            R"("messages":[{"role":"user","content":[{"type":"text","text":)"
            R"("<conversation>\n[User]: hello\n</conversation>\n\nSummarize it."}]}]})");
}

TEST_F(ProviderCallTest, OpenAiResponsesSummary) {
  server_.Push({200, FakeLlmServer::ResponsesReply("S2")});
  ModelConfig m = Model("openai-responses");
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "S2");
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/responses");
  auto body = nlohmann::json::parse(reqs[0].body);
  EXPECT_EQ(body["instructions"], "You summarize.");
  EXPECT_EQ(body["max_output_tokens"], 13107);
  EXPECT_EQ(body["store"], false);
}

TEST_F(ProviderCallTest, RemoteSummary) {
  server_.Push({200, FakeLlmServer::RemoteReply("S3")});
  ModelConfig m = Model("remote");
  m.api_key_env.clear();  // a remote summarizer may need no auth (oh-my-pi's remoteEndpoint)
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "S3");
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/summarize");
  EXPECT_EQ(reqs[0].headers.count("authorization"), 0u);
  EXPECT_EQ(
      reqs[0].body,
      R"({"systemPrompt":"You summarize.","prompt":"<conversation>\n[User]: hello\n</conversation>\n\nSummarize it."})");
}

TEST_F(ProviderCallTest, RemoteMissingSummaryFails) {
  server_.Push({200, R"({"shortSummary":"x"})"});
  ModelConfig m = Model("remote");
  options_.retry.max_retries = 0;
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("Remote compaction response missing summary"));
}

// --- keys ------------------------------------------------------------------

TEST_F(ProviderCallTest, MissingKeyVariableFallsBackWithoutRequest) {
  server_.Push({200, FakeLlmServer::ChatReply("from fallback")});
  ModelConfig a = Model("openai-chat", "a");
  a.api_key_env = "UNSET_KEY_VAR";
  ModelConfig b = Model("openai-chat", "b");
  std::vector<ModelConfig> models = {a, b};
  auto r = CompleteSummary(models, Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "from fallback");
  ASSERT_EQ(server_.request_count(), 1u);
  EXPECT_THAT(server_.requests()[0].body, HasSubstr("model-b"));
}

TEST_F(ProviderCallTest, KeyFromRealEnvironment) {
  ::setenv("COMPACTOR_PROVIDER_TEST_KEY", "sk-from-env-777", 1);
  server_.Push({200, FakeLlmServer::ChatReply("ok")});
  ModelConfig m = Model("openai-chat");
  m.api_key_env = "COMPACTOR_PROVIDER_TEST_KEY";
  options_.env = nullptr;  // Env::Default(): the process environment
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ::unsetenv("COMPACTOR_PROVIDER_TEST_KEY");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(server_.requests()[0].headers["authorization"], "Bearer sk-from-env-777");
}

TEST_F(ProviderCallTest, AuthFailureFallsBackAndKeyIsRedacted) {
  // Providers echo (parts of) bad keys; the error must not carry it.
  server_.Push({401, std::string(R"({"error":{"message":"Incorrect API key provided: )") + kKey +
                         R"(","code":"invalid_api_key"}})"});
  server_.Push({403, R"({"error":{"message":"forbidden"}})"});
  ModelConfig a = Model("openai-chat", "a");
  ModelConfig b = Model("anthropic", "b");
  std::vector<ModelConfig> models = {a, b};
  auto r = CompleteSummary(models, Text(), options_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(server_.request_count(), 2u) << "401 and 403 are not retried";
  EXPECT_TRUE(SleepsOf(*env_).empty());
  EXPECT_THAT(r.status().message(), HasSubstr("403"));
  for (const std::string& line : AttemptLog()) {
    EXPECT_THAT(line, Not(HasSubstr(kKey)));
    EXPECT_THAT(line, Not(HasSubstr("SECRET")));
  }
  ASSERT_GE(AttemptLog().size(), 1u);
  EXPECT_THAT(AttemptLog()[0], HasSubstr("Incorrect API key provided: [redacted]"));
  EXPECT_THAT(r.status().message(), Not(HasSubstr(kKey)));
}

// --- retries ---------------------------------------------------------------

TEST_F(ProviderCallTest, RetryTimelineExponentialBackoff) {
  server_.Push({500, R"({"error":{"message":"internal"}})"});
  server_.Push({502, "bad gateway"});
  server_.Push({503, ""});
  server_.Push({200, FakeLlmServer::ChatReply("finally")});
  ModelConfig m = Model("openai-chat");
  CallOutcome out = CallModel(m, Req("s", "u", 10), options_);
  ASSERT_TRUE(out.result.ok()) << out.result.status().ToString();
  EXPECT_EQ(out.result->text, "finally");
  EXPECT_EQ(out.attempts, 4);
  EXPECT_THAT(SleepsOf(*env_),
              ::testing::ElementsAre(milliseconds(2000), milliseconds(4000), milliseconds(8000)));
  EXPECT_EQ(server_.request_count(), 4u);
}

TEST_F(ProviderCallTest, RetriesExhaustedThenNextCandidate) {
  for (int i = 0; i < 4; ++i)
    server_.Push({529, R"({"type":"error","error":{"type":"overloaded_error"}})"});
  server_.Push({200, FakeLlmServer::ChatReply("second model")});
  ModelConfig a = Model("anthropic", "a");
  ModelConfig b = Model("openai-chat", "b");
  std::vector<ModelConfig> models = {a, b};
  auto r = CompleteSummary(models, Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "second model");
  EXPECT_EQ(server_.request_count(), 5u) << "1 + 3 retries on a, then b";
  EXPECT_EQ(SleepsOf(*env_).size(), 3u);
}

TEST_F(ProviderCallTest, RetryAfterSecondsHonoured) {
  server_.Push({429,
                R"({"error":{"message":"Rate limit reached"}})",
                "application/json",
                {{"Retry-After", "7"}}});
  server_.Push({200, FakeLlmServer::ChatReply("ok")});
  ModelConfig m = Model("openai-chat");
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(SleepsOf(*env_), ::testing::ElementsAre(milliseconds(7000)));
}

TEST_F(ProviderCallTest, RetryAfterHttpDateHonoured) {
  // The fake clock reads 2026-01-01T00:00:00Z.
  server_.Push({503, "", "text/plain", {{"Retry-After", "Thu, 01 Jan 2026 00:00:12 GMT"}}});
  server_.Push({200, FakeLlmServer::ChatReply("ok")});
  ModelConfig m = Model("openai-chat");
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(SleepsOf(*env_), ::testing::ElementsAre(milliseconds(12000)));
}

TEST_F(ProviderCallTest, LongRetryAfterMovesToNextCandidateWithoutWaiting) {
  server_.Push(
      {429, R"({"error":{"message":"Rate limit"}})", "application/json", {{"Retry-After", "45"}}});
  server_.Push({200, FakeLlmServer::AnthropicReply("from b")});
  ModelConfig a = Model("openai-chat", "a");
  ModelConfig b = Model("anthropic", "b");
  std::vector<ModelConfig> models = {a, b};
  auto r = CompleteSummary(models, Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "from b");
  EXPECT_TRUE(SleepsOf(*env_).empty());
  EXPECT_EQ(server_.request_count(), 2u);
}

TEST_F(ProviderCallTest, LongWaitOnLastCandidateFails) {
  server_.Push({429, "{}", "application/json", {{"retry-after", "31"}}});
  ModelConfig m = Model("openai-chat");
  CallOutcome out = CallModel(m, Req("", "u", 0), options_);
  ASSERT_FALSE(out.result.ok());
  EXPECT_TRUE(out.failure.wait_too_long);
  EXPECT_EQ(out.failure.http_status, 429);
  EXPECT_FALSE(out.failure.overflow.overflow) << "a 429 is never an overflow";
  EXPECT_THAT(out.result.status().message(), HasSubstr("exceeds the wait limit"));
}

TEST_F(ProviderCallTest, RealShortWaitWithRetryAfterMs) {
  options_.env = &real_time_;
  server_.Push({429, "{}", "application/json", {{"retry-after-ms", "150"}}});
  server_.Push({200, FakeLlmServer::ChatReply("ok")});
  ModelConfig m = Model("openai-chat");
  auto start = Clock::now();
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  auto elapsed = Clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_GE(reqs[1].at - reqs[0].at, milliseconds(150));
  EXPECT_LT(elapsed, milliseconds(3000));
}

TEST_F(ProviderCallTest, NonRetryableClientErrorIsNotRetried) {
  server_.Push({400, R"({"error":{"message":"Unknown parameter: foo"}})"});
  ModelConfig m = Model("openai-chat");
  CallOutcome out = CallModel(m, Req("", "u", 0), options_);
  ASSERT_FALSE(out.result.ok());
  EXPECT_EQ(out.attempts, 1);
  EXPECT_EQ(out.result.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(out.result.status().message(),
              HasSubstr("400 {\"error\":{\"message\":\"Unknown parameter"));
}

TEST_F(ProviderCallTest, MalformedJsonIsRetried) {
  server_.Push({200, "{\"choices\": [ {\"message\": "});
  server_.Push({200, "<html>gateway</html>", "text/html"});
  server_.Push({200, FakeLlmServer::ChatReply("ok")});
  ModelConfig m = Model("openai-chat");
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(server_.request_count(), 3u);
  auto log = AttemptLog();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_THAT(log[0], HasSubstr("malformed response"));
}

TEST_F(ProviderCallTest, TruncatedBodyIsRetried) {
  FakeReply cut{200, FakeLlmServer::AnthropicReply(std::string(2000, 'z'))};
  cut.truncate = true;
  server_.Push(cut);
  server_.Push({200, FakeLlmServer::AnthropicReply("whole")});
  ModelConfig m = Model("anthropic");
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "whole");
  auto log = AttemptLog();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_THAT(log[0], HasSubstr("unavailable: model primary (anthropic)"));
  EXPECT_THAT(log[0], HasSubstr("bytes remaining to read"));
}

TEST_F(ProviderCallTest, RequestTimeoutIsRetryable) {
  server_.Push({200, FakeLlmServer::ChatReply("slow"), "application/json", {}, milliseconds(3000)});
  server_.Push({200, FakeLlmServer::ChatReply("fast")});
  ModelConfig m = Model("openai-chat");
  m.timeout_ms = 200;
  auto start = Clock::now();
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "fast");
  EXPECT_LT(Clock::now() - start, milliseconds(2500));
  auto log = AttemptLog();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_THAT(log[0], HasSubstr("timed out"));
}

TEST_F(ProviderCallTest, ConnectionRefusedIsUnavailable) {
  ModelConfig m = Model("openai-chat");
  m.base_url = "http://user:hunter2@127.0.0.1:1/v1";  // nothing listens on port 1
  options_.retry.max_retries = 1;
  CallOutcome out = CallModel(m, Req("", "u", 0), options_);
  ASSERT_FALSE(out.result.ok());
  EXPECT_EQ(out.result.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(out.attempts, 2);
  EXPECT_TRUE(out.failure.retryable);
  EXPECT_THAT(out.result.status().message(), HasSubstr("request to http://127.0.0.1:1 failed"));
  EXPECT_THAT(out.result.status().message(), Not(HasSubstr("hunter2")));
}

// --- unusable summaries ----------------------------------------------------

TEST_F(ProviderCallTest, EmptyOrTruncatedSummaryIsAFailure) {
  server_.Push({200, FakeLlmServer::ChatReply("  \n")});
  server_.Push({200, FakeLlmServer::AnthropicReply("half a summ", "max_tokens")});
  ModelConfig a = Model("openai-chat", "a");
  ModelConfig b = Model("anthropic", "b");
  std::vector<ModelConfig> models = {a, b};
  auto r = CompleteSummary(models, Text(), options_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("cut off by the output token limit"));
  EXPECT_EQ(server_.request_count(), 2u);
}

// --- overflow --------------------------------------------------------------

struct OverflowReplyCase {
  std::string kind;
  int status;
  const char* body;
};

class OverflowReplyTest : public ProviderCallTest,
                          public ::testing::WithParamInterface<OverflowReplyCase> {};

TEST_P(OverflowReplyTest, DetectedAndNotRetried) {
  const OverflowReplyCase& c = GetParam();
  server_.Push({c.status, c.body});
  ModelConfig m = Model(c.kind);
  CallOutcome out = CallModel(m, Req("s", "u", 10), options_);
  ASSERT_FALSE(out.result.ok());
  EXPECT_TRUE(out.failure.overflow.overflow) << c.body;
  EXPECT_EQ(out.attempts, 1);
  EXPECT_TRUE(SleepsOf(*env_).empty());
}

const OverflowReplyCase kOverflowReplies[] = {
    {"anthropic", 400,
     R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}})"},
    {"openai-chat", 400,
     R"({"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}})"},
    {"openai-responses", 400,
     R"({"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","code":"context_length_exceeded"}})"},
    {"openai-chat", 400,
     R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}})"},
    {"openai-chat", 500,
     R"({"error":{"message":"prompt too long; exceeded max context length by 1234 tokens"}})"},
    {"openai-chat", 400,
     R"({"error":"Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 8192 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input. The number of tokens to keep from the initial prompt is greater than the context length."})"},
    {"openai-chat", 400,
     R"({"object":"error","message":"Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 maximum context length","type":"invalid_request_error"})"},
    {"openai-chat", 400, ""},  // Cerebras / Mistral: 400 (no body)
    {"openai-chat", 413, ""},
    {"openai-chat", 400,
     R"({"error":{"message":"This endpoint's maximum context length is 131072 tokens. However, you requested about 200000 tokens","code":400}})"},
    {"openai-chat", 400,
     R"({"error":{"message":"prompt token count of 140000 exceeds the limit of 128000","code":"model_max_prompt_tokens_exceeded"}})"},
    {"remote", 400, R"({"error":"context_length_exceeded"})"},
};

INSTANTIATE_TEST_SUITE_P(RealErrorBodies, OverflowReplyTest, ::testing::ValuesIn(kOverflowReplies));

TEST_F(ProviderCallTest, RateLimitWordingIsNotOverflow) {
  server_.Push({400, R"({"error":{"message":"Rate limit exceeded: too many tokens per minute"}})"});
  ModelConfig m = Model("openai-chat");
  CallOutcome out = CallModel(m, Req("", "u", 0), options_);
  EXPECT_FALSE(out.failure.overflow.overflow);
}

TEST_F(ProviderCallTest, FinishReasonOverflowIn200) {
  server_.Push({200, FakeLlmServer::ChatReply("", "model_context_window_exceeded")});
  ModelConfig m = Model("openai-chat");
  CallOutcome out = CallModel(m, Req("", "u", 0), options_);
  ASSERT_FALSE(out.result.ok());
  EXPECT_TRUE(out.failure.overflow.overflow);
}

TEST_F(ProviderCallTest, UsageOverWindowIn200IsOverflow) {
  server_.Push({200, FakeLlmServer::ChatReply("truncated input summary", "stop", 9000, 10)});
  ModelConfig m = Model("openai-chat");
  m.context_window = 8192;
  CallOutcome out = CallModel(m, Req("", "u", 0), options_);
  ASSERT_FALSE(out.result.ok());
  EXPECT_EQ(out.failure.overflow.reason, OverflowReason::kUsageOverWindow);
  EXPECT_THAT(out.result.status().message(), HasSubstr("exceeds the context window of 8192"));
}

std::string Conversation(int parts) {
  std::string s;
  for (int i = 0; i < parts; ++i) {
    if (i > 0) s += "\n\n";
    s += "[User]: message number " + std::to_string(i) + " " + std::string(80, 'a' + i % 26);
  }
  return s;
}

TEST_F(ProviderCallTest, SummarizerOverflowShrinksTo70And50Percent) {
  const char* kOverflow =
      R"({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 9000 tokens > 8000 maximum"}})";
  server_.Push({400, kOverflow});
  server_.Push({400, kOverflow});
  server_.Push({200, FakeLlmServer::AnthropicReply("fits now")});
  ModelConfig m = Model("anthropic");
  options_.windows = std::make_shared<WindowMemory>();
  SummaryRequestText text = Text(Conversation(100));
  auto r = CompleteSummary(std::span(&m, 1), text, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "fits now");
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 3u);
  auto prompt = [](const std::string& body) {
    return nlohmann::json::parse(body)["messages"][0]["content"][0]["text"].get<std::string>();
  };
  double full = static_cast<double>(prompt(reqs[0].body).size());
  EXPECT_EQ(prompt(reqs[0].body), text.user_prompt);
  double r1 = prompt(reqs[1].body).size() / full;
  double r2 = prompt(reqs[2].body).size() / full;
  EXPECT_NEAR(r1, 0.7, 0.05);
  EXPECT_NEAR(r2, 0.5, 0.05);
  // The newest part of the conversation and the instructions survive.
  EXPECT_THAT(prompt(reqs[2].body), HasSubstr("message number 99"));
  EXPECT_THAT(prompt(reqs[2].body), HasSubstr("earlier conversation omitted"));
  EXPECT_THAT(prompt(reqs[2].body), ::testing::EndsWith("</conversation>\n\nSummarize it."));
  EXPECT_THAT(prompt(reqs[2].body), Not(HasSubstr("message number 0 ")));
  // Learned window: 0.85 x the estimate of the last failing request, only lowered.
  auto learned = options_.windows->Get("primary");
  ASSERT_TRUE(learned.has_value());
  LlmRequest second;
  second.system_prompt = text.system_prompt;
  second.messages.push_back(LlmMessage::UserText(prompt(reqs[1].body)));
  EXPECT_EQ(*learned, LearnedWindowFromOverflow(EstimateRequestTokens(second)));
}

TEST_F(ProviderCallTest, AtMostThreeShrinksThenNextCandidate) {
  for (int i = 0; i < 4; ++i)
    server_.Push(
        {400,
         R"({"error":{"message":"context length exceeded","code":"context_length_exceeded"}})"});
  server_.Push({200, FakeLlmServer::ChatReply("big model")});
  ModelConfig small = Model("openai-chat", "small");
  ModelConfig big = Model("openai-chat", "big");
  std::vector<ModelConfig> models = {small, big};
  SummaryRequestText text = Text(Conversation(100));
  auto r = CompleteSummary(models, text, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 5u) << "1 + 3 shrinks on small, then big";
  auto prompt_size = [](const std::string& body) {
    return nlohmann::json::parse(body)["messages"][1]["content"].get<std::string>().size();
  };
  double full = static_cast<double>(prompt_size(reqs[0].body));
  EXPECT_NEAR(prompt_size(reqs[3].body) / full, 0.35, 0.05);
  EXPECT_EQ(prompt_size(reqs[4].body), prompt_size(reqs[0].body)) << "the next model starts whole";
  EXPECT_THAT(reqs[4].body, HasSubstr("model-big"));
}

TEST_F(ProviderCallTest, LearnedWindowShrinksTheNextCallUpFront) {
  auto windows = std::make_shared<WindowMemory>();
  options_.windows = windows;
  SummaryRequestText text = Text(Conversation(100));
  LlmRequest whole;
  whole.system_prompt = text.system_prompt;
  whole.messages.push_back(LlmMessage::UserText(text.user_prompt));
  int64_t tokens = EstimateRequestTokens(whole);
  windows->RecordOverflow("primary", tokens);  // learned: 0.85 x tokens
  server_.Push({200, FakeLlmServer::ChatReply("ok")});
  ModelConfig m = Model("openai-chat");
  auto r = CompleteSummary(std::span(&m, 1), text, options_);
  ASSERT_TRUE(r.ok());
  auto body = nlohmann::json::parse(server_.requests()[0].body);
  LlmRequest sent;
  sent.system_prompt = text.system_prompt;
  sent.messages.push_back(LlmMessage::UserText(body["messages"][1]["content"].get<std::string>()));
  EXPECT_LE(EstimateRequestTokens(sent), LearnedWindowFromOverflow(tokens));
  EXPECT_GT(EstimateRequestTokens(sent), LearnedWindowFromOverflow(tokens) * 9 / 10);
}

TEST_F(ProviderCallTest, PayloadRejectionStripsImages) {
  server_.Push(
      {413,
       R"({"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}})"});
  server_.Push({200, FakeLlmServer::AnthropicReply("no pixels")});
  ModelConfig m = Model("anthropic");
  LlmRequest req;
  req.system_prompt = "s";
  req.max_tokens = 100;
  LlmMessage u = LlmMessage::UserText("see this");
  u.parts.push_back({LlmPart::Kind::kImage, "", "image/png", std::string(5000, 'Q')});
  req.messages.push_back(u);
  RequestShrinker keep_text = [&req](double) -> Result<LlmRequest> { return req; };
  auto r = CompleteWithRecovery(std::span(&m, 1), req, options_, keep_text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_THAT(reqs[0].body, HasSubstr(std::string(5000, 'Q')));
  EXPECT_THAT(reqs[1].body, Not(HasSubstr("QQQQ")));
  EXPECT_THAT(reqs[1].body, HasSubstr(R"({"type":"text","text":"[image]"})"));
  EXPECT_FALSE(options_.windows) << "no window memory configured";
}

// --- cancellation ----------------------------------------------------------

TEST_F(ProviderCallTest, CancellationDuringRequestIsPrompt) {
  server_.Push({200, FakeLlmServer::ChatReply("late"), "application/json", {}, milliseconds(5000)});
  std::atomic<bool> cancel{false};
  options_.cancel_flag = &cancel;
  ModelConfig m = Model("openai-chat");
  Clock::time_point cancelled_at;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(150));
    cancelled_at = Clock::now();
    cancel.store(true);
  });
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  auto returned_at = Clock::now();
  canceller.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_LT(returned_at - cancelled_at, milliseconds(200));
}

TEST_F(ProviderCallTest, CancellationDuringBackoffIsPrompt) {
  options_.env = &real_time_;
  server_.Push({503, "", "text/plain", {{"Retry-After", "20"}}});
  std::atomic<bool> cancel{false};
  options_.is_cancelled = [&cancel] { return cancel.load(); };
  ModelConfig m = Model("openai-chat");
  Clock::time_point cancelled_at;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(300));
    cancelled_at = Clock::now();
    cancel.store(true);
  });
  auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
  auto returned_at = Clock::now();
  canceller.join();
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_LT(returned_at - cancelled_at, milliseconds(200));
  EXPECT_EQ(server_.request_count(), 1u);
}

// --- LlmSummarizer ---------------------------------------------------------

std::vector<Message> TwoMessages() {
  std::vector<Message> msgs;
  msgs.push_back(
      *ParseMessage(R"({"role":"user","content":"Please fix the bug in a.cc","timestamp":1})"));
  msgs.push_back(*ParseMessage(
      R"({"role":"assistant","content":[{"type":"text","text":"Fixed it."}],"stopReason":"stop","timestamp":2})"));
  return msgs;
}

TEST_F(ProviderCallTest, LlmSummarizerSendsPromptWithReferenceMaxTokens) {
  server_.Push({200, FakeLlmServer::AnthropicReply("## Goal\nFix a.cc")});
  server_.Push({200, FakeLlmServer::AnthropicReply("prefix summary")});
  LlmSummarizerOptions opts;
  opts.candidates = {Model("anthropic")};
  opts.call = options_;
  auto summarizer = NewLlmSummarizer(opts);
  EXPECT_EQ(summarizer->name(), "anthropic");
  std::vector<Message> msgs = TwoMessages();
  SummaryRequest req;
  req.messages = msgs;
  auto r = summarizer->Summarize(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "## Goal\nFix a.cc");
  req.kind = SummaryKind::kTurnPrefix;
  ASSERT_TRUE(summarizer->Summarize(req).ok());

  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  auto body = nlohmann::json::parse(reqs[0].body);
  EXPECT_EQ(body["max_tokens"], 13107) << "floor(0.8 x 16384)";
  EXPECT_EQ(body["system"], std::string(SummarizationSystemPrompt()));
  SummaryRequest history;
  history.messages = msgs;
  auto prompt = BuildSummaryPrompt(history);
  ASSERT_TRUE(prompt.ok());
  EXPECT_EQ(body["messages"][0]["content"][0]["text"], prompt->user_text);
  EXPECT_THAT(prompt->user_text, HasSubstr("[User]: Please fix the bug in a.cc"));
  EXPECT_EQ(nlohmann::json::parse(reqs[1].body)["max_tokens"], 8192) << "floor(0.5 x 16384)";
}

TEST_F(ProviderCallTest, LlmSummarizerClampsToModelOutputCapAndRefusesEmptyInput) {
  server_.Push({200, FakeLlmServer::ChatReply("S")});
  LlmSummarizerOptions opts;
  ModelConfig m = Model("openai-chat");
  m.max_output_tokens = 4000;
  opts.candidates = {m};
  opts.call = options_;
  auto summarizer = NewLlmSummarizer(opts);
  std::vector<Message> msgs = TwoMessages();
  SummaryRequest req;
  req.messages = msgs;
  ASSERT_TRUE(summarizer->Summarize(req).ok());
  EXPECT_EQ(nlohmann::json::parse(server_.requests()[0].body)["max_tokens"], 4000);
  SummaryRequest empty;
  EXPECT_EQ(summarizer->Summarize(empty).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(server_.request_count(), 1u);
}

TEST_F(ProviderCallTest, LlmSummarizerShrinksByDroppingOldestMessages) {
  const char* kOverflow =
      R"({"error":{"message":"Your input exceeds the context window of this model."}})";
  server_.Push({400, kOverflow});
  server_.Push({200, FakeLlmServer::ResponsesReply("ok")});
  std::vector<Message> msgs;
  for (int i = 0; i < 40; ++i) {
    msgs.push_back(*ParseMessage(R"({"role":"user","content":"request )" + std::to_string(i) + " " +
                                 std::string(200, 'x') + R"(","timestamp":1})"));
  }
  LlmSummarizerOptions opts;
  opts.candidates = {Model("openai-responses")};
  opts.call = options_;
  auto summarizer = NewLlmSummarizer(opts);
  SummaryRequest req;
  req.messages = msgs;
  ASSERT_TRUE(summarizer->Summarize(req).ok());
  auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  auto text = [](const std::string& body) {
    return nlohmann::json::parse(body)["input"][0]["content"][0]["text"].get<std::string>();
  };
  EXPECT_THAT(text(reqs[0].body), HasSubstr("request 0 "));
  EXPECT_THAT(text(reqs[1].body), Not(HasSubstr("request 0 ")));
  EXPECT_THAT(text(reqs[1].body), HasSubstr("request 39 "));
  EXPECT_THAT(text(reqs[1].body), HasSubstr("earlier messages omitted"));
  EXPECT_LE(text(reqs[1].body).size(), text(reqs[0].body).size() * 72 / 100);
}

// Four at once: cpp-httplib's listen backlog is 5, so more would measure the
// kernel's SYN retry, not us.
TEST_F(ProviderCallTest, ConcurrentCallsShareTransportSafely) {
  for (int i = 0; i < 4; ++i) {
    server_.Push({200, FakeLlmServer::ChatReply("same"), "application/json", {}, milliseconds(50)});
  }
  ModelConfig m = Model("openai-chat");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      auto r = CompleteSummary(std::span(&m, 1), Text(), options_);
      if (r.ok() && *r == "same") ok.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

// The transport seam: the whole call policy runs in memory.
class ScriptedTransport : public HttpTransport {
 public:
  Result<HttpResponse> Send(const HttpRequest& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    sent.push_back(request);
    if (replies.empty()) return Status::Unavailable("no scripted reply");
    auto r = replies.front();
    replies.erase(replies.begin());
    return r;
  }
  std::mutex mu_;
  std::vector<Result<HttpResponse>> replies;
  std::vector<HttpRequest> sent;
};

TEST(InMemoryTransportTest, RetryThenSuccessWithoutNetwork) {
  auto transport = std::make_shared<ScriptedTransport>();
  transport->replies.push_back(Status::Unavailable("connection reset"));
  HttpResponse busy;
  busy.status = 503;
  busy.headers["retry-after"] = "3";
  transport->replies.push_back(busy);
  HttpResponse ok;
  ok.status = 200;
  ok.body = R"({"summary":"in memory"})";
  transport->replies.push_back(ok);
  auto env = NewMemEnv();
  env->SetEnvVar("ANY", "k-123456");
  CallOptions options;
  options.transport = transport;
  options.env = env.get();
  ModelConfig m;
  m.name = std::string("svc");
  m.api = "remote";
  m.base_url = "memory://summarize";
  m.api_key_env = "ANY";
  SummaryRequestText text{"sys", "prompt", 0, ""};
  auto r = CompleteSummary(std::span(&m, 1), text, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "in memory");
  ASSERT_EQ(transport->sent.size(), 3u);
  EXPECT_EQ(transport->sent[0].url, "memory://summarize");
  EXPECT_EQ(transport->sent[0].body, R"({"systemPrompt":"sys","prompt":"prompt"})");
  bool has_auth = false;
  for (const auto& [k, v] : transport->sent[0].headers) {
    if (k == "authorization") has_auth = v == "Bearer k-123456";
  }
  EXPECT_TRUE(has_auth);
  EXPECT_THAT(SleepsOf(*env), ::testing::ElementsAre(milliseconds(2000), milliseconds(3000)));
}

TEST(InMemoryTransportTest, KeyReadAtRequestTime) {
  auto transport = std::make_shared<ScriptedTransport>();
  HttpResponse ok;
  ok.status = 200;
  ok.body = R"({"summary":"s"})";
  transport->replies = {ok, ok};
  auto env = NewMemEnv();
  env->SetEnvVar("ROTATING", "first-key-1");
  CallOptions options;
  options.transport = transport;
  options.env = env.get();
  ModelConfig m;
  m.name = std::string("svc");
  m.api = "remote";
  m.base_url = "memory://x";
  m.api_key_env = "ROTATING";
  SummaryRequestText text{"sys", "prompt", 0, ""};
  ASSERT_TRUE(CompleteSummary(std::span(&m, 1), text, options).ok());
  env->SetEnvVar("ROTATING", "second-key-2");
  ASSERT_TRUE(CompleteSummary(std::span(&m, 1), text, options).ok());
  ASSERT_EQ(transport->sent.size(), 2u);
  EXPECT_EQ(transport->sent[0].headers.back().second, "Bearer first-key-1");
  EXPECT_EQ(transport->sent[1].headers.back().second, "Bearer second-key-2");
}

}  // namespace
}  // namespace compactor
