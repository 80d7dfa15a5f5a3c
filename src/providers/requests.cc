// The provider-neutral request functions of providers.h: each goes through
// the model's API (provider_api.h); the rest is shared by every API.
#include "compactor/provider_api.h"
#include "compactor/providers.h"
#include "providers/stream.h"

namespace compactor {

LlmMessage LlmMessage::UserText(std::string text) {
  LlmMessage m;
  m.role = Role::kUser;
  LlmPart p;
  p.text = std::move(text);
  m.parts.push_back(std::move(p));
  return m;
}

std::string EffectiveReasoning(const ModelConfig& model, std::string_view thinking_level) {
  if (!model.reasoning) return "";
  std::string level =
      model.reasoning_effort.empty() ? std::string(thinking_level) : model.reasoning_effort;
  if (level == "off" || level == "inherit") return "";
  return level;
}

std::string EndpointUrl(const ModelConfig& model) {
  auto api = ApiOf(model);
  return api.ok() ? (*api)->EndpointUrl(model) : model.base_url;
}

Result<HttpRequest> BuildProviderRequest(const ModelConfig& model, const LlmRequest& request,
                                         std::string_view api_key) {
  COMPACTOR_ASSIGN_OR_RETURN(const ProviderApi* api, ApiOf(model));
  return api->BuildRequest(model, request, api_key);
}

Result<LlmResponse> ParseProviderResponse(const ModelConfig& model, std::string_view body) {
  COMPACTOR_ASSIGN_OR_RETURN(const ProviderApi* api, ApiOf(model));
  return api->ParseResponse(model, body);
}

Result<LlmResponse> ParseProviderStream(const ModelConfig& model, std::string_view sse_body) {
  providers::StreamDecoder decoder(model);
  decoder.Feed(sse_body);
  return decoder.Finish();
}

std::string DescribeHttpFailure(int status, std::string_view body) {
  size_t b = body.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return std::to_string(status) + " status code (no body)";
  body = body.substr(b);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r' || body.back() == ' ')) {
    body.remove_suffix(1);
  }
  constexpr size_t kMax = 4000;
  std::string out = std::to_string(status) + " " + std::string(body.substr(0, kMax));
  if (body.size() > kMax) out += "...";
  return out;
}

std::string RedactSecret(std::string text, std::string_view secret) {
  if (secret.size() < 4) return text;
  size_t pos = 0;
  while ((pos = text.find(secret, pos)) != std::string::npos) {
    text.replace(pos, secret.size(), "[redacted]");
    pos += 10;
  }
  return text;
}

int StripImagesToMarkers(LlmRequest& request) {
  int n = 0;
  for (LlmMessage& m : request.messages) {
    for (LlmPart& p : m.parts) {
      if (p.kind != LlmPart::Kind::kImage) continue;
      p.kind = LlmPart::Kind::kText;
      p.text = "[image]";
      p.data.clear();
      p.data.shrink_to_fit();
      p.mime_type.clear();
      ++n;
    }
  }
  return n;
}

}  // namespace compactor
