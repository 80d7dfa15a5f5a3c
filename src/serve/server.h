// The service as a whole: the HTTP server, the routes (/healthz, /metrics,
// /compactor/..., everything else proxied), the request log and the
// metrics. ServeServer (compactor/serve.h) is its public face; tests and the
// modules built on it (the compaction pipeline, the store and service API)
// use this class to add hooks and service routes before Start().
//
// Thread safety: AddHook and router() registrations before Start(); the rest
// from any thread.
#ifndef COMPACTOR_SRC_SERVE_SERVER_H_
#define COMPACTOR_SRC_SERVE_SERVER_H_

#include <httplib.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "compactor/serve.h"
#include "serve/compact_hook.h"
#include "serve/http_server.h"
#include "serve/metrics.h"
#include "serve/proxy.h"
#include "serve/request_log.h"
#include "serve/service.h"

namespace compactor::serve {

class Server {
 public:
  // REQUIRES: ResolveServeDefaults succeeded on `options`. `log_sink`
  // receives the log lines (default: stderr).
  explicit Server(ServeOptions options, RequestLog::Sink log_sink = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  const ServeOptions& options() const { return options_; }
  Proxy& proxy() { return proxy_; }
  ServiceRouter& router() { return router_; }
  Metrics& metrics() { return metrics_; }
  // Whether /compactor/ requests must carry the bearer token.
  bool requires_token() const { return requires_token_; }

  // The seam for recording conversations (the store): `fn` sees, after each
  // model request the compaction hook joined, what was sent upstream, the
  // usage and the compaction made (serve/compact_hook.h). REQUIRES: before
  // Start().
  void set_on_forwarded(ForwardedCallback fn) { on_forwarded_ = std::move(fn); }
  // Names the recorded session of a conversation for the x-compactor-session
  // header (the store's session id). REQUIRES: before Start().
  void set_session_resolver(SessionResolver fn) { session_of_ = std::move(fn); }
  // Where the proxy's summaries outlive its conversation table (the store's
  // summary cache). REQUIRES: before Start().
  void set_durable_summaries(DurableSummaries d) { durable_summaries_ = std::move(d); }

  // Binds and serves. kUnavailable when the address cannot be bound.
  Status Start();
  const std::string& host() const { return host_; }
  int port() const { return http_.bound_port(); }
  std::string url() const;
  // Drains: refuses new requests, finishes those in flight, stops.
  void Shutdown();

 private:
  void Dispatch(const httplib::Request& req, httplib::Response& res,
                const httplib::ContentReader* reader);
  void ServeService(const httplib::Request& req, httplib::Response& res,
                    const httplib::ContentReader* reader, RequestRecord& record);
  // Off loopback: the bearer token or the viewer's cookie, except on the
  // viewer's public paths (serve/viewer.h).
  bool Authorized(const Connection& conn, std::string_view method, std::string_view path) const;

  ServeOptions options_;
  ForwardedCallback on_forwarded_;      // before proxy_: the hook points at it
  SessionResolver session_of_;          // the same
  DurableSummaries durable_summaries_;  // the same
  std::string host_;
  int requested_port_ = 0;
  bool requires_token_ = false;
  Metrics metrics_;
  RequestLog log_;
  Proxy proxy_;
  ServiceRouter router_;
  HttpServer http_;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_SERVER_H_
