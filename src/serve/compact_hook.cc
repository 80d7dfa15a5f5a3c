#include "serve/compact_hook.h"

#include <algorithm>
#include <utility>

#include "serve/remote_compaction.h"
#include "serve/summary_jobs.h"
#include "serve/upstream_summarizer.h"

namespace compactor::serve {
namespace {

// What deciding one attempt's compaction came to.
struct Compaction {
  std::optional<CompactPlan> plan;
  // Without a plan: why not ("" = under the threshold, nothing to say).
  std::string why;
  bool error = false;       // a failed summary (logged every time)
  bool every_time = false;  // a reason worth logging on every request
};

// Non-owning view of a summarizer the hook owns (offline, settings models).
std::shared_ptr<const Summarizer> Borrow(const Summarizer* s) {
  return std::shared_ptr<const Summarizer>(s, [](const Summarizer*) {});
}

class CompactProxyHook : public ProxyHook {
 public:
  explicit CompactProxyHook(CompactHookOptions options)
      : options_(std::move(options)),
        env_(options_.env ? options_.env : Env::Default()),
        conversations_(env_,
                       ConversationLimits{options_.max_conversations, options_.durable_summaries}) {
    if (options_.strategy == ProxyStrategy::kNotes) {
      owned_ = NewNotesSummarizer(env_, options_.notes_file);
      history_ = NewOfflineSummarizer();
      trigger_ = NewNotesWithHistorySummarizer(env_, options_.notes_file, history_.get());
    } else if (options_.summarizer == CompactHookOptions::SummarizerKind::kModels &&
               !options_.summarizer_models.empty()) {
      ProxySummarizerOptions o;
      o.transport = options_.transport;
      o.env = env_;
      owned_ = NewModelSummarizer(options_.summarizer_models, o);
    } else {
      owned_ = NewOfflineSummarizer();
    }
  }

  std::unique_ptr<ExchangeHook> Begin(Exchange& ex) override;

  const CompactHookOptions& options() const { return options_; }
  Conversations& conversations() { return conversations_; }

  int64_t Window(const std::string& model) const {
    if (options_.context_window > 0) return options_.context_window;
    auto it = options_.model_windows.find(model);
    return it != options_.model_windows.end() ? it->second : BuiltinContextWindow(model);
  }
  // 0 for an unknown window: no proactive compaction.
  int64_t Threshold(const std::string& model) const { return ThresholdOf(Window(model)); }
  int64_t ThresholdOf(int64_t window) const {
    return window <= 0 ? 0 : window - std::min(options_.reserve_tokens, window / 2);
  }
  // The lowest threshold of any model (the threshold grows with the window).
  int64_t LowestThreshold() const {
    if (options_.context_window > 0) return ThresholdOf(options_.context_window);
    int64_t window = SmallestBuiltinContextWindow();
    for (const auto& [model, w] : options_.model_windows) {
      if (w > 0) window = std::min(window, w);
    }
    return ThresholdOf(window);
  }
  // Whether the request, without reading it, surely needs nothing before it
  // is forwarded: no compaction (its estimate is under every threshold), no
  // compaction item to expand, no trigger to answer.
  bool PassesUnread(Exchange& ex) const;
  int64_t KeepRecent(const std::string& model) const {
    int64_t threshold = Threshold(model);
    return threshold > 0 ? std::min(options_.keep_recent_tokens, threshold / 2)
                         : options_.keep_recent_tokens;
  }

  // The compaction of `request` for this attempt (`harder` > 0: an overflow
  // retry), waiting at most the deadline for a summary.
  Compaction Compact(Exchange& ex, const ProviderApi& api, const ClientRequest& request,
                     const std::string& id, int harder);
  Compaction Mask(const ProviderApi& api, const ClientRequest& request, const PlanInput& in) const;

