// JSON nested 100,000 levels deep at every place that reads JSON from outside
// a session file (issue 12, case 4 beyond session lines): settings files,
// model definitions, provider replies and error bodies, stream events, remote
// compactions, tool-call arguments a model sent, client requests, probe fact
// files, messages handed to the estimate. Each refuses the text (or keeps it
// as text) with the one wording of session lines, "JSON nested deeper than
// 1024 levels", instead of recursing once per level and overflowing the stack.
// The CLI's side (a deep settings file) runs the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "compactor/client_request.h"
#include "compactor/estimate.h"
#include "compactor/eval.h"
#include "compactor/message.h"
#include "compactor/model_input.h"
#include "compactor/provider_api.h"
#include "compactor/providers.h"
#include "compactor/settings.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using ::testing::HasSubstr;

constexpr size_t kDepth = 100000;
constexpr char kTooDeep[] = "JSON nested deeper than 1024 levels";

// `[[[...]]]` and `{"a":{"a":...}}`, `depth` levels each.
std::string DeepArrays(size_t depth = kDepth) {
  return std::string(depth, '[') + std::string(depth, ']');
}
std::string DeepObjects(size_t depth = kDepth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s += std::string(depth, '}');
  return s;
}

// Both shapes, as the value of `key` inside an object (as a reply would
// carry them) and bare.
std::vector<std::string> DeepTexts(const std::string& key) {
  std::vector<std::string> texts;
  for (const std::string& deep : {DeepArrays(), DeepObjects()}) {
    texts.push_back(deep);
    texts.push_back("{\"" + key + "\":" + deep + "}");
  }
  return texts;
}

TEST(DeepJson, SettingsFilesAreRefused) {
  for (const std::string& text : DeepTexts("compaction")) {
    auto r = ParseSettingsJson(text, "deep.json");
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), std::string("settings file deep.json: ") + kTooDeep);
  }
  for (const std::string& text : DeepTexts("models")) {
    auto r = ParseModelConfigs(text);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), std::string("settings: ") + kTooDeep);
  }
  // Just within the limit is read as usual.
  std::string ok = "{\"x\":" + DeepArrays(1000) + "}";
  EXPECT_TRUE(ParseSettingsJson(ok, "ok.json").ok());
}

TEST(DeepJson, TheCliRefusesADeepSettingsFile) {
  testing::TempDir d;
  const std::string session =
      d.Write("s.jsonl", testing::ReadFileOrDie(testing::FixturePath("pi/written.jsonl")));
  const std::string settings = d.Write("deep.json", "{\"compaction\":" + DeepObjects() + "}");
  testing::RunResult r = testing::RunCli({"compact", session, "--settings", settings, "--dry-run"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "compactor: settings file " + settings + ": " + kTooDeep + "\n");
}

ModelConfig ModelFor(const ProviderApi& api) {
  ModelConfig model;
  model.name = "m";
  model.api = std::string(api.name());
  model.model_id = "m";
  model.context_window = 1000;
  return model;
}

TEST(DeepJson, ProviderRepliesAndErrorBodiesAreRefused) {
  for (const ProviderApi* api : ProviderApis()) {
    const ModelConfig model = ModelFor(*api);
    for (const std::string& body : DeepTexts("choices")) {
      auto r = api->ParseResponse(model, body);
      ASSERT_FALSE(r.ok()) << api->name();
      EXPECT_EQ(r.status().message(),
                std::string(api->name()) + ": malformed response (" + kTooDeep + ")");
      // An error body: described as sent (cut), never walked.
      ProviderError e = api->ReadError(500, body);
      EXPECT_EQ(e.type, "") << api->name();
      EXPECT_EQ(e.detail, "") << api->name();
      EXPECT_TRUE(e.retryable) << api->name();
      // A client's request (compactor serve) with such a body.
      EXPECT_FALSE(api->ReadClientRequest(body).ok()) << api->name();
    }
  }
  for (const std::string& body : DeepTexts("output")) {
    auto r = ParseResponsesCompactResponse(body, "openai");
    EXPECT_EQ(r.status().message(),
              std::string("responses/compact: malformed response (") + kTooDeep + ")");
  }
}

TEST(DeepJson, AStreamEventEndsTheResponseWithAnError) {
  for (const ProviderApi* api : ProviderApis()) {
    ModelConfig model = ModelFor(*api);
    model.stream = true;
    for (const std::string& data : DeepTexts("error")) {
      auto parser = api->NewStreamParser(model);
      if (parser == nullptr) continue;
      StreamEventInfo info = parser->OnEvent("message", data);
      EXPECT_TRUE(info.error) << api->name();
      EXPECT_EQ(info.error_message,
                std::string(api->name()) + ": malformed response (an event's " + kTooDeep + ")");
      auto r = parser->Finish();
      ASSERT_TRUE(r.ok()) << api->name() << ": " << r.status().ToString();
      EXPECT_EQ(r->stop_reason, "error");
      // The same through the whole-body parser.
      auto whole = ParseProviderStream(model, "data: " + data + "\n\n");
      if (whole.ok()) {
        EXPECT_EQ(whole->stop_reason, "error") << api->name();
        EXPECT_THAT(whole->error_message, HasSubstr(kTooDeep)) << api->name();
      } else {
        EXPECT_THAT(whole.status().message(), HasSubstr(kTooDeep)) << api->name();
      }
    }
  }
}

TEST(DeepJson, DeepToolArgumentsAreKeptAsText) {
  ModelConfig model = ModelFor(*ProviderApis()[0]);
  LlmResponse response;
  LlmToolCall call;
  call.id = "t1";
  call.name = "bash";
  call.arguments_json = DeepObjects();
  response.tool_calls.push_back(call);
  const std::string json = AssistantMessageJson(model, "p", response, 1);
  // The arguments survive as a string ("_raw"): nothing the model said is lost.
  EXPECT_THAT(json, HasSubstr("\"_raw\":\"{\\\"a\\\":{\\\"a\\\":"));
  EXPECT_GT(EstimateMessageTokens(json), static_cast<int64_t>(kDepth));
}

TEST(DeepJson, MessagesFromOutsideAreNotWalked) {
  // A message nested past the limit (a library caller's): charged as its text.
  const std::string message =
      R"({"role":"assistant","content":[{"type":"toolCall","id":"t","name":"x","arguments":)" +
      DeepArrays() + "}]}";
  EXPECT_EQ(EstimateMessageTokens(message), static_cast<int64_t>((message.size() + 3) / 4));
  EXPECT_FALSE(ParseMessage(message).ok());
  // Requests compared by the proxy.
  EXPECT_FALSE(SameIgnoringCacheControl("{\"cache_control\":1,\"x\":" + DeepArrays() + "}",
                                        "{\"x\":" + DeepArrays() + "}"));
}

TEST(DeepJson, ProbeFactFilesAreRefused) {
  for (const std::string& text : DeepTexts("facts")) {
    auto r = ParseFactFile(text, "s.facts.json");
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), std::string("s.facts.json: ") + kTooDeep);
  }
}

}  // namespace
}  // namespace compactor
