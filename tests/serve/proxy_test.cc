// The proxy in process on a real loopback port in front of the fake upstream
// (tests/support/fake_upstream.h): pass-through byte for byte, streaming as it
// arrives, headers, compressed bodies, limits, upstream failures, the service
// routes and the request log. Every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "serve/compress.h"
#include "serve/hooks.h"
#include "serve/serve_fixture.h"

namespace compactor::testing {
namespace {

using namespace std::chrono_literals;
using Fields = std::vector<std::pair<std::string, std::string>>;

const char kAnthropicBody[] = R"({"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,)"
                              R"("messages":[{"role":"user","content":"hi"}]})";
const char kResponsesBody[] =
    R"({"model":"gpt-5","stream":true,"store":false,"input":[{"role":"user","content":"hi"}]})";
const char kChatBody[] = R"({"model":"gpt-5","messages":[{"role":"user","content":"hi"}]})";

bool Contains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

class ServeProxyTest : public ServeFixture {
 protected:
  // The same request straight to the upstream and through the proxy.
  std::pair<RawResponse, RawResponse> DirectAndProxied(const std::string& method,
                                                       const std::string& target,
                                                       const Fields& headers,
                                                       const std::string& body) {
    auto direct = Fetch(upstream_.port(), method, target, headers, body);
    auto proxied = Fetch(port_, method, target, headers, body);
    EXPECT_TRUE(direct.has_value());
    EXPECT_TRUE(proxied.has_value());
    return {direct.value_or(RawResponse{}), proxied.value_or(RawResponse{})};
  }
};

TEST_F(ServeProxyTest, AnthropicStreamIsRelayedByteForByte) {
  StartProxy();
  Fields h = {{"x-api-key", "dummy"},
              {"anthropic-version", "2023-06-01"},
              {"content-type", "application/json"}};
  auto [direct, proxied] = DirectAndProxied("POST", "/v1/messages?beta=true", h, kAnthropicBody);
  EXPECT_EQ(proxied.status, 200);
  EXPECT_EQ(proxied.Header("content-type"), direct.Header("content-type"));
  EXPECT_NE(proxied.body.find("message_start"), std::string::npos);
  EXPECT_EQ(proxied.body, direct.body);
  auto seen = upstream_.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].target, "/v1/messages?beta=true");  // the query string is kept
  EXPECT_EQ(seen[1].body, kAnthropicBody);
}

// One keep-alive client connection, many exchanges of each kind: every
// response arrives whole and separate (the head goes out with an in-memory
// body in one send; a HEAD has none), and the worker's upstream transfer
// handle and connection are reused (one upstream connection in all).
TEST_F(ServeProxyTest, KeptAliveClientGetsWholeResponsesOverOneUpstreamConnection) {
  StartProxy();
  Fields h = {{"x-api-key", "dummy"},
              {"anthropic-version", "2023-06-01"},
              {"content-type", "application/json"}};
  nlohmann::json json_body = nlohmann::json::parse(kAnthropicBody);
  json_body["stream"] = false;
  const std::string sse = RequestBytes("POST", "/v1/messages", h, kAnthropicBody);
  const std::string json = RequestBytes("POST", "/v1/messages", h, json_body.dump());
  const std::string head = RequestBytes("HEAD", "/", {}, "");
  auto direct_sse = Fetch(upstream_.port(), "POST", "/v1/messages", h, kAnthropicBody);
  auto direct_json = Fetch(upstream_.port(), "POST", "/v1/messages", h, json_body.dump());
  ASSERT_TRUE(direct_sse && direct_json);
  const int before = upstream_.connections();
  RawClient c;
  ASSERT_TRUE(c.Connect(port_));
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(c.Send(sse));
    auto a = c.Read();
    ASSERT_TRUE(a.has_value()) << i;
    EXPECT_EQ(a->status, 200);
    EXPECT_EQ(a->body, direct_sse->body) << i;
    ASSERT_TRUE(c.Send(json));
    auto b = c.Read();
    ASSERT_TRUE(b.has_value()) << i;
    EXPECT_EQ(b->status, 200);
    EXPECT_EQ(b->body, direct_json->body) << i;
    ASSERT_TRUE(c.Send(head));
    auto d = c.Read(/*head_request=*/true);
    ASSERT_TRUE(d.has_value()) << i;
    EXPECT_TRUE(d->body.empty());
  }
  EXPECT_EQ(upstream_.connections() - before, 1);
}

