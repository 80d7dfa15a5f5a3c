// Model configuration, request bodies (exact bytes) and response parsing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compactor/providers.h"

namespace compactor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ModelConfig Model(std::string kind, std::string base = "http://h/v1") {
  ModelConfig m;
  m.name = std::string("test-model");
  m.api = kind;
  m.base_url = std::move(base);
  m.model_id = "model-x";
  return m;
}

LlmRequest SummaryRequest(int64_t max_tokens = 13107) {
  LlmRequest r;
  r.system_prompt = "SYS";
  r.messages.push_back(LlmMessage::UserText("<conversation>\nhi\n</conversation>\n\nDo it."));
  r.max_tokens = max_tokens;
  return r;
}

std::string Header(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

// --- configuration ---------------------------------------------------------

TEST(ModelConfigTest, ParsesAllFieldsInFileOrder) {
  auto models = ParseModelConfigs(R"({
    "reserveTokens": 8192,
    "models": {
      "fast": {"provider": "anthropic", "model": "claude-haiku", "contextWindow": 200000,
               "maxOutputTokens": 8192, "apiKeyEnv": "ANTHROPIC_API_KEY", "reasoning": true,
               "reasoningEffort": "low", "headers": {"x-team": "a"}, "timeoutMs": 5000},
      "local": {"provider": "openai-chat", "baseUrl": "http://127.0.0.1:8080/v1/",
                "model": "qwen", "contextWindow": 32768},
      "gpt": {"provider": "openai-responses", "model": "gpt-5", "apiKeyEnv": "OPENAI_API_KEY"},
      "svc": {"provider": "remote", "baseUrl": "https://summ.example/summarize"}
    }})");
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  ASSERT_EQ(models->size(), 4u);
  const ModelConfig& fast = (*models)[0];
  EXPECT_EQ(fast.name, "fast");
  EXPECT_EQ(fast.api, "anthropic");
  EXPECT_EQ(fast.base_url, "https://api.anthropic.com");
  EXPECT_EQ(fast.model_id, "claude-haiku");
  EXPECT_EQ(fast.context_window, 200000);
  EXPECT_EQ(fast.max_output_tokens, 8192);
  EXPECT_EQ(fast.api_key_env, "ANTHROPIC_API_KEY");
  EXPECT_TRUE(fast.reasoning);
  EXPECT_EQ(fast.reasoning_effort, "low");
  EXPECT_EQ(fast.headers.at("x-team"), "a");
  EXPECT_EQ(fast.timeout_ms, 5000);
  EXPECT_EQ((*models)[1].name, "local");
  EXPECT_EQ((*models)[1].base_url, "http://127.0.0.1:8080/v1") << "trailing slash removed";
  EXPECT_EQ((*models)[2].base_url, "https://api.openai.com/v1");
  EXPECT_EQ((*models)[3].api, "remote");
  EXPECT_EQ(EndpointUrl((*models)[3]), "https://summ.example/summarize");

  auto found = FindModel(*models, "gpt");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->model_id, "gpt-5");
  auto missing = FindModel(*models, "nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("fast, local, gpt, svc"));
}

TEST(ModelConfigTest, ResolveCandidatesFollowsFallbacks) {
  auto models = ParseModelConfigs(R"({"models": {
    "a": {"provider": "anthropic", "model": "x", "fallbacks": ["b", "c", "a", "b"]},
    "b": {"provider": "openai-chat", "model": "y", "fallbacks": ["c"]},
    "c": {"provider": "remote", "baseUrl": "http://svc"},
    "d": {"provider": "remote", "baseUrl": "http://svc", "fallbacks": ["zzz"]}}})");
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  auto a = ResolveCandidates(*models, "a");
  ASSERT_TRUE(a.ok());
  std::vector<std::string> names;
  for (const ModelConfig& m : *a) names.push_back(m.name);
  EXPECT_THAT(names, ::testing::ElementsAre("a", "b", "c"));
  auto b = ResolveCandidates(*models, "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 2u);
  EXPECT_EQ(ResolveCandidates(*models, "nope").status().code(), StatusCode::kNotFound);
  auto d = ResolveCandidates(*models, "d");
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("models.d.fallbacks"));
  auto bad = ParseModelConfigs(
      R"({"models": {"a": {"provider": "anthropic", "model": "x", "fallbacks": "b"}}})");
  EXPECT_THAT(bad.status().message(), HasSubstr("models.a.fallbacks"));
}

