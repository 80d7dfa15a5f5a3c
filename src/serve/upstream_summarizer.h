// The summarizers of the proxy (docs/serve.md, "Compaction in the proxy"):
// `--summarizer upstream` writes the summary with the client's own model,
// through the client's own API and upstream, with the client's own
// credentials; `--summarizer MODEL` with a model of the settings file. Both
// are the LLM summarizer (llm_summarizer.h) underneath; what this adds is
// the call's target (the client's URL, model and headers) and the bound:
// the summary request never exceeds the summarizer's window (long histories
// are summarized in chunks, each folded into the running summary).
//
// Secrets: the client's header values are copied into the summary request
// only; they are never logged, and every error message is stripped of them.
//
// Thread safety: the summarizers are immutable; Summarize may run on any
// thread (the transport must be thread-safe, curl's is).
#ifndef COMPACTOR_SRC_SERVE_UPSTREAM_SUMMARIZER_H_
#define COMPACTOR_SRC_SERVE_UPSTREAM_SUMMARIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compactor/env.h"
#include "compactor/providers.h"
#include "compactor/summarizer.h"
#include "serve/http_util.h"

namespace compactor::serve {

// Where and as whom the summary request of `--summarizer upstream` goes.
struct UpstreamSummaryTarget {
  // The registered API of the client's request ("anthropic", ...).
  std::string api;
  // The URL the client's request was forwarded to (upstream root + target).
  std::string url;
  // The client's model and whether it streamed (some backends only stream).
  std::string model;
  bool stream = false;
  // The client's request header fields; every one is sent with the summary
  // request except those describing the body (Content-Type, -Length,
  // -Encoding, Accept, Accept-Encoding) and those the API's request already
  // sets. Credentials (Authorization, x-api-key, ...) among them.
  HeaderList headers;
};

struct ProxySummarizerOptions {
  // null = libcurl.
  std::shared_ptr<HttpTransport> transport;
  // Clock, waits between retries, API keys of settings models. null = default.
  Env* env = nullptr;
  // A proxy cannot wait long: one retry, short waits (a summary that fails
  // sends the request upstream uncompacted).
  RetryPolicy retry{.max_retries = 1,
                    .base_delay = std::chrono::milliseconds(500),
                    .max_wait = std::chrono::milliseconds(5000)};
  // Adds "x-compactor-request: summary" to the summary requests of
  // NewUpstreamSummarizer (settings "serve.markSummaryRequests"; test
  // harnesses only: real upstreams never get internal headers).
  bool mark_requests = false;
};

// The summarizer of `--summarizer upstream` for one client request.
// kInvalidArgument (at Summarize) for an API that cannot summarize.
std::unique_ptr<Summarizer> NewUpstreamSummarizer(UpstreamSummaryTarget target,
                                                  const ProxySummarizerOptions& options);

// The summarizer of `--summarizer MODEL`: the candidates of ResolveCandidates.
std::unique_ptr<Summarizer> NewModelSummarizer(std::vector<ModelConfig> candidates,
                                               const ProxySummarizerOptions& options);

// The output cap of a summary written inside `window` tokens: pi's default
// (0.8 x reserve) but at most a quarter of the window.
int64_t SummaryOutputCap(int64_t window);

// Summarizes `request` (history or update) so that no summarizer call's
// prompt exceeds `window` tokens (0 = unbounded): the output cap is
// SummaryOutputCap(window), the prompt gets the rest, and a longer history
// goes in chunks, each folded into the running summary (SummarizeInPasses).
Result<std::string> SummarizeWithin(const Summarizer& summarizer, SummaryRequest request,
                                    int64_t window);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_UPSTREAM_SUMMARIZER_H_