  // The summary of items [0, end) for an answer the proxy must give
  // (Codex's compaction_trigger): the configured summarizer within the
  // deadline, else the offline one.
  std::string SummaryForTrigger(Exchange& ex, const ProviderApi& api, const ClientRequest& request,
                                const std::string& id, size_t end);

 private:
  std::shared_ptr<const Summarizer> SummarizerFor(const Exchange& ex,
                                                  const ClientRequest& request) const {
    if (options_.strategy == ProxyStrategy::kNotes ||
        options_.summarizer != CompactHookOptions::SummarizerKind::kUpstream ||
        !options_.upstream_url) {
      return Borrow(owned_.get());
    }
    UpstreamSummaryTarget t;
    t.api = request.api;
    t.url = options_.upstream_url(ex.request());
    t.model = request.model;
    t.stream = request.stream;
    t.headers = ex.request().headers;
    ProxySummarizerOptions o;
    o.transport = options_.transport;
    o.env = env_;
    o.mark_requests = options_.mark_summary_requests;
    return std::shared_ptr<const Summarizer>(NewUpstreamSummarizer(std::move(t), o));
  }
  int64_t SummarizerWindow(const ClientRequest& request) const {
    if (options_.strategy == ProxyStrategy::kNotes) return 0;  // no model reads it
    switch (options_.summarizer) {
      case CompactHookOptions::SummarizerKind::kUpstream:
        return Window(request.model);
      case CompactHookOptions::SummarizerKind::kModels:
        return options_.summarizer_models.empty()
                   ? 0
                   : options_.summarizer_models.front().context_window;
      case CompactHookOptions::SummarizerKind::kOffline:
        break;
    }
    return 0;
  }
  SummaryWork WorkFor(const Exchange& ex, const ClientRequest& request, CutDecision& d,
                      bool background) const {
    SummaryWork w;
    w.prefix = SummaryOf(request, d.cut, "").prefix;
    w.messages = std::move(d.messages);
    w.previous = d.previous;
    w.summarizer = SummarizerFor(ex, request);
    w.window = SummarizerWindow(request);
    w.background = background;
    return w;
  }
  void MaybePrepare(Exchange& ex, const ProviderApi& api, const ClientRequest& request,
                    const std::string& id, const ConversationSummary* prior);