TEST(ModelConfigTest, NoModelsIsEmpty) {
  auto models = ParseModelConfigs(R"({"reserveTokens": 1})");
  ASSERT_TRUE(models.ok());
  EXPECT_TRUE(models->empty());
}

TEST(ModelConfigTest, Errors) {
  struct Case {
    const char* json;
    const char* message;
  } cases[] = {
      {R"({"models": []})", "models: must be an object"},
      {R"({"models": {"a": {"provider": "gemini", "model": "x"}}})", "models.a.provider"},
      {R"({"models": {"a": {"model": "x"}}})", "models.a.provider: is required"},
      {R"({"models": {"a": {"provider": "anthropic"}}})", "models.a.model: is required"},
      {R"({"models": {"a": {"provider": "remote"}}})", "models.a.baseUrl"},
      {R"({"models": {"a": {"provider": "anthropic", "model": "x", "contextWindow": "big"}}})",
       "models.a.contextWindow: must be a number"},
      {R"({"models": {"a": {"provider": "anthropic", "model": "x", "contextWindow": -5}}})",
       "models.a.contextWindow"},
      {R"({"models": {"a": {"provider": "anthropic", "model": "x", "reasoning": "yes"}}})",
       "models.a.reasoning"},
      {R"({"models": {"a": {"provider": "anthropic", "model": "x", "reasoningEffort": "max"}}})",
       "models.a.reasoningEffort"},
      {R"({"models": {"a": {"provider": "openai-chat", "model": "x", "maxTokensField": "n"}}})",
       "models.a.maxTokensField"},
      {R"({"models": {"a": {"provider": "anthropic", "model": "x", "headers": {"h": 1}}}})",
       "models.a.headers.h"},
      {"{not json", "invalid JSON"},
  };
  for (const Case& c : cases) {
    auto r = ParseModelConfigs(c.json);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << c.json;
  }
}

TEST(ModelConfigTest, PastedKeyInApiKeyEnvIsRejectedWithoutEchoingIt) {
  auto r = ParseModelConfigs(
      R"({"models": {"a": {"provider": "openai-chat", "model": "x", "apiKeyEnv": "sk-proj-SECRET123"}}})");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("NAME of an environment variable"));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("SECRET123")));
}

// --- request bodies --------------------------------------------------------

TEST(RequestTest, OpenAiChatExactBody) {
  ModelConfig m = Model("openai-chat");
  auto http = BuildProviderRequest(m, SummaryRequest(), "sk-test");
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->url, "http://h/v1/chat/completions");
  EXPECT_EQ(http->body,
            R"({"model":"model-x","messages":[{"role":"system","content":"SYS"},)"
            R"({"role":"user","content":"<conversation>\nhi\n</conversation>\n\nDo it."}],)"
            R"("max_tokens":13107,"stream":false})");
  EXPECT_EQ(Header(*http, "authorization"), "Bearer sk-test");
  EXPECT_EQ(Header(*http, "content-type"), "application/json");
}

TEST(RequestTest, OpenAiChatUsesMaxCompletionTokensForOpenAi) {
  ModelConfig m = Model("openai-chat", "https://api.openai.com/v1");
  auto http = BuildProviderRequest(m, SummaryRequest(100), "");
  ASSERT_TRUE(http.ok());
  EXPECT_THAT(http->body, HasSubstr(R"("max_completion_tokens":100)"));
  EXPECT_EQ(Header(*http, "authorization"), "") << "no key, no header";
  m.max_tokens_field = "max_tokens";
  EXPECT_THAT(BuildProviderRequest(m, SummaryRequest(100), "")->body,
              HasSubstr(R"("max_tokens":100)"));
}

