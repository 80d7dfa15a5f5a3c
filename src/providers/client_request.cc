// The API-independent part of reading and rewriting client requests
// (client_request.h): cut rules, marker-blind comparison, the splice.
#include "compactor/client_request.h"

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>

#include "compactor/estimate.h"
#include "compactor/js_json.h"
#include "compactor/provider_api.h"
#include "providers/api_util.h"
#include "providers/client_util.h"
#include "util/json_scan.h"

namespace compactor {

std::string_view ClientItemKindName(ClientItemKind kind) {
  switch (kind) {
    case ClientItemKind::kSystem:
      return "system";
    case ClientItemKind::kUser:
      return "user";
    case ClientItemKind::kAssistant:
      return "assistant";
    case ClientItemKind::kToolCall:
      return "tool_call";
    case ClientItemKind::kToolResult:
      return "tool_result";
    case ClientItemKind::kReasoning:
      return "reasoning";
    case ClientItemKind::kCompaction:
      return "compaction";
    case ClientItemKind::kOther:
      return "other";
  }
  return "other";
}

int64_t ClientRequest::ItemTokens(size_t begin, size_t end) const {
  int64_t sum = 0;
  for (size_t i = begin; i < end && i < items.size(); ++i) sum += items[i].tokens;
  return sum;
}

namespace {

// The indexes of the newest item making tool calls and of the newest
// answering them (items.size() when there is none).
std::pair<size_t, size_t> NewestCallAndResult(const std::vector<ClientItem>& items) {
  size_t call = items.size(), result = items.size();
  for (size_t i = items.size(); i-- > 0;) {
    if (call == items.size() && !items[i].call_ids.empty()) call = i;
    if (result == items.size() && !items[i].result_ids.empty()) result = i;
  }
  return {call, result};
}

std::string ItemName(const ClientRequest& r, size_t i) {
  return "item " + std::to_string(i) + " (" + r.items[i].type + ")";
}

}  // namespace

Status ValidateCut(const ClientRequest& request, size_t cut) {
  const std::vector<ClientItem>& items = request.items;
  const size_t n = items.size();
  if (cut < 1 || cut >= n) {
    return Status::InvalidArgument("cut " + std::to_string(cut) + " is outside 1.." +
                                   (n == 0 ? std::string("0") : std::to_string(n - 1)) +
                                   ": the newest item is always kept");
  }
  bool content = std::any_of(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(cut),
                             [](const ClientItem& i) { return i.kind != ClientItemKind::kSystem; });
  if (!content) return Status::InvalidArgument("nothing but system items before the cut");
  auto [newest_call, newest_result] = NewestCallAndResult(items);
  if (newest_call < cut || newest_result < cut) {
    return Status::InvalidArgument("the cut would replace the newest tool call or result (" +
                                   ItemName(request, std::min(newest_call, newest_result)) + ")");
  }
  std::set<std::string_view> calls_before;
  for (size_t i = 0; i < cut; ++i) {
    for (const std::string& id : items[i].call_ids) calls_before.insert(id);
  }
  for (size_t i = cut; i < n; ++i) {
    for (const std::string& id : items[i].result_ids) {
      if (calls_before.count(id) != 0) {
        return Status::InvalidArgument("the cut separates tool call " + id + " from its result " +
                                       ItemName(request, i));
      }
    }
  }
  for (size_t i = 0; i < cut; ++i) {
    if (items[i].opaque && items[i].turn == items[cut].turn) {
      return Status::InvalidArgument("the cut splits turn " + std::to_string(items[cut].turn) +
                                     ", whose opaque " + ItemName(request, i) +
                                     " may only be dropped with the whole turn");
    }
  }
  return Status::Ok();
}

std::vector<size_t> ValidCuts(const ClientRequest& request) {
  const std::vector<ClientItem>& items = request.items;
  const size_t n = items.size();
  std::vector<size_t> out;
  if (n < 2) return out;
  // bad[k] > 0: cut k is refused. Ranges are added as +1 at their start and
  // -1 past their end, then summed.
  std::vector<int> bad(n + 1, 0);
  auto forbid = [&](size_t from, size_t to) {  // cuts from..to inclusive
    if (from > to || from > n) return;
    ++bad[from];
    --bad[std::min(to + 1, n)];
  };
  std::unordered_map<std::string_view, size_t> call_at;
  size_t first_content = n;
  for (size_t i = 0; i < n; ++i) {
    const ClientItem& item = items[i];
    if (first_content == n && item.kind != ClientItemKind::kSystem) first_content = i;
    for (const std::string& id : item.result_ids) {
      auto it = call_at.find(id);
      if (it != call_at.end() && it->second < i) forbid(it->second + 1, i);
    }
    for (const std::string& id : item.call_ids) call_at[id] = i;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!items[i].opaque) continue;
    size_t end = i;  // the last item of its turn
    while (end + 1 < n && items[end + 1].turn == items[i].turn) ++end;
    forbid(i + 1, end);
  }
  auto [newest_call, newest_result] = NewestCallAndResult(items);
  size_t last = std::min({n - 1, newest_call, newest_result});
  int running = 0;
  for (size_t k = 0; k <= last; ++k) {
    running += bad[k];
    if (k >= 1 && k > first_content && running == 0) out.push_back(k);
  }
  return out;
}

