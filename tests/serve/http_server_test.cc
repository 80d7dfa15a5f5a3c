// The HTTP server: its life cycle (Drain() right after Start(), with no
// request served, returns; it used to race with the accept loop's start and
// wait forever), and how it reads requests and writes responses on a real
// socket: pipelining, bodies by length and chunked, 100-continue, refusals
// with their status, connection reuse and close, content providers.
#include "serve/http_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>

#include "support/http_client.h"

namespace compactor::testing {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<serve::HttpServer> NewServer() {
  serve::HttpServerOptions o;
  o.threads = 4;
  o.env = Env::Default();
  return std::make_unique<serve::HttpServer>(
      o, [](const httplib::Request&, httplib::Response& res, const httplib::ContentReader*) {
        res.status = 204;
      });
}

TEST(HttpServerTest, DrainRightAfterStartReturns) {
  constexpr int kRounds = 200;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::atomic<int> rounds{0};
  // A hang must fail the test, not stall the suite: the watchdog ends the
  // process with a message when the rounds take far too long.
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, 60s, [&] { return done; })) {
      std::fprintf(stderr, "Drain() hung after %d Start+Drain rounds\n", rounds.load());
      std::abort();
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    auto server = NewServer();
    if (!server->Start("127.0.0.1", 0).ok()) {
      ADD_FAILURE() << "Start failed in round " << i;
      break;
    }
    server->Drain();
    rounds.fetch_add(1);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  EXPECT_EQ(rounds.load(), kRounds);
}

TEST(HttpServerTest, AStartedServerAnswersThenDrains) {
  auto server = NewServer();
  ASSERT_TRUE(server->Start("127.0.0.1", 0).ok());
  auto res = Fetch(server->bound_port(), "GET", "/", {});
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 204);
  server->Drain();
  EXPECT_EQ(server->active_requests(), 0);
}

// Echoes what it was given as JSON; some targets act otherwise (see below).
void Echo(const httplib::Request& req, httplib::Response& res,
          const httplib::ContentReader* reader) {
  serve::Connection* conn = serve::CurrentConnection();
  if (req.target == "/throw") throw std::runtime_error("a handler bug");
  if (req.target == "/stream" || req.target == "/sized") {
    conn->exact_headers = serve::HeaderList{{"Content-Type", "text/plain"}};
    res.status = 200;
    auto pieces = [](size_t, httplib::DataSink& sink) {
      for (const char* p : {"one ", "two ", "three"}) sink.write(p, std::strlen(p));
      if (sink.done) sink.done();
      return true;
    };
    if (req.target == "/stream") {
      res.set_chunked_content_provider("", pieces);
    } else {
      res.set_content_provider(13, "", [pieces](size_t offset, size_t, httplib::DataSink& sink) {
        return pieces(offset, sink);
      });
    }
    return;
  }
  if (req.target == "/fields") {
    conn->exact_headers = serve::HeaderList{{"X-Good", "1"},
                                            {"X-Bad", "a\rb"},
                                            {"X-Split", "a\r\nX-Injected: 1"},
                                            {"Bad Name", "x"},
                                            {"X-Nul", std::string("a\0b", 3)}};
    res.status = 200;
    res.body = "ok";
    return;
  }
  nlohmann::json out;
  out["method"] = req.method;
  out["target"] = req.target;
  out["version"] = req.version;
  for (const auto& [k, v] : req.params) out["params"][k] = v;
  for (const auto& [k, v] : conn->headers) out["headers"].push_back({k, v});
  std::string body;
  if (reader != nullptr && req.target != "/noread") {
    Status read = serve::ReadBody(reader, 1 << 20, &body);
    out["read"] = read.ok();
  }
  out["body"] = body;
  res.status = req.target == "/empty" ? 204 : 200;
  conn->exact_headers = serve::HeaderList{{"Content-Type", "application/json"}};
  if (res.status != 204) res.body = out.dump();
}

class HttpServerWireTest : public ::testing::Test {
 protected:
  void SetUp() override {
    serve::HttpServerOptions o;
    o.threads = 4;
    o.env = Env::Default();
    o.keep_alive_max_requests = 100;
    server_ = std::make_unique<serve::HttpServer>(o, Echo);
    ASSERT_TRUE(server_->Start("127.0.0.1", 0).ok());
    ASSERT_TRUE(client_.Connect(server_->bound_port()));
  }
  void TearDown() override { server_->Drain(); }
  nlohmann::json ReadJson(int status = 200) {
    auto r = client_.Read();
    EXPECT_TRUE(r.has_value());
    if (!r) return nullptr;
    EXPECT_EQ(r->status, status) << r->body;
    return nlohmann::json::parse(r->body, nullptr, false);
  }
  std::unique_ptr<serve::HttpServer> server_;
  RawClient client_;
};

