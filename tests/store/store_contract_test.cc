// The SessionStore contract, run against both stores: the directory of pi
// session files (Directory/StoreContract.*) and PostgreSQL
// (StoreDatabase/StoreContract.*, a real throwaway server: ctest
// StoreDatabase). Then what only the database has: its migrations, its
// connection pool, URIs without passwords in messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "compactor/context.h"
#include "compactor/store.h"
#include "store/postgres_schema.h"
#include "support/pg_test_server.h"
#include "support/test_util.h"

namespace compactor::testing {
namespace {

std::string Header(const std::string& id) {
  return R"({"type":"session","version":3,"id":")" + id +
         R"(","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/w"})";
}

// 10:MM:SS on 2026-01-01, `second` seconds after 10:00 (under an hour).
std::string Timestamp(int second) {
  char ts[64];  // room for any two ints: no truncation to warn of
  std::snprintf(ts, sizeof ts, "2026-01-01T10:%02d:%02d.000Z", second / 60 % 60, second % 60);
  return ts;
}

std::string Custom(const std::string& id, const std::string& parent, int second = 1) {
  std::string p = parent.empty() ? "null" : "\"" + parent + "\"";
  const std::string ts = Timestamp(second);
  return R"({"type":"custom","id":")" + id + R"(","parentId":)" + p + R"(,"timestamp":")" + ts +
         R"(","customType":"x"})";
}

std::string User(const std::string& id, const std::string& parent, const std::string& text,
                 int second = 1) {
  std::string p = parent.empty() ? "null" : "\"" + parent + "\"";
  const std::string ts = Timestamp(second);
  return R"({"type":"message","id":")" + id + R"(","parentId":)" + p + R"(,"timestamp":")" + ts +
         R"(","message":{"role":"user","content":")" + text + R"(","timestamp":1}})";
}