namespace {

using providers::Json;

void StripCacheControl(Json& j) {
  if (j.is_object()) {
    j.erase("cache_control");
    for (auto& [key, value] : j.items()) StripCacheControl(value);
  } else if (j.is_array()) {
    for (Json& v : j) StripCacheControl(v);
  }
}

}  // namespace

bool SameIgnoringCacheControl(std::string_view a, std::string_view b) {
  if (a == b) return true;
  constexpr std::string_view kKey = "\"cache_control\"";
  if (a.find(kKey) == std::string_view::npos && b.find(kKey) == std::string_view::npos) {
    return false;
  }
  Result<Json> ja = internal::ParseJsonWithinLimit<Json>(a);
  Result<Json> jb = internal::ParseJsonWithinLimit<Json>(b);
  if (!ja.ok() || !jb.ok()) return false;
  StripCacheControl(*ja);
  StripCacheControl(*jb);
  return *ja == *jb;
}

size_t SharedItemPrefix(const ClientRequest& a, const ClientRequest& b) {
  if (a.api != b.api) return 0;
  size_t n = std::min(a.items.size(), b.items.size());
  size_t i = 0;
  while (i < n && SameIgnoringCacheControl(a.Text(a.items[i]), b.Text(b.items[i]))) ++i;
  return i;
}

bool SameSystemAndTools(const ClientRequest& a, const ClientRequest& b) {
  return a.api == b.api && SameIgnoringCacheControl(a.Text(a.system), b.Text(b.system)) &&
         SameIgnoringCacheControl(a.Text(a.tools), b.Text(b.tools));
}

Result<ClientRequest> ReadClientRequest(std::string_view api, std::string body) {
  const ProviderApi* p = FindProviderApi(api);
  if (p == nullptr) return Status::InvalidArgument("unknown API \"" + std::string(api) + "\"");
  return p->ReadClientRequest(std::move(body));
}

Result<std::string> RewriteClientRequest(const ClientRequest& request,
                                         const ClientRewrite& rewrite) {
  const ProviderApi* p = FindProviderApi(request.api);
  if (p == nullptr) {
    return Status::InvalidArgument("unknown API \"" + request.api + "\"");
  }
  return p->RewriteClientRequest(request, rewrite);
}

