// One behaviour suite for every Env: the POSIX Env in a temporary directory
// and the in-memory Env. "Another process" (an append, a truncation, a held
// lock) is a second descriptor on POSIX and MemEnv's control calls in memory.
#include "compactor/env.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <thread>

#include "compactor/mem_env.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The POSIX Env over a fresh temporary directory.
class PosixHarness {
 public:
  Env* env() { return Env::Default(); }
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  void Put(const std::string& path, const std::string& contents) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << path;
    ASSERT_EQ(::write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
    ::close(fd);
  }
  void AppendByOther(const std::string& path, const std::string& bytes) {
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0) << path;
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
  }
  void TruncateByOther(const std::string& path, uint64_t size) {
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(size)), 0) << path;
  }
  // flock locks belong to an open file description: a second one in this
  // process conflicts exactly as another process would.
  void HoldLockByOther(const std::string& path, bool exclusive) {
    other_fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(other_fd_, 0);
    ASSERT_EQ(flock(other_fd_, exclusive ? LOCK_EX : LOCK_SH), 0);
  }
  void ReleaseOther(const std::string&) {
    ::close(other_fd_);
    other_fd_ = -1;
  }
  void SetVar(const std::string& name, const std::string& value) {
    ::setenv(name.c_str(), value.c_str(), 1);
    set_.push_back(name);
  }
  ~PosixHarness() {
    if (other_fd_ >= 0) ::close(other_fd_);
    for (const std::string& name : set_) ::unsetenv(name.c_str());
  }
  static constexpr bool kRealTime = true;

 private:
  testing::TempDir dir_;
  int other_fd_ = -1;
  std::vector<std::string> set_;
};

// The in-memory Env.
class MemHarness {
 public:
  MemHarness() { EXPECT_TRUE(env_->CreateDirs("/tmp/t").ok()); }
  Env* env() { return env_.get(); }
  std::string Path(const std::string& name) const { return "/tmp/t/" + name; }
  void Put(const std::string& path, const std::string& contents) { env_->SetFile(path, contents); }
  void AppendByOther(const std::string& path, const std::string& bytes) {
    ASSERT_TRUE(env_->AppendByOther(path, bytes).ok());
  }
  void TruncateByOther(const std::string& path, uint64_t size) {
    ASSERT_TRUE(env_->TruncateByOther(path, size).ok());
  }
  void HoldLockByOther(const std::string& path, bool exclusive) {
    env_->HoldLockByOther(path, exclusive);
  }
  void ReleaseOther(const std::string& path) { env_->ReleaseOther(path); }
  void SetVar(const std::string& name, const std::string& value) { env_->SetEnvVar(name, value); }
  static constexpr bool kRealTime = false;

 private:
  std::unique_ptr<MemEnv> env_ = NewMemEnv();
};

template <typename H>
class EnvTest : public ::testing::Test {
 protected:
  H h;
  Env* env() { return h.env(); }
};

using Harnesses = ::testing::Types<PosixHarness, MemHarness>;
class HarnessNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, PosixHarness> ? "Posix" : "Mem";
  }
};
TYPED_TEST_SUITE(EnvTest, Harnesses, HarnessNames);

// --- Stat, MapFile, ReadFile -------------------------------------------------

TYPED_TEST(EnvTest, StatTellsKindSizeAndMissing) {
  const std::string f = this->h.Path("a.txt");
  this->h.Put(f, "hello");
  auto info = this->env()->Stat(f);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->kind, FileKind::kRegular);
  EXPECT_EQ(info->identity.size, 5u);
  EXPECT_NE(info->identity.inode, 0u);
  auto dir = this->env()->Stat(this->h.Path(""));
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(dir->kind, FileKind::kDirectory);
  auto missing = this->env()->Stat(this->h.Path("nope"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(this->h.Path("nope") + ": no such file"));
}

