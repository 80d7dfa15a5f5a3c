// Compaction settings files: the JSON settings file (docs/settings.md), its
// validation (strategy names checked against the registry, strategy.h) and a
// source that re-reads the file whenever it changes, so edits take effect on
// the next check without a restart. The struct itself and its defaults are in
// compaction_settings.h.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_SETTINGS_H_
#define COMPACTOR_INCLUDE_COMPACTOR_SETTINGS_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/compaction_settings.h"
#include "compactor/env.h"
#include "compactor/status.h"

namespace compactor {

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
// window-dependent ones are reported by the trigger, see policy.h):
// ValidateSettingRanges, then the strategy name (a registered strategy,
// strategy.h, or "off").
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

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_SETTINGS_H_
