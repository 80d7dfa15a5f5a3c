// compactor: command-line shell over the library. Parses arguments, calls one
// library function per subcommand and maps Status to exit codes (docs/cli.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>

#include "commands.h"
#include "common.h"

int main(int argc, char** argv) {
  using namespace compactor::cli;
  CLI::App app{
      "compactor: keeps LLM agent sessions (pi session files) inside their context window"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "compactor 0.1.0");
  app.footer(kExitCodesFooter);
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
  RegisterServeForward(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsageError;
  } catch (const std::bad_alloc&) {
    // The library reports errors as values; only running out of memory (or a
    // bug) gets here. Writes are appends or atomic renames: no file is left half done.
    std::fflush(stdout);
    std::fputs("compactor: out of memory\n", stderr);
    return kExitInternalError;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "compactor: internal error: %s\n", e.what());
    return kExitInternalError;
  }
  std::fflush(stdout);
  return ExitCode();
}