TYPED_TEST(EnvTest, MapFileGivesTheBytesAndTheIdentity) {
  const std::string f = this->h.Path("m.jsonl");
  const std::string text = "line one\nline two\n";
  this->h.Put(f, text);
  auto map = this->env()->MapFile(f);
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  EXPECT_EQ(std::string((*map)->data(), (*map)->size()), text);
  EXPECT_EQ((*map)->identity(), this->env()->Stat(f)->identity);
  (*map)->Release(0, text.size());  // a hint: the bytes stay readable
  EXPECT_EQ(std::string((*map)->data(), (*map)->size()), text);

  const std::string empty = this->h.Path("empty");
  this->h.Put(empty, "");
  auto e = this->env()->MapFile(empty);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->size(), 0u);

  EXPECT_EQ(this->env()->MapFile(this->h.Path("nope")).status().code(), StatusCode::kNotFound);
  auto dir = this->env()->MapFile(this->h.Path(""));
  EXPECT_EQ(dir.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(dir.status().message(), HasSubstr("is a directory"));
}

// What "changed since read" compares: an append or a truncation by another
// process changes the identity; the mapping keeps the bytes it was opened with.
TYPED_TEST(EnvTest, IdentityChangesWhenAnotherProcessWrites) {
  const std::string f = this->h.Path("s.jsonl");
  this->h.Put(f, "0123456789\n");
  auto map = this->env()->MapFile(f);
  ASSERT_TRUE(map.ok());
  const FileIdentity read = (*map)->identity();
  EXPECT_EQ(this->env()->Stat(f)->identity, read);
  this->h.AppendByOther(f, "more\n");
  FileIdentity appended = this->env()->Stat(f)->identity;
  EXPECT_NE(appended, read);
  EXPECT_EQ(appended.size, 16u);
  EXPECT_EQ(std::string((*map)->data(), (*map)->size()), "0123456789\n");
  this->h.TruncateByOther(f, 4);
  EXPECT_EQ(this->env()->Stat(f)->identity.size, 4u);
  EXPECT_NE(this->env()->Stat(f)->identity, read);
  // (The mapped bytes past the new end are not touched: on POSIX that faults.)
}

TYPED_TEST(EnvTest, ReadFileReadsWholeFilesAndRefusesDirectories) {
  const std::string f = this->h.Path("notes.md");
  this->h.Put(f, std::string(200000, 'n'));
  auto r = this->env()->ReadFile(f);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, std::string(200000, 'n'));
  EXPECT_EQ(this->env()->ReadFile(this->h.Path("nope")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->env()->ReadFile(this->h.Path("")).status().code(),
            StatusCode::kFailedPrecondition);
}

// --- AppendLines ---------------------------------------------------------------

// The bytes go as given: whether a tail without its newline is torn or a
// write in progress is the writer's decision (writer.h; write_protocol_test).
TYPED_TEST(EnvTest, AppendLinesWritesWholeLinesAsGiven) {
  const std::string f = this->h.Path("s.jsonl");
  this->h.Put(f, "{\"a\":1}\n{\"par");
  ASSERT_TRUE(this->env()->AppendLines(f, {"t\"}", "{\"c\":3}"}, false).ok());
  EXPECT_EQ(*this->env()->ReadFile(f), "{\"a\":1}\n{\"part\"}\n{\"c\":3}\n");
  ASSERT_TRUE(this->env()->AppendLines(f, {"{\"d\":4}"}, true).ok());  // with fsync
  EXPECT_EQ(*this->env()->ReadFile(f), "{\"a\":1}\n{\"part\"}\n{\"c\":3}\n{\"d\":4}\n");
  ASSERT_TRUE(this->env()->AppendLines(f, {}, false).ok());  // nothing to add

  const std::string missing = this->h.Path("missing.jsonl");
  EXPECT_EQ(this->env()->AppendLines(missing, {"{}"}, false).code(), StatusCode::kNotFound);
  EXPECT_EQ(this->env()->Stat(missing).status().code(), StatusCode::kNotFound);  // not created
  EXPECT_FALSE(this->env()->AppendLines(this->h.Path(""), {"{}"}, false).ok());
}

