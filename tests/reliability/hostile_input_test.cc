// Hostile input and resource faults (issue 12, cases 3, 4, 5, 8, 9): every
// command under memory limits, input nested past any stack, a file truncated
// by another process while it is mapped, stdout on a full disk, pipes and
// FIFOs beyond the input limit, unclear warnings. Each case runs the real
// binary: the failures being guarded against are signal deaths and exit codes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace compactor {
namespace {

using testing::ReadFileOrDie;
using testing::ResetSignalsForExec;
using testing::RunCli;
using testing::RunProgram;
using testing::RunResult;
using testing::TempDir;

constexpr char kHeader[] =
    R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})"
    "\n";

std::string Entry(int i, const std::string& parent, const std::string& text) {
  const std::string p = parent.empty() ? "null" : "\"" + parent + "\"";
  if (i % 2 == 0) {
    return R"({"type":"message","id":"e)" + std::to_string(i) + R"(","parentId":)" + p +
           R"(,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":")" +
           text +
           R"(","timestamp":1}})"
           "\n";
  }
  return R"({"type":"message","id":"e)" + std::to_string(i) + R"(","parentId":)" + p +
         R"(,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"t)" +
         std::to_string(i) +
         R"(","name":"read","arguments":{"path":"/w/f.txt"}},{"type":"text","text":")" + text +
         R"("}],"provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15},"stopReason":"stop","timestamp":2}})"
         "\n";
}

// A linear session of `n` messages of about `text_bytes` bytes each.
std::string Session(int n, size_t text_bytes) {
  std::string s = kHeader;
  std::string text(text_bytes, 'x');
  for (int i = 0; i < n; ++i) s += Entry(i, i == 0 ? "" : "e" + std::to_string(i - 1), text);
  return s;
}

// A tool call whose arguments nest `depth` arrays deep.
std::string DeepEntry(int i, const std::string& parent, size_t depth) {
  return R"({"type":"message","id":"e)" + std::to_string(i) + R"(","parentId":")" + parent +
         R"(","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"t","name":"bash","arguments":{"x":)" +
         std::string(depth, '[') + std::string(depth, ']') +
         R"(}}],"provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2},"stopReason":"toolUse","timestamp":2}})"
         "\n";
}

// Runs the CLI through sh with a shell prefix (a limit, a redirection).
RunResult RunShell(const std::string& script) { return RunProgram({"/bin/sh", "-c", script}); }

std::string Quote(const std::string& s) { return "'" + s + "'"; }

bool Died(const RunResult& r) { return r.exit_code >= 128; }

// --- case 4: nesting --------------------------------------------------------

TEST(HostileInput, DeepNestingIsSkippedWithAWarningNotACrash) {
  TempDir d;
  std::string text = Session(6, 20);
  text += DeepEntry(6, "e5", 60000);
  text += Entry(7, "e6", "after");
  const std::string f = d.Write("deep.jsonl", text);
  const std::vector<std::vector<std::string>> commands = {
      {"stats", f},          {"tokens", f},
      {"plan", f},           {"context", f},
      {"tree", f, "--json"}, {"compact", f, "--dry-run"},
      {"migrate", f},        {"prune", f, "--dry-run"}};
  for (const auto& args : commands) {
    RunResult r = RunCli(args);
    EXPECT_FALSE(Died(r)) << args[0] << " died: " << r.exit_code;
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(f + ":8: JSON nested deeper than 1024 levels; line skipped"),
              std::string::npos)
        << args[0] << ": " << r.err;
    // The entry after it now hangs from nothing: said too.
    EXPECT_NE(r.err.find(f + ":9: parentId \"e6\" names no entry in the file"), std::string::npos)
        << args[0] << ": " << r.err;
  }
  RunResult strict = RunCli({"stats", f, "--strict"});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_EQ(strict.err, "compactor: " + f + ":8: JSON nested deeper than 1024 levels\n");
}

TEST(HostileInput, NestingUpToTheLimitIsRead) {
  TempDir d;
  // 1024 levels in all: the message object, content array, block, arguments...
  std::string text = Session(2, 20) + DeepEntry(2, "e1", 1000);
  const std::string f = d.Write("ok.jsonl", text);
  for (const char* cmd : {"stats", "tokens", "plan", "context"}) {
    RunResult r = RunCli({cmd, f, "--json"});
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    EXPECT_EQ(r.err, "") << cmd;
  }
}