TEST(RequestTest, MaxTokensClampedToModelOutputCap) {
  ModelConfig m = Model("openai-chat");
  m.max_output_tokens = 4096;
  EXPECT_THAT(BuildProviderRequest(m, SummaryRequest(13107), "")->body,
              HasSubstr(R"("max_tokens":4096)"));
  LlmRequest unset = SummaryRequest(0);
  EXPECT_THAT(BuildProviderRequest(m, unset, "")->body, HasSubstr(R"("max_tokens":4096)"));
  m.max_output_tokens = 0;
  EXPECT_THAT(BuildProviderRequest(m, unset, "")->body, Not(HasSubstr("max_tokens")));
}

TEST(RequestTest, ReasoningOnlyWhenModelReasonsAndLevelSet) {
  ModelConfig m = Model("openai-chat");
  LlmRequest r = SummaryRequest();
  r.thinking_level = "medium";
  EXPECT_THAT(BuildProviderRequest(m, r, "")->body, Not(HasSubstr("reasoning")));
  m.reasoning = true;
  EXPECT_THAT(BuildProviderRequest(m, r, "")->body, HasSubstr(R"("reasoning_effort":"medium")"));
  r.thinking_level = "off";
  EXPECT_THAT(BuildProviderRequest(m, r, "")->body, Not(HasSubstr("reasoning")));
  r.thinking_level = "";
  EXPECT_THAT(BuildProviderRequest(m, r, "")->body, Not(HasSubstr("reasoning")));
  m.reasoning_effort = "low";  // a fixed level wins over the session's
  EXPECT_THAT(BuildProviderRequest(m, r, "")->body, HasSubstr(R"("reasoning_effort":"low")"));
  m.api = "openai-responses";
  EXPECT_THAT(BuildProviderRequest(m, r, "")->body, HasSubstr(R"("reasoning":{"effort":"low"})"));
}

TEST(RequestTest, OpenAiResponsesExactBody) {
  ModelConfig m = Model("openai-responses");
  auto http = BuildProviderRequest(m, SummaryRequest(), "sk-test");
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->url, "http://h/v1/responses");
  EXPECT_EQ(
      http->body,
      R"({"model":"model-x","instructions":"SYS","input":[{"type":"message","role":"user",)"
      R"("content":[{"type":"input_text","text":"<conversation>\nhi\n</conversation>\n\nDo it."}]}],)"
      R"("max_output_tokens":13107,"store":false,"stream":false})");
  EXPECT_EQ(Header(*http, "authorization"), "Bearer sk-test");
}

TEST(RequestTest, AnthropicExactBody) {
  ModelConfig m = Model("anthropic", "https://api.anthropic.com");
  auto http = BuildProviderRequest(m, SummaryRequest(), "sk-ant");
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->url, "https://api.anthropic.com/v1/messages");
  EXPECT_EQ(
      http->body,
      R"({"model":"model-x","max_tokens":13107,"system":"SYS","messages":[{"role":"user",)"
      R"("content":[{"type":"text","text":"<conversation>\nhi\n</conversation>\n\nDo it."}]}]})");
  EXPECT_EQ(Header(*http, "x-api-key"), "sk-ant");
  EXPECT_EQ(Header(*http, "anthropic-version"), "2023-06-01");
  EXPECT_EQ(Header(*http, "authorization"), "");
  ModelConfig v1 = Model("anthropic", "http://proxy/v1");
  EXPECT_EQ(EndpointUrl(v1), "http://proxy/v1/messages");
}

TEST(RequestTest, AnthropicMaxTokensRequired) {
  ModelConfig m = Model("anthropic");
  EXPECT_THAT(BuildProviderRequest(m, SummaryRequest(0), "")->body,
              HasSubstr(R"("max_tokens":4096)"));
}

TEST(RequestTest, AnthropicThinkingBudgetAddsToMaxTokens) {
  ModelConfig m = Model("anthropic");
  m.reasoning = true;
  LlmRequest r = SummaryRequest(13107);
  r.thinking_level = "medium";
  auto body = nlohmann::json::parse(BuildProviderRequest(m, r, "")->body);
  EXPECT_EQ(body["max_tokens"], 13107 + 8192);
  EXPECT_EQ(body["thinking"]["type"], "enabled");
  EXPECT_EQ(body["thinking"]["budget_tokens"], 8192);
  m.max_output_tokens = 16000;  // capped: the budget shrinks to leave room
  body = nlohmann::json::parse(BuildProviderRequest(m, r, "")->body);
  EXPECT_EQ(body["max_tokens"], 16000);
  EXPECT_EQ(body["thinking"]["budget_tokens"], 8192);
  r.thinking_level = "xhigh";  // a budget above the cap leaves 1024 tokens of answer
  body = nlohmann::json::parse(BuildProviderRequest(m, r, "")->body);
  EXPECT_EQ(body["max_tokens"], 16000);
  EXPECT_EQ(body["thinking"]["budget_tokens"], 16000 - 1024);
}

