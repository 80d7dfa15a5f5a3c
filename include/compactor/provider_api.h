// Provider APIs as plugins. A ProviderApi is everything Compactor knows about
// one wire protocol: its defaults, building a request from the
// provider-neutral LlmRequest, parsing its answers (whole or streamed, event
// by event), recognising its errors, and reading and rewriting the requests a
// client sends in it (for a proxy). Each built-in API is one file in
// src/providers/ and one line of the registry table (src/providers/registry.cc);
// docs/providers.md ("Adding a provider API") says how to add one.
//
// A ModelConfig names its API by the registered name (ModelConfig::api,
// the settings key "provider"): "openai-chat", "openai-responses",
// "anthropic", "remote".
//
// Thread safety: ProviderApi objects are immutable singletons, safe to use
// from any thread. A ProviderStreamParser and an SseParser belong to one
// response and one thread.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_PROVIDER_API_H_
#define COMPACTOR_INCLUDE_COMPACTOR_PROVIDER_API_H_

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/client_request.h"
#include "compactor/overflow.h"
#include "compactor/providers.h"
#include "compactor/status.h"

namespace compactor {

// Splits a server-sent-event byte stream into events (event name, data lines
// joined with "\n"). Bytes may arrive in any chunks; lines end in "\n" or
// "\r\n"; comments (":" lines) are skipped.
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

// What one stream event was, for a caller relaying the stream event by event.
struct StreamEventInfo {
  // The event began the answer's first output (text, reasoning or a tool call).
  bool content_started = false;
  // The event reported usage; `usage` is the usage known so far.
  bool usage_reported = false;
  LlmUsage usage;
  // The stop reason (pi's names) when the event carried it.
  std::string stop_reason;
  // An error event (or a failed response): its text, whether a retry may
  // help, and the overflow rules' verdict on it.
  bool error = false;
  std::string error_message;
  bool transient = false;
  OverflowVerdict overflow;
  // The API's completion marker.
  bool complete = false;
};

// The incremental decoder of one streamed response.
class ProviderStreamParser {
 public:
  virtual ~ProviderStreamParser() = default;
  // One event: its SSE name (may be empty) and data. Events after the
  // completion marker or an error are counted and otherwise ignored.
  virtual StreamEventInfo OnEvent(std::string_view event, std::string_view data) = 0;
  // The whole response once the stream has ended: kUnavailable when it ended
  // before the API's completion marker (truncated) or held no events.
  virtual Result<LlmResponse> Finish() = 0;
};

// A failed HTTP response as its API reports it.
struct ProviderError {
  // pi's text: "<status> <body>" or "<status> status code (no body)".
  std::string message;
  // The API's error type or code ("invalid_request_error",
  // "context_length_exceeded"); empty when the body names none.
  std::string type;
  // The error's own message from the body; empty when there is none.
  std::string detail;
  // The overflow rules' verdict on `message` and the status.
  OverflowVerdict overflow;
  // When not an overflow or payload rejection: 401/403 (auth), or a status
  // worth retrying (408, 409, 425, 429, 5xx).
  bool auth = false;
  bool retryable = false;
};

class ProviderApi {
 public:
  virtual ~ProviderApi() = default;

  // --- identity and configuration ------------------------------------------

  // The registered name, as the settings write it ("anthropic").
  virtual std::string_view name() const = 0;
  // pi's "api" name for messages produced through it ("anthropic-messages").
  virtual std::string_view pi_api() const = 0;
  // pi's "provider" recorded when the caller names none ("anthropic",
  // "openai"); empty when there is no natural one.
  virtual std::string_view default_provider() const = 0;
  // The API root used when a model sets no baseUrl; empty = baseUrl required.
  virtual std::string_view default_base_url() const = 0;
  // Whether baseUrl is the complete endpoint (kept as given; the model id is
  // then optional) rather than an API root.
  virtual bool base_url_is_endpoint() const = 0;
  // Whether the API can stream its answer (ModelConfig::stream applies).
  virtual bool streams() const = 0;
  // Whether it carries agent requests: tools and multi-turn conversations.
  virtual bool agent_requests() const = 0;
  // Whether it has native compaction (OpenAI /responses/compact) and accepts
  // a replayed compaction history (LlmRequest::responses_history_json).
  virtual bool native_compaction() const = 0;

  // --- calling a model ------------------------------------------------------

  // The URL requests of `model` go to.
  virtual std::string EndpointUrl(const ModelConfig& model) const = 0;
  // URL, headers (content-type, the model's headers, the key when not empty)
  // and the JSON body.
  virtual Result<HttpRequest> BuildRequest(const ModelConfig& model, const LlmRequest& request,
                                           std::string_view api_key) const = 0;
  // A 2xx JSON body. kUnavailable for malformed JSON or missing fields.
  virtual Result<LlmResponse> ParseResponse(const ModelConfig& model,
                                            std::string_view body) const = 0;
  // A decoder for one streamed 2xx response of `model`.
  virtual std::unique_ptr<ProviderStreamParser> NewStreamParser(const ModelConfig& model) const = 0;
  // A non-2xx response (status and body).
  virtual ProviderError ReadError(int http_status, std::string_view body) const = 0;

  // --- client requests (client_request.h) ----------------------------------

  // The view of a client's request body. Errors as ReadClientRequest.
  virtual Result<ClientRequest> ReadClientRequest(std::string body) const = 0;
  // Item `index` of `request` as pi message objects (JSON text each): what a
  // summarizer can read of it. Empty for items with no pi equivalent
  // (system items, compaction items, hosted tool calls).
  virtual std::vector<std::string> ClientItemMessages(const ClientRequest& request,
                                                      size_t index) const = 0;
  // The rewritten body; see RewriteClientRequest in client_request.h.
  virtual Result<std::string> RewriteClientRequest(const ClientRequest& request,
                                                   const ClientRewrite& rewrite) const = 0;
};

// The API registered as `name`, or null.
const ProviderApi* FindProviderApi(std::string_view name);

// Every registered API, in registry order (openai-chat, openai-responses,
// anthropic, remote).
std::span<const ProviderApi* const> ProviderApis();

// The API `model` names; kInvalidArgument for an unknown name.
Result<const ProviderApi*> ApiOf(const ModelConfig& model);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_PROVIDER_API_H_
