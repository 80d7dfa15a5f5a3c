// One request to the upstream through libcurl (loaded with dlopen,
// src/providers/curl_api.h), driven step by step on the calling thread so the
// proxy can hold, relay or abandon the answer as it arrives and watch the
// client's socket at the same time.
//
// Connections are reused: each worker thread keeps one curl multi handle
// (and so one connection cache) for its whole life; a transfer that ends
// early (client gone, retry, timeout) has its connection closed, which the
// upstream sees at once.
//
// Thread safety: an UpstreamCall belongs to the thread that created it.
#ifndef COMPACTOR_SRC_SERVE_UPSTREAM_H_
#define COMPACTOR_SRC_SERVE_UPSTREAM_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "compactor/env.h"
#include "compactor/status.h"
#include "serve/http_util.h"

namespace compactor::serve {

// Which HTTP client carries a request (docs/serve.md, "The upstream client").
enum class UpstreamTransport {
  // The built-in HTTP/1.1 client where it applies (a plain-HTTP URL whose
  // host is an IP address or "localhost", without credentials in the URL,
  // and no proxy from the environment for http); libcurl otherwise.
  kAuto,
  kLibcurl,  // libcurl always
  // The built-in client; Start() fails with kInvalidArgument where it does
  // not apply.
  kBuiltin,
};

struct UpstreamRequest {
  std::string method;
  std::string url;
  // Sent as given (Host and Content-Length are libcurl's; no Expect, no
  // default Accept or Content-Type is added).
  HeaderList headers;
  // Not owned; must outlive the call. Null: no body (GET, HEAD, a DELETE
  // without one); an empty string is sent as Content-Length: 0.
  const std::string* body = nullptr;
  int64_t connect_timeout_ms = 10'000;
  int64_t idle_timeout_ms = 600'000;
  // The clock of the timeouts and the latency figures. REQUIRES: non-null.
  Env* env = nullptr;
  UpstreamTransport transport = UpstreamTransport::kAuto;
};

enum class UpstreamFailure {
  kNone,
  kConnect,  // refused, unreachable, DNS, TLS handshake
  kTimeout,  // connect timeout or silence longer than idle_timeout_ms
  kReset,    // the upstream closed or broke the connection mid-answer
  kAborted,  // stopped by the caller or the body sink (not an upstream fault)
  kOther,
};

class UpstreamCall {
 public:
  // `on_body` receives the body bytes (transfer coding removed, content
  // coding kept) as they arrive; returning false aborts the transfer.
  UpstreamCall(UpstreamRequest request, std::function<bool(std::string_view)> on_body);
  ~UpstreamCall();
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  // Starts the transfer. kUnavailable when libcurl cannot be loaded.
  Status Start();
  // Does what can be done now without waiting: sends what the connection
  // takes, processes what arrived (header lines, body bytes through
  // on_body). Returns false once the transfer is over (done or failed).
  bool Perform();
  // Waits for the upstream (or `client_fd`, when >= 0, becoming readable) at
  // most until the next timer. Returns false once the transfer is over
  // (idle timeout, or the client is gone).
  bool Wait(int client_fd);
  // Perform(), then Wait(): false once the transfer is over.
  bool Step(int client_fd) { return Perform() && Wait(client_fd); }
  // Ends an unfinished transfer now (its connection is closed).
  void Abort();

  bool head_complete() const { return head_complete_; }
  int status() const { return status_; }
  // The head's fields in order, as received.
  const HeaderList& headers() const { return headers_; }
  // Microseconds from Start() to the complete head (-1 before).
  int64_t head_micros() const { return head_micros_; }
  bool finished() const { return finished_; }
  // The transfer delivered the whole answer.
  bool succeeded() const { return finished_ && failure_ == UpstreamFailure::kNone; }
  UpstreamFailure failure() const { return failure_; }
  // libcurl's description of the failure (the URL's credentials redacted).
  const std::string& error() const { return error_; }
  // The client's socket showed end of file or an error.
  bool client_gone() const { return client_gone_; }

  // libcurl's callbacks (`self`: the call), set once per easy handle.
  static size_t OnHeaderLine(char* data, size_t size, size_t nmemb, void* self);
  static size_t OnBodyData(char* data, size_t size, size_t nmemb, void* self);

 private:
  void SetMethod(void* easy) const;
  void HeaderLine(std::string_view line);
  void Finish(int curl_code);
  bool ClientGone(int fd);

  int64_t NowMicros() const { return request_.env->MonotonicMicros(); }

  UpstreamRequest request_;
  std::function<bool(std::string_view)> on_body_;
  void* easy_ = nullptr;          // CURL*
  void* headers_list_ = nullptr;  // curl_slist*
  char errbuf_[256] = {};
  bool started_ = false;
  bool finished_ = false;
  bool head_complete_ = false;
  bool sink_refused_ = false;
  bool client_gone_ = false;
  bool watch_client_ = true;
  int status_ = 0;
  HeaderList headers_;
  int64_t start_us_ = 0;
  int64_t last_activity_us_ = 0;
  int64_t head_micros_ = -1;
  UpstreamFailure failure_ = UpstreamFailure::kNone;
  std::string error_;
};

// "connect", "timeout", "reset", "other" (metrics label); "" for none/aborted.
std::string_view FailureKind(UpstreamFailure f);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_UPSTREAM_H_