LlmMessage ToolResult(const std::string& id, const std::string& text) {
  LlmMessage m;
  m.role = LlmMessage::Role::kToolResult;
  m.tool_call_id = id;
  m.tool_name = "bash";
  LlmPart p;
  p.text = text;
  m.parts.push_back(p);
  return m;
}

TEST(RequestTest, AnthropicMergesConsecutiveUserMessagesByKindOnly) {
  ModelConfig m = Model("anthropic");
  LlmRequest r;
  r.max_tokens = 10;
  r.messages.push_back(LlmMessage::UserText("u1"));
  r.messages.push_back(LlmMessage::UserText("u2"));
  LlmMessage a;
  a.role = LlmMessage::Role::kAssistant;
  a.parts.push_back({LlmPart::Kind::kText, "a1", "", ""});
  a.tool_calls.push_back({"t1", "bash", R"({"cmd":"ls"})"});
  a.tool_calls.push_back({"t2", "bash", R"({"cmd":"pwd"})"});
  r.messages.push_back(a);
  r.messages.push_back(ToolResult("t1", "r1"));
  r.messages.push_back(ToolResult("t2", "r2"));
  r.messages.push_back(LlmMessage::UserText("u3"));
  r.messages.push_back(LlmMessage::UserText("u4"));
  auto body = nlohmann::ordered_json::parse(BuildProviderRequest(m, r, "")->body);
  EXPECT_EQ(
      body["messages"].dump(),
      R"([{"role":"user","content":[{"type":"text","text":"u1"},{"type":"text","text":"u2"}]},)"
      R"({"role":"assistant","content":[{"type":"text","text":"a1"},)"
      R"({"type":"tool_use","id":"t1","name":"bash","input":{"cmd":"ls"}},)"
      R"({"type":"tool_use","id":"t2","name":"bash","input":{"cmd":"pwd"}}]},)"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r1"}]},)"
      R"({"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"r2"}]}]},)"
      R"({"role":"user","content":[{"type":"text","text":"u3"},{"type":"text","text":"u4"}]}])");
}

TEST(RequestTest, AnthropicNeverMergesTextIntoToolResults) {
  ModelConfig m = Model("anthropic");
  LlmRequest r;
  r.max_tokens = 10;
  r.messages.push_back(LlmMessage::UserText("u1"));
  r.messages.push_back(ToolResult("t1", "r1"));
  r.messages.push_back(LlmMessage::UserText("u2"));
  auto body = nlohmann::json::parse(BuildProviderRequest(m, r, "")->body);
  ASSERT_EQ(body["messages"].size(), 3u);
  for (const auto& msg : body["messages"]) EXPECT_EQ(msg["role"], "user");
  EXPECT_EQ(body["messages"][1]["content"][0]["type"], "tool_result");
}

TEST(RequestTest, ImagesPerApiAndStripping) {
  LlmRequest r;
  r.max_tokens = 10;
  LlmMessage u = LlmMessage::UserText("look");
  u.parts.push_back({LlmPart::Kind::kImage, "", "image/png", "QUJD"});
  r.messages.push_back(u);
  ModelConfig chat = Model("openai-chat");
  EXPECT_THAT(
      BuildProviderRequest(chat, r, "")->body,
      HasSubstr(R"({"type":"image_url","image_url":{"url":"data:image/png;base64,QUJD"}})"));
  ModelConfig resp = Model("openai-responses");
  EXPECT_THAT(
      BuildProviderRequest(resp, r, "")->body,
      HasSubstr(
          R"({"type":"input_image","detail":"auto","image_url":"data:image/png;base64,QUJD"})"));
  ModelConfig ant = Model("anthropic");
  EXPECT_THAT(
      BuildProviderRequest(ant, r, "")->body,
      HasSubstr(
          R"({"type":"image","source":{"type":"base64","media_type":"image/png","data":"QUJD"}})"));
  EXPECT_EQ(StripImagesToMarkers(r), 1);
  EXPECT_EQ(StripImagesToMarkers(r), 0);
  EXPECT_THAT(BuildProviderRequest(ant, r, "")->body,
              HasSubstr(R"([{"type":"text","text":"look"},{"type":"text","text":"[image]"}])"));
}