// The worker's transfer handle is kept configured between requests: what one
// method set (HEAD's no-body, a custom method, a body) must not leak into
// the next request on the same handle. Every request of one kept-alive
// connection reaches the upstream with its own method and body.
TEST_F(ServeProxyTest, EachMethodReachesTheUpstreamAsSentOnAReusedHandle) {
  StartProxy();
  Fields h = {{"x-api-key", "dummy"},
              {"anthropic-version", "2023-06-01"},
              {"content-type", "application/json"}};
  struct Step {
    std::string method;
    std::string target;
    std::string body;
  };
  const std::vector<Step> steps = {
      {"HEAD", "/", ""},           {"POST", "/v1/messages", kAnthropicBody},
      {"HEAD", "/", ""},           {"GET", "/v1/models", ""},
      {"DELETE", "/v1/thing", ""}, {"PUT", "/v1/thing", "{\"put\":1}"},
      {"GET", "/v1/models", ""},   {"PATCH", "/v1/thing", "{\"patch\":2}"},
      {"HEAD", "/", ""},           {"POST", "/v1/messages", kAnthropicBody},
  };
  const size_t before = upstream_.request_count();
  RawClient c;
  ASSERT_TRUE(c.Connect(port_));
  for (const auto& step : steps) {
    SCOPED_TRACE(step.method + " " + step.target);
    ASSERT_TRUE(c.Send(RequestBytes(step.method, step.target, h, step.body)));
    auto r = c.Read(/*head_request=*/step.method == "HEAD");
    ASSERT_TRUE(r.has_value());
    if (step.method == "HEAD") {
      EXPECT_TRUE(r->body.empty());
    }
    if (step.method == "POST") {
      EXPECT_EQ(r->status, 200);
      EXPECT_NE(r->body.find("message_start"), std::string::npos);
    }
  }
  auto seen = upstream_.requests();
  ASSERT_EQ(seen.size() - before, steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& got = seen[before + i];
    SCOPED_TRACE(std::to_string(i) + ": " + steps[i].method + " " + steps[i].target);
    EXPECT_EQ(got.method, steps[i].method);
    EXPECT_EQ(got.target, steps[i].target);
    EXPECT_EQ(got.body, steps[i].body);
    if (steps[i].body.empty()) {
      EXPECT_TRUE(got.Header("content-length").empty() || got.Header("content-length") == "0");
    } else {
      EXPECT_EQ(got.Header("content-length"), std::to_string(steps[i].body.size()));
    }
  }
}

