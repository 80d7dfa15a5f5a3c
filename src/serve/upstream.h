// One request to the upstream, driven step by step on the calling thread so
// the proxy can hold, relay or abandon the answer as it arrives and watch the
// client's socket at the same time.
//
// Two HTTP clients carry it (upstream_transport.h): a built-in HTTP/1.1
// client for plain-HTTP upstreams on an IP address or localhost (local model
// servers, the benchmark's fake upstream: the proxy's added latency is mostly
// HTTP work, and libcurl spends several times the instructions of the whole
// of nginx on a request, docs/benchmarks.md), and libcurl (loaded with
// dlopen, src/providers/curl_api.h) for everything else: TLS, host names,
// proxies from the environment, credentials in the URL.
//
// Connections are reused: each worker thread keeps its connections (the
// built-in client's last one; libcurl's multi handle and its cache) for its
// whole life; a transfer that ends early (client gone, retry, timeout) has
// its connection closed, which the upstream sees at once.
//
// Thread safety: an UpstreamCall belongs to the thread that created it.
#ifndef COMPACTOR_SRC_SERVE_UPSTREAM_H_
#define COMPACTOR_SRC_SERVE_UPSTREAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "compactor/env.h"
#include "compactor/status.h"
#include "serve/http_util.h"

namespace compactor::serve {

namespace internal {
struct CallState;
class Transport;
}  // namespace internal

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
  // Sent as given, in order (Host and Content-Length are the client's own;
  // no Expect, no default Accept or Content-Type is added; a field whose
  // name or value holds CR or LF is left out).
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

  bool head_complete() const;
  int status() const;
  // The head's fields in order, as received.
  const HeaderList& headers() const;
  // Microseconds from Start() to the complete head (-1 before).
  int64_t head_micros() const;
  bool finished() const;
  // The transfer delivered the whole answer.
  bool succeeded() const;
  UpstreamFailure failure() const;
  // What went wrong, for messages (the URL's credentials redacted).
  const std::string& error() const;
  // The client's socket showed end of file or an error.
  bool client_gone() const { return client_gone_; }

 private:
  bool ClientGone(int fd);

  std::unique_ptr<internal::CallState> state_;
  std::unique_ptr<internal::Transport> transport_;
  bool started_ = false;
  bool client_gone_ = false;
  bool watch_client_ = true;
};

// "connect", "timeout", "reset", "other" (metrics label); "" for none/aborted.
std::string_view FailureKind(UpstreamFailure f);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_UPSTREAM_H_
