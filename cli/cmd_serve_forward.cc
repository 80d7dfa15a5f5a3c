// `compactor serve` runs the compactor-serve program with the same arguments
// (execv: same process id, so signals reach the server). The server links the
// HTTP library and, through it, OpenSSL; keeping them out of this program
// keeps the start-up of every other command as it was (docs/serve.md).
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"

namespace compactor::cli {
namespace {

// COMPACTOR_SERVE_BIN, else compactor-serve next to this program.
std::string ServeProgram() {
  if (const char* env = std::getenv("COMPACTOR_SERVE_BIN"); env != nullptr && *env != '\0') {
    return env;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "compactor-serve";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + "compactor-serve";
}

}  // namespace

void RegisterServeForward(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("serve", kServeDescription);
  cmd->prefix_command();
  cmd->allow_extras();
  cmd->set_help_flag();  // compactor-serve prints the help
  cmd->callback([cmd] {
    std::string program = ServeProgram();
    std::vector<std::string> args = cmd->remaining();
    std::vector<char*> argv;
    argv.push_back(program.data());
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    execv(program.c_str(), argv.data());
    ExitCode() = Fail(Status::Unavailable("cannot run " + program + ": " + std::strerror(errno)));
  });
}

}  // namespace compactor::cli