  CompactHookOptions options_;
  Env* env_;
  std::unique_ptr<Summarizer> owned_;
  // notes only: what answers a compaction trigger (the notes and the
  // offline summary of the history it replaces), and that summarizer.
  std::unique_ptr<Summarizer> history_;
  std::unique_ptr<Summarizer> trigger_;
  Conversations conversations_;
};

Compaction CompactProxyHook::Compact(Exchange& ex, const ProviderApi& api,
                                     const ClientRequest& request, const std::string& id,
                                     int harder) {
  Compaction out;
  PlanInput in;
  in.threshold = Threshold(request.model);
  in.keep_recent_tokens = KeepRecent(request.model) >> harder;
  in.force = harder > 0;
  if (in.threshold <= 0 && !in.force) return out;  // unknown window: recovery only
  if (options_.strategy == ProxyStrategy::kMask) return Mask(api, request, in);
  if (options_.strategy == ProxyStrategy::kUserPrompts) {
    const int64_t cap = in.threshold > 0 ? in.threshold / 4 : options_.kept_prompts_tokens;
    in.kept_prompts_budget = std::min(options_.kept_prompts_tokens, cap) >> harder;
  }
  std::shared_ptr<const ConversationSummary> prior = conversations_.Prior(id);
  // A conversation new to the table (or evicted and back) may have a
  // summary in the store's cache: the same bytes as before.
  if (!prior) prior = conversations_.Restore(id, request);
  // Two rounds: a request that joined another request's summary plans again
  // with it (usually reusing it as is), then may start its own.
  for (int round = 0; round < 2; ++round) {
    in.prior = prior ? &*prior : nullptr;
    std::optional<CutDecision> d = DecideCut(api, request, in, &out.why);
    if (!d) {
      if (!in.force) MaybePrepare(ex, api, request, id, in.prior);
      if (out.why == "under the threshold") out.why.clear();
      return out;
    }
    std::string summary;
    if (d->reuse) {
      summary = prior->summary;
    } else if (d->messages.empty()) {
      summary = d->previous;  // nothing new before the cut
    } else {
      bool started = false;
      auto job = conversations_.Start(id, WorkFor(ex, request, *d, false), &started);
      if (!job.ok()) {
        out.error = true;
        out.why = job.status().ToString();
        return out;
      }
      auto end = conversations_.Wait(*job, options_.summary_deadline_ms,
                                     [&ex] { return ex.client_gone(); });
      if (end != Conversations::WaitEnd::kDone) {
        out.every_time = true;
        out.why = end == Conversations::WaitEnd::kGone
                      ? "the client went away while its summary was written"
                      : "the summary was not ready within the deadline";
        return out;
      }
      if (!started) {  // another request's summary: plan again with it
        prior = conversations_.Prior(id);
        continue;
      }
      if (!(*job)->result().ok()) {
        out.error = true;
        out.why = (*job)->result().status().ToString();
        return out;
      }
      summary = *(*job)->result();
    }
    auto plan = FinishPlan(api, request, in, *d, std::move(summary), &out.why);
    if (!plan.ok()) {
      out.error = true;
      out.why = plan.status().ToString();
    } else {
      out.plan = std::move(*plan);
    }
    return out;
  }
  out.why = "another request's summary did not cover this one";
  return out;
}

// mask: old tool results masked in place; no summary, nothing to wait for.
Compaction CompactProxyHook::Mask(const ProviderApi& api, const ClientRequest& request,
                                  const PlanInput& in) const {
  Compaction out;
  MaskInput m;
  m.threshold = in.threshold;
  m.keep_recent_tokens = in.keep_recent_tokens;
  m.force = in.force;
  std::optional<MaskedRequest> masked = PlanMaskRequest(api, request, m, &out.why);
  if (!masked) {
    if (out.why == "under the threshold") out.why.clear();
    return out;
  }
  CompactPlan plan;
  plan.body = std::move(masked->body);
  plan.tokens_before = masked->tokens_before;
  plan.tokens_after = masked->tokens_after;
  plan.masked_outputs = masked->masked;
  out.plan = std::move(plan);
  return out;
}

// A summary prepared ahead: once the input (with the summary in force, if
// any) reaches prepare_fraction of the threshold, the cut compaction would
// make now is summarized in the background, so the request that crosses the
// threshold finds it ready (and reuses it as is).
void CompactProxyHook::MaybePrepare(Exchange& ex, const ProviderApi& api,
                                    const ClientRequest& request, const std::string& id,
                                    const ConversationSummary* prior) {
  const int64_t threshold = Threshold(request.model);
  if (options_.prepare_fraction <= 0 || threshold <= 0 || conversations_.Running(id)) return;
  const size_t matched = prior ? MatchedPrefix(request, *prior) : 0;
  int64_t effective = EstimateRequestTokens(request);
  if (matched > 0) {
    effective += SummaryMessageTokens(prior->summary) - request.ItemTokens(0, matched);
  }
  if (effective <
          static_cast<int64_t>(options_.prepare_fraction * static_cast<double>(threshold)) ||
      effective > threshold) {
    return;
  }
  PlanInput in;
  in.threshold = threshold;
  in.keep_recent_tokens = KeepRecent(request.model);
  in.force = true;
  in.prior = prior;
  std::string why;
  std::optional<CutDecision> d = DecideCut(api, request, in, &why);
  // Worth a summary call: something new, at least an eighth of the threshold.
  if (!d || d->reuse || d->messages.empty() || d->cut <= matched ||
      request.ItemTokens(d->from, d->cut) < threshold / 8) {
    return;
  }
  bool started = false;
  auto job = conversations_.Start(id, WorkFor(ex, request, *d, true), &started);
  if (job.ok() && started) ex.record().extra.emplace_back("summaryPrepared", "started");
}

std::string CompactProxyHook::SummaryForTrigger(Exchange& ex, const ProviderApi& api,
                                                const ClientRequest& request, const std::string& id,
                                                size_t end) {
  CutDecision d;
  d.cut = end;
  d.messages = ItemMessages(api, request, 0, end);
  if (d.messages.empty()) return "No earlier conversation.";
  std::vector<Message> messages = d.messages;  // kept for the fallback
  bool started = false;
  // Its own job key: a trigger's summary is not the conversation's prefix summary.
  SummaryWork work = WorkFor(ex, request, d, false);
  if (trigger_) work.summarizer = Borrow(trigger_.get());  // notes: not the notes alone
  auto job = conversations_.Start(id + "#compaction", std::move(work), &started);
  if (job.ok() && conversations_.Wait(*job, options_.summary_deadline_ms, [&ex] {
        return ex.client_gone();
      }) == Conversations::WaitEnd::kDone) {
    if ((*job)->result().ok()) return *(*job)->result();
  }
  // Codex needs exactly one compaction item: the offline summary it is.
  ex.record().extra.emplace_back("compactionFallback", "offline");
  SummaryRequest req;
  req.messages = messages;
  auto offline = NewOfflineSummarizer()->Summarize(req);
  return offline.ok() ? *offline : "The earlier conversation could not be summarized.";
}

bool CompactProxyHook::PassesUnread(Exchange& ex) const {
  const ProxyRequest& req = ex.request();
  if (req.method != "POST" || FindProviderApi(req.route.api) == nullptr) return false;
  auto body = ex.DecodedBody();
  if (!body.ok()) return false;
  // The bound's first term alone (1.5 tokens a byte) rules a large body out
  // before it is scanned.
  const int64_t threshold = LowestThreshold();
  if (static_cast<int64_t>(body->size()) * 3 > threshold * 2) return false;
  std::optional<int64_t> bound = RequestTokensBound(*body);
  return bound && *bound <= threshold;
}

// One request's compaction and overflow recovery.
class CompactExchangeHook : public ExchangeHook {
 public:
  CompactExchangeHook(CompactProxyHook* owner, std::shared_ptr<const ClientRequestView> view,
                      bool answer_trigger)
      : owner_(owner),
        api_(view->api),
        view_(std::move(view)),
        id_(view_->conversation_id),
        answer_trigger_(answer_trigger) {}
  // A request forwarded unread (CompactProxyHook::PassesUnread): read in
  // AfterForward, while the upstream works on it, or once the answer is out
  // when the client names its conversation (the session header needs
  // nothing more), unless an overflow retry or the held stream needs it.
  CompactExchangeHook(CompactProxyHook* owner, const ProviderApi* api)
      : owner_(owner), api_(api), unread_(true) {}

