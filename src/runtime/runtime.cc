#include "compactor/runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <set>
#include <utility>

#include "compactor/entries.h"
#include "compactor/js_json.h"
#include "compactor/message.h"
#include "compactor/overflow.h"
#include "compactor/policy.h"
#include "compactor/prune.h"
#include "compactor/strategy.h"
#include "compactor/writer.h"

namespace compactor {

namespace {

// Our own wording (omp's auto-continue is a developer message; a user message
// is what every provider accepts).
constexpr std::string_view kAutoContinueText =
    "The conversation was compacted to free context. Resume the most recent request where you "
    "left off: re-read the messages kept after the summary, let the latest request override "
    "older plans in the summary, and if nothing is left to do, say so briefly.";

// Contexts as the runtime measures them: with the strategies' expander.
ContextOptions ExpandingOptions() {
  ContextOptions co;
  co.expander = StrategyExpander();
  return co;
}

// A message held back while a compaction runs or tool results are pending.
struct Held {
  std::string json;
  bool queued_user = false;  // QueueUserMessage (reported as delivered) vs AppendMessage
};

// The fields of an assistant message the overflow rules read.
OverflowInput OverflowFacts(const Message& msg, const TurnOutcome& outcome) {
  OverflowInput in;
  in.stop_reason = msg.stop_reason;
  in.error_message = msg.error_message;
  if (msg.usage) {
    in.input = msg.usage->input;
    in.output = msg.usage->output;
    in.cache_read = msg.usage->cache_read;
    in.cache_write = msg.usage->cache_write;
  }
  in.http_status = outcome.http_status;
  return in;
}

}  // namespace

std::string_view CompactionReasonName(CompactionReason reason) {
  switch (reason) {
    case CompactionReason::kManual:
      return "manual";
    case CompactionReason::kThreshold:
      return "threshold";
    case CompactionReason::kOverflow:
      return "overflow";
    case CompactionReason::kIncomplete:
      return "incomplete";
    case CompactionReason::kIdle:
      return "idle";
  }
  return "unknown";
}

struct Runtime::State {
  RuntimeOptions o;
  Env* env = nullptr;  // never null once opened

  mutable std::mutex mu;
  std::string path;
  std::string leaf;  // id of the current leaf ("" for a session without entries)
  // Cached parse of the file; brought up to date lazily after writes: in
  // place (Session::Refresh) when nobody else holds it, else read anew.
  std::shared_ptr<Session> session;
  bool dirty = true;
  std::vector<std::string> new_ids;  // ids written since `session` was loaded
  // The context of the leaf, extended entry by entry (docs/incremental.md).
  ContextCache contexts{ExpandingOptions()};

  bool in_turn = false;
  bool discard_turn = false;  // the running turn was aborted by CompactNow
  bool compacting = false;
  std::deque<Held> held;
  std::set<std::string> pending_tool_calls;  // of the last assistant, not yet answered
  std::optional<std::string> deferred_manual;

  int overflow_count = 0;
  int incomplete_count = 0;
  int auto_continues = 0;
  // Loop guard: the leaf right after our latest compaction (new content = the
  // leaf moved on), and whether that compaction left the context over the threshold.
  std::optional<std::string> compacted_leaf;
  bool last_ineffective = false;
  double last_after_tokens = 0;
  bool blocked_warned = false;

  int64_t last_activity_ms = 0;
  bool idle_armed = false;

  // Callbacks to run once the lock is released.
  std::vector<std::function<void()>> outbox;

  // ---- helpers (mu held) ----

  void Emit(RuntimeEvent e) {
    if (o.on_event) outbox.push_back([f = o.on_event, e = std::move(e)] { f(e); });
  }
  void Warn(std::string message) {
    RuntimeEvent e;
    e.kind = RuntimeEvent::Kind::kWarning;
    e.error = std::move(message);
    Emit(std::move(e));
  }
  // Runs the outbox without the lock.
  void Drain(std::unique_lock<std::mutex>& lk) {
    while (!outbox.empty()) {
      std::vector<std::function<void()>> calls;
      calls.swap(outbox);
      lk.unlock();
      for (auto& c : calls) c();
      lk.lock();
    }
  }

