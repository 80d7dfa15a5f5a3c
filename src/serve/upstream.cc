#include "serve/upstream.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <initializer_list>
#include <utility>

#include "serve/upstream_transport.h"

namespace compactor::serve {
namespace internal {
namespace {

std::string FirstSet(Env& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto v = env.GetEnvVar(name);
    if (v && !v->empty()) return *v;
  }
  return "";
}

// Whether this thread's environment names a proxy for plain HTTP; read once
// per thread (the variables do not change while serve runs; tests start a
// new server, with new threads, after changing them).
bool HttpProxySet(Env& env) {
  thread_local int set = -1;
  if (set < 0) set = ReadEnvProxy(env, "http").proxy.empty() ? 0 : 1;
  return set == 1;
}

}  // namespace

// "http_proxy" (never "HTTP_PROXY", as libcurl) or "<SCHEME>_proxy" in
// either case, then "all_proxy"/"ALL_PROXY"; an empty variable counts as
// unset.
EnvProxy ReadEnvProxy(Env& env, std::string_view scheme) {
  EnvProxy p;
  std::string lower = ToLower(scheme) + "_proxy";
  if (lower == "http_proxy") {
    p.proxy = FirstSet(env, {"http_proxy", "all_proxy", "ALL_PROXY"});
  } else {
    std::string upper = lower;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    p.proxy = FirstSet(env, {lower.c_str(), upper.c_str(), "all_proxy", "ALL_PROXY"});
  }
  p.no_proxy = FirstSet(env, {"no_proxy", "NO_PROXY"});
  return p;
}

void CallState::HeadLine(std::string_view line) {
  last_activity_us = NowMicros();
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  if (head_complete) return;  // trailers
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response head (after 1xx interim responses).
    headers.clear();
    status = 0;
    size_t sp = line.find(' ');
    if (sp != std::string_view::npos && line.size() >= sp + 4) {
      std::from_chars(line.data() + sp + 1, line.data() + sp + 4, status);
    }
    return;
  }
  std::string_view trimmed = TrimOws(line);
  if (trimmed.empty()) {
    if (status >= 200 || status == 101) {
      head_complete = true;
      head_micros = NowMicros() - start_us;
    }
    return;
  }
  if ((line.front() == ' ' || line.front() == '\t') && !headers.empty()) {
    headers.back().second += " ";  // obsolete line folding
    headers.back().second += trimmed;
    return;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  headers.emplace_back(std::string(TrimOws(line.substr(0, colon))),
                       std::string(TrimOws(line.substr(colon + 1))));
}

bool CallState::Body(std::string_view data) {
  last_activity_us = NowMicros();
  if (!head_complete) {
    // A body without a head cannot happen with HTTP; be safe.
    head_complete = true;
    head_micros = last_activity_us - start_us;
  }
  if (on_body && !on_body(data)) {
    Finish(UpstreamFailure::kAborted, "the response could not be delivered");
    return false;
  }
  return true;
}

void CallState::Finish(UpstreamFailure f, std::string_view why) {
  if (finished) return;
  finished = true;
  failure = f;
  error = f == UpstreamFailure::kNone ? std::string() : RedactUrl(why);
}

}  // namespace internal

std::string_view FailureKind(UpstreamFailure f) {
  switch (f) {
    case UpstreamFailure::kConnect:
      return "connect";
    case UpstreamFailure::kTimeout:
      return "timeout";
    case UpstreamFailure::kReset:
      return "reset";
    case UpstreamFailure::kOther:
      return "other";
    case UpstreamFailure::kNone:
    case UpstreamFailure::kAborted:
      return "";
  }
  return "";
}

UpstreamCall::UpstreamCall(UpstreamRequest request, std::function<bool(std::string_view)> on_body)
    : state_(std::make_unique<internal::CallState>(std::move(request), std::move(on_body))) {}

// (The transport, declared after the state it points into, goes first.)
UpstreamCall::~UpstreamCall() = default;

Status UpstreamCall::Start() {
  const UpstreamRequest& r = state_->request;
  if (r.transport == UpstreamTransport::kBuiltin ||
      (r.transport == UpstreamTransport::kAuto && !internal::HttpProxySet(*r.env))) {
    transport_ = internal::NewBuiltinTransport(r.url);
  }
  if (transport_ == nullptr) {
    if (r.transport == UpstreamTransport::kBuiltin) {
      return Status::InvalidArgument("the built-in HTTP client cannot reach " + RedactUrl(r.url));
    }
    transport_ = internal::NewCurlTransport();
  }
  state_->start_us = state_->NowMicros();
  state_->last_activity_us = state_->start_us;
  COMPACTOR_RETURN_IF_ERROR(transport_->Start(*state_));
  started_ = true;
  return Status::Ok();
}

bool UpstreamCall::Perform() {
  if (!started_ || state_->finished) return false;
  return transport_->Perform(*state_);
}

bool UpstreamCall::ClientGone(int fd) {
  char byte;
  ssize_t r = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r == 0) return true;
  if (r < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  // The client sent more (a pipelined request): not a disconnect. Stop
  // watching, or every poll would return at once.
  watch_client_ = false;
  return false;
}

bool UpstreamCall::Wait(int client_fd) {
  internal::CallState& s = *state_;
  if (!started_ || s.finished) return false;
  int64_t now = s.NowMicros();
  int64_t idle_left_ms = s.request.idle_timeout_ms - (now - s.last_activity_us) / 1000;
  if (idle_left_ms <= 0) {
    s.Finish(UpstreamFailure::kTimeout,
             "no data from the upstream for " + std::to_string(s.request.idle_timeout_ms) + " ms");
    transport_->Abort();
    return false;
  }
  int fd = client_fd >= 0 && watch_client_ ? client_fd : -1;
  int wait_ms = static_cast<int>(std::clamp<int64_t>(idle_left_ms, 1, 1000));
  if (transport_->Poll(s, fd, wait_ms) && ClientGone(fd)) {
    client_gone_ = true;
    s.Finish(UpstreamFailure::kAborted, "the client closed the connection");
    transport_->Abort();
    return false;
  }
  return !s.finished;
}

void UpstreamCall::Abort() {
  if (!started_ || state_->finished) return;
  state_->Finish(UpstreamFailure::kAborted, "abandoned by the proxy");
  transport_->Abort();
}

bool UpstreamCall::head_complete() const { return state_->head_complete; }
int UpstreamCall::status() const { return state_->status; }
const HeaderList& UpstreamCall::headers() const { return state_->headers; }
int64_t UpstreamCall::head_micros() const { return state_->head_micros; }
bool UpstreamCall::finished() const { return state_->finished; }
bool UpstreamCall::succeeded() const {
  return state_->finished && state_->failure == UpstreamFailure::kNone;
}
UpstreamFailure UpstreamCall::failure() const { return state_->failure; }
const std::string& UpstreamCall::error() const { return state_->error; }

}  // namespace compactor::serve
