#include "serve/proxy.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <utility>

#include "compactor/provider_api.h"  // SseParser
#include "serve/compact_plan.h"
#include "serve/content_encoding.h"
#include "serve/http_server.h"
#include "serve/upstream.h"

namespace compactor::serve {
namespace {

// Request fields the proxy writes itself (or must not pass on).
bool NotForwarded(std::string_view name) {
  return EqualsIgnoreCase(name, "host") || EqualsIgnoreCase(name, "content-length") ||
         EqualsIgnoreCase(name, "expect");
}

// Response fields whose framing is the proxy's own (httplib writes them).
bool IsFraming(std::string_view name) {
  return EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "transfer-encoding");
}

bool IsEventStream(const HeaderList& headers) {
  std::string type = ToLower(HeaderValue(headers, "content-type"));
  return type.rfind("text/event-stream", 0) == 0;
}

struct LocalAnswer {
  int status = 200;
  HeaderList headers;
  std::string body;
};

class ProxyExchange final : public Exchange {
 public:
  ProxyExchange(ProxyRequest request, const ProxyConfig& config, Metrics* metrics,
                std::shared_ptr<RequestRecord> record, Connection* conn, std::string root)
      : request_(std::move(request)),
        config_(config),
        metrics_(metrics),
        record_(std::move(record)),
        conn_(conn),
        root_(std::move(root)) {}

  // --- Exchange ---------------------------------------------------------------
  const ProxyRequest& request() const override { return request_; }
  Result<std::string_view> DecodedBody() override;
  std::shared_ptr<const ClientRequestView> client_request() override;
  bool client_request_read() const override { return parsed_; }
  bool declares_tools() override { return Outline().declares_tools; }
  const std::optional<std::string>& named_conversation() override {
    return Outline().named_conversation;
  }
  void set_compaction(std::optional<ExchangeCompaction> compaction) override {
    compaction_ = std::move(compaction);
  }
  const std::optional<ExchangeCompaction>& compaction() const override { return compaction_; }
  void ReplaceBody(std::string body) override { replaced_ = std::move(body); }
  const std::string& forwarded_body() const override {
    return replaced_ ? *replaced_ : request_.body;
  }
  void AddResponseHeader(std::string name, std::string value) override {
    added_.emplace_back(std::move(name), std::move(value));
  }
  void Respond(int status, HeaderList headers, std::string body) override {
    local_ = LocalAnswer{status, std::move(headers), std::move(body)};
  }
  int attempt() const override { return attempt_; }
  RequestRecord& record() override { return *record_; }
  Metrics& metrics() override { return *metrics_; }
  // Also asked between attempts (a hook waiting for a summary): the client's
  // socket is peeked, without blocking, for end of file or an error.
  bool client_gone() const override {
    if (!client_gone_ && conn_ != nullptr && conn_->fd >= 0) {
      char byte;
      ssize_t r = ::recv(conn_->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        client_gone_ = true;
      }
    }
    return client_gone_;
  }

  // The body's top-level members, scanned once for every question about
  // them (nothing declared or named when the body does not decode).
  const RequestOutline& Outline() {
    if (!outline_) {
      auto body = DecodedBody();
      outline_ = body.ok()
                     ? OutlineRequest(FindProviderApi(request_.route.api), *body, request_.headers)
                     : RequestOutline{};
    }
    return *outline_;
  }

  void AddHook(std::unique_ptr<ExchangeHook> hook) {
    observers_ = observers_ || hook->wants_events();
    relay_observers_ = relay_observers_ || hook->wants_relayed();
    hooks_.push_back(std::move(hook));
  }
  // Runs attempts until `res` holds the answer (or a provider relaying it).
  void Run(httplib::Response& res, const std::shared_ptr<ProxyExchange>& self);
  // (a') once: after the first send, or before the proxy answers by itself.
  void Settle() {
    if (settled_) return;
    settled_ = true;
    for (auto& h : hooks_) h->AfterForward(*this);
  }
  // (c) once the response is written.
  void Complete() {
    if (relay_at_complete_) {
      relay_at_complete_ = false;
      Relayed(pending_);
    }
    for (auto& h : hooks_) h->OnComplete(*this);
  }

