// Server-sent-event decoding for streamed provider responses. libcurl hands
// the body over in arbitrary chunks, so both layers buffer across Feed calls.
#ifndef COMPACTOR_SRC_PROVIDERS_STREAM_H_
#define COMPACTOR_SRC_PROVIDERS_STREAM_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "compactor/providers.h"

namespace compactor::providers {

// Splits an SSE byte stream into events (event name, joined data lines).
class SseParser {
 public:
  using Handler = std::function<void(std::string_view event, std::string_view data)>;
  void Feed(std::string_view chunk, const Handler& on_event);
  // Dispatches a final event not followed by a blank line.
  void Flush(const Handler& on_event);

 private:
  void Line(std::string_view line, const Handler& on_event);
  std::string buffer_;
  std::string event_;
  std::string data_;
  bool has_data_ = false;
};

// Accumulates one streamed response of `model`'s API into an LlmResponse.
class StreamDecoder {
 public:
  explicit StreamDecoder(const ModelConfig& model) : model_(model) {}
  void Feed(std::string_view chunk);
  // The response, or kUnavailable when the stream ended before the API's
  // completion marker (a truncated stream) or held no events at all.
  Result<LlmResponse> Finish();
  // Whether any SSE event was seen (a JSON body answers non-streamed).
  bool saw_events() const { return events_ > 0; }

 private:
  void OnEvent(std::string_view event, std::string_view data);
  const ModelConfig& model_;
  SseParser parser_;
  int events_ = 0;
  bool done_ = false;
  bool finish_seen_ = false;
  LlmResponse response_;
  std::map<int, std::string> blocks_;  // anthropic text blocks by index
  // Tool calls assembled from fragments, by index: chat tool_calls deltas,
  // anthropic tool_use blocks (input_json_delta pieces in arguments_json).
  std::map<int, LlmToolCall> calls_;
  std::string deltas_;               // openai text deltas
  std::optional<LlmResponse> full_;  // responses: the final response object
};

}  // namespace compactor::providers

#endif  // COMPACTOR_SRC_PROVIDERS_STREAM_H_
