#include "support/test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace compactor::testing {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "compactor-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, const std::string& contents) const {
  std::string p = path_ + "/" + name;
  std::ofstream f(p, std::ios::binary);
  f << contents;
  return p;
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

MemDir::MemDir(const MemEnvOptions& options) : env_(NewMemEnv(options)) {
  if (!env_->CreateDirs(path_).ok()) throw std::runtime_error("MemEnv: cannot create " + path_);
}

std::string MemDir::Write(const std::string& name, const std::string& contents) const {
  std::string p = path_ + "/" + name;
  env_->SetFile(p, contents);
  return p;
}

std::string MemDir::Read(const std::string& path) const {
  Result<std::string> r = env_->ReadFile(path);
  if (!r.ok()) throw std::runtime_error("cannot read " + path + ": " + r.status().ToString());
  return std::move(r).value();
}

std::unique_ptr<Session> MemDir::Load(const std::string& path) const {
  LoadOptions options;
  options.env = env_.get();
  Result<std::unique_ptr<Session>> s = Session::Open(path, options);
  if (!s.ok()) throw std::runtime_error("cannot load " + path + ": " + s.status().ToString());
  return std::move(s).value();
}

std::vector<std::string> Names(Env* env, const std::string& dir) {
  Result<std::vector<std::string>> names = env->ListDir(dir);
  if (!names.ok()) return {"<error: " + names.status().ToString() + ">"};
  return std::move(names).value();
}

namespace {

// write(2) that fails with EPIPE instead of killing the test process when the
// program stopped reading its stdin early (as it may: input limits). SIGPIPE
// is blocked in this thread only, around the call, so no child inherits the
// change; one raised meanwhile is taken off the queue.
ssize_t WriteNoSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  const ssize_t n = write(fd, data, size);
  if (n < 0 && errno == EPIPE) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &zero) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return n;
}

}  // namespace

void ResetSignalsForExec() {
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

RunResult RunProgram(const std::vector<std::string>& argv, const std::string& stdin_text) {
  int in[2], out[2], err[2];
  if (pipe(in) || pipe(out) || pipe(err)) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    ResetSignalsForExec();
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(in[1]);
    close(out[0]);
    close(err[0]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Feed stdin and drain both outputs together so no pipe can fill up and block.
  RunResult r;
  size_t written = 0;
  if (stdin_text.empty()) close(in[1]);
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  bool in_open = !stdin_text.empty(), out_open = true, err_open = true;
  char buf[1 << 16];
  while (out_open || err_open) {
    std::vector<pollfd> fds;
    if (out_open) fds.push_back({out[0], POLLIN, 0});
    if (err_open) fds.push_back({err[0], POLLIN, 0});
    if (in_open) fds.push_back({in[1], POLLOUT, 0});
    if (poll(fds.data(), fds.size(), 120000) <= 0) break;  // bounded: 2 minutes without output
    for (const pollfd& p : fds) {
      if (!p.revents) continue;
      if (p.fd == in[1]) {
        ssize_t n = WriteNoSigpipe(in[1], stdin_text.data() + written, stdin_text.size() - written);
        if (n > 0) written += static_cast<size_t>(n);
        if (n < 0 || written == stdin_text.size()) {
          close(in[1]);
          in_open = false;
        }
        continue;
      }
      ssize_t n = read(p.fd, buf, sizeof buf);
      if (n <= 0) {
        (p.fd == out[0] ? out_open : err_open) = false;
        continue;
      }
      (p.fd == out[0] ? r.out : r.err).append(buf, static_cast<size_t>(n));
    }
  }
  if (in_open) close(in[1]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

RunResult RunCli(const std::vector<std::string>& args, const std::string& stdin_text) {
  std::vector<std::string> argv{COMPACTOR_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProgram(argv, stdin_text);
}

std::string FixturePath(const std::string& relative) {
  return std::string(COMPACTOR_SOURCE_DIR) + "/tests/fixtures/" + relative;
}

bool HaveNode() { return std::system("command -v node >/dev/null 2>&1") == 0; }

}  // namespace compactor::testing
