// The upstream's usage in the request log (serve/usage_hook.h): the proxy in
// process in front of the fake upstream, each API's answer streamed and not,
// with usage the answer states; the log line and its JSON form carry it.
#include "serve/usage_hook.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/serve_fixture.h"

namespace compactor::testing {
namespace {

class UsageLogTest : public ServeFixture {
 protected:
  // Sends `body` to `path` with the upstream answering `reply`; the log line.
  std::string LogLineOf(const std::string& path, const std::string& body, ScriptedReply reply) {
    upstream_.Push(std::move(reply));
    const size_t before = logs().size();
    auto res = Fetch(port_, "POST", path, {{"content-type", "application/json"}}, body);
    EXPECT_TRUE(res && res->status == 200);
    auto lines = WaitLogs(before + 1);
    return lines.size() > before ? lines[before] : "";
  }
};

ScriptedReply Json(const std::string& body) {
  ScriptedReply r;
  r.headers = {{"Content-Type", "application/json"}};
  r.pieces = {body};
  return r;
}

ScriptedReply Stream(std::vector<std::string> events) {
  ScriptedReply r;
  r.headers = {{"Content-Type", "text/event-stream"}};
  r.framing = ScriptedReply::Framing::kChunked;
  r.pieces = std::move(events);
  return r;
}

// An agent's requests: they declare tools.
const char kMessages[] =
    R"({"model":"m","max_tokens":64,"messages":[{"role":"user","content":"hi"}],)"
    R"("tools":[{"name":"t","input_schema":{"type":"object"}}]})";
const char kResponses[] = R"({"model":"m","input":[{"role":"user","content":"hi"}],)"
                          R"("tools":[{"type":"function","name":"t","parameters":{}}]})";
const char kChat[] = R"({"model":"m","messages":[{"role":"user","content":"hi"}],)"
                     R"("tools":[{"type":"function","function":{"name":"t","parameters":{}}}]})";
// An auxiliary request (a title): no tools.
const char kTitle[] =
    R"({"model":"m","max_tokens":64,"messages":[{"role":"user","content":"name this chat"}]})";

TEST_F(UsageLogTest, EachApisUsageIsLoggedStreamedOrNot) {
  StartProxy();
  // Anthropic: input counts cache reads and writes.
  EXPECT_NE(LogLineOf("/v1/messages", kMessages,
                      Json(R"({"id":"msg_1","type":"message","role":"assistant","model":"m",)"
                           R"("content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn",)"
                           R"("usage":{"input_tokens":120,"cache_read_input_tokens":30,)"
                           R"("cache_creation_input_tokens":5,"output_tokens":42}})"))
                .find(" in=155 out=42 "),
            std::string::npos);
  EXPECT_NE(
      LogLineOf(
          "/v1/messages", kMessages,
          Stream({"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"
                  "\"msg_2\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":"
                  "120,\"cache_read_input_tokens\":30,\"output_tokens\":1}}}\n\n",
                  "event: content_block_start\ndata: {\"type\":\"content_block_start\","
                  "\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
                  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"
                  "0,\"delta\":{\"type\":\"text_delta\",\"text\":\"the usage is fine\"}}\n\n",
                  "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{"
                  "\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":42}}\n\n",
                  "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"}))
          .find(" in=150 out=42 "),
      std::string::npos);
  // A line cut into pieces (inside the word "usage" too), CRLF line ends.
  EXPECT_NE(LogLineOf("/v1/messages", kMessages,
                      Stream({"event: message_start\r\ndata: {\"type\":\"message_start\",\"mes",
                              "sage\":{\"id\":\"msg_3\",\"role\":\"assistant\",\"content\":[],\"us",
                              "age\":{\"input_tokens\":11,\"output_tokens\":1}}}\r\n\r\nevent: ",
                              "message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{},"
                              "\"usage\":{\"output_tokens\":4}}\r\n\r\n",
                              "event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n"}))
                .find(" in=11 out=4 "),
            std::string::npos);
  // Responses: input_tokens already include the cached ones.
  EXPECT_NE(LogLineOf("/v1/responses", kResponses,
                      Json(R"({"id":"resp_1","object":"response","status":"completed",)"
                           R"("output":[{"type":"message","role":"assistant","content":[)"
                           R"({"type":"output_text","text":"ok"}]}],"usage":{"input_tokens":200,)"
                           R"("input_tokens_details":{"cached_tokens":50},"output_tokens":17}})"))
                .find(" in=200 out=17 "),
            std::string::npos);
  EXPECT_NE(
      LogLineOf("/v1/responses", kResponses,
                Stream({"event: response.created\ndata: {\"type\":\"response.created\","
                        "\"response\":{\"id\":\"resp_2\",\"status\":\"in_progress\",\"output\":[],"
                        "\"usage\":null}}\n\n",
                        "event: response.output_text.delta\ndata: {\"type\":"
                        "\"response.output_text.delta\",\"delta\":\"ok\"}\n\n",
                        "event: response.completed\ndata: {\"type\":\"response.completed\","
                        "\"response\":{\"id\":\"resp_2\",\"status\":\"completed\",\"output\":[{"
                        "\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
                        "\"output_text\",\"text\":\"ok\"}]}],\"usage\":{\"input_tokens\":200,"
                        "\"output_tokens\":17}}}\n\n"}))
          .find(" in=200 out=17 "),
      std::string::npos);
  // Chat Completions: the usage chunk before [DONE].
  EXPECT_NE(LogLineOf("/v1/chat/completions", kChat,
                      Json(R"({"id":"c1","object":"chat.completion","choices":[{"index":0,)"
                           R"("message":{"role":"assistant","content":"ok"},)"
                           R"("finish_reason":"stop"}],"usage":{"prompt_tokens":300,)"
                           R"("completion_tokens":9}})"))
                .find(" in=300 out=9 "),
            std::string::npos);
  EXPECT_NE(
      LogLineOf("/v1/chat/completions", kChat,
                Stream({"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n",
                        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
                        "\"stop\"}]}\n\n",
                        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":300,"
                        "\"completion_tokens\":9}}\n\n",
                        "data: [DONE]\n\n"}))
          .find(" in=300 out=9 "),
      std::string::npos);
  for (const std::string& line : logs()) SCOPED_TRACE(line);
}

