#include "serve/server.h"

#include <utility>

#include "compactor/env.h"
#include "serve/api.h"
#include "serve/compact_hook.h"
#include "serve/content_encoding.h"
#include "serve/usage_hook.h"
#include "serve/viewer.h"

namespace compactor::serve {
namespace {

ProxyConfig ProxyConfigOf(const ServeOptions& o) {
  ProxyConfig c;
  c.default_upstream = o.upstream;
  c.upstreams = o.upstreams;
  c.max_body_bytes = o.max_body_bytes;
  c.connect_timeout_ms = o.connect_timeout_ms;
  c.idle_timeout_ms = o.upstream_idle_timeout_ms;
  c.env = o.env;
  return c;
}

HttpServerOptions HttpOptionsOf(const ServeOptions& o) {
  HttpServerOptions h;
  h.threads = o.threads;
  h.keep_alive_timeout_ms = o.keep_alive_timeout_ms;
  h.client_timeout_ms = o.client_timeout_ms;
  h.env = o.env;
  return h;
}

void SetExact(httplib::Response& res, int status, HeaderList headers, std::string body) {
  res.status = status;
  if (Connection* conn = CurrentConnection()) {
    conn->exact_headers = std::move(headers);
  }
  res.body = std::move(body);
}

// A null Env is the default one (ResolveServeDefaults sets it too).
ServeOptions WithEnv(ServeOptions o) {
  if (o.env == nullptr) o.env = Env::Default();
  return o;
}

}  // namespace

Server::Server(ServeOptions options, RequestLog::Sink log_sink)
    : options_(WithEnv(std::move(options))),
      log_(options_.json_logs, std::move(log_sink)),
      proxy_(ProxyConfigOf(options_), &metrics_),
      http_(HttpOptionsOf(options_),
            [this](const httplib::Request& req, httplib::Response& res,
                   const httplib::ContentReader* reader) { Dispatch(req, res, reader); }) {
  auto listen = ParseListen(options_.listen);
  if (listen.ok()) {
    host_ = listen->host;
    requested_port_ = listen->port;
  }
  requires_token_ = !IsLoopbackHost(host_);
  // The web viewer at /compactor/ (docs/viewer.md).
  RegisterViewer(router_, options_.token, requires_token_);
  // Compaction in the proxy (docs/serve.md).
  CompactHookOptions compact;
  compact.context_window = options_.context_window;
  compact.model_windows = options_.model_windows;
  compact.summarizer =
      options_.summarizer == "upstream"  ? CompactHookOptions::SummarizerKind::kUpstream
      : options_.summarizer == "offline" ? CompactHookOptions::SummarizerKind::kOffline
                                         : CompactHookOptions::SummarizerKind::kModels;
  compact.summarizer_models = options_.summarizer_models;
  // Validated by ResolveServeDefaults; an unchecked name falls back to summary.
  auto strategy = ProxyStrategyOf(options_.strategy, !options_.notes_file.empty());
  compact.strategy = strategy.ok() ? *strategy : ProxyStrategy::kSummary;
  compact.notes_file = options_.notes_file;
  compact.summary_deadline_ms = options_.summary_deadline_ms;
  compact.mark_summary_requests = options_.mark_summary_requests;
  compact.remote_compaction =
      options_.remote_compaction == "upstream" ? CompactHookOptions::RemoteCompaction::kUpstream
      : options_.remote_compaction == "proxy"  ? CompactHookOptions::RemoteCompaction::kProxy
                                               : CompactHookOptions::RemoteCompaction::kAuto;
  compact.env = options_.env;
  compact.upstream_url = [this](const ProxyRequest& r) {
    return JoinUpstream(proxy_.UpstreamFor(r.route, r.headers), r.target);
  };
  compact.on_forwarded = &on_forwarded_;
  compact.session_of = &session_of_;
  compact.durable_summaries = &durable_summaries_;
  compact.max_conversations = options_.max_conversations;
  proxy_.AddHook(NewCompactHook(std::move(compact)));
  // Before the recorder (added by the service API): it records the usage
  // this hook puts in the log record.
  proxy_.AddHook(NewUsageHook());
}

Server::~Server() { Shutdown(); }

Status Server::Start() { return http_.Start(host_, requested_port_); }

std::string Server::url() const {
  bool v6 = host_.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(port());
}

void Server::Shutdown() { http_.Drain(); }

bool Server::Authorized(const Connection& conn, std::string_view method,
                        std::string_view path) const {
  if (!requires_token_ || IsPublicServicePath(method, path)) return true;
  std::string_view auth = HeaderValue(conn.headers, "authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (StartsWithIgnoreCase(auth, kBearer))
    return ConstantTimeEquals(auth.substr(kBearer.size()), options_.token);
  // The viewer's sign-in cookie (HttpOnly, SameSite=Strict: another site's
  // page cannot send it along).
  std::string cookie = CookieValue(conn.headers, kTokenCookie);
  return !cookie.empty() && ConstantTimeEquals(cookie, options_.token);
}

void Server::ServeService(const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader* reader, RequestRecord& record) {
  Connection* conn = CurrentConnection();
  ServiceResponse out;
  ServiceRequest in;
  std::string raw;
  size_t q = req.target.find('?');
  bool authorized = Authorized(*conn, req.method, std::string_view(req.target).substr(0, q));
  // An unauthorized body is not read: the connection closes after the 401.
  Status read = authorized ? ReadBody(reader, options_.max_body_bytes, &raw) : Status::Ok();
  if (!authorized) {
    ServiceError(out, 401, "unauthorized",
                 "the service API needs \"Authorization: Bearer TOKEN\" with the token of "
                 "COMPACTOR_SERVE_TOKEN");
    out.headers.emplace_back("WWW-Authenticate", "Bearer");
    if (conn->has_body) conn->must_close = conn->linger = true;
  } else if (!read.ok()) {
    bool large = read.code() == StatusCode::kFailedPrecondition;
    ServiceError(out, large ? 413 : 400, large ? "request_too_large" : "bad_request",
                 read.message());
  } else {
    auto body = DecodeContent(conn->content_encoding, raw, options_.max_body_bytes);
    if (!body.ok()) {
      StatusCode c = body.status().code();
      int status = c == StatusCode::kUnsupported          ? 415
                   : c == StatusCode::kFailedPrecondition ? 413
                                                          : 400;
      ServiceError(out, status, status == 415 ? "unsupported_encoding" : "bad_request",
                   body.status().message());
    } else {
      in.method = req.method;
      in.path = req.target.substr(0, q);
      in.query = q == std::string::npos ? "" : req.target.substr(q + 1);
      in.params = req.params;
      in.headers = conn->headers;
      in.body = std::move(*body);
      router_.Dispatch(std::move(in), out);
    }
  }
  record.bytes_in = static_cast<int64_t>(raw.size());
  HeaderList headers = {{"Content-Type", out.content_type}};
  headers.insert(headers.end(), out.headers.begin(), out.headers.end());
  SetExact(res, out.status, std::move(headers), std::move(out.body));
}

void Server::Dispatch(const httplib::Request& req, httplib::Response& res,
                      const httplib::ContentReader* reader) {
  Connection* conn = CurrentConnection();
  size_t q = req.target.find('?');
  Route route = ClassifyPath(std::string_view(req.target).substr(0, q));
  auto record = std::make_shared<RequestRecord>();
  record->start_ms = options_.env->NowMs();
  record->method = req.method;
  record->path = RedactTarget(req.target);
  record->route = std::string(route.label);
  record->api = std::string(route.api);
  int64_t start = options_.env->MonotonicMicros();
  metrics_.in_flight().Add(1);
  conn->after_response = [this, record, start] {
    record->duration_us = options_.env->MonotonicMicros() - start;
    metrics_.in_flight().Add(-1);
    metrics_.CountRequest(record->route, record->status);
    log_.Write(*record);
  };
  bool get = req.method == "GET" || req.method == "HEAD";
  switch (route.kind) {
    case RouteKind::kHealth:
      if (get) {
        SetExact(res, 200, {{"Content-Type", "application/json"}}, "{\"status\":\"ok\"}");
      } else {
        SetExact(res, 405, {{"Content-Type", "application/json"}, {"Allow", "GET, HEAD"}},
                 ErrorBody("", 405, "method_not_allowed", "use GET /healthz"));
      }
      break;
    case RouteKind::kMetrics:
      if (get) {
        SetExact(res, 200, {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}},
                 metrics_.Render());
      } else {
        SetExact(res, 405, {{"Content-Type", "application/json"}, {"Allow", "GET, HEAD"}},
                 ErrorBody("", 405, "method_not_allowed", "use GET /metrics"));
      }
      break;
    case RouteKind::kService:
      ServeService(req, res, reader, *record);
      break;
    case RouteKind::kProxy:
      proxy_.Handle(req, res, reader, route, record);
      return;  // the exchange sets the record's status
  }
  record->status = res.status;
}

}  // namespace compactor::serve

// --- the public face ----------------------------------------------------------

namespace compactor {
namespace {

class ServeServerImpl final : public ServeServer {
 public:
  explicit ServeServerImpl(ServeOptions options) : server_(std::move(options)) {}
  // The service must not go while requests run: the server stops first.
  ~ServeServerImpl() override { server_.Shutdown(); }
  Status Start() {
    COMPACTOR_ASSIGN_OR_RETURN(service_,
                               serve::SessionService::Install(server_, server_.options()));
    return server_.Start();
  }
  std::string host() const override { return server_.host(); }
  int port() const override { return server_.port(); }
  std::string url() const override { return server_.url(); }
  void Shutdown() override { server_.Shutdown(); }

 private:
  serve::Server server_;
  std::unique_ptr<serve::SessionService> service_;
};

}  // namespace

Result<std::unique_ptr<ServeServer>> ServeServer::Start(ServeOptions options) {
  auto server = std::make_unique<ServeServerImpl>(std::move(options));
  COMPACTOR_RETURN_IF_ERROR(server->Start());
  return std::unique_ptr<ServeServer>(std::move(server));
}

}  // namespace compactor