// Sets (or, with nullopt, unsets) process environment variables for the
// test's span, and puts the old values back.
class ScopedEnvVars {
 public:
  explicit ScopedEnvVars(
      const std::vector<std::pair<std::string, std::optional<std::string>>>& vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name.c_str());
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      Set(name, value);
    }
  }
  ~ScopedEnvVars() {
    for (const auto& [name, value] : saved_) Set(name, value);
  }
  ScopedEnvVars(const ScopedEnvVars&) = delete;
  ScopedEnvVars& operator=(const ScopedEnvVars&) = delete;

 private:
  static void Set(const std::string& name, const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// The upstream proxy comes from the environment as libcurl would take it
// (serve reads the variables once per worker thread, docs/serve.md): with
// http_proxy set the request goes to that proxy in absolute form; a host in
// no_proxy goes direct.
TEST_F(ServeProxyTest, UpstreamProxyFromTheEnvironmentIsHonoured) {
  FakeUpstream forward_proxy;
  ASSERT_TRUE(forward_proxy.Start());
  ASSERT_TRUE(upstream_.Start());
  Fields h = {{"x-api-key", "dummy"},
              {"anthropic-version", "2023-06-01"},
              {"content-type", "application/json"}};
  {
    ScopedEnvVars env({{"http_proxy", forward_proxy.url()},
                       {"all_proxy", std::nullopt},
                       {"ALL_PROXY", std::nullopt},
                       {"no_proxy", std::nullopt},
                       {"NO_PROXY", std::nullopt}});
    StartProxy();
    // (The fake does not emulate the API for an absolute-form target: what
    // it answers does not matter, where the request went does.)
    auto r = Fetch(port_, "POST", "/v1/messages?x=1", h, kAnthropicBody);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(forward_proxy.request_count(), 1u);
    EXPECT_EQ(forward_proxy.requests()[0].target, upstream_.url() + "/v1/messages?x=1");
    EXPECT_EQ(upstream_.request_count(), 0u);
    server_->Shutdown();
  }
  {
    ScopedEnvVars env({{"http_proxy", forward_proxy.url()},
                       {"all_proxy", std::nullopt},
                       {"ALL_PROXY", std::nullopt},
                       {"no_proxy", "localhost,127.0.0.1"},
                       {"NO_PROXY", std::nullopt}});
    StartProxy();
    auto r = Fetch(port_, "POST", "/v1/messages", h, kAnthropicBody);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(forward_proxy.request_count(), 1u);  // none more
    EXPECT_EQ(upstream_.request_count(), 1u);
  }
}

TEST_F(ServeProxyTest, ResponsesAndChatStreamingAndNotAreRelayedByteForByte) {
  StartProxy();
  Fields h = {{"authorization", "Bearer dummy"}, {"content-type", "application/json"}};
  std::string chat_stream =
      R"({"model":"gpt-5","stream":true,"messages":[{"role":"user","content":"hi"}]})";
  std::string responses_plain = R"({"model":"gpt-5","input":"hi"})";
  for (const auto& [target, body] :
       std::vector<std::pair<std::string, std::string>>{{"/v1/responses", kResponsesBody},
                                                        {"/v1/responses", responses_plain},
                                                        {"/v1/chat/completions", kChatBody},
                                                        {"/v1/chat/completions", chat_stream}}) {
    SCOPED_TRACE(target + " " + body);
    auto [direct, proxied] = DirectAndProxied("POST", target, h, body);
    EXPECT_EQ(proxied.status, direct.status);
    EXPECT_EQ(proxied.status, 200);
    EXPECT_EQ(proxied.Header("content-type"), direct.Header("content-type"));
    EXPECT_FALSE(proxied.body.empty());
    EXPECT_EQ(proxied.body, direct.body);
  }
}

TEST_F(ServeProxyTest, StreamIsRelayedAsItArrives) {
  StartProxy();
  ScriptedReply r;
  r.headers = {{"Content-Type", "text/event-stream"}};
  r.framing = ScriptedReply::Framing::kChunked;
  r.pieces = {"event: a\ndata: {\"n\":1}\n\n", "event: b\ndata: {\"n\":2}\n\n",
              "event: c\ndata: {\"n\":3}\n\n"};
  r.piece_delay = 400ms;
  upstream_.Push(r);
  RawClient c;
  ASSERT_TRUE(c.Connect(port_));
  ASSERT_TRUE(c.Send(RequestBytes("POST", "/v1/messages", {{"content-type", "application/json"}},
                                  kAnthropicBody)));
  auto res = c.Read();
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->body, r.Body());
  ASSERT_GE(res->pieces.size(), 2u);
  // The first event reached the client long before the last was sent (800 ms
  // later): a buffered relay would deliver all three at once.
  auto spread = res->pieces.back().first - res->pieces.front().first;
  EXPECT_GE(spread, 400ms);
  EXPECT_EQ(res->pieces.front().second.rfind("event: a", 0), 0u);
}

