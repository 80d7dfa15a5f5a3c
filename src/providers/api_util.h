// Helpers shared by the provider API files (anthropic_messages.cc,
// openai_chat.cc, openai_responses.cc, remote.cc): request pieces, response
// fields, the stream parser skeleton and error reading. Nothing here knows
// about a particular API.
#ifndef COMPACTOR_SRC_PROVIDERS_API_UTIL_H_
#define COMPACTOR_SRC_PROVIDERS_API_UTIL_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/provider_api.h"
#include "compactor/providers.h"
#include "providers/json_util.h"

namespace compactor::providers {

using Json = nlohmann::ordered_json;

// The built-in APIs (one file each); registry.cc lists them.
const ProviderApi& OpenAiChatApi();
const ProviderApi& OpenAiResponsesApi();
const ProviderApi& AnthropicMessagesApi();
const ProviderApi& RemoteApi();

// --- requests ----------------------------------------------------------------

// The output cap: the request's, else the model's, clamped to the model's;
// 4096 when `required` and still unknown.
int64_t ResolveMaxTokens(const ModelConfig& model, const LlmRequest& req, bool required);
// "data:<mime>;base64,<data>"
std::string DataUrl(const LlmPart& part);
bool AllText(const std::vector<LlmPart>& parts);
// Parts joined with "\n", images as "[image]".
std::string JoinedText(const std::vector<LlmPart>& parts);
// A tool call's arguments as an object ({} when not a JSON object).
Json ParseArguments(const std::string& text);
// A tool's JSON Schema (an empty object schema when unreadable).
Json ToolSchema(const LlmTool& tool);
// URL, timeouts, content-type and the model's own headers.
HttpRequest NewHttpRequest(const ModelConfig& model, std::string url);
// "authorization: Bearer <key>" unless the key is empty.
void AddBearer(HttpRequest& http, std::string_view api_key);

// --- responses ---------------------------------------------------------------

// obj[key] as an integer; 0 when obj is not an object, the key is absent,
// the value is not a number or lies outside int64_t. Fractions truncate.
int64_t IntAt(const Json& obj, const char* key);
std::string StringAt(const Json& obj, const char* key);
// obj[key] when it is an object, else an empty object (never throws: a
// field of the wrong type in a model's answer reads as absent).
const Json& ObjectAt(const Json& obj, const char* key);
// An "error" value's text: a string, else its "message", else its JSON.
std::string ErrorText(const Json& error);
// Whether an error object names a passing condition worth a retry in its
// "type" or "code": overloaded_error, api_error, rate_limit_error, server_error,
// timeout_error.
bool IsTransientError(const Json& error);
// The "arguments" of an OpenAI function call: a JSON string as sent, or an
// object some compatible servers send instead.
std::string ArgumentsText(const Json& holder);
// kUnavailable "<api>: malformed response (<what>)".
Status Malformed(const ModelConfig& model, std::string_view what);
// `body` as a JSON object, or Malformed.
Result<Json> ParseObjectBody(const ModelConfig& model, std::string_view body);

// --- streams -----------------------------------------------------------------

// The common part of every API's stream decoding: event counting, "[DONE]",
// error events (an object of type "error", or with a non-null "error" and no
// type) and the end-of-stream checks. An API supplies the rest.
class StreamParserBase : public ProviderStreamParser {
 public:
  explicit StreamParserBase(std::string api) : api_(std::move(api)) {}
  StreamEventInfo OnEvent(std::string_view event, std::string_view data) final;
  Result<LlmResponse> Finish() final;

 protected:
  // One JSON event that is not an error.
  virtual void OnJson(const Json& event, const std::string& type, StreamEventInfo& info) = 0;
  // Whether the stream is complete without its marker (Chat: a finish reason).
  virtual bool CompleteWithoutMarker() const { return false; }
  // The response from what was gathered (called once, when complete).
  virtual LlmResponse Assemble() = 0;
  // Records the first output of the answer.
  void ContentStarted(StreamEventInfo& info);

  LlmResponse response_;
  bool done_ = false;

 private:
  std::string api_;
  int events_ = 0;
  bool content_started_ = false;
};

// An error's overflow verdict as pi's classifier sees an error stop.
OverflowVerdict ClassifyErrorText(std::string_view text, int http_status = 0);

// --- errors ------------------------------------------------------------------

// The HTTP failure `status` + `body` with the error type and message the body
// names (read by the API), classified: overflow first, then auth, then the
// retryable statuses.
ProviderError HttpError(int status, std::string_view body, std::string type, std::string detail);
// The type/code and message of the usual error bodies: {"error": {"type" |
// "code", "message"}}, {"type": "error", "error": {...}}, {"error": "text"}.
void ReadErrorFields(std::string_view body, std::string* type, std::string* detail);

}  // namespace compactor::providers

#endif  // COMPACTOR_SRC_PROVIDERS_API_UTIL_H_