  void BeforeForward(Exchange& ex) override;
  void AfterForward(Exchange& ex) override;
  HeadVerdict OnResponseHead(Exchange& ex, const ResponseHead& head) override;
  EventVerdict OnEvent(Exchange& ex, const SseEvent& event) override;
  BodyVerdict OnBody(Exchange& ex, std::string_view body) override;
  bool wants_events() const override { return Observing(); }
  void OnComplete(Exchange& ex) override;

 private:
  bool Observing() const {
    const ForwardedCallback* f = owner_->options().on_forwarded;
    return f != nullptr && static_cast<bool>(*f);
  }
  bool MayRetry(const Exchange& ex) const { return ex.attempt() < 2; }
  // Names the conversation's session on the response and in the log.
  void AddSession(Exchange& ex);
  // Reads a request forwarded unread, once: its view, or null when the hook
  // turns out to have no part in it (no view, auxiliary).
  const ClientRequestView* ReadUnread(Exchange& ex);
  // What BeforeForward does to a request that needs no change: the
  // conversation's summary state looked at (a summary prepared ahead may
  // start), the reason it was not compacted logged.
  void LookAtConversation(Exchange& ex, const ClientRequest& request);
  // The stream parser of a held stream, made (and the request read) when
  // first needed; null when the hook has no part in the request.
  ProviderStreamParser* Parser(Exchange& ex);
  // Adds x-compactor-compacted for the attempt the client gets (once: a
  // dropped attempt's compaction is not reported).
  void Report(Exchange& ex) {
    released_ = true;
    if (compacted_.empty()) return;
    ex.AddResponseHeader("x-compactor-compacted", std::move(compacted_));
    compacted_.clear();
  }
  bool ExpandProxyItems(Exchange& ex);
  void AnswerTrigger(Exchange& ex);
  void Apply(Exchange& ex, CompactPlan plan);
  void Explain(Exchange& ex, const Compaction& c);
  // (The proxy counts the retried attempt in compactor_overflow_retries_total.)
  BodyVerdict Overflowed() {
    ++harder_;
    return BodyVerdict::kRetry;
  }

