// Compaction inside the proxy (docs/serve.md, "Compaction in the proxy"): a
// ProxyHook that reads each model request through its ProviderApi, and when
// the request's estimated input is over its model's threshold replaces the
// older conversation items with a summary (the recent part, the newest tool
// call and result, system, tools and parameters kept byte for byte). It
// also recovers from context-overflow errors (HTTP and in-stream) by
// compacting harder and retrying, answers Codex's compaction_trigger when
// the upstream cannot (remote_compaction.h), and never makes a request wait
// longer than a deadline for its summary (summary_jobs.h).
//
// Thread safety: the hook is shared by every worker thread; its conversation
// table is thread-safe. Each request's ExchangeHook is used by its worker
// thread only.
#ifndef COMPACTOR_SRC_SERVE_COMPACT_HOOK_H_
#define COMPACTOR_SRC_SERVE_COMPACT_HOOK_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compactor/env.h"
#include "compactor/providers.h"
#include "compactor/summarizer.h"
#include "serve/compact_plan.h"
#include "serve/hooks.h"
#include "serve/proxy_strategy.h"
#include "serve/summary_jobs.h"

namespace compactor::serve {

// What the hook knows once a request was forwarded and answered: the seam
// for recording conversations (the store), passed to
// CompactHookOptions::on_forwarded.
struct ForwardedExchange {
  std::string conversation_id;
  std::string api;     // the registered API name
  std::string model;   // the client's model
  std::string target;  // the request target ("/v1/messages?beta=true")
  // What the upstream received for the attempt the client got (the client's
  // body, or the proxy's rewrite); empty when the proxy answered by itself.
  std::string sent_body;
  int status = 0;  // of the answer the client got (0: none, the exchange failed)
  // Usage the upstream reported (zeros when it reported none).
  LlmUsage usage;
  bool usage_reported = false;
  // The compaction applied to what was sent, if any.
  std::optional<CompactPlan> compaction;
  // A compaction_trigger answered by the proxy itself: its summary.
  std::optional<std::string> local_compaction;
};

using ForwardedCallback = std::function<void(const ForwardedExchange&)>;

// The store's session id of the session recording a conversation (assigned
// at the conversation's first request, before anything is written), for
// the x-compactor-session response header.
using SessionResolver = std::function<std::string(const std::string& conversation_id)>;

struct CompactHookOptions {
  // The window of every model; 0 = `model_windows`, then the built-in table
  // (an unknown model: no proactive compaction, overflow recovery only).
  int64_t context_window = 0;
  std::map<std::string, int64_t> model_windows;
  // pi's defaults: threshold = window - reserve; the recent part kept.
  int64_t reserve_tokens = kDefaultReserveTokens;
  int64_t keep_recent_tokens = 20000;

  // The strategy applied (proxy_strategy.h; --strategy): summary (default),
  // user-prompts, notes (its summary the content of `notes_file`, read
  // through `env` at each summary; REQUIRES: set for kNotes) or mask.
  ProxyStrategy strategy = ProxyStrategy::kSummary;
  std::string notes_file;
  // user-prompts: the most tokens of the user's prompts kept before the cut
  // (at most a quarter of the threshold): Kimi's 20000.
  int64_t kept_prompts_tokens = 20000;

  // Who writes summaries: the client's own model through its upstream with
  // its credentials (kUpstream, the default), the embedded offline
  // summarizer, or the settings models in `summarizer_models`.
  enum class SummarizerKind { kUpstream, kOffline, kModels };
  SummarizerKind summarizer = SummarizerKind::kUpstream;
  std::vector<ModelConfig> summarizer_models;
  // The summarizers' transport; null = libcurl.
  std::shared_ptr<HttpTransport> transport;
  // Where a request goes upstream (root + target); kUpstream's summary
  // request goes there too. REQUIRES: set for kUpstream.
  std::function<std::string(const ProxyRequest&)> upstream_url;

  // The longest a request waits for its summary; past it, it goes upstream
  // uncompacted (the summary goes on and serves the next request): 60 s.
  int64_t summary_deadline_ms = 60'000;
  // A summary is prepared in the background once a conversation's input
  // reaches this fraction of its threshold: 0.8.
  double prepare_fraction = 0.8;

  // Codex's compaction_trigger: answered by the proxy (kProxy), passed to the
  // upstream (kUpstream), or kAuto: passed only to upstreams known to offer
  // remote compaction (UpstreamCompactsRemotely).
  enum class RemoteCompaction { kAuto, kUpstream, kProxy };
  RemoteCompaction remote_compaction = RemoteCompaction::kAuto;

  // Marks the upstream summarizer's requests with "x-compactor-request:
  // summary" (settings "serve.markSummaryRequests"; off: no internal header
  // reaches an upstream).
  bool mark_summary_requests = false;

  // The conversation table's bound (settings "serve.maxConversations"; LRU
  // eviction) and where summaries outlive it (the store's summary cache).
  // Not owned, like on_forwarded; null = in memory only.
  size_t max_conversations = 4096;
  const DurableSummaries* durable_summaries = nullptr;

  // Threads and the clock of summary jobs. null = Env::Default().
  Env* env = nullptr;
  // Called once per request the hook joined, after its answer (on the
  // request's worker thread; must be quick or hand the work off). Not owned:
  // points at a callback that outlives the hook and is set, if at all,
  // before the first request; null or empty = nobody listens (then the hook
  // parses nothing it does not need).
  const ForwardedCallback* on_forwarded = nullptr;
  // Names the session of x-compactor-session. Not owned, like on_forwarded;
  // null or empty (no store): the header carries the conversation id.
  const SessionResolver* session_of = nullptr;
};

// The hook. Summary jobs still running when it is destroyed are cancelled
// and waited for.
std::shared_ptr<ProxyHook> NewCompactHook(CompactHookOptions options);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_COMPACT_HOOK_H_
