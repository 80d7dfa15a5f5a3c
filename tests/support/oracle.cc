#include "support/oracle.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compactor/entries.h"
#include "compactor/writer.h"

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

void ExpectPiBuildsOurContextAfterATurn(const std::string& path, const std::string& parent_id,
                                        const std::string& trace) {
  SCOPED_TRACE(trace);
  ASSERT_TRUE(
      AppendLines(path, {MakeMessageEntry({"after1", parent_id, "2026-01-01T00:00:09.000Z"},
                                          R"({"role":"user","content":"next","timestamp":9})")})
          .ok());
  RunResult pi = RunOracle({"inspect", path, "--messages", "full"});
  ASSERT_EQ(pi.exit_code, 0) << pi.err;
  RunResult ours = RunCli({"context", path, "--json"});
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  const nlohmann::json pj = nlohmann::json::parse(pi.out);
  const nlohmann::json oj = nlohmann::json::parse(ours.out);
  EXPECT_EQ(oj["messages"], pj["contextMessages"]);
  EXPECT_EQ(oj["leafId"], pj["leafId"]);
}

}  // namespace compactor::testing