// Writers that hold the sidecar lock (as every Compactor writer does).
TYPED_TEST(EnvTest, ConcurrentAppendersNeverMixLines) {
  const std::string f = this->h.Path("s.jsonl");
  this->h.Put(f, "");
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([this, f, w] {
      for (int i = 0; i < 50; ++i) {
        std::string line(100 + static_cast<size_t>(w) * 37, static_cast<char>('a' + w));
        // As the contract asks: cooperating writers hold the sidecar lock.
        auto lock = this->env()->LockSession(f, LockOptions{});
        ASSERT_TRUE(lock.ok());
        EXPECT_TRUE(this->env()->AppendLines(f, {line}, false).ok());
      }
    });
  }
  for (auto& t : writers) t.join();
  std::string text = *this->env()->ReadFile(f);
  size_t lines = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    ASSERT_NE(nl, std::string::npos);
    std::string_view line(text.data() + pos, nl - pos);
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.find_first_not_of(line[0]), std::string_view::npos) << "mixed line";
    EXPECT_EQ(line.size(), 100 + static_cast<size_t>(line[0] - 'a') * 37);
    ++lines;
    pos = nl + 1;
  }
  EXPECT_EQ(lines, 200u);
}

// --- ReplaceFile ---------------------------------------------------------------

TYPED_TEST(EnvTest, ReplaceFileCreatesAndReplacesAtomicallyWithABackup) {
  const std::string f = this->h.Path("s.jsonl");
  ASSERT_TRUE(this->env()->ReplaceFile(f, "v1\n").ok());
  auto created = this->env()->Stat(f);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->mode & 0077, 0u) << "new files are private (0600 before the umask)";
  EXPECT_EQ(*this->env()->ReadFile(f), "v1\n");

  ReplaceOptions backup;
  backup.backup_suffix = ".bak";
  ASSERT_TRUE(this->env()->ReplaceFile(f, "v2\n", backup).ok());
  EXPECT_EQ(*this->env()->ReadFile(f), "v2\n");
  EXPECT_EQ(*this->env()->ReadFile(f + ".bak"), "v1\n");
  EXPECT_NE(this->env()->Stat(f)->identity.inode, created->identity.inode);  // a new file
  ASSERT_TRUE(this->env()->ReplaceFile(f, "v3\n", backup).ok());
  EXPECT_EQ(*this->env()->ReadFile(f + ".bak"), "v2\n");  // the older backup is replaced
  // No temporary file is left behind.
  EXPECT_THAT(testing::Names(this->env(), this->h.Path("")), ElementsAre("s.jsonl", "s.jsonl.bak"));

  ReplaceOptions shared;
  shared.create_mode = 0644;
  const std::string report = this->h.Path("report.html");
  ASSERT_TRUE(this->env()->ReplaceFile(report, "<html>", shared).ok());
  EXPECT_EQ(this->env()->Stat(report)->mode & 0600, 0600u);

  EXPECT_EQ(this->env()->ReplaceFile(this->h.Path(""), "x").code(),
            StatusCode::kFailedPrecondition);
  EXPECT_FALSE(this->env()->ReplaceFile(this->h.Path("no/such/dir/f"), "x").ok());
}

// --- directories -----------------------------------------------------------------

