// The libcurl transport of UpstreamCall (upstream_transport.h): TLS, host
// names, proxies from the environment, credentials in the URL.
#include <curl/curl.h>

#include <map>
#include <string>

#include "providers/curl_api.h"
#include "serve/upstream_transport.h"

namespace compactor::serve::internal {
namespace {

using compactor::internal::CurlApi;

const CurlApi* Api() {
  auto api = compactor::internal::Curl();
  return api.ok() ? *api : nullptr;
}

// "http" for "http://host/...", "https" for "HTTPS://..."; libcurl's guess
// ("http") without a scheme.
std::string_view SchemeOf(std::string_view url) {
  size_t sep = url.find("://");
  return sep == std::string_view::npos ? std::string_view("http") : url.substr(0, sep);
}

size_t OnHeaderLine(char* data, size_t size, size_t nmemb, void* self) {
  size_t n = size * nmemb;
  static_cast<CallState*>(self)->HeadLine(std::string_view(data, n));
  return n;
}

size_t OnBodyData(char* data, size_t size, size_t nmemb, void* self) {
  size_t n = size * nmemb;
  // 0 makes libcurl stop with CURLE_WRITE_ERROR.
  return static_cast<CallState*>(self)->Body(std::string_view(data, n)) ? n : 0;
}

// The calling thread's multi handle and one spare easy handle. The multi's
// connection cache lets the thread's next request reuse the connection
// (keep-alive, TLS session) of the last; the spare spares each request
// libcurl's set-up and tear-down of a transfer (its buffers: tens of kB
// allocated and freed per request otherwise).
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
      // Reset, then set up again: a handle keeps per-transfer state that
      // libcurl 7.88 clears only in curl_easy_reset, among it the count of
      // retries on a reused connection that died, which otherwise carries
      // over and fails every sixth such retry of the thread ("Connection
      // died, tried 5 times", curl PR #19066; tests/serve/upstream_test.cc,
      // RetryIsPerRequestNotPerThread). The reset keeps the TLS session
      // cache; the connections are the multi's.
      Api()->easy_reset(h);
      Configure(h);
      spare_ = h;
    } else {
      Api()->easy_cleanup(h);
    }
    if (h == proxied_) proxied_ = nullptr;  // the proxy options went with the reset
  }

 private:
  static void Configure(CURL* h) {
    const CurlApi* api = Api();
    api->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    api->easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    api->easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
    api->easy_setopt(h, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    api->easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    api->easy_setopt(h, CURLOPT_HEADERFUNCTION, &OnHeaderLine);
    api->easy_setopt(h, CURLOPT_WRITEFUNCTION, &OnBodyData);
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

class CurlTransport : public Transport {
 public:
  ~CurlTransport() override { Release(); }

  Status Start(CallState& s) override {
    COMPACTOR_ASSIGN_OR_RETURN(const CurlApi* api, compactor::internal::Curl());
    const UpstreamRequest& r = s.request;
    CURL* h = Local().TakeEasy(*r.env, r.url);
    if (h == nullptr) return Status::Unavailable("curl_easy_init failed");
    easy_ = h;
    headers_list_ = HeaderSlist(*api, r.headers);
    // The invariant options were set when the handle was made (ThreadCurl).
    api->easy_setopt(h, CURLOPT_URL, r.url.c_str());
    api->easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf_);
    api->easy_setopt(h, CURLOPT_HTTPHEADER, headers_list_);
    api->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout_ms));
    api->easy_setopt(h, CURLOPT_HEADERDATA, &s);
    api->easy_setopt(h, CURLOPT_WRITEDATA, &s);
    SetMethod(h, r);
    if (api->multi_add_handle(Multi(), h) != CURLM_OK) {
      return Status::Unavailable("curl_multi_add_handle failed");
    }
    return Status::Ok();
  }

  bool Perform(CallState& s) override {
    const CurlApi* api = Api();
    CURLM* multi = Multi();
    int running = 0;
    api->multi_perform(multi, &running);
    CURLMsg* msg;
    int left = 0;
    while ((msg = api->multi_info_read(multi, &left)) != nullptr) {
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy_) Finish(s, msg->data.result);
    }
    return !s.finished;
  }

  bool Poll(CallState& /*s*/, int client_fd, int wait_ms) override {
    curl_waitfd extra{};
    unsigned n_extra = 0;
    if (client_fd >= 0) {
      extra.fd = client_fd;
      extra.events = CURL_WAIT_POLLIN;
      n_extra = 1;
    }
    Api()->multi_poll(Multi(), n_extra ? &extra : nullptr, n_extra, wait_ms, nullptr);
    return n_extra && extra.revents != 0;
  }

  void Abort() override { Release(); }

 private:
  // The client's fields as libcurl takes them, plus the removal of the
  // fields libcurl would add on its own: a transparent proxy sends only the
  // client's.
  static curl_slist* HeaderSlist(const CurlApi& api, const HeaderList& headers) {
    curl_slist* list = nullptr;
    bool has_accept = false;
    bool has_type = false;
    std::string line;  // one buffer for every field (libcurl copies each)
    for (const auto& [name, value] : headers) {
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
      list = api.slist_append(list, line.c_str());
    }
    list = api.slist_append(list, "Expect:");
    if (!has_accept) list = api.slist_append(list, "Accept:");
    if (!has_type) list = api.slist_append(list, "Content-Type:");
    return list;
  }

  // The handle was reset when it was given back: its method is GET.
  static void SetMethod(CURL* h, const UpstreamRequest& r) {
    const CurlApi* api = Api();
    const std::string& m = r.method;
    bool has_body = r.body != nullptr;
    if (m == "HEAD") {
      api->easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (m == "GET" && !has_body) {
      // A reset handle's default.
    } else {
      if (has_body) {
        api->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body->size()));
        api->easy_setopt(h, CURLOPT_POSTFIELDS, r.body->data());
      }
      if (m != "POST") api->easy_setopt(h, CURLOPT_CUSTOMREQUEST, m.c_str());
    }
  }

  void Finish(CallState& s, int curl_code) {
    if (s.finished) return;  // the sink refused: already said so
    UpstreamFailure f = Classify(curl_code);
    std::string why;
    if (f != UpstreamFailure::kNone) {
      why = errbuf_[0] != '\0'
                ? std::string(errbuf_)
                : std::string(Api()->easy_strerror(static_cast<CURLcode>(curl_code)));
    }
    s.Finish(f, why);
  }

  // Removing an unfinished transfer makes libcurl close its connection.
  void Release() {
    const CurlApi* api = Api();
    if (easy_ != nullptr) {
      api->multi_remove_handle(Multi(), easy_);
      Local().GiveBack(easy_);
      easy_ = nullptr;
    }
    if (headers_list_ != nullptr) {
      api->slist_free_all(headers_list_);
      headers_list_ = nullptr;
    }
  }

  CURL* easy_ = nullptr;
  curl_slist* headers_list_ = nullptr;
  char errbuf_[CURL_ERROR_SIZE] = {};
};

}  // namespace

std::unique_ptr<Transport> NewCurlTransport() { return std::make_unique<CurlTransport>(); }

}  // namespace compactor::serve::internal