// --- case 3: memory limits --------------------------------------------------

// Every command under a few address-space limits: it either does exactly what
// it does without a limit, or exits 4 saying "out of memory" with the session
// untouched and nothing else written. Never exit 1 (a data error), never a
// signal, never a different result with exit 0.
TEST(HostileInput, EveryCommandUnderMemoryLimits) {
  TempDir d;
  // Over 16 MiB: read by two threads.
  const std::string original = Session(12000, 1500);
  ASSERT_GT(original.size(), size_t{17} << 20);
  const std::string cli = COMPACTOR_CLI_PATH;
  struct Command {
    std::string name;
    std::vector<std::string> args;  // FILE stands for the session, OUT for an output path
    bool deterministic = true;      // false: appends an entry with a random id
  };
  const std::vector<Command> commands = {
      {"context", {"context", "FILE", "--json"}},
      {"stats", {"stats", "FILE", "--json"}},
      {"tree", {"tree", "FILE", "--json"}},
      {"tokens", {"tokens", "FILE", "--json"}},
      {"plan", {"plan", "FILE", "--json"}},
      {"migrate", {"migrate", "FILE", "-o", "OUT", "--json"}},
      {"migrate-in-place", {"migrate", "FILE", "--in-place", "--json"}},
      {"compact", {"compact", "FILE", "--json"}, false},
      {"prune", {"prune", "FILE", "--dry-run", "--json"}},
      {"branch", {"branch", "FILE", "--to", "e5000", "--json"}, false},
  };
  int exhausted = 0;
  for (const Command& c : commands) {
    std::string expected_out;
    std::string expected_file;
    for (int limit_mib : {0, 24, 40, 56, 80, 160}) {
      const std::string dir = d.path() + "/" + c.name + "-" + std::to_string(limit_mib);
      ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
      const std::string file = dir + "/s.jsonl";
      { std::ofstream(file, std::ios::binary) << original; }
      std::string cmd = limit_mib > 0 ? "ulimit -v " + std::to_string(limit_mib << 10) + "; " : "";
      cmd += "exec " + Quote(cli);
      for (const std::string& a : c.args) {
        cmd += " " + Quote(a == "FILE" ? file : a == "OUT" ? dir + "/out.jsonl" : a);
      }
      RunResult r = RunShell(cmd);
      // Paths differ between runs; compare the output with them removed.
      std::string out = r.out;
      for (size_t p; (p = out.find(dir)) != std::string::npos;) out.replace(p, dir.size(), "DIR");
      const std::string label = c.name + " under " + std::to_string(limit_mib) + " MiB";
      ASSERT_FALSE(Died(r)) << label << " died: " << r.exit_code << " " << r.err;
      if (limit_mib == 0) {
        ASSERT_EQ(r.exit_code, 0) << label << ": " << r.err;
        expected_out = out;
        expected_file = ReadFileOrDie(file);
        continue;
      }
      if (r.exit_code == 4) {
        ++exhausted;
        EXPECT_NE(r.err.find("out of memory"), std::string::npos) << label << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << label << ": " << r.err;
        EXPECT_TRUE(ReadFileOrDie(file) == original) << label << ": the session changed";
        EXPECT_NE(::access((dir + "/out.jsonl").c_str(), F_OK), 0) << label << ": wrote OUT";
        continue;
      }
      ASSERT_EQ(r.exit_code, 0) << label << ": " << r.err;
      if (c.deterministic) {
        EXPECT_TRUE(out == expected_out) << label << ": a different result";
        EXPECT_TRUE(ReadFileOrDie(file) == expected_file) << label << ": a different file";
      } else {
        // New entries carry random ids and the time: the file must still hold
        // every entry it held, and one more.
        RunResult stats = RunCli({"stats", file, "--json", "-q"});
        ASSERT_EQ(stats.exit_code, 0) << label << ": " << stats.err;
        EXPECT_GT(nlohmann::json::parse(stats.out)["entries"].get<int>(), 12000) << label;
      }
    }
  }
  // The limits must bite somewhere, or the test proves nothing.
  EXPECT_GT(exhausted, 0);
}

