// Preparing a compaction: which part of the active branch is summarized and
// which is kept verbatim (pi 0.73.1's findCutPoint and prepareCompaction, and
// the keep policies of OpenCode, Nexus and Nominal Code; docs/settings.md).
//
// The default keep policy reproduces pi 0.73.1's findCutPoint/prepareCompaction
// exactly, except for three pi bugs that Compactor fixes (docs/compatibility.md):
//   * nothing to summarize -> no preparation ("Nothing to compact"), not an
//     empty one that would make a manual compaction summarize nothing;
//   * a settings/label/... entry pulled in front of a kept user message does not
//     make the cut a split turn;
//   * when the keep budget is crossed on trailing tool results after the last
//     cut point (a huge last tool result), the cut moves to the last cut point
//     instead of falling back to keeping everything.
// PrepareOptions::pi_quirks turns all three fixes off (conformance checks).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_PREPARE_H_
#define COMPACTOR_INCLUDE_COMPACTOR_PREPARE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/compaction_settings.h"
#include "compactor/context.h"
#include "compactor/env.h"
#include "compactor/estimate.h"
#include "compactor/file_ops.h"
#include "compactor/message.h"
#include "compactor/session.h"
#include "compactor/status.h"

namespace compactor {

// ---------------------------------------------------------------------------
// Cut points over a light view of the path (pure functions, no Session needed).

struct CutEntry {
  EntryType type = EntryType::kUnknown;
  Role role = Role::kOther;  // message entries only
  // Estimated tokens of the context message the entry produces (0 for entries
  // that produce none). pi's keep budget counts only `message` entries.
  int64_t tokens = 0;
};

struct CutPoint {
  size_t first_kept_index = 0;
  std::optional<size_t> turn_start_index;  // pi's -1 = nullopt
  bool is_split_turn = false;
};

struct CutOptions {
  // Reproduce pi 0.73.1's quirks Q1 (pulled-back settings entry -> split turn)
  // and Q7 (budget crossed after the last cut point -> keep everything).
  bool pi_quirks = false;
};

// pi's findValidCutPoints over [start, end): user, assistant, bashExecution,
// custom, branchSummary, compactionSummary messages; branch_summary and
// custom_message entries. Never a tool result.
std::vector<size_t> FindValidCutPoints(std::span<const CutEntry> entries, size_t start, size_t end);
// pi's findTurnStartIndex: the nearest user/bashExecution message,
// branch_summary or custom_message at or before `index`, not before `start`.
std::optional<size_t> FindTurnStartIndex(std::span<const CutEntry> entries, size_t index,
                                         size_t start);
// pi's findCutPoint (keep about `keep_recent_tokens` estimated tokens).
CutPoint FindCutPoint(std::span<const CutEntry> entries, size_t start, size_t end,
                      int64_t keep_recent_tokens, const CutOptions& options = {});

// Keep the last `turns` turns (a turn starts at a user or bashExecution message,
// a branch_summary or a custom_message). Fewer turns -> keep everything.
CutPoint FindCutPointLastTurns(std::span<const CutEntry> entries, size_t start, size_t end,
                               int turns);
// Keep the last `messages` context messages, moved earlier when needed so that
// the kept part never starts with a tool result nor separates a tool call from
// its result.
CutPoint FindCutPointLastMessages(std::span<const CutEntry> entries, size_t start, size_t end,
                                  int messages);
// OpenCode's tail: the last `turns` user turns if they fit `budget` tokens, else
// fewer; a newest turn larger than the budget is cut inside, at the earliest
// safe point whose suffix fits (at least its last safe point).
CutPoint FindCutPointOpencode(std::span<const CutEntry> entries, size_t start, size_t end,
                              int64_t budget, int turns = 2);
// OpenCode's default tail budget: min(8000, max(2000, floor(0.25 x usable))).
int64_t OpencodeTailBudget(int64_t usable_tokens);

// ---------------------------------------------------------------------------
// Preparation over a session.

// KeepPolicy, ParseKeepPolicy and KeepPolicyName are declared in compaction_settings.h.

struct PrepareOptions {
  // keepRecentTokens, reserveTokens, keepPolicy, keepTurns, keepMessages,
  // contextWindow (opencode's budget) are read from here.
  CompactionSettings settings;
  // Prepare for this entry instead of the file's leaf (unknown id -> kInvalidArgument).
  std::optional<std::string> leaf_id;
  // Reproduce pi 0.73.1 exactly, bugs included (see the top of this file).
  bool pi_quirks = false;
  // How message tokens are counted. Unset: from settings.tokenizer
  // (nullopt = pi's chars/4 estimate, the only way to match pi's numbers).
  std::optional<TokenCounter> counter;
  // The second thread for long histories comes from here; null = Env::Default().
  Env* env = nullptr;
};

// Why there is no preparation.
enum class PrepareSkip {
  kNone,
  kEmptySession,      // no entries on the path
  kAlreadyCompacted,  // the leaf is a compaction entry
  kNothingToCompact,  // everything fits the keep policy
};

struct CompactionPreparation {
  std::string first_kept_entry_id;
  size_t first_kept_entry_index = 0;  // index in Session::entries()
  size_t first_kept_path_index = 0;   // index in the path (root = 0)
  // Where this compaction's range starts on the path: the previous compaction's
  // first kept entry (pi 0.73.1), or 0.
  size_t boundary_start_path_index = 0;
  std::optional<size_t> turn_start_path_index;
  bool is_split_turn = false;
  // Context messages of [boundary start, history end) and, for a split turn,
  // of [turn start, first kept); compaction entries produce none. Stored
  // messages are views into the Session's bytes: keep the Session alive.
  std::vector<ContextMessage> messages_to_summarize;
  std::vector<ContextMessage> turn_prefix_messages;
  int64_t messages_to_summarize_tokens = 0;  // Σ estimate
  int64_t turn_prefix_tokens = 0;            // Σ estimate
  int64_t kept_tokens = 0;  // Σ estimate of the context messages from the first kept entry on
  size_t kept_messages = 0;
  // pi 0.73.1: the usage-anchored estimate of the whole rebuilt context.
  double tokens_before = 0;
  std::optional<std::string> previous_summary;
  std::optional<size_t> previous_compaction_entry_index;
  FileOps file_ops;
  FileLists file_lists;
  KeepPolicy keep_policy = KeepPolicy::kRecentTokens;
  CompactionSettings settings;
};

struct PrepareResult {
  SessionContext context;    // the context at the leaf
  ContextEstimate estimate;  // EstimateContextTokens(context.messages)
  std::optional<CompactionPreparation> preparation;
  PrepareSkip skip = PrepareSkip::kNone;
  // pi's wording for manual compaction: "Already compacted", "Nothing to
  // compact (session too small)"; empty when a preparation exists.
  std::string skip_reason;
};

// kInvalidArgument when a setting is out of range (ValidateSettingRanges);
// the strategy name is not read here (the engine resolves it).
Result<PrepareResult> PrepareCompaction(const Session& session, const PrepareOptions& options = {});
// Same, reusing a context already built for the leaf (its `path` is used).
Result<PrepareResult> PrepareCompaction(const Session& session, SessionContext context,
                                        const PrepareOptions& options);

// The light view of `path` used by the cut-point functions. `context_estimates`
// (ContextEstimate::per_message for `context`) avoids measuring messages twice. Token estimates are
// computed from path index `from` on (entries before a compaction boundary are
// never measured, and a long history would make this the slowest step).
std::vector<CutEntry> MakeCutEntries(const Session& session, const std::vector<size_t>& path,
                                     const SessionContext& context, size_t from = 0,
                                     const TokenCounter& counter = TokenCounter(),
                                     const std::vector<int64_t>* context_estimates = nullptr);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_PREPARE_H_
