// A client's request to a model API, as a proxy between an agent and its model
// sees it: read into a provider-neutral view (the conversation as items, each
// with its exact bytes) and rewritten with the older items replaced by a
// summary, everything else kept byte for byte. docs/client-requests.md is the
// contract; each API (provider_api.h) reads and writes its own shapes.
//
// Thread safety: the types are plain values; the functions are pure.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_CLIENT_REQUEST_H_
#define COMPACTOR_INCLUDE_COMPACTOR_CLIENT_REQUEST_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/status.h"

namespace compactor {

// What a conversation item is. An item that makes tool calls is a kToolCall
// even when it also holds text (an Anthropic or Chat assistant message with
// tool_use / tool_calls); one that answers calls is a kToolResult (an
// Anthropic user message of tool_result blocks, a Chat "tool" message).
enum class ClientItemKind {
  kSystem,      // a system or developer message inside the conversation (Chat, Responses)
  kUser,        // a user message
  kAssistant,   // an assistant message without tool calls
  kToolCall,    // makes tool calls (see call_ids)
  kToolResult,  // answers tool calls (see result_ids)
  kReasoning,   // a Responses reasoning item
  kCompaction,  // a compaction item (Responses "compaction", Anthropic "compaction" blocks)
  kOther,       // anything else (hosted tool calls, item references, compaction_trigger, ...)
};

// "system", "user", "assistant", "tool_call", "tool_result", "reasoning",
// "compaction", "other".
std::string_view ClientItemKindName(ClientItemKind kind);

// A byte range [begin, end) of ClientRequest::body.
struct ByteSpan {
  size_t begin = 0;
  size_t end = 0;
  bool empty() const { return end <= begin; }
  size_t size() const { return end > begin ? end - begin : 0; }
};

struct ClientItem {
  ClientItemKind kind = ClientItemKind::kOther;
  // The API's own name for it: the Responses item type ("message",
  // "function_call", "reasoning", ...; "message" also for type-less messages),
  // or the message role for Anthropic and Chat ("user", "assistant", "tool").
  std::string type;
  // The item's JSON value, exactly as received.
  ByteSpan raw;
  // Ids of the tool calls this item makes, and of those it answers. A call
  // and its result share an id (tool_use.id / tool_result.tool_use_id,
  // call_id, tool_calls[].id / tool_call_id).
  std::vector<std::string> call_ids;
  std::vector<std::string> result_ids;
  // The names of the tools called, parallel to call_ids.
  std::vector<std::string> call_names;
  // Holds content that must reach the model unaltered and cannot be
  // summarized: thinking blocks with signatures, redacted thinking, reasoning
  // items, compaction items, item references.
  bool opaque = false;
  // The turn it belongs to: 0 up to the end of the first user run; each user
  // message (kUser) that follows anything but user and system items starts
  // the next turn.
  int turn = 0;
  // Anthropic cache_control breakpoints inside the item (0 for other APIs).
  int cache_breakpoints = 0;
  // pi's token estimate (ceil(UTF-16 units / 4) by pi's per-role rules) of
  // the pi messages the item converts to (ProviderApi::ClientItemMessages);
  // encrypted content counts nothing, as in pi.
  int64_t tokens = 0;
};

struct ClientRequest {
  // The registered name of the API that read it ("anthropic", ...).
  std::string api;
  // The body as received; every ByteSpan points into it.
  std::string body;
  std::string model;
  bool stream = false;
  // Raw JSON of the system part: Anthropic "system", Responses "instructions".
  // Empty when absent; always empty for Chat, whose system messages are items.
  ByteSpan system;
  // Raw JSON of "tools"; empty when absent.
  ByteSpan tools;
  // The conversation: Anthropic and Chat "messages", Responses "input" (an
  // array, or a string read as one user item).
  ByteSpan conversation;
  std::vector<ClientItem> items;
  // Cache breakpoints in the system part and the tools (Anthropic).
  int system_cache_breakpoints = 0;
  int tools_cache_breakpoints = 0;
  // Conversation hints, present only when the request has them (values are
  // strings as sent, or the raw JSON of non-string values):
  // "prompt_cache_key", "previous_response_id", "conversation", "user",
  // "safety_identifier" (OpenAI), "metadata.user_id" (Anthropic),
  // "compaction_trigger" = "true" when a Responses compaction_trigger item is
  // present. Headers are not part of the body and are the caller's business.
  std::map<std::string, std::string> hints;

  std::string_view Text(ByteSpan span) const {
    return std::string_view(body).substr(span.begin, span.size());
  }
  std::string_view Text(const ClientItem& item) const { return Text(item.raw); }
  // Σ tokens of items [begin, end).
  int64_t ItemTokens(size_t begin, size_t end) const;
};

struct ClientRewrite {
  // Items [0, cut) are replaced by the summary; [cut, n) are kept.
  size_t cut = 0;
  // The summary text, sent as one user message in the API's shape (Anthropic
  // with a cache breakpoint, see docs/client-requests.md).
  std::string summary;
  // Items before the cut to keep verbatim ahead of the summary besides the
  // system items (which are always kept): e.g. user messages that carry
  // project instructions. Each must be a kSystem or kUser item.
  std::vector<size_t> keep;
};

// OK when `cut` may be used: 1 <= cut < items.size(), something other than
// system items lies before it, no tool call before it has its result at or
// after it, no opaque item before it belongs to a turn that continues past
// it, and the newest tool call and result are not before it.
// kInvalidArgument otherwise, naming the rule and the item.
Status ValidateCut(const ClientRequest& request, size_t cut);

// Every cut ValidateCut accepts, ascending (one pass over the items).
std::vector<size_t> ValidCuts(const ClientRequest& request);

// Whether two JSON values are equal once every "cache_control" member is
// removed: Anthropic clients move their breakpoints forward with every
// request, so the same message reads differently from one request to the
// next. Values that are not valid JSON compare by their bytes.
bool SameIgnoringCacheControl(std::string_view a, std::string_view b);

// How many leading conversation items `a` and `b` share, compared with
// SameIgnoringCacheControl; 0 when the APIs differ.
size_t SharedItemPrefix(const ClientRequest& a, const ClientRequest& b);

// Whether the system parts and the tools of `a` and `b` are the same,
// ignoring cache_control markers.
bool SameSystemAndTools(const ClientRequest& a, const ClientRequest& b);

// Reads `body` with the registered API `api` (provider_api.h).
// kInvalidArgument for an unknown API, a body that is not a JSON object or
// lacks the conversation; kUnsupported for an API that takes no client
// requests ("remote").
Result<ClientRequest> ReadClientRequest(std::string_view api, std::string body);

// The request's body with `rewrite` applied by the API that read it: "[" +
// system items and `keep` items before the cut + the summary message + the
// kept items, every other byte as received. Errors: those of ValidateCut,
// kInvalidArgument for a bad `keep` index.
Result<std::string> RewriteClientRequest(const ClientRequest& request,
                                         const ClientRewrite& rewrite);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_CLIENT_REQUEST_H_
