#include "serve/upstream.h"

#include <curl/curl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <initializer_list>
#include <map>

#include "providers/curl_api.h"

namespace compactor::serve {
namespace {

using internal::CurlApi;

const CurlApi* Api() {
  auto api = internal::Curl();
  return api.ok() ? *api : nullptr;
}

// The proxy that libcurl would take from the environment for `scheme`
// ("http_proxy" -- never "HTTP_PROXY", as libcurl -- or "<SCHEME>_proxy" in
// either case, then "all_proxy"/"ALL_PROXY"; "" when none; an empty variable
// counts as unset), and the "no_proxy"/"NO_PROXY" list.
struct EnvProxy {
  std::string proxy;
  std::string no_proxy;
};

std::string FirstSet(Env& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto v = env.GetEnvVar(name);
    if (v && !v->empty()) return *v;
  }
  return "";
}

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

// "http" for "http://host/...", "https" for "HTTPS://..."; libcurl's guess
// ("http") without a scheme.
std::string_view SchemeOf(std::string_view url) {
  size_t sep = url.find("://");
  return sep == std::string_view::npos ? std::string_view("http") : url.substr(0, sep);
}

// The calling thread's multi handle and one spare easy handle. The multi's
// connection cache lets the thread's next request reuse the connection
// (keep-alive, TLS session) of the last; the spare spares each request
// libcurl's set-up and tear-down of a transfer (its buffers: tens of kB
// allocated and freed per request otherwise) and the options that are the
// same for every transfer (set once, when the handle is made: Configure).
// Worker threads serve one exchange at a time, so one spare is enough.
class ThreadCurl {
 public:
  ~ThreadCurl() {
    if (spare_ != nullptr) Api()->easy_cleanup(spare_);
    if (multi_ != nullptr) Api()->multi_cleanup(multi_);
  }
  CURLM* multi() {
    if (multi_ == nullptr) multi_ = Api()->multi_init();
    return multi_;
  }
  // A handle with the invariant options set and the proxy of `url`'s scheme
  // (from the environment, read once per thread and scheme).
  CURL* TakeEasy(Env& env, std::string_view url) {
    CURL* h = spare_;
    spare_ = nullptr;
    if (h == nullptr) {
      h = Api()->easy_init();
      if (h == nullptr) return nullptr;
      Configure(h);
    }
    SetProxy(h, env, SchemeOf(url));
    return h;
  }
  // REQUIRES: `h` is not in the multi any more.
  void GiveBack(CURL* h) {
    if (spare_ == nullptr) {
      // The per-transfer options point into the finished call: cleared, so
      // the idle handle holds no dangling pointer. The rest is set again by
      // the next Start (UpstreamCall::SetMethod puts the method back first).
      const CurlApi* api = Api();
      api->easy_setopt(h, CURLOPT_HTTPHEADER, static_cast<curl_slist*>(nullptr));
      api->easy_setopt(h, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
      api->easy_setopt(h, CURLOPT_HEADERDATA, static_cast<void*>(nullptr));
      api->easy_setopt(h, CURLOPT_WRITEDATA, static_cast<void*>(nullptr));
      api->easy_setopt(h, CURLOPT_POSTFIELDS, static_cast<const char*>(nullptr));
      spare_ = h;
    } else {
      Api()->easy_cleanup(h);
      if (h == proxied_) proxied_ = nullptr;
    }
  }

 private:
  static void Configure(CURL* h) {
    const CurlApi* api = Api();
    api->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    api->easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    api->easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
    api->easy_setopt(h, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    api->easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    api->easy_setopt(h, CURLOPT_HEADERFUNCTION, &UpstreamCall::OnHeaderLine);
    api->easy_setopt(h, CURLOPT_WRITEFUNCTION, &UpstreamCall::OnBodyData);
  }

  // libcurl would look the proxy variables up again for every transfer
  // (six getenv and copies); they are read once per thread and scheme and
  // given to it explicitly: the same proxy, the same exceptions.
  void SetProxy(CURL* h, Env& env, std::string_view scheme) {
    if (h == proxied_ && scheme == proxied_scheme_) return;
    std::string key = ToLower(scheme);
    auto it = proxies_.find(key);
    if (it == proxies_.end()) it = proxies_.emplace(key, ReadEnvProxy(env, key)).first;
    Api()->easy_setopt(h, CURLOPT_PROXY, it->second.proxy.c_str());
    Api()->easy_setopt(h, CURLOPT_NOPROXY, it->second.no_proxy.c_str());
    proxied_ = h;
    proxied_scheme_ = key;
  }

  CURLM* multi_ = nullptr;
  CURL* spare_ = nullptr;
  std::map<std::string, EnvProxy, std::less<>> proxies_;  // by scheme
  CURL* proxied_ = nullptr;  // the handle whose proxy is set, and for what
  std::string proxied_scheme_;
};

ThreadCurl& Local() {
  thread_local ThreadCurl curl;
  return curl;
}

CURLM* Multi() { return Local().multi(); }

std::string_view TrimWs(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

bool HasCrLf(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

UpstreamFailure Classify(int code) {
  switch (code) {
    case CURLE_OK:
      return UpstreamFailure::kNone;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
      return UpstreamFailure::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return UpstreamFailure::kTimeout;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return UpstreamFailure::kReset;
    case CURLE_WRITE_ERROR:
    case CURLE_ABORTED_BY_CALLBACK:
      return UpstreamFailure::kAborted;
    default:
      return UpstreamFailure::kOther;
  }
}

}  // namespace

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
    : request_(std::move(request)), on_body_(std::move(on_body)) {}

UpstreamCall::~UpstreamCall() {
  const CurlApi* api = Api();
  if (easy_ != nullptr) {
    // Removing an unfinished transfer makes libcurl close its connection.
    api->multi_remove_handle(Multi(), static_cast<CURL*>(easy_));
    Local().GiveBack(static_cast<CURL*>(easy_));
  }
  if (headers_list_ != nullptr) api->slist_free_all(static_cast<curl_slist*>(headers_list_));
}

Status UpstreamCall::Start() {
  if (request_.transport == UpstreamTransport::kBuiltin) {
    return Status::InvalidArgument("the built-in upstream client is not written yet");
  }
  COMPACTOR_ASSIGN_OR_RETURN(const CurlApi* api, internal::Curl());
  CURL* h = Local().TakeEasy(*request_.env, request_.url);
  if (h == nullptr) return Status::Unavailable("curl_easy_init failed");
  easy_ = h;
  curl_slist* list = nullptr;
  bool has_accept = false;
  bool has_type = false;
  std::string line;  // one buffer for every field (libcurl copies each)
  for (const auto& [name, value] : request_.headers) {
    if (HasCrLf(name) || HasCrLf(value) || name.empty()) continue;
    has_accept = has_accept || EqualsIgnoreCase(name, "accept");
    has_type = has_type || EqualsIgnoreCase(name, "content-type");
    // "Name;" is libcurl's spelling of a field with an empty value ("Name:" removes it).
    line.assign(name);
    if (value.empty()) {
      line += ';';
    } else {
      line += ": ";
      line += value;
    }
    list = api->slist_append(list, line.c_str());
  }
  // libcurl would add these on its own; a transparent proxy sends only the client's.
  list = api->slist_append(list, "Expect:");
  if (!has_accept) list = api->slist_append(list, "Accept:");
  if (!has_type) list = api->slist_append(list, "Content-Type:");
  headers_list_ = list;

  // The invariant options were set when the handle was made (ThreadCurl).
  api->easy_setopt(h, CURLOPT_URL, request_.url.c_str());
  api->easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf_);
  api->easy_setopt(h, CURLOPT_HTTPHEADER, list);
  api->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request_.connect_timeout_ms));
  api->easy_setopt(h, CURLOPT_HEADERDATA, this);
  api->easy_setopt(h, CURLOPT_WRITEDATA, this);
  SetMethod(h);
  start_us_ = NowMicros();
  last_activity_us_ = start_us_;
  if (api->multi_add_handle(Multi(), h) != CURLM_OK) {
    return Status::Unavailable("curl_multi_add_handle failed");
  }
  started_ = true;
  return Status::Ok();
}

// The handle may come from a transfer with another method: everything a
// method option changes is put back to a plain GET first (POSTFIELDS set to
// null makes the method POST, HTTPGET then makes it GET and turns NOBODY
// and UPLOAD off), then this request's method is set.
void UpstreamCall::SetMethod(void* easy) const {
  const CurlApi* api = Api();
  CURL* h = static_cast<CURL*>(easy);
  api->easy_setopt(h, CURLOPT_CUSTOMREQUEST, static_cast<const char*>(nullptr));
  api->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(-1));
  api->easy_setopt(h, CURLOPT_POSTFIELDS, static_cast<const char*>(nullptr));
  api->easy_setopt(h, CURLOPT_HTTPGET, 1L);
  const std::string& m = request_.method;
  bool has_body = request_.body != nullptr;
  if (m == "HEAD") {
    api->easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (m == "GET" && !has_body) {
    // HTTPGET above.
  } else {
    if (has_body) {
      api->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request_.body->size()));
      api->easy_setopt(h, CURLOPT_POSTFIELDS, request_.body->data());
    }
    if (m != "POST") api->easy_setopt(h, CURLOPT_CUSTOMREQUEST, m.c_str());
  }
}

