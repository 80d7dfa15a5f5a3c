// The compaction settings struct with its documented defaults, its enums and
// their names, and the range checks that need no strategy registry. Reading
// and validating a settings file (which checks strategy names against the
// registry) is settings.h, a module above the strategies.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_COMPACTION_SETTINGS_H_
#define COMPACTOR_INCLUDE_COMPACTOR_COMPACTION_SETTINGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/status.h"
#include "compactor/tokenizer.h"

namespace compactor {

// Which anchor's trigger rule fires a compaction (policy.h: ParseTriggerPreset,
// TriggerPresetName, ResolveThreshold).
enum class TriggerPreset {
  kPi,        // tokens > window - reserveTokens
  kOmp,       // tokens > window - max(floor(15% of window), reserveTokens); overrides
  kKimi,      // tokens >= 0.85 x window, or within 50,000 of it
  kCodex,     // tokens >= floor(0.9 x window); a configured limit may only lower it
  kOpencode,  // tokens >= window - min(20,000, max output tokens capped at 32,000)
  kNexus,     // tokens > window - max(window / 5, 10,000)
  kNominal,   // tokens >= 100,000 (the window does not matter)
};

// Which part of the conversation a compaction keeps verbatim (prepare.h).
enum class KeepPolicy { kRecentTokens, kLastTurns, kLastMessages, kOpencode };
// "tokens", "turns", "messages", "opencode"; anything else is kInvalidArgument:
// unknown keep policy "x" (expected tokens, turns, messages or opencode).
Result<KeepPolicy> ParseKeepPolicy(std::string_view name);
std::string_view KeepPolicyName(KeepPolicy policy);

// The settings' token counter: nullopt is pi's chars/4 estimate ("estimate"),
// an encoding an exact tokenizer. Accepts "estimate", "o200k", "o200k_base",
// "cl100k", "cl100k_base"; anything else is kInvalidArgument:
// unknown tokenizer "x" (estimate, o200k, cl100k).
Result<std::optional<Encoding>> ParseTokenizerSetting(std::string_view name);
// "estimate", "o200k", "cl100k" (TokenCounter::FromName accepts them).
std::string_view TokenizerSettingName(const std::optional<Encoding>& tokenizer);

// Tool-output pruning (oh-my-pi's pruneToolOutputs semantics; docs/strategies.md).
struct PruningSettings {
  // Off by default: pi has no built-in pruning, and pruning changes what the model sees.
  bool enabled = false;
  // The newest tool-result tokens that are never pruned.
  int64_t protect_tokens = 40000;
  // Prune only when at least this many tokens would be saved (all or nothing).
  int64_t minimum_savings = 20000;
  // Results of these tools are never pruned.
  std::vector<std::string> protected_tools = {"read", "skill"};
};

// Every knob of the compaction engine. Defaults reproduce pi 0.73.1.
struct CompactionSettings {
  // Master switch for automatic compaction (manual compaction ignores it).
  bool enabled = true;
  // How the old part is replaced: the name of a registered strategy
  // (strategy.h; "summary" is pi's LLM summary). "off" disables automatic
  // compaction like enabled = false (oh-my-pi semantics).
  std::string strategy = "summary";
  // Headroom below the context window; also sizes summary output limits.
  int64_t reserve_tokens = 16384;
  // Estimated tokens kept verbatim at the end of the conversation.
  int64_t keep_recent_tokens = 20000;
  // Fire at this percentage of the window (clamped to [1, 99]); -1 = unset.
  double threshold_percent = -1;
  // Fire above this many tokens (clamped to [1, window - 1]); wins over the
  // percentage; -1 = unset.
  int64_t threshold_tokens = -1;
  // The model's context window in tokens; 0 = unknown (taken from the model).
  int64_t context_window = 0;
  // Which anchor's trigger rule to apply: pi, omp, kimi, codex, opencode, nexus, nominal.
  TriggerPreset trigger = TriggerPreset::kPi;
  // Which part is kept verbatim: "tokens" (pi: keepRecentTokens), "turns"
  // (last keepTurns turns), "messages" (last keepMessages messages), "opencode"
  // (last 2 user turns within a small token budget).
  KeepPolicy keep_policy = KeepPolicy::kRecentTokens;
  int keep_turns = 6;
  int keep_messages = 4;
  // Token counter: nullopt = "estimate" (pi's chars/4 heuristic), else an
  // exact tokenizer (o200k, cl100k; docs/tokenizers.md).
  std::optional<Encoding> tokenizer;
  PruningSettings pruning;
};

// The range checks of ValidateSettings (settings.h), in its order, without the
// strategy name: reserveTokens, keepRecentTokens and contextWindow not
// negative, keepTurns and keepMessages at least 1.
Status ValidateSettingRanges(const CompactionSettings& settings);

// The settings as a JSON document in the file format (flat keys), e.g. for
// `compactor settings --print` and round-trip tests.
std::string SettingsToJson(const CompactionSettings& settings);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_COMPACTION_SETTINGS_H_