// A long stream is scanned in batches as it goes (usage_hook.cc, kScanBatch):
// the usage at its start and at its end both count, whatever batch they fall
// in, with a usage line cut across pieces between them.
TEST_F(UsageLogTest, ALongStreamsUsageIsReadAcrossBatches) {
  StartProxy();
  std::vector<std::string> events = {
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","
      "\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":7,"
      "\"output_tokens\":1}}}\n\n"};
  const std::string delta =
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"" +
      std::string(1000, 'x') + "\"}}\n\n";
  for (int i = 0; i < 600; ++i) events.push_back(delta);  // ~650 KB: two batches and more
  events.push_back("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"us");
  events.push_back("age\":{\"output_tokens\":5}}\n\n");
  events.push_back("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
  EXPECT_NE(LogLineOf("/v1/messages", kMessages, Stream(events)).find(" in=7 out=5 "),
            std::string::npos);
}

// An answer without usage, an error answer and an auxiliary request (whose
// answer the proxy does not read) log no tokens; the JSON form carries the
// numbers.
TEST_F(UsageLogTest, NoUsageNoTokensAndTheJsonFormCarriesThem) {
  StartProxy([](ServeOptions& o) { o.json_logs = true; });
  std::string line = LogLineOf("/v1/messages", kMessages,
                               Json(R"({"type":"message","content":[],"usage":{"input_tokens":7,)"
                                    R"("output_tokens":3}})"));
  auto j = nlohmann::json::parse(line, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << line;
  EXPECT_EQ(j["tokensIn"], 7);
  EXPECT_EQ(j["tokensOut"], 3);
  line = LogLineOf("/v1/messages", kMessages, Json(R"({"type":"message","content":[]})"));
  j = nlohmann::json::parse(line, nullptr, false);
  EXPECT_TRUE(j["tokensIn"].is_null()) << line;
  line = LogLineOf("/v1/messages", kTitle,
                   Json(R"({"type":"message","content":[],"usage":{"input_tokens":7,)"
                        R"("output_tokens":3}})"));
  j = nlohmann::json::parse(line, nullptr, false);
  EXPECT_TRUE(j["tokensIn"].is_null()) << line;
  ScriptedReply error = Json(R"({"type":"error","error":{"type":"overloaded_error",)"
                             R"("message":"busy"},"usage":{"input_tokens":9}})");
  error.status = 529;
  error.reason = "Overloaded";
  upstream_.Push(error);
  const size_t before = logs().size();
  auto res =
      Fetch(port_, "POST", "/v1/messages", {{"content-type", "application/json"}}, kMessages);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 529);
  auto lines = WaitLogs(before + 1);
  ASSERT_GT(lines.size(), before);
  j = nlohmann::json::parse(lines[before], nullptr, false);
  EXPECT_TRUE(j["tokensIn"].is_null()) << lines[before];
  EXPECT_TRUE(serve::IsGenerationRoute("/v1/responses"));
  EXPECT_FALSE(serve::IsGenerationRoute("/v1/messages/count_tokens"));
}

}  // namespace
}  // namespace compactor::testing
