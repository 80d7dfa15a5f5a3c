#include "support/oracle.h"

#include <string>
#include <vector>

namespace compactor::testing {
namespace {

const std::string kOracleDir = std::string(COMPACTOR_SOURCE_DIR) + "/tests/oracle";

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "(no message)" : line;
}

OracleStatus Install() {
  OracleStatus s;
  RunResult r = RunProgram({"bash", kOracleDir + "/install.sh"});
  if (r.exit_code == 0) {
    s.ready = true;
  } else if (r.exit_code == 3) {
    s.tool_missing = true;
    s.message = FirstLine(r.err);
  } else {
    s.message =
        "tests/oracle/install.sh failed (exit " + std::to_string(r.exit_code) + "): " + r.err;
  }
  return s;
}

}  // namespace

const OracleStatus& Oracle() {
  static const OracleStatus status = Install();
  return status;
}

RunResult RunOracle(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"node", kOracleDir + "/oracle.mjs"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv);
}

}  // namespace compactor::testing
