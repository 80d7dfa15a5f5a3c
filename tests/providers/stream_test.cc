// Streamed (SSE) responses: decoding at arbitrary chunk boundaries, truncated
// streams, error events, and end-to-end through libcurl and the fake server.
#include "providers/stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "compactor/mem_env.h"
#include "compactor/providers.h"
#include "support/fake_llm_server.h"

namespace compactor {
namespace {

using testing::FakeLlmServer;
using testing::FakeReply;
using ::testing::HasSubstr;
using testing::Req;

ModelConfig Model(std::string kind) {
  ModelConfig m;
  m.name = std::string("streamer");
  m.api = kind;
  m.model_id = "model-s";
  m.stream = true;
  return m;
}

const char* kChatStream =
    "data: "
    "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}"
    "\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"Hello \"},\"finish_reason\":null}]}\n\n"
    ": keep-alive\n\n"
    "data: {\"choices\":[{\"delta\":{\"content\":\"w\xC3\xB6rld\"},\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2}}\n\n"
    "data: [DONE]\n\n";

const char* kAnthropicStream =
    "event: message_start\r\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":50,"
    "\"output_tokens\":1,\"cache_read_input_tokens\":7}}}\r\n\r\n"
    "event: content_block_start\r\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\","
    "\"thinking\":\"\"}}\r\n\r\n"
    "event: content_block_delta\r\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\","
    "\"thinking\":\"hmm\"}}\r\n\r\n"
    "event: content_block_start\r\n"
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\","
    "\"text\":\"\"}}\r\n\r\n"
    "event: content_block_delta\r\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"Sum\"}}\r\n\r\n"
    "event: ping\r\ndata: {\"type\":\"ping\"}\r\n\r\n"
    "event: content_block_delta\r\n"
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"mary\"}}\r\n\r\n"
    "event: message_delta\r\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{"
    "\"output_tokens\":12}}\r\n\r\n"
    "event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n";

std::string ResponsesStream() {
  std::string completed = FakeLlmServer::ResponsesReply("Full text", 30, 4);
  return "event: response.created\ndata: {\"type\":\"response.created\"}\n\n"
         "event: response.output_text.delta\n"
         "data: {\"type\":\"response.output_text.delta\",\"delta\":\"Full \"}\n\n"
         "event: response.output_text.delta\n"
         "data: {\"type\":\"response.output_text.delta\",\"delta\":\"text\"}\n\n"
         "event: response.completed\n"
         "data: {\"type\":\"response.completed\",\"response\":" +
         completed + "}\n\n";
}

// Feeds `body` in pieces of `step` bytes.
Result<LlmResponse> Decode(const ModelConfig& m, const std::string& body, size_t step) {
  providers::StreamDecoder d(m);
  for (size_t i = 0; i < body.size(); i += step) d.Feed(std::string_view(body).substr(i, step));
  return d.Finish();
}

TEST(StreamDecodeTest, ChatAtEveryChunkSize) {
  ModelConfig m = Model("openai-chat");
  for (size_t step : {1, 2, 7, 64, 100000}) {
    auto r = Decode(m, kChatStream, step);
    ASSERT_TRUE(r.ok()) << step << r.status().ToString();
    EXPECT_EQ(r->text, "Hello w\xC3\xB6rld") << step;
    EXPECT_EQ(r->stop_reason, "stop");
    EXPECT_EQ(r->usage.input, 10);
    EXPECT_EQ(r->usage.output, 2);
  }
}

// Fields of an unexpected type, from a broken or hostile upstream, read as
// absent: never an exception out of a parser (the fuzzer's find: a
// message_start whose "message" was 0 ended the process).
TEST(StreamDecodeTest, FieldsOfTheWrongTypeReadAsAbsent) {
  const std::string anthropic =
      "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":0}\r\n\r\n"
      "event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":7}\r\n\r\n"
      "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":[1]}\r\n\r\n"
      "event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":\"x\"}\r\n\r\n"
      "event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n";
  EXPECT_NO_THROW((void)ParseProviderStream(Model("anthropic"), anthropic));
  std::optional<Result<LlmResponse>> a;
  EXPECT_NO_THROW(a.emplace(ParseProviderResponse(
      Model("anthropic"), R"({"type":4,"content":[{"type":"tool_use","id":5,)"
                          R"("name":[1],"input":{}}],"stop_reason":"tool_use"})")));
  ASSERT_TRUE(a.has_value() && a->ok());
  ASSERT_EQ((*a)->tool_calls.size(), 1u);
  EXPECT_EQ((*a)->tool_calls[0].id, "");
  EXPECT_NO_THROW((void)ParseProviderResponse(
      Model("openai-chat"),
      R"({"choices":[{"message":{"content":[{"type":7}],"tool_calls":[{"id":1,)"
      R"("function":{"name":2,"arguments":"{}"}}]},"finish_reason":"tool_calls"}]})"));
  EXPECT_NO_THROW((void)ParseProviderResponse(
      Model("openai-responses"),
      R"({"status":3,"incomplete_details":{"reason":1},"output":[{"type":"function_call",)"
      R"("call_id":9,"name":"f","arguments":"{}"},5,{"type":"message","content":[{"type":2}]}]})"));
}

