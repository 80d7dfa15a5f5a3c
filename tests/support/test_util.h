// Helpers shared by tests: temporary files and running the CLI binary.
#ifndef COMPACTOR_TESTS_SUPPORT_TEST_UTIL_H_
#define COMPACTOR_TESTS_SUPPORT_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compactor/env.h"
#include "compactor/mem_env.h"

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

// A directory in a fresh MemEnv: tests that control the clock, the random
// ids or inject faults, without touching the disk.
class MemDir {
 public:
  explicit MemDir(const MemEnvOptions& options = {});
  MemEnv* env() const { return env_.get(); }
  const std::string& path() const { return path_; }  // "/work"
  // Writes `contents` to path()/name (MemEnv::SetFile) and returns the full path.
  std::string Write(const std::string& name, const std::string& contents) const;
  // The file's bytes; throws when it cannot be read (like ReadFileOrDie).
  std::string Read(const std::string& path) const;

 private:
  std::unique_ptr<MemEnv> env_;
  std::string path_ = "/work";
};

// The names in a directory of `env` (Env::ListDir), or {"<error: ...>"}.
std::vector<std::string> Names(Env* env, const std::string& dir);

// The real file system with the wall clock stopped at `now_ms` (entry
// timestamps in tests that check real files).
class FixedClockEnv : public EnvWrapper {
 public:
  explicit FixedClockEnv(int64_t now_ms) : EnvWrapper(Env::Default()), now_ms_(now_ms) {}
  int64_t NowMs() override { return now_ms_; }

 private:
  int64_t now_ms_;
};

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
