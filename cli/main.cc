// compactor: command-line shell over the library. Parses arguments, calls one
// library function per subcommand and maps Status to exit codes (docs/cli.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "commands.h"
#include "common.h"
#include "compactor/kernel.h"
#include "compactor/version.h"

int main(int argc, char** argv) {
  using namespace compactor::cli;
  CLI::App app{
      "compactor: keeps LLM agent sessions (pi session files) inside their context window"};
  app.require_subcommand(1);
  // The second line names the CPU kernel in use (docs/kernels.md).
  app.set_version_flag("--version", [] {
    std::string out = std::string("compactor ") + compactor::kVersion + "\nkernel: ";
    out += compactor::ActiveKernelName();
    out += " (available:";
    for (std::string_view k : compactor::AvailableKernels()) (out += ' ') += k;
    return out + ")";
  });
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
    std::fputs("compactor: out of memory; nothing written\n", stderr);
    return FinishOutput(kExitInternalError);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compactor: internal error: %s\n", e.what());
    return FinishOutput(kExitInternalError);
  }
  return FinishOutput(ExitCode());
}
