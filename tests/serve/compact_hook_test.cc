// Compaction inside the proxy: planning on requests of the three APIs, the
// summary cache, the no-loop guard, and end to end through the server in
// front of the fake upstream (proactive compaction, response headers,
// overflow recovery from HTTP errors and in-stream errors).
#include "serve/compact_hook.h"

#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compactor/mem_env.h"
#include "serve/compact_requests.h"
#include "serve/serve_fixture.h"

namespace compactor::testing {
namespace {

using Json = nlohmann::json;
using Fields = std::vector<std::pair<std::string, std::string>>;

ClientRequest Read(std::string_view api, const Json& body) {
  auto r = ReadClientRequest(api, body.dump());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : ClientRequest{};
}

struct ApiCase {
  const char* api;
  Json (*make)(int, int);
};

class PlanCompactionTest : public ::testing::TestWithParam<ApiCase> {};

TEST_P(PlanCompactionTest, CompactsOverTheThresholdKeepsTheNewestPairAndReusesTheSummary) {
  const ApiCase c = GetParam();
  const ProviderApi* api = FindProviderApi(c.api);
  ASSERT_NE(api, nullptr);
  ClientRequest req = Read(c.api, c.make(30, 120));
  const int64_t before = serve::EstimateRequestTokens(req);
  auto summarizer = NewOfflineSummarizer();
  serve::PlanInput in;
  in.threshold = before / 2;
  in.keep_recent_tokens = before / 8;
  std::string why;
  auto plan = serve::PlanCompaction(*api, req, *summarizer, in, &why);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->has_value()) << why;
  const serve::CompactPlan& p = **plan;
  EXPECT_EQ(p.tokens_before, before);
  EXPECT_LE(p.tokens_after, in.threshold);
  EXPECT_TRUE(ValidateCut(req, p.cut).ok());

  // The rewritten request reads back: fewer items, the newest call and
  // result byte for byte, system and tools unchanged.
  ClientRequest out = Read(c.api, Json::parse(p.body));
  EXPECT_LT(out.items.size(), req.items.size());
  EXPECT_EQ(out.Text(out.items.back()), req.Text(req.items.back()));
  EXPECT_EQ(out.Text(out.items[out.items.size() - 2]), req.Text(req.items[req.items.size() - 2]));
  EXPECT_EQ(out.Text(out.tools), req.Text(req.tools));
  EXPECT_EQ(out.Text(out.system), req.Text(req.system));
  EXPECT_NE(p.body.find("<summary>"), std::string::npos);
  EXPECT_LE(serve::EstimateRequestTokens(out), p.tokens_after + 50);

  // The next request of the conversation (one more turn) gets the same
  // summary bytes.
  serve::ConversationSummary prior;
  for (size_t i = 0; i < p.cut; ++i) prior.prefix.emplace_back(req.Text(req.items[i]));
  prior.summary = p.summary;
  ClientRequest next = Read(c.api, c.make(31, 120));
  in.prior = &prior;
  auto again = serve::PlanCompaction(*api, next, *summarizer, in, &why);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again->has_value()) << why;
  EXPECT_TRUE((*again)->reused);
  EXPECT_EQ((*again)->summary, p.summary);
  EXPECT_EQ((*again)->cut, p.cut);
}

TEST_P(PlanCompactionTest, UnderTheThresholdNothingHappens) {
  const ApiCase c = GetParam();
  ClientRequest req = Read(c.api, c.make(3, 10));
  auto summarizer = NewOfflineSummarizer();
  serve::PlanInput in;
  in.threshold = serve::EstimateRequestTokens(req) + 1;
  in.keep_recent_tokens = 10;
  std::string why;
  auto plan = serve::PlanCompaction(*FindProviderApi(c.api), req, *summarizer, in, &why);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->has_value());
}

TEST_P(PlanCompactionTest, NoLoopGuardWhenCompactionCannotGetUnder) {
  const ApiCase c = GetParam();
  ClientRequest req = Read(c.api, c.make(30, 120));
  auto summarizer = NewOfflineSummarizer();
  serve::PlanInput in;
  in.threshold = 10;  // system + tools + the newest pair alone exceed it
  in.keep_recent_tokens = 5;
  std::string why;
  auto plan = serve::PlanCompaction(*FindProviderApi(c.api), req, *summarizer, in, &why);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->has_value());
  EXPECT_NE(why.find("cannot"), std::string::npos) << why;
}

