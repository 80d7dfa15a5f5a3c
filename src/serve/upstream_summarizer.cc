#include "serve/upstream_summarizer.h"

#include <algorithm>
#include <utility>

#include "compactor/llm_summarizer.h"

namespace compactor::serve {
namespace {

// Fields that describe the client's body, not who is asking: the summary
// request has a body of its own.
bool DescribesBody(std::string_view name) {
  for (std::string_view f :
       {"content-type", "content-length", "content-encoding", "accept", "accept-encoding"}) {
    if (EqualsIgnoreCase(name, f)) return true;
  }
  return false;
}

bool HasField(const std::vector<std::pair<std::string, std::string>>& headers,
              std::string_view name) {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return EqualsIgnoreCase(h.first, name); });
}

// Sends the summary request where the client's request went, with the
// client's header fields (its credentials among them). The providers'
// request builder knows nothing of them, so they never reach its messages.
class ClientTransport : public HttpTransport {
 public:
  ClientTransport(std::shared_ptr<HttpTransport> inner, std::string url, HeaderList headers,
                  bool mark)
      : inner_(std::move(inner)), url_(std::move(url)), headers_(std::move(headers)), mark_(mark) {}

  Result<HttpResponse> Send(const HttpRequest& request) override {
    HttpRequest r = request;
    r.url = url_;
    for (const auto& [name, value] : headers_) {
      if (DescribesBody(name) || HasField(request.headers, name)) continue;
      r.headers.emplace_back(name, value);
    }
    // Only when asked (serve.markSummaryRequests, for a test harness's fake
    // upstream that must tell the proxy's summaries from a client compacting
    // by itself): a real upstream gets no internal header.
    if (mark_) r.headers.emplace_back("x-compactor-request", "summary");
    return inner_->Send(r);
  }

 private:
  std::shared_ptr<HttpTransport> inner_;
  std::string url_;
  HeaderList headers_;
  bool mark_;
};

CallOptions CallOptionsOf(const ProxySummarizerOptions& options,
                          std::shared_ptr<HttpTransport> transport) {
  CallOptions call;
  call.transport = std::move(transport);
  call.retry = options.retry;
  call.env = options.env;
  return call;
}

// The LLM summarizer with every error stripped of the client's credentials.
class ProxySummarizer : public Summarizer {
 public:
  ProxySummarizer(std::string name, std::unique_ptr<Summarizer> inner,
                  std::vector<std::string> secrets)
      : name_(std::move(name)), inner_(std::move(inner)), secrets_(std::move(secrets)) {}

  std::string_view name() const override { return name_; }

  Result<std::string> Summarize(const SummaryRequest& request) const override {
    auto out = inner_->Summarize(request);
    if (out.ok() || secrets_.empty()) return out;
    return Status(out.status().code(), RedactSecrets(out.status().message(), secrets_));
  }

 private:
  std::string name_;
  std::unique_ptr<Summarizer> inner_;
  std::vector<std::string> secrets_;
};

}  // namespace

std::unique_ptr<Summarizer> NewUpstreamSummarizer(UpstreamSummaryTarget target,
                                                  const ProxySummarizerOptions& options) {
  ModelConfig model;
  model.name = "upstream";
  model.api = target.api;
  model.model_id = target.model;
  // Only a placeholder for the request builder: ClientTransport sends the
  // request to the client's own URL.
  model.base_url = target.url;
  model.stream = target.stream;
  std::shared_ptr<HttpTransport> inner = options.transport ? options.transport : NewCurlTransport();
  std::vector<std::string> secrets = CredentialsIn(target.headers);
  auto transport = std::make_shared<ClientTransport>(
      std::move(inner), std::move(target.url), std::move(target.headers), options.mark_requests);
  LlmSummarizerOptions llm;
  llm.candidates.push_back(std::move(model));
  llm.call = CallOptionsOf(options, std::move(transport));
  return std::make_unique<ProxySummarizer>("upstream", NewLlmSummarizer(std::move(llm)),
                                           std::move(secrets));
}

std::unique_ptr<Summarizer> NewModelSummarizer(std::vector<ModelConfig> candidates,
                                               const ProxySummarizerOptions& options) {
  std::string name = candidates.empty() ? std::string("model") : candidates.front().name;
  LlmSummarizerOptions llm;
  llm.candidates = std::move(candidates);
  llm.call = CallOptionsOf(options, options.transport);
  return std::make_unique<ProxySummarizer>(std::move(name), NewLlmSummarizer(std::move(llm)),
                                           std::vector<std::string>());
}

int64_t SummaryOutputCap(int64_t window) {
  int64_t cap = DefaultMaxOutputTokens(SummaryKind::kHistory);
  return window > 0 ? std::min(cap, window / 4) : cap;
}

Result<std::string> SummarizeWithin(const Summarizer& summarizer, SummaryRequest request,
                                    int64_t window) {
  request.max_output_tokens = SummaryOutputCap(window);
  request.max_input_tokens = window > 0 ? window - request.max_output_tokens : 0;
  return SummarizeInPasses(summarizer, request);
}

}  // namespace compactor::serve