TEST(StreamDecodeTest, AnthropicTextBlocksOnlyCrlf) {
  ModelConfig m = Model("anthropic");
  for (size_t step : {1, 3, 50, 100000}) {
    auto r = Decode(m, kAnthropicStream, step);
    ASSERT_TRUE(r.ok()) << step << r.status().ToString();
    EXPECT_EQ(r->text, "Summary");
    EXPECT_EQ(r->stop_reason, "stop");
    EXPECT_EQ(r->usage.input, 50);
    EXPECT_EQ(r->usage.cache_read, 7);
    EXPECT_EQ(r->usage.output, 12);
  }
}

TEST(StreamDecodeTest, ToolCallsAssembledFromFragments) {
  const std::string chat =
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,"
      "\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"\"}}]}}]"
      "}"
      "\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
      "\"{\\\"comm\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
      "\"and\\\":\\\"ls\\\"}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"c2\",\"function\":"
      "{\"name\":\"read\",\"arguments\":\"{}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: [DONE]\n\n";
  for (size_t step : {1, 9, 100000}) {
    auto r = Decode(Model("openai-chat"), chat, step);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->stop_reason, "toolUse");
    ASSERT_EQ(r->tool_calls.size(), 2u) << step;
    EXPECT_EQ(r->tool_calls[0].id, "c1");
    EXPECT_EQ(r->tool_calls[0].name, "bash");
    EXPECT_EQ(r->tool_calls[0].arguments_json, R"({"command":"ls"})");
    EXPECT_EQ(r->tool_calls[1].name, "read");
  }
  const std::string anthropic =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
      "{\"input_tokens\":5}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"Reading.\"}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
      "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_7\",\"name\":\"read\",\"input\":{}}}"
      "\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,"
      "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,"
      "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"a.txt\\\"}\"}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,"
      "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_8\",\"name\":\"noargs\","
      "\"input\":{}}}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
      "\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  auto a = Decode(Model("anthropic"), anthropic, 4);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->text, "Reading.");
  EXPECT_EQ(a->stop_reason, "toolUse");
  ASSERT_EQ(a->tool_calls.size(), 2u);
  EXPECT_EQ(a->tool_calls[0].id, "toolu_7");
  EXPECT_EQ(a->tool_calls[0].arguments_json, R"({"path":"a.txt"})");
  EXPECT_EQ(a->tool_calls[1].arguments_json, "{}");
}

TEST(StreamDecodeTest, ResponsesUsesTheCompletedResponse) {
  ModelConfig m = Model("openai-responses");
  auto r = Decode(m, ResponsesStream(), 5);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "Full text");
  EXPECT_EQ(r->usage.input, 30);
}

TEST(StreamDecodeTest, TruncatedStreamsAreErrors) {
  struct Case {
    std::string kind;
    std::string body;
  } cases[] = {
      {"anthropic", std::string(kAnthropicStream)
                        .substr(0, std::string(kAnthropicStream).find("event: message_delta"))},
      {"openai-chat",
       std::string(kChatStream)
           .substr(0, std::string(kChatStream).find("data: {\"choices\":[{\"delta\":{},"))},
      {"openai-responses",
       ResponsesStream().substr(0, ResponsesStream().find("event: response.completed"))},
      // cut in the middle of an event's JSON
      {"anthropic", std::string(kAnthropicStream).substr(0, 200)},
  };
  for (const Case& c : cases) {
    auto r = ParseProviderStream(Model(c.kind), c.body);
    ASSERT_FALSE(r.ok()) << c.kind;
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(r.status().message(), HasSubstr("stream ended before the response was complete"));
  }
  EXPECT_THAT(ParseProviderStream(Model("anthropic"), "").status().message(),
              HasSubstr("empty stream"));
}

TEST(StreamDecodeTest, ChatWithoutDoneButWithFinishIsComplete) {
  std::string body(kChatStream);
  body = body.substr(0, body.find("data: [DONE]"));
  auto r = ParseProviderStream(Model("openai-chat"), body);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "Hello w\xC3\xB6rld");
}

TEST(StreamDecodeTest, ErrorEvents) {
  auto overloaded = ParseProviderStream(
      Model("anthropic"),
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
      "\"message\":\"Overloaded\"}}\n\n");
  ASSERT_TRUE(overloaded.ok());
  EXPECT_EQ(overloaded->stop_reason, "error");
  EXPECT_EQ(overloaded->error_message, "Overloaded");
  EXPECT_TRUE(overloaded->transient);
  auto too_long = ParseProviderStream(
      Model("anthropic"),
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
      "\"message\":\"prompt is too long: 300000 tokens > 200000 maximum\"}}\n\n");
  ASSERT_TRUE(too_long.ok());
  EXPECT_FALSE(too_long->transient);
  auto chat = ParseProviderStream(
      Model("openai-chat"), "data: {\"error\":{\"message\":\"context length exceeded\"}}\n\n");
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->error_message, "context length exceeded");
}

