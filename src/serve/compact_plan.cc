#include "serve/compact_plan.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "serve/proxy_strategy.h"
#include "serve/upstream_summarizer.h"
#include "util/json_scan.h"

namespace compactor::serve {
namespace {

// The lead-in of the summary message (the same wording the library uses for
// compaction summaries in the context; the <summary> tags are what models key on).
constexpr std::string_view kLeadIn =
    "Earlier messages of this conversation were compacted into this summary:\n\n<summary>\n";
constexpr std::string_view kLeadOut = "\n</summary>";

// FNV-1a 64: a stable in-process hash for conversation ids (not security).
uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Hex(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<size_t>(i)] = kDigits[v & 15];
  return out;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The valid cut that keeps at most `keep` tokens of recent items (the
// smallest such cut), else the largest valid cut; 0 when there is none.
size_t ChooseCut(const ClientRequest& request, const std::vector<size_t>& cuts, int64_t keep,
                 size_t at_least) {
  const size_t n = request.items.size();
  for (size_t c : cuts) {
    if (c >= at_least && request.ItemTokens(c, n) <= keep) return c;
  }
  return cuts.empty() || cuts.back() < at_least ? 0 : cuts.back();
}

// System and tools: what no compaction changes.
int64_t FixedTokens(const ClientRequest& request) {
  return EstimateRequestTokens(request) - request.ItemTokens(0, request.items.size());
}

// user-prompts: the tokens of the prompts kept ahead of the summary for `cut`.
int64_t KeptPromptTokens(const ClientRequest& request, size_t cut, const PlanInput& input) {
  if (input.kept_prompts_budget < 0) return 0;
  int64_t tokens = 0;
  for (size_t i : KeptPrompts(request, cut, input.kept_prompts_budget)) {
    tokens += request.items[i].tokens;
  }
  return tokens;
}

struct Family {
  std::string_view prefix;
  int64_t window;
};
constexpr Family kFamilies[] = {
    {"claude", 200'000}, {"gpt-4.1", 1'047'576}, {"gpt-5", 400'000},    {"o3", 200'000},
    {"o4", 200'000},     {"gpt-4o", 128'000},    {"gemini", 1'048'576},
};

int64_t Occurrences(std::string_view text, std::string_view word) {
  int64_t n = 0;
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

int64_t BuiltinContextWindow(std::string_view model) {
  for (const Family& f : kFamilies) {
    if (StartsWith(model, f.prefix)) return f.window;
  }
  return 0;
}

int64_t SmallestBuiltinContextWindow() {
  int64_t least = kFamilies[0].window;
  for (const Family& f : kFamilies) least = std::min(least, f.window);
  return least;
}

namespace {

// The id of the client's session header, the second of ConversationId's rules.
std::optional<std::string> SessionHeaderId(std::string_view api, const HeaderList& headers) {
  for (std::string_view name : {"x-claude-code-session-id", "session-id", "session_id"}) {
    std::string_view v = HeaderValue(headers, name);
    if (!v.empty()) return std::string(api) + ":session:" + std::string(v);
  }
  return std::nullopt;
}

// The APIs whose request reader keeps the body's prompt_cache_key as a hint
// (src/providers/openai_responses.cc and openai_chat.cc).
bool ReadsPromptCacheKey(std::string_view api) {
  return api == "openai-responses" || api == "openai-chat";
}

}  // namespace

std::string ConversationId(const ProviderApi& api, const ClientRequest& request,
                           const HeaderList& headers) {
  auto hint = request.hints.find("prompt_cache_key");
  if (hint != request.hints.end() && !hint->second.empty())
    return std::string(api.name()) + ":key:" + hint->second;
  if (auto id = SessionHeaderId(api.name(), headers)) return *id;
  // The first message as pi reads it: cache_control markers, which clients
  // move from request to request, are not part of it. The tools are left
  // out: clients add tools during a conversation (an MCP server that
  // connects late), which must not make it another conversation.
  uint64_t h = Fnv1a(api.name());
  h = Fnv1a(request.Text(request.system), h);
  for (size_t i = 0; i < request.items.size(); ++i) {
    if (request.items[i].kind == ClientItemKind::kSystem) continue;
    for (const std::string& m : api.ClientItemMessages(request, i)) h = Fnv1a(m, h);
    break;
  }
  return std::string(api.name()) + ":hash:" + Hex(h);
}

namespace {

// NamedConversationId on the body's scanned top-level members.
std::optional<std::string> NamedIn(const ProviderApi& api, std::string_view body,
                                   const std::vector<internal::JsonMember>& members,
                                   const HeaderList& headers) {
  if (!ReadsPromptCacheKey(api.name())) return SessionHeaderId(api.name(), headers);
  if (members.empty()) return std::nullopt;
  std::string_view key;
  int keys = 0;
  for (const internal::JsonMember& m : members) {
    if (m.raw_key.find('\\') != std::string_view::npos) return std::nullopt;
    if (m.raw_key != "prompt_cache_key") continue;
    key = body.substr(m.value_begin, m.value_end - m.value_begin);
    ++keys;
  }
  if (keys > 1) return std::nullopt;  // which one the reader takes is its parser's choice
  if (keys == 0 || key == "null" || key == "\"\"") return SessionHeaderId(api.name(), headers);
  if (key.size() < 2 || key.front() != '"' || key.back() != '"' ||
      key.find('\\') != std::string_view::npos) {
    return std::nullopt;  // a number, an object, an escape: as the reader decodes it
  }
  return std::string(api.name()) + ":key:" + std::string(key.substr(1, key.size() - 2));
}

bool ToolsIn(const std::vector<internal::JsonMember>& members) {
  for (const internal::JsonMember& m : members) {
    if (m.raw_key == "tools") return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> NamedConversationId(const ProviderApi& api, std::string_view body,
                                               const HeaderList& headers) {
  if (!ReadsPromptCacheKey(api.name())) return SessionHeaderId(api.name(), headers);
  return NamedIn(api, body, internal::ScanObjectMembers(body), headers);
}

bool IsAuxiliaryRequest(const ClientRequest& request) { return request.tools.empty(); }

bool DeclaresTools(std::string_view body) { return ToolsIn(internal::ScanObjectMembers(body)); }

RequestOutline OutlineRequest(const ProviderApi* api, std::string_view body,
                              const HeaderList& headers) {
  const std::vector<internal::JsonMember> members = internal::ScanObjectMembers(body);
  RequestOutline o;
  o.declares_tools = ToolsIn(members);
  if (api != nullptr) o.named_conversation = NamedIn(*api, body, members, headers);
  return o;
}

// The bound in detail (the converters are src/providers/*.cc, the estimate
// src/tokens/estimate.cc):
// - The system part and the tools count the UTF-16 length of their raw JSON:
//   at most their bytes (UTF-8 needs a byte per UTF-16 unit at least), and
//   the rounding of each adds under one token.
// - A message counts the UTF-16 length of strings taken from the body's
//   strings (texts, thinking, tool names, tool results), decoded: an escape
//   is longer than what it stands for, so again at most their bytes; each
//   string goes to one message once.
// - Tool-call arguments count their JSON.stringify length. Strings and
//   structure do not grow, but for an argument value that is not an object,
//   kept as {"_raw": its JSON text} and so escaped once more (at most twice
//   its bytes), and numbers: JSON.stringify writes 1e20 as 21 digits, at most
//   5.25 characters per byte of the number as sent.
// - The characters a conversion adds by itself ("{}" for absent arguments,
//   the {"_raw": ...} and {"input": ...} wrappers, "\n\n" between the parts
//   of a reasoning summary) are fewer than the bytes of the object they come
//   from that count nothing (its "type" member alone has more).
//   Hence at most 6 characters per byte of the body: 1.5 tokens.
// - An image counts 4800 characters (1200 tokens); every image block's type
//   ("image", "image_url", "input_image") has the word, and without a \u
//   escape it is spelled out.
// - Each message's ceil adds under one token; every message comes from an
//   object of the body, which opens with "{".
std::optional<int64_t> RequestTokensBound(std::string_view body) {
  if (body.find("\\u") != std::string_view::npos ||
      body.find("compaction") != std::string_view::npos) {
    return std::nullopt;
  }
  const auto bytes = static_cast<int64_t>(body.size());
  return (bytes * 6 + 3) / 4 + 1200 * Occurrences(body, "image") + Occurrences(body, "{") + 2;
}

int64_t EstimateRequestTokens(const ClientRequest& request) {
  return EstimateTextTokens(request.Text(request.system)) +
         EstimateTextTokens(request.Text(request.tools)) +
         request.ItemTokens(0, request.items.size());
}

std::shared_ptr<const ClientRequestView> ReadClientRequestView(const ProviderApi& api,
                                                               std::string body,
                                                               const HeaderList& headers) {
  auto request = api.ReadClientRequest(std::move(body));
  if (!request.ok()) return nullptr;
  auto v = std::make_shared<ClientRequestView>();
  v->api = &api;
  v->request = std::move(*request);
  v->conversation_id = ConversationId(api, v->request, headers);
  v->auxiliary = IsAuxiliaryRequest(v->request);
  return v;
}

size_t MatchedPrefix(const ClientRequest& request, const ConversationSummary& prior) {
  if (prior.prefix.size() >= request.items.size()) return 0;
  for (size_t i = 0; i < prior.prefix.size(); ++i) {
    if (!SameIgnoringCacheControl(prior.prefix[i], request.Text(request.items[i]))) return 0;
  }
  return prior.prefix.size();
}

std::vector<Message> ItemMessages(const ProviderApi& api, const ClientRequest& request,
                                  size_t begin, size_t end) {
  std::vector<Message> out;
  for (size_t i = begin; i < end; ++i) {
    for (const std::string& json : api.ClientItemMessages(request, i)) {
      auto m = ParseMessage(json);
      if (m.ok()) out.push_back(std::move(*m));
    }
  }
  return out;
}

std::string SummaryMessageText(std::string_view summary) {
  return std::string(kLeadIn) + std::string(summary) + std::string(kLeadOut);
}

int64_t SummaryMessageTokens(std::string_view summary) {
  return EstimateTextTokens(kLeadIn) + EstimateTextTokens(summary) + EstimateTextTokens(kLeadOut);
}

std::optional<CutDecision> DecideCut(const ProviderApi& api, const ClientRequest& request,
                                     const PlanInput& input, std::string* why) {
  const size_t n = request.items.size();
  CutDecision d;
  d.tokens_before = EstimateRequestTokens(request);
  const int64_t fixed = FixedTokens(request);
  if (!input.force && d.tokens_before <= input.threshold) {
    *why = "under the threshold";
    return std::nullopt;
  }
  const size_t matched = input.prior ? MatchedPrefix(request, *input.prior) : 0;
  std::vector<size_t> cuts = ValidCuts(request);
  // The cached summary as is, while the kept part fits (same bytes: the
  // upstream's prompt cache keeps hitting).
  if (matched > 0 && !input.force && std::binary_search(cuts.begin(), cuts.end(), matched) &&
      fixed + SummaryMessageTokens(input.prior->summary) + request.ItemTokens(matched, n) +
              KeptPromptTokens(request, matched, input) <=
          input.threshold) {
    d.cut = matched;
    d.reuse = true;
    return d;
  }
  size_t cut = ChooseCut(request, cuts, input.keep_recent_tokens, matched);
  const bool update = matched > 0 && cut >= matched;
  if (!update) cut = ChooseCut(request, cuts, input.keep_recent_tokens, 0);
  if (cut == 0 || (update && cut == matched && !input.force)) {
    *why = "no valid cut point";
    return std::nullopt;
  }
  // The no-loop guard before any summary is written: even an empty summary
  // leaves system, tools and the kept items over the threshold.
  if (!input.force && fixed + request.ItemTokens(cut, n) + KeptPromptTokens(request, cut, input) >
                          input.threshold) {
    *why = "compaction cannot bring the request under the threshold";
    return std::nullopt;
  }
  d.cut = cut;
  d.from = update ? matched : 0;
  d.messages = ItemMessages(api, request, d.from, cut);
  if (d.messages.empty() && !update) {
    *why = "nothing to summarize before the cut";
    return std::nullopt;
  }
  if (update) d.previous = input.prior->summary;
  return d;
}

Result<std::optional<CompactPlan>> FinishPlan(const ProviderApi& api, const ClientRequest& request,
                                              const PlanInput& input, const CutDecision& decision,
                                              std::string summary, std::string* why) {
  const size_t n = request.items.size();
  CompactPlan plan;
  plan.cut = decision.cut;
  plan.reused = decision.reuse;
  plan.tokens_before = decision.tokens_before;
  plan.summary = std::move(summary);
  plan.tokens_after =
      FixedTokens(request) + SummaryMessageTokens(plan.summary) + request.ItemTokens(plan.cut, n);
  if (input.kept_prompts_budget >= 0) {
    plan.kept_prompts = KeptPrompts(request, plan.cut, input.kept_prompts_budget);
    for (size_t i : plan.kept_prompts) plan.tokens_after += request.items[i].tokens;
  }
  // The no-loop guard: never compact when it cannot get under the threshold
  // (overflow recovery only asks for a smaller request).
  if ((!input.force && plan.tokens_after > input.threshold) ||
      plan.tokens_after >= plan.tokens_before) {
    *why = "compaction cannot bring the request under the threshold";
    return std::optional<CompactPlan>();
  }
  ClientRewrite rewrite;
  rewrite.cut = plan.cut;
  rewrite.summary = SummaryMessageText(plan.summary);
  rewrite.keep = plan.kept_prompts;
  COMPACTOR_ASSIGN_OR_RETURN(plan.body, api.RewriteClientRequest(request, rewrite));
  return std::optional<CompactPlan>(std::move(plan));
}

Result<std::optional<CompactPlan>> PlanCompaction(const ProviderApi& api,
                                                  const ClientRequest& request,
                                                  const Summarizer& summarizer,
                                                  const PlanInput& input, std::string* why,
                                                  int64_t summarizer_window) {
  std::optional<CutDecision> d = DecideCut(api, request, input, why);
  if (!d) return std::optional<CompactPlan>();
  std::string summary;
  if (d->reuse) {
    summary = input.prior->summary;
  } else if (d->messages.empty()) {
    summary = d->previous;  // nothing new before the cut
  } else {
    SummaryRequest req;
    req.kind = d->previous.empty() ? SummaryKind::kHistory : SummaryKind::kUpdate;
    req.messages = d->messages;
    req.previous_summary = d->previous;
    COMPACTOR_ASSIGN_OR_RETURN(summary, SummarizeWithin(summarizer, req, summarizer_window));
  }
  return FinishPlan(api, request, input, *d, std::move(summary), why);
}

ConversationSummary SummaryOf(const ClientRequest& request, size_t cut, std::string summary) {
  ConversationSummary s;
  s.prefix.reserve(cut);
  for (size_t i = 0; i < cut && i < request.items.size(); ++i) {
    s.prefix.emplace_back(request.Text(request.items[i]));
  }
  s.summary = std::move(summary);
  return s;
}

namespace {

void StripCacheControl(nlohmann::ordered_json& j) {
  if (j.is_object()) {
    j.erase("cache_control");
    for (auto& [key, value] : j.items()) StripCacheControl(value);
  } else if (j.is_array()) {
    for (auto& v : j) StripCacheControl(v);
  }
}

// Folds one item into a prefix hash: its JSON without cache_control,
// written back in one form (the raw bytes when it does not parse).
uint64_t FoldItem(uint64_t h, std::string_view raw) {
  auto j = nlohmann::ordered_json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Fnv1a(raw, Fnv1a("\x1e", h));
  StripCacheControl(j);
  return Fnv1a(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace),
               Fnv1a("\x1e", h));
}

std::string KeyOf(uint64_t h, size_t n) { return "p1-" + Hex(h) + "-" + std::to_string(n); }

}  // namespace

std::string SummaryKey(const std::vector<std::string>& prefix) {
  uint64_t h = Fnv1a("");
  for (const std::string& item : prefix) h = FoldItem(h, item);
  return KeyOf(h, prefix.size());
}

std::vector<std::string> SummaryKeys(const ClientRequest& request) {
  std::vector<std::string> keys;
  keys.reserve(request.items.size());
  uint64_t h = Fnv1a("");
  for (size_t c = 0; c < request.items.size(); ++c) {
    keys.push_back(KeyOf(h, c));
    h = FoldItem(h, request.Text(request.items[c]));
  }
  return keys;
}

}  // namespace compactor::serve
