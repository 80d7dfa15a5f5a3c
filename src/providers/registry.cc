// The registry of provider APIs: one line per built-in. APIs are listed here
// rather than registering themselves from static initializers, which a
// static library would drop along with any object file nothing refers to.
#include "compactor/provider_api.h"
#include "providers/api_util.h"

namespace compactor {

std::span<const ProviderApi* const> ProviderApis() {
  // Built on first use (thread-safe), so no static initialization order matters.
  static const ProviderApi* const kApis[] = {
      &providers::OpenAiChatApi(),
      &providers::OpenAiResponsesApi(),
      &providers::AnthropicMessagesApi(),
      &providers::RemoteApi(),
  };
  return kApis;
}

const ProviderApi* FindProviderApi(std::string_view name) {
  for (const ProviderApi* api : ProviderApis()) {
    if (api->name() == name) return api;
  }
  return nullptr;
}

Result<const ProviderApi*> ApiOf(const ModelConfig& model) {
  if (const ProviderApi* api = FindProviderApi(model.api)) return api;
  return Status::InvalidArgument("model " + model.name + ": unknown provider API \"" + model.api +
                                 "\"");
}

}  // namespace compactor
