// The compaction strategies the proxy applies to a client's request
// (docs/serve.md, "Strategies in the proxy"), as far as each can be
// expressed in a request the client's API accepts:
//
// - summary: the older items replaced by one summary message (compact_plan.h);
// - user-prompts: the same cut, but the user's own prompts before it kept
//   verbatim (the oldest and the newest within a budget) ahead of the summary;
// - notes: the same cut, the summary being the content of a notes file
//   (NewNotesSummarizer), no model call;
// - mask: nothing cut; the contents of old tool results replaced in place by
//   a short placeholder (PlanMaskRequest), every call and result kept paired.
//
// handoff starts a new session, which a request cannot become: refused at
// start (ProxyStrategyOf).
//
// Thread safety: the functions are pure; a notes summarizer is immutable.
#ifndef COMPACTOR_SRC_SERVE_PROXY_STRATEGY_H_
#define COMPACTOR_SRC_SERVE_PROXY_STRATEGY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/client_request.h"
#include "compactor/env.h"
#include "compactor/provider_api.h"
#include "compactor/status.h"
#include "compactor/summarizer.h"

namespace compactor::serve {

enum class ProxyStrategy { kSummary, kUserPrompts, kNotes, kMask };

// The proxy's form of the registered strategy `name`. kInvalidArgument (a
// one-line reason, to be prefixed with the flag) for a strategy the proxy
// cannot apply, and for notes without a notes file (`has_notes_file`).
Result<ProxyStrategy> ProxyStrategyOf(std::string_view name, bool has_notes_file);

// user-prompts: the user prompts (kUser items) before `cut` kept verbatim,
// whole: the oldest ones within a tenth of `budget` tokens, then the newest
// ones within the rest. Ascending indices. The same prefix always gives the
// same selection (the upstream's prompt cache keeps hitting).
std::vector<size_t> KeptPrompts(const ClientRequest& request, size_t cut, int64_t budget);

// The summary text a recorded session holds for a user-prompts compaction:
// the kept prompts inside <user-messages> tags, then the summary (the form
// of the library's user-prompts entries, docs/strategies.md), so that the
// recorded context carries what was sent.
std::string RecordedUserPromptsSummary(const ProviderApi& api, const ClientRequest& request,
                                       const std::vector<size_t>& kept, std::string_view summary);

// notes: a summarizer whose summary is the content of `path` (trimmed),
// read through `env` (not owned) on every call, so the agent's latest notes
// are used. kFailedPrecondition when the file is empty.
std::unique_ptr<Summarizer> NewNotesSummarizer(Env* env, std::string path);

struct MaskInput {
  int64_t threshold = 0;
  // Tool results within the newest `keep_recent_tokens` of items stay.
  int64_t keep_recent_tokens = 0;
  // Mask even under the threshold (overflow recovery), as long as the
  // request gets smaller.
  bool force = false;
  // Results smaller than this stay: a placeholder would save nothing.
  int64_t min_output_tokens = 100;
};

struct MaskedRequest {
  std::string body;   // the rewritten request body
  size_t masked = 0;  // tool results masked
  int64_t tokens_before = 0;
  int64_t tokens_after = 0;
};

// Masks the tool results of `request` older than the kept part: each such
// result's content (Anthropic tool_result blocks, Responses
// function_call_output / custom_tool_call_output, Chat tool messages)
// becomes "[Masked output of NAME: N tokens. Run the call again if you need
// it.]"; ids, order, errors flags, cache_control markers and every other
// byte stay. The newest tool result and results of the "skill" tool are
// never masked. nullopt (with `why`) when nothing is masked or the result
// would not be under the threshold (the no-loop guard).
std::optional<MaskedRequest> PlanMaskRequest(const ProviderApi& api, const ClientRequest& request,
                                             const MaskInput& input, std::string* why);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_PROXY_STRATEGY_H_
