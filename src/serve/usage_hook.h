// The upstream's usage in the request log (docs/serve.md, "The request log"):
// the input and output tokens the model API reports in its answer to a
// generation request (Messages, Responses, Chat Completions), read as the
// answer goes by, for RequestRecord::tokens_in / tokens_out. The recorder
// (registered after this hook) takes them from the record.
#ifndef COMPACTOR_SRC_SERVE_USAGE_HOOK_H_
#define COMPACTOR_SRC_SERVE_USAGE_HOOK_H_

#include <memory>
#include <string_view>

#include "serve/hooks.h"

namespace compactor::serve {

// Whether `label` (Route::label) is a generation route: the three the
// proxy compacts and records.
bool IsGenerationRoute(std::string_view label);

// Whether `ex` is a request of an agent's conversation: a POST to a
// generation route of a known API that declares tools (not auxiliary: a
// title, a quota check). The view says so when the request was read;
// otherwise (forwarded unread) the body's top-level members do.
bool IsConversationRequest(Exchange& ex);

// The hook joins the requests of conversations (IsConversationRequest), as
// the compaction and recording hooks do, so auxiliary requests keep their
// Accept-Encoding (a joined request is answered uncompressed) and log no
// tokens. The answer is read as it goes to the client (OnRelayed), never
// held: a stream's "data:" lines that mention usage are parsed, a non-stream
// answer is parsed once the client has it. tokens_in is every input token
// the model read (cache reads and writes included), tokens_out the output
// tokens.
std::shared_ptr<ProxyHook> NewUsageHook();

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_USAGE_HOOK_H_