// Out of memory while a JSON document of the output is built, dumped or
// destroyed (nlohmann's destructor allocates and is noexcept: a bad_alloc
// there used to end in std::terminate, SIGABRT), or while the command line
// itself is built. For each --json command the smallest address-space limit
// it succeeds under is found, then it runs under every limit below it, in
// steps of 256 KiB, down to where the program cannot start: the dynamic
// loader fails (exit 127) or a static initializer of the C++ runtime or a
// library runs out (std::terminate before main; no handler can reach it).
// That floor is where `compactor --version` cannot run either. Above it every
// run must succeed as without a limit or exit 4 with the message, never die
// of a signal.
TEST(HostileInput, JsonOutputUnderTightMemoryLimits) {
  TempDir d;
  const std::string original = Session(3000, 300);
  const std::string cli = COMPACTOR_CLI_PATH;
  const std::vector<std::vector<std::string>> commands = {
      {"context", "FILE", "--json"},
      {"stats", "FILE", "--json"},
      {"tree", "FILE", "--json"},
      {"tokens", "FILE", "--json"},
      {"plan", "FILE", "--json"},
      {"migrate", "FILE", "--json", "-o", "OUT"},
      {"compact", "FILE", "--json", "--dry-run"},
      {"prune", "FILE", "--json", "--dry-run"},
      {"branch", "FILE", "--json", "--dry-run", "--to", "e1500"},
  };
  for (const auto& args : commands) {
    const std::string dir = d.path() + "/" + args[0];
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    const std::string file = dir + "/s.jsonl";
    { std::ofstream(file, std::ios::binary) << original; }
    auto run = [&](int64_t limit_kib, bool version_only = false) {
      ::unlink((dir + "/out.jsonl").c_str());
      std::string cmd = limit_kib > 0 ? "ulimit -v " + std::to_string(limit_kib) + "; " : "";
      cmd += "exec " + Quote(cli);
      if (version_only) return RunShell(cmd + " --version");
      for (const std::string& a : args)
        cmd += " " + Quote(a == "FILE" ? file : a == "OUT" ? dir + "/out.jsonl" : a);
      return RunShell(cmd);
    };
    const RunResult unlimited = run(0);
    ASSERT_EQ(unlimited.exit_code, 0) << args[0] << ": " << unlimited.err;
    // The smallest limit that succeeds, to 64 KiB.
    int64_t low = 1 << 10, high = 1 << 20;  // KiB
    while (high - low > 64) {
      const int64_t mid = (low + high) / 2;
      const RunResult r = run(mid);
      ASSERT_FALSE(Died(r)) << args[0] << " under " << mid << " KiB died: " << r.exit_code << " "
                            << r.err;
      (r.exit_code == 0 ? high : low) = mid;
    }
    int exhausted = 0;
    for (int64_t limit = high; limit > 0; limit -= 256) {
      const RunResult r = run(limit);
      const std::string label = args[0] + " under " + std::to_string(limit) + " KiB";
      if (r.exit_code == 127 || Died(r)) {
        const RunResult start = run(limit, /*version_only=*/true);
        if (start.exit_code == 127 || Died(start)) break;  // the floor: it cannot start
      }
      ASSERT_FALSE(Died(r)) << label << " died: " << r.exit_code << " " << r.err;
      if (r.exit_code == 4) {
        ++exhausted;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << label << ": " << r.err;
        EXPECT_NE(r.err.find("out of memory"), std::string::npos) << label << ": " << r.err;
        EXPECT_EQ(r.out, "") << label;
      } else {
        EXPECT_EQ(r.exit_code, 0) << label << ": " << r.err;
      }
      EXPECT_TRUE(ReadFileOrDie(file) == original) << label << ": the session changed";
    }
    EXPECT_GT(exhausted, 0) << args[0] << ": no limit was tight enough";
  }
}

// The case of issue 12: a few huge lines, where the JSON parser's own buffers
// run out (simdjson reports it as an error code, which was taken for a
// malformed line: `migrate --in-place` then wrote the file without them).
TEST(HostileInput, ParserUnderMemoryLimitIsNeverAMalformedLine) {
  TempDir d;
  const std::string original = Session(4, size_t{12} << 20);  // 4 lines of 12 MiB
  const std::string cli = COMPACTOR_CLI_PATH;
  int exhausted = 0;
  for (int limit_mib : {120, 180, 260}) {
    const std::string file = d.Write("huge-" + std::to_string(limit_mib) + ".jsonl", original);
    RunResult r = RunShell("ulimit -v " + std::to_string(limit_mib << 10) + "; exec " + Quote(cli) +
                           " migrate " + Quote(file) + " --in-place");
    ASSERT_FALSE(Died(r)) << limit_mib << ": " << r.exit_code;
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 4) << limit_mib << ": " << r.err;
    EXPECT_EQ(r.err.find("invalid JSON"), std::string::npos) << limit_mib << ": " << r.err;
    EXPECT_TRUE(ReadFileOrDie(file) == original) << limit_mib << ": the session changed";
    if (r.exit_code == 4) ++exhausted;
  }
  EXPECT_GT(exhausted, 0);
}

