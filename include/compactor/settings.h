// Compaction settings: the options struct with its documented defaults, the
// JSON settings file (docs/settings.md) and a source that re-reads the file
// whenever it changes, so edits take effect on the next check without a restart.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_SETTINGS_H_
#define COMPACTOR_INCLUDE_COMPACTOR_SETTINGS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/env.h"
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

// A problem in a settings file that did not stop it from loading.
struct SettingsWarning {
  std::string file;
  std::string message;
  std::string ToString() const;  // "file: message"
};

struct LoadedSettings {
  CompactionSettings settings;
  std::vector<SettingsWarning> warnings;
};

// Parses a settings document. Keys may be flat ({"reserveTokens": 8192}) or
// nested pi-style ({"compaction": {"reserveTokens": 8192}}); nested values win.
// Unknown keys produce warnings; a wrong type or an out-of-range value is a
// kInvalidArgument error naming `name` and the key. Keys that are absent keep
// the values of `base`.
Result<LoadedSettings> ParseSettingsJson(std::string_view json, std::string_view name,
                                         const CompactionSettings& base = {});

// Checks the constraints that do not need a context window (the
// window-dependent ones are reported by the trigger, see policy.h): ranges and
// the strategy name (a registered strategy or "off").
Status ValidateSettings(const CompactionSettings& settings);

// Reads and parses a settings file through `env` (null = Env::Default()).
// kNotFound "settings file PATH: not found"; kIoError for a directory or an
// unreadable file; ParseSettingsJson's errors.
Result<LoadedSettings> LoadSettingsFile(const std::string& path,
                                        const CompactionSettings& base = {}, Env* env = nullptr);

// Settings backed by a file, re-read when its identity (Env::Stat: device,
// inode, size, mtime) changes. Thread-safe. Without a path it always returns
// `base`. The file is read through `env` (null = Env::Default()), which must
// outlive the source.
class SettingsSource {
 public:
  explicit SettingsSource(std::optional<std::string> path, CompactionSettings base = {},
                          Env* env = nullptr);

  // The current settings. Stats the file on every call and re-parses it only
  // when it changed. A missing or invalid file is an error (the previous good
  // settings stay available through last_good()), so a typo is reported at the
  // next check instead of silently reverting to defaults.
  Result<CompactionSettings> Get();
  // Warnings of the latest successful parse.
  std::vector<SettingsWarning> warnings() const;
  CompactionSettings last_good() const;
  // How many times the file was parsed (tests and diagnostics).
  int reload_count() const;
  const std::optional<std::string>& path() const { return path_; }

 private:
  std::optional<std::string> path_;
  CompactionSettings base_;
  Env* env_;
  mutable std::mutex mu_;
  std::optional<FileIdentity> stamp_;
  std::optional<Status> cached_error_;
  CompactionSettings current_;
  std::vector<SettingsWarning> warnings_;
  int reload_count_ = 0;
};

// The settings as a JSON document in the file format (flat keys), e.g. for
// `compactor settings --print` and round-trip tests.
std::string SettingsToJson(const CompactionSettings& settings);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_SETTINGS_H_
