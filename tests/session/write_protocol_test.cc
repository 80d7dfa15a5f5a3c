// The write protocol (writer.h, docs/reliability.md) on the in-memory Env:
// torn tails told apart from writes in progress, rewrites that carry over
// what other writers append before and after the rename, dead processes'
// temporary files, full disks, and compactions and branch summaries that
// re-check the file under the lock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <numeric>

#include "compactor/branch.h"
#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/entries.h"
#include "compactor/mem_env.h"
#include "compactor/writer.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MemDir;

const std::string kHeader = MakeSessionHeader({"s", "2026-01-01T00:00:00.000Z", "/w", ""});

std::string Line(const std::string& id, const std::string& parent) {
  return MakeMessageEntry({id, parent, "2026-01-01T00:00:01.000Z"},
                          R"({"role":"user","content":"hi )" + id + R"(","timestamp":1})");
}

int64_t Slept(MemEnv* env) {
  std::vector<int64_t> s = env->Sleeps();
  return std::accumulate(s.begin(), s.end(), int64_t{0});
}

// --- appends and torn tails -------------------------------------------------

TEST(WriteProtocol, AnOldTornTailIsEndedAtOnce) {
  MemDir d;
  std::string path = d.Write("s.jsonl", kHeader + "\n{\"torn");
  d.env()->AdvanceMs(5000);  // the tail has not changed for 5 s
  AppendOptions o;
  o.env = d.env();
  ASSERT_TRUE(AppendLines(path, {"{\"b\":2}"}, o).ok());
  EXPECT_EQ(d.Read(path), kHeader + "\n{\"torn\n{\"b\":2}\n");
  EXPECT_EQ(Slept(d.env()), 0);
}

TEST(WriteProtocol, AYoungTailIsAWriteInProgressAndGetsNoStrayNewline) {
  MemDir d;
  std::string path = d.Write("s.jsonl", kHeader + "\n{\"x\":\"par");
  // Another writer (no lock) finishes its entry while we wait.
  d.env()->SetSleepHook([&](int64_t) {
    if (d.Read(path).back() != '\n') {
      ASSERT_TRUE(d.env()->AppendByOther(path, "t\"}\n").ok());
    }
  });
  AppendOptions o;
  o.env = d.env();
  ASSERT_TRUE(AppendLines(path, {"{\"b\":2}"}, o).ok());
  EXPECT_EQ(d.Read(path), kHeader + "\n{\"x\":\"part\"}\n{\"b\":2}\n");
  EXPECT_LT(Slept(d.env()), 100);
}

TEST(WriteProtocol, AYoungTailThatStaysIsTornAfterTheGracePeriod) {
  MemDir d;
  std::string path = d.Write("s.jsonl", kHeader + "\n{\"torn");
  AppendOptions o;
  o.env = d.env();
  o.torn_tail_grace_ms = 400;
  ASSERT_TRUE(AppendLines(path, {"{\"b\":2}"}, o).ok());
  EXPECT_EQ(d.Read(path), kHeader + "\n{\"torn\n{\"b\":2}\n");
  EXPECT_GE(Slept(d.env()), 400);
  EXPECT_LT(Slept(d.env()), 500);
}

// A full disk refuses the append whole (the Env reserves its length first).
TEST(WriteProtocol, AFullDiskAppendWritesNothing) {
  MemDir d;
  std::string path = d.Write("s.jsonl", kHeader + "\n");
  AppendOptions o;
  o.env = d.env();
  d.env()->SetDiskSpace(5);
  Status s = AppendLines(path, {"{\"b\":22222}"}, o);
  EXPECT_EQ(s.message(), path + ": write: " + std::strerror(ENOSPC));
  EXPECT_EQ(d.Read(path), kHeader + "\n");
  d.env()->SetDiskSpace(std::nullopt);
  ASSERT_TRUE(AppendLines(path, {"{\"c\":3}"}, o).ok());
  EXPECT_EQ(d.Read(path), kHeader + "\n{\"c\":3}\n");
}