// A fresh store of the parameter's kind, reopenable (a restart).
class StoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "directory") {
      dir_ = std::make_unique<TempDir>();
      spec_ = dir_->path() + "/store";
    } else {
      std::string why;
      auto base = TestPgUri(&why);
      if (!base) {
        // CI installs postgresql: a missing server there is a failure.
        if (std::getenv("CI") != nullptr) FAIL() << why;
        GTEST_SKIP() << "no PostgreSQL test server: " << why;
      }
      spec_ = FreshDatabase(*base, &why);
      ASSERT_FALSE(spec_.empty()) << why;
    }
    store_ = Reopen();
    ASSERT_NE(store_, nullptr);
  }

  std::unique_ptr<SessionStore> Reopen() {
    StoreSpec s;
    s.store = spec_;
    auto r = OpenStore(s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  std::unique_ptr<TempDir> dir_;
  std::string spec_;
  std::unique_ptr<SessionStore> store_;
};

TEST_P(StoreContract, CreatedSessionsLoadBackAndIdsAreChecked) {
  auto id = store_->Create("", "/cwd", {Custom("c1", "")});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto s = store_->Load(*id);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->header().id, *id);
  EXPECT_EQ((*s)->header().cwd, "/cwd");
  ASSERT_EQ((*s)->size(), 1u);
  EXPECT_EQ((*s)->entry(0).id, "c1");
  EXPECT_FALSE(*store_->ReadOnly(*id));
  EXPECT_TRUE(store_->Create("chosen-1", "", {}).ok());
  EXPECT_EQ(store_->Create("chosen-1", "", {}).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->Create("../evil", "", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Create(".x", "", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Load("nosuch").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Info("nosuch").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->ReadOnly("nosuch").status().code(), StatusCode::kNotFound);
}

// The list line: title (the name, else the first prompt), entries, size,
// last activity (the newest entry's timestamp); newest first.
TEST_P(StoreContract, TheListShowsTitlesSizesAndIsNewestFirst) {
  const std::string info =
      R"({"type":"session_info","id":"n1","parentId":"e2","timestamp":"2026-01-01T10:00:05.000Z","name":"First name"})";
  ASSERT_TRUE(store_
                  ->Import(Header("named") + "\n" + User("e1", "", "the prompt", 1) + "\n" +
                           User("e2", "e1", "second", 2) + "\n" + info + "\n")
                  .ok());
  ASSERT_TRUE(
      store_->Import(Header("older") + "\n" + User("e1", "", "an older prompt", 3) + "\n").ok());
  ASSERT_TRUE(store_->Create("grown", "", {User("g1", "", "grown prompt", 4)}).ok());
  ASSERT_TRUE(store_->Append("grown", {Custom("g2", "g1", 9)}).ok());
  auto list = store_->List();
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 3u);
  std::map<std::string, StoredSessionInfo> by_id;
  for (const auto& i : *list) by_id[i.id] = i;
  EXPECT_EQ((*list)[0].id, "grown");  // 10:00:09
  EXPECT_EQ((*list)[1].id, "named");  // 10:00:05
  EXPECT_EQ((*list)[2].id, "older");  // 10:00:03
  EXPECT_EQ(by_id["named"].title, "First name");
  EXPECT_TRUE(by_id["named"].named);
  EXPECT_EQ(by_id["named"].entries, 3u);
  EXPECT_EQ(by_id["named"].last_activity_ms, 1767261605000);
  EXPECT_EQ(by_id["older"].title, "an older prompt");
  EXPECT_FALSE(by_id["older"].named);
  EXPECT_EQ(by_id["grown"].title, "grown prompt");
  EXPECT_EQ(by_id["grown"].entries, 2u);
  for (const auto& [id, i] : by_id) {
    auto loaded = store_->Load(id);
    ASSERT_TRUE(loaded.ok());
    EXPECT_EQ(i.entries, (*loaded)->size()) << id;
    EXPECT_GT(i.size_bytes, 0u) << id;
    auto one = store_->Info(id);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(one->title, i.title);
    EXPECT_EQ(one->entries, i.entries);
  }
}

TEST_P(StoreContract, ImportKeepsTheSessionAndRefusesDuplicatesAndJunk) {
  const std::string text = Header("imp") + "\n" + User("e1", "", "hello") + "\n" +
                           Custom("c1", "e1", 2) + "\n" + User("e2", "c1", "again", 3) + "\n";
  auto id = store_->Import(text);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, "imp");
  auto s = store_->Load("imp");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ((*s)->size(), 3u);
  EXPECT_EQ((*s)->entry(2).id, "e2");
  EXPECT_EQ(store_->Import(text).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->Import("not a session\n").status().code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreContract, AppendsRefuseASessionChangedSinceItWasRead) {
  ASSERT_TRUE(store_->Import(Header("a") + "\n" + User("e1", "", "hi") + "\n").ok());
  StoreAppendOptions ao;
  ao.expected_entries = 1;
  ASSERT_TRUE(store_->Append("a", {Custom("c1", "e1")}, ao).ok());
  // Someone else's entry arrived meanwhile: the caller's view (1 entry) is stale.
  EXPECT_EQ(store_->Append("a", {Custom("c2", "e1")}, ao).code(), StatusCode::kFailedPrecondition);
  ao.expected_entries = 2;
  ao.sync = true;
  EXPECT_TRUE(store_->Append("a", {Custom("c2", "c1"), Custom("c3", "c2")}, ao).ok());
  auto s = store_->Load("a");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->size(), 4u);
  EXPECT_EQ(store_->Append("nosuch", {"{}"}).code(), StatusCode::kNotFound);
}

TEST_P(StoreContract, ReplaceKeepsTheIdRefusesAStaleViewAndUnknownIds) {
  ASSERT_TRUE(store_->Import(Header("a") + "\n" + User("e1", "", "hi") + "\n").ok());
  EXPECT_EQ(store_->Replace("a", Header("a") + "\n", 5).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_->Replace("a", Header("a") + "\n" + User("e2", "", "new") + "\n", 1).ok());
  auto s = store_->Load("a");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ((*s)->size(), 1u);
  EXPECT_EQ((*s)->entry(0).id, "e2");
  EXPECT_EQ(store_->Info("a")->entries, 1u);
  EXPECT_EQ(store_->Info("a")->title, "new");
  // Appends after a replace continue the new contents.
  StoreAppendOptions ao;
  ao.expected_entries = 1;
  EXPECT_TRUE(store_->Append("a", {Custom("c1", "e2")}, ao).ok());
  EXPECT_EQ((*store_->Load("a"))->size(), 2u);
  EXPECT_EQ(store_->Replace("nosuch", Header("nosuch") + "\n", std::nullopt).code(),
            StatusCode::kNotFound);
}

