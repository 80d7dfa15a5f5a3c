// The provider-response parsers of every API (provider_api.h): a 2xx body, an
// error body (ReadError, DescribeHttpFailure) and a client request body. The
// first byte picks the API and the HTTP status; the rest is the body.
#include <string>

#include "compactor/overflow.h"
#include "compactor/provider_api.h"
#include "compactor/providers.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto apis = compactor::ProviderApis();
  const compactor::ProviderApi& api = *apis[data[0] % apis.size()];
  std::string_view body = compactor::fuzz::AsText(data + 1, size - 1);
  compactor::ModelConfig model;
  model.name = "fuzz";
  model.api = std::string(api.name());
  model.context_window = 1000;
  auto parsed = api.ParseResponse(model, body);
  if (parsed.ok()) {
    compactor::OverflowInput in;
    in.stop_reason = parsed->stop_reason;
    in.error_message = parsed->error_message;
    in.input = static_cast<double>(parsed->usage.input);
    (void)compactor::ClassifyOverflow(in, model.context_window);
  }
  static constexpr int kStatuses[] = {400, 401, 413, 422, 429, 500, 502, 529};
  int status = kStatuses[(data[0] / apis.size()) % std::size(kStatuses)];
  compactor::ProviderError error = api.ReadError(status, body);
  // Only a JSON body is echoed as sent; anything else is one line.
  size_t first = body.find_first_not_of(" \t\r\n");
  bool json = first != body.npos && (body[first] == '{' || body[first] == '[');
  FUZZ_CHECK(json || error.message.find('\n') == std::string::npos);
  constexpr std::string_view kKey = "sk-fuzz-key-0123456789";
  std::string described = compactor::DescribeHttpFailure(status, body, kKey);
  FUZZ_CHECK(described.find(kKey) == std::string::npos);
  FUZZ_CHECK(described.size() <= 4000 + 64);
  (void)api.ReadClientRequest(std::string(body));
  (void)compactor::ParseResponsesCompactResponse(body, "openai");
  return 0;
}