// What one read from the upstream brings reaches the client in one write:
// the response head with the events held before the relay began, then the
// rest of the stream (several upstream chunks) with its end. Counted as the
// data segments the client's socket received: one per send on loopback.
// Relaying chunk by chunk would take one write for the head, one per
// upstream chunk and one for the terminator (10 here).
TEST_F(ServeProxyTest, EachUpstreamReadReachesTheClientInOneWrite) {
  StartProxy();
  auto chunk = [](const std::string& event) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx", event.size());
    return std::string(size) + "\r\n" + event + "\r\n";
  };
  auto event = [](const std::string& type, const std::string& data) {
    return "event: " + type + "\ndata: " + data + "\n\n";
  };
  const std::vector<std::string> first = {
      event("message_start", R"({"type":"message_start","message":{"id":"m1","role":"assistant",)"
                             R"("content":[],"usage":{"input_tokens":5,"output_tokens":1}}})"),
      event(
          "content_block_start",
          R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"),
      event(
          "content_block_delta",
          R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}})")};
  const std::vector<std::string> rest = {
      event(
          "content_block_delta",
          R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}})"),
      event("content_block_stop", R"({"type":"content_block_stop","index":0})"),
      event("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},)"
                             R"("usage":{"output_tokens":2}})"),
      event("message_stop", R"({"type":"message_stop"})")};
  ScriptedReply r;
  r.headers = {{"Content-Type", "text/event-stream"}, {"Transfer-Encoding", "chunked"}};
  r.framing = ScriptedReply::Framing::kNone;  // the pieces are already chunked
  std::string first_text;
  std::string rest_text;
  r.pieces.emplace_back();
  for (const auto& e : first) r.pieces.back() += chunk(e), first_text += e;
  r.pieces.emplace_back();
  for (const auto& e : rest) r.pieces.back() += chunk(e), rest_text += e;
  r.pieces.back() += "0\r\n\r\n";
  r.piece_delay = 300ms;
  upstream_.Push(r);
  RawClient c;
  ASSERT_TRUE(c.Connect(port_));
  const int64_t before = DataSegmentsReceived(c.fd());
  ASSERT_GE(before, 0) << "the kernel does not count data segments (tcpi_data_segs_in)";
  ASSERT_TRUE(c.Send(RequestBytes("POST", "/v1/messages", {{"content-type", "application/json"}},
                                  kAnthropicBody)));
  auto res = c.Read();
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->body, first_text + rest_text);
  // One chunk a read (chunk boundaries carry no meaning in HTTP), and the
  // stream relayed as it came, not gathered: its second part left the
  // upstream 300 ms after the first.
  ASSERT_EQ(res->pieces.size(), 2u);
  EXPECT_EQ(res->pieces[0].second, first_text);
  EXPECT_EQ(res->pieces[1].second, rest_text);
  EXPECT_GE(res->pieces[1].first - res->pieces[0].first, 250ms);
  EXPECT_EQ(DataSegmentsReceived(c.fd()) - before, 2);
}

TEST_F(ServeProxyTest, HeadModelsAndUnknownPathsPassThrough) {
  StartProxy();
  auto head = Fetch(port_, "HEAD", "/", {});
  ASSERT_TRUE(head.has_value());
  auto direct_head = Fetch(upstream_.port(), "HEAD", "/", {});
  ASSERT_TRUE(direct_head.has_value());
  EXPECT_EQ(head->status, direct_head->status);
  EXPECT_TRUE(head->body.empty());

  auto [dm, pm] = DirectAndProxied("GET", "/v1/models", {{"authorization", "Bearer k"}}, "");
  EXPECT_EQ(pm.status, dm.status);
  EXPECT_EQ(pm.body, dm.body);

  ScriptedReply r;
  r.status = 418;
  r.reason = "I'm a teapot";
  r.headers = {{"Content-Type", "text/plain"}, {"X-Odd", "yes"}};
  r.pieces = {"short and stout"};
  upstream_.Push(r);
  auto odd = Fetch(port_, "GET", "/some/other/path?x=1&y=%20z", {});
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(odd->status, 418);
  EXPECT_EQ(odd->body, "short and stout");
  EXPECT_EQ(odd->Header("x-odd"), "yes");
  EXPECT_EQ(upstream_.requests().back().target, "/some/other/path?x=1&y=%20z");
  EXPECT_EQ(upstream_.requests()[0].method, "HEAD");
}

