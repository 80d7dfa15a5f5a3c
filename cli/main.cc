// compactor: command-line shell over the library. Parses arguments, calls one
// library function per subcommand and maps Status to exit codes (docs/cli.md).
#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "commands.h"
#include "common.h"
#include "compactor/kernel.h"
#include "compactor/version.h"

namespace {

// Memory set aside for running out of it. nlohmann's destructors (every
// --json output is a document) allocate while they free and are noexcept: a
// bad_alloc while a document is destroyed, as the stack unwinds from the
// first one, would end in std::terminate (SIGABRT) instead of exit 4. The
// first failed allocation gives this reserve back and throws; the unwinding
// then has room for those destructors. A failure during an unwinding only
// gives the reserve back, so the destructor's allocation is retried. 16 MiB
// covers the stack a destructor builds for an array of a million values.
constexpr size_t kReserveBytes = size_t{16} << 20;
std::atomic<void*> reserve{nullptr};

void OnAllocationFailure() {
  void* spare = reserve.exchange(nullptr);
  if (spare == nullptr) throw std::bad_alloc();  // nothing left to give back
  std::free(spare);
  if (std::uncaught_exceptions() > 0) return;  // unwinding: let the allocation be retried
  throw std::bad_alloc();
}

// Builds the command line and runs the subcommand; out-of-memory and other
// exceptions are main's, since building the command line allocates too.
int Run(int argc, char** argv) {
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
  RegisterExport(app);
  RegisterServeForward(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsageError;
  }
  return FinishOutput(ExitCode());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace compactor::cli;
  // Reserved, not touched: it costs address space (ulimit -v), not memory.
  reserve.store(std::malloc(kReserveBytes));
  std::set_new_handler(OnAllocationFailure);
  try {
    return Run(argc, argv);
  } catch (const std::bad_alloc&) {
    // The library reports errors as values; only running out of memory (or a
    // bug) gets here. Writes are appends or atomic renames: no file is left half done.
    std::fputs("compactor: out of memory; nothing written\n", stderr);
    return FinishOutput(kExitInternalError);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compactor: internal error: %s\n", e.what());
    return FinishOutput(kExitInternalError);
  }
}