INSTANTIATE_TEST_SUITE_P(Apis, PlanCompactionTest,
                         ::testing::Values(ApiCase{"anthropic", AnthropicRequest},
                                           ApiCase{"openai-chat", ChatRequest},
                                           ApiCase{"openai-responses", ResponsesRequest}),
                         [](const auto& info) {
                           std::string n = info.param.api;
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

TEST(ConversationIdTest, ClientIdElseHashOfLeadingContent) {
  const ProviderApi& anthropic = *FindProviderApi("anthropic");
  ClientRequest a = Read("anthropic", AnthropicRequest(3, 10));
  ClientRequest b = Read("anthropic", AnthropicRequest(4, 10));
  EXPECT_EQ(serve::ConversationId(anthropic, a, {{"X-Claude-Code-Session-Id", "abc"}}),
            "anthropic:session:abc");
  EXPECT_EQ(serve::ConversationId(anthropic, a, {}), serve::ConversationId(anthropic, b, {}));
  EXPECT_EQ(serve::ConversationId(anthropic, a, {}).rfind("anthropic:hash:", 0), 0u);
  // A cache_control breakpoint that moves does not make another conversation.
  Json plain = AnthropicRequest(3, 10);
  plain["messages"][0]["content"] =
      Json::array({{{"type", "text"}, {"text", plain["messages"][0]["content"]}}});
  Json marked = plain;
  marked["messages"][0]["content"][0]["cache_control"] = {{"type", "ephemeral"}};
  EXPECT_EQ(serve::ConversationId(anthropic, Read("anthropic", marked), {}),
            serve::ConversationId(anthropic, Read("anthropic", plain), {}));
  Json r = ResponsesRequest(2, 5);
  r["prompt_cache_key"] = "key-1";
  EXPECT_EQ(serve::ConversationId(*FindProviderApi("openai-responses"), Read("openai-responses", r),
                                  {{"session-id", "other"}}),
            "openai-responses:key:key-1");
  EXPECT_FALSE(serve::IsAuxiliaryRequest(a));
  Json aux = AnthropicRequest(1, 5);
  aux.erase("tools");
  EXPECT_TRUE(serve::IsAuxiliaryRequest(Read("anthropic", aux)));
}

// The id a request is known by before it is read (the session header the
// proxy answers with, the recorder's place) is the id its read gives: for
// each API, with the key members each reads or ignores, and whatever headers.
TEST(ConversationIdTest, NamedWithoutReadingIsTheReadId) {
  const std::vector<std::string> members = {
      "",  // no key member
      R"("prompt_cache_key":"k-1",)",
      R"("prompt_cache_key":"",)",
      R"("prompt_cache_key":null,)",
      R"("prompt_cache_key":42,)",
      R"("prompt_cache_key":"a\"b",)",
      R"("prompt\u005fcache_key":"escaped",)",
      R"("prompt_cache_key":"one","prompt_cache_key":"two",)",
      R"("metadata":{"prompt_cache_key":"nested"},)",
  };
  const std::vector<serve::HeaderList> headers = {
      {}, {{"X-Claude-Code-Session-Id", "s-1"}}, {{"session_id", "s-2"}}};
  const std::vector<ApiCase> apis = {{"anthropic", AnthropicRequest},
                                     {"openai-responses", ResponsesRequest},
                                     {"openai-chat", ChatRequest}};
  int named = 0;
  for (const ApiCase& c : apis) {
    const ProviderApi& api = *FindProviderApi(c.api);
    const std::string base = c.make(2, 5).dump();
    for (const std::string& m : members) {
      const std::string body = "{" + m + base.substr(1);
      auto read = ReadClientRequest(c.api, body);
      ASSERT_TRUE(read.ok()) << read.status().ToString() << "\n" << body;
      for (const serve::HeaderList& h : headers) {
        std::optional<std::string> id = serve::NamedConversationId(api, body, h);
        // The exchange's one scan says the same.
        serve::RequestOutline outline = serve::OutlineRequest(&api, body, h);
        EXPECT_EQ(outline.named_conversation, id) << c.api << " " << m;
        EXPECT_EQ(outline.declares_tools, serve::DeclaresTools(body)) << c.api << " " << m;
        EXPECT_FALSE(serve::OutlineRequest(nullptr, body, h).named_conversation);
        if (!id) continue;
        ++named;
        EXPECT_EQ(*id, serve::ConversationId(api, *read, h)) << c.api << " " << m;
      }
    }
  }
  // Named without reading: every header case of Anthropic (9 bodies x 2) and,
  // for the other two, a plain key (3 header cases) and a header with no key,
  // an empty or null key, or a nested one (4 bodies x 2): 18 + 2 x 11.
  EXPECT_EQ(named, 40);
  // Nothing to name it by: only a read tells.
  const ProviderApi& responses = *FindProviderApi("openai-responses");
  EXPECT_FALSE(serve::NamedConversationId(responses, ResponsesRequest(2, 5).dump(), {}));
  EXPECT_FALSE(serve::NamedConversationId(responses, "not json", {{"session_id", "s"}}));
  EXPECT_FALSE(serve::NamedConversationId(*FindProviderApi("anthropic"), "{}", {}));
}

// The bound a request is forwarded unread by (the compaction hook, before
// reading it): never under pi's estimate, for each API's ordinary requests
// and for bodies built to make the estimate large for their size.
int64_t Estimate(std::string_view api, const std::string& body) {
  auto r = ReadClientRequest(api, body);
  EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n" << body;
  return r.ok() ? serve::EstimateRequestTokens(*r) : 0;
}

void ExpectBounded(std::string_view api, const std::string& body) {
  std::optional<int64_t> bound = serve::RequestTokensBound(body);
  ASSERT_TRUE(bound.has_value()) << body.substr(0, 200);
  const int64_t estimate = Estimate(api, body);
  EXPECT_GE(*bound, estimate) << api << ": " << body.substr(0, 200);
  EXPECT_GT(estimate, 0);
}

std::string Repeat(std::string_view piece, int n, std::string_view separator = ",") {
  std::string out;
  for (int i = 0; i < n; ++i) {
    if (i > 0) out += separator;
    out += piece;
  }
  return out;
}

TEST(RequestTokensBoundTest, BoundsTheEstimateOfEachApisRequests) {
  for (auto [turns, words] : {std::pair{1, 0}, {3, 10}, {10, 120}, {40, 300}}) {
    ExpectBounded("anthropic", AnthropicRequest(turns, words).dump());
    ExpectBounded("openai-chat", ChatRequest(turns, words).dump());
    ExpectBounded("openai-responses", ResponsesRequest(turns, words).dump());
  }
}

TEST(RequestTokensBoundTest, BoundsBodiesMadeToCountMoreThanTheirBytes) {
  const std::string tools = R"("tools":[{"name":"t","input_schema":{}}])";
  // Numbers JSON.stringify writes longer (21 digits for 1e20).
  ExpectBounded(
      "anthropic",
      R"({"model":"m",)" + tools +
          R"(,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"t","input":{"n":[)" +
          Repeat("1e20", 500) + R"(]}}]}]})");
  // A tool input that is not an object: kept as {"_raw": its JSON}, escaped twice.
  ExpectBounded(
      "anthropic",
      R"({"model":"m",)" + tools +
          R"(,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"t","input":")" +
          Repeat(R"(\")", 500, "") + R"("}]}]})");
  // Images count 4800 characters whatever their size.
  ExpectBounded(
      "anthropic",
      R"({"model":"m",)" + tools +
          R"(,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[)" +
          Repeat(R"({"type":"image","source":{"type":"url"}})", 60) + R"(]}]}]})");
  // Many short messages: each one's rounding.
  ExpectBounded("anthropic", R"({"model":"m",)" + tools + R"(,"messages":[)" +
                                 Repeat(R"({"role":"user","content":"a"})", 300) + "]}");
  // Text beyond ASCII (2, 3 and 4 bytes a character).
  ExpectBounded("anthropic", R"({"model":"m",)" + tools +
                                 R"(,"messages":[{"role":"user","content":")" +
                                 Repeat("é€😀a", 400, "") + R"("}]})");
  // Chat: arguments as a string of JSON with numbers, and one that is not JSON.
  ExpectBounded(
      "openai-chat",
      R"({"model":"m","tools":[],"messages":[{"role":"assistant","content":null,"tool_calls":[)" +
          Repeat(
              R"({"id":"c","type":"function","function":{"name":"t","arguments":"[1e20,1e20,1e20]"}})",
              100) +
          R"(]},{"role":"assistant","content":null,"tool_calls":[{"id":"d","type":"function","function":{"name":"t","arguments":")" +
          Repeat(R"(\\\")", 300, "") + R"("}}]},{"role":"user","content":[)" +
          Repeat(R"({"type":"image_url","image_url":{"url":"x"}})", 20) + "]}]}");
  // Responses: reasoning summaries joined with blank lines, custom tool
  // calls wrapped in {"input": ...}, action arguments, images.
  ExpectBounded("openai-responses",
                R"({"model":"m","tools":[],"input":[{"type":"reasoning","summary":[)" +
                    Repeat(R"({"type":"summary_text","text":""})", 200) +
                    R"(]},{"type":"custom_tool_call","call_id":"c","name":"t","input":")" +
                    Repeat(R"(\"\\)", 200, "") +
                    R"("},{"type":"function_call","call_id":"e","name":"t","arguments":"1e20"},)" +
                    R"({"type":"function_call_output","call_id":"e","output":[)" +
                    Repeat(R"({"type":"input_image","image_url":"y"})", 30) + "]}]}");
}

