// Deciding a proxy compaction (docs/serve.md, "Compaction in the proxy"):
// which conversation a request belongs to, pi's estimate of its input, where
// to cut, and the rewritten body once the summary is known. Pure functions:
// the summary itself is written elsewhere (summary_jobs.h runs it, once per
// conversation at a time), so that deciding never waits on a model.
//
// Thread safety: every function is pure.
#ifndef COMPACTOR_SRC_SERVE_COMPACT_PLAN_H_
#define COMPACTOR_SRC_SERVE_COMPACT_PLAN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/client_request.h"
#include "compactor/message.h"
#include "compactor/provider_api.h"
#include "compactor/status.h"
#include "compactor/summarizer.h"
#include "serve/hooks.h"
#include "serve/http_util.h"

namespace compactor::serve {

// The context window assumed for `model` when nothing configures it: a small
// table of model families (Claude 200k, GPT-4.1 1M, GPT-5 400k, GPT-4o 128k,
// o3/o4 200k, Gemini 1M); 0 for any other model (unknown: no proactive
// compaction, overflow recovery only).
int64_t BuiltinContextWindow(std::string_view model);
// The smallest window of that table.
int64_t SmallestBuiltinContextWindow();

// The conversation's identity, "API:" + the client's own id where it sends
// one ("key:" + the body's prompt_cache_key (Codex), else "session:" + the
// header x-claude-code-session-id, session-id or session_id), otherwise
// "hash:" + a hash of its leading content (the system part and the first
// message as pi reads it, so moving cache_control markers do not change
// it). The same for every request of a conversation and across restarts:
// it is the key of the store's conversation index.
std::string ConversationId(const ProviderApi& api, const ClientRequest& request,
                           const HeaderList& headers);

// ConversationId for a request whose client names its conversation, from
// the body's top-level members and the headers alone (no parse): the APIs
// that read a prompt_cache_key take it from the top-level member of that
// exact key. nullopt when only reading the request can tell: no id sent, or
// a top-level key escaped, a prompt_cache_key repeated or other than a plain
// string, a body that is no object. Equal to ConversationId of the request
// `api` reads from `body` whenever it reads one.
std::optional<std::string> NamedConversationId(const ProviderApi& api, std::string_view body,
                                               const HeaderList& headers);

// Whether a request is auxiliary (titles, quota checks): no tools.
bool IsAuxiliaryRequest(const ClientRequest& request);

// Whether the JSON object `body` has a top-level "tools" member, by a scan
// of its top-level members (no parse): for a body its API reads, the
// opposite of IsAuxiliaryRequest, as every API takes the member of that
// exact (unescaped) key.
bool DeclaresTools(std::string_view body);

// Both of the above from one scan of the body's top-level members: what an
// exchange asks of every request before reading it (Exchange::declares_tools,
// Exchange::named_conversation). `api` null: no conversation is named.
struct RequestOutline {
  bool declares_tools = false;
  std::optional<std::string> named_conversation;
};
RequestOutline OutlineRequest(const ProviderApi* api, std::string_view body,
                              const HeaderList& headers);

// An upper bound of EstimateRequestTokens for the request any API reads from
// `body` (decoded), from its bytes alone, without parsing it; nullopt when
// the bytes may hold what the bound does not cover: a \u escape (it can spell
// any name) or the word "compaction" (a compaction item or trigger, which
// the proxy expands or answers before forwarding). Why it bounds pi's
// estimate, ceil(characters / 4) per message plus the system part and the
// tools (compact_plan.cc has the detail): every counted character is one of
// a JSON string of the body, decoded, except tool-call arguments, which are
// counted as JSON.stringify writes them (a number may grow: 1e20 is written
// with 21 characters), so at most 6 characters per byte; an image counts 4800
// characters whatever its size, and every image block's type contains
// "image"; each message's rounding adds less than one token and every message
// comes from an object of the body ("{"). Used to forward a request that
// cannot be compacted before reading it (docs/serve.md, "The request path").
std::optional<int64_t> RequestTokensBound(std::string_view body);

// The client's request as `api` reads `body` (decoded), with its
// conversation id and whether it is auxiliary: what Exchange::client_request
// shares with every hook. nullptr when the body does not read.
std::shared_ptr<const ClientRequestView> ReadClientRequestView(const ProviderApi& api,
                                                               std::string body,
                                                               const HeaderList& headers);

// Pi's estimate of the request's input: system + tools + items.
int64_t EstimateRequestTokens(const ClientRequest& request);

// What the proxy remembers of a compacted conversation: the items its
// summary replaced (raw JSON, compared ignoring cache_control) and the
// summary text (identical bytes are reused while the prefix matches).
struct ConversationSummary {
  std::vector<std::string> prefix;
  std::string summary;
};

// How many leading items of `request` equal `prior` (ignoring
// cache_control); 0 when the request is not longer than the prefix.
size_t MatchedPrefix(const ClientRequest& request, const ConversationSummary& prior);

// The text of the message that carries `summary` in a rewritten request:
// a lead-in, then the summary inside <summary> tags.
std::string SummaryMessageText(std::string_view summary);
// Estimated tokens of that message.
int64_t SummaryMessageTokens(std::string_view summary);

// Items [begin, end) of `request` as pi messages, for a summarizer.
std::vector<Message> ItemMessages(const ProviderApi& api, const ClientRequest& request,
                                  size_t begin, size_t end);

struct PlanInput {
  int64_t threshold = 0;
  int64_t keep_recent_tokens = 0;
  // Compact even under the threshold (overflow recovery, or preparing a
  // summary ahead), as long as the result is smaller than the request.
  bool force = false;
  const ConversationSummary* prior = nullptr;  // may be null
  // user-prompts (proxy_strategy.h): the user's prompts before the cut kept
  // verbatim ahead of the summary, within this many tokens; < 0: none kept.
  int64_t kept_prompts_budget = -1;
};

// Where to cut and what the summary must cover, before any summary is
// written.
struct CutDecision {
  size_t cut = 0;
  int64_t tokens_before = 0;
  // The prior summary covers exactly [0, cut) and the rest fits: reuse it.
  bool reuse = false;
  // Otherwise: summarize items [from, cut), folded into `previous` (the
  // prior summary when from > 0, else empty).
  size_t from = 0;
  std::string previous;
  std::vector<Message> messages;
};

// The cut for `request`, or nullopt when none applies (`why` says why: under
// the threshold, no valid cut, nothing to summarize, or the kept part alone
// stays over the threshold: the no-loop guard, checked before any summary
// is written).
std::optional<CutDecision> DecideCut(const ProviderApi& api, const ClientRequest& request,
                                     const PlanInput& input, std::string* why);

struct CompactPlan {
  size_t cut = 0;
  std::string summary;
  std::string body;  // the rewritten request body
  int64_t tokens_before = 0;
  int64_t tokens_after = 0;
  bool reused = false;  // the cached summary was reused as is
  // user-prompts: the items before the cut kept ahead of the summary.
  std::vector<size_t> kept_prompts;
  // mask: the tool results masked in place (nothing cut, no summary).
  size_t masked_outputs = 0;
};

// The rewritten request once `summary` covers [0, decision.cut), or nullopt
// (with `why`) when the result would not be under the threshold or not
// smaller than the request (the no-loop guard). Errors are the rewriter's.
Result<std::optional<CompactPlan>> FinishPlan(const ProviderApi& api, const ClientRequest& request,
                                              const PlanInput& input, const CutDecision& decision,
                                              std::string summary, std::string* why);

// DecideCut, the summary written by `summarizer` within `summarizer_window`
// tokens (0 = unbounded; see SummarizeWithin), then FinishPlan. Errors are
// the summarizer's and the rewriter's.
Result<std::optional<CompactPlan>> PlanCompaction(const ProviderApi& api,
                                                  const ClientRequest& request,
                                                  const Summarizer& summarizer,
                                                  const PlanInput& input, std::string* why,
                                                  int64_t summarizer_window = 0);

// The items [0, cut) of `request` as the prefix a summary replaces.
ConversationSummary SummaryOf(const ClientRequest& request, size_t cut, std::string summary);

// The key of the summary of `prefix` (raw item JSON) in the store's summary
// cache: "p1-" + a hash of the items with cache_control markers removed
// (parsed and written back, so formatting does not matter) + "-" + their
// number. Stable across restarts (not a secure hash).
std::string SummaryKey(const std::vector<std::string>& prefix);
// SummaryKey of every prefix of `request`: element c is the key of items
// [0, c), for c < request.items.size().
std::vector<std::string> SummaryKeys(const ClientRequest& request);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_COMPACT_PLAN_H_
