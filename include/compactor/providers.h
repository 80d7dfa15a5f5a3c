// LLM providers for summarization: model configuration, an HTTP transport seam
// (libcurl in production, in-memory fakes in tests), request building and
// response parsing through each model's API (provider_api.h has the APIs
// themselves), and the call policy around them
// (retries with backoff, candidate-model fallback, summarizer-overflow
// shrinking). docs/providers.md describes the configuration format, each API's
// request shape and the retry and overflow rules.
//
// Secrets: API keys are read from the environment variable a model names, at
// request time only; they are never stored in a ModelConfig, never written to
// files and removed from every error message this module produces.
//
// Thread safety: ModelConfig and the free functions are pure. A transport, an
// Env and a WindowMemory must be safe for concurrent use (the provided ones
// are); one call may run on several threads at once with the same objects.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_PROVIDERS_H_
#define COMPACTOR_INCLUDE_COMPACTOR_PROVIDERS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compactor/env.h"
#include "compactor/overflow.h"
#include "compactor/status.h"

namespace compactor {

// ---------------------------------------------------------------------------
// Model configuration (the "models" object of the settings file)
// ---------------------------------------------------------------------------

struct ModelConfig {
  // The key under "models"; what `--summarizer NAME` refers to.
  std::string name;
  // The API, by its registered name (provider_api.h; the settings key
  // "provider"): "openai-chat" (Chat Completions, also vLLM, llama.cpp,
  // Ollama, LM Studio), "openai-responses" (Responses API and
  // /responses/compact), "anthropic" (Messages API), "remote" (POST
  // {systemPrompt, prompt} -> {summary}).
  std::string api = "openai-chat";
  // API root. Defaults: the API's default_base_url(): https://api.openai.com/v1
  // (openai-*), https://api.anthropic.com (anthropic). For "remote" the full
  // endpoint URL (required).
  std::string base_url;
  // The model id sent in requests (required except for "remote").
  std::string model_id;
  // Context window in tokens; 0 = unknown (no local fitting, no usage rule).
  int64_t context_window = 0;
  // The model's output cap in tokens; summary max tokens are clamped to it. 0 = unknown.
  int64_t max_output_tokens = 0;
  // NAME of the environment variable holding the API key; empty = send no key.
  std::string api_key_env;
  // Whether the model accepts a reasoning/thinking option at all.
  bool reasoning = false;
  // Fixed reasoning level ("off", "minimal", "low", "medium", "high", "xhigh");
  // empty = follow the session's thinking level.
  std::string reasoning_effort;
  // Extra request headers (not secrets: values are written as given).
  std::map<std::string, std::string> headers;
  // openai-chat only: the output-cap field, "max_tokens" or
  // "max_completion_tokens"; empty = "max_completion_tokens" for
  // api.openai.com and "max_tokens" for compatible servers.
  std::string max_tokens_field;
  // Ask for a streamed (SSE) response (not for "remote"). The text is the
  // same; a stream cut short is detected and retried, and proxies that drop
  // idle connections see traffic while the summary is generated.
  bool stream = false;
  // Names of the models tried, in order, when this one fails (see
  // ResolveCandidates). Only the first level is followed.
  std::vector<std::string> fallbacks;
  // Per-request timeout (whole request), in milliseconds.
  int64_t timeout_ms = 300000;
  // Connection timeout, in milliseconds.
  int64_t connect_timeout_ms = 10000;
};

// Parses the "models" object of a settings document (the whole document; a
// missing "models" key gives an empty list). Models keep their file order.
// kInvalidArgument naming the model and key for a wrong type, an unknown
// provider, a missing model id or remote endpoint, or a key that looks like a
// literal secret in "apiKeyEnv". Unknown keys are ignored. The API defaults
// (base URL, whether a model id is required) come from the API's registry
// entry (provider_api.h).
Result<std::vector<ModelConfig>> ParseModelConfigs(std::string_view settings_json);

// The model named `name`, or kNotFound listing the configured names.
Result<ModelConfig> FindModel(std::span<const ModelConfig> models, std::string_view name);

// The candidate list for `--summarizer NAME`: the named model, then the models
// its "fallbacks" name, in order, without duplicates. kNotFound for an unknown
// NAME, kInvalidArgument for an unknown fallback name.
Result<std::vector<ModelConfig>> ResolveCandidates(std::span<const ModelConfig> models,
                                                   std::string_view name);

// ---------------------------------------------------------------------------
// HTTP transport
// ---------------------------------------------------------------------------

struct HttpRequest {
  std::string method = "POST";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int64_t timeout_ms = 300000;  // whole request; <= 0 = none
  int64_t connect_timeout_ms = 10000;
  // Cancellation: when either says so the transfer is aborted promptly
  // (within a few tens of milliseconds) with kCancelled. May be null/empty.
  const std::atomic<bool>* cancel_flag = nullptr;
  std::function<bool()> is_cancelled;
  // Streaming: when set, receives body bytes as they arrive (arbitrary chunk
  // boundaries) and the response body stays empty; returning false aborts.
  std::function<bool(std::string_view)> on_data;

