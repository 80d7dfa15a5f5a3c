// MemEnv's own controls: the clock, seeded randomness, and each injected
// fault (what the reliability work builds its tests on).
#include "compactor/mem_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "support/test_util.h"

namespace compactor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class MemEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(env_->CreateDirs("/s").ok());
    env_->SetFile(kPath, "{\"a\":1}\n");
  }
  std::string Read(const std::string& path = kPath) {
    auto r = env_->ReadFile(path);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : "";
  }
  static constexpr const char* kPath = "/s/f.jsonl";
  std::unique_ptr<MemEnv> env_ = NewMemEnv();
};

TEST_F(MemEnvTest, ClockMovesOnlyWhenToldOrWhenCodeSleeps) {
  EXPECT_EQ(env_->NowMs(), 1767225600000);
  EXPECT_EQ(env_->MonotonicMicros(), 0);
  env_->AdvanceMs(1500);
  EXPECT_EQ(env_->NowMs(), 1767225601500);
  EXPECT_EQ(env_->MonotonicMicros(), 1500000);
  EXPECT_TRUE(env_->SleepMs(2000, nullptr));
  EXPECT_TRUE(env_->SleepMs(0, nullptr));
  EXPECT_THAT(env_->Sleeps(), ElementsAre(2000, 0));
  EXPECT_EQ(env_->NowMs(), 1767225603500);
  env_->SetNowMs(5);  // the wall clock jumps back; the monotonic one does not
  EXPECT_EQ(env_->NowMs(), 5);
  EXPECT_EQ(env_->MonotonicMicros(), 3500000);
  // File times come from this clock.
  env_->SetFile("/s/t", "x");
  EXPECT_EQ(env_->Stat("/s/t")->identity.mtime_ns, 5000000);
}

TEST_F(MemEnvTest, SeededRandomnessRepeats) {
  MemEnvOptions o;
  o.seed = 42;
  auto a = NewMemEnv(o), b = NewMemEnv(o);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a->Random64(), b->Random64());
  o.seed = 43;
  auto c = NewMemEnv(o);
  EXPECT_NE(NewMemEnv()->Random64(), c->Random64());
}

TEST_F(MemEnvTest, VariablesAndHardwareThreads) {
  env_->SetEnvVar("K", "v");
  EXPECT_EQ(env_->GetEnvVar("K"), "v");
  env_->UnsetEnvVar("K");
  EXPECT_EQ(env_->GetEnvVar("K"), std::nullopt);
  MemEnvOptions o;
  o.hardware_threads = 1;
  EXPECT_EQ(NewMemEnv(o)->HardwareThreads(), 1);
  EXPECT_EQ(env_->HardwareThreads(), 2);
}

TEST_F(MemEnvTest, PathsAreNormalizedAndParentsMustExist) {
  EXPECT_EQ(Read("/s/./f.jsonl"), "{\"a\":1}\n");
  EXPECT_EQ(Read("//s/x/../f.jsonl"), "{\"a\":1}\n");
  EXPECT_EQ(Read("s/f.jsonl"), "{\"a\":1}\n");  // relative to "/"
  EXPECT_EQ(env_->ReplaceFile("/nodir/f", "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(env_->CreateDirs("/s/f.jsonl/sub").code(), StatusCode::kFailedPrecondition);
}

// --- faults ------------------------------------------------------------------

TEST_F(MemEnvTest, FailNthWriteStopsTheAppendThere) {
  env_->FailNth(MemEnvOp::kWrite, 2);
  Status s = env_->AppendLines(kPath, {"{\"b\":2}", "{\"c\":3}", "{\"d\":4}"}, false);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), HasSubstr("/s/f.jsonl: write: " + std::string(std::strerror(EIO))));
  EXPECT_EQ(Read(), "{\"a\":1}\n{\"b\":2}\n");  // the first line went out, then nothing
  // One pending fault per op; it fires once.
  EXPECT_TRUE(env_->AppendLines(kPath, {"{\"e\":5}"}, false).ok());
  env_->FailNth(MemEnvOp::kWrite, 1, ENOSPC);
  EXPECT_THAT(env_->AppendLines(kPath, {"x"}, false).message(), HasSubstr(std::strerror(ENOSPC)));
  env_->FailNth(MemEnvOp::kWrite, 1);
  env_->FailNth(MemEnvOp::kWrite, 0);  // cleared
  EXPECT_TRUE(env_->AppendLines(kPath, {"y"}, false).ok());
}

