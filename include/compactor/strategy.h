// Compaction strategies as plugins: the interface every strategy implements
// and the registry of the built-in ones (summary, user-prompts, notes,
// handoff, mask, mask-summary). The registry is one table in src/strategies/registry.cc; it
// feeds option parsing, settings validation, CLI help, the evaluation and the
// expansion of compaction entries. docs/strategies.md describes each strategy
// and how to add one.
//
// Thread safety: strategies are stateless; every function here may be called
// concurrently.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_STRATEGY_H_
#define COMPACTOR_INCLUDE_COMPACTOR_STRATEGY_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/compaction.h"
#include "compactor/context.h"
#include "compactor/session.h"
#include "compactor/status.h"
#include "compactor/summarizer.h"

namespace compactor {

// What a strategy reads besides the session and the settings.
struct StrategyNeeds {
  bool summarizer = false;  // calls the summarizer (CompactOptions::summarizer or the offline one)
  bool notes_file = false;  // reads CompactOptions::notes_path (an error when it is empty)
};

class CompactionStrategy {
 public:
  virtual ~CompactionStrategy() = default;

  // The registered name: --strategy, the settings' "strategy",
  // CompactionResult::strategy and the "method" field of its compaction entries.
  virtual std::string_view name() const = 0;
  // Other names that select it ("context-full" for summary). Default: none.
  virtual std::span<const std::string_view> aliases() const { return {}; }
  // One line for CLI help.
  virtual std::string_view description() const = 0;
  virtual StrategyNeeds needs() const = 0;
  // How CompactFile records its result.
  virtual CompactionOutput output() const = 0;
  // Whether recording a compaction leaves every byte already in the session
  // file as it was (an appended entry or a new file, not a rewrite).
  bool append_only() const { return output() != CompactionOutput::kRewriteFile; }
  // Whether old messages are replaced by a summary. False for a strategy that
  // keeps every message and shortens some (mask): nothing it does counts as
  // summarized, and it produces no summary text.
  virtual bool summarizes_history() const { return true; }
  // Whether `compactor eval` runs it when no --strategy is given.
  virtual bool evaluated_by_default() const { return true; }

  // Sets the optional counters of CompactionResult that this strategy reports
  // (to 0). Called on every result the engine starts for it.
  virtual void InitResult(CompactionResult* result) const { (void)result; }

  // Computes the compaction of `session`; writes nothing. The engine has
  // already checked options.leaf_id and the enabled switch, and started
  // `out->result` (strategy, output, InitResult). `summarizer` is
  // options.summarizer or the embedded offline one. A skip is not an error:
  // set out->result.skipped_reason and return Ok; compacted results fill what
  // output() needs (see ComputedCompaction).
  virtual Status Compute(const Session& session, const CompactOptions& options,
                         const Summarizer& summarizer, ComputedCompaction* out) const = 0;

  // The representation hook for the compaction entries this strategy writes
  // (entries whose "method" is name()): see CompactionExpander::Expand.
  // Default: false (pi's view).
  virtual bool ExpandCompaction(const CompactionOnPath& compaction,
                                std::vector<ContextMessage>* out) const {
    (void)compaction;
    (void)out;
    return false;
  }
};

// ---------------------------------------------------------------------------
// The registry of built-in strategies.

// Every registered strategy, in table order (the order of help texts and
// messages). The first is the default.
std::span<const CompactionStrategy* const> Strategies();
const CompactionStrategy& DefaultStrategy();

// By registered name or alias; nullptr when unknown.
const CompactionStrategy* FindStrategy(std::string_view name);
// Same; unknown -> kInvalidArgument listing the registered names:
// unknown strategy "x" (summary, user-prompts, notes, handoff, mask, mask-summary).
Result<const CompactionStrategy*> ParseStrategy(std::string_view name);

// The registered names in table order ("summary, user-prompts, notes,
// handoff, mask").
std::string StrategyNames(std::string_view separator = ", ");

// The expander of the registered strategies: hands a compaction entry to the
// strategy named by its "method" field. Static lifetime. Setting
// ContextOptions::expander to it gives Compactor's view of the context (what
// `compactor context --expand`, the runtime and the evaluation use).
const CompactionExpander* StrategyExpander();

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_STRATEGY_H_