// Where no reservation is possible, a write that stops short and then fails
// leaves part of a line; it is never truncated back, and the next append ends it.
TEST(WriteProtocol, APartialAppendIsEndedByTheNextAppend) {
  MemDir d;
  std::string path = d.Write("s.jsonl", kHeader + "\n");
  AppendOptions o;
  o.env = d.env();
  d.env()->ShortWriteNth(1, 5);
  d.env()->FailNth(MemEnvOp::kWrite, 2, ENOSPC);
  Status s = AppendLines(path, {"{\"b\":22222}"}, o);
  EXPECT_EQ(s.message(), path + ": write: " + std::strerror(ENOSPC));
  EXPECT_EQ(d.Read(path), kHeader + "\n{\"b\":");  // never truncated
  ASSERT_TRUE(AppendLines(path, {"{\"c\":3}"}, o).ok());
  EXPECT_EQ(d.Read(path), kHeader + "\n{\"b\":\n{\"c\":3}\n");
}

// --- rewrites ------------------------------------------------------------------

RebuildFn Upper() {
  return [](std::string_view bytes) -> Result<std::string> {
    std::string out(bytes);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  };
}

SessionRewriteOptions RewriteIn(MemEnv* env) {
  SessionRewriteOptions o;
  o.env = env;
  return o;
}