TEST(RequestTokensBoundTest, NoBoundWhereTheBytesMayHideANameOrACompaction) {
  EXPECT_FALSE(serve::RequestTokensBound(R"({"messages":[{"role":"user","content":"\u0041"}]})"));
  EXPECT_FALSE(serve::RequestTokensBound(
      R"({"input":[{"type":"compaction","encrypted_content":"x"}],"tools":[]})"));
  EXPECT_FALSE(serve::RequestTokensBound(R"({"input":[{"type":"compaction_trigger"}]})"));
  EXPECT_TRUE(serve::RequestTokensBound(AnthropicRequest(3, 10).dump()));
}

TEST(DeclaresToolsTest, TheTopLevelToolsMemberAsTheApisReadIt) {
  for (const auto& [api, body] :
       {std::pair<std::string, Json>{"anthropic", AnthropicRequest(3, 10)},
        {"openai-chat", ChatRequest(3, 10)},
        {"openai-responses", ResponsesRequest(3, 10)}}) {
    Json aux = body;
    aux.erase("tools");
    aux["metadata"] = {{"tools", Json::array()}};  // nested: not the request's tools
    Json empty = body;
    empty["tools"] = Json::array();
    for (const Json& b : {body, aux, empty}) {
      EXPECT_EQ(serve::DeclaresTools(b.dump()), !serve::IsAuxiliaryRequest(Read(api, b)))
          << api << " " << b.dump().substr(0, 120);
    }
    EXPECT_FALSE(serve::DeclaresTools(aux.dump()));
  }
  EXPECT_FALSE(serve::DeclaresTools("not json"));
}

