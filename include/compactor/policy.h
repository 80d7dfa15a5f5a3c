// When to compact: the trigger rules of pi and of the other designs Compactor
// covers, as named presets that reproduce each anchor's threshold exactly
// (pi, oh-my-pi, Kimi Code, Codex CLI, OpenCode, Nexus and Nominal Code;
// docs/settings.md gives each preset's rule).
//
// Every preset answers one question: given the context size (in the preset's
// own token measure) and the model's window, is it time to compact? A window
// so small that the preset's threshold would be zero or negative is reported as
// a configuration error instead of firing on every check.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_POLICY_H_
#define COMPACTOR_INCLUDE_COMPACTOR_POLICY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "compactor/compaction_settings.h"
#include "compactor/status.h"

namespace compactor {

// TriggerPreset (the presets and their rules) is declared in settings.h.

std::string_view TriggerPresetName(TriggerPreset preset);
// "pi", "omp", "kimi", "codex", "opencode", "nexus", "nominal"; anything else
// is kInvalidArgument.
Result<TriggerPreset> ParseTriggerPreset(std::string_view name);
// "pi, omp, kimi, codex, opencode, nexus, nominal" (for messages).
std::string TriggerPresetNames();

// How the measured tokens are compared with the threshold.
enum class Comparison { kGreater, kGreaterOrEqual };

struct Threshold {
  // Compaction fires when tokens > value (kGreater) or tokens >= value.
  int64_t value = 0;
  Comparison comparison = Comparison::kGreater;
  // The window the threshold was resolved for (0 when the preset ignores it).
  int64_t window = 0;
  // How the value was derived, e.g. "window - reserveTokens = 200000 - 16384".
  std::string rule;
};

// Optional facts about the model that some presets use.
struct TriggerModelInfo {
  // opencode reserves min(20000, max output) below the window; 0 = unknown (32,000 assumed).
  int64_t max_output_tokens = 0;
};

// Resolves the threshold of `preset` for a window of `window` tokens (0 = use
// settings.context_window). Overrides: settings.threshold_tokens (if > 0) and
// else settings.threshold_percent (if > 0) replace the preset's default
// threshold, clamped as oh-my-pi does (tokens to [1, window - 1], percent to
// [1, 99]); codex only lets them lower its limit. Errors (kInvalidArgument):
// unknown window for a preset that needs one; a default threshold <= 0 (window
// not larger than the reserve).
Result<Threshold> ResolveThreshold(TriggerPreset preset, int64_t window,
                                   const CompactionSettings& settings,
                                   const TriggerModelInfo& model = {});

struct TriggerDecision {
  bool compact = false;
  TriggerPreset preset = TriggerPreset::kPi;
  double tokens = 0;
  // Unset (value 0, rule empty) when compaction is disabled.
  Threshold threshold;
  // One sentence for logs and the CLI, e.g. "183617 > 183616 (pi: window -
  // reserveTokens = 200000 - 16384)" or "compaction disabled".
  std::string reason;
};

// The decision for `tokens` (the context size as the caller measures it: last
// usage plus estimates of later messages). Disabled settings (enabled = false
// or strategy "off") never fire and are not validated.
Result<TriggerDecision> ShouldCompact(double tokens, int64_t window,
                                      const CompactionSettings& settings, TriggerPreset preset,
                                      const TriggerModelInfo& model = {});
// Same, with settings.trigger.
Result<TriggerDecision> ShouldCompact(double tokens, int64_t window,
                                      const CompactionSettings& settings,
                                      const TriggerModelInfo& model = {});

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_POLICY_H_
