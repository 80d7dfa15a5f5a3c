// Shared plumbing of the CLI commands: loading with warnings on stderr, exit
// codes, output. Each command lives in cli/cmd_<name>.cc and only calls the
// library; see docs/cli.md for the contract.
#ifndef COMPACTOR_CLI_COMMON_H_
#define COMPACTOR_CLI_COMMON_H_

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "compactor/session.h"
#include "compactor/settings.h"
#include "compactor/status.h"

namespace compactor::cli {

// Documented exit codes (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitInputError = 1;
inline constexpr int kExitUsageError = 2;

// Options every command that reads a session shares.
struct SessionArgs {
  std::string file;
  bool strict = false;
  bool quiet = false;  // no warnings on stderr
};

void AddSessionArgs(CLI::App* cmd, SessionArgs* args);

// Loads a session; warnings go to stderr (at most 20 lines plus a count).
// Shows progress on a terminal for large files.
Result<std::unique_ptr<Session>> LoadSession(const SessionArgs& args);

// Compaction settings: a settings file plus per-option overrides.
struct SettingsArgs {
  std::string settings_file;
  std::optional<int64_t> keep_recent_tokens;
  std::optional<int64_t> reserve_tokens;
  std::string keep_policy;
  std::optional<int> keep_turns;
  std::optional<int> keep_messages;
  std::optional<int64_t> context_window;
  std::string tokenizer;
};
void AddSettingsArgs(CLI::App* cmd, SettingsArgs* args);
// Loads the file (warnings on stderr), applies the overrides, validates.
Result<CompactionSettings> ResolveSettings(const SettingsArgs& args);

// Prints "compactor: <message>" on stderr and returns the exit code for `s`.
int Fail(const Status& s);

// Writes bytes to stdout (whole, retrying on short writes).
void Print(std::string_view s);

// The exit code a subcommand set; the dispatcher returns it.
int& ExitCode();

}  // namespace compactor::cli

#endif  // COMPACTOR_CLI_COMMON_H_
