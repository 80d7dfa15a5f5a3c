// The writer on an Env: appends under the sidecar lock, ids and timestamps
// from the Env's random numbers and clock.
#include "compactor/writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "compactor/entries.h"
#include "compactor/mem_env.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using ::testing::HasSubstr;
using testing::MemDir;

const std::string kHeader = MakeSessionHeader({"s", "2026-01-01T00:00:00.000Z", "/w", ""});

TEST(WriterEnv, AppendTakesTheSidecarLockNotTheFile) {
  MemDir d;
  std::string path = d.Write("s.jsonl", kHeader + "\n");
  // Another writer holds the lock: a bounded wait gives up and writes nothing.
  d.env()->HoldLockByOther(path, /*exclusive=*/true);
  AppendOptions o;
  o.env = d.env();
  o.lock_timeout_ms = 0;
  Status busy = AppendLines(path, {"{\"type\":\"custom\"}"}, o);
  EXPECT_EQ(busy.code(), StatusCode::kUnavailable);
  EXPECT_THAT(busy.message(), HasSubstr("s.jsonl.lock"));
  EXPECT_EQ(d.Read(path), kHeader + "\n");
  // A reader's shared lock also keeps writers out.
  d.env()->ReleaseOther(path);
  d.env()->HoldLockByOther(path, /*exclusive=*/false);
  EXPECT_EQ(AppendLines(path, {"{}"}, o).code(), StatusCode::kUnavailable);
  d.env()->ReleaseOther(path);
  ASSERT_TRUE(AppendLines(path, {"{\"type\":\"custom\"}"}, o).ok());
  EXPECT_EQ(d.Read(path), kHeader + "\n{\"type\":\"custom\"}\n");
  // The lock is released after the append.
  LockOptions now;
  now.timeout_ms = 0;
  EXPECT_TRUE(d.env()->LockSession(path, now).ok());
}

TEST(WriterEnv, AnAppendWaitsForTheLockHolder) {
  MemDir d;
  std::string path = d.Write("s.jsonl", kHeader + "\n");
  auto held = d.env()->LockSession(path);
  ASSERT_TRUE(held.ok());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    AppendOptions o;
    o.env = d.env();
    EXPECT_TRUE(AppendLines(path, {"{\"n\":1}"}, o).ok());
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done);
  EXPECT_EQ(d.Read(path), kHeader + "\n");  // nothing written while the lock is held
  held->reset();
  writer.join();
  EXPECT_EQ(d.Read(path), kHeader + "\n{\"n\":1}\n");
}

TEST(WriterEnv, AMissingFileIsRefusedBeforeALockFileIsMade) {
  MemDir d;
  AppendOptions o;
  o.env = d.env();
  EXPECT_EQ(AppendLines(d.path() + "/missing.jsonl", {"{}"}, o).code(), StatusCode::kNotFound);
  EXPECT_TRUE(testing::Names(d.env(), d.path()).empty());
}

TEST(WriterEnv, FsyncIsAskedForWhenWanted) {
  MemDir d;
  std::string path = d.Write("s.jsonl", kHeader + "\n");
  AppendOptions o;
  o.env = d.env();
  ASSERT_TRUE(AppendLines(path, {"{\"a\":1}"}, o).ok());
  EXPECT_EQ(d.env()->Counters().syncs, 0);  // pi never fsyncs appends
  d.env()->Crash();
  EXPECT_EQ(d.Read(path), kHeader + "\n");
  o.fsync = true;
  ASSERT_TRUE(AppendLines(path, {"{\"a\":1}"}, o).ok());
  d.env()->Crash();
  EXPECT_EQ(d.Read(path), kHeader + "\n{\"a\":1}\n");
}

TEST(WriterEnv, AtomicWriteThroughTheEnv) {
  MemDir d;
  std::string path = d.Write("f.jsonl", "old\n");
  RewriteOptions o;
  o.env = d.env();
  ASSERT_TRUE(WriteFileAtomic(path, "new\n", o).ok());
  EXPECT_EQ(d.Read(path), "new\n");
  EXPECT_EQ(d.Read(path + ".bak"), "old\n");
  d.env()->FailNth(MemEnvOp::kRename, 1);
  EXPECT_FALSE(WriteFileAtomic(path, "newer\n", o).ok());
  EXPECT_EQ(d.Read(path), "new\n");
  o.keep_backup = false;
  ASSERT_TRUE(WriteFileAtomic(d.path() + "/g", "g", o).ok());
  EXPECT_EQ(d.env()->Stat(d.path() + "/g.bak").status().code(), StatusCode::kNotFound);
}