TEST(WriteProtocol, ARewriteCarriesOverWhatIsAppendedWhileItRebuilds) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\nb\n");
  RebuildFn rebuild = [&](std::string_view bytes) -> Result<std::string> {
    EXPECT_EQ(bytes, "a\nb\n");
    EXPECT_TRUE(d.env()->AppendByOther(path, "c\n").ok());  // pi, no lock
    return Upper()(bytes);
  };
  auto r = RewriteSessionFile(path, rebuild, RewriteIn(d.env()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(d.Read(path), "A\nB\nc\n");
  EXPECT_EQ(d.Read(path + ".bak"), "a\nb\nc\n");
  EXPECT_EQ(r->carried_before_rename, 2u);
  EXPECT_EQ(r->carried_after_rename, 0u);
  EXPECT_EQ(d.env()->Sleeps(), std::vector<int64_t>{300});  // one quiet grace round
}

TEST(WriteProtocol, ARewriteFollowsTheOldFileForTheGracePeriod) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\n");
  const uint64_t old_inode = d.env()->Stat(path)->identity.inode;
  int sleeps = 0;
  // A writer that opened the file by path before the rename appends to the
  // old file during the first grace round, in two pieces.
  d.env()->SetSleepHook([&](int64_t) {
    if (++sleeps == 1) {
      ASSERT_TRUE(d.env()->AppendByOtherToInode(old_inode, "late 1\nlate").ok());
    } else if (sleeps == 2) {
      ASSERT_TRUE(d.env()->AppendByOtherToInode(old_inode, " 2\n").ok());
    }
  });
  auto r = RewriteSessionFile(path, Upper(), RewriteIn(d.env()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(d.Read(path), "A\nlate 1\nlate 2\n");
  EXPECT_EQ(r->carried_after_rename, 14u);
}

TEST(WriteProtocol, APartialLastLineIsNotRebuiltButCarriedOnceComplete) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\n{\"in progr");
  const uint64_t old_inode = d.env()->Stat(path)->identity.inode;
  RebuildFn rebuild = [&](std::string_view bytes) -> Result<std::string> {
    EXPECT_EQ(bytes, "a\n");
    return Upper()(bytes);
  };
  d.env()->SetSleepHook([&](int64_t) {
    (void)d.env()->AppendByOtherToInode(old_inode, "ess\"}\n");
    d.env()->SetSleepHook({});
  });
  auto r = RewriteSessionFile(path, rebuild, RewriteIn(d.env()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(d.Read(path), "A\n{\"in progress\"}\n");
}

TEST(WriteProtocol, ATornLastLineIsCarriedOverEnded) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\n{\"torn");
  d.env()->AdvanceMs(5000);
  auto r = RewriteSessionFile(path, Upper(), RewriteIn(d.env()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(d.Read(path), "A\n{\"torn\n");
}

TEST(WriteProtocol, ARewriteRemovesDeadProcessesTempFilesFirst) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\n");
  d.Write("s.jsonl.tmp-4242-abcdef", "half of a rewrite");
  d.Write("other.jsonl.tmp-4242-abcdef", "not ours");
  auto r = RewriteSessionFile(path, Upper(), RewriteIn(d.env()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->removed_temps, ElementsAre("/work/s.jsonl.tmp-4242-abcdef"));
  EXPECT_THAT(testing::Names(d.env(), "/work"),
              ElementsAre("other.jsonl.tmp-4242-abcdef", "s.jsonl", "s.jsonl.bak", "s.jsonl.lock"));
}

TEST(WriteProtocol, AFullDiskRewriteWritesNothing) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\nb\n");
  d.env()->SetDiskSpace(2);
  auto r = RewriteSessionFile(path, Upper(), RewriteIn(d.env()));
  EXPECT_THAT(r.status().message(), HasSubstr(std::strerror(ENOSPC)));
  EXPECT_EQ(d.Read(path), "a\nb\n");
  EXPECT_THAT(testing::Names(d.env(), "/work"), ElementsAre("s.jsonl", "s.jsonl.lock"));
}

// Another process renames a new file over the session between the rewrite's
// open and its mapping (a writer that takes no lock may): the two views
// differ, so nothing is rebuilt from either.
class ReplacedBeforeTheMapping : public EnvWrapper {
 public:
  explicit ReplacedBeforeTheMapping(MemEnv* env) : EnvWrapper(env) {}
  Result<std::unique_ptr<MappedFile>> MapFile(const std::string& path) override {
    EXPECT_TRUE(target()->ReplaceFile(path, "other\n", {}).ok());
    return EnvWrapper::MapFile(path);
  }
};

TEST(WriteProtocol, ARewriteRefusesAFileReplacedWhileItWasOpened) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\n");
  ReplacedBeforeTheMapping env(d.env());
  SessionRewriteOptions o;
  o.env = &env;
  auto r = RewriteSessionFile(path, Upper(), o);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            path +
                ": replaced by another process while it was opened for the rewrite; nothing "
                "written");
  EXPECT_EQ(d.Read(path), "other\n");  // the other process's file, untouched
  EXPECT_THAT(testing::Names(d.env(), "/work"), ElementsAre("s.jsonl", "s.jsonl.lock"));
}

TEST(WriteProtocol, ACarryOverThatCannotBeWrittenSaysWhereTheEntriesAre) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\n");
  auto old = d.env()->Stat(path);
  ASSERT_TRUE(old.ok());
  // During the grace period a writer that opened the old file appends to it,
  // and the next write (the carry-over) fails.
  bool done = false;
  d.env()->SetSleepHook([&](int64_t) {
    if (done) return;
    done = true;
    EXPECT_TRUE(d.env()->AppendByOtherToInode(old->identity.inode, "late\n").ok());
    d.env()->FailNth(MemEnvOp::kWrite, 1, EIO);
  });
  auto r = RewriteSessionFile(path, Upper(), RewriteIn(d.env()));
  d.env()->SetSleepHook({});
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_EQ(r.status().message(),
            path + ": entries appended to the old file during the rewrite could not be carried " +
                "over (" + path + ": write: " + std::strerror(EIO) + "); they are in " + path +
                ".bak");
  EXPECT_EQ(d.Read(path), "A\n");
  EXPECT_EQ(d.Read(path + ".bak"), "a\nlate\n");
}

TEST(WriteProtocol, ACrashBeforeTheRenameLeavesTheOldFile) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\n");
  d.env()->FailNth(MemEnvOp::kRename, 1);
  EXPECT_FALSE(RewriteSessionFile(path, Upper(), RewriteIn(d.env())).ok());
  d.env()->Crash();
  EXPECT_EQ(d.Read(path), "a\n");
  EXPECT_THAT(testing::Names(d.env(), "/work"), ElementsAre("s.jsonl"));  // no temp file
}

