// The two HTTP clients behind UpstreamCall (upstream.h): libcurl
// (upstream_curl.cc) and the built-in HTTP/1.1 client (upstream_builtin.cc).
// A transport moves bytes; what the answer is (its head, its body, how the
// call ended) is kept in the call's CallState, which both write through the
// same three functions so that they report alike.
//
// Thread safety: as UpstreamCall (one thread).
#ifndef COMPACTOR_SRC_SERVE_UPSTREAM_TRANSPORT_H_
#define COMPACTOR_SRC_SERVE_UPSTREAM_TRANSPORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "compactor/status.h"
#include "serve/upstream.h"

namespace compactor::serve::internal {

struct CallState {
  CallState(UpstreamRequest r, std::function<bool(std::string_view)> sink)
      : request(std::move(r)), on_body(std::move(sink)) {}

  UpstreamRequest request;
  std::function<bool(std::string_view)> on_body;
  bool finished = false;
  bool head_complete = false;
  int status = 0;
  HeaderList headers;
  int64_t start_us = 0;
  int64_t last_activity_us = 0;
  int64_t head_micros = -1;
  UpstreamFailure failure = UpstreamFailure::kNone;
  std::string error;

  int64_t NowMicros() const { return request.env->MonotonicMicros(); }
  // One line of a response head ("HTTP/1.1 200 OK", "Name: value", the
  // empty line; line ends optional). A status line starts a new head (after
  // 1xx interim answers); the empty line after a final head completes it.
  void HeadLine(std::string_view line);
  // Body bytes to the sink. False when the sink refused them: the call is
  // then finished (kAborted) and the transport must drop its connection.
  bool Body(std::string_view data);
  // Ends the call (once; later calls are ignored).
  void Finish(UpstreamFailure f, std::string_view why);
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Starts the transfer; the state's start time is already set.
  virtual Status Start(CallState& s) = 0;
  // Moves what can be moved now without waiting. False once finished.
  virtual bool Perform(CallState& s) = 0;
  // Waits at most `wait_ms` for the upstream, or for `client_fd` (when >= 0)
  // to become readable; returns whether `client_fd` did.
  virtual bool Poll(CallState& s, int client_fd, int wait_ms) = 0;
  // Ends an unfinished transfer; its connection is closed, so the upstream
  // sees the request abandoned at once. Destroying a transport does the same.
  virtual void Abort() = 0;
};

// The proxy that libcurl would take from the environment for `scheme`, and
// the exceptions (no_proxy); empty strings when none.
struct EnvProxy {
  std::string proxy;
  std::string no_proxy;
};
EnvProxy ReadEnvProxy(Env& env, std::string_view scheme);

std::unique_ptr<Transport> NewCurlTransport();
// The built-in client for a request to `url`, or null where it does not
// apply: it takes plain HTTP to an IP address or "localhost", without
// credentials in the URL. (The caller also checks that no proxy from the
// environment applies.) REQUIRES: `url` outlives the transport.
std::unique_ptr<Transport> NewBuiltinTransport(std::string_view url);

}  // namespace compactor::serve::internal

#endif  // COMPACTOR_SRC_SERVE_UPSTREAM_TRANSPORT_H_