TEST(RequestTest, OpenAiToolMessages) {
  LlmRequest r;
  LlmMessage a;
  a.role = LlmMessage::Role::kAssistant;
  a.tool_calls.push_back({"c1", "read", R"({"path":"a"})"});
  r.messages.push_back(a);
  r.messages.push_back(ToolResult("c1", "contents"));
  ModelConfig chat = Model("openai-chat");
  EXPECT_THAT(
      BuildProviderRequest(chat, r, "")->body,
      HasSubstr(R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",)"
                R"("function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]},)"
                R"({"role":"tool","tool_call_id":"c1","content":"contents"})"));
  ModelConfig resp = Model("openai-responses");
  EXPECT_THAT(
      BuildProviderRequest(resp, r, "")->body,
      HasSubstr(
          R"({"type":"function_call","call_id":"c1","name":"read","arguments":"{\"path\":\"a\"}"},)"
          R"({"type":"function_call_output","call_id":"c1","output":"contents"})"));
}

TEST(RequestTest, ToolDefinitionsPerApi) {
  LlmRequest r = SummaryRequest(100);
  r.tools.push_back(
      {"read", "Read a file", R"({"type":"object","properties":{"path":{"type":"string"}}})"});
  r.tools.push_back({"noop", "", "not json"});  // a broken schema becomes an empty object schema
  const std::string schema = R"({"type":"object","properties":{"path":{"type":"string"}}})";
  const std::string empty = R"({"type":"object","properties":{}})";
  EXPECT_THAT(BuildProviderRequest(Model("openai-chat"), r, "")->body,
              HasSubstr(R"("tools":[{"type":"function","function":{"name":"read","description":)"
                        R"("Read a file","parameters":)" +
                        schema +
                        R"(}},{"type":"function","function":{"name":"noop",)"
                        R"("description":"","parameters":)" +
                        empty + "}}]"));
  EXPECT_THAT(BuildProviderRequest(Model("openai-responses"), r, "")->body,
              HasSubstr(R"("tools":[{"type":"function","name":"read","description":"Read a file",)"
                        R"("parameters":)" +
                        schema + "}"));
  EXPECT_THAT(BuildProviderRequest(Model("anthropic"), r, "")->body,
              HasSubstr(R"("tools":[{"name":"read","description":"Read a file","input_schema":)" +
                        schema + "}"));
  // Summaries carry no tools field at all.
  EXPECT_THAT(BuildProviderRequest(Model("openai-chat"), SummaryRequest(), "")->body,
              Not(HasSubstr("\"tools\"")));
}

TEST(RequestTest, ResponsesHistoryPrecedesMessagesOnlyForResponses) {
  LlmRequest r = SummaryRequest(100);
  r.responses_history_json = R"([{"type":"compaction","encrypted_content":"E"}])";
  nlohmann::json body =
      nlohmann::json::parse(BuildProviderRequest(Model("openai-responses"), r, "")->body);
  ASSERT_EQ(body["input"].size(), 2u);
  EXPECT_EQ(body["input"][0]["type"], "compaction");
  EXPECT_EQ(body["input"][1]["role"], "user");
  EXPECT_THAT(BuildProviderRequest(Model("openai-chat"), r, "")->body,
              Not(HasSubstr("encrypted_content")));
  EXPECT_THAT(BuildProviderRequest(Model("anthropic"), r, "")->body,
              Not(HasSubstr("encrypted_content")));
}