TEST(StreamDecodeTest, StreamRequestBodies) {
  LlmRequest r;
  r.system_prompt = "S";
  r.messages.push_back(LlmMessage::UserText("u"));
  r.max_tokens = 5;
  ModelConfig chat = Model("openai-chat");
  chat.base_url = "http://h/v1";
  EXPECT_THAT(BuildProviderRequest(chat, r, "")->body,
              HasSubstr(R"("stream":true,"stream_options":{"include_usage":true}})"));
  ModelConfig ant = Model("anthropic");
  EXPECT_THAT(BuildProviderRequest(ant, r, "")->body, ::testing::EndsWith(R"(,"stream":true})"));
  ModelConfig resp = Model("openai-responses");
  EXPECT_THAT(BuildProviderRequest(resp, r, "")->body,
              HasSubstr(R"("store":false,"stream":true})"));
  ModelConfig remote = Model("remote");
  EXPECT_THAT(BuildProviderRequest(remote, r, "")->body, ::testing::Not(HasSubstr("stream")));
}

// --- end to end ------------------------------------------------------------

class StreamCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    options_.transport = NewCurlTransport();
    options_.env = env_.get();
  }
  ModelConfig Served(std::string kind) {
    ModelConfig m = Model(kind);
    m.base_url = server_.base_url() + (kind == "anthropic" ? "" : "/v1");
    m.timeout_ms = 5000;
    return m;
  }
  static std::vector<std::string> Split(const std::string& s, size_t n) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size(); i += n) out.push_back(s.substr(i, n));
    return out;
  }
  FakeLlmServer server_;
  std::unique_ptr<MemEnv> env_ = NewMemEnv();  // waits are recorded, not slept
  CallOptions options_;
};

TEST_F(StreamCallTest, ChunkedAnthropicStream) {
  FakeReply reply(200, "", "text/event-stream");
  reply.chunks = Split(kAnthropicStream, 37);
  server_.Push(reply);
  ModelConfig m = Served("anthropic");
  SummaryRequestText text{"sys", "<conversation>\nx\n</conversation>", 100, ""};
  auto r = CompleteSummary(std::span(&m, 1), text, options_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "Summary");
  auto body = nlohmann::json::parse(server_.requests()[0].body);
  EXPECT_EQ(body["stream"], true);
}

TEST_F(StreamCallTest, TruncatedStreamIsRetried) {
  std::string full = kChatStream;
  FakeReply cut(200, "", "text/event-stream");
  cut.chunks = Split(full.substr(0, full.find("w\xC3\xB6rld")), 20);  // ends mid-event
  server_.Push(cut);
  FakeReply whole(200, "", "text/event-stream");
  whole.chunks = Split(full, 50);
  server_.Push(whole);
  ModelConfig m = Served("openai-chat");
  CallOutcome out = CallModel(m, Req("s", "u", 10), options_);
  ASSERT_TRUE(out.result.ok()) << out.result.status().ToString();
  EXPECT_EQ(out.result->text, "Hello w\xC3\xB6rld");
  EXPECT_EQ(out.attempts, 2);
  EXPECT_EQ(env_->Sleeps().size(), 1u);
}

TEST_F(StreamCallTest, OverloadedEventIsRetriedTooLongIsOverflow) {
  server_.Push(FakeReply(200,
                         "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
                         "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
                         "text/event-stream"));
  server_.Push(FakeReply(200,
                         "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
                         "\"invalid_request_error\",\"message\":\"prompt is too long: 300000 "
                         "tokens > 200000 maximum\"}}\n\n",
                         "text/event-stream"));
  ModelConfig m = Served("anthropic");
  CallOutcome out = CallModel(m, Req("s", "u", 10), options_);
  ASSERT_FALSE(out.result.ok());
  EXPECT_EQ(out.attempts, 2);
  EXPECT_TRUE(out.failure.overflow.overflow);
}

TEST_F(StreamCallTest, ErrorStatusBodyStillClassified) {
  server_.Push(FakeReply(
      400,
      R"({"error":{"message":"Your input exceeds the context window of this model.","code":"context_length_exceeded"}})"));
  ModelConfig m = Served("openai-responses");
  CallOutcome out = CallModel(m, Req("s", "u", 10), options_);
  ASSERT_FALSE(out.result.ok());
  EXPECT_TRUE(out.failure.overflow.overflow);
  EXPECT_THAT(out.result.status().message(), HasSubstr("400 {\"error\""));
}

TEST_F(StreamCallTest, JsonAnswerToAStreamRequestIsAccepted) {
  server_.Push(FakeReply(200, FakeLlmServer::ChatReply("not streamed")));
  ModelConfig m = Served("openai-chat");
  CallOutcome out = CallModel(m, Req("s", "u", 10), options_);
  ASSERT_TRUE(out.result.ok()) << out.result.status().ToString();
  EXPECT_EQ(out.result->text, "not streamed");
}

}  // namespace
}  // namespace compactor