TEST_F(ServeProxyTest, EndToEndHeadersForwardedHopByHopRemovedHostRewritten) {
  StartProxy();
  ScriptedReply r;
  r.headers = {{"Content-Type", "application/json"},
               {"Connection", "X-Resp-Hop"},
               {"X-Resp-Hop", "1"},
               {"Keep-Alive", "timeout=5"},
               {"request-id", "req_123"},
               {"anthropic-ratelimit-requests-remaining", "99"}};
  r.pieces = {"{\"ok\":true}"};
  upstream_.Push(r);
  Fields h = {{"x-api-key", "dummy-key"},
              {"anthropic-version", "2023-06-01"},
              {"anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14"},
              {"x-claude-code-session-id", "abc-123"},
              {"x-stainless-lang", "js"},
              {"session-id", "s-1"},
              {"Connection", "keep-alive, X-Hop"},
              {"X-Hop", "drop me"},
              {"Keep-Alive", "timeout=5"},
              {"TE", "trailers"},
              {"Proxy-Authorization", "Basic Zm9vOmJhcg=="},
              {"Trailer", "X-T"},
              {"content-type", "application/json"}};
  auto res = Fetch(port_, "POST", "/v1/messages", h, "{}");
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "{\"ok\":true}");
  EXPECT_EQ(res->Header("request-id"), "req_123");
  EXPECT_EQ(res->Header("anthropic-ratelimit-requests-remaining"), "99");
  EXPECT_FALSE(res->HasHeader("x-resp-hop"));
  // The proxy's own connection may announce Keep-Alive; the upstream's is not relayed.
  EXPECT_NE(res->Header("keep-alive"), "timeout=5");
  ASSERT_TRUE(upstream_.WaitForRequests(1, 5s));
  const UpstreamRecord up = upstream_.requests().back();
  for (const char* kept : {"x-api-key", "anthropic-version", "anthropic-beta",
                           "x-claude-code-session-id", "x-stainless-lang", "session-id"}) {
    std::string want;
    for (const auto& [n, v] : h) {
      if (n == kept) want = v;
    }
    EXPECT_EQ(up.Header(kept), want) << kept;
  }
  for (const char* dropped : {"x-hop", "keep-alive", "te", "proxy-authorization", "trailer"}) {
    EXPECT_EQ(up.Header(dropped), "") << dropped;
  }
  EXPECT_EQ(up.Header("host"), "127.0.0.1:" + std::to_string(upstream_.port()));
  EXPECT_EQ(up.body, "{}");
}

TEST_F(ServeProxyTest, CompressedBodiesPassUnchangedAndDecodeForHooks) {
  // A hook that reads the decoded body and, for zstd, rewrites it.
  struct Seen {
    std::mutex mu;
    std::vector<std::string> decoded;
  };
  auto seen = std::make_shared<Seen>();
  class Reader : public serve::ExchangeHook {
   public:
    explicit Reader(std::shared_ptr<Seen> s) : s_(std::move(s)) {}
    void BeforeForward(serve::Exchange& ex) override {
      auto body = ex.DecodedBody();
      std::lock_guard<std::mutex> lock(s_->mu);
      s_->decoded.push_back(body.ok() ? std::string(*body) : "error: " + body.status().message());
      if (ex.request().content_encoding == "zstd") {
        ex.ReplaceBody(R"({"rewritten":true})");
        ex.AddResponseHeader("x-compactor-compacted", "tokens-before=10; tokens-after=5");
      }
    }

   private:
    std::shared_ptr<Seen> s_;
  };
  class Hook : public serve::ProxyHook {
   public:
    explicit Hook(std::shared_ptr<Seen> s) : s_(std::move(s)) {}
    std::unique_ptr<serve::ExchangeHook> Begin(serve::Exchange&) override {
      return std::make_unique<Reader>(s_);
    }

   private:
    std::shared_ptr<Seen> s_;
  };
  StartProxy({}, [&](serve::Server& s) { s.proxy().AddHook(std::make_shared<Hook>(seen)); });
  std::string json = kChatBody;
  std::string gz = Gzip(json);
  auto res = Fetch(port_, "POST", "/v1/chat/completions",
                   {{"content-type", "application/json"}, {"content-encoding", "gzip"}}, gz);
  ASSERT_TRUE(res.has_value());
  ASSERT_TRUE(upstream_.WaitForRequests(1, 5s));
  auto up = upstream_.requests().back();
  EXPECT_EQ(up.body, gz);  // not rewritten: forwarded as received
  EXPECT_EQ(up.Header("content-encoding"), "gzip");

  std::string zs = Zstd(json);
  res = Fetch(port_, "POST", "/v1/chat/completions",
              {{"content-type", "application/json"}, {"content-encoding", "zstd"}}, zs);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->Header("x-compactor-compacted"), "tokens-before=10; tokens-after=5");
  ASSERT_TRUE(upstream_.WaitForRequests(2, 5s));
  up = upstream_.requests().back();
  EXPECT_EQ(up.body, R"({"rewritten":true})");  // rewritten: sent uncompressed
  EXPECT_EQ(up.Header("content-encoding"), "");
  std::lock_guard<std::mutex> lock(seen->mu);
  ASSERT_EQ(seen->decoded.size(), 2u);
  EXPECT_EQ(seen->decoded[0], json);
  EXPECT_EQ(seen->decoded[1], json);
}