TEST(ResponseTest, ToolCallsPerApi) {
  auto chat = ParseProviderResponse(
      Model("openai-chat"),
      R"({"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[)"
      R"({"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}},)"
      R"({"id":"c2","type":"function","function":{"name":"bash","arguments":{"command":"ls"}}}]},)"
      R"("finish_reason":"tool_calls"}]})");
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  EXPECT_EQ(chat->stop_reason, "toolUse");
  ASSERT_EQ(chat->tool_calls.size(), 2u);
  EXPECT_EQ(chat->tool_calls[0].id, "c1");
  EXPECT_EQ(chat->tool_calls[0].name, "read");
  EXPECT_EQ(chat->tool_calls[0].arguments_json, R"({"path":"a"})");
  EXPECT_EQ(chat->tool_calls[1].arguments_json, R"({"command":"ls"})");

  auto resp = ParseProviderResponse(
      Model("openai-responses"),
      R"({"status":"completed","output":[{"type":"reasoning","summary":[]},)"
      R"({"type":"function_call","id":"fc_1","call_id":"call_9","name":"write",)"
      R"("arguments":"{\"path\":\"b\",\"content\":\"x\"}"}]})");
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  EXPECT_EQ(resp->stop_reason, "toolUse");
  ASSERT_EQ(resp->tool_calls.size(), 1u);
  EXPECT_EQ(resp->tool_calls[0].id, "call_9");
  EXPECT_EQ(resp->tool_calls[0].name, "write");
  EXPECT_EQ(resp->tool_calls[0].arguments_json, R"({"path":"b","content":"x"})");

  auto anth = ParseProviderResponse(
      Model("anthropic"),
      R"({"content":[{"type":"text","text":"Let me look."},)"
      R"({"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"c"}}],)"
      R"("stop_reason":"tool_use"})");
  ASSERT_TRUE(anth.ok()) << anth.status().ToString();
  EXPECT_EQ(anth->text, "Let me look.");
  EXPECT_EQ(anth->stop_reason, "toolUse");
  ASSERT_EQ(anth->tool_calls.size(), 1u);
  EXPECT_EQ(anth->tool_calls[0].id, "toolu_1");
  EXPECT_EQ(anth->tool_calls[0].arguments_json, R"({"path":"c"})");
}

TEST(RequestTest, RemoteBody) {
  ModelConfig m = Model("remote", "http://svc/summarize");
  auto http = BuildProviderRequest(m, SummaryRequest(), "");
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->url, "http://svc/summarize");
  EXPECT_EQ(http->body,
            R"({"systemPrompt":"SYS","prompt":"<conversation>\nhi\n</conversation>\n\nDo it."})");
  EXPECT_EQ(Header(*http, "authorization"), "");
}

TEST(RequestTest, InvalidUtf8DoesNotThrow) {
  ModelConfig m = Model("anthropic");
  LlmRequest r = SummaryRequest();
  r.messages[0].parts[0].text = "bad \xff byte";
  auto http = BuildProviderRequest(m, r, "");
  ASSERT_TRUE(http.ok());
  EXPECT_THAT(http->body, HasSubstr("bad \xEF\xBF\xBD byte"));
}

// --- response parsing ------------------------------------------------------

TEST(ResponseTest, OpenAiChat) {
  ModelConfig m = Model("openai-chat");
  auto r = ParseProviderResponse(
      m,
      R"({"choices":[{"message":{"role":"assistant","content":"S"},"finish_reason":"stop"}],)"
      R"("usage":{"prompt_tokens":120,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":20}}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "S");
  EXPECT_EQ(r->stop_reason, "stop");
  EXPECT_EQ(r->usage.input, 100);
  EXPECT_EQ(r->usage.cache_read, 20);
  EXPECT_EQ(r->usage.output, 7);
  auto len = ParseProviderResponse(
      m, R"({"choices":[{"message":{"content":"S"},"finish_reason":"length"}]})");
  EXPECT_EQ(len->stop_reason, "length");
  auto glm = ParseProviderResponse(
      m,
      R"({"choices":[{"message":{"content":""},"finish_reason":"model_context_window_exceeded"}]})");
  EXPECT_EQ(glm->stop_reason, "error");
  EXPECT_EQ(glm->error_message, "Provider finish_reason: model_context_window_exceeded");
  auto err = ParseProviderResponse(m, R"({"error":{"message":"boom"}})");
  EXPECT_EQ(err->stop_reason, "error");
  EXPECT_EQ(err->error_message, "boom");
}