  bool Cancelled() const {
    return (cancel_flag != nullptr && cancel_flag->load(std::memory_order_relaxed)) ||
           (is_cancelled && is_cancelled());
  }
};

struct HttpResponse {
  int status = 0;
  // Header names lower-cased; the last value wins.
  std::map<std::string, std::string> headers;
  std::string body;
};

// Sends one request. Errors: kCancelled, kUnavailable (connection failed,
// timed out, response cut short). An HTTP error status is not an error here.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual Result<HttpResponse> Send(const HttpRequest& request) = 0;
};

// libcurl (NOSIGNAL, connect and total timeouts, "Expect:" disabled, headers
// captured for Retry-After, cancellation polled every 20 ms). Thread-safe: one
// easy handle per call.
std::shared_ptr<HttpTransport> NewCurlTransport();

// ---------------------------------------------------------------------------
// Provider-neutral request and response
// ---------------------------------------------------------------------------

struct LlmPart {
  enum class Kind { kText, kImage };
  Kind kind = Kind::kText;
  std::string text;       // kText
  std::string mime_type;  // kImage
  std::string data;       // kImage: base64
};

struct LlmToolCall {
  std::string id, name;
  std::string arguments_json;  // a JSON object as text
};

struct LlmMessage {
  enum class Role { kUser, kAssistant, kToolResult };
  Role role = Role::kUser;
  std::vector<LlmPart> parts;
  std::vector<LlmToolCall> tool_calls;  // kAssistant
  std::string tool_call_id, tool_name;  // kToolResult
  bool is_error = false;                // kToolResult

  static LlmMessage UserText(std::string text);
};

// A tool the model may call (agent requests; summaries send none).
struct LlmTool {
  std::string name;
  std::string description;
  std::string parameters_json = R"({"type":"object","properties":{}})";  // JSON Schema
};

struct LlmRequest {
  std::string system_prompt;
  std::vector<LlmMessage> messages;
  // Output cap; clamped to the model's max_output_tokens. 0 = the model's cap,
  // or 4096 where the API requires a value (anthropic) and the cap is unknown.
  int64_t max_tokens = 0;
  // The session thinking level; used only when the model reasons (see
  // ModelConfig::reasoning_effort).
  std::string thinking_level;
  // Tools the model may call (agent requests; summaries send none).
  std::vector<LlmTool> tools;
  // APIs with native compaction (openai-responses): a JSON array of raw
  // Responses input items sent before `messages` (a replayed
  // /responses/compact history, see BuildModelInput in model_input.h).
  // Empty = none; other APIs ignore it.
  std::string responses_history_json;
};

struct LlmUsage {
  int64_t input = 0, output = 0, cache_read = 0, cache_write = 0;
};

struct LlmResponse {
  // Text blocks joined with "\n" (thinking discarded).
  std::string text;
  // pi's names: "stop", "length", "toolUse", "error".
  std::string stop_reason;
  // For an "error" stop inside a 2xx body (an "error" object, an unexpected
  // finish reason such as model_context_window_exceeded).
  std::string error_message;
  // Tool calls, in the order the model made them (arguments as JSON text).
  std::vector<LlmToolCall> tool_calls;
  // An "error" stop reported inside a stream that is worth retrying
  // (overloaded, server or rate-limit error events).
  bool transient = false;
  LlmUsage usage;
  int http_status = 0;
};

// The reasoning level a request to `model` carries: empty when the model does
// not reason or the level is unset or "off".
std::string EffectiveReasoning(const ModelConfig& model, std::string_view thinking_level);

// These go through the model's API (ProviderApi of ModelConfig::api); an
// unknown API is kInvalidArgument (EndpointUrl: the base URL as given).

// The endpoint URL of `model` (chat/completions, responses, v1/messages, or
// the remote URL).
std::string EndpointUrl(const ModelConfig& model);

// Builds the HTTP request (URL, headers with the key, JSON body). `api_key` may
// be empty (no auth header).
Result<HttpRequest> BuildProviderRequest(const ModelConfig& model, const LlmRequest& request,
                                         std::string_view api_key);

