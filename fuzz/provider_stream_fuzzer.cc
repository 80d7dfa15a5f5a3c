// The streamed-response parsers of every API: SSE bytes decoded whole
// (ParseProviderStream) and event by event through the API's stream parser,
// in chunks. The first byte picks the API and the chunk size.
#include <string>

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
  model.stream = true;
  (void)compactor::ParseProviderStream(model, body);
  auto parser = api.NewStreamParser(model);
  if (parser == nullptr) return 0;
  compactor::SseParser sse;
  auto on_event = [&parser](std::string_view event, std::string_view event_data) {
    (void)parser->OnEvent(event, event_data);
  };
  compactor::fuzz::ForEachChunk(body, data[0] / 4,
                                [&](std::string_view chunk) { sse.Feed(chunk, on_event); });
  sse.Flush(on_event);
  (void)parser->Finish();
  return 0;
}
