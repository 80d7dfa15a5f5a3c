// Compaction inside the proxy (docs/serve.md, "Compaction in the proxy"): a
// ProxyHook that reads each model request through its ProviderApi, and when
// the request's estimated input is over its model's threshold replaces the
// older conversation items with a summary (the recent part, the newest tool
// call and result, system, tools and parameters kept byte for byte). It
// also recovers from context-overflow errors (HTTP and in-stream) by
// compacting harder and retrying.
//
// Thread safety: the hook is shared by every worker thread; its conversation
// table is guarded by a mutex. Each request's ExchangeHook is used by its
// worker thread only.
#ifndef COMPACTOR_SRC_SERVE_COMPACT_HOOK_H_
#define COMPACTOR_SRC_SERVE_COMPACT_HOOK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/client_request.h"
#include "compactor/provider_api.h"
#include "compactor/status.h"
#include "compactor/summarizer.h"
#include "serve/hooks.h"

namespace compactor::serve {

struct CompactHookOptions {
  // The window of every model; 0 = `model_windows`, then the built-in table.
  int64_t context_window = 0;
  std::map<std::string, int64_t> model_windows;
  // pi's defaults: threshold = window - reserve; the recent part kept.
  int64_t reserve_tokens = kDefaultReserveTokens;
  int64_t keep_recent_tokens = 20000;
};

// The context window assumed for `model` when nothing configures it: a small
// table of model families (Claude 200k, GPT-4.1 1M, GPT-5 400k, GPT-4o 128k),
// else 128k.
int64_t BuiltinContextWindow(std::string_view model);

// The conversation's identity: the client's id (headers
// x-claude-code-session-id, session-id, session_id; the body's
// prompt_cache_key), else "h-" + a hash of the system part, the tools and
// the first item.
std::string ConversationId(const ClientRequest& request, const HeaderList& headers);

// Whether a request is auxiliary (titles, quota checks): no tools.
bool IsAuxiliaryRequest(const ClientRequest& request);

// Pi's estimate of the request's input: system + tools + items.
int64_t EstimateRequestTokens(const ClientRequest& request);

// What the proxy remembers of a compacted conversation: the items its
// summary replaced (raw JSON, compared ignoring cache_control) and the
// summary text (identical bytes are reused while the prefix matches).
struct ConversationSummary {
  std::vector<std::string> prefix;
  std::string summary;
};

struct CompactPlan {
  size_t cut = 0;
  std::string summary;
  std::string body;  // the rewritten request body
  int64_t tokens_before = 0;
  int64_t tokens_after = 0;
  bool reused = false;  // the cached summary was reused as is
};

struct PlanInput {
  int64_t threshold = 0;
  int64_t keep_recent_tokens = 0;
  // Compact even under the threshold (overflow recovery), as long as the
  // result is smaller than the request.
  bool force = false;
  const ConversationSummary* prior = nullptr;  // may be null
};

// The compaction of `request`, or nullopt when none applies (under the
// threshold, no valid cut, nothing to summarize, or the result would not get
// under the threshold: the no-loop guard). `why` receives the reason when
// nullopt. Errors are the summarizer's and the rewriter's.
Result<std::optional<CompactPlan>> PlanCompaction(const ProviderApi& api,
                                                  const ClientRequest& request,
                                                  const Summarizer& summarizer,
                                                  const PlanInput& input, std::string* why);

// The hook. `summarizer` (not owned, must outlive the hook; null = the
// offline summarizer).
std::shared_ptr<ProxyHook> NewCompactHook(CompactHookOptions options,
                                          const Summarizer* summarizer = nullptr);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_COMPACT_HOOK_H_