// --- case 5: truncation while mapped ------------------------------------------

// True once process `pid` has `path` mapped (its /proc/PID/maps names it).
bool Mapped(pid_t pid, const std::string& path) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(path) != std::string::npos) return true;
  return false;
}

TEST(HostileInput, TruncationWhileMappedIsAnErrorNotASignal) {
  TempDir d;
  const std::string text = Session(30000, 3000);  // ~100 MB: read for a while
  const std::string cli = COMPACTOR_CLI_PATH;
  int truncated_seen = 0;
  for (const char* command : {"stats", "tree", "migrate", "context"}) {
    const std::string f = d.Write(std::string(command) + ".jsonl", text);
    pid_t pid = fork();
    if (pid == 0) {
      ResetSignalsForExec();
      int null = ::open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      execl(cli.c_str(), cli.c_str(), command, f.c_str(), "-q", static_cast<char*>(nullptr));
      _exit(127);
    }
    ASSERT_GT(pid, 0);
    // Truncate as soon as the file is mapped: a real other process would be
    // no different, only less punctual.
    for (int i = 0; i < 20000 && !Mapped(pid, f); ++i)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    ASSERT_EQ(::truncate(f.c_str(), 4096), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_FALSE(WIFSIGNALED(status)) << command << " died of signal " << WTERMSIG(status);
    // Finished before the truncation reached it (0), or said so (1).
    ASSERT_TRUE(WIFEXITED(status));
    const int code = WEXITSTATUS(status);
    EXPECT_TRUE(code == 0 || code == 1) << command << " exit " << code;
    if (code == 1) ++truncated_seen;
  }
  // And the message, for one command run under the same conditions.
  const std::string f = d.Write("again.jsonl", text);
  std::string script = "exec " + Quote(cli) + " stats " + Quote(f) + " -q >/dev/null";
  int in[2];
  ASSERT_EQ(pipe(in), 0);
  pid_t pid = fork();
  if (pid == 0) {
    ResetSignalsForExec();
    dup2(in[1], 2);
    close(in[0]);
    execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[1]);
  for (int i = 0; i < 20000 && !Mapped(pid, f); ++i)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  ASSERT_EQ(::truncate(f.c_str(), 4096), 0);
  std::string err;
  char buf[4096];
  for (ssize_t n; (n = read(in[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(n));
  close(in[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "died of signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 1) {
    ++truncated_seen;
    EXPECT_EQ(err, "compactor: " + f + ": truncated by another process while it was read\n");
  }
  EXPECT_GT(truncated_seen, 0) << "no run saw the truncation";
}

// --- case 8: stdout, stdin, FIFOs --------------------------------------------

TEST(HostileInput, AFailedWriteToStdoutIsAnError) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  TempDir d;
  const std::string f = d.Write("s.jsonl", Session(50, 100));
  const std::string cli = COMPACTOR_CLI_PATH;
  for (const char* cmd : {"context", "stats", "tree", "migrate"}) {
    RunResult r =
        RunShell("exec " + Quote(cli) + " " + cmd + " " + Quote(f) + " --json >/dev/full");
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.err;
    EXPECT_EQ(r.err, "compactor: stdout: write failed: No space left on device\n") << cmd;
  }
  // Large output (written around stdio) too.
  const std::string big = d.Write("big.jsonl", Session(200, 4000));
  RunResult r = RunShell("exec " + Quote(cli) + " context " + Quote(big) + " --json >/dev/full");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "compactor: stdout: write failed: No space left on device\n");
}

TEST(HostileInput, StdinIsBoundedAndReadWhole) {
  const std::string text((size_t{3} << 20) + 5, 'a');
  RunResult ok = RunCli({"tokens", "-", "--json"}, text);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["bytes"], text.size());
  RunResult over = RunCli({"tokens", "-", "--input-limit-mib", "2"}, text);
  EXPECT_EQ(over.exit_code, 1);
  EXPECT_EQ(over.err,
            "compactor: stdin: more than 2 MiB from a pipe, FIFO or device (the input limit, "
            "--input-limit-mib)\n");
  EXPECT_EQ(over.out, "");
  // Exactly the limit is fine.
  RunResult exact = RunCli({"tokens", "-", "--input-limit-mib", "3", "--json"},
                           std::string(size_t{3} << 20, 'a'));
  EXPECT_EQ(exact.exit_code, 0) << exact.err;
}

// Runs `compactor ARGS` on FIFO while a writer feeds it SRC. The writer gets
// the FIFO open (read-write, which never blocks on Linux) before it forks, so
// it is a writer before the CLI opens the FIFO: a writer that opened later
// would let the CLI see a FIFO without writers, which is an empty file. The
// writer also holds a read end, so it never gets SIGPIPE; once the CLI is done
// it is killed, because with the CLI gone nobody reads what it still has.
RunResult ReadFifoWhileFed(const std::string& fifo, const std::string& src,
                           const std::string& args) {
  return RunShell("exec 3<>" + Quote(fifo) + "; cat " + Quote(src) + " >&3 & w=$!; exec 3>&-; " +
                  Quote(COMPACTOR_CLI_PATH) + " " + args +
                  "; rc=$?; kill $w 2>/dev/null; wait $w 2>/dev/null; exit $rc");
}

TEST(HostileInput, FifoSessionsAreReadUpToTheLimit) {
  TempDir d;
  const std::string fifo = d.path() + "/s.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string src = d.Write("big.jsonl", Session(2000, 1500));  // ~4 MB
  RunResult r = ReadFifoWhileFed(fifo, src, "stats " + Quote(fifo) + " --input-limit-mib 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "compactor: " + fifo +
                       ": more than 1 MiB from a pipe, FIFO or device (the input limit, "
                       "--input-limit-mib)\n");
  RunResult ok = ReadFifoWhileFed(fifo, src, "stats " + Quote(fifo) + " --json");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["entries"], 2000);
  // No writer at all: empty, at once.
  RunResult none = RunCli({"stats", fifo});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "compactor: " + fifo + ":1: empty file, not a pi session\n");
}

