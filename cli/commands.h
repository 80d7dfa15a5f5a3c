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

}  // namespace compactor::cli

#endif  // COMPACTOR_CLI_COMMANDS_H_