TEST_P(StoreContract, TheIndexAndTheSummaryCacheSurviveARestart) {
  auto id = store_->Create("", "", {});
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(store_->SetConversation("anthropic:session:abc", *id).ok());
  ASSERT_TRUE(store_->SetConversation("moved", "first").ok());
  ASSERT_TRUE(store_->SetConversation("moved", *id).ok());  // the last one wins
  ASSERT_TRUE(store_->PutSummary("k1", "summary one").ok());
  ASSERT_TRUE(store_->PutSummary("k2", "old").ok());
  ASSERT_TRUE(store_->PutSummary("k2", "new \xc3\xa9 text").ok());
  store_.reset();
  auto again = Reopen();
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(again->Info(*id).ok());
  EXPECT_EQ(again->FindConversation("anthropic:session:abc"), *id);
  EXPECT_EQ(again->FindConversation("moved"), *id);
  EXPECT_EQ(again->FindConversation("other"), std::nullopt);
  EXPECT_EQ(again->FindSummary("k1"), "summary one");
  EXPECT_EQ(again->FindSummary("k2"), "new \xc3\xa9 text");
  EXPECT_EQ(again->FindSummary("k3"), std::nullopt);
}

// Many writers racing for one new conversation: one claim wins, every
// writer learns the winner.
TEST_P(StoreContract, OneClaimOfAConversationWins) {
  constexpr int kThreads = 6;
  std::vector<std::string> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto r = store_->ClaimConversation("conv-1", "session-" + std::to_string(t));
      seen[t] = r.ok() ? *r : "error: " + r.status().ToString();
    });
  for (auto& th : threads) th.join();
  for (const std::string& s : seen) EXPECT_EQ(s, seen[0]);
  EXPECT_EQ(seen[0].rfind("session-", 0), 0u) << seen[0];
  EXPECT_EQ(store_->FindConversation("conv-1"), seen[0]);
  EXPECT_EQ(*store_->ClaimConversation("conv-1", "late"), seen[0]);
  store_.reset();
  EXPECT_EQ(Reopen()->FindConversation("conv-1"), seen[0]);
}

// A summary claim is exclusive while it lives: within the process for the
// directory store, across servers (another store object, its own
// connections) for the database.
TEST_P(StoreContract, ASummaryClaimIsExclusiveUntilReleased) {
  std::unique_ptr<SessionStore> other = GetParam() == "postgres" ? Reopen() : nullptr;
  SessionStore& second = other ? *other : *store_;
  auto first = store_->TryClaimSummary("prefix-1");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_NE(*first, nullptr);
  auto taken = second.TryClaimSummary("prefix-1");
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(*taken, nullptr);
  auto unrelated = second.TryClaimSummary("prefix-2");
  ASSERT_TRUE(unrelated.ok());
  EXPECT_NE(*unrelated, nullptr);
  first->reset();  // released
  auto again = second.TryClaimSummary("prefix-1");
  ASSERT_TRUE(again.ok());
  EXPECT_NE(*again, nullptr);
}