class ServeCompactTest : public ServeFixture {};

const Fields kAnthropicHeaders = {{"x-api-key", "dummy"},
                                  {"anthropic-version", "2023-06-01"},
                                  {"content-type", "application/json"}};

TEST_F(ServeCompactTest, OverTheWindowTheUpstreamGetsASmallerRequest) {
  StartProxy([](ServeOptions& o) {
    o.context_window = 12000;
    o.summarizer = "offline";
  });
  std::string body = AnthropicRequest(30, 120).dump();
  auto res = Fetch(port_, "POST", "/v1/messages", kAnthropicHeaders, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200);
  EXPECT_FALSE(res->Header("x-compactor-session").empty());
  std::string compacted = res->Header("x-compactor-compacted");
  EXPECT_EQ(compacted.rfind("tokens-before=", 0), 0u) << compacted;
  ASSERT_EQ(upstream_.request_count(), 1u);
  const UpstreamRecord up = upstream_.requests()[0];
  EXPECT_LT(up.body.size(), body.size() / 2);
  EXPECT_TRUE(up.Header("content-encoding").empty());
  ClientRequest sent = Read("anthropic", Json::parse(up.body));
  ClientRequest orig = Read("anthropic", Json::parse(body));
  EXPECT_EQ(sent.Text(sent.items.back()), orig.Text(orig.items.back()));

  // The next request of the conversation: the same summary bytes upstream.
  std::string next = AnthropicRequest(31, 120).dump();
  auto res2 = Fetch(port_, "POST", "/v1/messages", kAnthropicHeaders, next);
  ASSERT_TRUE(res2.has_value());
  ASSERT_EQ(upstream_.request_count(), 2u);
  ClientRequest sent2 = Read("anthropic", Json::parse(upstream_.requests()[1].body));
  // The summary message is the first item after the cut in both.
  EXPECT_EQ(Json::parse(sent2.Text(sent2.items.front())).dump(),
            Json::parse(sent.Text(sent.items.front())).dump());
}

