// What a compaction is made of, shared by the engine (compact.h) and every
// strategy (strategy.h): the options, the result and the computed compaction,
// the output kinds, and the hooks an embedding agent uses to steer it. See
// docs/strategies.md for each strategy's behaviour and on-disk representation.
//
// Thread safety: hooks are called on the calling thread (the turn-prefix
// summary of a split turn runs on a second thread, without hooks).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_COMPACTION_H_
#define COMPACTOR_INCLUDE_COMPACTOR_COMPACTION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/compaction_settings.h"
#include "compactor/context.h"
#include "compactor/message.h"
#include "compactor/prepare.h"
#include "compactor/prune.h"
#include "compactor/session.h"
#include "compactor/status.h"
#include "compactor/summarizer.h"

namespace compactor {

class CompactionStrategy;  // strategy.h: the interface and the registry

// How CompactFile records a computed compaction.
enum class CompactionOutput {
  kAppendEntry,  // one entry appended at the leaf (ComputedCompaction::result.entry_json)
  kNewSession,   // a new session file (new_session_jsonl at result.output_path)
  kRewriteFile,  // the session file rewritten in place, with a backup (rewrite_plan)
};

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
  std::string_view strategy;  // the registered name ("summary", ...)
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
  // The strategy (not owned: a registered one, FindStrategy / ParseStrategy in
  // strategy.h, or the caller's own, which must outlive the call). nullptr:
  // the registered strategy named by settings.strategy.
  const CompactionStrategy* strategy = nullptr;
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
  std::string strategy;  // the strategy's registered name
  // How the result is (or, with dry_run, would be) recorded.
  CompactionOutput output = CompactionOutput::kAppendEntry;
  bool compacted = false;
  // Why nothing was done: "disabled", "below threshold", "nothing to summarize",
  // "already compacted", "cancelled by hook", "empty notes", ...; empty when compacted.
  std::string skipped_reason;
  std::string entry_id;    // the appended entry (new session: its message entry)
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
  // Counters only some strategies report: set (0 at first) on every result of
  // the strategy that reports it, skipped ones included; unset otherwise.
  std::optional<size_t> kept_user_messages;  // user-prompts
  std::optional<size_t> masked_outputs;      // mask
  std::string output_path;  // kNewSession: the new session file; kRewriteFile: the rewritten file
  std::vector<std::string> read_files, modified_files;
  std::vector<std::string> hook_errors;
  double duration_ms = 0;
};

// A compaction computed without writing anything. What CompactFile would
// record depends on result.output: the entry JSON (kAppendEntry), the new
// file's contents (kNewSession) or the rewrite (kRewriteFile).
struct ComputedCompaction {
  CompactionResult result;
  std::string new_session_jsonl;            // kNewSession
  std::string rewritten_jsonl;              // kRewriteFile: the whole rewritten session
  std::optional<RewritePlan> rewrite_plan;  // kRewriteFile: what CompactFile writes
};

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_COMPACTION_H_
