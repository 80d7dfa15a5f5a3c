// Shared plumbing of the CLI commands: loading with warnings on stderr, exit
// codes, output. Each command lives in cli/cmd_<name>.cc and only calls the
// library; see docs/cli.md for the contract.
#ifndef COMPACTOR_CLI_COMMON_H_
#define COMPACTOR_CLI_COMMON_H_

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compactor/context.h"
#include "compactor/providers.h"
#include "compactor/session.h"
#include "compactor/settings.h"
#include "compactor/status.h"
#include "compactor/summarizer.h"

namespace compactor::cli {

// Documented exit codes (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitInputError = 1;
inline constexpr int kExitUsageError = 2;
inline constexpr int kExitInternalError = 4;  // out of memory or a bug (docs/cli.md)

// The default of --input-limit-mib (docs/errors.md).
inline constexpr int64_t kDefaultInputLimitMib = 1024;

// Options every command that reads a session shares.
struct SessionArgs {
  std::string file;
  bool strict = false;
  bool quiet = false;  // no warnings on stderr
  // Set by commands that estimate the context (LoadOptions::message_observer).
  bool estimate_messages = false;
  int64_t input_limit_mib = kDefaultInputLimitMib;  // LoadOptions::max_stream_bytes
};

void AddSessionArgs(CLI::App* cmd, SessionArgs* args);
// --input-limit-mib: the most read from a pipe, FIFO or device.
void AddInputLimitArg(CLI::App* cmd, int64_t* mib);
// `s` with the library's input-limit error ("PATH: more than N bytes (the
// input limit)") said in the CLI's terms: "NAME: more than M MiB from a pipe,
// FIFO or device (the input limit, --input-limit-mib)". Other errors as they are.
Status ExplainInputLimit(const Status& s, const std::string& name, int64_t mib);

// --grace-ms and the help footer of the commands that rewrite FILE in place
// (the write protocol of docs/reliability.md).
void AddRewriteArgs(CLI::App* cmd, int64_t* grace_ms);

// Prints load warnings on stderr: the first kMaxWarnings lines, then (from
// the destructor, or Finish) one line counting the rest. Every command that
// loads a session prints its warnings through one of these.
class WarningPrinter {
 public:
  static constexpr int kMaxWarnings = 20;
  explicit WarningPrinter(bool quiet) : quiet_(quiet), count_(std::make_shared<int>(0)) {}
  WarningPrinter(const WarningPrinter&) = delete;
  WarningPrinter& operator=(const WarningPrinter&) = delete;
  ~WarningPrinter() { Finish(); }
  // For LoadOptions::on_warning; may outlive this object.
  std::function<void(const LoadWarning&)> Callback() const;
  // Prints the count of warnings not shown (once).
  void Finish();

 private:
  bool quiet_;
  bool finished_ = false;
  std::shared_ptr<int> count_;
};

// Loads a session; warnings go to stderr (at most 20 lines plus a count).
// Shows progress on a terminal for large files.
Result<std::unique_ptr<Session>> LoadSession(const SessionArgs& args);

// A loaded session with the context at `leaf` (empty = the file's leaf),
// built through `expander` (nullptr: pi's view).
struct SessionWithContext {
  std::unique_ptr<Session> session;
  SessionContext context;
};
Result<SessionWithContext> LoadWithContext(const SessionArgs& args, const std::string& leaf,
                                           const CompactionExpander* expander = nullptr);

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

// The summarizer named on the command line: "offline" (embedded), or a model
// of the settings file's "models" object (docs/providers.md).
Result<std::unique_ptr<Summarizer>> MakeSummarizer(const std::string& name,
                                                   const std::string& settings_file,
                                                   int64_t reserve_tokens);

// The models of the settings file's "models" object (kInvalidArgument when no
// file was given; `what` names the option that needs it).
Result<std::vector<ModelConfig>> LoadModels(const std::string& settings_file,
                                            const std::string& what);

// Prints "compactor: <message>" on stderr and returns the exit code for `s`:
// 2 for kInvalidArgument, 4 for kResourceExhausted (out of memory), 1 else.
int Fail(const Status& s);

// Writes bytes to stdout (whole, retrying on short writes). A failed write
// (a full disk, a closed pipe when SIGPIPE is ignored) stops the output and
// is remembered: FinishOutput reports it.
void Print(std::string_view s);

// Flushes and closes stdout and checks that every write reached it, and that
// no session file was truncated by another process while it was read. Prints
// the first problem ("compactor: stdout: write failed: <reason>") and returns
// the exit code to use instead of `code` (1), or `code`.
int FinishOutput(int code);

// Writes many pieces to stdout with writev instead of copying them through
// stdio: echoing tens of megabytes of messages from a mapped session is then
// one kernel copy (none for /dev/null). The pieces are not copied, so each
// must stay valid until the next Flush(); Add flushes by itself every 1024
// pieces. Anything printed through stdio before is flushed first.
class GatherWriter {
 public:
  GatherWriter() = default;
  GatherWriter(const GatherWriter&) = delete;
  GatherWriter& operator=(const GatherWriter&) = delete;
  ~GatherWriter() { Flush(); }

  void Add(std::string_view piece);
  void Flush();

 private:
  static constexpr size_t kMaxPieces = 1024;  // IOV_MAX on Linux
  std::vector<std::string_view> pieces_;
};

// The exit code a subcommand set; the dispatcher returns it.
int& ExitCode();

}  // namespace compactor::cli

#endif  // COMPACTOR_CLI_COMMON_H_
