// The compaction engine: one call that decides, prepares, summarizes and
// records a compaction with any registered strategy (strategy.h). The
// options, results and hooks it takes are in compaction.h. See
// docs/strategies.md for each strategy's behaviour and on-disk representation.
//
// Thread safety: functions here are safe to call concurrently on different
// sessions; hooks are called on the calling thread (the turn-prefix summary of
// a split turn runs on a second thread, without hooks).
#ifndef COMPACTOR_INCLUDE_COMPACTOR_COMPACT_H_
#define COMPACTOR_INCLUDE_COMPACTOR_COMPACT_H_

#include <memory>
#include <string>

#include "compactor/compaction.h"
#include "compactor/session.h"
#include "compactor/settings.h"  // CompactOptions::settings are read from settings files
#include "compactor/status.h"

namespace compactor {

// Computes the compaction of `session` with options.strategy (else the one
// named by settings.strategy; unknown -> kInvalidArgument listing the
// registered names). Writes nothing.
Result<ComputedCompaction> ComputeCompaction(const Session& session, const CompactOptions& options);

// Loads `path`, computes the compaction and records it as result.output says:
// appends the entry (summary, user-prompts, notes), writes a new session file
// (handoff), or rewrites the file atomically with a backup (mask). Nothing is
// written with dry_run or when the result is skipped. Everything goes through
// options.env (load.env is ignored).
Result<CompactionResult> CompactFile(const std::string& path, const CompactOptions& options,
                                     const LoadOptions& load = {});

// The session text with `entry_json` appended, loaded again: what a caller sees
// after the compaction (used for tokens_after checks and evaluation).
Result<std::unique_ptr<Session>> SessionWithAppended(const Session& session,
                                                     const std::string& entry_json);

// In memory, the session a caller sees once `computed` (a compacted result of
// ComputeCompaction on `session`) is recorded: `session` with the entry
// appended, the new session, or the rewritten one.
Result<std::unique_ptr<Session>> SessionAfterCompaction(const Session& session,
                                                        const ComputedCompaction& computed);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_COMPACT_H_