TEST_F(ServeCompactTest, UnderTheWindowTheRequestPassesByteForByte) {
  StartProxy([](ServeOptions& o) { o.summarizer = "offline"; });
  std::string body = AnthropicRequest(3, 10).dump();
  auto res = Fetch(port_, "POST", "/v1/messages", kAnthropicHeaders, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200);
  EXPECT_TRUE(res->Header("x-compactor-compacted").empty());
  ASSERT_EQ(upstream_.request_count(), 1u);
  EXPECT_EQ(upstream_.requests()[0].body, body);
}

// A request under every threshold goes upstream before it is read (the
// bound of RequestTokensBound); it is read while the upstream works, and
// the answer is what it would be otherwise: the session named (also on the
// proxy's own error answer), nothing for an auxiliary request.
TEST_F(ServeCompactTest, ARequestForwardedUnreadIsStillNamed) {
  StartProxy([](ServeOptions& o) { o.summarizer = "offline"; });
  Fields headers = kAnthropicHeaders;
  headers.emplace_back("x-claude-code-session-id", "unread-1");
  std::string body = AnthropicRequest(3, 10).dump();
  ASSERT_LE(*serve::RequestTokensBound(body), 200'000 / 2);
  auto res = Fetch(port_, "POST", "/v1/messages", headers, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->Header("x-compactor-session"), "anthropic:session:unread-1");
  EXPECT_TRUE(res->Header("x-compactor-compacted").empty());
  ASSERT_EQ(upstream_.request_count(), 1u);
  EXPECT_EQ(upstream_.requests()[0].body, body);
  // Accept-Encoding is not forwarded for a request the hooks may read the answer of.
  EXPECT_TRUE(upstream_.requests()[0].Header("accept-encoding").empty());

  Json aux = AnthropicRequest(1, 5);
  aux.erase("tools");
  Fields aux_headers = headers;
  aux_headers.emplace_back("accept-encoding", "gzip");
  res = Fetch(port_, "POST", "/v1/messages", aux_headers, aux.dump());
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200);
  EXPECT_TRUE(res->Header("x-compactor-session").empty());
  ASSERT_EQ(upstream_.request_count(), 2u);
  EXPECT_EQ(upstream_.requests()[1].Header("accept-encoding"), "gzip");

  // The upstream gone: the proxy's 502 names the session too.
  upstream_.Stop();
  res = Fetch(port_, "POST", "/v1/messages", headers, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 502);
  EXPECT_EQ(res->Header("x-compactor-session"), "anthropic:session:unread-1");
}

ScriptedReply OverflowReply() {
  ScriptedReply r;
  r.status = 400;
  r.reason = "Bad Request";
  r.headers = {{"content-type", "application/json"}};
  r.pieces = {R"({"type":"error","error":{"type":"invalid_request_error",)"
              R"("message":"prompt is too long: 250000 tokens > 200000 maximum"}})"};
  return r;
}

// An Anthropic stream that reports an overflow after message_start, before
// any content.
ScriptedReply InStreamOverflowReply() {
  ScriptedReply r;
  r.headers = {{"content-type", "text/event-stream"}};
  r.pieces = {
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","
      "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\","
      "\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n",
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
      "\"message\":\"prompt is too long: 250000 tokens > 200000 maximum\"}}\n\n"};
  return r;
}

