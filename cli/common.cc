#include "common.h"

#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "compactor/env.h"
#include "compactor/estimate.h"
#include "compactor/llm_summarizer.h"
#include "compactor/providers.h"

namespace compactor::cli {

void AddSessionArgs(CLI::App* cmd, SessionArgs* args) {
  cmd->add_option("FILE", args->file, "pi session file (.jsonl)")->required();
  cmd->add_flag("--strict", args->strict,
                "treat a malformed line as an error instead of skipping it");
  cmd->add_flag("-q,--quiet", args->quiet, "do not print load warnings");
  AddInputLimitArg(cmd, &args->input_limit_mib);
}

void AddInputLimitArg(CLI::App* cmd, int64_t* mib) {
  cmd->add_option("--input-limit-mib", *mib,
                  "most MiB read from a pipe, FIFO or device (default 1024; regular files are "
                  "mapped, whatever their size)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
}

void AddRewriteArgs(CLI::App* cmd, int64_t* grace_ms) {
  cmd->add_option("--grace-ms", *grace_ms,
                  "after replacing FILE, watch the old file this long for entries appended by "
                  "writers that take no lock (default 300)")
      ->check(CLI::NonNegativeNumber);
  // Before the footer every command inherits (the exit codes, main.cc).
  cmd->footer(
      "Rewriting FILE in place takes FILE.lock, carries over entries other processes append "
      "meanwhile (also those that reach the old file within --grace-ms of the rename) and keeps "
      "FILE's owner and mode; a symlink is followed. A writer that keeps FILE open across the "
      "rewrite and appends later writes to the old file (FILE.bak), which no rename can "
      "prevent: stop such writers first (docs/reliability.md).\n\n" +
      cmd->get_footer());
}

std::function<void(const LoadWarning&)> WarningPrinter::Callback() const {
  return [count = count_, quiet = quiet_](const LoadWarning& w) {
    if (quiet) return;
    if (++*count <= kMaxWarnings) fmt::print(stderr, "compactor: warning: {}\n", w.ToString());
  };
}

void WarningPrinter::Finish() {
  if (finished_) return;
  finished_ = true;
  if (*count_ > kMaxWarnings && !quiet_)
    fmt::print(stderr, "compactor: warning: {} more warnings not shown\n", *count_ - kMaxWarnings);
}

Status ExplainInputLimit(const Status& s, const std::string& name, int64_t mib) {
  if (s.code() != StatusCode::kFailedPrecondition || !s.message().ends_with("(the input limit)"))
    return s;
  return Status::FailedPrecondition(fmt::format(
      "{}: more than {} MiB from a pipe, FIFO or device (the input limit, --input-limit-mib)", name,
      mib));
}

Result<std::unique_ptr<Session>> LoadSession(const SessionArgs& args) {
  LoadOptions options;
  options.strict = args.strict;
  if (args.estimate_messages) options.message_observer = TokenEstimateObserver();
  options.max_stream_bytes = static_cast<size_t>(args.input_limit_mib) << 20;
  WarningPrinter warnings(args.quiet);
  options.on_warning = warnings.Callback();
  const bool tty = isatty(STDERR_FILENO);
  if (tty) {
    options.on_progress = [](size_t done, size_t total) {
      fmt::print(stderr, "\rreading {:.0f}% ({} / {} MiB)",
                 100.0 * static_cast<double>(done) / total, done >> 20, total >> 20);
    };
  }
  auto result = Session::Open(args.file, options);
  if (tty && options.on_progress) fmt::print(stderr, "\r\033[K");
  warnings.Finish();
  if (!result.ok()) return ExplainInputLimit(result.status(), args.file, args.input_limit_mib);
  return result;
}

void AddSettingsArgs(CLI::App* cmd, SettingsArgs* args) {
  cmd->add_option("--settings", args->settings_file,
                  "settings file (docs/settings.md); options given here override it");
  cmd->add_option("--keep-recent-tokens", args->keep_recent_tokens,
                  "estimated tokens to keep verbatim (default 20000)");
  cmd->add_option("--reserve-tokens", args->reserve_tokens,
                  "headroom below the context window (default 16384)");
  cmd->add_option("--keep-policy", args->keep_policy,
                  "tokens (default), turns, messages, opencode");
  cmd->add_option("--keep-turns", args->keep_turns,
                  "turns kept by --keep-policy turns (default 6)");
  cmd->add_option("--keep-messages", args->keep_messages,
                  "messages kept by --keep-policy messages (default 4)");
  cmd->add_option("--context-window", args->context_window,
                  "the model's context window (thresholds, opencode tail budget)");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "estimate (default, pi's chars/4), o200k or cl100k (exact; docs/tokenizers.md)");
}

Result<CompactionSettings> ResolveSettings(const SettingsArgs& args) {
  CompactionSettings s;
  if (!args.settings_file.empty()) {
    COMPACTOR_ASSIGN_OR_RETURN(LoadedSettings loaded, LoadSettingsFile(args.settings_file));
    for (const SettingsWarning& w : loaded.warnings)
      fmt::print(stderr, "compactor: warning: {}\n", w.ToString());
    s = loaded.settings;
  }
  if (args.keep_recent_tokens) s.keep_recent_tokens = *args.keep_recent_tokens;
  if (args.reserve_tokens) s.reserve_tokens = *args.reserve_tokens;
  if (args.keep_turns) s.keep_turns = *args.keep_turns;
  if (args.keep_messages) s.keep_messages = *args.keep_messages;
  if (args.context_window) s.context_window = *args.context_window;
  COMPACTOR_RETURN_IF_ERROR(ValidateSettings(s));
  // The names are parsed after the numbers are checked, tokenizer first (the
  // order of the messages a bad command line gets).
  if (!args.tokenizer.empty()) {
    COMPACTOR_ASSIGN_OR_RETURN(s.tokenizer, ParseTokenizerSetting(args.tokenizer));
  }
  if (!args.keep_policy.empty()) {
    Result<KeepPolicy> policy = ParseKeepPolicy(args.keep_policy);
    if (!policy.ok()) {
      return Status::InvalidArgument(fmt::format("unknown keep policy \"{}\"", args.keep_policy));
    }
    s.keep_policy = *policy;
  }
  return s;
}

Result<std::vector<ModelConfig>> LoadModels(const std::string& settings_file,
                                            const std::string& what) {
  if (settings_file.empty()) {
    return Status::InvalidArgument(
        what + " names a model: give the settings file that defines it (--settings FILE)");
  }
  Result<std::string> text = Env::Default()->ReadFile(settings_file);
  if (!text.ok()) return Status::NotFound(settings_file + ": cannot read the settings file");
  return ParseModelConfigs(*text);
}

Result<std::unique_ptr<Summarizer>> MakeSummarizer(const std::string& name,
                                                   const std::string& settings_file,
                                                   int64_t reserve_tokens) {
  if (name.empty() || name == "offline") return NewOfflineSummarizer();
  COMPACTOR_ASSIGN_OR_RETURN(std::vector<ModelConfig> models,
                             LoadModels(settings_file, "--summarizer " + name));
  auto candidates = ResolveCandidates(models, name);
  if (!candidates.ok())
    return Status::InvalidArgument(settings_file + ": " + candidates.status().message());
  LlmSummarizerOptions o;
  o.candidates = std::move(candidates).value();
  o.reserve_tokens = reserve_tokens;
  return NewLlmSummarizer(std::move(o));
}

Result<SessionWithContext> LoadWithContext(const SessionArgs& args, const std::string& leaf,
                                           const CompactionExpander* expander) {
  SessionWithContext out;
  COMPACTOR_ASSIGN_OR_RETURN(out.session, LoadSession(args));
  ContextOptions options;
  if (!leaf.empty()) options.leaf_id = leaf;
  options.expander = expander;
  COMPACTOR_ASSIGN_OR_RETURN(out.context, BuildSessionContext(*out.session, options));
  return out;
}

int Fail(const Status& s) {
  fmt::print(stderr, "compactor: {}\n", s.message());
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return kExitUsageError;
    case StatusCode::kResourceExhausted:
      return kExitInternalError;
    default:
      return kExitInputError;
  }
}