TEST_F(ServeProxyTest, BodyOverTheLimitIs413) {
  StartProxy([](ServeOptions& o) { o.max_body_bytes = 1024; });
  std::string big(4096, 'x');
  auto res = Fetch(port_, "POST", "/v1/messages", {{"content-type", "application/json"}}, big);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 413);
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << res->body;
  EXPECT_EQ(j["type"], "error");
  EXPECT_EQ(j["error"]["type"], "request_too_large");
  EXPECT_EQ(upstream_.request_count(), 0u);
  // A body within the limit still goes through.
  res = Fetch(port_, "POST", "/v1/chat/completions", {{"content-type", "application/json"}},
              kChatBody);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 200);
}

TEST_F(ServeProxyTest, ClientDisconnectCancelsTheUpstreamRequest) {
  StartProxy();
  ScriptedReply r;
  r.headers = {{"Content-Type", "text/event-stream"}};
  r.framing = ScriptedReply::Framing::kChunked;
  for (int i = 0; i < 100; ++i) r.pieces.push_back("data: {\"i\":" + std::to_string(i) + "}\n\n");
  r.piece_delay = 100ms;
  upstream_.Push(r);
  RawClient c;
  ASSERT_TRUE(c.Connect(port_));
  ASSERT_TRUE(c.Send(RequestBytes("POST", "/v1/messages", {{"content-type", "application/json"}},
                                  kAnthropicBody)));
  auto res = c.Read(
      false, [](const std::string&) { return false; }, 10s);
  ASSERT_TRUE(res.has_value());
  c.Close();
  // The upstream sees its client (the proxy) go away long before the 10 s reply ends.
  EXPECT_TRUE(upstream_.WaitForClientLeft(5s));
  auto lines = WaitLogs(1);
  ASSERT_FALSE(lines.empty());
}

TEST_F(ServeProxyTest, UpstreamDownIs502InTheApisErrorShape) {
  ASSERT_TRUE(upstream_.Start());
  int dead = upstream_.port();
  upstream_.Stop();
  StartProxy([dead](ServeOptions& o) { o.upstream = "http://127.0.0.1:" + std::to_string(dead); });
  auto res =
      Fetch(port_, "POST", "/v1/messages", {{"x-api-key", "sk-ant-secret-key-1"}}, kAnthropicBody);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 502);
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << res->body;
  EXPECT_EQ(j["type"], "error");
  EXPECT_EQ(j["error"]["type"], "api_error");
  res = Fetch(port_, "POST", "/v1/responses", {{"authorization", "Bearer sk-secret-2"}},
              kResponsesBody);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 502);
  j = nlohmann::json::parse(res->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << res->body;
  EXPECT_EQ(j["error"]["type"], "server_error");
  EXPECT_EQ(j["error"]["code"], "upstream_unreachable");
  EXPECT_EQ(res->body.find("sk-secret-2"), std::string::npos);
}

TEST_F(ServeProxyTest, SilentUpstreamIs504) {
  StartProxy([](ServeOptions& o) { o.upstream_idle_timeout_ms = 300; });
  ScriptedReply r;
  r.head_delay = 2000ms;
  r.pieces = {"late"};
  upstream_.Push(r);
  auto res = Fetch(port_, "POST", "/v1/chat/completions", {}, kChatBody);
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 504);
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << res->body;
  EXPECT_EQ(j["error"]["code"], "upstream_timeout");
}

