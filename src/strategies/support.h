// What several strategies share (src/strategies/*.cc): the preparation and
// its skips, the trigger check, hooks, measuring the context and building
// entries. It knows no strategy; the engine (src/compact) does not use it.
#ifndef COMPACTOR_SRC_STRATEGIES_SUPPORT_H_
#define COMPACTOR_SRC_STRATEGIES_SUPPORT_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/compaction.h"
#include "compactor/context.h"
#include "compactor/entries.h"
#include "compactor/env.h"
#include "compactor/estimate.h"
#include "compactor/file_ops.h"
#include "compactor/message.h"
#include "compactor/prepare.h"
#include "compactor/session.h"
#include "compactor/status.h"
#include "compactor/summarizer.h"

namespace compactor::internal {

// The wall clock of options.env (ms since the epoch).
int64_t NowMs(const CompactOptions& options);

// Every message of `lists`, parsed (see internal::MessageFeed) with threads
// from `env` (null = Env::Default()).
std::vector<Message> ParseAll(std::initializer_list<const std::vector<ContextMessage>*> lists,
                              Env* env);

// {"readFiles":[...],"modifiedFiles":[...]<extra_members>}; extra_members
// starts with a comma.
std::string DetailsJson(const FileLists& lists, const std::string& extra_members = "");

// The instructions a summarizer gets: the caller's text plus what compacting
// hooks added; *preserve_data receives the hooks' preserveData.
void ApplyCompactingHooks(const CompactOptions& options, const Session& session,
                          const std::vector<Message>& messages, SummaryRequest* request,
                          std::string* preserve_data, std::vector<std::string>* errors);

// pi's preparation with the options' settings and leaf; sets
// result->tokens_before. nullptr (and result->skipped_reason) when there is
// nothing to prepare. The preparation lives in *out.
Result<CompactionPreparation*> PrepareOrSkip(const Session& session, const CompactOptions& options,
                                             PrepareResult* out, CompactionResult* result);

// With options.only_if_needed: whether the trigger policy leaves
// result->tokens_before alone, in which case result->skipped_reason says so
// ("below threshold: ...").
Result<bool> SkipBelowThreshold(const CompactOptions& options, CompactionResult* result);

// Runs the before_compact hooks; true (and skipped_reason "cancelled by
// hook") when one cancelled. *hook_result (optional) receives what they returned.
bool CancelledByHook(const Session& session, const CompactionPreparation& preparation,
                     const CompactOptions& options, std::string_view strategy,
                     CompactionResult* result, BeforeCompactResult* hook_result = nullptr);

// Marks the result ineffective when its tokens_after still fires the trigger.
void CheckEffective(const CompactOptions& options, CompactionResult* result);

// A new entry's id, parent and timestamp.
EntryBase NewBase(const Session& session, const std::string& parent, const CompactOptions& options);
// The id of the entry the compaction is appended to: options.leaf_id or the file's leaf.
std::string LeafIdOf(const Session& session, const CompactOptions& options);

// Summarizes a preparation as the summary strategy does (summary.cc): the
// history and, for a split turn, the turn prefix (the two run concurrently),
// merged under pi's divider; the file lists footer appended. Compacting hooks
// run first (*preserve receives their preserveData). The summaries read the
// messages kept (the context's last prepared.preparation->kept_messages) as
// later messages. Shared with mask-summary.
Result<std::string> SummarizePreparation(const Session& session, const CompactOptions& options,
                                         const PrepareResult& prepared,
                                         const Summarizer& summarizer, std::string* preserve,
                                         CompactionResult* result);

// What strategies that work on the whole rebuilt context (user-prompts,
// handoff, mask) measure first: the context, the counter and its size.
struct MeasuredContext {
  SessionContext ctx;
  TokenCounter counter;
  ContextEstimate est;
};
// Builds the context at the options' leaf through `expander` (nullptr = pi's
// view) and measures it with the settings' tokenizer; sets result->tokens_before.
Result<MeasuredContext> MeasureContext(const Session& session, const CompactOptions& options,
                                       const CompactionExpander* expander,
                                       CompactionResult* result);

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_STRATEGIES_SUPPORT_H_
