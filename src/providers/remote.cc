// A remote summarization service ("remote"): POST {systemPrompt, prompt} to
// the configured URL, answer {summary}. Summaries only: no streaming, no
// tools, no client requests (docs/providers.md).
#include "providers/api_util.h"

namespace compactor::providers {
namespace {

class RemoteStreamParser : public StreamParserBase {
 public:
  RemoteStreamParser() : StreamParserBase("remote") {}

 protected:
  void OnJson(const Json&, const std::string&, StreamEventInfo&) override {}
  LlmResponse Assemble() override { return response_; }
};

class Remote : public ProviderApi {
 public:
  std::string_view name() const override { return "remote"; }
  std::string_view pi_api() const override { return "remote"; }
  std::string_view default_provider() const override { return ""; }
  std::string_view default_base_url() const override { return ""; }
  bool base_url_is_endpoint() const override { return true; }
  bool streams() const override { return false; }
  bool agent_requests() const override { return false; }
  bool native_compaction() const override { return false; }

  std::string EndpointUrl(const ModelConfig& model) const override { return model.base_url; }

  // The user messages' text joined with blank lines is the prompt.
  Result<HttpRequest> BuildRequest(const ModelConfig& model, const LlmRequest& request,
                                   std::string_view api_key) const override {
    HttpRequest http = NewHttpRequest(model, EndpointUrl(model));
    std::string prompt;
    for (const LlmMessage& m : request.messages) {
      if (m.role != LlmMessage::Role::kUser) continue;
      if (!prompt.empty()) prompt += "\n\n";
      prompt += JoinedText(m.parts);
    }
    http.body = DumpJson(Json{{"systemPrompt", request.system_prompt}, {"prompt", prompt}});
    AddBearer(http, api_key);
    return http;
  }

  Result<LlmResponse> ParseResponse(const ModelConfig& model,
                                    std::string_view body) const override {
    COMPACTOR_ASSIGN_OR_RETURN(Json doc, ParseObjectBody(model, body));
    auto s = doc.find("summary");
    if (s == doc.end() || !s->is_string()) {
      return Status::Unavailable("Remote compaction response missing summary");
    }
    LlmResponse r;
    r.text = s->get<std::string>();
    r.stop_reason = "stop";
    return r;
  }

  // The service does not stream; a stream it sent anyway completes only at
  // "[DONE]" and carries no text.
  std::unique_ptr<ProviderStreamParser> NewStreamParser(const ModelConfig&) const override {
    return std::make_unique<RemoteStreamParser>();
  }

  ProviderError ReadError(int http_status, std::string_view body) const override {
    std::string type, detail;
    ReadErrorFields(body, &type, &detail);
    return HttpError(http_status, body, std::move(type), std::move(detail));
  }

  Result<ClientRequest> ReadClientRequest(std::string) const override {
    return Status::Unsupported("remote: not an API clients send requests in");
  }
  std::vector<std::string> ClientItemMessages(const ClientRequest&, size_t) const override {
    return {};
  }
  Result<std::string> RewriteClientRequest(const ClientRequest&,
                                           const ClientRewrite&) const override {
    return Status::Unsupported("remote: not an API clients send requests in");
  }
};

}  // namespace

const ProviderApi& RemoteApi() {
  static const Remote api;
  return api;
}

}  // namespace compactor::providers
