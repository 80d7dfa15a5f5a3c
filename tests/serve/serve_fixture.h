// The proxy in process on a real port in front of a FakeUpstream, with its
// log lines captured.
#ifndef COMPACTOR_TESTS_SERVE_SERVE_FIXTURE_H_
#define COMPACTOR_TESTS_SERVE_SERVE_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "compactor/serve.h"
#include "serve/server.h"
#include "support/fake_upstream.h"
#include "support/http_client.h"

namespace compactor::testing {

class ServeFixture : public ::testing::Test {
 protected:
  // Starts the upstream (unless started) and the proxy in front of it.
  // `adjust` may change the options before they are resolved; `setup` sees
  // the server before it starts (hooks, routes).
  void StartProxy(const std::function<void(ServeOptions&)>& adjust = {},
                  const std::function<void(serve::Server&)>& setup = {}) {
    if (upstream_.port() == 0) {
      ASSERT_TRUE(upstream_.Start());
    }
    ServeOptions o;
    o.listen = "127.0.0.1:0";
    o.upstream = upstream_.url();
    o.store = "/nonexistent-store";
    if (adjust) adjust(o);
    std::vector<std::string> warnings;
    Status s = ResolveServeDefaults(&o, &warnings);
    ASSERT_TRUE(s.ok()) << s.ToString();
    server_ = std::make_unique<serve::Server>(o, [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      logs_.push_back(line);
    });
    if (setup) setup(*server_);
    Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    port_ = server_->port();
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
    upstream_.Stop();
  }

  std::vector<std::string> logs() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return logs_;
  }

  // Waits until `n` log lines were written (a response's line follows its last byte).
  std::vector<std::string> WaitLogs(size_t n) {
    for (int i = 0; i < 500; ++i) {
      auto l = logs();
      if (l.size() >= n) return l;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return logs();
  }

  FakeUpstream upstream_;
  std::unique_ptr<serve::Server> server_;
  int port_ = 0;
  std::mutex log_mu_;
  std::vector<std::string> logs_;
};

}  // namespace compactor::testing

#endif  // COMPACTOR_TESTS_SERVE_SERVE_FIXTURE_H_