namespace providers {

ScratchParser::ScratchParser(Use use, size_t bytes) {
  static thread_local dom::parser body, item;
  if (bytes > kScratchParserLimit) {
    own_ = std::make_unique<dom::parser>();
  } else {
    shared_ = use == kBody ? &body : &item;
  }
}

Result<dom::element> ParseClientBody(const ClientRequest& request, dom::parser& parser,
                                     std::map<std::string, ByteSpan, std::less<>>* members) {
  dom::element doc;
  // A body with room for simdjson's padding is parsed in place (else copied).
  if (parser.parse(request.body.data(), request.body.size(), !PaddedIn(request.body, request.body))
          .get(doc) != simdjson::SUCCESS) {
    return Status::InvalidArgument(request.api + " request: invalid JSON");
  }
  if (!doc.is_object()) {
    return Status::InvalidArgument(request.api + " request: not a JSON object");
  }
  for (const internal::JsonMember& m : internal::ScanObjectMembers(request.body)) {
    (*members)[std::string(m.raw_key)] = {m.value_begin, m.value_end};
  }
  return doc;
}

Status ArrayItems(const ClientRequest& request, dom::array array, std::vector<dom::element>* out,
                  std::vector<ByteSpan>* spans) {
  std::string_view text = request.Text(request.conversation);
  for (auto [b, e] : internal::ScanArrayElements(text)) {
    spans->push_back({request.conversation.begin + b, request.conversation.begin + e});
  }
  for (dom::element e : array) out->push_back(e);
  if (out->size() != spans->size()) {
    return Status::Internal(request.api + " request: item spans do not match the items");
  }
  return Status::Ok();
}

bool Member(dom::element obj, std::string_view key, dom::element* out) {
  dom::object o;
  if (obj.get_object().get(o) != simdjson::SUCCESS) return false;
  bool found = false;
  for (dom::key_value_pair field : o) {
    if (field.key == key) {
      *out = field.value;
      found = true;
    }
  }
  return found;
}

std::string_view StringMember(dom::element obj, std::string_view key) {
  dom::element v;
  std::string_view s;
  if (!Member(obj, key, &v) || v.get_string().get(s) != simdjson::SUCCESS) return {};
  return s;
}

bool ArrayMember(dom::element obj, std::string_view key, dom::array* out) {
  dom::element v;
  return Member(obj, key, &v) && v.get_array().get(*out) == simdjson::SUCCESS;
}

bool BoolMember(dom::element obj, std::string_view key) {
  dom::element v;
  bool b = false;
  return Member(obj, key, &v) && v.get_bool().get(b) == simdjson::SUCCESS && b;
}

bool HasMember(dom::element obj, std::string_view key) {
  dom::element v;
  return Member(obj, key, &v);
}

std::string HintText(dom::element value) {
  std::string_view s;
  if (value.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  return simdjson::minify(value);
}

namespace {

// The estimates of the items the thread read last, by their bytes: an agent
// sends its whole conversation with every request, so all but its newest
// items were read (and estimated) before. An item's estimate depends on its
// API and its bytes alone (the tool name a result borrows from its call is
// not counted). Direct-mapped, a fixed 24 kB a thread; a slot holds a 64-bit
// hash of the bytes and their length, and a clash only evicts.
struct ItemTokensSlot {
  uint64_t hash = 0;
  size_t size = 0;
  int64_t tokens = -1;
};
constexpr size_t kItemTokensSlots = 1024;

ItemTokensSlot& SlotFor(std::string_view api, std::string_view raw, uint64_t* hash) {
  static thread_local std::array<ItemTokensSlot, kItemTokensSlots> slots;
  *hash = std::hash<std::string_view>{}(raw) ^ (std::hash<std::string_view>{}(api)*31);
  return slots[*hash % kItemTokensSlots];
}

}  // namespace

std::optional<int64_t> KnownItemTokens(std::string_view api, std::string_view raw) {
  uint64_t hash = 0;
  const ItemTokensSlot& slot = SlotFor(api, raw, &hash);
  if (slot.tokens < 0 || slot.hash != hash || slot.size != raw.size()) return std::nullopt;
  return slot.tokens;
}

void RememberItemTokens(std::string_view api, std::string_view raw, int64_t tokens) {
  uint64_t hash = 0;
  ItemTokensSlot& slot = SlotFor(api, raw, &hash);
  slot = ItemTokensSlot{hash, raw.size(), tokens};
}

void FinishItems(ClientRequest& request, const ItemMessages& messages) {
  int turn = 0;
  bool content = false;  // something other than user and system items since the turn began
  for (ClientItem& item : request.items) {
    if (item.kind == ClientItemKind::kUser) {
      if (content) ++turn;
      content = false;
    } else if (item.kind != ClientItemKind::kSystem) {
      content = true;
    }
    item.turn = turn;
  }
  for (size_t i = 0; i < request.items.size(); ++i) {
    const std::string_view raw = request.Text(request.items[i]);
    if (std::optional<int64_t> known = KnownItemTokens(request.api, raw)) {
      request.items[i].tokens = *known;
      continue;
    }
    int64_t tokens = 0;
    for (const std::string& m : messages(i)) tokens += EstimateMessageTokens(m);
    request.items[i].tokens = tokens;
    RememberItemTokens(request.api, raw, tokens);
  }
}

Result<std::string> SpliceRewrite(const ClientRequest& request, const ClientRewrite& rewrite,
                                  std::string_view summary_item,
                                  const std::map<size_t, std::string>& replaced) {
  COMPACTOR_RETURN_IF_ERROR(ValidateCut(request, rewrite.cut));
  const std::vector<ClientItem>& items = request.items;
  const size_t cut = rewrite.cut;
  std::vector<bool> keep(cut, false);
  for (size_t i = 0; i < cut; ++i) keep[i] = items[i].kind == ClientItemKind::kSystem;
  for (size_t k : rewrite.keep) {
    if (k >= cut) {
      return Status::InvalidArgument("keep: item " + std::to_string(k) + " is not before the cut");
    }
    if (items[k].kind != ClientItemKind::kSystem && items[k].kind != ClientItemKind::kUser) {
      return Status::InvalidArgument("keep: item " + std::to_string(k) + " is a " +
                                     std::string(ClientItemKindName(items[k].kind)) +
                                     ", only user and system items may be kept before the cut");
    }
    keep[k] = true;
  }
  const std::string& body = request.body;
  if (request.conversation.empty() || body[request.conversation.begin] != '[') {
    return Status::InvalidArgument(request.api + " request: the conversation is not an array");
  }
  auto item_text = [&](size_t i) -> std::string_view {
    auto it = replaced.find(i);
    return it != replaced.end() ? std::string_view(it->second) : request.Text(items[i]);
  };
  std::string out;
  out.reserve(body.size() + summary_item.size());
  out.append(body, 0, request.conversation.begin + 1);
  for (size_t i = 0; i < cut; ++i) {
    if (!keep[i]) continue;
    out.append(item_text(i));
    out.push_back(',');
  }
  out.append(summary_item);
  out.push_back(',');
  for (size_t i = cut; i < items.size(); ++i) {
    out.append(item_text(i));
    size_t gap_end = i + 1 < items.size() ? items[i + 1].raw.begin : request.conversation.end;
    out.append(body, items[i].raw.end, gap_end - items[i].raw.end);
  }
  out.append(body, request.conversation.end, std::string::npos);
  return out;
}

std::string ToolNameBefore(const ClientRequest& request, size_t before, std::string_view id) {
  for (size_t i = std::min(before, request.items.size()); i-- > 0;) {
    const ClientItem& item = request.items[i];
    for (size_t k = 0; k < item.call_ids.size() && k < item.call_names.size(); ++k) {
      if (item.call_ids[k] == id) return item.call_names[k];
    }
  }
  return "";
}

PiMessageWriter::PiMessageWriter(std::string_view role) {
  out_ = "{\"role\":";
  AppendJsString(out_, role);
  out_ += ",\"content\":[";
}

PiMessageWriter PiMessageWriter::ToolResult(std::string_view id, std::string_view name,
                                            bool is_error) {
  PiMessageWriter w("toolResult");
  w.out_.resize(w.out_.size() - std::string_view(",\"content\":[").size());
  w.out_ += ",\"toolCallId\":";
  AppendJsString(w.out_, id);
  w.out_ += ",\"toolName\":";
  AppendJsString(w.out_, name);
  w.out_ += ",\"content\":[";
  w.tail_ = is_error ? "],\"isError\":true}" : "],\"isError\":false}";
  return w;
}

std::string PiMessageWriter::UserString(std::string_view text) {
  std::string out = "{\"role\":\"user\",\"content\":";
  AppendJsString(out, text);
  out += "}";
  return out;
}

void PiMessageWriter::Block() {
  if (blocks_++ > 0) out_ += ',';
}

void PiMessageWriter::Text(std::string_view text) {
  Block();
  out_ += "{\"type\":\"text\",\"text\":";
  AppendJsString(out_, text);
  out_ += '}';
}

void PiMessageWriter::Image(std::string_view mime_type, std::string_view data) {
  Block();
  out_ += "{\"type\":\"image\",\"data\":";
  AppendJsString(out_, data);
  out_ += ",\"mimeType\":";
  AppendJsString(out_, mime_type);
  out_ += '}';
}

void PiMessageWriter::ImageUrl(std::string_view url) {
  if (url.starts_with("data:")) {
    size_t semi = url.find(';'), comma = url.find(',');
    if (semi != std::string_view::npos && comma != std::string_view::npos && semi < comma) {
      Image(url.substr(5, semi - 5), url.substr(comma + 1));
      return;
    }
  }
  Image("", "");
}

void PiMessageWriter::Thinking(std::string_view thinking, std::string_view signature,
                               bool redacted) {
  Block();
  out_ += "{\"type\":\"thinking\",\"thinking\":";
  AppendJsString(out_, thinking);
  if (!signature.empty()) {
    out_ += ",\"thinkingSignature\":";
    AppendJsString(out_, signature);
  }
  if (redacted) out_ += ",\"redacted\":true";
  out_ += '}';
}

void PiMessageWriter::ToolCall(std::string_view id, std::string_view name,
                               std::string_view arguments_json) {
  Block();
  out_ += "{\"type\":\"toolCall\",\"id\":";
  AppendJsString(out_, id);
  out_ += ",\"name\":";
  AppendJsString(out_, name);
  out_ += ",\"arguments\":";
  // One parser per thread: a parser's buffers cost a page-faulting allocation each.
  static thread_local dom::parser parser;
  dom::element args;
  if (parser.parse(arguments_json).get(args) == simdjson::SUCCESS && args.is_object()) {
    out_ += simdjson::minify(args);
  } else {
    out_ += "{\"_raw\":";
    AppendJsString(out_, arguments_json);
    out_ += '}';
  }
  out_ += '}';
}

std::string PiMessageWriter::Finish() { return std::move(out_) + tail_; }

}  // namespace providers
}  // namespace compactor
