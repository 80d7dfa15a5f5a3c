// The pass-through proxy: one exchange per request (serve/hooks.h describes
// its steps), run on the connection's worker thread. Without hooks (or with
// hooks that stay out) the upstream's answer is relayed as it arrives, body
// bytes unchanged, streams event by event (docs/serve.md, "What is kept byte
// for byte").
//
// Thread safety: Handle runs concurrently on worker threads; AddHook must be
// called before the server starts.
#ifndef COMPACTOR_SRC_SERVE_PROXY_H_
#define COMPACTOR_SRC_SERVE_PROXY_H_

#include <httplib.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compactor/env.h"
#include "serve/hooks.h"
#include "serve/http_util.h"
#include "serve/metrics.h"
#include "serve/request_log.h"

namespace compactor::serve {

struct ProxyConfig {
  // Normalized upstream roots (NormalizeUpstream): the default one (may be
  // empty) and per API ("anthropic", "openai-responses", "openai-chat").
  std::string default_upstream;
  std::map<std::string, std::string> upstreams;
  size_t max_body_bytes = 32u << 20;
  int64_t connect_timeout_ms = 10'000;
  int64_t idle_timeout_ms = 600'000;
  ExchangeLimits limits;
  // The clock of the upstream calls. REQUIRES: non-null.
  Env* env = nullptr;
};

class Proxy {
 public:
  Proxy(ProxyConfig config, Metrics* metrics);
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Hooks run in the order they were added.
  void AddHook(std::shared_ptr<ProxyHook> hook);

  // Serves one proxied request on the calling worker thread: reads the body,
  // runs the exchange and sets `res` (status, fields, body or a provider
  // that relays the rest). `record` is filled as the exchange goes; it must
  // stay alive until CurrentConnection()->after_response has run, which the
  // exchange extends with its own completion (hooks' OnComplete) ahead of
  // what was there.
  void Handle(const httplib::Request& req, httplib::Response& res,
              const httplib::ContentReader* reader, const Route& route,
              std::shared_ptr<RequestRecord> record);

  // The upstream root a request goes to: its API's, else the default, else
  // (a path of no API without a default) the Anthropic upstream when the
  // request carries anthropic-version, else the first configured of
  // openai-responses, openai-chat, anthropic. Empty when none is configured.
  std::string UpstreamFor(const Route& route, const HeaderList& headers) const;

  const ProxyConfig& config() const { return config_; }

 private:
  ProxyConfig config_;
  Metrics* metrics_;
  std::vector<std::shared_ptr<ProxyHook>> hooks_;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_PROXY_H_