TYPED_TEST(EnvTest, DirectoriesAreCreatedListedAndFilesRemoved) {
  const std::string deep = this->h.Path("a/b/c");
  ASSERT_TRUE(this->env()->CreateDirs(deep).ok());
  ASSERT_TRUE(this->env()->CreateDirs(deep).ok());  // exists: fine
  EXPECT_EQ(this->env()->Stat(deep)->kind, FileKind::kDirectory);
  this->h.Put(this->h.Path("a/z.jsonl"), "z");
  this->h.Put(this->h.Path("a/m.jsonl"), "m");
  EXPECT_THAT(testing::Names(this->env(), this->h.Path("a")),
              ElementsAre("b", "m.jsonl", "z.jsonl"));
  EXPECT_EQ(this->env()->ListDir(this->h.Path("nope")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->env()->CreateDirs(this->h.Path("a/z.jsonl/x")).code(),
            StatusCode::kFailedPrecondition);

  ASSERT_TRUE(this->env()->RemoveFile(this->h.Path("a/z.jsonl")).ok());
  EXPECT_THAT(testing::Names(this->env(), this->h.Path("a")), ElementsAre("b", "m.jsonl"));
  EXPECT_EQ(this->env()->RemoveFile(this->h.Path("a/z.jsonl")).code(), StatusCode::kNotFound);
  EXPECT_FALSE(this->env()->RemoveFile(this->h.Path("a/b")).ok());  // not a file
}

// --- LockSession -------------------------------------------------------------------

TYPED_TEST(EnvTest, SidecarLockIsExclusiveOrSharedAndReleasedByItsHandle) {
  const std::string f = this->h.Path("s.jsonl");
  this->h.Put(f, "x\n");
  LockOptions now;
  now.timeout_ms = 0;
  auto held = this->env()->LockSession(f, now);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_TRUE((*held)->exclusive());
  EXPECT_THAT((*held)->path(), ::testing::EndsWith("s.jsonl.lock"));
  EXPECT_EQ(this->env()->Stat(f + ".lock")->kind, FileKind::kRegular);  // the sidecar file

  auto second = this->env()->LockSession(f, now);
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("s.jsonl.lock"));
  LockOptions shared = now;
  shared.exclusive = false;
  EXPECT_EQ(this->env()->LockSession(f, shared).status().code(), StatusCode::kUnavailable);

  held->reset();  // released
  auto r1 = this->env()->LockSession(f, shared);
  auto r2 = this->env()->LockSession(f, shared);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(this->env()->LockSession(f, now).status().code(), StatusCode::kUnavailable);
  r1->reset();
  r2->reset();
  EXPECT_TRUE(this->env()->LockSession(f, now).ok());
  // The lock file stays: removing it could let two writers lock two files.
  EXPECT_TRUE(this->env()->Stat(f + ".lock").ok());
}

TYPED_TEST(EnvTest, AWaiterGetsTheLockWhenItIsReleased) {
  const std::string f = this->h.Path("s.jsonl");
  this->h.Put(f, "x\n");
  auto held = this->env()->LockSession(f);
  ASSERT_TRUE(held.ok());
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto l = this->env()->LockSession(f);  // waits as long as it takes
    EXPECT_TRUE(l.ok());
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got);
  held->reset();
  waiter.join();
  EXPECT_TRUE(got);

  // With a timeout the wait ends with kUnavailable after about that long.
  auto again = this->env()->LockSession(f);
  LockOptions brief;
  brief.timeout_ms = 60;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(this->env()->LockSession(f, brief).status().code(), StatusCode::kUnavailable);
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(55));
  EXPECT_LT(waited, std::chrono::seconds(5));
}

TYPED_TEST(EnvTest, ALockHeldByAnotherProcessBlocksUntilReleased) {
  const std::string f = this->h.Path("s.jsonl");
  this->h.Put(f, "x\n");
  this->h.HoldLockByOther(f, /*exclusive=*/false);
  LockOptions now;
  now.timeout_ms = 0;
  EXPECT_EQ(this->env()->LockSession(f, now).status().code(), StatusCode::kUnavailable);
  LockOptions shared = now;
  shared.exclusive = false;
  EXPECT_TRUE(this->env()->LockSession(f, shared).ok());  // readers share
  this->h.ReleaseOther(f);
  this->h.HoldLockByOther(f, /*exclusive=*/true);
  EXPECT_EQ(this->env()->LockSession(f, shared).status().code(), StatusCode::kUnavailable);
  this->h.ReleaseOther(f);
  EXPECT_TRUE(this->env()->LockSession(f, now).ok());
}

// --- time, randomness, threads, environment ---------------------------------------

TYPED_TEST(EnvTest, ClocksAndSleep) {
  const int64_t wall = this->env()->NowMs();
  if (TypeParam::kRealTime) {
    EXPECT_NEAR(static_cast<double>(wall), static_cast<double>(std::time(nullptr)) * 1000, 5000);
  } else {
    EXPECT_EQ(wall, 1767225600000);  // MemEnvOptions::start_ms
  }
  const int64_t m0 = this->env()->MonotonicMicros();
  EXPECT_TRUE(this->env()->SleepMs(20, nullptr));
  const int64_t m1 = this->env()->MonotonicMicros();
  EXPECT_GE(m1 - m0, 20000);
  EXPECT_GE(this->env()->NowMs() - wall, 20);

  // Cancellation ends a long sleep promptly.
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    cancel = true;
  });
  auto start = std::chrono::steady_clock::now();
  bool slept = this->env()->SleepMs(60000, [&] { return cancel.load(); });
  auto took = std::chrono::steady_clock::now() - start;
  canceller.join();
  if (TypeParam::kRealTime) {
    EXPECT_FALSE(slept);
    EXPECT_LT(took, std::chrono::seconds(2));
  }
  EXPECT_FALSE(this->env()->SleepMs(1000, [] { return true; }));
}