TEST(WriterEnv, IdsAndTimestampsComeFromTheEnv) {
  MemEnvOptions opts;
  opts.seed = 7;
  auto a = NewMemEnv(opts), b = NewMemEnv(opts);
  EXPECT_EQ(NewUuidV7(a.get()), NewUuidV7(b.get()));
  std::string uuid = NewUuidV7(a.get());
  // 2026-01-01T00:00:00Z = 0x019b76daa800 ms: the UUIDv7 time prefix.
  EXPECT_EQ(uuid.substr(0, 13), "019b76da-a800");
  EXPECT_EQ(uuid[14], '7');
  EXPECT_EQ(NowIsoTimestamp(a.get()), "2026-01-01T00:00:00.000Z");
  a->AdvanceMs(1234);
  EXPECT_EQ(NowIsoTimestamp(a.get()), "2026-01-01T00:00:01.234Z");

  auto s = Session::FromString(kHeader + "\n", "mem");
  ASSERT_TRUE(s.ok());
  auto c = NewMemEnv(opts), e = NewMemEnv(opts);
  EXPECT_EQ(NewEntryId(**s, {}, c.get()), NewEntryId(**s, {}, e.get()));
  std::string id = NewEntryId(**s, {}, c.get());
  EXPECT_EQ(id.size(), 8u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
}

// On disk: the lock is a separate file next to the session, which stays put
// when a rewrite renames a new session over the old one.
TEST(WriterPosix, TheLockFileOutlivesARewrite) {
  testing::TempDir d;
  std::string path = d.Write("s.jsonl", kHeader + "\n");
  ASSERT_TRUE(AppendLines(path, {"{\"a\":1}"}).ok());
  auto lock_before = Env::Default()->Stat(path + ".lock");
  ASSERT_TRUE(lock_before.ok());
  ASSERT_TRUE(WriteFileAtomic(path, kHeader + "\n").ok());
  LockOptions now;
  now.timeout_ms = 0;
  auto held = Env::Default()->LockSession(path, now);
  ASSERT_TRUE(held.ok());
  // The rewritten file is guarded by the same lock file.
  EXPECT_EQ(Env::Default()->Stat(path + ".lock")->identity.inode, lock_before->identity.inode);
  AppendOptions busy;
  busy.lock_timeout_ms = 20;
  EXPECT_EQ(AppendLines(path, {"{\"b\":2}"}, busy).code(), StatusCode::kUnavailable);
  EXPECT_EQ(testing::ReadFileOrDie(path), kHeader + "\n");
}

// Another process truncates the session while the rewrite reads it (the
// real file system, whose mapping then reads fill bytes past the new end):
// text rebuilt from those bytes must not replace the file.
TEST(WriterRewrite, AFileTruncatedWhileItWasReadIsNotRewritten) {
  testing::TempDir d;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::string text = kHeader + "\n";
  while (text.size() < page * 16) {
    text += R"({"type":"custom","customType":"x","data":")" + std::string(200, 'y') + "\"}\n";
  }
  const std::string path = d.Write("s.jsonl", text);
  const off_t cut = static_cast<off_t>(page + 10);
  SessionRewriteOptions o;
  o.keep_backup = false;
  Result<SessionRewriteResult> r = RewriteSessionFile(
      path,
      [&](std::string_view old) -> Result<std::string> {
        EXPECT_EQ(::truncate(path.c_str(), cut), 0);
        // Reading on past the new end, as a rebuild reads every line.
        return std::string(old);
      },
      o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_THAT(r.status().message(),
              HasSubstr("truncated by another process while it was read; nothing written"));
  // What the other process left, not the rebuilt text.
  EXPECT_EQ(testing::ReadFileOrDie(path), text.substr(0, static_cast<size_t>(cut)));
}

}  // namespace
}  // namespace compactor
