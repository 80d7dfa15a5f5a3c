// Codex's remote compaction, answered by the proxy when the upstream offers
// none (docs/serve.md, "Remote compaction"): Codex (x-codex-beta-features:
// remote_compaction_v2) ends a Responses request with a compaction_trigger
// item and expects exactly one `compaction` output item, whose opaque
// content it sends back in later requests in place of the history it
// replaced. The proxy's item carries its summary (prefix kProxyCompaction),
// and the proxy expands it into a user message holding the summary before
// the request goes upstream, where no such item could be read.
//
// Thread safety: pure functions.
#ifndef COMPACTOR_SRC_SERVE_REMOTE_COMPACTION_H_
#define COMPACTOR_SRC_SERVE_REMOTE_COMPACTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "compactor/client_request.h"
#include "serve/http_util.h"

namespace compactor::serve {

// The start of the encrypted_content of the proxy's compaction items; the
// summary text follows.
inline constexpr std::string_view kProxyCompaction = "compactor-summary:v1:";

// Whether `host` (an upstream URL) offers remote compaction itself: OpenAI's
// API and ChatGPT's backend do, local servers do not.
bool UpstreamCompactsRemotely(std::string_view upstream_url);

// Whether the (Responses) request ends in a compaction_trigger item.
bool EndsInCompactionTrigger(const ClientRequest& request);

// The body of `request` with every compaction item the proxy issued replaced
// by a user message holding its summary; nullopt when there is none.
// `*summary` receives the last such summary.
std::optional<std::string> ExpandProxyCompactions(const ClientRequest& request,
                                                  std::string* summary);

struct TriggerAnswer {
  HeaderList headers;
  std::string body;
};

// The answer to a compaction_trigger request: one compaction item carrying
// `summary`, as a Responses stream (request.stream) or a response object.
// `input_tokens` is reported as the usage's input; `id` makes the ids.
TriggerAnswer CompactionAnswer(const ClientRequest& request, std::string_view summary,
                               int64_t input_tokens, std::string_view id);

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_REMOTE_COMPACTION_H_
