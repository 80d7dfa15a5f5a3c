#include "serve/compact_hook.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <span>
#include <utility>

#include "compactor/message.h"

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

// How many leading items of `request` equal `prior` (ignoring cache_control).
size_t MatchedPrefix(const ClientRequest& request, const ConversationSummary& prior) {
  if (prior.prefix.size() >= request.items.size()) return 0;
  for (size_t i = 0; i < prior.prefix.size(); ++i) {
    if (!SameIgnoringCacheControl(prior.prefix[i], request.Text(request.items[i]))) return 0;
  }
  return prior.prefix.size();
}

// Items [begin, end) as pi messages for the summarizer.
std::vector<Message> MessagesOf(const ProviderApi& api, const ClientRequest& request, size_t begin,
                                size_t end) {
  std::vector<Message> out;
  for (size_t i = begin; i < end; ++i) {
    for (const std::string& json : api.ClientItemMessages(request, i)) {
      auto m = ParseMessage(json);
      if (m.ok()) out.push_back(std::move(*m));
    }
  }
  return out;
}

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

int64_t SummaryMessageTokens(std::string_view summary) {
  return EstimateTextTokens(kLeadIn) + EstimateTextTokens(summary) + EstimateTextTokens(kLeadOut);
}

Result<std::string> Summarize(const Summarizer& summarizer, std::span<const Message> messages,
                              const std::string& previous) {
  SummaryRequest req;
  req.kind = previous.empty() ? SummaryKind::kHistory : SummaryKind::kUpdate;
  req.messages = messages;
  req.previous_summary = previous;
  return summarizer.Summarize(req);
}

}  // namespace