 private:
  enum class Phase { kHead, kHold, kCommitted };

  HeaderList ForwardedHeaders() const;
  Status StartAttempt();
  void AskHead();
  void HoldUntilDecided();
  bool OnBody(std::string_view data);
  void FeedEvents(std::string_view data, bool observe_only);
  void OnEvent(const SseEvent& ev, bool observe_only);
  bool CanRetry() const { return attempt_ + 1 < config_.limits.max_attempts; }
  // Sends out_ to the client in one write; `end`: the chunked stream ends
  // with these bytes, which then go out with its terminator.
  bool WriteToClient(bool end);
  // Hands body bytes the client gets to the hooks that read them.
  void Relayed(std::string_view data) {
    if (!relay_observers_) return;
    for (auto& h : hooks_) {
      if (h->wants_relayed()) h->OnRelayed(*this, data);
    }
  }
  bool RelayRest(httplib::DataSink& sink, bool chunked, size_t length);
  void Commit(httplib::Response& res, const std::shared_ptr<ProxyExchange>& self);
  void CommitLocal(httplib::Response& res);
  void Fail(httplib::Response& res, int status, std::string_view code, const std::string& message);
  void FailUpstream(httplib::Response& res);
  // The client went away before the answer: 499, nothing relayed.
  void Abandon(httplib::Response& res);
  // The client went away: counted once, its connection closed. Returns false.
  bool ClientLeft() {
    client_gone_ = true;
    record_->client_closed = true;
    metrics_->client_disconnects().Add();
    conn_->must_close = true;
    return false;
  }
  std::string Redact(std::string_view text) const {
    return RedactSecrets(text, CredentialsIn(request_.headers));
  }

  ProxyRequest request_;
  const ProxyConfig& config_;
  Metrics* metrics_;
  std::shared_ptr<RequestRecord> record_;
  Connection* conn_;
  std::string root_;
  std::vector<std::unique_ptr<ExchangeHook>> hooks_;
  bool observers_ = false;                 // a hook wants every event
  bool relay_observers_ = false;           // a hook wants the relayed bytes
  bool relay_at_complete_ = false;         // pending_ goes to them in Complete
  std::optional<RequestOutline> outline_;  // Outline()
  std::optional<std::string> decoded_;
  bool parsed_ = false;  // client_request() was asked: view_ is final
  std::shared_ptr<const ClientRequestView> view_;
  std::optional<ExchangeCompaction> compaction_;
  std::optional<std::string> replaced_;
  HeaderList added_;
  std::optional<LocalAnswer> local_;
  int attempt_ = 0;
  bool settled_ = false;  // AfterForward ran
  mutable bool client_gone_ = false;

