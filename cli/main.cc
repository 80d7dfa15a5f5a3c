// compactor: command-line shell over the library. Parses arguments, calls one
// library function per subcommand and maps Status to exit codes (docs/cli.md).
#include <CLI/CLI.hpp>

#include "commands.h"
#include "common.h"

int main(int argc, char** argv) {
  using namespace compactor::cli;
  CLI::App app{
      "compactor: keeps LLM agent sessions (pi session files) inside their context window"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "compactor 0.1.0");
  app.footer(
      "Exit codes: 0 ok, 1 input error (unreadable or invalid session), 2 usage error, 3 eval "
      "--check target missed.");
  RegisterContext(app);
  RegisterStats(app);
  RegisterTree(app);
  RegisterTokens(app);
  RegisterMigrate(app);
  RegisterCompact(app);
  RegisterBranch(app);
  RegisterPlan(app);
  RegisterPrune(app);
  RegisterEval(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsageError;
  }
  std::fflush(stdout);
  return ExitCode();
}
