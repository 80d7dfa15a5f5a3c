#include "tools.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace agent {
namespace {

using Json = nlohmann::json;

std::string StringArg(const Json& args, const char* key, bool* ok) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_string()) {
    *ok = false;
    return "";
  }
  return it->get<std::string>();
}

}  // namespace

std::vector<compactor::LlmTool> Tools::Definitions() const {
  std::vector<compactor::LlmTool> tools = {
      {"read", "Read a text file (path relative to the working directory).",
       R"({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]})"},
      {"write", "Create or overwrite a text file with the given content.",
       R"({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},)"
       R"("required":["path","content"]})"},
      {"bash", "Run a shell command in the working directory; returns its output and exit code.",
       R"({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]})"},
  };
  if (!o_.notes_path.empty()) {
    tools.push_back(
        {"write_notes",
         "Replace your working notes. Keep them current: the goal, the user's constraints, "
         "decisions and why, files changed, what is done and the next step. When the "
         "conversation is compacted, these notes are what you keep of the older history.",
         R"({"type":"object","properties":{"content":{"type":"string"}},"required":["content"]})"});
  }
  return tools;
}

ToolOutput Tools::Run(const compactor::LlmToolCall& call) const {
  Json args = Json::parse(call.arguments_json, nullptr, false);
  if (args.is_discarded() || !args.is_object()) {
    return {"Invalid arguments for " + call.name + ": not a JSON object", true};
  }
  bool ok = true;
  if (call.name == "read") {
    std::string path = StringArg(args, "path", &ok);
    if (ok) return Read(path);
  } else if (call.name == "write") {
    std::string path = StringArg(args, "path", &ok);
    std::string content = StringArg(args, "content", &ok);
    if (ok) return Write(path, content);
  } else if (call.name == "bash") {
    std::string command = StringArg(args, "command", &ok);
    if (ok) return Bash(command);
  } else if (call.name == "write_notes" && !o_.notes_path.empty()) {
    std::string content = StringArg(args, "content", &ok);
    if (ok) return WriteNotes(content);
  } else {
    return {"Unknown tool: " + call.name, true};
  }
  return {"Missing or non-string argument for " + call.name, true};
}

std::string Tools::Resolve(const std::string& path) const {
  return path.starts_with('/') ? path : o_.workdir + "/" + path;
}

std::string Tools::Cut(std::string text) const {
  if (text.size() <= o_.max_output_bytes) return text;
  size_t keep = o_.max_output_bytes / 2;
  size_t dropped = text.size() - 2 * keep;
  return text.substr(0, keep) + "\n[... " + std::to_string(dropped) + " bytes omitted ...]\n" +
         text.substr(text.size() - keep);
}

ToolOutput Tools::Read(const std::string& path) const {
  auto text = Env()->ReadFile(Resolve(path));
  if (!text.ok()) return {"Cannot read " + path + ": no such file or not readable", true};
  return {Cut(std::move(text).value()), false};
}

ToolOutput Tools::Write(const std::string& path, const std::string& content) const {
  std::string full = Resolve(path);
  size_t slash = full.rfind('/');
  if (slash != std::string::npos && slash > 0) (void)Env()->CreateDirs(full.substr(0, slash));
  // Replaced atomically (a reader such as the notes strategy never sees half a
  // file), readable by others as a plain write would leave it.
  if (!Env()->ReplaceFile(full, content, {"", 0666}).ok()) return {"Cannot write " + path, true};
  return {"Wrote " + std::to_string(content.size()) + " bytes to " + path, false};
}

ToolOutput Tools::WriteNotes(const std::string& content) const {
  ToolOutput w = Write(o_.notes_path, content);
  if (w.is_error) return w;
  return {"Notes saved (" + std::to_string(content.size()) + " bytes).", false};
}

// fork + exec /bin/sh with stdout and stderr on one pipe; the whole process
// group is killed at the timeout so a runaway command cannot hang the agent.
ToolOutput Tools::Bash(const std::string& command) const {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {"bash: cannot create a pipe", true};
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return {"bash: cannot fork", true};
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    if (chdir(o_.workdir.c_str()) != 0) _exit(126);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string output;
  bool timed_out = false;
  const int64_t deadline_us = Env()->MonotonicMicros() + o_.bash_timeout_ms * 1000;
  char buf[8192];
  for (;;) {
    const int64_t left = (deadline_us - Env()->MonotonicMicros()) / 1000;
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // EOF: every writer closed
    // Keep reading past the cap so the child never blocks, but store a bounded amount.
    if (output.size() < 4 * o_.max_output_bytes) output.append(buf, static_cast<size_t>(n));
  }
  if (timed_out) kill(-pid, SIGKILL);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string text = Cut(output);
  if (timed_out) {
    text += "\n[command killed after " + std::to_string(o_.bash_timeout_ms) + " ms]";
    return {text, true};
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (text.empty()) text = "(no output)";
  if (text.back() != '\n') text += '\n';
  text += "[exit code " + std::to_string(code) + "]";
  return {text, code != 0};
}

}  // namespace agent
