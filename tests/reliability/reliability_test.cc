// Real processes against the write protocol (docs/reliability.md):
// - a concurrent appender: a child process that appends by path without a
//   lock, as pi does, while the CLI rewrites or compacts the file; no entry
//   may be lost;
// - SIGKILL torture: the CLI (and a library appender) killed at random
//   moments; afterwards the file loads, every acknowledged entry is there,
//   the next writer ends a torn line and removes the dead run's temp files.
// Bounded for CI; scripts/torture.sh runs longer slices through
// COMPACTOR_RELIABILITY_ITERATIONS / COMPACTOR_TORTURE_KILLS.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "compactor/entries.h"
#include "compactor/session.h"
#include "compactor/writer.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing::ReadFileOrDie;
using testing::ResetSignalsForExec;
using testing::TempDir;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// The CLI in a child process, output discarded. Returns its pid.
pid_t SpawnCli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {COMPACTOR_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    ResetSignalsForExec();
    int null = ::open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  return pid;
}

// Waits for a child: its exit code, or 128 + signal.
int Wait(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A user message entry carrying `marker` (unique per append).
std::string MarkedEntry(const std::string& id, const std::string& parent,
                        const std::string& marker) {
  return MakeMessageEntry({id, parent, "2026-01-01T00:00:09.000Z"},
                          R"({"role":"user","content":")" + marker + R"(","timestamp":9})");
}

// pi's way of appending: open by path, one write, close; no lock. Lines and
// delays are prepared before the fork: the child makes only system calls.
// The child's exit code is how many writes were acknowledged in full.
pid_t StartUnlockedAppender(const std::string& path, const std::vector<std::string>& lines,
                            const std::vector<int>& delays_us) {
  pid_t pid = fork();
  if (pid == 0) {
    int acked = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      usleep(static_cast<useconds_t>(delays_us[i]));
      int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
      if (fd < 0) continue;
      if (::write(fd, lines[i].data(), lines[i].size()) == static_cast<ssize_t>(lines[i].size()))
        ++acked;
      ::close(fd);
    }
    _exit(acked);
  }
  return pid;
}

std::unique_ptr<Session> LoadOrNull(const std::string& path) {
  auto s = Session::Open(path);
  return s.ok() ? std::move(s).value() : nullptr;
}

std::vector<std::string> TempFiles(const std::string& dir) {
  std::vector<std::string> temps;
  for (const std::string& n : testing::Names(Env::Default(), dir))
    if (n.find(".tmp-") != std::string::npos) temps.push_back(n);
  return temps;
}

// The commands under test, each with its starting file.
struct Command {
  std::string name;
  std::string fixture;            // tests/fixtures/pi/...
  std::vector<std::string> args;  // FILE is appended
};

std::vector<Command> Commands(const std::string& grace_ms, const std::string& branch_to) {
  return {
      {"prune",
       "long.v3.jsonl",
       {"prune", "-q", "--protect-tokens", "500", "--minimum-savings", "0", "--grace-ms",
        grace_ms}},
      {"migrate", "long.v1.jsonl", {"migrate", "-q", "--in-place", "--grace-ms", grace_ms}},
      {"mask",
       "long.v3.jsonl",
       {"compact", "-q", "--strategy", "mask", "--context-window", "20000", "--grace-ms",
        grace_ms}},
      {"compact",
       "long.v3.jsonl",
       {"compact", "-q", "--keep-recent-tokens", "2000", "--context-window", "20000"}},
      {"branch", "long.v3.jsonl", {"branch", "-q", "--summarize", "--to", branch_to}},
  };
}

std::string BranchTarget() {
  auto s = LoadOrNull(testing::FixturePath("pi/long.v3.jsonl"));
  return s && s->size() > 5 ? std::string(s->entry(5).id) : "";
}