  CompactionSettings Settings() {
    CompactionSettings s = o.settings;
    if (o.settings_source) {
      auto r = o.settings_source->Get();
      if (r.ok()) {
        s = *r;
      } else {
        s = o.settings_source->last_good();
        Warn("settings: " + r.status().message() + " (using the last good settings)");
      }
    }
    if (o.model.context_window > 0) s.context_window = o.model.context_window;
    return s;
  }

  static bool AutoEnabled(const CompactionSettings& s) { return s.enabled && s.strategy != "off"; }

  Result<std::shared_ptr<Session>> Load() {
    if (dirty && session && session.use_count() == 1) {
      // Nobody else holds it (copies are only made under `mu`), so it may
      // change in place; the fence pairs with the release of the last copy.
      std::atomic_thread_fence(std::memory_order_acquire);
      auto refreshed = session->Refresh();
      if (refreshed.ok()) {
        if (refreshed->reloaded) contexts.Reset();
        new_ids.clear();
        dirty = false;
      }
    }
    if (dirty || !session) {
      LoadOptions load;
      load.env = env;
      // Every check estimates the context: measured once while indexing
      // (and by Refresh for new entries), never re-read per turn.
      load.message_observer = TokenEstimateObserver();
      COMPACTOR_ASSIGN_OR_RETURN(std::unique_ptr<Session> fresh, Session::Open(path, load));
      contexts.Reset();  // it knows the old session by its address
      session = std::move(fresh);
      new_ids.clear();
      dirty = false;
    }
    return session;
  }

  // The context of the leaf, incrementally (ContextCache).
  Result<std::shared_ptr<const SessionContext>> Context(const Session& sess) {
    std::optional<std::string> at;
    if (!leaf.empty()) at = leaf;
    return contexts.Get(sess, at);
  }

  Result<double> Measure() {
    COMPACTOR_ASSIGN_OR_RETURN(std::shared_ptr<Session> sess, Load());
    COMPACTOR_ASSIGN_OR_RETURN(std::shared_ptr<const SessionContext> ctx, Context(*sess));
    return EstimateCurrentContextTokens(*sess, *ctx, o.counter).tokens;
  }

  void RebuiltCallback() {
    if (!o.on_context_rebuilt) return;
    auto sess = Load();
    if (!sess.ok()) {
      Warn("reloading the session after compaction: " + sess.status().message());
      return;
    }
    auto ctx = Context(**sess);
    if (!ctx.ok()) {
      Warn("rebuilding the context: " + ctx.status().message());
      return;
    }
    outbox.push_back([f = o.on_context_rebuilt, s = *sess, c = *ctx] { f(*s, *c); });
  }

  void TrackToolCalls(const Message& m) {
    if (m.role == Role::kAssistant) {
      pending_tool_calls.clear();
      for (const ContentBlock& b : m.content)
        if (b.kind == ContentBlock::Kind::kToolCall) pending_tool_calls.insert(b.tool_call_id);
    } else if (m.role == Role::kToolResult) {
      pending_tool_calls.erase(m.tool_call_id);
    }
  }

  Status WriteEntryLine(const std::string& id, const std::string& line) {
    COMPACTOR_RETURN_IF_ERROR(AppendLines(path, {line}, AppendOptions{.env = env}));
    leaf = id;
    new_ids.push_back(id);
    dirty = true;
    return Status::Ok();
  }

  Result<std::string> NewId() {
    COMPACTOR_ASSIGN_OR_RETURN(std::shared_ptr<Session> sess, Load());
    // The cached session may predate our latest writes; their ids are passed
    // separately so no reload is needed per append.
    return NewEntryId(*sess, new_ids, env);
  }

  // Writes one message entry as a child of the leaf.
  Result<std::string> WriteMessage(std::string_view message_json, Message* parsed) {
    COMPACTOR_ASSIGN_OR_RETURN(std::string canonical, JsCanonicalJson(message_json));
    COMPACTOR_ASSIGN_OR_RETURN(Message m, ParseMessage(canonical));
    COMPACTOR_ASSIGN_OR_RETURN(std::string id, NewId());
    std::string line = MakeMessageEntry({id, leaf, FormatIsoTimestamp(env->NowMs())}, canonical);
    COMPACTOR_RETURN_IF_ERROR(WriteEntryLine(id, line));
    TrackToolCalls(m);
    if (parsed) *parsed = std::move(m);
    return id;
  }