// --- case 9: clear output -----------------------------------------------------

// The deepest nesting of objects and arrays in JSON text.
size_t MaxNesting(const std::string& json) {
  size_t depth = 0, max = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max = std::max(max, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max;
}

TEST(HostileInput, DanglingParentIsWarned) {
  TempDir d;
  std::string text = Session(4, 10) + Entry(4, "nowhere", "orphan") + Entry(5, "e4", "child");
  const std::string f = d.Write("s.jsonl", text);
  RunResult r = RunCli({"context", f, "--json"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "compactor: warning: " + f +
                       ":6: parentId \"nowhere\" names no entry in the file; paths through this "
                       "entry start here\n");
  EXPECT_EQ(nlohmann::json::parse(r.out)["messages"].size(), 2u);
}

TEST(HostileInput, CompactCapsItsWarnings) {
  TempDir d;
  std::string text = kHeader;
  for (int i = 0; i < 30; ++i) text += "{not json\n";
  text += Session(40, 400).substr(sizeof kHeader - 1);
  const std::string f = d.Write("s.jsonl", text);
  RunResult r = RunCli({"compact", f, "--dry-run", "--keep-recent-tokens", "100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t lines = std::count(r.err.begin(), r.err.end(), '\n');
  EXPECT_EQ(lines, 21u) << r.err;
  EXPECT_NE(r.err.find("compactor: warning: 10 more warnings not shown\n"), std::string::npos)
      << r.err;
}

TEST(HostileInput, TreeJsonIsFlatForLongSessions) {
  TempDir d;
  const std::string f = d.Write("long.jsonl", Session(20000, 5));
  RunResult r = RunCli({"tree", f, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(MaxNesting(r.out), 4u);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], 2);
  ASSERT_EQ(j["entries"].size(), 20000u);
  EXPECT_EQ(j["entries"][19999]["parentId"], "e19998");
  EXPECT_EQ(j["entries"][0]["parentId"], nullptr);
}

}  // namespace
}  // namespace compactor