TEST(Reliability, AConcurrentUnlockedAppenderLosesNothing) {
  const int iterations = EnvInt("COMPACTOR_RELIABILITY_ITERATIONS", 1000);
  const std::vector<Command> commands = Commands("100", BranchTarget());
  std::mt19937 rng(12345);
  TempDir dir;
  const std::string path = dir.path() + "/s.jsonl";
  std::map<std::string, std::string> base;
  for (const Command& c : commands)
    base[c.fixture] = ReadFileOrDie(testing::FixturePath("pi/" + c.fixture));
  int lost = 0, appended = 0, refused = 0;
  std::map<std::string, int> runs;
  for (int it = 0; it < iterations; ++it) {
    const Command& c = commands[static_cast<size_t>(it) % commands.size()];
    dir.Write("s.jsonl", base[c.fixture]);
    auto loaded = LoadOrNull(path);
    ASSERT_TRUE(loaded);
    const std::string leaf(loaded->entry(*loaded->Leaf()).id);
    std::vector<std::string> lines, markers;
    std::vector<int> delays;
    std::string parent = leaf;
    for (int k = 0; k < 4; ++k) {
      const std::string id = "ap" + std::to_string(it) + "x" + std::to_string(k);
      markers.push_back("APPENDED-" + id);
      lines.push_back(MarkedEntry(id, parent, markers.back()) + "\n");
      parent = id;
      delays.push_back(static_cast<int>(rng() % 15000));
    }
    std::vector<std::string> args = c.args;
    args.push_back(path);
    pid_t cli = SpawnCli(args);
    pid_t app = StartUnlockedAppender(path, lines, delays);
    const int acked = Wait(app);
    const int code = Wait(cli);
    // compact and branch may refuse (the file changed under them): never lose.
    ASSERT_TRUE(code == 0 || ((c.name == "compact" || c.name == "branch") && code == 1))
        << c.name << " exited " << code << " at iteration " << it;
    if (code != 0) ++refused;
    ++runs[c.name];
    const std::string text = ReadFileOrDie(path);
    for (int k = 0; k < acked; ++k) {
      if (text.find(markers[static_cast<size_t>(k)]) == std::string::npos) {
        ++lost;
        ADD_FAILURE() << c.name << ": lost " << markers[static_cast<size_t>(k)];
      }
    }
    appended += acked;
    ASSERT_TRUE(LoadOrNull(path)) << c.name << ": the file no longer loads";
    EXPECT_THAT(TempFiles(dir.path()), ::testing::IsEmpty());
  }
  EXPECT_EQ(lost, 0);
  std::printf("[reliability] %d iterations, %d unlocked appends, %d lost, %d refused (", iterations,
              appended, lost, refused);
  for (const auto& [name, n] : runs) std::printf(" %s=%d", name.c_str(), n);
  std::printf(" )\n");
}

// The entries (by id) a file holds; v1 files get ids at load, so they are
// counted, not named.
std::set<std::string> Ids(const Session& s) {
  std::set<std::string> ids;
  for (const Entry& e : s.entries()) ids.insert(std::string(e.id));
  return ids;
}

// A library appender (the runtime's and compact's write path) in a child
// process: appends entries one by one, reporting each acknowledged id on
// `fd`. Runs until killed.
pid_t StartLockedAppender(const std::string& path, int fd, const std::string& leaf, int seed) {
  pid_t pid = fork();
  if (pid == 0) {
    std::string parent = leaf;
    for (int k = 0;; ++k) {
      const std::string id = "la" + std::to_string(seed) + "x" + std::to_string(k);
      std::string big(static_cast<size_t>(100 + (k * 7919) % 20000), 'z');  // up to 5 pages
      if (!AppendLines(path, {MarkedEntry(id, parent, big)}).ok()) _exit(1);
      const std::string ack = id + "\n";
      if (::write(fd, ack.data(), ack.size()) < 0) _exit(1);
      parent = id;
    }
  }
  return pid;
}