TEST(WriteProtocol, ARebuildErrorWritesNothing) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\n");
  RebuildFn fail = [](std::string_view) -> Result<std::string> {
    return Status::FailedPrecondition("no");
  };
  EXPECT_EQ(RewriteSessionFile(path, fail, RewriteIn(d.env())).status().message(), "no");
  EXPECT_EQ(d.Read(path), "a\n");
  EXPECT_EQ(d.env()->Counters().renames, 0);
}

TEST(WriteProtocol, ARewriteWaitsForTheLockAndRefusesOtherKinds) {
  MemDir d;
  std::string path = d.Write("s.jsonl", "a\n");
  d.env()->HoldLockByOther(path, false);
  SessionRewriteOptions o = RewriteIn(d.env());
  o.lock_timeout_ms = 0;
  EXPECT_EQ(RewriteSessionFile(path, Upper(), o).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(d.Read(path), "a\n");
  ASSERT_TRUE(d.env()->CreateDirs("/work/dir").ok());
  EXPECT_THAT(RewriteSessionFile("/work/dir", Upper(), o).status().message(),
              HasSubstr("not a regular file"));
}

// --- compactions and branch summaries ---------------------------------------

// A summarizer during whose work another process appends `line` to `path`.
class AppendingSummarizer : public Summarizer {
 public:
  AppendingSummarizer(MemEnv* env, std::string path, std::string line)
      : env_(env), path_(std::move(path)), line_(std::move(line)) {}
  std::string_view name() const override { return "appending"; }
  Result<std::string> Summarize(const SummaryRequest&) const override {
    if (!line_.empty()) {
      EXPECT_TRUE(env_->AppendByOther(path_, line_ + "\n").ok());
    }
    return std::string("summary");
  }

 private:
  MemEnv* env_;
  std::string path_, line_;
};

std::string LongSession(int n) {
  std::string text = kHeader + "\n";
  std::string parent;
  for (int i = 1; i <= n; ++i) {
    const std::string id = "e" + std::to_string(i);
    text += MakeMessageEntry({id, parent, "2026-01-01T00:00:01.000Z"},
                             R"({"role":"user","content":")" + std::string(400, 'a' + i % 26) +
                                 R"(","timestamp":1})") +
            "\n";
    parent = id;
  }
  return text;
}

CompactOptions Compact(MemEnv* env, const Summarizer* s) {
  CompactOptions o;
  o.settings.keep_recent_tokens = 300;
  o.summarizer = s;
  o.env = env;
  return o;
}

TEST(WriteProtocol, ACompactionAttachesToTheLeafAppendedWhileItWaited) {
  MemDir d;
  std::string path = d.Write("s.jsonl", LongSession(20));
  AppendingSummarizer s(d.env(), path, Line("new1", "e20"));
  auto r = CompactFile(path, Compact(d.env(), &s));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->compacted);
  auto now = d.Load(path);
  ASSERT_TRUE(now);
  const Entry& last = now->entry(*now->Leaf());
  EXPECT_EQ(last.type, EntryType::kCompaction);
  EXPECT_EQ(last.parent_id, "new1");  // not the old leaf e20
  // The new message stays in the context, after the summary.
  auto ctx = BuildSessionContext(*now, {});
  ASSERT_TRUE(ctx.ok());
  ASSERT_FALSE(ctx->messages.empty());
  EXPECT_THAT(ctx->messages.back().json(), HasSubstr("hi new1"));
}

TEST(WriteProtocol, ASecondCompactionRefusesWhenAnotherCompactedFirst) {
  MemDir d;
  std::string path = d.Write("s.jsonl", LongSession(20));
  CompactionEntryFields f;
  f.summary = "other";
  f.first_kept_entry_id = "e18";
  f.tokens_before = 1;
  const std::string other = MakeCompactionEntry({"c0ffee00", "e20", "2026-01-01T00:00:02.000Z"}, f);
  AppendingSummarizer s(d.env(), path, other);
  const std::string before = LongSession(20) + other + "\n";
  auto r = CompactFile(path, Compact(d.env(), &s));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("already compacted by another process"));
  EXPECT_EQ(d.Read(path), before);  // nothing written
}

