// From a rebuilt session context to the request an agent sends to its model,
// and from the model's response back to pi's message objects: the glue an
// agent loop needs around the runtime (docs/model-input.md).
//
// The conversion follows pi: convertToLlm (bash executions, custom messages
// and summaries become user messages) and pi-ai's per-request repair
// (errored/aborted assistant messages dropped, a tool call without a result
// gets a synthetic error result, a result without its call is dropped), so
// the request is always one the APIs accept, even after chained compactions.
//
// OpenAI native compaction: when the latest compaction on the path stored a
// /responses/compact history (preserveData.openaiRemoteCompaction) for the
// provider the request goes to, that history is sent in place of the text
// summary, to that provider only; every other model gets the text summary.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_MODEL_INPUT_H_
#define COMPACTOR_INCLUDE_COMPACTOR_MODEL_INPUT_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/compaction.h"
#include "compactor/context.h"
#include "compactor/providers.h"
#include "compactor/session.h"
#include "compactor/status.h"

namespace compactor {

// The text of the synthetic result for a tool call that never got one.
inline constexpr std::string_view kMissingToolResultText = "No result provided";

// Converts context messages (pi's JSON objects) into provider-neutral request
// messages, with the repairs above. Thinking is not sent; images are.
std::vector<LlmMessage> ToLlmMessages(std::span<const ContextMessage> messages);

struct ModelInputOptions {
  std::string system_prompt;
  std::vector<LlmTool> tools;
  int64_t max_tokens = 0;  // 0 = the model's cap
  std::string thinking_level;
  // The provider name a stored remote history must carry to be replayed.
  std::string remote_provider = "openai";
};

struct ModelInput {
  LlmRequest request;
  // The stored /responses/compact history replaced the text summary.
  bool replayed_remote_history = false;
};

// The request for `model` from `context` (rebuilt from `session`).
Result<ModelInput> BuildModelInput(const Session& session, const SessionContext& context,
                                   const ModelConfig& model, const ModelInputOptions& options = {});

// pi's "api" name for the API of `model` (ProviderApi::pi_api):
// "openai-completions", "openai-responses", "anthropic-messages", "remote";
// an unknown API's name as given.
std::string_view PiApiName(const ModelConfig& model);

// pi's assistant message object for a response: role, content (text, then
// toolCall blocks), api, provider, model, usage (cost zero: Compactor does
// not price), stopReason, errorMessage when set, timestamp.
std::string AssistantMessageJson(const ModelConfig& model, std::string_view provider,
                                 const LlmResponse& response, double timestamp_ms);
// pi's user message with one text block.
std::string UserMessageJson(std::string_view text, double timestamp_ms);
// pi's toolResult message with one text block.
std::string ToolResultMessageJson(std::string_view tool_call_id, std::string_view tool_name,
                                  std::string_view text, bool is_error, double timestamp_ms);

// A compacting hook (CompactionHooks::OnCompacting) that also asks a
// Responses model for its native compaction of what is being summarized and
// stores the result as preserveData.openaiRemoteCompaction. The text summary
// is produced as usual; a failed remote call only reports through `on_error`
// (the compaction goes on without it). A previous compaction's stored history
// for the same provider is sent in place of its text summary.
struct RemoteCompactionOptions {
  ModelConfig model;  // an API with native compaction (openai-responses)
  CallOptions call;   // transport, env (clock, API key), cancellation (retries: see CallModel)
  std::string provider = "openai";
  std::string instructions;  // empty = the summarization system prompt
  std::function<void(const Status&)> on_error;
};
CompactionHooks::Compacting RemoteCompactionHook(RemoteCompactionOptions options);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_MODEL_INPUT_H_