TEST(Reliability, SigkillTortureLosesNothingAndLeavesNothingBehind) {
  const int kills = EnvInt("COMPACTOR_TORTURE_KILLS", 1000);
  const std::vector<Command> commands = Commands("20", BranchTarget());
  std::mt19937 rng(777);
  TempDir dir;
  const std::string path = dir.path() + "/s.jsonl";
  std::map<std::string, std::string> base;
  for (const Command& c : commands)
    base[c.fixture] = ReadFileOrDie(testing::FixturePath("pi/" + c.fixture));
  std::map<std::string, int> killed, finished;
  int torn_seen = 0, temps_seen = 0, survived = 0;
  // Kill delays up to about each command's running time (measured once).
  std::map<std::string, int> span_us;
  for (int it = 0; survived < kills; ++it) {
    ASSERT_LT(it, kills * 4) << "too few kills land";
    const size_t pick = static_cast<size_t>(it) % (commands.size() + 1);
    const bool append = pick == commands.size();
    const Command* c = append ? nullptr : &commands[pick];
    const std::string name = append ? "append" : c->name;
    // Start from the fixture when the last state cannot be rewritten again.
    auto before = LoadOrNull(path);
    if (!before || it % 25 == 0 || (!append && c->name == "migrate" && !before->migrated()) ||
        (!append && c->name != "migrate" && before->migrated())) {
      dir.Write("s.jsonl", base[append ? "long.v3.jsonl" : c->fixture]);
      before = LoadOrNull(path);
      ASSERT_TRUE(before);
    }
    const size_t entries_before = before->size();
    const std::set<std::string> ids_before =
        before->migrated() ? std::set<std::string>{} : Ids(*before);
    int pipe_fd[2] = {-1, -1};
    pid_t pid;
    const auto start = std::chrono::steady_clock::now();
    if (append) {
      ASSERT_EQ(pipe(pipe_fd), 0);
      pid =
          StartLockedAppender(path, pipe_fd[1], std::string(before->entry(*before->Leaf()).id), it);
      ::close(pipe_fd[1]);
    } else {
      std::vector<std::string> args = c->args;
      if (c->name == "branch") args.back() = std::string(before->entry(5).id);  // this file's ids
      args.push_back(path);
      pid = SpawnCli(args);
    }
    // The first run of each command is timed, not killed: later kills land
    // anywhere within its running time (and a little after).
    int& span = span_us[name];
    if (span > 0 || append) {
      usleep(static_cast<useconds_t>(rng() % static_cast<unsigned>(std::max(span, 30000))));
      kill(pid, SIGKILL);
    }
    const int code = Wait(pid);
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    std::set<std::string> acked;
    if (append) {
      std::string got;
      char buf[4096];
      for (ssize_t n; (n = ::read(pipe_fd[0], buf, sizeof buf)) > 0;)
        got.append(buf, static_cast<size_t>(n));
      ::close(pipe_fd[0]);
      for (size_t p = 0; p < got.size();) {
        size_t nl = got.find('\n', p);
        acked.insert(got.substr(p, nl - p));
        p = nl + 1;
      }
    }
    if (code == 128 + SIGKILL) {
      ++survived;
      ++killed[name];
    } else {
      ++finished[name];
      if (span == 0) span = static_cast<int>(std::min<int64_t>(took * 11 / 10, 2000000));
      ASSERT_TRUE(code == 0) << name << " exited " << code;
    }
    if (code == 0 && name == "branch") {
      // A finished writer ended any torn line and removed dead temp files.
      EXPECT_THAT(TempFiles(dir.path()), ::testing::IsEmpty()) << "iteration " << it;
      EXPECT_EQ(ReadFileOrDie(path).back(), '\n') << "iteration " << it;
    }
    // The file loads, with every entry it had and every acknowledged append.
    auto after = LoadOrNull(path);
    ASSERT_TRUE(after) << name << ": the file does not load after the kill (iteration " << it
                       << ")";
    EXPECT_GE(after->size(), entries_before) << name << " at iteration " << it;
    const std::set<std::string> ids_after = Ids(*after);
    for (const std::string& id : ids_before)
      if (!ids_after.count(id)) {
        ADD_FAILURE() << name << " lost " << id << " at " << it;
      }
    for (const std::string& id : acked)
      if (!ids_after.count(id)) {
        ADD_FAILURE() << name << " lost acknowledged " << id;
      }
    const std::string text = ReadFileOrDie(path);
    if (!text.empty() && text.back() != '\n') ++torn_seen;
    if (!TempFiles(dir.path()).empty()) ++temps_seen;
    if (HasFailure()) return;
  }
  // The next run of a writer cleans up: no temp file, no torn tail.
  auto last = LoadOrNull(path);
  ASSERT_TRUE(last);
  std::vector<std::string> next =
      last->migrated()
          ? std::vector<std::string>{"migrate", "-q", "--in-place"}
          : std::vector<std::string>{"branch", "-q", "--to", std::string(last->entry(5).id)};
  next.push_back(path);
  EXPECT_EQ(Wait(SpawnCli(next)), 0);
  EXPECT_THAT(TempFiles(dir.path()), ::testing::IsEmpty());
  EXPECT_EQ(ReadFileOrDie(path).back(), '\n');
  std::printf("[torture] %d kills survived (", survived);
  for (const auto& [n, k] : killed) std::printf(" %s=%d", n.c_str(), k);
  std::printf(
      " ), %d runs finished first, torn tails seen %d, temp files seen %d\n",
      [&] {
        int f = 0;
        for (const auto& [n, k] : finished) f += k;
        return f;
      }(),
      torn_seen, temps_seen);
}

// A rewrite by a user who cannot give the file back to its owner (only root
// may chown) refuses instead of handing another user's session to itself.
TEST(Reliability, ARewriteThatCannotKeepTheOwnerRefuses) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run the rewrite as another user";
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "needs setpriv (util-linux)";
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);  // the other user may create files here
  const std::string original = ReadFileOrDie(testing::FixturePath("pi/long.v3.jsonl"));
  const std::string file = dir.Write("s.jsonl", original);  // owned by root
  ASSERT_EQ(::chmod(file.c_str(), 0666), 0);
  testing::RunResult r = testing::RunProgram(
      {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", COMPACTOR_CLI_PATH,
       "prune", file, "-q", "--protect-tokens", "500", "--minimum-savings", "0"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "compactor: " + file +
                       ": belongs to uid 0 gid 0, which a rewrite by this user cannot keep; "
                       "nothing written\n");
  EXPECT_TRUE(ReadFileOrDie(file) == original) << "the session changed";
  EXPECT_THAT(TempFiles(dir.path()), ::testing::IsEmpty());
}

}  // namespace
}  // namespace compactor