TEST(WriteProtocol, ACompactionRefusesWhenTheSessionMovedToAnotherBranch) {
  MemDir d;
  std::string path = d.Write("s.jsonl", LongSession(20));
  AppendingSummarizer s(d.env(), path, Line("side", "e10"));
  auto r = CompactFile(path, Compact(d.env(), &s));
  EXPECT_THAT(r.status().message(), HasSubstr("moved to another branch"));
  EXPECT_EQ(d.Read(path), LongSession(20) + Line("side", "e10") + "\n");
}

// A summarizer during whose work another process rewrites the file.
class RewritingSummarizer : public Summarizer {
 public:
  RewritingSummarizer(MemEnv* env, std::string path, std::string text)
      : env_(env), path_(std::move(path)), text_(std::move(text)) {}
  std::string_view name() const override { return "rewriting"; }
  Result<std::string> Summarize(const SummaryRequest&) const override {
    EXPECT_TRUE(env_->ReplaceFile(path_, text_, {}).ok());
    return std::string("summary");
  }

 private:
  MemEnv* env_;
  std::string path_, text_;
};

// LongSession(n) without entry `id` (its child then hangs from nothing).
std::string Without(const std::string& text, const std::string& id) {
  const size_t at = text.find("\"id\":\"" + id + "\"");
  const size_t begin = text.rfind('\n', at) + 1;
  return text.substr(0, begin) + text.substr(text.find('\n', at) + 1);
}

TEST(WriteProtocol, ACompactionRefusesWhenItsPointIsGone) {
  MemDir d;
  std::string path = d.Write("s.jsonl", LongSession(20));
  RewritingSummarizer s(d.env(), path, LongSession(19));
  auto r = CompactFile(path, Compact(d.env(), &s));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), path +
                                      ": entry e20, where the compaction was computed, is no "
                                      "longer in the file; nothing written (run compact again)");
  EXPECT_EQ(d.Read(path), LongSession(19));
}

TEST(WriteProtocol, AnUnchangedFileIsNotLoadedAgain) {
  MemDir d;
  std::string path = d.Write("s.jsonl", LongSession(20));
  AppendingSummarizer s(d.env(), path, "");
  const int64_t maps = d.env()->Counters().maps;
  ASSERT_TRUE(CompactFile(path, Compact(d.env(), &s)).ok());
  EXPECT_EQ(d.env()->Counters().maps - maps, 1);
}

TEST(WriteProtocol, ABranchSummaryRefusesWhenTheBranchGrewMeanwhile) {
  MemDir d;
  std::string path = d.Write("s.jsonl", LongSession(20));
  AppendingSummarizer s(d.env(), path, Line("new1", "e20"));
  BranchOptions o;
  o.target_id = "e5";
  o.summarize = true;
  o.summarizer = &s;
  o.env = d.env();
  auto r = BranchFile(path, o);
  EXPECT_THAT(r.status().message(), HasSubstr("appended while the branch summary was computed"));
  EXPECT_EQ(d.Read(path), LongSession(20) + Line("new1", "e20") + "\n");
}

TEST(WriteProtocol, ABranchRefusesWhenItsTargetIsGone) {
  MemDir d;
  std::string path = d.Write("s.jsonl", LongSession(20));
  const std::string rewritten = Without(LongSession(20), "e5");
  RewritingSummarizer s(d.env(), path, rewritten);
  BranchOptions o;
  o.target_id = "e5";
  o.summarize = true;
  o.summarizer = &s;
  o.env = d.env();
  auto r = BranchFile(path, o);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), path + ": entry e5 is no longer in the file; nothing written");
  EXPECT_EQ(d.Read(path), rewritten);
}

}  // namespace
}  // namespace compactor
