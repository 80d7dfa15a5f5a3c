// The runtime an agent embeds: it owns the session file while the agent runs,
// is called around each model request, and decides when and how to compact
// (threshold, overflow, incomplete output, idle, manual), when to switch to a
// larger-window model instead, and what the agent must do next. See
// docs/runtime.md for the state machine and the choices made.
//
// Persistence: the runtime is the single writer of its session file. The agent
// appends its messages (user prompts, tool results) with AppendMessage and
// hands every model response to AfterTurn, which persists it unless it is
// dropped for recovery (a context-overflow error and an output-capped reply
// are never written: the retried request must not contain them).
//
// Thread safety: every method may be called from any thread. A compaction runs
// without holding the runtime's lock, so messages queued or appended from
// other threads (or from hooks and summarizers) while it runs are held and
// written after the compaction entry, never dropped or orphaned. Callbacks run
// on the calling thread without the lock held and may call back into the runtime.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_RUNTIME_H_
#define COMPACTOR_INCLUDE_COMPACTOR_RUNTIME_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/env.h"
#include "compactor/estimate.h"
#include "compactor/session.h"
#include "compactor/settings.h"
#include "compactor/status.h"
#include "compactor/summarizer.h"

namespace compactor {

struct ModelInfo {
  std::string provider;  // written into model_change entries; may be empty
  std::string id;        // the model id as the agent and the session name it
  int64_t context_window = 0;
};

enum class CompactionReason { kManual, kThreshold, kOverflow, kIncomplete, kIdle };
// "manual", "threshold", "overflow", "incomplete", "idle".
std::string_view CompactionReasonName(CompactionReason reason);

struct RuntimeEvent {
  enum class Kind {
    kCompactionStart,
    kCompactionEnd,
    kWarning,  // a problem that did not stop the agent (bad settings file, blocked compaction)
  };
  Kind kind = Kind::kCompactionStart;
  CompactionReason reason = CompactionReason::kThreshold;
  // "compact" (the configured strategy ran), "prune", "promote" (switched to a
  // larger-window model, nothing compacted), "handoff" (a new session file).
  std::string action;
  std::string strategy;  // the strategy name when action is "compact" or "handoff"
  double tokens_before = 0;
  double tokens_after = 0;  // end: re-estimated from the rebuilt session
  bool will_retry = false;  // the agent is told to re-run the failed request
  bool skipped = false;     // end: nothing was done (skipped_reason says why)
  std::string skipped_reason;
  std::string error;  // end: the compaction failed; kWarning: the message
  std::string entry_id;
  std::string model;  // promote: the model switched to
};

// What the agent must do after AfterTurn (and after a deferred compaction).
struct RuntimeAction {
  enum class Kind {
    kNone,         // carry on as usual (run tools, wait for the user)
    kRetryTurn,    // re-send the request: the failed response was dropped, the context shrank
    kContinue,     // run another request with the context as it is now (messages were added)
    kSwitchModel,  // switch to `model`; if `retry`, re-send the failed request with it
    kGiveUp,       // recovery is exhausted: surface `error` to the user
  };
  Kind kind = Kind::kNone;
  bool retry = false;           // kSwitchModel
  ModelInfo model;              // kSwitchModel
  std::string error;            // kGiveUp
  std::string continue_prompt;  // kContinue by auto-continue: the message JSON that was appended
  // Queued messages written to the session by this call (message JSON, in order).
  std::vector<std::string> delivered;
};

// One model response as the agent received it.
struct TurnOutcome {
  // The assistant message object (pi's shape: role, content, provider, model,
  // usage, stopReason, errorMessage, timestamp).
  std::string assistant_json;
  int http_status = 0;  // of a failed request, when known
};

struct ManualCompaction {
  bool deferred = false;  // requested during a turn: runs when AfterTurn completes it
  CompactionResult result;
};

struct RuntimeOptions {
  std::string session_path;  // an existing pi session file (header at least)
  // Settings: read from `settings_source` at every check when set (edits to
  // the file apply without a restart), otherwise `settings`.
  CompactionSettings settings;
  SettingsSource* settings_source = nullptr;
  // The model the agent uses now. Its window wins over settings.context_window
  // when both are set (the window is a fact about the model).
  ModelInfo model;
  // Larger-window models the agent may switch to instead of compacting,
  // preferred in order; only one with a strictly larger window than the
  // current model qualifies. Empty = never promote.
  std::vector<ModelInfo> promotion_models;
  // Whether a model can be used right now (API key present, ...); empty = all can.
  std::function<bool(const ModelInfo&)> model_available;
  // Promotion per trigger: silent promotion on the threshold path surprised
  // users (omp #1329), so it is a separate switch.
  bool promote_on_overflow = true;
  bool promote_on_threshold = false;
  const Summarizer* summarizer = nullptr;  // nullptr = the offline summarizer
  const CompactionHooks* hooks = nullptr;
  // The notes strategy: the file the agent keeps its notes in (its content
  // becomes the summary; empty notes skip the compaction, a missing file is
  // an error).
  std::string notes_path;
  // Idle compaction after this much quiet time since the last turn ended; 0 = off.
  int64_t idle_after_ms = 0;
  // ...and only when the context holds at least this many tokens (a short
  // session is not worth a summary).
  int64_t idle_min_tokens = 0;
  // After a threshold compaction that ended the agent's turn ("stop"), append
  // a continue prompt so the agent resumes by itself (gated, see docs/runtime.md).
  bool auto_continue = false;
  // Extra gate for auto-continue (open todos, goals); empty = no extra gate.
  std::function<bool()> has_open_work;
  // At most this many auto-continues in a row without a user message in between.
  int max_auto_continues = 1;
  // CompactNow during a turn: false = fail at once (kFailedPrecondition);
  // true = call `abort_turn`, discard that turn's response, compact.
  bool abort_on_manual_during_turn = false;
  std::function<void()> abort_turn;
  // Consecutive overflow compactions per turn (reset by any good response).
  int max_overflow_compactions = 3;
  // Consecutive output-capped ("length") recoveries per turn.
  int max_incomplete_recoveries = 3;
  // After a compaction that left the context over the threshold, threshold
  // compaction waits until the context grew this much: compacting again
  // earlier cannot help and loops (kimi-code #2325, omp #2275).
  int64_t ineffective_regrowth_tokens = 20000;
  // The session file, the clock (idle timer, entry timestamps), ids and
  // threads; null = Env::Default(). Must outlive the runtime.
  Env* env = nullptr;
  TokenCounter counter;  // pi's estimate by default