size_t UpstreamCall::OnHeaderLine(char* data, size_t size, size_t nmemb, void* self) {
  auto* call = static_cast<UpstreamCall*>(self);
  size_t n = size * nmemb;
  call->last_activity_us_ = call->NowMicros();
  call->HeaderLine(std::string_view(data, n));
  return n;
}

void UpstreamCall::HeaderLine(std::string_view line) {
  if (head_complete_) return;  // trailers
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response head (after 1xx interim responses).
    headers_.clear();
    status_ = 0;
    size_t sp = line.find(' ');
    if (sp != std::string_view::npos && line.size() >= sp + 4) {
      std::from_chars(line.data() + sp + 1, line.data() + sp + 4, status_);
    }
    return;
  }
  std::string_view trimmed = TrimWs(line);
  if (trimmed.empty()) {
    if (status_ >= 200 || status_ == 101) {
      head_complete_ = true;
      head_micros_ = NowMicros() - start_us_;
    }
    return;
  }
  if ((line.front() == ' ' || line.front() == '\t') && !headers_.empty()) {
    headers_.back().second += " ";  // obsolete line folding
    headers_.back().second += trimmed;
    return;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  headers_.emplace_back(std::string(TrimWs(line.substr(0, colon))),
                        std::string(TrimWs(line.substr(colon + 1))));
}