// Writers that read, compute and append with expected_entries (the
// recorder's protocol) on many threads: every entry lands once, in a chain.
TEST_P(StoreContract, ConcurrentCheckedAppendsLoseAndDuplicateNothing) {
  ASSERT_TRUE(store_->Create("shared", "", {Custom("root", "")}).ok());
  constexpr int kThreads = 6, kEach = 15;
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        for (int attempt = 0; attempt < 1000; ++attempt) {  // bounded
          auto s = store_->Load("shared");
          if (!s.ok()) continue;
          const std::string parent((*s)->entry((*s)->size() - 1).id);
          StoreAppendOptions ao;
          ao.expected_entries = (*s)->size();
          const std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
          Status st = store_->Append("shared", {Custom(id, parent)}, ao);
          if (st.ok()) break;
          ++refused;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  auto s = store_->Load("shared");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ((*s)->size(), 1u + kThreads * kEach);
  std::set<std::string> ids;
  for (size_t i = 0; i < (*s)->size(); ++i) {
    ids.insert(std::string((*s)->entry(i).id));
    if (i > 0) {
      EXPECT_EQ((*s)->entry(i).parent_id, (*s)->entry(i - 1).id) << i;
    }
  }
  EXPECT_EQ(ids.size(), (*s)->size());
  EXPECT_EQ(store_->Info("shared")->entries, (*s)->size());
}

// The export contract: the exported file builds the same context as the
// session it came from (a real pi session with branches and tool calls).
TEST_P(StoreContract, TheExportedFileBuildsTheSameContext) {
  const std::string original =
      ReadFileOrDie(std::string(COMPACTOR_SOURCE_DIR) + "/examples/session.jsonl");
  auto id = store_->Import(original);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto context_of = [](const std::string& text) {
    auto s = Session::FromString(text, "x");
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return std::string();
    auto ctx = BuildSessionContext(**s, {});
    EXPECT_TRUE(ctx.ok());
    return ctx.ok() ? ContextToJson(*ctx) : std::string();
  };
  auto exported = store_->Export(*id);
  ASSERT_TRUE(exported.ok()) << exported.status().ToString();
  EXPECT_EQ(context_of(*exported), context_of(original));
  auto loaded = store_->Load(*id);
  ASSERT_TRUE(loaded.ok());
  auto direct = BuildSessionContext(**loaded, {});
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(ContextToJson(*direct), context_of(original));
  // After an append, the export has it too.
  const std::string leaf((*loaded)->entry((*loaded)->size() - 1).id);
  ASSERT_TRUE(store_->Append(*id, {User("zz-late", leaf, "one more")}).ok());
  auto again = store_->Export(*id);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(context_of(*again).find("one more"), std::string::npos);
  EXPECT_EQ(store_->Export("nosuch").status().code(), StatusCode::kNotFound);
}

// `compactor export --store STORE ID`: the file on stdout, -o FILE, --json,
// the exit codes; `compactor context` of the export is the store's context.
TEST_P(StoreContract, TheExportCommandWritesTheSession) {
  const std::string original =
      ReadFileOrDie(std::string(COMPACTOR_SOURCE_DIR) + "/examples/session.jsonl");
  auto id = store_->Import(original);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  store_.reset();  // the command opens the store itself
  auto out = RunCli({"export", "--store", spec_, *id});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  TempDir tmp;
  const std::string file = tmp.Write("exported.jsonl", out.out);
  const std::string from_original = tmp.Write("original.jsonl", original);
  auto ctx = RunCli({"context", file, "--json"});
  ASSERT_EQ(ctx.exit_code, 0) << ctx.err;
  EXPECT_EQ(ctx.out, RunCli({"context", from_original, "--json"}).out);
  auto json = RunCli({"export", "--store", spec_, *id, "-o", tmp.path() + "/o.jsonl", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["id"], *id);
  EXPECT_EQ(report["bytes"], out.out.size());
  EXPECT_EQ(report["path"], tmp.path() + "/o.jsonl");
  EXPECT_EQ(ReadFileOrDie(tmp.path() + "/o.jsonl"), out.out);
  EXPECT_EQ(RunCli({"export", "--store", spec_, "nosuch"}).exit_code, 1);
  EXPECT_EQ(RunCli({"export", "--store", spec_}).exit_code, 2);
}

INSTANTIATE_TEST_SUITE_P(Directory, StoreContract, ::testing::Values("directory"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(StoreDatabase, StoreContract, ::testing::Values("postgres"),
                         [](const auto& info) { return info.param; });

// --- the database only ---------------------------------------------------

class StoreDatabase : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto base = TestPgUri(&why);
    if (!base) {
      if (std::getenv("CI") != nullptr) FAIL() << why;
      GTEST_SKIP() << "no PostgreSQL test server: " << why;
    }
    uri_ = FreshDatabase(*base, &why);
    ASSERT_FALSE(uri_.empty()) << why;
  }
  Result<std::unique_ptr<SessionStore>> Open(int max_connections = 8) {
    PostgresStoreOptions o;
    o.uri = uri_;
    o.max_connections = max_connections;
    return NewPostgresStore(o);
  }
  std::string uri_;
};

TEST_F(StoreDatabase, MigrationsRunOnceEvenForConcurrentOpeners) {
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      if (!Open().ok()) ++failed;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  ASSERT_TRUE(Open().ok());
  EXPECT_EQ(PgQuery(uri_, "SELECT count(*) FROM compactor_schema"),
            std::to_string(postgres_schema::KnownVersion()));
  EXPECT_EQ(PgQuery(uri_, "SELECT max(version) FROM compactor_schema"),
            std::to_string(postgres_schema::KnownVersion()));
  EXPECT_EQ(PgQuery(uri_,
                    "SELECT count(*) FROM information_schema.tables WHERE table_name IN "
                    "('compactor_sessions','compactor_entries','compactor_conversations',"
                    "'compactor_summaries')"),
            "4");
}

TEST_F(StoreDatabase, ASchemaNewerThanTheBinaryIsRefused) {
  ASSERT_TRUE(Open().ok());
  bool ok = false;
  PgQuery(uri_,
          "INSERT INTO compactor_schema (version, description) VALUES (" +
              std::to_string(postgres_schema::KnownVersion() + 1) + ", 'from the future')",
          &ok);
  ASSERT_TRUE(ok);
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("newer than this compactor knows"), std::string::npos)
      << s.status().message();
}

TEST_F(StoreDatabase, AFailedMigrationLeavesNothingBehind) {
  // A table in the way of migration 1: its CREATE fails, the transaction
  // rolls back (the version table with it), no version is recorded; once it is gone the open
  // succeeds.
  bool ok = false;
  PgQuery(uri_, "CREATE TABLE compactor_entries (x int)", &ok);
  ASSERT_TRUE(ok);
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kIoError);
  EXPECT_EQ(PgQuery(uri_, "SELECT to_regclass('compactor_schema') IS NULL"), "t");
  EXPECT_EQ(PgQuery(uri_, "SELECT to_regclass('compactor_sessions') IS NULL"), "t");
  PgQuery(uri_, "DROP TABLE compactor_entries", &ok);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(Open().ok());
}

