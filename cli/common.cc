#include "common.h"

#include <fmt/format.h>
#include <unistd.h>

namespace compactor::cli {

void AddSessionArgs(CLI::App* cmd, SessionArgs* args) {
  cmd->add_option("FILE", args->file, "pi session file (.jsonl)")->required();
  cmd->add_flag("--strict", args->strict,
                "treat a malformed line as an error instead of skipping it");
  cmd->add_flag("-q,--quiet", args->quiet, "do not print load warnings");
}

Result<std::unique_ptr<Session>> LoadSession(const SessionArgs& args) {
  LoadOptions options;
  options.strict = args.strict;
  auto count = std::make_shared<int>(0);
  const bool quiet = args.quiet;
  options.on_warning = [count, quiet](const LoadWarning& w) {
    if (quiet) return;
    if (++*count <= 20) fmt::print(stderr, "compactor: warning: {}\n", w.ToString());
  };
  const bool tty = isatty(STDERR_FILENO);
  if (tty) {
    options.on_progress = [](size_t done, size_t total) {
      fmt::print(stderr, "\rreading {:.0f}% ({} / {} MiB)",
                 100.0 * static_cast<double>(done) / total, done >> 20, total >> 20);
    };
  }
  auto result = Session::Open(args.file, options);
  if (tty && options.on_progress) fmt::print(stderr, "\r\033[K");
  if (*count > 20 && !quiet)
    fmt::print(stderr, "compactor: warning: {} more warnings not shown\n", *count - 20);
  return result;
}

int Fail(const Status& s) {
  fmt::print(stderr, "compactor: {}\n", s.message());
  return s.code() == StatusCode::kInvalidArgument ? kExitUsageError : kExitInputError;
}

void Print(std::string_view s) {
  while (!s.empty()) {
    size_t n = std::fwrite(s.data(), 1, s.size(), stdout);
    if (n == 0) break;
    s.remove_prefix(n);
  }
}

int& ExitCode() {
  static int code = kExitOk;
  return code;
}

}  // namespace compactor::cli
