// The compaction engine: one call that decides, prepares, summarizes and
// records a compaction with any strategy, plus the hooks an embedding agent
// uses to steer it. See docs/strategies.md for each strategy's behaviour and
// on-disk representation.
//
// Thread safety: functions here are safe to call concurrently on different
// sessions; hooks are called on the calling thread (the turn-prefix summary of
// a split turn runs on a second thread, without hooks).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_COMPACT_H_
#define COMPACTOR_INCLUDE_COMPACTOR_COMPACT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/context.h"
#include "compactor/message.h"
#include "compactor/prepare.h"
#include "compactor/prune.h"
#include "compactor/session.h"
#include "compactor/settings.h"
#include "compactor/status.h"
#include "compactor/summarizer.h"

namespace compactor {

enum class Strategy {
  kSummary,      // pi / oh-my-pi: summary of the history + recent messages kept verbatim
  kUserPrompts,  // Kimi Code / Codex: kept user prompts + one user-role summary
  kNotes,        // Nominal Code: the notes file is the summary, the last messages kept
  kHandoff,      // oh-my-pi: a new session that starts from a handoff document
  kMask,         // observation masking: old tool outputs replaced by placeholders
};
std::string_view StrategyName(Strategy s);
// "summary" (also "context-full"), "user-prompts", "notes", "handoff", "mask".
Result<Strategy> ParseStrategy(std::string_view name);

struct CompactionResult;

// ---------------------------------------------------------------------------
// Hooks. Handlers run in registration order. A handler that throws is
// reported (CompactionResult::hook_errors and Hooks::on_error) and treated as
// having returned nothing; the default path continues.

// What a before_compact handler may hand back instead of a summarizer call.
struct SuppliedCompaction {
  std::string summary;
  std::optional<std::string> first_kept_entry_id;  // default: the preparation's
  std::optional<double> tokens_before;             // default: the preparation's
  std::string details_json;                        // raw JSON; empty = none
  std::string preserve_data_json;                  // raw JSON object; empty = none
};

struct BeforeCompactEvent {
  const Session& session;
  const CompactionPreparation& preparation;
  Strategy strategy;
  std::string_view instructions;
};
struct BeforeCompactResult {
  bool cancel = false;
  std::optional<SuppliedCompaction> compaction;
};

struct CompactingEvent {
  const Session& session;
  // Everything the summarizer will see (messages to summarize, then the turn prefix).
  const std::vector<Message>& messages;
};
struct CompactingResult {
  std::optional<std::string> prompt;  // replaces the summary instructions
  std::vector<std::string> context;   // extra lines given to the summarizer
  std::string preserve_data_json;     // stored as the entry's preserveData
};

struct AfterCompactEvent {
  const CompactionResult& result;
};

struct BeforeTreeEvent {
  const Session& session;
  std::string target_id;
  std::string old_leaf_id;
  std::string common_ancestor_id;            // empty when the branches share no entry
  std::vector<size_t> entries_to_summarize;  // entry indices, oldest first
  bool user_wants_summary = false;
};
struct BeforeTreeResult {
  bool cancel = false;
  std::optional<std::string> summary;  // use this instead of calling a summarizer
  std::string details_json;
};
struct AfterTreeEvent {
  std::string new_leaf_id;
  std::string old_leaf_id;
  std::string summary_entry_json;  // empty when no summary was written
  bool from_hook = false;
};

class CompactionHooks {
 public:
  using BeforeCompact = std::function<BeforeCompactResult(const BeforeCompactEvent&)>;
  using Compacting = std::function<CompactingResult(const CompactingEvent&)>;
  using AfterCompact = std::function<void(const AfterCompactEvent&)>;
  using BeforeTree = std::function<BeforeTreeResult(const BeforeTreeEvent&)>;
  using AfterTree = std::function<void(const AfterTreeEvent&)>;

  void OnBeforeCompact(BeforeCompact f) { before_compact_.push_back(std::move(f)); }
  void OnCompacting(Compacting f) { compacting_.push_back(std::move(f)); }
  void OnAfterCompact(AfterCompact f) { after_compact_.push_back(std::move(f)); }
  void OnBeforeTree(BeforeTree f) { before_tree_.push_back(std::move(f)); }
  void OnAfterTree(AfterTree f) { after_tree_.push_back(std::move(f)); }
  // Called with (hook name, error text) for every handler that threw.
  std::function<void(std::string_view, std::string_view)> on_error;