namespace {

// The errno of the first failed write to stdout (0: none). Once set, nothing
// more is written: output with a hole in it is worse than output cut short.
int& StdoutErrno() {
  static int err = 0;
  return err;
}

// Flushes stdio's buffer; false (and StdoutErrno set) when that failed.
bool FlushStdio() {
  if (std::fflush(stdout) == 0 && std::ferror(stdout) == 0) return true;
  if (StdoutErrno() == 0) StdoutErrno() = errno != 0 ? errno : EIO;
  return false;
}

}  // namespace

void Print(std::string_view s) {
  if (StdoutErrno() != 0) return;
  if (s.size() >= (64u << 10)) {
    // Large blocks go straight to the descriptor instead of through stdio's buffer.
    if (!FlushStdio()) return;
    while (!s.empty()) {
      ssize_t n = ::write(STDOUT_FILENO, s.data(), s.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        StdoutErrno() = n < 0 ? errno : EIO;
        return;
      }
      s.remove_prefix(static_cast<size_t>(n));
    }
    return;
  }
  while (!s.empty()) {
    size_t n = std::fwrite(s.data(), 1, s.size(), stdout);
    if (n == 0) {
      StdoutErrno() = errno != 0 ? errno : EIO;
      return;
    }
    s.remove_prefix(n);
  }
}

