// The example agent's tools: read, write and bash inside a working directory,
// and write_notes for the notes strategy. Deliberately small: this is a
// demonstration of the runtime, not a sandbox (bash runs what the model asks).
#ifndef COMPACTOR_EXAMPLES_AGENT_TOOLS_H_
#define COMPACTOR_EXAMPLES_AGENT_TOOLS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compactor/env.h"
#include "compactor/providers.h"

namespace agent {

struct ToolOutput {
  std::string text;
  bool is_error = false;
};

struct ToolsOptions {
  std::string workdir = ".";
  std::string notes_path;  // empty = no write_notes tool
  int64_t bash_timeout_ms = 30000;
  // Outputs longer than this are cut (head and tail kept) before they enter
  // the session, as real agents do.
  size_t max_output_bytes = 30000;
  // Files and the clock of the read/write tools and the bash timeout; null = Env::Default().
  compactor::Env* env = nullptr;
};

class Tools {
 public:
  explicit Tools(ToolsOptions options) : o_(std::move(options)) {}
  // Definitions sent to the model.
  std::vector<compactor::LlmTool> Definitions() const;
  // Runs one call; unknown tools and bad arguments are error results, never exceptions.
  ToolOutput Run(const compactor::LlmToolCall& call) const;

 private:
  ToolOutput Read(const std::string& path) const;
  ToolOutput Write(const std::string& path, const std::string& content) const;
  ToolOutput Bash(const std::string& command) const;
  ToolOutput WriteNotes(const std::string& content) const;
  std::string Resolve(const std::string& path) const;
  std::string Cut(std::string text) const;
  compactor::Env* Env() const { return compactor::EnvOrDefault(o_.env); }
  ToolsOptions o_;
};

}  // namespace agent

#endif  // COMPACTOR_EXAMPLES_AGENT_TOOLS_H_