  // Writes held messages that may be written now: the agent's own messages
  // always, queued user messages only when no tool call awaits its result (a
  // user message between a tool call and its result breaks the pairing
  // providers require). Returns the queued user messages written.
  Result<std::vector<std::string>> FlushHeld() {
    std::vector<std::string> delivered;
    std::deque<Held> keep;
    while (!held.empty()) {
      Held h = std::move(held.front());
      held.pop_front();
      if (h.queued_user && (!pending_tool_calls.empty() || in_turn)) {
        keep.push_back(std::move(h));
        continue;
      }
      Message m;
      auto id = WriteMessage(h.json, &m);
      if (!id.ok()) {
        held.push_front(std::move(h));
        for (auto& k : keep) held.push_back(std::move(k));
        return id.status();
      }
      if (h.queued_user) {
        delivered.push_back(std::move(h.json));
        auto_continues = 0;
      }
    }
    held = std::move(keep);
    if (!delivered.empty() && o.on_delivered)
      outbox.push_back([f = o.on_delivered, d = delivered] { f(d); });
    return delivered;
  }

  bool HasNewContent() const { return !compacted_leaf || *compacted_leaf != leaf; }

  std::optional<ModelInfo> PromotionTarget() const {
    for (const ModelInfo& m : o.promotion_models) {
      if (m.id == o.model.id || m.context_window <= o.model.context_window) continue;
      if (o.model_available && !o.model_available(m)) continue;
      return m;
    }
    return std::nullopt;
  }

  // Switches to a larger-window model: a model_change entry records it and no
  // compaction happens (omp's context promotion).
  Result<ModelInfo> Promote(const ModelInfo& target, CompactionReason reason, double tokens) {
    RuntimeEvent start;
    start.kind = RuntimeEvent::Kind::kCompactionStart;
    start.reason = reason;
    start.action = "promote";
    start.tokens_before = tokens;
    start.model = target.id;
    Emit(start);
    RuntimeEvent end = start;
    end.kind = RuntimeEvent::Kind::kCompactionEnd;
    auto fail = [&](const Status& st) {
      end.error = st.message();
      Emit(end);
      return st;
    };
    auto new_id = NewId();
    if (!new_id.ok()) return fail(new_id.status());
    const std::string id = *new_id;
    std::string line = "{\"type\":\"model_change\",\"id\":";
    AppendJsString(line, id);
    line += ",\"parentId\":";
    if (leaf.empty()) {
      line += "null";
    } else {
      AppendJsString(line, leaf);
    }
    line += ",\"timestamp\":";
    AppendJsString(line, FormatIsoTimestamp(env->NowMs()));
    line += ",\"provider\":";
    AppendJsString(line, target.provider);
    line += ",\"modelId\":";
    AppendJsString(line, target.id);
    line += "}";
    if (Status st = WriteEntryLine(id, line); !st.ok()) return fail(st);
    o.model = target;
    end.tokens_after = tokens;
    end.entry_id = id;
    end.will_retry =
        reason == CompactionReason::kOverflow || reason == CompactionReason::kIncomplete;
    Emit(end);
    return target;
  }

  // Plans and applies tool-output pruning; returns the tokens saved (0 = nothing pruned).
  Result<int64_t> Prune(const CompactionSettings& s, double tokens_before) {
    COMPACTOR_ASSIGN_OR_RETURN(std::shared_ptr<Session> sess, Load());
    PruneOptions po;
    po.protect_tokens = s.pruning.protect_tokens;
    po.minimum_savings = s.pruning.minimum_savings;
    po.protected_tools = s.pruning.protected_tools;
    po.only_in_context = true;
    std::optional<size_t> leaf_index;
    if (!leaf.empty()) leaf_index = sess->Find(leaf);
    COMPACTOR_ASSIGN_OR_RETURN(RewritePlan plan, PlanPrune(*sess, leaf_index, po));
    if (plan.outputs.empty()) return int64_t{0};
    RuntimeEvent e;
    e.kind = RuntimeEvent::Kind::kCompactionStart;
    e.reason = CompactionReason::kThreshold;
    e.action = "prune";
    e.tokens_before = tokens_before;
    Emit(e);
    WriteRewrittenOptions w;
    w.env = env;
    auto written = WriteRewrittenSession(*sess, path, plan, w);
    e.kind = RuntimeEvent::Kind::kCompactionEnd;
    if (!written.ok()) {
      e.error = written.status().message();
      Emit(e);
      return written.status();
    }
    dirty = true;
    // The provider's usage still counts the pruned outputs until the next
    // response, so the saving is subtracted rather than re-measured.
    e.tokens_after = std::max(0.0, tokens_before - static_cast<double>(plan.tokens_saved));
    Emit(e);
    RebuiltCallback();
    return plan.tokens_saved;
  }

