// compactor-serve: the program behind `compactor serve` (cmd_serve.cc says
// why it is a program of its own). Run directly or through `compactor serve`,
// it parses the same command line: `compactor-serve [OPTIONS]` is
// `compactor serve [OPTIONS]`.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"

int main(int argc, char** argv) {
  using namespace compactor::cli;
  CLI::App app{
      "compactor: keeps LLM agent sessions (pi session files) inside their context window"};
  app.name("compactor");
  app.require_subcommand(1);
  app.footer(kExitCodesFooter);
  RegisterServe(app);
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);
  args.emplace_back("serve");  // CLI11 takes the arguments in reverse order
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsageError;
  } catch (const std::bad_alloc&) {
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