// Parses a 2xx response body. kUnavailable for malformed JSON or a body
// without the expected fields (providers and proxies send those transiently).
Result<LlmResponse> ParseProviderResponse(const ModelConfig& model, std::string_view body);

// Parses a complete streamed (SSE) 2xx body. kUnavailable when the stream
// ended before the API's completion marker (truncated) or held no events.
Result<LlmResponse> ParseProviderStream(const ModelConfig& model, std::string_view sse_body);

// The text a failed HTTP response is described with, pi style:
// "<status> <body>" or "<status> status code (no body)", always one line for a
// non-JSON body: an HTML page (a proxy's) becomes "<status> <its title> (HTML
// error page)", other text has its line breaks made spaces. JSON and text are
// cut at 4,000 bytes ("..." marks the cut). `secret` (the API key, may be
// empty) is redacted from the whole body before any cut, and a cut that ends
// inside it leaves no part of it (RedactSecret).
std::string DescribeHttpFailure(int status, std::string_view body, std::string_view secret = {});

// Replaces every occurrence of `secret` (when at least 4 bytes) with
// "[redacted]", and a trailing beginning of it (at least 4 bytes, before an
// optional "..." cut mark): the trace of a text cut inside the key.
std::string RedactSecret(std::string text, std::string_view secret);

// ---------------------------------------------------------------------------
// OpenAI native compaction (/responses/compact, as oh-my-pi 15.7.2 uses it;
// docs/model-input.md)
// ---------------------------------------------------------------------------

// Messages as Responses API input items (a JSON array): what the Responses
// request body sends, also the input of /responses/compact.
std::string ResponsesInputItems(std::span<const LlmMessage> messages);

// base (trailing '/' removed) + "/responses/compact" if it ends in "/v1", else
// + "/v1/responses/compact".
std::string ResponsesCompactUrl(std::string_view base_url);

// What is stored in preserveData.openaiRemoteCompaction (JSON text fields).
struct RemoteCompaction {
  std::string provider;                  // "openai"
  std::string replacement_history_json;  // JSON array of Responses items
  std::string compaction_item_json;      // JSON object
};

// Builds the /responses/compact request: {"model", "input", "instructions"}.
// `input_items_json` is a JSON array of Responses input items. Items are
// trimmed from the end (a *_call_output together with its call, developer
// messages) while ceil((len(instructions) + sum len(JSON(item))) / 4) exceeds
// the model's context window.
Result<HttpRequest> BuildResponsesCompactRequest(const ModelConfig& model,
                                                 std::string_view input_items_json,
                                                 std::string_view instructions,
                                                 std::string_view api_key);

// Filters a /responses/compact response into the stored form (oh-my-pi's
// preserveData.openaiRemoteCompaction).
// kUnavailable for malformed JSON; kFailedPrecondition
// "Remote compaction response missing compaction item".
Result<RemoteCompaction> ParseResponsesCompactResponse(std::string_view body,
                                                       std::string_view provider = "openai");

// The input items for a rebuilt context when the latest compaction stored
// `stored` (preserveData.openaiRemoteCompaction as JSON text): its replacement
// history when the provider matches `provider`, otherwise nullopt (the caller
// then sends the text summary and the kept messages).
std::optional<std::string> ReplacementHistoryFor(std::string_view stored_json,
                                                 std::string_view provider);

// ---------------------------------------------------------------------------
// Call policy: retries, fallback, overflow shrinking
// ---------------------------------------------------------------------------

// Learned context windows (per model name), only ever lowered. Thread-safe.
class WindowMemory {
 public:
  // Records that a request of `failed_tokens` overflowed: the window becomes
  // min(current, floor(0.85 x failed_tokens)).
  void RecordOverflow(const std::string& model, int64_t failed_tokens);
  std::optional<int64_t> Get(const std::string& model) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> windows_;
};

struct RetryPolicy {
  // Retries after the first attempt.
  int max_retries = 3;
  // Wait before retry n (0-based): base_delay x 2^n, unless Retry-After says otherwise.
  std::chrono::milliseconds base_delay{2000};
  // A wait longer than this moves on to the next candidate model instead.
  std::chrono::milliseconds max_wait{30000};
};

struct CallOptions {
  std::shared_ptr<HttpTransport> transport;  // null = NewCurlTransport()
  RetryPolicy retry;
  // The clock (Retry-After dates), the waits between retries (in slices of at
  // most 10 ms, so cancellation stays prompt) and the API key's environment
  // variable. null = Env::Default().
  Env* env = nullptr;
  const std::atomic<bool>* cancel_flag = nullptr;
  std::function<bool()> is_cancelled;
  // Learned windows shared across calls; null = none kept.
  std::shared_ptr<WindowMemory> windows;
  // Observes every attempt (tests, diagnostics): model name, attempt number
  // (0-based) and the outcome. Never receives the key.
  std::function<void(const std::string& model, int attempt, const Status& outcome)> on_attempt;