TEST(ResponseTest, OpenAiResponses) {
  ModelConfig m = Model("openai-responses");
  auto r = ParseProviderResponse(
      m,
      R"({"status":"completed","output":[{"type":"reasoning"},{"type":"message","role":"assistant",)"
      R"("content":[{"type":"output_text","text":"A"},{"type":"output_text","text":"B"}]}],)"
      R"("usage":{"input_tokens":50,"output_tokens":5,"input_tokens_details":{"cached_tokens":10}}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "A\nB");
  EXPECT_EQ(r->stop_reason, "stop");
  EXPECT_EQ(r->usage.input, 40);
  EXPECT_EQ(r->usage.cache_read, 10);
  auto inc = ParseProviderResponse(
      m,
      R"({"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]})");
  EXPECT_EQ(inc->stop_reason, "length");
}

TEST(ResponseTest, AnthropicDiscardsThinking) {
  ModelConfig m = Model("anthropic");
  auto r = ParseProviderResponse(
      m,
      R"({"type":"message","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"A"},)"
      R"({"type":"text","text":"B"}],"stop_reason":"max_tokens",)"
      R"("usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":5,"cache_creation_input_tokens":6}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "A\nB");
  EXPECT_EQ(r->stop_reason, "length");
  EXPECT_EQ(r->usage.input, 3);
  EXPECT_EQ(r->usage.cache_read, 5);
  EXPECT_EQ(r->usage.cache_write, 6);
}