TEST_F(HttpServerWireTest, PipelinedRequestsAreAnsweredInOrderWithTheirBodies) {
  ASSERT_TRUE(client_.Send(
      "POST /a?x=1&y=two%20words HTTP/1.1\r\nHost: h\r\nX-Case: Kept\r\nContent-Length: 5\r\n\r\n"
      "hello"
      "PUT /b HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: "
      "chunked\r\n\r\n3\r\nabc\r\n2;e=1\r\nde\r\n0\r\n\r\n"
      "GET /c HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto a = ReadJson();
  EXPECT_EQ(a["method"], "POST");
  EXPECT_EQ(a["target"], "/a?x=1&y=two%20words");
  EXPECT_EQ(a["params"]["y"], "two words");
  EXPECT_EQ(a["body"], "hello");
  EXPECT_EQ(a["headers"][1], nlohmann::json::array({"X-Case", "Kept"}));
  auto b = ReadJson();
  EXPECT_EQ(b["method"], "PUT");
  EXPECT_EQ(b["body"], "abcde");
  auto c = ReadJson();
  EXPECT_EQ(c["target"], "/c");
  EXPECT_FALSE(client_.ClosedByPeer(100ms));
}

TEST_F(HttpServerWireTest, ExpectContinueIsAnsweredWhenTheBodyIsRead) {
  ASSERT_TRUE(client_.Send(
      "POST /e HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
  std::string got;
  char buf[256];
  while (got.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = ::recv(client_.fd(), buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(got, "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(client_.Send("body"));
  EXPECT_EQ(ReadJson()["body"], "body");
}

TEST_F(HttpServerWireTest, MalformedRequestsAreRefusedAndTheConnectionCloses) {
  struct Case {
    std::string request;
    int status;
    std::string code;
  };
  const std::vector<Case> cases = {
      {"GET / HTTP/1.1\r\nHost: t\r\nBad Header: x\r\n\r\n", 400, "bad_request"},
      {"GET / HTTP/2.0\r\n\r\n", 505, "http_error"},
      {"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "http_error"},
      {"BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n", 501, "http_error"},
      {"GET / HTTP/1.1\r\n\r\n", 400, "bad_request"},  // no Host
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "bad_request"},
      {"GET / HTTP/1.1\r\nHost: t\r\nX: " + std::string(70 * 1024, 'a') + "\r\n\r\n", 431,
       "http_error"},
  };
  for (const auto& c : cases) {
    RawClient raw;
    ASSERT_TRUE(raw.Connect(server_->bound_port()));
    ASSERT_TRUE(raw.Send(c.request));
    auto r = raw.Read();
    ASSERT_TRUE(r.has_value()) << c.request.substr(0, 40);
    EXPECT_EQ(r->status, c.status) << c.request.substr(0, 40);
    auto body = nlohmann::json::parse(r->body, nullptr, false);
    EXPECT_EQ(body["error"]["code"], c.code) << r->body;
    // (An unknown method's request was whole: only it may keep the connection.)
    if (c.request.rfind("BREW", 0) != 0) {
      EXPECT_EQ(r->Header("connection"), "close");
      EXPECT_TRUE(raw.ClosedByPeer(2s)) << c.request.substr(0, 40);
    }
  }
}

TEST_F(HttpServerWireTest, AnUnreadBodyClosesTheConnectionAfterTheAnswer) {
  ASSERT_TRUE(client_.Send("POST /noread HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"));
  auto r = client_.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("connection"), "close");
  EXPECT_TRUE(client_.ClosedByPeer(3s));
}

TEST_F(HttpServerWireTest, Http10ClosesUnlessItAsksToKeepTheConnection) {
  ASSERT_TRUE(client_.Send("GET /k HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  auto kept = client_.Read();
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->Header("connection"), "keep-alive");
  EXPECT_FALSE(client_.ClosedByPeer(100ms));
  ASSERT_TRUE(client_.Send("GET /c HTTP/1.0\r\n\r\n"));
  auto closed = client_.Read();
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->Header("connection"), "close");
  EXPECT_TRUE(client_.ClosedByPeer(2s));
}

TEST_F(HttpServerWireTest, HeadAndNoContentCarryNoBodyOnAKeptConnection) {
  ASSERT_TRUE(client_.Send("HEAD /h HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto head = client_.Read(/*head_request=*/true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_NE(head->Header("content-length"), "");
  EXPECT_NE(head->Header("keep-alive"), "");
  ASSERT_TRUE(client_.Send("GET /empty HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto empty = client_.Read();
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->status, 204);
  EXPECT_EQ(empty->Header("content-length"), "");
  // Nothing was left over for the next answer to trip on.
  ASSERT_TRUE(client_.Send("GET /after HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_EQ(ReadJson()["target"], "/after");
}

TEST_F(HttpServerWireTest, ContentProvidersAreFramedChunkedOrByLength) {
  ASSERT_TRUE(client_.Send(
      "GET /stream HTTP/1.1\r\nHost: t\r\n\r\nGET /sized HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto chunked = client_.Read();
  ASSERT_TRUE(chunked.has_value());
  EXPECT_TRUE(chunked->chunked);
  EXPECT_EQ(chunked->body, "one two three");
  EXPECT_EQ(chunked->pieces.size(), 3u);
  auto sized = client_.Read();
  ASSERT_TRUE(sized.has_value());
  EXPECT_EQ(sized->Header("content-length"), "13");
  EXPECT_EQ(sized->body, "one two three");
}

// An HTTP/1.0 client cannot read chunks: a stream of unknown length goes to
// it as it is, ended by the close; a chunked request body from it is read,
// and then the connection closes (RFC 9112 section 6.1).
TEST_F(HttpServerWireTest, Http10GetsStreamsUnchunkedAndItsChunkedBodiesClose) {
  ASSERT_TRUE(client_.Send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  auto r = client_.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->Header("transfer-encoding"), "");
  EXPECT_EQ(r->Header("content-length"), "");
  EXPECT_EQ(r->Header("connection"), "close");
  EXPECT_EQ(r->body, "one two three");
  RawClient other;
  ASSERT_TRUE(other.Connect(server_->bound_port()));
  ASSERT_TRUE(
      other.Send("POST /te HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "2\r\nhi\r\n0\r\n\r\n"));
  auto te = other.Read();
  ASSERT_TRUE(te.has_value());
  EXPECT_EQ(nlohmann::json::parse(te->body, nullptr, false)["body"], "hi");
  EXPECT_EQ(te->Header("connection"), "close");
  EXPECT_TRUE(other.ClosedByPeer(2s));
}

// A response field that is not a token name with a value free of control
// characters is left out: a CR or LF from an upstream or a hook must not
// make a field of its own.
TEST_F(HttpServerWireTest, UnsafeResponseFieldsAreLeftOut) {
  ASSERT_TRUE(client_.Send("GET /fields HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto r = client_.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("x-good"), "1");
  for (const char* gone : {"x-bad", "x-split", "x-injected", "bad name", "x-nul"}) {
    EXPECT_EQ(r->Header(gone), "") << gone;
  }
  EXPECT_EQ(r->body, "ok");
}

// A head must arrive whole within the client timeout, not only each of its
// pieces: a client that trickles a byte well inside the per-read timeout is
// cut off once the whole head has taken longer.
TEST(HttpServerTest, AHeadTrickledPastTheClientTimeoutIsCutOff) {
  serve::HttpServerOptions o;
  o.threads = 2;
  o.env = Env::Default();
  o.client_timeout_ms = 400;
  serve::HttpServer server(o, Echo);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  RawClient c;
  ASSERT_TRUE(c.Connect(server.bound_port()));
  ASSERT_TRUE(c.Send("GET /slow HTTP/1.1\r\nHost: t\r\n"));
  auto started = std::chrono::steady_clock::now();
  bool closed = false;
  // A field every 100 ms (a quarter of the per-read timeout), for at most 3 s.
  for (int i = 0; i < 30 && !closed; ++i) {
    std::this_thread::sleep_for(100ms);
    closed = !c.Send("X-Slow: 1\r\n") || c.ClosedByPeer(1ms);
  }
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(closed) << "the server waited for the trickled head for 3 s";
  EXPECT_GE(took, 350ms);
  EXPECT_LT(took, 2s);
  server.Drain();
}

TEST_F(HttpServerWireTest, AHandlerThatThrowsGets500AndTheServerGoesOn) {
  ASSERT_TRUE(client_.Send("GET /throw HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto r = ReadJson(500);
  EXPECT_EQ(r["error"]["code"], "internal");
  RawClient next;
  ASSERT_TRUE(next.Connect(server_->bound_port()));
  ASSERT_TRUE(next.Send("GET /fine HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto fine = next.Read();
  ASSERT_TRUE(fine.has_value());
  EXPECT_EQ(fine->status, 200);
}

}  // namespace
}  // namespace compactor::testing