  struct Compacted {
    CompactionResult result;
    double tokens_after = 0;
    std::vector<std::string> delivered;
  };

  // Runs the engine without the lock (messages arriving meanwhile are held),
  // then writes the held messages after the compaction entry.
  Result<Compacted> Compact(std::unique_lock<std::mutex>& lk, CompactionReason reason,
                            const CompactionSettings& settings, std::string instructions,
                            bool will_retry, double tokens_before) {
    if (compacting) return Status::FailedPrecondition("Compaction already in progress");
    compacting = true;
    idle_armed = false;
    CompactOptions co;
    co.settings = settings;
    const CompactionStrategy* strategy = &DefaultStrategy();
    if (settings.strategy != "off") {
      auto named = ParseStrategy(settings.strategy);
      if (!named.ok()) {
        compacting = false;
        return named.status();
      }
      strategy = *named;
    }
    // A strategy that starts a new session (handoff) would resend the
    // overflowing input (oh-my-pi's rule): overflow and incomplete recovery always use
    // the default strategy.
    if (strategy->output() == CompactionOutput::kNewSession &&
        (reason == CompactionReason::kOverflow || reason == CompactionReason::kIncomplete))
      strategy = &DefaultStrategy();
    co.strategy = strategy;
    co.summarizer = o.summarizer;
    co.instructions = std::move(instructions);
    if (!leaf.empty()) co.leaf_id = leaf;
    co.hooks = o.hooks;
    co.notes_path = o.notes_path;
    co.env = env;
    const std::string file = path;

    RuntimeEvent ev;
    ev.kind = RuntimeEvent::Kind::kCompactionStart;
    ev.reason = reason;
    ev.action = strategy->output() == CompactionOutput::kNewSession ? "handoff" : "compact";
    ev.strategy = std::string(strategy->name());
    ev.tokens_before = tokens_before;
    ev.will_retry = will_retry;
    Emit(ev);
    Drain(lk);
    lk.unlock();
    Result<CompactionResult> r = CompactFile(file, co);
    lk.lock();
    compacting = false;

    ev.kind = RuntimeEvent::Kind::kCompactionEnd;
    Compacted out;
    if (!r.ok()) {
      ev.error = r.status().message();
      ev.will_retry = false;
    } else {
      out.result = *r;
      if (r->compacted) {
        if (r->output == CompactionOutput::kNewSession && !r->output_path.empty() &&
            r->output_path != path) {
          path = r->output_path;
          session.reset();  // another file: read it in full
          contexts.Reset();
        }
        dirty = true;
        auto sess = Load();
        if (sess.ok()) {
          auto li = (*sess)->Leaf();
          leaf = li ? (*sess)->entry(*li).id : "";
        }
        ev.entry_id = r->entry_id;
        compacted_leaf = leaf;
        blocked_warned = false;
      } else {
        ev.skipped = true;
        ev.skipped_reason = r->skipped_reason;
        ev.will_retry = false;
        if (reason == CompactionReason::kThreshold || reason == CompactionReason::kIdle) {
          // Nothing could be compacted (everything is inside the kept window,
          // or a hook cancelled): trying again at every step until the
          // context grew would only repeat the same answer.
          last_ineffective = true;
          last_after_tokens = tokens_before;
          blocked_warned = false;
        }
      }
    }
    // Held messages go after the compaction entry whatever happened.
    auto delivered = FlushHeld();
    if (delivered.ok()) {
      out.delivered = std::move(*delivered);
    } else {
      Warn("writing held messages: " + delivered.status().message());
    }
    auto after = Measure();
    if (after.ok()) {
      out.tokens_after = *after;
      ev.tokens_after = *after;
      if (out.result.compacted) {
        last_after_tokens = *after;
        auto d = ShouldCompact(*after, settings.context_window, settings);
        last_ineffective = d.ok() && d->compact;
      }
    }
    Emit(ev);
    if (out.result.compacted) RebuiltCallback();
    if (!r.ok()) return r.status();
    return out;
  }