  std::function<void(const RuntimeEvent&)> on_event;
  // Queued user messages were written to the session (in order): add them to
  // the agent's messages. Also reported in RuntimeAction::delivered where an
  // action is returned.
  std::function<void(const std::vector<std::string>&)> on_delivered;
  // After the context changed under the agent (compaction, prune, handoff):
  // replace the agent's messages with `context.messages` and re-render the
  // system prompt. `session` owns the bytes the messages view.
  std::function<void(const Session& session, const SessionContext& context)> on_context_rebuilt;
};

class Runtime {
 public:
  // Opens the session (it must exist) and validates the options.
  static Result<std::unique_ptr<Runtime>> Open(RuntimeOptions options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Appends a message entry (pi's format, child of the current leaf) and
  // returns its id. While a compaction runs the message is held and written
  // after it (the id is assigned then; the returned id is empty).
  Result<std::string> AppendMessage(std::string_view message_json);
  // A user message that arrived while the agent is busy: written at once when
  // nothing runs, otherwise after the running turn or compaction completes
  // (reported in RuntimeAction::delivered).
  Status QueueUserMessage(std::string_view message_json);

  // A model request is about to be sent.
  Status BeginTurn();
  // The response arrived: persist it (or drop it for recovery) and run the
  // checks. Errors are for bad input or I/O; a failed compaction is reported
  // as kGiveUp (overflow) or an event (threshold) and the session stays valid.
  Result<RuntimeAction> AfterTurn(const TurnOutcome& outcome);

  // Manual compaction with instructions. During a turn it is deferred until
  // AfterTurn completes the turn (result.deferred = true).
  Result<ManualCompaction> RequestCompaction(std::string instructions = "");
  // Manual compaction now. During a turn: kFailedPrecondition at once, or with
  // abort_on_manual_during_turn the turn is aborted first. While another
  // compaction runs: kFailedPrecondition ("Compaction already in progress").
  Result<CompactionResult> CompactNow(std::string instructions = "");

  // Call periodically (e.g. every second): runs the idle compaction when due.
  // Returns the action for the agent (kNone when nothing ran).
  Result<RuntimeAction> Tick();

  // The context size now, re-estimated from the session (provider usage from
  // before the latest compaction is ignored).
  Result<double> CurrentTokens();
  // The session as the runtime last read it: brought up to date only after
  // the runtime's own writes, so an agent that builds each request from it
  // (with leaf_id()) costs no extra load per turn. The Session returned is
  // never modified while the caller holds it: the runtime extends its
  // session in place (Session::Refresh, only the appended bytes) when nobody
  // else holds it, and reads the file anew otherwise. So drop it before the
  // next call that writes to keep each turn independent of the file's size.
  Result<std::shared_ptr<const Session>> CurrentSession();
  // The current session and the context of leaf_id() in it (with the
  // strategies' expander, StrategyExpander()), kept up to date incrementally
  // (ContextCache, context.h; docs/incremental.md): after an append to the
  // leaf it costs O(new entries), not a rebuild. The context's views point
  // into `session`. Both are immutable snapshots (as CurrentSession).
  struct Snapshot {
    std::shared_ptr<const Session> session;
    std::shared_ptr<const SessionContext> context;
  };
  Result<Snapshot> CurrentContext();
  std::string session_path() const;  // changes after a handoff
  std::string leaf_id() const;
  ModelInfo model() const;
  bool in_turn() const;
  bool compacting() const;

  struct State;

 private:
  explicit Runtime(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_RUNTIME_H_