// Found by the provider_response fuzzer: a 4e87 token count converted to
// int64_t was undefined behaviour (UBSan). Counts outside int64_t read as 0.
TEST(ResponseTest, CountsOutsideInt64AreIgnoredNotConverted) {
  ModelConfig m = Model("anthropic");
  auto r = ParseProviderResponse(
      m, R"({"type":"message","content":[{"type":"text","text":"A"}],"stop_reason":"end_turn",)"
         R"("usage":{"input_tokens":1e300,"output_tokens":18446744073709551615,)"
         R"("cache_read_input_tokens":-1e30,"cache_creation_input_tokens":7.9}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->usage.input, 0);
  EXPECT_EQ(r->usage.output, 0);
  EXPECT_EQ(r->usage.cache_read, 0);
  EXPECT_EQ(r->usage.cache_write, 7);
}

TEST(ResponseTest, RemoteAndMalformed) {
  ModelConfig m = Model("remote");
  auto r = ParseProviderResponse(m, R"({"summary":"S","shortSummary":"ignored"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "S");
  auto missing = ParseProviderResponse(m, R"({"text":"S"})");
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(missing.status().message(), HasSubstr("Remote compaction response missing summary"));
  for (std::string k : {"openai-chat", "openai-responses", "anthropic", "remote"}) {
    auto bad = ParseProviderResponse(Model(k), "{\"choices\": [");
    EXPECT_EQ(bad.status().code(), StatusCode::kUnavailable) << k;
    EXPECT_THAT(bad.status().message(), HasSubstr("malformed")) << k;
  }
}

TEST(ResponseTest, DescribeAndRedact) {
  EXPECT_EQ(DescribeHttpFailure(400, ""), "400 status code (no body)");
  EXPECT_EQ(DescribeHttpFailure(413, " \n"), "413 status code (no body)");
  EXPECT_EQ(DescribeHttpFailure(429, "{\"a\":1}\n"), "429 {\"a\":1}");
  EXPECT_EQ(RedactSecret("key sk-abc and sk-abc", "sk-abc"), "key [redacted] and [redacted]");
  EXPECT_EQ(RedactSecret("ab", "a"), "ab") << "too short to redact safely";
}

// --- /responses/compact ----------------------------------------------------

TEST(ResponsesCompactTest, Url) {
  EXPECT_EQ(ResponsesCompactUrl("https://api.openai.com/v1/"),
            "https://api.openai.com/v1/responses/compact");
  EXPECT_EQ(ResponsesCompactUrl("http://proxy"), "http://proxy/v1/responses/compact");
  EXPECT_EQ(ResponsesCompactUrl(""), "https://api.openai.com/v1/responses/compact");
}

TEST(ResponsesCompactTest, RequestShapeAndTrimming) {
  ModelConfig m = Model("openai-responses", "http://h/v1");
  nlohmann::ordered_json list = nlohmann::ordered_json::parse(
      R"([{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},)"
      R"({"type":"function_call","call_id":"c1","name":"read","arguments":"{}"},)"
      R"({"type":"message","role":"developer","content":[{"type":"input_text","text":"dev"}]},)"
      R"({"type":"function_call_output","call_id":"c1","output":""}])");
  list[3]["output"] = std::string(400, 'x');
  std::string items = list.dump();
  auto full = BuildResponsesCompactRequest(m, items, "INSTR", "sk-1");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->url, "http://h/v1/responses/compact");
  auto body = nlohmann::json::parse(full->body);
  EXPECT_EQ(body["model"], "model-x");
  EXPECT_EQ(body["instructions"], "INSTR");
  EXPECT_EQ(body["input"].size(), 4u);
  EXPECT_FALSE(body.contains("stream"));
  // A small window: the output goes with its call, then the developer
  // message; the user message stops the trimming.
  m.context_window = 30;
  auto trimmed = BuildResponsesCompactRequest(m, items, "INSTR", "");
  body = nlohmann::json::parse(trimmed->body);
  ASSERT_EQ(body["input"].size(), 1u);
  EXPECT_EQ(body["input"][0]["role"], "user");
  m.context_window = 100;  // only the output/call pair must go
  body = nlohmann::json::parse(BuildResponsesCompactRequest(m, items, "INSTR", "")->body);
  ASSERT_EQ(body["input"].size(), 2u);
  EXPECT_EQ(body["input"][1]["role"], "developer");
}

TEST(ResponsesCompactTest, ResponseFiltering) {
  std::string body = R"({"output":[
    {"type":"message","role":"developer","content":[{"type":"input_text","text":"d"}]},
    {"type":"message","role":"user","content":[{"type":"input_text","text":"keep me"}]},
    {"type":"message","role":"user","content":[{"type":"input_text","text":"<system-reminder>x"}]},
    {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]},
    {"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:x"}]},
    {"type":"reasoning","encrypted_content":"r"},
    {"type":"function_call","call_id":"c"},
    {"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]},
    {"type":"compaction","encrypted_content":"ENC1"},
    {"type":"compaction","encrypted_content":"ENC2"}]})";
  auto r = ParseResponsesCompactResponse(body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto history = nlohmann::json::parse(r->replacement_history_json);
  ASSERT_EQ(history.size(), 5u);
  EXPECT_EQ(history[0]["content"][0]["text"], "keep me");
  EXPECT_EQ(history[1]["content"][0]["type"], "input_image");
  EXPECT_EQ(history[2]["role"], "assistant");
  EXPECT_EQ(nlohmann::json::parse(r->compaction_item_json)["encrypted_content"], "ENC2");
  EXPECT_EQ(r->provider, "openai");

  auto none =
      ParseResponsesCompactResponse(R"({"output":[{"type":"message","role":"assistant"}]})");
  EXPECT_EQ(none.status().message(), "Remote compaction response missing compaction item");
  EXPECT_EQ(ParseResponsesCompactResponse("nope").status().code(), StatusCode::kUnavailable);
}

TEST(ResponsesCompactTest, ReplacementHistoryOnlyForSameProvider) {
  std::string stored =
      R"({"provider":"openai","replacementHistory":[{"type":"compaction","encrypted_content":"E"}],)"
      R"("compactionItem":{"type":"compaction","encrypted_content":"E"}})";
  auto same = ReplacementHistoryFor(stored, "openai");
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(*same, R"([{"type":"compaction","encrypted_content":"E"}])");
  EXPECT_FALSE(ReplacementHistoryFor(stored, "anthropic").has_value());
  EXPECT_FALSE(ReplacementHistoryFor("garbage", "openai").has_value());
}

}  // namespace
}  // namespace compactor
