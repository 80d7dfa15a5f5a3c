// Codex's remote compaction, answered by the proxy when the upstream offers
// none (docs/serve.md, "Remote compaction"): Codex (x-codex-beta-features:
// remote_compaction_v2) ends a Responses request with a compaction_trigger
// item and expects exactly one `compaction` output item, whose opaque
// content it sends back in later requests in place of the history it
// replaced. The proxy's item refers to its summary in the store's summary
// cache (kProxyCompactionRef + the summary's key), or, when the proxy has no
// store, carries the summary itself (kProxyCompaction + the text); the proxy
// expands it into a user message holding the summary before the request
// goes upstream, where no such item could be read.
//
// Thread safety: pure functions.
#ifndef COMPACTOR_SRC_SERVE_REMOTE_COMPACTION_H_
#define COMPACTOR_SRC_SERVE_REMOTE_COMPACTION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "compactor/client_request.h"
#include "serve/http_util.h"

namespace compactor::serve {

// The start of the encrypted_content of the proxy's compaction items: v1,
// the summary text follows; v2, its key in the summary cache follows.
inline constexpr std::string_view kProxyCompaction = "compactor-summary:v1:";
inline constexpr std::string_view kProxyCompactionRef = "compactor-summary:v2:";

// The encrypted_content of a compaction item for `summary`: a reference to
// `key` when it is not empty (the summary is in the store), else the text.
std::string ProxyCompactionContent(std::string_view key, std::string_view summary);

// Whether `host` (an upstream URL) offers remote compaction itself: OpenAI's
// API and ChatGPT's backend do, local servers do not.
bool UpstreamCompactsRemotely(std::string_view upstream_url);

// Whether the (Responses) request ends in a compaction_trigger item.
bool EndsInCompactionTrigger(const ClientRequest& request);

// Finds a summary by its key (the store's summary cache).
using SummaryLookup = std::function<std::optional<std::string>(const std::string& key)>;

struct Expansion {
  // The body with every compaction item the proxy issued replaced by a user
  // message holding its summary; nullopt when there is none, or when one
  // refers to a summary `find` does not know (then `missing` is its key).
  std::optional<std::string> body;
  std::string summary;  // the last expanded summary
  std::string missing;
};
Expansion ExpandProxyCompactions(const ClientRequest& request, const SummaryLookup& find);

struct TriggerAnswer {
  HeaderList headers;
  std::string body;
};

// The answer to a compaction_trigger request: one compaction item whose
// encrypted_content is `content` (ProxyCompactionContent of `summary`), as
// a Responses stream (request.stream) or a response object. `input_tokens`
// is reported as the usage's input; `id` makes the ids.
TriggerAnswer CompactionAnswer(const ClientRequest& request, std::string_view content,
                               std::string_view summary, int64_t input_tokens, std::string_view id);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_REMOTE_COMPACTION_H_