  // The current attempt.
  std::unique_ptr<UpstreamCall> call_;
  ResponseHead head_;
  Phase phase_ = Phase::kHead;
  std::vector<bool> holding_;  // per hook
  bool retry_ = false;
  bool parsing_ = false;  // the hooks saw the head: events may be parsed
  std::string pending_;   // body bytes not yet sent to the client
  std::string out_;       // relayed bytes of the current read, not yet written
  SseParser sse_;
  httplib::DataSink* sink_ = nullptr;
  size_t written_ = 0;
};

Result<std::string_view> ProxyExchange::DecodedBody() {
  if (!decoded_) {
    if (request_.content_encoding.empty()) return std::string_view(request_.body);
    COMPACTOR_ASSIGN_OR_RETURN(
        std::string body,
        DecodeContent(request_.content_encoding, request_.body, config_.max_body_bytes));
    decoded_ = std::move(body);
  }
  return std::string_view(*decoded_);
}

std::shared_ptr<const ClientRequestView> ProxyExchange::client_request() {
  if (!parsed_) {
    parsed_ = true;
    const ProviderApi* api =
        request_.method == "POST" ? FindProviderApi(request_.route.api) : nullptr;
    if (api == nullptr) return nullptr;
    auto body = DecodedBody();
    if (!body.ok()) return nullptr;
    // Room for the JSON parser's padding: parsed where it is, not copied again.
    std::string copy;
    copy.reserve(body->size() + 64);
    copy.assign(*body);
    view_ = ReadClientRequestView(*api, std::move(copy), request_.headers);
  }
  return view_;
}

HeaderList ProxyExchange::ForwardedHeaders() const {
  HeaderList out;
  for (const auto& h : request_.headers) {
    if (NotForwarded(h.first)) continue;
    // A replaced body is sent as it is, without the client's coding.
    if (replaced_ && EqualsIgnoreCase(h.first, "content-encoding")) continue;
    // Hooks read the answer: ask the upstream for it uncompressed.
    if (!hooks_.empty() && EqualsIgnoreCase(h.first, "accept-encoding")) continue;
    out.push_back(h);
  }
  return out;
}

Status ProxyExchange::StartAttempt() {
  UpstreamRequest up;
  up.method = request_.method;
  up.url = JoinUpstream(root_, request_.target);
  up.headers = ForwardedHeaders();
  bool body = conn_->has_body || replaced_ || request_.method == "POST" ||
              request_.method == "PUT" || request_.method == "PATCH";
  up.body = body ? &forwarded_body() : nullptr;
  up.connect_timeout_ms = config_.connect_timeout_ms;
  up.idle_timeout_ms = config_.idle_timeout_ms;
  up.env = config_.env;
  phase_ = Phase::kHead;
  retry_ = false;
  parsing_ = false;
  written_ = 0;
  pending_.clear();
  sse_ = SseParser();
  holding_.assign(hooks_.size(), false);
  call_ = std::make_unique<UpstreamCall>(std::move(up),
                                         [this](std::string_view d) { return OnBody(d); });
  record_->attempts = attempt_ + 1;
  return call_->Start();
}

void ProxyExchange::AskHead() {
  head_ = ResponseHead{call_->status(), {}, false};
  HeaderList end_to_end = EndToEnd(call_->headers());
  head_.headers.reserve(end_to_end.size());
  for (auto& h : end_to_end) {
    if (!IsFraming(h.first)) head_.headers.push_back(std::move(h));
  }
  head_.event_stream = IsEventStream(head_.headers);
  bool hold = false;
  for (size_t i = 0; i < hooks_.size(); ++i) {
    HeadVerdict v = hooks_[i]->OnResponseHead(*this, head_);
    if (v == HeadVerdict::kRetry && CanRetry()) retry_ = true;
    if (v == HeadVerdict::kHold) holding_[i] = hold = true;
  }
  if (retry_) return;
  if (hold) phase_ = Phase::kHold;
  parsing_ = true;
  // Bytes that came with the head, before the hooks had decided.
  if (head_.event_stream && (hold || observers_) && !pending_.empty()) {
    std::string early = pending_;
    FeedEvents(early, !hold);
  }
}

// Pumps a held response until every holding hook released it, a retry was
// asked for (retry_), or the transfer ended.
void ProxyExchange::HoldUntilDecided() {
  // Decided as soon as the read that released the hold is processed, not
  // once more bytes arrive.
  while (phase_ == Phase::kHold && !retry_ && call_->Wait(conn_->fd) && call_->Perform()) {
  }
  if (retry_ || phase_ != Phase::kHold || !call_->succeeded() || head_.event_stream) return;
  for (size_t i = 0; i < hooks_.size(); ++i) {
    if (!holding_[i]) continue;
    if (hooks_[i]->OnBody(*this, pending_) == BodyVerdict::kRetry && CanRetry()) retry_ = true;
  }
}

void ProxyExchange::OnEvent(const SseEvent& ev, bool observe_only) {
  for (size_t i = 0; i < hooks_.size(); ++i) {
    bool held = !observe_only && holding_[i];
    if (!held && !hooks_[i]->wants_events()) continue;
    EventVerdict v = hooks_[i]->OnEvent(*this, ev);
    if (!held) continue;
    if (v == EventVerdict::kRetry && CanRetry()) {
      retry_ = true;
    } else if (v != EventVerdict::kContinue) {
      holding_[i] = false;
    }
  }
}

void ProxyExchange::FeedEvents(std::string_view data, bool observe_only) {
  sse_.Feed(data, [&](std::string_view event, std::string_view payload) {
    if (retry_) return;
    bool held = !observe_only && phase_ == Phase::kHold;
    if (!held && !observers_) return;
    OnEvent(SseEvent{event, payload}, !held);
    if (held && !retry_ &&
        std::none_of(holding_.begin(), holding_.end(), [](bool b) { return b; })) {
      phase_ = Phase::kHead;  // released: committed by Run once this step returns
    }
  });
}

bool ProxyExchange::OnBody(std::string_view data) {
  if (phase_ == Phase::kCommitted) {
    // Written once the read that brought it is processed: the pieces (or
    // upstream chunks) of one read reach the client in one write.
    if (client_gone_) return false;
    out_.append(data);
  } else {
    pending_.append(data);
  }
  bool held = phase_ == Phase::kHold;
  if (parsing_ && head_.event_stream && (held || observers_)) FeedEvents(data, !held);
  if (held) {
    if (retry_) return false;  // aborts the attempt
    if (pending_.size() > config_.limits.max_held_bytes) phase_ = Phase::kHead;
  }
  return true;
}

bool ProxyExchange::WriteToClient(bool end) {
  if (out_.empty()) return true;
  if (end) conn_->hold_write = true;
  if (sink_ == nullptr || !sink_->write(out_.data(), out_.size())) {
    client_gone_ = true;
    return false;
  }
  written_ += out_.size();
  record_->bytes_out += static_cast<int64_t>(out_.size());
  Relayed(out_);
  out_.clear();
  return true;
}

bool ProxyExchange::RelayRest(httplib::DataSink& sink, bool chunked, size_t length) {
  sink_ = &sink;
  phase_ = Phase::kCommitted;
  out_ = std::move(pending_);  // goes out with the held head (Commit)
  pending_.clear();
  bool ok = WriteToClient(false);
  while (ok && call_->Wait(conn_->fd)) {
    bool more = call_->Perform();
    ok = WriteToClient(chunked && !more && call_->succeeded());
    if (!more) break;
  }
  sink_ = nullptr;
  if (!ok || client_gone_ || call_->client_gone()) {
    call_->Abort();
    return ClientLeft();
  }
  if (!call_->succeeded()) {
    // The upstream broke off mid-answer: cut the client's stream too (it
    // sees an incomplete response, as it would without the proxy).
    record_->error = Redact("the upstream stopped mid-answer: " + call_->error());
    metrics_->CountUpstreamError(FailureKind(call_->failure()));
    conn_->must_close = true;
    return false;
  }
  if (chunked) {
    sink.done();
    // The terminator carried the held last bytes: a client gone by then
    // did not get the end of the answer.
    if (!sink.is_writable()) return ClientLeft();
  } else if (written_ != length) {
    conn_->must_close = true;
    return false;
  }
  return true;
}

void ProxyExchange::Commit(httplib::Response& res, const std::shared_ptr<ProxyExchange>& self) {
  Settle();
  res.status = head_.status;
  // The hooks saw the head (AskHead); its fields now go to the client.
  HeaderList exact = std::move(head_.headers);
  exact.insert(exact.end(), added_.begin(), added_.end());
  conn_->exact_headers = std::move(exact);
  record_->status = head_.status;
  std::string_view length = HeaderValue(call_->headers(), "content-length");
  if (request_.method == "HEAD" || head_.status == 204 || head_.status == 304) {
    while (call_->Step(conn_->fd)) {  // no body: let the transfer end cleanly
    }
    if (!length.empty() && request_.method == "HEAD") {
      res.set_header("Content-Length", std::string(length));
    }
    return;
  }
  if (call_->finished()) {  // the whole answer is here (held, or small and quick)
    record_->bytes_out += static_cast<int64_t>(pending_.size());
    if (relay_observers_) {
      // The hooks read it once the client has it (Complete), not before:
      // reading a stream's usage took a quarter of the exchange's own work.
      res.body = pending_;
      relay_at_complete_ = true;
    } else {
      res.body = std::move(pending_);
    }
    return;
  }
  size_t n = 0;
  bool known = !length.empty() && !HasHeader(call_->headers(), "transfer-encoding");
  if (known) {
    auto [p, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
    known = ec == std::errc() && p == length.data() + length.size() && n > 0;
  }
  // The head waits for the bytes that came before the relay began (a held
  // stream's first events), so the client gets both at once; with none at
  // hand it goes out at once.
  conn_->hold_write = !pending_.empty();
  if (known) {
    res.set_content_provider(n, "", [self, n](size_t, size_t, httplib::DataSink& sink) {
      return self->RelayRest(sink, false, n);
    });
  } else {
    res.set_chunked_content_provider(
        "", [self](size_t, httplib::DataSink& sink) { return self->RelayRest(sink, true, 0); });
  }
}

void ProxyExchange::CommitLocal(httplib::Response& res) {
  Settle();
  res.status = local_->status;
  HeaderList exact = local_->headers;
  RemoveHeader(exact, "content-length");
  RemoveHeader(exact, "transfer-encoding");
  exact.insert(exact.end(), added_.begin(), added_.end());
  conn_->exact_headers = std::move(exact);
  record_->status = local_->status;
  record_->bytes_out += static_cast<int64_t>(local_->body.size());
  res.body = std::move(local_->body);
}

void ProxyExchange::Fail(httplib::Response& res, int status, std::string_view code,
                         const std::string& message) {
  Settle();
  res.status = status;
  HeaderList exact = {{"Content-Type", "application/json"}};
  exact.insert(exact.end(), added_.begin(), added_.end());
  conn_->exact_headers = std::move(exact);
  res.body = ErrorBody(request_.route.api, status, code, message);
  record_->status = status;
  record_->bytes_out += static_cast<int64_t>(res.body.size());
  if (record_->error.empty()) record_->error = message;
}

void ProxyExchange::Abandon(httplib::Response& res) {
  Settle();
  ClientLeft();
  res.status = 499;  // nginx's "client closed request"; nothing reaches the client
  record_->status = 499;
  record_->error = "the client closed the connection before the answer";
}

void ProxyExchange::FailUpstream(httplib::Response& res) {
  if (call_->client_gone() || client_gone_) return Abandon(res);
  metrics_->CountUpstreamError(FailureKind(call_->failure()));
  std::string where = "the upstream " + RedactUrl(root_);
  std::string why = Redact(call_->error());
  switch (call_->failure()) {
    case UpstreamFailure::kTimeout:
      Fail(res, 504, "upstream_timeout", where + " did not answer in time: " + why);
      break;
    case UpstreamFailure::kConnect:
      Fail(res, 502, "upstream_unreachable", where + " cannot be reached: " + why);
      break;
    default:
      Fail(res, 502, "upstream_error", where + " gave no usable answer: " + why);
      break;
  }
}

void ProxyExchange::Run(httplib::Response& res, const std::shared_ptr<ProxyExchange>& self) {
  for (attempt_ = 0;; ++attempt_) {
    for (auto& h : hooks_) h->BeforeForward(*this);
    if (local_) return CommitLocal(res);
    // A hook that waited (for a summary) may have seen the client go away:
    // nothing is sent upstream for nobody.
    if (client_gone_) return Abandon(res);
    Status started = StartAttempt();
    if (!started.ok()) return Fail(res, 502, "upstream_error", started.message());
    // The request goes out first; the hooks' deferred work overlaps the
    // upstream's (AfterForward, once).
    bool more = call_->Perform();
    Settle();
    while (more && !call_->head_complete()) more = call_->Wait(conn_->fd) && call_->Perform();
    if (!call_->head_complete()) return FailUpstream(res);
    record_->upstream_us = call_->head_micros();
    metrics_->ObserveUpstreamLatency(request_.route.label, call_->head_micros());
    AskHead();
    if (!retry_ && phase_ == Phase::kHold) HoldUntilDecided();
    if (retry_) {
      call_->Abort();
      if (head_.status != 0) metrics_->overflow_retries().Add();
      continue;
    }
    if (call_->finished() && !call_->succeeded()) {
      // Ended before anything was relayed (held, or cut right after the head).
      return FailUpstream(res);
    }
    return Commit(res, self);
  }
}

}  // namespace

Proxy::Proxy(ProxyConfig config, Metrics* metrics)
    : config_(std::move(config)), metrics_(metrics) {}

void Proxy::AddHook(std::shared_ptr<ProxyHook> hook) { hooks_.push_back(std::move(hook)); }

std::string Proxy::UpstreamFor(const Route& route, const HeaderList& headers) const {
  if (!route.api.empty()) {
    auto it = config_.upstreams.find(std::string(route.api));
    if (it != config_.upstreams.end()) return it->second;
  }
  if (!config_.default_upstream.empty()) return config_.default_upstream;
  auto find = [&](const char* api) -> std::string {
    auto it = config_.upstreams.find(api);
    return it == config_.upstreams.end() ? "" : it->second;
  };
  if (HasHeader(headers, "anthropic-version") && !find("anthropic").empty())
    return find("anthropic");
  for (const char* api : {"openai-responses", "openai-chat", "anthropic"}) {
    if (!find(api).empty()) return find(api);
  }
  return "";
}

void Proxy::Handle(const httplib::Request& req, httplib::Response& res,
                   const httplib::ContentReader* reader, const Route& route,
                   std::shared_ptr<RequestRecord> record) {
  Connection* conn = CurrentConnection();
  ProxyRequest pr;
  pr.method = req.method;
  pr.target = req.target;
  size_t q = req.target.find('?');
  pr.path = req.target.substr(0, q);
  pr.query = q == std::string::npos ? "" : req.target.substr(q + 1);
  pr.route = route;
  pr.headers = EndToEnd(conn->headers);
  pr.content_encoding = conn->content_encoding;
  pr.client_address = conn->remote;
  auto fail = [&](int status, std::string_view code, const std::string& message) {
    res.status = status;
    conn->exact_headers = HeaderList{{"Content-Type", "application/json"}};
    res.body = ErrorBody(route.api, status, code, message);
    record->status = status;
    record->error = message;
  };
  Status read = ReadBody(reader, config_.max_body_bytes, &pr.body);
  if (!read.ok()) {
    if (read.code() == StatusCode::kFailedPrecondition) {
      return fail(413, "request_too_large", read.message());
    }
    return fail(400, "bad_request", read.message());
  }
  record->bytes_in = static_cast<int64_t>(pr.body.size());
  std::string root = UpstreamFor(route, pr.headers);
  if (root.empty()) {
    return fail(502, "no_upstream", "no upstream is configured for " + std::string(route.label));
  }
  auto ex = std::make_shared<ProxyExchange>(std::move(pr), config_, metrics_, record, conn,
                                            std::move(root));
  for (const auto& hook : hooks_) {
    if (auto h = hook->Begin(*ex)) ex->AddHook(std::move(h));
  }
  auto after = std::move(conn->after_response);
  conn->after_response = [ex, after = std::move(after)] {
    ex->Complete();
    if (after) after();
  };
  ex->Run(res, ex);
}

}  // namespace compactor::serve