  // The client's request, or its copy with the proxy's compaction items expanded.
  const ClientRequest& request() const { return expanded_ ? *expanded_ : view_->request; }

  CompactProxyHook* owner_;
  const ProviderApi* api_ = nullptr;
  std::shared_ptr<const ClientRequestView> view_;
  std::string id_;  // the view's conversation id
  bool answer_trigger_ = false;
  // Forwarded unread: view_ is null until AfterForward; `out_` when the
  // request turned out to be none the hook joins (no view, auxiliary).
  bool unread_ = false;
  bool out_ = false;
  bool looked_ = false;       // the conversation's state was looked at (Compact ran)
  bool hold_stream_ = false;  // this attempt's stream is held: parsed when needed
  std::optional<ClientRequest> expanded_;
  int status_ = 0;
  int harder_ = 0;  // overflow retries asked for
  bool headers_added_ = false;
  bool released_ = false;
  std::string compacted_;  // the header value, until the response is released
  std::unique_ptr<ProviderStreamParser> parser_;
  std::optional<CompactPlan> applied_;
  std::optional<std::string> local_summary_;
  LlmUsage usage_;
  bool usage_reported_ = false;
};

std::unique_ptr<ExchangeHook> CompactProxyHook::Begin(Exchange& ex) {
  if (PassesUnread(ex)) {
    // No tools: auxiliary (and no trigger to answer): stays out, as below.
    if (!ex.declares_tools()) return nullptr;
    return std::make_unique<CompactExchangeHook>(this, FindProviderApi(ex.request().route.api));
  }
  std::shared_ptr<const ClientRequestView> view = ex.client_request();
  if (view == nullptr) return nullptr;
  bool trigger = EndsInCompactionTrigger(view->request);
  bool answer = false;
  if (trigger) {
    using RC = CompactHookOptions::RemoteCompaction;
    answer =
        options_.remote_compaction == RC::kProxy ||
        (options_.remote_compaction == RC::kAuto &&
         !(options_.upstream_url && UpstreamCompactsRemotely(options_.upstream_url(ex.request()))));
  }
  if (!answer && view->auxiliary) return nullptr;
  return std::make_unique<CompactExchangeHook>(this, std::move(view), answer);
}

// False when the request refers to a summary the store does not hold (it
// was wiped or moved): the client is then answered with an error rather
// than its history silently dropped.
bool CompactExchangeHook::ExpandProxyItems(Exchange& ex) {
  const DurableSummaries* durable = owner_->options().durable_summaries;
  SummaryLookup find;
  if (durable != nullptr) find = durable->find;
  Expansion e = ExpandProxyCompactions(request(), find);
  if (!e.missing.empty()) {
    ex.record().error = "the compaction summary " + e.missing + " is not in the store";
    ex.Respond(409, {{"Content-Type", "application/json"}},
               ErrorBody(api_->name(), 409, "compaction_summary_missing",
                         "compactor serve: this conversation's compaction item refers to summary " +
                             e.missing +
                             ", which the store no longer holds (it was wiped or moved); the "
                             "history it replaced is lost: start a new conversation"));
    return false;
  }
  if (!e.body) return true;
  auto expanded = api_->ReadClientRequest(std::move(*e.body));
  if (expanded.ok()) expanded_ = std::move(*expanded);
  return true;
}

void CompactExchangeHook::AnswerTrigger(Exchange& ex) {
  const size_t end = request().items.size() - 1;  // the trigger is last
  std::string summary = owner_->SummaryForTrigger(ex, *api_, request(), id_, end);
  const int64_t before = EstimateRequestTokens(request());
  const int64_t after = SummaryMessageTokens(summary);
  // With a store, the item refers to the summary there (put now: also an
  // offline fallback's); without one it carries the text.
  std::string key;
  const DurableSummaries* durable = owner_->options().durable_summaries;
  if (durable != nullptr && durable->put && durable->find) {
    key = SummaryKey(SummaryOf(request(), end, "").prefix);
    durable->put(key, summary);
    if (durable->find(key) != summary) key.clear();  // not stored: carry the text
  }
  TriggerAnswer a = CompactionAnswer(request(), ProxyCompactionContent(key, summary), summary,
                                     before, id_.substr(0, 32));
  ex.record().compacted = true;
  ex.record().tokens_before = before;
  ex.record().tokens_after = after;
  ex.record().extra.emplace_back("compactionTrigger", "answered by the proxy");
  ex.metrics().compactions().Add();
  ex.AddResponseHeader("x-compactor-compacted", "tokens-before=" + std::to_string(before) +
                                                    "; tokens-after=" + std::to_string(after));
  local_summary_ = std::move(summary);
  ex.Respond(200, std::move(a.headers), std::move(a.body));
}

void CompactExchangeHook::Apply(Exchange& ex, CompactPlan plan) {
  ex.ReplaceBody(std::move(plan.body));
  plan.body.clear();
  ex.record().compacted = true;
  ex.record().tokens_before = plan.tokens_before;
  ex.record().tokens_after = plan.tokens_after;
  compacted_ = "tokens-before=" + std::to_string(plan.tokens_before) +
               "; tokens-after=" + std::to_string(plan.tokens_after);
  ex.metrics().compactions().Add();
  ex.metrics().tokens_saved().Add(plan.tokens_before - plan.tokens_after);
  if (plan.reused) ex.metrics().summary_cache_hits().Add();
  if (plan.masked_outputs > 0) {
    // Nothing cut: the recorded session keeps the client's messages.
    ex.record().extra.emplace_back("maskedOutputs", std::to_string(plan.masked_outputs));
  } else {
    // user-prompts: the recorded summary carries the prompts kept ahead of it.
    std::string recorded =
        plan.kept_prompts.empty()
            ? plan.summary
            : RecordedUserPromptsSummary(*api_, request(), plan.kept_prompts, plan.summary);
    ex.set_compaction(ExchangeCompaction{plan.cut, std::move(recorded), plan.tokens_before,
                                         plan.tokens_after, plan.reused});
  }
  applied_ = std::move(plan);
}

// Why a request that needed compaction was not compacted: a failed summary
// and a missed deadline every time, other reasons once per conversation.
void CompactExchangeHook::Explain(Exchange& ex, const Compaction& c) {
  if (c.why.empty()) return;
  if (c.error) {
    ex.record().extra.emplace_back("compactError", c.why);
  } else if (c.every_time || owner_->conversations().FirstWarning(id_)) {
    ex.record().extra.emplace_back("notCompacted", c.why);
  }
}

void CompactExchangeHook::AddSession(Exchange& ex) {
  const SessionResolver* session_of = owner_->options().session_of;
  std::string session = session_of != nullptr && *session_of ? (*session_of)(id_) : id_;
  ex.record().session = session;
  ex.AddResponseHeader("x-compactor-session", std::move(session));
  headers_added_ = true;
}

const ClientRequestView* CompactExchangeHook::ReadUnread(Exchange& ex) {
  if (view_ != nullptr || out_) return view_.get();
  std::shared_ptr<const ClientRequestView> view = ex.client_request();
  if (view == nullptr || view->auxiliary) {
    out_ = true;  // as when Begin stays out
    return nullptr;
  }
  api_ = view->api;
  id_ = view->conversation_id;
  if (!headers_added_) AddSession(ex);
  view_ = std::move(view);
  return view_.get();
}

// (A request forwarded unread has no proxy compaction item to expand.)
void CompactExchangeHook::LookAtConversation(Exchange& ex, const ClientRequest& request) {
  looked_ = true;
  Compaction c = owner_->Compact(ex, *api_, request, id_, 0);
  // Cannot happen (the bound is an upper bound of the estimate); would be
  // a bug of RequestTokensBound, made visible in the log.
  if (c.plan)
    ex.record().extra.emplace_back("compactError", "a request over the threshold went unread");
  Explain(ex, c);
}

// The request went upstream as the client sent it. The bound that let it go
// unread puts it under every threshold: Compact finds nothing to compact,
// and only the session header must precede the answer. When the client
// names its conversation, that is all that is done here: the request is read
// (and the conversation looked at) once the answer is out, in OnComplete,
// off the client's wait. Otherwise it is read now, while the upstream works.
void CompactExchangeHook::AfterForward(Exchange& ex) {
  if (!unread_ || view_ != nullptr || out_ || headers_added_) return;
  if (!Observing()) {
    if (const std::optional<std::string>& named = ex.named_conversation()) {
      id_ = *named;
      AddSession(ex);
      return;
    }
  }
  if (const ClientRequestView* view = ReadUnread(ex)) LookAtConversation(ex, view->request);
}

void CompactExchangeHook::BeforeForward(Exchange& ex) {
  // Attempt 0 goes unread; a retry reads it (AfterForward may have).
  if (unread_ && (ex.attempt() == 0 || ReadUnread(ex) == nullptr)) return;
  if (!headers_added_) {
    AddSession(ex);
    if (api_->name() == "openai-responses" && !ExpandProxyItems(ex)) return;
    if (answer_trigger_) {
      AnswerTrigger(ex);
      return;
    }
  }
  if (ex.attempt() > 0 && harder_ == 0) return;  // a retry of something else
  looked_ = true;
  Compaction c = owner_->Compact(ex, *api_, request(), id_, harder_);
  if (c.plan) {
    Apply(ex, std::move(*c.plan));
    return;
  }
  // Never worse than no proxy: without a compaction the request goes as the
  // client sent it (with the proxy's own compaction items expanded).
  if (expanded_ && ex.attempt() == 0) ex.ReplaceBody(request().body);
  Explain(ex, c);
}

ProviderStreamParser* CompactExchangeHook::Parser(Exchange& ex) {
  const ClientRequestView* view = parser_ == nullptr ? ReadUnread(ex) : nullptr;
  if (view != nullptr) {
    ModelConfig model;
    model.api = std::string(api_->name());
    model.model_id = view->request.model;
    parser_ = api_->NewStreamParser(model);
  }
  return out_ ? nullptr : parser_.get();
}

// What an SSE event's name says to a response held for the in-stream
// overflow retry, as the API documents its event names: an event that is
// neither an error nor content (kBeforeContent: hold on), the first content
// (kContent: release), else kRead (parse the data: an error, an unknown
// name, the other APIs' events). Anthropic's names only, as its stream
// parser reads them (src/providers/anthropic_messages.cc): an event's data
// is trusted to be of its name's type, as the API documents.
enum class HeldEvent { kBeforeContent, kContent, kRead };

HeldEvent HeldEventByName(std::string_view api, std::string_view name) {
  if (api == "anthropic") {
    if (name == "message_start" || name == "ping") return HeldEvent::kBeforeContent;
    if (name == "content_block_start") return HeldEvent::kContent;
  }
  return HeldEvent::kRead;
}

HeadVerdict CompactExchangeHook::OnResponseHead(Exchange& ex, const ResponseHead& head) {
  if (out_) return HeadVerdict::kRelay;
  status_ = head.status;
  released_ = false;
  parser_.reset();
  const bool ok = head.status / 100 == 2;
  const bool retry = MayRetry(ex);
  hold_stream_ = ok && head.event_stream && (retry || Observing());
  if (retry && (head.status >= 400 || hold_stream_)) return HeadVerdict::kHold;
  Report(ex);
  // The store's seam wants the usage of a whole (non-stream) answer.
  if (ok && !head.event_stream && Observing()) return HeadVerdict::kHold;
  return HeadVerdict::kRelay;
}

EventVerdict CompactExchangeHook::OnEvent(Exchange& ex, const SseEvent& event) {
  if (out_) return EventVerdict::kRelease;
  if (!hold_stream_) {
    Report(ex);
    return EventVerdict::kRelease;
  }
  // Held only for the retry (nothing observes the stream): the name alone
  // tells the events before the content, and the first content event, from
  // those that need their data read (errors, unknown names, nameless ones).
  if (!Observing()) {
    switch (HeldEventByName(api_->name(), event.name)) {
      case HeldEvent::kBeforeContent:
        return EventVerdict::kContinue;
      case HeldEvent::kContent:
        Report(ex);
        return EventVerdict::kRelease;
      case HeldEvent::kRead:
        break;
    }
  }
  ProviderStreamParser* parser = Parser(ex);
  if (parser == nullptr) return EventVerdict::kRelease;  // read as auxiliary: out
  StreamEventInfo info = parser->OnEvent(event.name, event.data);
  if (info.usage_reported) {
    usage_ = info.usage;
    usage_reported_ = true;
  }
  if (released_) return EventVerdict::kRelease;  // observing only
  if (info.error && info.overflow.overflow && MayRetry(ex)) {
    Overflowed();
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
  if (out_) return BodyVerdict::kRelease;
  if (status_ >= 400 && MayRetry(ex)) {
    ProviderError err = api_->ReadError(status_, body);
    if (err.overflow.overflow) return Overflowed();
  }
  if (status_ / 100 == 2 && Observing()) {
    ModelConfig model;
    model.api = std::string(api_->name());
    model.model_id = request().model;
    auto parsed = api_->ParseResponse(model, body);
    if (parsed.ok()) {
      usage_ = parsed->usage;
      usage_reported_ = true;
    }
  }
  Report(ex);
  return BodyVerdict::kRelease;
}

void CompactExchangeHook::OnComplete(Exchange& ex) {
  // Read after the answer (AfterForward): what BeforeForward does.
  if (unread_ && !looked_) {
    if (const ClientRequestView* view = ReadUnread(ex)) LookAtConversation(ex, view->request);
  }
  if (!Observing() || out_ || view_ == nullptr) return;
  ForwardedExchange f;
  f.conversation_id = id_;
  f.api = std::string(api_->name());
  f.model = request().model;
  f.target = ex.request().target;
  if (!local_summary_) f.sent_body = ex.forwarded_body();
  f.status = ex.record().status;
  f.usage = usage_;
  f.usage_reported = usage_reported_;
  f.compaction = applied_;
  f.local_compaction = local_summary_;
  (*owner_->options().on_forwarded)(f);
}

}  // namespace

std::shared_ptr<ProxyHook> NewCompactHook(CompactHookOptions options) {
  return std::make_shared<CompactProxyHook>(std::move(options));
}

}  // namespace compactor::serve