int FinishOutput(int code) {
  FlushStdio();
  // close() reports errors some file systems only detect then (NFS, quotas).
  // (EBADF: stdout was closed before the start and nothing was written to it.)
  if (std::fclose(stdout) != 0 && StdoutErrno() == 0 && errno != EBADF)
    StdoutErrno() = errno != 0 ? errno : EIO;
  int result = code;
  if (StdoutErrno() != 0) {
    fmt::print(stderr, "compactor: stdout: write failed: {}\n", std::strerror(StdoutErrno()));
    if (result == kExitOk) result = kExitInputError;
  }
  // A command that failed has said why already (the loader reports a
  // truncation it saw itself); one that succeeded may have printed bytes of a
  // mapping that had turned to zeros, and must not exit 0.
  if (result == kExitOk) {
    for (const std::string& path : TruncatedMappedFiles()) {
      fmt::print(stderr, "compactor: {}: truncated by another process while it was read\n", path);
      result = kExitInputError;
      break;  // errors are one line
    }
  }
  return result;
}

void GatherWriter::Add(std::string_view piece) {
  if (piece.empty()) return;
  if (pieces_.size() == kMaxPieces) Flush();
  pieces_.push_back(piece);
}

void GatherWriter::Flush() {
  if (pieces_.empty()) return;
  if (StdoutErrno() != 0 || !FlushStdio()) {
    pieces_.clear();
    return;
  }
  iovec iov[kMaxPieces];
  size_t n = pieces_.size();
  for (size_t i = 0; i < n; ++i) {
    iov[i].iov_base = const_cast<char*>(pieces_[i].data());
    iov[i].iov_len = pieces_[i].size();
  }
  pieces_.clear();
  iovec* cur = iov;
  while (n > 0) {
    ssize_t w = ::writev(STDOUT_FILENO, cur, static_cast<int>(n));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {  // as Print: a closed or failing stdout ends the output
      StdoutErrno() = w < 0 ? errno : EIO;
      return;
    }
    // Skip what was written; a short write can stop inside a piece.
    auto done = static_cast<size_t>(w);
    while (n > 0 && done >= cur->iov_len) {
      done -= cur->iov_len;
      ++cur;
      --n;
    }
    if (n > 0) {
      cur->iov_base = static_cast<char*>(cur->iov_base) + done;
      cur->iov_len -= done;
    }
  }
}

int& ExitCode() {
  static int code = kExitOk;
  return code;
}

}  // namespace compactor::cli
