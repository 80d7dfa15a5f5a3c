// One registration function per subcommand (cli/cmd_<name>.cc).
#ifndef COMPACTOR_CLI_COMMANDS_H_
#define COMPACTOR_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace compactor::cli {

void RegisterContext(CLI::App& app);
void RegisterStats(CLI::App& app);
void RegisterTree(CLI::App& app);
void RegisterTokens(CLI::App& app);
void RegisterMigrate(CLI::App& app);
void RegisterCompact(CLI::App& app);
void RegisterBranch(CLI::App& app);
void RegisterPlan(CLI::App& app);
void RegisterPrune(CLI::App& app);
void RegisterEval(CLI::App& app);
void RegisterExport(CLI::App& app);
// `serve` in the compactor program: runs compactor-serve (cmd_serve_forward.cc).
void RegisterServeForward(CLI::App& app);
// The real `serve` command, in the compactor-serve program (cmd_serve.cc).
void RegisterServe(CLI::App& app);

inline constexpr const char* kServeDescription =
    "Run the compaction proxy: an HTTP service between an agent and its model API "
    "(docs/serve.md)";
inline constexpr const char* kExitCodesFooter =
    "Exit codes: 0 ok, 1 input or I/O error (unreadable or invalid session, failed write, "
    "provider failure), 2 usage error, 3 eval --check target missed, 4 out of memory or "
    "internal error (nothing written). Details: docs/errors.md.";

}  // namespace compactor::cli

#endif  // COMPACTOR_CLI_COMMANDS_H_