TEST_F(ServeProxyTest, HealthMetricsAndServiceNotFound) {
  StartProxy();
  auto health = Fetch(port_, "GET", "/healthz", {});
  ASSERT_TRUE(health.has_value());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, R"({"status":"ok"})");
  ASSERT_TRUE(Fetch(port_, "POST", "/v1/chat/completions", {}, kChatBody).has_value());
  WaitLogs(2);
  auto metrics = Fetch(port_, "GET", "/metrics", {});
  ASSERT_TRUE(metrics.has_value());
  EXPECT_EQ(metrics->status, 200);
  for (const char* name :
       {"compactor_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 1",
        "compactor_upstream_latency_seconds_bucket", "compactor_compactions_total",
        "compactor_tokens_saved_total", "compactor_summary_cache_hits_total"}) {
    EXPECT_NE(metrics->body.find(name), std::string::npos) << name << "\n" << metrics->body;
  }
  auto nf = Fetch(port_, "GET", "/compactor/v1/sessions", {});
  ASSERT_TRUE(nf.has_value());
  EXPECT_EQ(nf->status, 404);
  auto j = nlohmann::json::parse(nf->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << nf->body;
  EXPECT_EQ(j["error"]["code"], "not_found");
  EXPECT_EQ(upstream_.request_count(), 1u);  // none of these reached the upstream
}

TEST_F(ServeProxyTest, ServiceApiNeedsTheTokenOffLoopback) {
  StartProxy([](ServeOptions& o) {
    o.listen = "0.0.0.0:0";
    o.token = "s3cret-token";
  });
  auto none = Fetch(port_, "GET", "/compactor/v1/sessions", {});
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->status, 401);
  auto wrong = Fetch(port_, "GET", "/compactor/v1/sessions", {{"authorization", "Bearer nope"}});
  ASSERT_TRUE(wrong.has_value());
  EXPECT_EQ(wrong->status, 401);
  auto right =
      Fetch(port_, "GET", "/compactor/v1/sessions", {{"authorization", "Bearer s3cret-token"}});
  ASSERT_TRUE(right.has_value());
  EXPECT_EQ(right->status, 404);  // authorized; the service API is not there yet
  // Proxied paths carry the client's own credentials, not the service token.
  auto proxied = Fetch(port_, "POST", "/v1/chat/completions", {}, kChatBody);
  ASSERT_TRUE(proxied.has_value());
  EXPECT_EQ(proxied->status, 200);
}

TEST_F(ServeProxyTest, KeysNeverReachTheLog) {
  ASSERT_TRUE(upstream_.Start());
  int dead = upstream_.port();
  upstream_.Stop();
  StartProxy([dead](ServeOptions& o) {
    o.upstream = "http://user:pa55word@127.0.0.1:" + std::to_string(dead);
  });
  ASSERT_TRUE(
      Fetch(port_, "POST", "/v1/messages?key=sk-query-secret&beta=true",
            {{"x-api-key", "sk-ant-header-secret"}, {"authorization", "Bearer sk-bearer-secret"}},
            kAnthropicBody)
          .has_value());
  auto lines = WaitLogs(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("POST /v1/messages?"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(" 502 "), std::string::npos) << lines[0];
  for (const char* secret :
       {"sk-query-secret", "sk-ant-header-secret", "sk-bearer-secret", "pa55word"}) {
    EXPECT_FALSE(Contains(lines, secret)) << secret << " in " << lines[0];
  }
}

TEST_F(ServeProxyTest, OneLogLinePerRequestHumanAndJson) {
  StartProxy();
  ASSERT_TRUE(Fetch(port_, "POST", "/v1/messages?beta=true", {}, kAnthropicBody).has_value());
  auto lines = WaitLogs(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("POST /v1/messages?beta=true 200 ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("compacted=no"), std::string::npos) << lines[0];
  server_->Shutdown();
  server_.reset();
  logs_.clear();
  StartProxy([](ServeOptions& o) { o.json_logs = true; });
  ASSERT_TRUE(Fetch(port_, "POST", "/v1/responses", {}, kResponsesBody).has_value());
  lines = WaitLogs(1);
  ASSERT_EQ(lines.size(), 1u);
  auto j = nlohmann::json::parse(lines[0], nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << lines[0];
  EXPECT_EQ(j["method"], "POST");
  EXPECT_EQ(j["path"], "/v1/responses");
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["compacted"], false);
  EXPECT_TRUE(j["ms"].is_number());
  EXPECT_TRUE(j.contains("tokensIn"));
}

}  // namespace
}  // namespace compactor::testing
