// libcurl transport. The multi interface drives one easy handle so the loop
// can poll the cancellation flag every 20 ms: libcurl calls the progress
// callback only about once a second while a server is silent, which is too
// slow for prompt cancellation, so the flag is checked in both places.
#include <cctype>
#include <chrono>

#include "compactor/providers.h"
#include "providers/curl_api.h"

namespace compactor {
namespace {

struct TransferState {
  const HttpRequest* request = nullptr;
  HttpResponse* response = nullptr;
  bool sink_refused = false;
};

size_t OnBody(char* data, size_t size, size_t nmemb, void* user) {
  auto* st = static_cast<TransferState*>(user);
  size_t n = size * nmemb;
  if (st->request->on_data) {
    if (!st->request->on_data(std::string_view(data, n))) {
      st->sink_refused = true;
      return 0;  // makes libcurl fail with CURLE_WRITE_ERROR
    }
    return n;
  }
  st->response->body.append(data, n);
  return n;
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

size_t OnHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* st = static_cast<TransferState*>(user);
  size_t n = size * nmemb;
  std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {
    st->response->headers.clear();  // a new response (after 100 Continue or a redirect)
    return n;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string name = Trim(line.substr(0, colon));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  st->response->headers[name] = Trim(line.substr(colon + 1));
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<TransferState*>(user);
  return st->request->Cancelled() ? 1 : 0;
}

struct EasyDeleter {
  const internal::CurlApi* api;
  void operator()(CURL* h) const { api->easy_cleanup(h); }
};
struct MultiDeleter {
  const internal::CurlApi* api;
  void operator()(CURLM* h) const { api->multi_cleanup(h); }
};
struct SlistDeleter {
  const internal::CurlApi* api;
  void operator()(curl_slist* l) const { api->slist_free_all(l); }
};

class CurlTransport : public HttpTransport {
 public:
  Result<HttpResponse> Send(const HttpRequest& request) override {
    COMPACTOR_ASSIGN_OR_RETURN(const internal::CurlApi* api, internal::Curl());
    if (request.Cancelled()) return Status::Cancelled("request cancelled");
    std::unique_ptr<CURL, EasyDeleter> easy(api->easy_init(), EasyDeleter{api});
    std::unique_ptr<CURLM, MultiDeleter> multi(api->multi_init(), MultiDeleter{api});
    if (!easy || !multi) return Status::Internal("curl: cannot create a handle");

    HttpResponse response;
    TransferState st{&request, &response, false};
    char errbuf[CURL_ERROR_SIZE] = {0};

    curl_slist* raw_headers = nullptr;
    for (const auto& [name, value] : request.headers) {
      raw_headers = api->slist_append(raw_headers, (name + ": " + value).c_str());
    }
    // No "Expect: 100-continue" round trip for large bodies.
    raw_headers = api->slist_append(raw_headers, "Expect:");
    std::unique_ptr<curl_slist, SlistDeleter> headers(raw_headers, SlistDeleter{api});

    CURL* h = easy.get();
    api->easy_setopt(h, CURLOPT_URL, request.url.c_str());
    api->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    api->easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    api->easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    if (request.method == "POST") {
      api->easy_setopt(h, CURLOPT_POST, 1L);
      api->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
      api->easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    } else if (request.method != "GET") {
      api->easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
    if (request.timeout_ms > 0) api->easy_setopt(h, CURLOPT_TIMEOUT_MS, long(request.timeout_ms));
    if (request.connect_timeout_ms > 0) {
      api->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, long(request.connect_timeout_ms));
    }
    api->easy_setopt(h, CURLOPT_WRITEFUNCTION, &OnBody);
    api->easy_setopt(h, CURLOPT_WRITEDATA, &st);
    api->easy_setopt(h, CURLOPT_HEADERFUNCTION, &OnHeader);
    api->easy_setopt(h, CURLOPT_HEADERDATA, &st);
    api->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    api->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &OnProgress);
    api->easy_setopt(h, CURLOPT_XFERINFODATA, &st);
    api->easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // whatever this libcurl decodes

    api->multi_add_handle(multi.get(), h);
    bool cancelled = false;
    int running = 1;
    while (running > 0) {
      CURLMcode mc = api->multi_perform(multi.get(), &running);
      if (mc != CURLM_OK) break;
      if (running == 0) break;
      if (request.Cancelled()) {
        cancelled = true;
        break;
      }
      api->multi_poll(multi.get(), nullptr, 0, 20, nullptr);
    }
    CURLcode rc = CURLE_OK;
    bool finished = false;
    int queued = 0;
    while (CURLMsg* msg = api->multi_info_read(multi.get(), &queued)) {
      if (msg->msg == CURLMSG_DONE && msg->easy_handle == h) {
        rc = msg->data.result;
        finished = true;
      }
    }
    api->multi_remove_handle(multi.get(), h);

    if (cancelled || rc == CURLE_ABORTED_BY_CALLBACK || request.Cancelled()) {
      return Status::Cancelled("request cancelled");
    }
    if (!finished) return Status::Unavailable("curl: transfer did not complete");
    if (rc == CURLE_WRITE_ERROR && st.sink_refused) {
      return Status::Cancelled("stream consumer stopped the transfer");
    }
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      return Status::Unavailable("request to " + HostOf(request.url) + " timed out (" +
                                 std::string(errbuf[0] ? errbuf : api->easy_strerror(rc)) + ")");
    }
    if (rc != CURLE_OK) {
      return Status::Unavailable("request to " + HostOf(request.url) + " failed: " +
                                 std::string(errbuf[0] ? errbuf : api->easy_strerror(rc)));
    }
    long status = 0;
    api->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    response.status = static_cast<int>(status);
    return response;
  }

 private:
  // scheme://host[:port] only: error messages never carry paths or queries.
  static std::string HostOf(const std::string& url) {
    size_t scheme = url.find("://");
    size_t start = scheme == std::string::npos ? 0 : scheme + 3;
    size_t end = url.find_first_of("/?#", start);
    if (end == std::string::npos) end = url.size();
    // Drop any user:password@ part.
    size_t at = url.rfind('@', end);
    if (at != std::string::npos && at >= start) {
      return url.substr(0, start) + url.substr(at + 1, end - at - 1);
    }
    return url.substr(0, end);
  }
};

}  // namespace

std::shared_ptr<HttpTransport> NewCurlTransport() { return std::make_shared<CurlTransport>(); }

}  // namespace compactor
