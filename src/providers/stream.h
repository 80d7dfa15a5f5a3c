// A whole streamed response decoded as its bytes arrive: the SSE layer
// (SseParser) feeding the model's API stream parser (ProviderStreamParser).
// libcurl hands the body over in arbitrary chunks, so both layers buffer
// across Feed calls.
#ifndef COMPACTOR_SRC_PROVIDERS_STREAM_H_
#define COMPACTOR_SRC_PROVIDERS_STREAM_H_

#include <memory>
#include <string_view>

#include "compactor/provider_api.h"
#include "compactor/providers.h"

namespace compactor::providers {

// Accumulates one streamed response of `model`'s API into an LlmResponse.
class StreamDecoder {
 public:
  explicit StreamDecoder(const ModelConfig& model);
  void Feed(std::string_view chunk);
  // The response, or kUnavailable when the stream ended before the API's
  // completion marker (a truncated stream) or held no events at all;
  // kInvalidArgument for an unknown API.
  Result<LlmResponse> Finish();
  // Whether any SSE event was seen (a JSON body answers non-streamed).
  bool saw_events() const { return events_ > 0; }

 private:
  void OnEvent(std::string_view event, std::string_view data);
  Status unknown_api_;
  std::unique_ptr<ProviderStreamParser> parser_;
  SseParser sse_;
  int events_ = 0;
};

}  // namespace compactor::providers

#endif  // COMPACTOR_SRC_PROVIDERS_STREAM_H_
