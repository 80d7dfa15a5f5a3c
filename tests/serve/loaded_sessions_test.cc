// The sessions the service keeps loaded: refreshed with what was appended
// since, read again when replaced, let go least recently used first.
#include "serve/loaded_sessions.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "compactor/store.h"
#include "support/test_util.h"

namespace compactor::serve {
namespace {

using compactor::testing::TempDir;

std::string Header(const std::string& id) {
  return R"({"type":"session","version":3,"id":")" + id +
         R"(","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/w"})";
}

std::string UserEntry(const std::string& id, const std::string& parent, const std::string& text) {
  std::string p = parent.empty() ? "null" : "\"" + parent + "\"";
  return R"({"type":"message","id":")" + id + R"(","parentId":)" + p +
         R"(,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":")" + text +
         R"(","timestamp":1}})";
}

std::unique_ptr<SessionStore> Store(const std::string& dir) {
  DirectoryStoreOptions o;
  o.dir = dir;
  auto s = NewDirectoryStore(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

std::string LastText(LoadedSessions::Handle& h) {
  auto ctx = h.Context(std::nullopt, false);
  EXPECT_TRUE(ctx.ok());
  if (!ctx.ok() || (*ctx)->messages.empty()) return "";
  std::string json((*ctx)->messages.back().json());
  return json;
}

TEST(LoadedSessions, ASecondRequestReadsOnlyWhatWasAppended) {
  TempDir d;
  auto store = Store(d.path());
  ASSERT_TRUE(store->Create("s1", "/w", {UserEntry("e1", "", "first")}).ok());
  LoadedSessions loaded(store.get());
  {
    auto h = loaded.Acquire("s1");
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_TRUE(h->loaded_in_full());
    EXPECT_EQ(h->session().size(), 1u);
    EXPECT_NE(LastText(*h).find("first"), std::string::npos);
  }
  StoreAppendOptions ao;
  ao.expected_entries = 1;
  ASSERT_TRUE(store->Append("s1", {UserEntry("e2", "e1", "second")}, ao).ok());
  auto h = loaded.Acquire("s1");
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->loaded_in_full());  // refreshed, not read again
  EXPECT_EQ(h->session().size(), 2u);
  EXPECT_NE(LastText(*h).find("second"), std::string::npos);
  auto ctx = h->Context(std::nullopt, false);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ((*ctx)->messages.size(), 2u);
}

TEST(LoadedSessions, AReplacedSessionIsReadAgain) {
  TempDir d;
  auto store = Store(d.path());
  ASSERT_TRUE(store->Create("s1", "/w", {UserEntry("e1", "", "old")}).ok());
  LoadedSessions loaded(store.get());
  ASSERT_TRUE(loaded.Acquire("s1").ok());
  std::string replaced = Header("s1") + "\n" + UserEntry("x1", "", "new text") + "\n";
  ASSERT_TRUE(store->Replace("s1", replaced, 1).ok());
  auto h = loaded.Acquire("s1");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->session().size(), 1u);
  std::string last = LastText(*h);
  EXPECT_NE(last.find("new text"), std::string::npos);
  EXPECT_EQ(last.find("old"), std::string::npos);
}

TEST(LoadedSessions, TheLeastRecentlyUsedIsLetGoAndUnknownIdsTakeNoPlace) {
  TempDir d;
  auto store = Store(d.path());
  for (const char* id : {"a", "b"}) {
    ASSERT_TRUE(store->Create(id, "/w", {UserEntry("e1", "", id)}).ok());
  }
  LoadedSessions loaded(store.get(), {.max_sessions = 1});
  ASSERT_TRUE(loaded.Acquire("a").ok());
  EXPECT_EQ(loaded.Acquire("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(loaded.size(), 1u);
  EXPECT_FALSE(loaded.Acquire("a")->loaded_in_full());  // still loaded
  ASSERT_TRUE(loaded.Acquire("b").ok());
  EXPECT_EQ(loaded.size(), 1u);
  EXPECT_TRUE(loaded.Acquire("a")->loaded_in_full());  // let go for b
}

TEST(LoadedSessions, RequestsOnOneSessionTakeTurns) {
  TempDir d;
  auto store = Store(d.path());
  ASSERT_TRUE(store->Create("s1", "/w", {UserEntry("e1", "", "p")}).ok());
  LoadedSessions loaded(store.get());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto h = loaded.Acquire("s1");
        if (h.ok() && h->Context(std::nullopt, i % 2 == 0).ok()) ok.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 200);
}

}  // namespace
}  // namespace compactor::serve