TEST_F(ServeCompactTest, HttpOverflowIsRecoveredByCompactingAndRetrying) {
  StartProxy([](ServeOptions& o) { o.summarizer = "offline"; });
  upstream_.Push(OverflowReply());
  std::string body = AnthropicRequest(30, 120).dump();  // under the built-in window
  auto res = Fetch(port_, "POST", "/v1/messages", kAnthropicHeaders, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200) << res->body;
  ASSERT_EQ(upstream_.request_count(), 2u);
  EXPECT_EQ(upstream_.requests()[0].body, body);
  EXPECT_LT(upstream_.requests()[1].body.size(), body.size());
  int compacted_headers = 0;
  for (const auto& [name, value] : res->headers)
    compacted_headers += name == "x-compactor-compacted";
  EXPECT_EQ(compacted_headers, 1);
}

// A request whose client names its conversation goes unread until its
// answer is out; an overflow, in the answer's head or in its stream, has it
// read for the retry, which is compacted as any other.
TEST_F(ServeCompactTest, ANamedRequestForwardedUnreadIsReadWhenItOverflows) {
  StartProxy([](ServeOptions& o) { o.summarizer = "offline"; });
  Fields headers = kAnthropicHeaders;
  headers.emplace_back("x-claude-code-session-id", "named-1");
  Json req = AnthropicRequest(30, 120);
  ASSERT_LE(*serve::RequestTokensBound(req.dump()), 100'000);  // forwarded unread
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "in the stream" : "in the head");
    upstream_.Push(stream ? InStreamOverflowReply() : OverflowReply());
    req["stream"] = stream;
    const std::string body = req.dump();
    const size_t before = upstream_.request_count();
    auto res = Fetch(port_, "POST", "/v1/messages", headers, body);
    ASSERT_TRUE(res.has_value());
    EXPECT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(res->body.find("prompt is too long"), std::string::npos) << res->body;
    EXPECT_EQ(res->Header("x-compactor-session"), "anthropic:session:named-1");
    EXPECT_FALSE(res->Header("x-compactor-compacted").empty());
    ASSERT_EQ(upstream_.request_count(), before + 2);
    EXPECT_EQ(upstream_.requests()[before].body, body);
    EXPECT_LT(upstream_.requests()[before + 1].body.size(), body.size());
  }
}

TEST_F(ServeCompactTest, OverflowRecoveryGivesUpAfterTwoRetries) {
  StartProxy([](ServeOptions& o) { o.summarizer = "offline"; });
  for (int i = 0; i < 3; ++i) upstream_.Push(OverflowReply());
  std::string body = AnthropicRequest(30, 120).dump();
  auto res = Fetch(port_, "POST", "/v1/messages", kAnthropicHeaders, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("prompt is too long"), std::string::npos);
  EXPECT_EQ(upstream_.request_count(), 3u);
}

TEST_F(ServeCompactTest, InStreamOverflowBeforeContentIsRetried) {
  StartProxy([](ServeOptions& o) { o.summarizer = "offline"; });
  ScriptedReply r = InStreamOverflowReply();
  // Held by its name alone (neither content nor an error), as message_start.
  r.pieces.insert(r.pieces.begin() + 1, "event: ping\ndata: {\"type\":\"ping\"}\n\n");
  upstream_.Push(r);
  Json req = AnthropicRequest(30, 120);
  req["stream"] = true;
  std::string body = req.dump();
  auto res = Fetch(port_, "POST", "/v1/messages", kAnthropicHeaders, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body.find("prompt is too long"), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("message_stop"), std::string::npos) << res->body;
  ASSERT_EQ(upstream_.request_count(), 2u);
  EXPECT_LT(upstream_.requests()[1].body.size(), body.size());
}