size_t UpstreamCall::OnBodyData(char* data, size_t size, size_t nmemb, void* self) {
  auto* call = static_cast<UpstreamCall*>(self);
  size_t n = size * nmemb;
  call->last_activity_us_ = call->NowMicros();
  if (!call->head_complete_) {
    // A body without a head cannot happen with HTTP; be safe.
    call->head_complete_ = true;
    call->head_micros_ = call->NowMicros() - call->start_us_;
  }
  if (call->on_body_ && !call->on_body_(std::string_view(data, n))) {
    call->sink_refused_ = true;
    return 0;  // CURLE_WRITE_ERROR
  }
  return n;
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

void UpstreamCall::Finish(int curl_code) {
  finished_ = true;
  if (sink_refused_) {
    failure_ = UpstreamFailure::kAborted;
    error_ = "the response could not be delivered";
    return;
  }
  failure_ = Classify(curl_code);
  if (failure_ != UpstreamFailure::kNone) {
    std::string why = errbuf_[0] != '\0'
                          ? std::string(errbuf_)
                          : std::string(Api()->easy_strerror(static_cast<CURLcode>(curl_code)));
    error_ = RedactUrl(why);
  }
}

bool UpstreamCall::Perform() {
  if (!started_ || finished_) return false;
  const CurlApi* api = Api();
  CURLM* multi = Multi();
  int running = 0;
  api->multi_perform(multi, &running);
  CURLMsg* msg;
  int left = 0;
  while ((msg = api->multi_info_read(multi, &left)) != nullptr) {
    if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy_) Finish(msg->data.result);
  }
  return !finished_;
}

bool UpstreamCall::Wait(int client_fd) {
  if (!started_ || finished_) return false;
  const CurlApi* api = Api();
  CURLM* multi = Multi();
  int64_t now = NowMicros();
  int64_t idle_left_ms = request_.idle_timeout_ms - (now - last_activity_us_) / 1000;
  if (idle_left_ms <= 0) {
    finished_ = true;
    failure_ = UpstreamFailure::kTimeout;
    error_ = "no data from the upstream for " + std::to_string(request_.idle_timeout_ms) + " ms";
    return false;
  }
  curl_waitfd extra{};
  unsigned n_extra = 0;
  if (client_fd >= 0 && watch_client_) {
    extra.fd = client_fd;
    extra.events = CURL_WAIT_POLLIN;
    n_extra = 1;
  }
  int wait_ms = static_cast<int>(std::clamp<int64_t>(idle_left_ms, 1, 1000));
  api->multi_poll(multi, n_extra ? &extra : nullptr, n_extra, wait_ms, nullptr);
  if (n_extra && extra.revents != 0 && ClientGone(client_fd)) {
    client_gone_ = true;
    finished_ = true;
    failure_ = UpstreamFailure::kAborted;
    error_ = "the client closed the connection";
    return false;
  }
  return true;
}

void UpstreamCall::Abort() {
  if (!started_ || finished_) return;
  finished_ = true;
  failure_ = UpstreamFailure::kAborted;
  if (error_.empty()) error_ = "abandoned by the proxy";
  const CurlApi* api = Api();
  api->multi_remove_handle(Multi(), static_cast<CURL*>(easy_));
  Local().GiveBack(static_cast<CURL*>(easy_));
  easy_ = nullptr;
}

}  // namespace compactor::serve