  // Runners. The first cancel wins at once; otherwise the last non-empty result wins.
  BeforeCompactResult RunBeforeCompact(const BeforeCompactEvent& e,
                                       std::vector<std::string>* errors) const;
  CompactingResult RunCompacting(const CompactingEvent& e, std::vector<std::string>* errors) const;
  void RunAfterCompact(const AfterCompactEvent& e, std::vector<std::string>* errors) const;
  BeforeTreeResult RunBeforeTree(const BeforeTreeEvent& e, std::vector<std::string>* errors) const;
  void RunAfterTree(const AfterTreeEvent& e, std::vector<std::string>* errors) const;

 private:
  std::vector<BeforeCompact> before_compact_;
  std::vector<Compacting> compacting_;
  std::vector<AfterCompact> after_compact_;
  std::vector<BeforeTree> before_tree_;
  std::vector<AfterTree> after_tree_;
};

// ---------------------------------------------------------------------------

struct CompactOptions {
  // Budgets, keep policy, trigger preset and window. settings.strategy is used
  // unless `strategy` is set.
  CompactionSettings settings;
  std::optional<Strategy> strategy;
  // The summarizer; nullptr = the embedded offline summarizer.
  const Summarizer* summarizer = nullptr;
  // Extra instructions for the summarizer (pi's /compact text).
  std::string instructions;
  // Compact the branch ending at this entry instead of the file's leaf.
  std::optional<std::string> leaf_id;
  // Only compact when the trigger policy fires (needs settings.context_window);
  // otherwise the compaction is manual and always runs.
  bool only_if_needed = false;
  // notes: the notes file whose content becomes the summary.
  std::string notes_path;
  // handoff: directory of the new session file (default: next to the old one).
  std::string handoff_dir;
  // Compute everything but write nothing.
  bool dry_run = false;
  const CompactionHooks* hooks = nullptr;
  // Every side effect: the session file, notes, the handoff file, entry
  // timestamps and ids, threads. null = Env::Default().
  Env* env = nullptr;
  // Reproduce pi 0.73.1's preparation quirks (conformance checks only).
  bool pi_quirks = false;
  // mask: which tool outputs stay verbatim.
  MaskOptions mask;
  // mask: how long the old file is watched after the rename for appends by
  // writers that take no lock (SessionRewriteOptions::grace_ms, writer.h).
  int64_t rewrite_grace_ms = 300;
};

struct CompactionResult {
  Strategy strategy = Strategy::kSummary;
  bool compacted = false;
  // Why nothing was done: "disabled", "below threshold", "nothing to summarize",
  // "already compacted", "cancelled by hook", "empty notes", ...; empty when compacted.
  std::string skipped_reason;
  std::string entry_id;    // the appended entry (handoff: the new session's first entry)
  std::string entry_json;  // its JSON line (without newline)
  std::string first_kept_entry_id;
  std::string summary;  // as stored (footer included)
  size_t messages_summarized = 0;
  size_t turn_prefix_messages = 0;
  bool split_turn = false;
  double tokens_before = 0;       // context size before (usage-anchored, as pi measures)
  int64_t tokens_after = 0;       // chars/4 estimate of the rebuilt context
  int64_t summarized_tokens = 0;  // chars/4 estimate of what the summary replaces
  // The context is still over the trigger threshold after compacting: the
  // caller must not compact again in a loop.
  bool ineffective = false;
  bool from_hook = false;
  size_t kept_user_messages = 0;  // user-prompts
  size_t masked_outputs = 0;      // mask
  std::string output_path;        // handoff: the new session file; mask: the rewritten file
  std::vector<std::string> read_files, modified_files;
  std::vector<std::string> hook_errors;
  double duration_ms = 0;
};

// Computes the compaction of `session` without writing anything: the result
// carries the entry JSON (or, for handoff, the new file's contents in
// `handoff_jsonl` / mask: `rewritten_jsonl`).
struct ComputedCompaction {
  CompactionResult result;
  std::string handoff_jsonl;
  std::string rewritten_jsonl;
  std::optional<RewritePlan> rewrite_plan;  // mask: what CompactFile writes
};
Result<ComputedCompaction> ComputeCompaction(const Session& session, const CompactOptions& options);

// Loads `path`, computes the compaction and records it: appends the entry
// (summary, user-prompts, notes), writes a new session file (handoff), or
// rewrites the file atomically with a backup (mask). Nothing is written with
// dry_run or when the result is skipped. Everything goes through options.env
// (load.env is ignored).
Result<CompactionResult> CompactFile(const std::string& path, const CompactOptions& options,
                                     const LoadOptions& load = {});

// The session text with `entry_json` appended, loaded again: what a caller sees
// after the compaction (used for tokens_after checks and evaluation).
Result<std::unique_ptr<Session>> SessionWithAppended(const Session& session,
                                                     const std::string& entry_json);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_COMPACT_H_