  bool Cancelled() const;
};

// Why a call failed, beyond its Status.
struct CallFailure {
  int http_status = 0;
  OverflowVerdict overflow;    // overflow / payload rejection
  bool auth = false;           // 401/403, or the key's variable is unset
  bool retryable = false;      // the last attempt failed transiently
  bool wait_too_long = false;  // the next wait would have exceeded max_wait
  std::optional<std::chrono::milliseconds> retry_after;
};

struct CallOutcome {
  Result<LlmResponse> result = Status::Internal("not called");
  CallFailure failure;
  int attempts = 0;
};

// The model's API key from the variable `model.api_key_env` names (through
// options.env): empty when the model needs none,
// kFailedPrecondition naming the variable when it is unset or empty.
Result<std::string> ReadApiKey(const ModelConfig& model, const CallOptions& options);

// One model, with retries: 408/409/425/429/5xx/529, transport errors and
// malformed bodies are retried (up to policy.max_retries, waits base x 2^n or
// Retry-After); 401/403, overflow, payload rejections and other 4xx are not.
// A 2xx response whose usage proves an overflow is an overflow failure.
CallOutcome CallModel(const ModelConfig& model, const LlmRequest& request,
                      const CallOptions& options);

// What a summarizer call sends.
struct SummaryRequestText {
  std::string system_prompt;
  std::string user_prompt;
  int64_t max_tokens = 0;
  std::string thinking_level;
};

// Rebuilds the summarizer input at `fraction` (0 < fraction < 1) of its
// original estimated size, or returns an error when it cannot shrink further.
using ShrinkFunction = std::function<Result<SummaryRequestText>(double fraction)>;

// The default shrinker: keeps the newest part of the <conversation> body (or
// the middle-cut text when there are no tags) within the fraction.
ShrinkFunction DefaultShrinker(const SummaryRequestText& original);

// Shrink schedule after a summarizer overflow (at most 3 tries).
inline constexpr double kShrinkFractions[] = {0.7, 0.5, 0.35};

// Rebuilds a request at `fraction` (0 < fraction < 1) of the original's
// estimated size, or fails when it cannot shrink further.
using RequestShrinker = std::function<Result<LlmRequest>(double fraction)>;
// Decides whether a successful response is usable (OK) or not (the error).
using ResponseAcceptor = std::function<Status(const ModelConfig&, const LlmResponse&)>;

// Estimated tokens of a request: ceil(UTF-16 units / 4) per text, 1200 per image.
int64_t EstimateRequestTokens(const LlmRequest& request);

// The general form of CompleteSummary below, for any request: per candidate,
// CallModel; overflow/payload -> learned window, shrink (0.7, 0.5, 0.35 of the
// original, images to markers); fall back to the next candidate on every
// other failure except cancellation. `shrink` null = no shrinking; `accept`
// null = every successful response is usable.
Result<LlmResponse> CompleteWithRecovery(std::span<const ModelConfig> candidates,
                                         const LlmRequest& request, const CallOptions& options,
                                         const RequestShrinker& shrink = nullptr,
                                         const ResponseAcceptor& accept = nullptr);

// Produces a summary with the first candidate that works:
//  - per candidate: CallModel with retries; on an overflow or payload
//    rejection the input is rebuilt at 0.7, 0.5, then 0.35 of its size
//    (images become markers), and the learned window (0.85 x the failing
//    request's estimate) is recorded; a learned window smaller than the
//    request shrinks it before sending;
//  - the next candidate is tried after any failure but cancellation: 401/403,
//    a missing key, a wait beyond policy.max_wait, exhausted retries, an
//    unusable summary (empty, or cut by the output cap), an overflow that
//    survived three shrinks, other errors;
//  - errors: kCancelled, kInvalidArgument (no candidates), otherwise the last
//    candidate's error (kUnavailable, or kFailedPrecondition for a missing
//    key), key redacted.
// `shrink` null = DefaultShrinker(text).
Result<std::string> CompleteSummary(std::span<const ModelConfig> candidates,
                                    const SummaryRequestText& text, const CallOptions& options,
                                    const ShrinkFunction& shrink = nullptr);

// Replaces image parts with "[image]" text markers; returns how many were replaced.
int StripImagesToMarkers(LlmRequest& request);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_PROVIDERS_H_
