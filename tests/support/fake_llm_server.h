// A fake LLM server on 127.0.0.1 (cpp-httplib) for provider tests. It accepts
// any POST path, records every request, and answers from a script of replies
// (FIFO); with an empty script it answers 500 "script exhausted" so an
// unexpected extra request fails the test visibly.
#ifndef COMPACTOR_TESTS_SUPPORT_FAKE_LLM_SERVER_H_
#define COMPACTOR_TESTS_SUPPORT_FAKE_LLM_SERVER_H_

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "compactor/providers.h"

namespace httplib {
class Server;
}

namespace compactor::testing {

// A request of one user text message.
inline LlmRequest Req(std::string system_prompt, std::string user_text, int64_t max_tokens) {
  LlmRequest r;
  r.system_prompt = std::move(system_prompt);
  r.messages.push_back(LlmMessage::UserText(std::move(user_text)));
  r.max_tokens = max_tokens;
  return r;
}

struct FakeReply {
  FakeReply() = default;
  FakeReply(int status_in, std::string body_in, std::string content_type_in = "application/json",
            std::map<std::string, std::string> headers_in = {},
            std::chrono::milliseconds delay_in = std::chrono::milliseconds(0))
      : status(status_in),
        body(std::move(body_in)),
        content_type(std::move(content_type_in)),
        headers(std::move(headers_in)),
        delay(delay_in) {}

  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;
  // Wait this long before answering (the server stays responsive to Stop()).
  std::chrono::milliseconds delay{0};
  // Declare Content-Length of the full body but send only the first half,
  // then drop the connection.
  bool truncate = false;
  // When not empty: sent with chunked transfer encoding, one write per chunk,
  // `chunk_delay` apart (the body above is ignored).
  std::vector<std::string> chunks;
  std::chrono::milliseconds chunk_delay{5};
};

struct RecordedRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::chrono::steady_clock::time_point at;
};

class FakeLlmServer {
 public:
  FakeLlmServer();
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  // Binds a free port on 127.0.0.1 and serves on a thread. False on failure.
  bool Start();
  void Stop();
  int port() const { return port_; }
  // "http://127.0.0.1:<port>"
  std::string base_url() const;

  void Push(FakeReply reply);
  std::vector<RecordedRequest> requests() const;
  size_t request_count() const;

  // Canned success bodies.
  static std::string ChatReply(const std::string& text, const std::string& finish = "stop",
                               int prompt_tokens = 100, int completion_tokens = 20);
  static std::string AnthropicReply(const std::string& text, const std::string& stop = "end_turn",
                                    int input_tokens = 100, int output_tokens = 20);
  static std::string ResponsesReply(const std::string& text, int input_tokens = 100,
                                    int output_tokens = 20);
  static std::string RemoteReply(const std::string& summary);

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::deque<FakeReply> script_;
  std::vector<RecordedRequest> requests_;
};

}  // namespace compactor::testing

#endif  // COMPACTOR_TESTS_SUPPORT_FAKE_LLM_SERVER_H_