  // The manual compaction, shared by CompactNow, RequestCompaction and the
  // deferred request.
  Result<Compacted> Manual(std::unique_lock<std::mutex>& lk, std::string instructions) {
    CompactionSettings s = Settings();
    COMPACTOR_ASSIGN_OR_RETURN(double tokens, Measure());
    return Compact(lk, CompactionReason::kManual, s, std::move(instructions), false, tokens);
  }

  // Threshold check after a good response (pruning first when enabled).
  // Sets *compacted when a compaction (not a prune or promotion) happened.
  Result<RuntimeAction> Threshold(std::unique_lock<std::mutex>& lk, bool* compacted) {
    RuntimeAction action;
    CompactionSettings s = Settings();
    if (!AutoEnabled(s) || !HasNewContent()) return action;
    COMPACTOR_ASSIGN_OR_RETURN(double tokens, Measure());
    auto decide = [&](double t) -> Result<bool> {
      COMPACTOR_ASSIGN_OR_RETURN(TriggerDecision d, ShouldCompact(t, s.context_window, s));
      return d.compact;
    };
    auto over = decide(tokens);
    if (!over.ok()) {
      Warn("threshold check: " + over.status().message());
      return action;
    }
    if (!*over) return action;
    if (last_ineffective && tokens < last_after_tokens + o.ineffective_regrowth_tokens) {
      if (!blocked_warned) {
        blocked_warned = true;
        Warn(
            fmt::format("the latest compaction left the context over the threshold ({} tokens); "
                        "automatic compaction waits until it grew by {} tokens",
                        static_cast<int64_t>(last_after_tokens), o.ineffective_regrowth_tokens));
      }
      return action;
    }
    if (s.pruning.enabled) {
      COMPACTOR_ASSIGN_OR_RETURN(int64_t saved, Prune(s, tokens));
      if (saved > 0) {
        tokens = std::max(0.0, tokens - static_cast<double>(saved));
        COMPACTOR_ASSIGN_OR_RETURN(bool still, decide(tokens));
        if (!still) return action;
      }
    }
    if (o.promote_on_threshold) {
      if (auto target = PromotionTarget()) {
        COMPACTOR_ASSIGN_OR_RETURN(ModelInfo m,
                                   Promote(*target, CompactionReason::kThreshold, tokens));
        action.kind = RuntimeAction::Kind::kSwitchModel;
        action.model = m;
        return action;
      }
    }
    auto c = Compact(lk, CompactionReason::kThreshold, s, "", false, tokens);
    if (!c.ok()) return action;  // reported by the end event; the agent carries on
    *compacted = c->result.compacted;
    action.delivered = std::move(c->delivered);
    return action;
  }
  // After an overflow or a truncated (length) response, which is dropped
  // (never written), so the retried request does not contain it and no
  // compaction sees it: compacts or promotes the model and asks for a retry,
  // or gives up.
  Result<RuntimeAction> RecoverDroppedTurn(std::unique_lock<std::mutex>& lk,
                                           const TurnOutcome& outcome, const CompactionSettings& s,
                                           bool overflow) {
    const CompactionReason reason =
        overflow ? CompactionReason::kOverflow : CompactionReason::kIncomplete;
    int& count = overflow ? overflow_count : incomplete_count;
    const int cap = overflow ? o.max_overflow_compactions : o.max_incomplete_recoveries;
    COMPACTOR_ASSIGN_OR_RETURN(double tokens, Measure());
    if (count >= cap) {
      count = 0;
      return GiveUpRecovery(outcome, overflow, cap);
    }
    ++count;
    RuntimeAction action;
    bool need_compaction = overflow;
    if (!overflow) {
      // Compaction cannot raise an output cap: compact only when the context
      // is over the threshold too, otherwise just retry (omp #8277).
      auto d = ShouldCompact(tokens, s.context_window, s);
      need_compaction = d.ok() && d->compact;
    }
    if (!need_compaction) {
      action.kind = RuntimeAction::Kind::kRetryTurn;
      return action;
    }
    if (o.promote_on_overflow) {
      if (auto target = PromotionTarget()) {
        COMPACTOR_ASSIGN_OR_RETURN(ModelInfo m, Promote(*target, reason, tokens));
        action.kind = RuntimeAction::Kind::kSwitchModel;
        action.retry = true;
        action.model = m;
        return action;
      }
    }
    action.kind = RuntimeAction::Kind::kGiveUp;
    if (!AutoEnabled(s)) {
      action.error = overflow ? "Context overflow and automatic compaction is disabled."
                              : "Incomplete response over the threshold and automatic "
                                "compaction is disabled.";
      return action;
    }
    const std::string prefix =
        overflow ? "Context overflow recovery failed: " : "Incomplete response recovery failed: ";
    if (!HasNewContent()) {
      action.error = prefix +
                     "nothing was added since the last compaction, so compacting again cannot "
                     "shrink the request.";
      return action;
    }
    auto c = Compact(lk, reason, s, "", true, tokens);
    if (!c.ok()) {
      action.error = prefix + c.status().message();
    } else if (!c->result.compacted) {
      action.error = prefix + c->result.skipped_reason;
    } else {
      action.kind = RuntimeAction::Kind::kRetryTurn;
      action.delivered = std::move(c->delivered);
    }
    return action;
  }