TYPED_TEST(EnvTest, RandomThreadsAndVariables) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(this->env()->Random64());
  EXPECT_EQ(seen.size(), 1000u);

  EXPECT_GE(this->env()->HardwareThreads(), 1);
  std::atomic<int> ran{0};
  {
    auto t = this->env()->StartThread([&] { ++ran; });
    ASSERT_TRUE(t.ok());
    (*t)->Join();
    EXPECT_EQ(ran, 1);
    auto u = this->env()->StartThread([&] { ++ran; });
    ASSERT_TRUE(u.ok());
  }  // the handle joins when it goes away
  EXPECT_EQ(ran, 2);

  const std::string name = "COMPACTOR_ENV_TEST_VAR_" + std::to_string(::getpid());
  EXPECT_EQ(this->env()->GetEnvVar(name), std::nullopt);
  this->h.SetVar(name, "value");
  EXPECT_EQ(this->env()->GetEnvVar(name), "value");
}

// --- POSIX only -------------------------------------------------------------------

// A FIFO without a writer would block a plain open(): mapping refuses it,
// reading returns what is there (nothing) at once.
TEST(PosixEnvTest, AFifoNeverHangs) {
  testing::TempDir d;
  const std::string fifo = d.path() + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Env* env = Env::Default();
  auto start = std::chrono::steady_clock::now();
  auto map = env->MapFile(fifo);
  EXPECT_EQ(map.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(map.status().message(), HasSubstr("not a regular file"));
  auto read = env->ReadFile(fifo);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, "");
  EXPECT_FALSE(env->AppendLines(fifo, {"{}"}, false).ok());
  EXPECT_EQ(env->ReplaceFile(fifo, "x").code(), StatusCode::kFailedPrecondition);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// A symlinked session: the target is replaced (the link stays a link), the
// mode is kept, and both names share one lock.
TEST(PosixEnvTest, ReplaceFollowsSymlinksAndKeepsTheMode) {
  testing::TempDir d;
  const std::string target = d.Write("real.jsonl", "old\n");
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  const std::string link = d.path() + "/link.jsonl";
  ASSERT_EQ(::symlink("real.jsonl", link.c_str()), 0);
  Env* env = Env::Default();
  ReplaceOptions backup;
  backup.backup_suffix = ".bak";
  ASSERT_TRUE(env->ReplaceFile(link, "new\n", backup).ok());
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(testing::ReadFileOrDie(target), "new\n");
  EXPECT_EQ(testing::ReadFileOrDie(target + ".bak"), "old\n");
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);

  LockOptions now;
  now.timeout_ms = 0;
  auto by_link = env->LockSession(link, now);
  ASSERT_TRUE(by_link.ok());
  EXPECT_EQ((*by_link)->path(), target + ".lock");
  EXPECT_EQ(env->LockSession(target, now).status().code(), StatusCode::kUnavailable);
}

// Errors name the path and carry the system's text.
TEST(PosixEnvTest, ErrorsNameThePathAndTheReason) {
  testing::TempDir d;
  const std::string file = d.Write("plain", "x");  // a file where a directory is expected
  Status s = Env::Default()->ReplaceFile(file + "/new", "x");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), HasSubstr(file + "/new: "));
  EXPECT_THAT(s.message(), HasSubstr(std::strerror(ENOTDIR)));
  Status lock = Env::Default()->LockSession(file + "/s.jsonl").status();
  EXPECT_THAT(lock.message(), HasSubstr(file + "/s.jsonl.lock: open lock file: "));
  Status missing = Env::Default()->AppendLines(d.path() + "/none", {"{}"}, false);
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), d.path() + "/none: no such file (open for append)");
}

}  // namespace
}  // namespace compactor