TEST_F(MemEnvTest, FailNthSyncAndRenameLeaveTheOldFile) {
  env_->FailNth(MemEnvOp::kSync, 1);
  EXPECT_THAT(env_->AppendLines(kPath, {"{\"b\":2}"}, true).message(), HasSubstr("fsync"));

  const std::string before = Read();
  ReplaceOptions backup;
  backup.backup_suffix = ".bak";
  env_->FailNth(MemEnvOp::kSync, 1);  // the temporary file's fsync
  EXPECT_EQ(env_->ReplaceFile(kPath, "new\n", backup).code(), StatusCode::kIoError);
  EXPECT_EQ(Read(), before);
  env_->FailNth(MemEnvOp::kRename, 1);
  EXPECT_THAT(env_->ReplaceFile(kPath, "new\n", backup).message(), HasSubstr("rename"));
  EXPECT_EQ(Read(), before);
  EXPECT_THAT(testing::Names(env_.get(), "/s"),
              ElementsAre("f.jsonl", "f.jsonl.bak"));  // no temp file
  // The directory's fsync fails after the rename: the new file is in place
  // but the caller is told it may not survive a crash.
  env_->FailNth(MemEnvOp::kSync, 2);
  Status s = env_->ReplaceFile(kPath, "new\n", backup);
  EXPECT_THAT(s.message(), HasSubstr("/s: fsync directory"));
  EXPECT_EQ(Read(), "new\n");
  EXPECT_EQ(env_->Counters().renames, 2);
}

// An append that does not fit writes nothing (reserved first, as fallocate
// does); a short write followed by a failure leaves part of the line (below).
TEST_F(MemEnvTest, AFullDiskAppendWritesNothing) {
  env_->SetDiskSpace(5);
  Status s = env_->AppendLines(kPath, {"{\"b\":22222}"}, false);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(s.message(), std::string(kPath) + ": write: " + std::strerror(ENOSPC));
  EXPECT_EQ(Read(), "{\"a\":1}\n");
  // A replacement that does not fit leaves the old file whole.
  EXPECT_FALSE(env_->ReplaceFile(kPath, "something longer\n").ok());
  EXPECT_EQ(Read(), "{\"a\":1}\n");
  // What fits is written.
  env_->SetDiskSpace(3);
  ASSERT_TRUE(env_->AppendLines(kPath, {"{}"}, false).ok());
  EXPECT_EQ(Read(), "{\"a\":1}\n{}\n");
  env_->SetDiskSpace(std::nullopt);
  ASSERT_TRUE(env_->AppendLines(kPath, {"{\"c\":3}"}, false).ok());
  EXPECT_EQ(Read(), "{\"a\":1}\n{}\n{\"c\":3}\n");
}

TEST_F(MemEnvTest, AShortWriteIsCompletedByTheNextWrite) {
  env_->ShortWriteNth(1, 3);
  const int64_t writes = env_->Counters().writes;
  ASSERT_TRUE(env_->AppendLines(kPath, {"{\"b\":2}"}, false).ok());
  EXPECT_EQ(Read(), "{\"a\":1}\n{\"b\":2}\n");
  EXPECT_EQ(env_->Counters().writes - writes, 2);  // 3 bytes, then the rest
  // A short write followed by a failure tears the line.
  env_->ShortWriteNth(1, 3);
  env_->FailNth(MemEnvOp::kWrite, 2);
  EXPECT_FALSE(env_->AppendLines(kPath, {"{\"c\":3}"}, false).ok());
  EXPECT_EQ(Read(), "{\"a\":1}\n{\"b\":2}\n{\"c");
}