  // The recovery cap is reached: no more compact-and-retry.
  Result<RuntimeAction> GiveUpRecovery(const TurnOutcome& outcome, bool overflow, int cap) {
    RuntimeAction action;
    action.kind = RuntimeAction::Kind::kGiveUp;
    if (overflow) {
      action.error = fmt::format(
          "Context overflow recovery failed after {} compact-and-retry attempts. Try reducing "
          "context or switching to a larger-context model.",
          cap);
    } else {
      // Keep what the model wrote: the user may still use it.
      COMPACTOR_RETURN_IF_ERROR(WriteMessage(outcome.assistant_json, nullptr).status());
      action.error = fmt::format(
          "The response hit the output limit {} times in a row; giving up on recovery.", cap + 1);
    }
    return action;
  }

  // Every response but an overflow or a truncated one is written; then a
  // deferred manual or a threshold compaction, held messages, auto-continue.
  Result<RuntimeAction> KeepTurn(std::unique_lock<std::mutex>& lk, const TurnOutcome& outcome,
                                 const Message& msg) {
    RuntimeAction action;
    COMPACTOR_RETURN_IF_ERROR(WriteMessage(outcome.assistant_json, nullptr).status());
    if (msg.stop_reason != "error") {
      overflow_count = 0;
      incomplete_count = 0;
    }
    const bool ends_run = msg.stop_reason != "toolUse";
    if (ends_run) idle_armed = o.idle_after_ms > 0;
    if (msg.stop_reason == "aborted") {
      COMPACTOR_ASSIGN_OR_RETURN(action.delivered, FlushHeld());
      if (!action.delivered.empty()) action.kind = RuntimeAction::Kind::kContinue;
      return action;
    }

    bool compacted = false;
    if (deferred_manual) {
      std::string instructions = std::move(*deferred_manual);
      deferred_manual.reset();
      auto c = Manual(lk, std::move(instructions));
      if (c.ok()) {
        action.delivered = std::move(c->delivered);
      }  // a failure is reported by the end event
    } else {
      COMPACTOR_ASSIGN_OR_RETURN(action, Threshold(lk, &compacted));
    }
    COMPACTOR_ASSIGN_OR_RETURN(std::vector<std::string> more, FlushHeld());
    for (auto& m : more) action.delivered.push_back(std::move(m));

    if (action.kind == RuntimeAction::Kind::kNone && ends_run && !action.delivered.empty()) {
      action.kind = RuntimeAction::Kind::kContinue;  // the queued messages await an answer
    } else if (action.kind == RuntimeAction::Kind::kNone && compacted &&
               msg.stop_reason == "stop" && action.delivered.empty() && MayAutoContinue()) {
      COMPACTOR_ASSIGN_OR_RETURN(action.continue_prompt, WriteAutoContinuePrompt());
      action.kind = RuntimeAction::Kind::kContinue;
    }
    return action;
  }

  bool MayAutoContinue() const {
    return o.auto_continue && auto_continues < o.max_auto_continues &&
           (!o.has_open_work || o.has_open_work());
  }

