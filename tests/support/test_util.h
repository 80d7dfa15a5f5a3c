// Helpers shared by tests: temporary files and running the CLI binary.
#ifndef COMPACTOR_TESTS_SUPPORT_TEST_UTIL_H_
#define COMPACTOR_TESTS_SUPPORT_TEST_UTIL_H_

#include <string>
#include <vector>

namespace compactor::testing {

// A directory removed (recursively) when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  // Writes `contents` to path()/name and returns the full path.
  std::string Write(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

std::string ReadFileOrDie(const std::string& path);

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs the compactor CLI with `args` (no shell involved), optional stdin text.
RunResult RunCli(const std::vector<std::string>& args, const std::string& stdin_text = "");
// Runs any program.
RunResult RunProgram(const std::vector<std::string>& argv, const std::string& stdin_text = "");

// ../shared relative to the repository root, or $COMPACTOR_SHARED_DIR; empty if absent.
std::string SharedDir();
// True when `node` is on PATH.
bool HaveNode();

}  // namespace compactor::testing

#endif  // COMPACTOR_TESTS_SUPPORT_TEST_UTIL_H_