TEST_F(MemEnvTest, ACrashKeepsOnlyWhatWasSynced) {
  ASSERT_TRUE(env_->AppendLines(kPath, {"{\"synced\":1}"}, true).ok());
  ASSERT_TRUE(env_->AppendLines(kPath, {"{\"lost\":1}"}, false).ok());
  ASSERT_TRUE(env_->ReplaceFile("/s/replaced", "durable\n").ok());  // fsync + directory fsync
  ASSERT_TRUE(env_->CreateDirs("/s/d").ok());
  auto lock = env_->LockSession(kPath);
  ASSERT_TRUE(lock.ok());
  env_->FailNth(MemEnvOp::kWrite, 5);
  env_->Crash();
  EXPECT_EQ(Read(), "{\"a\":1}\n{\"synced\":1}\n");
  EXPECT_EQ(Read("/s/replaced"), "durable\n");
  EXPECT_EQ(env_->Stat("/s/d")->kind, FileKind::kDirectory);
  // The dead process's lock is gone; its handle releases nothing later.
  LockOptions now;
  now.timeout_ms = 0;
  auto relock = env_->LockSession(kPath, now);
  ASSERT_TRUE(relock.ok());
  lock->reset();
  EXPECT_EQ(env_->LockSession(kPath, now).status().code(), StatusCode::kUnavailable);
  // Pending faults died with it.
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(env_->AppendLines(kPath, {"{}"}, false).ok());
}

TEST_F(MemEnvTest, AFileCreatedButNeverSyncedIsLostInACrash) {
  // A lock file is created by open(O_CREAT) without a directory fsync.
  ASSERT_TRUE(env_->LockSession("/s/new.jsonl").ok());
  EXPECT_TRUE(env_->Stat("/s/new.jsonl.lock").ok());
  env_->Crash();
  EXPECT_EQ(env_->Stat("/s/new.jsonl.lock").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Read(), "{\"a\":1}\n");  // SetFile is durable
}

TEST_F(MemEnvTest, AMappingKeepsItsBytesWhileAnotherProcessChangesTheFile) {
  auto map = env_->MapFile(kPath);
  ASSERT_TRUE(map.ok());
  ASSERT_TRUE(env_->TruncateByOther(kPath, 3).ok());
  EXPECT_EQ(std::string((*map)->data(), (*map)->size()), "{\"a\":1}\n");
  EXPECT_EQ(Read(), "{\"a");
  ASSERT_TRUE(env_->AppendByOther(kPath, "bc").ok());
  EXPECT_EQ(Read(), "{\"abc");
  ASSERT_TRUE(env_->AppendLines(kPath, {"z"}, false).ok());
  EXPECT_EQ(std::string((*map)->data(), (*map)->size()), "{\"a\":1}\n");
  EXPECT_EQ(env_->AppendByOther("/s/none", "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(env_->TruncateByOther("/s/none", 0).code(), StatusCode::kNotFound);
}

TEST_F(MemEnvTest, ThreadStartCanFail) {
  env_->FailNth(MemEnvOp::kStartThread, 1);
  bool ran = false;
  auto t = env_->StartThread([&] { ran = true; });
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(ran);
  auto u = env_->StartThread([&] { ran = true; });
  ASSERT_TRUE(u.ok());
  (*u)->Join();
  EXPECT_TRUE(ran);
}

TEST_F(MemEnvTest, CountersCountCalls) {
  (void)env_->Stat(kPath);
  (void)env_->ReadFile(kPath);
  (void)env_->MapFile(kPath);
  ASSERT_TRUE(env_->AppendLines(kPath, {"a", "b"}, true).ok());
  MemEnvCounters c = env_->Counters();
  EXPECT_EQ(c.stats, 1);
  EXPECT_EQ(c.reads, 1);
  EXPECT_EQ(c.maps, 1);
  EXPECT_EQ(c.writes, 2);
  EXPECT_EQ(c.syncs, 1);
  EXPECT_EQ(c.renames, 0);
}

}  // namespace
}  // namespace compactor