  // Writes the user message that resumes the work after a compaction.
  Result<std::string> WriteAutoContinuePrompt() {
    std::string prompt = "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":";
    AppendJsString(prompt, kAutoContinueText);
    prompt += "}],\"timestamp\":" + std::to_string(env->NowMs()) + "}";
    COMPACTOR_RETURN_IF_ERROR(WriteMessage(prompt, nullptr).status());
    ++auto_continues;
    return prompt;
  }
};

Runtime::Runtime(std::unique_ptr<State> state) : s_(std::move(state)) {}
Runtime::~Runtime() = default;

Result<std::unique_ptr<Runtime>> Runtime::Open(RuntimeOptions options) {
  if (options.session_path.empty()) return Status::InvalidArgument("runtime: no session path");
  if (options.max_overflow_compactions < 0 || options.max_incomplete_recoveries < 0 ||
      options.idle_after_ms < 0)
    return Status::InvalidArgument("runtime: negative limits");
  if (options.abort_on_manual_during_turn && !options.abort_turn)
    return Status::InvalidArgument("runtime: abort_on_manual_during_turn needs abort_turn");
  auto st = std::make_unique<State>();
  st->env = EnvOrDefault(options.env);
  st->path = options.session_path;
  st->o = std::move(options);
  COMPACTOR_ASSIGN_OR_RETURN(std::shared_ptr<Session> sess, st->Load());
  if (auto li = sess->Leaf()) {
    st->leaf = sess->entry(*li).id;
    // Tool calls of the last assistant on the path still waiting for results.
    std::vector<size_t> path = sess->PathTo(*li);
    size_t start = path.size();
    for (size_t k = path.size(); k-- > 0;) {
      const Entry& e = sess->entry(path[k]);
      if (e.type == EntryType::kMessage && e.role == Role::kAssistant) {
        start = k;
        break;
      }
    }
    for (size_t k = start; k < path.size(); ++k) {
      if (sess->entry(path[k]).type != EntryType::kMessage) continue;
      auto m = ParseMessage(sess->MessageJson(path[k]));
      if (m.ok()) st->TrackToolCalls(*m);
    }
  }
  st->last_activity_ms = st->env->NowMs();
  return std::unique_ptr<Runtime>(new Runtime(std::move(st)));
}

Result<std::string> Runtime::AppendMessage(std::string_view message_json) {
  std::unique_lock lk(s_->mu);
  if (s_->compacting) {
    // Validate now so a bad message fails its caller, not the flush.
    COMPACTOR_ASSIGN_OR_RETURN(std::string canonical, JsCanonicalJson(message_json));
    s_->held.push_back({std::move(canonical), false});
    return std::string();
  }
  Message m;
  COMPACTOR_ASSIGN_OR_RETURN(std::string id, s_->WriteMessage(message_json, &m));
  if (m.role == Role::kUser) s_->auto_continues = 0;
  s_->last_activity_ms = s_->env->NowMs();
  s_->Drain(lk);
  return id;
}

Status Runtime::QueueUserMessage(std::string_view message_json) {
  std::unique_lock lk(s_->mu);
  COMPACTOR_ASSIGN_OR_RETURN(std::string canonical, JsCanonicalJson(message_json));
  s_->held.push_back({std::move(canonical), true});
  if (!s_->compacting && !s_->in_turn) {
    auto delivered = s_->FlushHeld();
    if (!delivered.ok()) return delivered.status();
  }
  s_->Drain(lk);
  return Status::Ok();
}

Status Runtime::BeginTurn() {
  std::unique_lock lk(s_->mu);
  if (s_->in_turn) return Status::FailedPrecondition("a turn is already running");
  if (s_->compacting)
    return Status::FailedPrecondition("a compaction is running: wait for it to finish");
  // Queued messages waiting for tool results go out with this request.
  COMPACTOR_RETURN_IF_ERROR(s_->FlushHeld().status());
  s_->in_turn = true;
  s_->idle_armed = false;
  s_->Drain(lk);
  return Status::Ok();
}

Result<RuntimeAction> Runtime::AfterTurn(const TurnOutcome& outcome) {
  std::unique_lock lk(s_->mu);
  State& st = *s_;
  if (st.discard_turn) {
    // CompactNow aborted this turn: its response was built on the old context.
    st.discard_turn = false;
    return RuntimeAction{};
  }
  if (!st.in_turn) return Status::FailedPrecondition("AfterTurn without BeginTurn");
  st.in_turn = false;
  st.last_activity_ms = st.env->NowMs();
  auto parsed = ParseMessage(outcome.assistant_json);
  if (!parsed.ok()) return Status::InvalidArgument("AfterTurn: " + parsed.status().message());
  const Message& msg = *parsed;
  if (msg.role != Role::kAssistant)
    return Status::InvalidArgument("AfterTurn: the message is not an assistant message");

  CompactionSettings s = st.Settings();
  // Usage rules only apply to the model whose window we know.
  bool same_model = msg.model.empty() || msg.model == st.o.model.id;
  const bool overflow =
      IsContextOverflow(OverflowFacts(msg, outcome), same_model ? s.context_window : 0);
  RuntimeAction action;
  if (overflow || msg.stop_reason == "length") {
    COMPACTOR_ASSIGN_OR_RETURN(action, st.RecoverDroppedTurn(lk, outcome, s, overflow));
  } else {
    COMPACTOR_ASSIGN_OR_RETURN(action, st.KeepTurn(lk, outcome, msg));
  }
  st.Drain(lk);
  return action;
}

Result<ManualCompaction> Runtime::RequestCompaction(std::string instructions) {
  std::unique_lock lk(s_->mu);
  ManualCompaction out;
  if (s_->in_turn) {
    s_->deferred_manual = std::move(instructions);  // the latest request wins
    out.deferred = true;
    return out;
  }
  if (s_->compacting) return Status::FailedPrecondition("Compaction already in progress");
  auto c = s_->Manual(lk, std::move(instructions));
  s_->Drain(lk);
  if (!c.ok()) return c.status();
  out.result = std::move(c->result);
  return out;
}

Result<CompactionResult> Runtime::CompactNow(std::string instructions) {
  std::unique_lock lk(s_->mu);
  State& st = *s_;
  if (st.compacting) return Status::FailedPrecondition("Compaction already in progress");
  if (st.in_turn) {
    if (!st.o.abort_on_manual_during_turn)
      return Status::FailedPrecondition(
          "cannot compact while a turn is running: use RequestCompaction to compact when it "
          "completes, or enable abort_on_manual_during_turn");
    st.in_turn = false;
    st.discard_turn = true;
    lk.unlock();
    st.o.abort_turn();
    lk.lock();
  }
  auto c = st.Manual(lk, std::move(instructions));
  st.Drain(lk);
  if (!c.ok()) return c.status();
  return std::move(c->result);
}

Result<RuntimeAction> Runtime::Tick() {
  std::unique_lock lk(s_->mu);
  State& st = *s_;
  RuntimeAction action;
  if (!st.idle_armed || st.in_turn || st.compacting) return action;
  if (st.env->NowMs() - st.last_activity_ms < st.o.idle_after_ms) return action;
  st.idle_armed = false;  // once per quiet period
  CompactionSettings s = st.Settings();
  if (!State::AutoEnabled(s) || !st.HasNewContent()) {
    st.Drain(lk);
    return action;
  }
  COMPACTOR_ASSIGN_OR_RETURN(double tokens, st.Measure());
  if (tokens < static_cast<double>(st.o.idle_min_tokens)) return action;
  auto c = st.Compact(lk, CompactionReason::kIdle, s, "", false, tokens);
  if (c.ok()) action.delivered = std::move(c->delivered);
  if (!action.delivered.empty()) action.kind = RuntimeAction::Kind::kContinue;
  st.Drain(lk);
  return action;
}

Result<double> Runtime::CurrentTokens() {
  std::unique_lock lk(s_->mu);
  return s_->Measure();
}

Result<std::shared_ptr<const Session>> Runtime::CurrentSession() {
  std::unique_lock lk(s_->mu);
  COMPACTOR_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, s_->Load());
  return std::shared_ptr<const Session>(std::move(session));
}

Result<Runtime::Snapshot> Runtime::CurrentContext() {
  std::unique_lock lk(s_->mu);
  COMPACTOR_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, s_->Load());
  COMPACTOR_ASSIGN_OR_RETURN(std::shared_ptr<const SessionContext> context, s_->Context(*session));
  return Snapshot{std::move(session), std::move(context)};
}

std::string Runtime::session_path() const {
  std::lock_guard lk(s_->mu);
  return s_->path;
}

std::string Runtime::leaf_id() const {
  std::lock_guard lk(s_->mu);
  return s_->leaf;
}

ModelInfo Runtime::model() const {
  std::lock_guard lk(s_->mu);
  return s_->o.model;
}

bool Runtime::in_turn() const {
  std::lock_guard lk(s_->mu);
  return s_->in_turn;
}

bool Runtime::compacting() const {
  std::lock_guard lk(s_->mu);
  return s_->compacting;
}

}  // namespace compactor
