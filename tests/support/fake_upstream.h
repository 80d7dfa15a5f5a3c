// A fake model API server on 127.0.0.1 for the proxy's tests and benchmark,
// written on plain sockets so that every byte it sends and receives is under
// the test's control: request heads are recorded field by field in order,
// replies are scripted down to hop-by-hop fields and framing, streams are
// sent piece by piece with delays, and a client that goes away mid-reply is
// noticed (the proxy must cancel its upstream request).
//
// Without a script it speaks the three APIs like the real ones (ApiReply):
// Anthropic Messages, OpenAI Responses and Chat Completions, streamed (SSE)
// or not, with a tool call when the request offers tools and the
// conversation does not yet hold a tool result; GET /v1/models; HEAD /.
#ifndef COMPACTOR_TESTS_SUPPORT_FAKE_UPSTREAM_H_
#define COMPACTOR_TESTS_SUPPORT_FAKE_UPSTREAM_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace compactor::testing {

using FieldList = std::vector<std::pair<std::string, std::string>>;

struct UpstreamRecord {
  std::string method;
  std::string target;
  FieldList headers;  // in order, names as sent
  std::string body;   // de-chunked
  bool chunked = false;
  // The client closed the connection before the reply was complete.
  bool client_left = false;
  std::string Header(std::string_view name) const;  // first value, case-insensitive
};

struct ScriptedReply {
  int status = 200;
  std::string reason = "OK";
  FieldList headers;  // sent as given, plus the framing field below
  // kNone: no framing field is added (a HEAD answer with its own Content-Length).
  enum class Framing { kLength, kChunked, kClose, kNone } framing = Framing::kLength;
  std::vector<std::string> pieces;  // the body, one write (one chunk) each
  std::chrono::milliseconds head_delay{0};
  std::chrono::milliseconds piece_delay{0};  // before every piece but the first
  // Close the connection after this many pieces instead of finishing.
  int abort_after = -1;
  bool close_after = false;  // close once the reply is complete
  std::string Body() const;
};

struct ApiReplyOptions {
  int events = 8;  // text deltas in a stream
  std::chrono::microseconds event_delay{0};
  std::string text = "Hello from the fake upstream.";
};

// The reply a real API would give `req` (see the file comment). A request
// header x-fake-events / x-fake-delay-us overrides the options; model
// "fake-error" answers 400 in the API's error shape.
ScriptedReply ApiReply(const UpstreamRecord& req, const ApiReplyOptions& options);

class FakeUpstream {
 public:
  FakeUpstream();
  ~FakeUpstream();
  FakeUpstream(const FakeUpstream&) = delete;
  FakeUpstream& operator=(const FakeUpstream&) = delete;

  // Listens on 127.0.0.1:port (0: any). False on failure.
  bool Start(int port = 0);
  void Stop();
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Scripted replies, first in first out, before the API emulation.
  void Push(ScriptedReply reply);
  void set_api_options(const ApiReplyOptions& o) {
    std::lock_guard<std::mutex> lock(mu_);
    api_ = o;
  }

  std::vector<UpstreamRecord> requests() const;
  size_t request_count() const;
  // Connections accepted so far.
  int connections() const { return connections_.load(); }
  // Waits until some request's client left mid-reply; false on timeout.
  bool WaitForClientLeft(std::chrono::milliseconds timeout);
  // Waits until `n` requests have arrived; false on timeout.
  bool WaitForRequests(size_t n, std::chrono::milliseconds timeout);

 private:
  void AcceptLoop();
  void Serve(int fd);
  bool SendReply(int fd, const ScriptedReply& reply, size_t index);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::vector<int> open_fds_;
  std::deque<ScriptedReply> script_;
  std::vector<UpstreamRecord> requests_;
  ApiReplyOptions api_;
};

}  // namespace compactor::testing

#endif  // COMPACTOR_TESTS_SUPPORT_FAKE_UPSTREAM_H_
