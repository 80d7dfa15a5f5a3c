// One log record per request, written as one line on stderr once the
// response is complete: human-readable, or with --json one JSON object per
// line. The proxy fills what it measures (method, path, status, timing,
// bytes, attempts, errors); hooks fill the token and compaction fields
// through Exchange::record() (serve/hooks.h).
//
// Nothing secret is ever written: the path's credential-like query values are
// redacted, headers are never logged, and `error` is redacted by the proxy
// before it is stored.
#ifndef COMPACTOR_SRC_SERVE_REQUEST_LOG_H_
#define COMPACTOR_SRC_SERVE_REQUEST_LOG_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace compactor::serve {

struct RequestRecord {
  int64_t start_ms = 0;  // wall clock, ms since the epoch
  std::string method;
  std::string path;   // the request target, credential-like query values redacted
  std::string route;  // Route::label
  std::string api;    // Route::api ("" when none)
  int status = 0;     // sent to the client (0: nothing was sent)
  int64_t duration_us = 0;
  // From forwarding the (last) attempt to the upstream's response head; -1
  // when the request never reached the upstream.
  int64_t upstream_us = -1;
  int attempts = 0;            // upstream attempts (retries included)
  int64_t bytes_in = 0;        // request body bytes as received
  int64_t bytes_out = 0;       // response body bytes sent to the client
  bool client_closed = false;  // the client went away before the end
  std::string error;           // why the proxy failed the request, redacted

  // --- filled by hooks (the compaction pipeline) ---------------------------
  // The upstream's usage (serve/usage_hook.h): every input token the model
  // read, cache included, and the output tokens; unset when not reported.
  std::optional<int64_t> tokens_in;
  std::optional<int64_t> tokens_out;
  bool compacted = false;
  std::optional<int64_t> tokens_before;  // estimate of the client's request
  std::optional<int64_t> tokens_after;   // estimate of what was forwarded
  std::string session;                   // the recorded session's id
  // More fields for the JSON line, each a key and a JSON value (text).
  std::vector<std::pair<std::string, std::string>> extra;
};

// "POST /v1/messages?beta=true 200 in=1200 out=85 compacted=no 153ms", with
// "-" for unknown token counts and " error=..." when there is one.
std::string FormatHuman(const RequestRecord& r);
// {"time":"2026-...Z","method":...,"path":...,"route":...,"api":...,"status":...,
//  "ms":...,"upstreamMs":...,"attempts":...,"bytesIn":...,"bytesOut":...,
//  "tokensIn":...,"tokensOut":...,"compacted":...,"tokensBefore":...,
//  "tokensAfter":...,"session":...,"clientClosed":...,"error":..., extra...}
// (null for unknown numbers; session and error only when set).
std::string FormatJson(const RequestRecord& r);

// Writes records as lines, one write per line under a mutex (lines never
// interleave). The sink defaults to stderr.
class RequestLog {
 public:
  using Sink = std::function<void(const std::string& line)>;
  explicit RequestLog(bool json, Sink sink = nullptr);
  void Write(const RequestRecord& r);

 private:
  bool json_;
  Sink sink_;
  std::mutex mu_;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_REQUEST_LOG_H_