int64_t BuiltinContextWindow(std::string_view model) {
  struct Family {
    std::string_view prefix;
    int64_t window;
  };
  static constexpr Family kFamilies[] = {
      {"claude", 200'000}, {"gpt-4.1", 1'047'576}, {"gpt-5", 400'000},    {"o3", 200'000},
      {"o4", 200'000},     {"gpt-4o", 128'000},    {"gemini", 1'048'576},
  };
  for (const Family& f : kFamilies) {
    if (StartsWith(model, f.prefix)) return f.window;
  }
  return 128'000;
}

std::string ConversationId(const ClientRequest& request, const HeaderList& headers) {
  for (std::string_view name : {"x-claude-code-session-id", "session-id", "session_id"}) {
    std::string_view v = HeaderValue(headers, name);
    if (!v.empty()) return std::string(v);
  }
  auto key = request.hints.find("prompt_cache_key");
  if (key != request.hints.end() && !key->second.empty()) return key->second;
  uint64_t h = Fnv1a(request.api);
  h = Fnv1a(request.Text(request.system), h);
  h = Fnv1a(request.Text(request.tools), h);
  if (!request.items.empty()) h = Fnv1a(request.Text(request.items.front()), h);
  return "h-" + Hex(h);
}

bool IsAuxiliaryRequest(const ClientRequest& request) { return request.tools.empty(); }

int64_t EstimateRequestTokens(const ClientRequest& request) {
  return EstimateTextTokens(request.Text(request.system)) +
         EstimateTextTokens(request.Text(request.tools)) +
         request.ItemTokens(0, request.items.size());
}

Result<std::optional<CompactPlan>> PlanCompaction(const ProviderApi& api,
                                                  const ClientRequest& request,
                                                  const Summarizer& summarizer,
                                                  const PlanInput& input, std::string* why) {
  const size_t n = request.items.size();
  CompactPlan plan;
  plan.tokens_before = EstimateRequestTokens(request);
  const int64_t fixed = plan.tokens_before - request.ItemTokens(0, n);
  if (!input.force && plan.tokens_before <= input.threshold) {
    *why = "under the threshold";
    return std::optional<CompactPlan>();
  }
  const size_t matched = input.prior ? MatchedPrefix(request, *input.prior) : 0;
  std::vector<size_t> cuts = ValidCuts(request);
  // The cached summary as is, while the kept part fits (same bytes: the
  // upstream's prompt cache keeps hitting).
  if (matched > 0 && !input.force && std::binary_search(cuts.begin(), cuts.end(), matched) &&
      fixed + SummaryMessageTokens(input.prior->summary) + request.ItemTokens(matched, n) <=
          input.threshold) {
    plan.cut = matched;
    plan.summary = input.prior->summary;
    plan.reused = true;
  } else {
    size_t cut = ChooseCut(request, cuts, input.keep_recent_tokens, matched);
    const bool update = matched > 0 && cut >= matched;
    if (!update) cut = ChooseCut(request, cuts, input.keep_recent_tokens, 0);
    if (cut == 0 || (update && cut == matched && !input.force)) {
      *why = "no valid cut point";
      return std::optional<CompactPlan>();
    }
    std::vector<Message> messages = MessagesOf(api, request, update ? matched : 0, cut);
    if (messages.empty() && !update) {
      *why = "nothing to summarize before the cut";
      return std::optional<CompactPlan>();
    }
    std::string previous = update ? input.prior->summary : std::string();
    if (messages.empty()) {
      plan.summary = previous;
    } else {
      COMPACTOR_ASSIGN_OR_RETURN(plan.summary, Summarize(summarizer, messages, previous));
    }
    plan.cut = cut;
  }
  plan.tokens_after = fixed + SummaryMessageTokens(plan.summary) + request.ItemTokens(plan.cut, n);
  // The no-loop guard: never compact when it cannot get under the threshold
  // (overflow recovery only asks for a smaller request).
  if ((!input.force && plan.tokens_after > input.threshold) ||
      plan.tokens_after >= plan.tokens_before) {
    *why = "compaction cannot bring the request under the threshold";
    return std::optional<CompactPlan>();
  }
  ClientRewrite rewrite;
  rewrite.cut = plan.cut;
  rewrite.summary = std::string(kLeadIn) + plan.summary + std::string(kLeadOut);
  COMPACTOR_ASSIGN_OR_RETURN(plan.body, api.RewriteClientRequest(request, rewrite));
  return std::optional<CompactPlan>(std::move(plan));
}

namespace {

class CompactProxyHook;

// One request's compaction and overflow recovery.
class CompactExchangeHook : public ExchangeHook {
 public:
  CompactExchangeHook(CompactProxyHook* owner, const ProviderApi* api, ClientRequest request,
                      std::string id)
      : owner_(owner), api_(api), request_(std::move(request)), id_(std::move(id)) {}

  void BeforeForward(Exchange& ex) override;
  HeadVerdict OnResponseHead(Exchange& ex, const ResponseHead& head) override;
  EventVerdict OnEvent(Exchange& ex, const SseEvent& event) override;
  BodyVerdict OnBody(Exchange& ex, std::string_view body) override;

 private:
  bool MayRetry(const Exchange& ex) const { return ex.attempt() < 2; }
  // Adds x-compactor-compacted for the attempt the client gets (once: a
  // dropped attempt's compaction is not reported).
  void Report(Exchange& ex) {
    if (compacted_.empty()) return;
    ex.AddResponseHeader("x-compactor-compacted", std::move(compacted_));
    compacted_.clear();
  }
  BodyVerdict Overflowed(Exchange& ex);

  CompactProxyHook* owner_;
  const ProviderApi* api_;
  ClientRequest request_;
  std::string id_;
  int status_ = 0;
  int harder_ = 0;  // overflow retries asked for
  bool headers_added_ = false;
  std::string compacted_;  // the header value, until the response is released
  std::unique_ptr<ProviderStreamParser> parser_;
};

class CompactProxyHook : public ProxyHook {
 public:
  CompactProxyHook(CompactHookOptions options, const Summarizer* summarizer)
      : options_(std::move(options)), summarizer_(summarizer) {
    if (summarizer_ == nullptr) {
      owned_ = NewOfflineSummarizer();
      summarizer_ = owned_.get();
    }
  }

  std::unique_ptr<ExchangeHook> Begin(Exchange& ex) override {
    std::string_view api_name = ex.request().route.api;
    if (api_name.empty() || ex.request().method != "POST") return nullptr;
    const ProviderApi* api = FindProviderApi(api_name);
    auto body = ex.DecodedBody();
    if (api == nullptr || !body.ok()) return nullptr;
    auto request = api->ReadClientRequest(std::string(*body));
    if (!request.ok() || IsAuxiliaryRequest(*request)) return nullptr;
    std::string id = ConversationId(*request, ex.request().headers);
    return std::make_unique<CompactExchangeHook>(this, api, std::move(*request), std::move(id));
  }

  int64_t Threshold(const std::string& model) const {
    int64_t window = options_.context_window;
    if (window <= 0) {
      auto it = options_.model_windows.find(model);
      window = it != options_.model_windows.end() ? it->second : BuiltinContextWindow(model);
    }
    return window - std::min(options_.reserve_tokens, window / 2);
  }
  int64_t KeepRecent(const std::string& model) const {
    return std::min(options_.keep_recent_tokens, Threshold(model) / 2);
  }

  // Plans with the conversation's cached summary and stores the new one.
  // `why` is logged once per conversation by the caller when `first_why`.
  Result<std::optional<CompactPlan>> Plan(const ProviderApi& api, const ClientRequest& request,
                                          const std::string& id, int harder, std::string* why,
                                          bool* first_why) {
    std::optional<ConversationSummary> prior;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = conversations_.find(id);
      if (it != conversations_.end()) prior = it->second;
    }
    PlanInput in;
    in.threshold = Threshold(request.model);
    in.keep_recent_tokens = KeepRecent(request.model) >> harder;
    in.force = harder > 0;
    in.prior = prior ? &*prior : nullptr;
    COMPACTOR_ASSIGN_OR_RETURN(auto plan, PlanCompaction(api, request, *summarizer_, in, why));
    std::lock_guard<std::mutex> lock(mu_);
    if (plan && !plan->reused) {
      ConversationSummary& s = conversations_[id];
      s.prefix.clear();
      for (size_t i = 0; i < plan->cut; ++i) {
        s.prefix.emplace_back(request.Text(request.items[i]));
      }
      s.summary = plan->summary;
    }
    if (!plan && *why != "under the threshold") *first_why = warned_.insert(id).second;
    return plan;
  }

 private:
  CompactHookOptions options_;
  const Summarizer* summarizer_;
  std::unique_ptr<Summarizer> owned_;
  std::mutex mu_;
  std::map<std::string, ConversationSummary> conversations_;
  std::set<std::string> warned_;
};

void CompactExchangeHook::BeforeForward(Exchange& ex) {
  if (!headers_added_) {
    ex.AddResponseHeader("x-compactor-session", id_);
    ex.record().session = id_;
    headers_added_ = true;
  }
  if (ex.attempt() > 0 && harder_ == 0) return;  // a retry of something else
  std::string why;
  bool first_why = false;
  auto plan = owner_->Plan(*api_, request_, id_, harder_, &why, &first_why);
  if (!plan.ok()) {
    // Never worse than no proxy: a failed summary forwards the request as is.
    ex.record().extra.emplace_back("compactError", plan.status().ToString());
    return;
  }
  if (!plan->has_value()) {
    // Why a request over its threshold was not compacted, once per conversation.
    if (first_why) ex.record().extra.emplace_back("notCompacted", why);
    return;
  }
  CompactPlan& p = **plan;
  ex.ReplaceBody(std::move(p.body));
  ex.record().compacted = true;
  ex.record().tokens_before = p.tokens_before;
  ex.record().tokens_after = p.tokens_after;
  compacted_ = "tokens-before=" + std::to_string(p.tokens_before) +
               "; tokens-after=" + std::to_string(p.tokens_after);
  ex.metrics().compactions().Add();
  ex.metrics().tokens_saved().Add(p.tokens_before - p.tokens_after);
  if (p.reused) ex.metrics().summary_cache_hits().Add();
}

HeadVerdict CompactExchangeHook::OnResponseHead(Exchange& ex, const ResponseHead& head) {
  status_ = head.status;
  parser_.reset();
  if (!MayRetry(ex)) {
    Report(ex);
    return HeadVerdict::kRelay;
  }
  if (head.status >= 400) return HeadVerdict::kHold;
  if (head.status / 100 == 2 && head.event_stream) {
    ModelConfig model;
    model.api = std::string(api_->name());
    model.model_id = request_.model;
    parser_ = api_->NewStreamParser(model);
    return HeadVerdict::kHold;
  }
  Report(ex);
  return HeadVerdict::kRelay;
}

BodyVerdict CompactExchangeHook::Overflowed(Exchange& ex) {
  ++harder_;
  ex.metrics().overflow_retries().Add();
  return BodyVerdict::kRetry;
}

EventVerdict CompactExchangeHook::OnEvent(Exchange& ex, const SseEvent& event) {
  if (parser_ == nullptr) {
    Report(ex);
    return EventVerdict::kRelease;
  }
  StreamEventInfo info = parser_->OnEvent(event.name, event.data);
  if (info.error && info.overflow.overflow && MayRetry(ex)) {
    Overflowed(ex);
    return EventVerdict::kRetry;
  }
  // Hold back only what precedes the first content-bearing event.
  if (info.content_started || info.error || info.complete) {
    Report(ex);
    return EventVerdict::kRelease;
  }
  return EventVerdict::kContinue;
}

BodyVerdict CompactExchangeHook::OnBody(Exchange& ex, std::string_view body) {
  if (status_ >= 400 && MayRetry(ex)) {
    ProviderError err = api_->ReadError(status_, body);
    if (err.overflow.overflow) return Overflowed(ex);
  }
  Report(ex);
  return BodyVerdict::kRelease;
}

}  // namespace

std::shared_ptr<ProxyHook> NewCompactHook(CompactHookOptions options,
                                          const Summarizer* summarizer) {
  return std::make_shared<CompactProxyHook>(std::move(options), summarizer);
}

}  // namespace compactor::serve
