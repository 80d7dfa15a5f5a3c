// Helpers for reading and rewriting client requests (client_request.h),
// shared by the API files: the body parsed once with simdjson (client bodies
// run to megabytes and arrive with every request of a proxied agent), byte
// spans, the finishing pass over the items (turns, estimates), the splice
// that writes a rewritten body, and a writer for pi message objects.
#ifndef COMPACTOR_SRC_PROVIDERS_CLIENT_UTIL_H_
#define COMPACTOR_SRC_PROVIDERS_CLIENT_UTIL_H_

#include <simdjson.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/client_request.h"
#include "compactor/status.h"

namespace compactor::providers {

namespace dom = simdjson::dom;

// A parser for `bytes` of JSON. Up to kScratchParserLimit bytes it is the
// calling thread's own parser for that use, whose buffers are allocated once
// rather than at every request (a pass-through request's body is read on the
// request path); a larger text gets a fresh parser, so that no thread keeps a
// large body's buffers (over ten times its size) for good. kBody serves
// whole bodies (ReadClientRequest), kItem single items (ClientItemMessages):
// neither nests in the other, so a parse never overwrites elements in use.
inline constexpr size_t kScratchParserLimit = 128 * 1024;
class ScratchParser {
 public:
  enum Use { kBody, kItem };
  ScratchParser(Use use, size_t bytes);
  dom::parser& get() { return own_ ? *own_ : *shared_; }

 private:
  std::unique_ptr<dom::parser> own_;
  dom::parser* shared_ = nullptr;
};

// Whether simdjson may read its padding past the end of `part` (a view into
// `text`) without a copy: the bytes are `text`'s own (its capacity).
inline bool PaddedIn(const std::string& text, std::string_view part) {
  return part.data() + part.size() + simdjson::SIMDJSON_PADDING <= text.data() + text.capacity();
}

// `request.body` parsed by `parser` (which owns the result) as a JSON object,
// or kInvalidArgument "<api> request: ...". The spans of its top-level
// members go to `members` (the last of repeated keys).
Result<dom::element> ParseClientBody(const ClientRequest& request, dom::parser& parser,
                                     std::map<std::string, ByteSpan, std::less<>>* members);

// The elements of the array `array` with their spans in `request.body`;
// kInternal when the two disagree (they cannot for valid JSON).
Status ArrayItems(const ClientRequest& request, dom::array array, std::vector<dom::element>* out,
                  std::vector<ByteSpan>* spans);

// The value of the last member `key` of `obj` (as JSON.parse keeps the last
// of repeated keys); false when `obj` is not an object or has none.
bool Member(dom::element obj, std::string_view key, dom::element* out);
// Member `key` as a string ("" when absent or not a string), an array, a bool.
std::string_view StringMember(dom::element obj, std::string_view key);
bool ArrayMember(dom::element obj, std::string_view key, dom::array* out);
bool BoolMember(dom::element obj, std::string_view key);
bool HasMember(dom::element obj, std::string_view key);
// A hint's text: a string's value, anything else as minified JSON.
std::string HintText(dom::element value);

// The pi messages of item `index` (ProviderApi::ClientItemMessages).
using ItemMessages = std::function<std::vector<std::string>(size_t index)>;

// Assigns turns (client_request.h) and pi's estimate of each item's messages
// (known from an earlier request of the thread when the item's bytes were
// read before: KnownItemTokens).
void FinishItems(ClientRequest& request, const ItemMessages& messages);

// The estimate of an item of `api` with these bytes, when the thread
// estimated one lately (FinishItems remembers every one it computes).
std::optional<int64_t> KnownItemTokens(std::string_view api, std::string_view raw);
void RememberItemTokens(std::string_view api, std::string_view raw, int64_t tokens);

// The rewritten body: everything before the conversation, "[", the system and
// `rewrite.keep` items before the cut, `summary_item`, the kept items (each
// as received, or its replacement in `replaced`) with their separators, and
// everything after. Validates the cut and the keep list first.
Result<std::string> SpliceRewrite(const ClientRequest& request, const ClientRewrite& rewrite,
                                  std::string_view summary_item,
                                  const std::map<size_t, std::string>& replaced = {});

// The name of the tool call `id` made by an item before `before`, or "".
std::string ToolNameBefore(const ClientRequest& request, size_t before, std::string_view id);

// Writes one pi message object (pi's session shapes): {"role", "content":
// [blocks]} or, for tool results, {"role":"toolResult", "toolCallId",
// "toolName", "content": [blocks], "isError"}.
class PiMessageWriter {
 public:
  explicit PiMessageWriter(std::string_view role);
  static PiMessageWriter ToolResult(std::string_view id, std::string_view name, bool is_error);
  // A user message whose content is a plain string.
  static std::string UserString(std::string_view text);

  void Text(std::string_view text);
  void Image(std::string_view mime_type, std::string_view data);
  void Thinking(std::string_view thinking, std::string_view signature, bool redacted);
  // `arguments_json` is the call's arguments as JSON text; anything but an
  // object is kept as {"_raw": text}.
  void ToolCall(std::string_view id, std::string_view name, std::string_view arguments_json);
  // A "data:<mime>;base64,<data>" URL as an image (other URLs: no data).
  void ImageUrl(std::string_view url);
  bool empty() const { return blocks_ == 0; }
  std::string Finish();

 private:
  void Block();
  std::string out_;
  std::string tail_ = "]}";
  int blocks_ = 0;
};

}  // namespace compactor::providers

#endif  // COMPACTOR_SRC_PROVIDERS_CLIENT_UTIL_H_
