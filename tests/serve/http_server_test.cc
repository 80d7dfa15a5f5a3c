// The HTTP server's life cycle: Drain() right after Start(), with no request
// served, returns (it used to race with the accept loop's start and wait
// forever).
#include "serve/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
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

}  // namespace
}  // namespace compactor::testing