TEST_F(StoreDatabase, PasswordsNeverAppearInMessages) {
  EXPECT_EQ(RedactUri("postgres://me:s3cret@db.example:5432/x?sslmode=require"),
            "postgres://me:***@db.example:5432/x?sslmode=require");
  EXPECT_EQ(RedactUri("postgresql:///x?host=/tmp&password=s3cret&user=me"),
            "postgresql:///x?host=/tmp&password=***&user=me");
  EXPECT_EQ(RedactUri("postgresql://me@h/x"), "postgresql://me@h/x");
  PostgresStoreOptions o;
  o.uri = "postgresql://me:s3cret@/nodb?host=/nonexistent-dir&password=s3cret";
  o.connect_timeout_s = 2;
  auto s = NewPostgresStore(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.status().message().find("s3cret"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("***"), std::string::npos) << s.status().message();
}

// Many threads on a pool of two connections: every call is served (callers
// wait for a free connection), never more than two are open.
TEST_F(StoreDatabase, APoolOfTwoServesManyThreads) {
  auto store = Open(2);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Create("p", "", {}).ok());
  std::atomic<int> failures{0};
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        if (!(*store)
                 ->Append("p", {Custom("x" + std::to_string(t) + "-" + std::to_string(i), "")})
                 .ok())
          ++failures;
        if (t == 0 && i % 3 == 0) {
          int n = std::stoi("0" + PgQuery(uri_,
                                          "SELECT count(*) FROM pg_stat_activity WHERE "
                                          "application_name = 'compactor' AND datname = "
                                          "current_database()"));
          most = std::max(most.load(), n);
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(most.load(), 2);
  EXPECT_EQ((*store)->Info("p")->entries, 160u);
}

// Session lines are kept byte for byte (bytea), whatever their bytes.
TEST_F(StoreDatabase, LinesComeBackByteForByte) {
  auto store = Open();
  ASSERT_TRUE(store.ok());
  const std::string odd =
      R"({"type":"custom","id":"c1","parentId":null,"timestamp":"2026-01-01T10:00:00.000Z","data":"\u0000 é )" +
      std::string("\xff\xfe") + R"( end"})";
  const std::string text = Header("bytes") + "\n" + odd + "\n";
  ASSERT_TRUE((*store)->Import(text).ok());
  auto info = (*store)->Info("bytes");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size_bytes, text.size());
  EXPECT_NE(info->path.find("#bytes"), std::string::npos);
  auto s = (*store)->Load("bytes");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->size(), 1u);
}

}  // namespace
}  // namespace compactor::testing