TEST(ServeSettingsTest, SummaryDeadlineRemoteCompactionAndSummarizerModels) {
  auto env = NewMemEnv();
  env->SetFile("/s.json", R"({"serve": {"summaryDeadlineMs": 1500, "remoteCompaction": "proxy"},
    "models": {"small": {"provider": "openai-chat", "baseUrl": "http://127.0.0.1:9/v1",
                         "model": "m", "contextWindow": 8000}}})");
  ServeOptions o;
  o.env = env.get();
  o.upstream = "http://127.0.0.1:9";
  o.store = "/store";
  o.settings_file = "/s.json";
  o.summarizer = "small";
  std::vector<std::string> warnings;
  ASSERT_TRUE(ResolveServeDefaults(&o, &warnings).ok());
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(o.summary_deadline_ms, 1500);
  EXPECT_EQ(o.remote_compaction, "proxy");
  ASSERT_EQ(o.summarizer_models.size(), 1u);
  EXPECT_EQ(o.summarizer_models[0].context_window, 8000);
  for (const char* bad : {R"({"serve": {"summaryDeadlineMs": -1}})",
                          R"({"serve": {"remoteCompaction": "sometimes"}})"}) {
    env->SetFile("/s.json", bad);
    ServeOptions b;
    b.env = env.get();
    b.upstream = "http://127.0.0.1:9";
    b.store = "/store";
    b.settings_file = "/s.json";
    Status s = ResolveServeDefaults(&b, &warnings);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(BuiltinContextWindowTest, KnownFamiliesElseUnknown) {
  EXPECT_EQ(serve::BuiltinContextWindow("claude-sonnet-4-5"), 200'000);
  EXPECT_EQ(serve::BuiltinContextWindow("gpt-5-codex"), 400'000);
  EXPECT_EQ(serve::BuiltinContextWindow("gpt-4o-mini"), 128'000);
  // Unknown: no proactive compaction (overflow recovery only).
  EXPECT_EQ(serve::BuiltinContextWindow("fake-model"), 0);
  EXPECT_EQ(serve::BuiltinContextWindow("local-model"), 0);
}

TEST_F(ServeCompactTest, AnUnknownModelIsNeverCompactedProactively) {
  StartProxy([](ServeOptions& o) { o.summarizer = "offline"; });
  Json req = AnthropicRequest(60, 1000);  // ~ 200k tokens: over any built-in threshold
  req["model"] = "local-model";
  std::string body = req.dump();
  auto res = Fetch(port_, "POST", "/v1/messages", kAnthropicHeaders, body);
  ASSERT_TRUE(res.has_value());
  EXPECT_TRUE(res->Header("x-compactor-compacted").empty());
  ASSERT_EQ(upstream_.request_count(), 1u);
  EXPECT_EQ(upstream_.requests()[0].body, body);
}

// The store's seam: after each request the hook joined, what was sent
// upstream, the usage and the compaction made.
TEST_F(ServeCompactTest, OnForwardedSeesWhatWasSentTheUsageAndTheCompaction) {
  std::mutex mu;
  std::vector<serve::ForwardedExchange> seen;
  StartProxy(
      [](ServeOptions& o) {
        o.context_window = 12000;
        o.summarizer = "offline";
      },
      [&](serve::Server& s) {
        s.set_on_forwarded([&](const serve::ForwardedExchange& f) {
          std::lock_guard<std::mutex> lock(mu);
          seen.push_back(f);
        });
      });
  for (bool stream : {false, true}) {
    Json req = AnthropicRequest(30, 120);
    req["stream"] = stream;
    auto res = Fetch(port_, "POST", "/v1/messages", kAnthropicHeaders, req.dump());
    ASSERT_TRUE(res.has_value());
    EXPECT_EQ(res->status, 200);
  }
  WaitLogs(2);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const serve::ForwardedExchange& f = seen[i];
    EXPECT_EQ(f.api, "anthropic");
    EXPECT_EQ(f.model, "claude-sonnet-4-5");
    EXPECT_EQ(f.target, "/v1/messages");
    EXPECT_EQ(f.status, 200);
    EXPECT_FALSE(f.conversation_id.empty());
    EXPECT_EQ(f.sent_body, upstream_.requests()[i].body);
    ASSERT_TRUE(f.compaction.has_value());
    EXPECT_GT(f.compaction->tokens_before, f.compaction->tokens_after);
    EXPECT_FALSE(f.compaction->summary.empty());
    EXPECT_TRUE(f.usage_reported) << i;
    EXPECT_GT(f.usage.input, 0) << i;
  }
  EXPECT_TRUE(seen[1].compaction->reused);
}

}  // namespace
}  // namespace compactor::testing
