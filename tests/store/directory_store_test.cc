// The directory store: sessions found under a writable directory and
// read-only ones by their header's id, created with mode 0600, appended
// through the write protocol, the index rebuilt after a restart.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "compactor/env.h"
#include "compactor/mem_env.h"
#include "compactor/store.h"
#include "support/test_util.h"

namespace compactor::testing {
namespace {

std::string Header(const std::string& id) {
  return R"({"type":"session","version":3,"id":")" + id +
         R"(","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/w"})" + "\n";
}

std::string UserEntry(const std::string& id, const std::string& parent, const std::string& text) {
  std::string p = parent.empty() ? "null" : "\"" + parent + "\"";
  return R"({"type":"message","id":")" + id + R"(","parentId":)" + p +
         R"(,"timestamp":"2026-01-01T10:00:0)" + std::to_string(id.size() % 10) +
         R"(.000Z","message":{"role":"user","content":")" + text + R"(","timestamp":1}})" + "\n";
}

std::unique_ptr<SessionStore> Open(const std::string& dir, std::vector<std::string> ro = {},
                                   Env* env = nullptr) {
  DirectoryStoreOptions o;
  o.dir = dir;
  o.read_only_dirs = std::move(ro);
  o.env = env;
  auto s = NewDirectoryStore(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(DirectoryStore, FindsSessionFilesRecursivelyByTheirHeaderId) {
  TempDir w, ro;
  w.Write("a.jsonl", Header("sess-a") + UserEntry("e1", "", "first prompt of a"));
  ASSERT_TRUE((Env::Default()->CreateDirs(w.path() + "/deep/er")).ok());
  w.Write("deep/er/x.jsonl", Header("sess-b") + UserEntry("e1", "", "b"));
  w.Write("notes.txt", "not a session");
  w.Write("other.jsonl", "{\"type\":\"message\"}\n");  // no header: not a session
  w.Write("a.jsonl.bak", Header("sess-bak"));          // backups are not sessions
  w.Write(".hidden.jsonl", Header("sess-hidden"));
  ro.Write(
      "c.jsonl",
      Header("sess-c") +
          R"({"type":"session_info","id":"n1","parentId":null,"timestamp":"2026-01-01T10:00:00.000Z","name":"Named"})" +
          "\n");
  auto store = Open(w.path(), {ro.path()});
  auto list = store->List();
  ASSERT_TRUE(list.ok());
  std::vector<std::string> ids;
  for (const auto& i : *list) ids.push_back(i.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"sess-a", "sess-b", "sess-c"}));
  auto a = store->Info("sess-a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->path, w.path() + "/a.jsonl");
  EXPECT_EQ(a->title, "first prompt of a");
  EXPECT_FALSE(a->named);
  EXPECT_EQ(a->entries, 1u);
  EXPECT_FALSE(a->read_only);
  auto c = store->Info("sess-c");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->read_only);
  EXPECT_TRUE(c->named);
  EXPECT_EQ(c->title, "Named");
  EXPECT_EQ(store->Info("sess-bak").status().code(), StatusCode::kNotFound);
}

// The list reads a session's line from its bytes (no entry is parsed but
// the ones it shows): the same title, name, entry count and last activity
// as the loaded session has.
TEST(DirectoryStore, TheListLineMatchesTheLoadedSession) {
  TempDir w;
  const std::string info =
      R"({"type":"session_info","id":"n1","parentId":"e2","timestamp":"2026-01-01T10:00:05.000Z","name":"First name"})";
  const std::string cleared =
      R"({"type":"session_info","id":"n2","parentId":"n1","timestamp":"2026-01-01T10:00:06.000Z","name":""})";
  const std::string tool_text =
      R"({"type":"custom","id":"c1","parentId":"e1","timestamp":"2026-01-01T10:00:01.000Z","customType":"x","data":{"role":"user","type":"session_info"}})";
  w.Write("named.jsonl", Header("named") + tool_text + "\n" + UserEntry("e1", "c1", "the prompt") +
                             UserEntry("e22", "e1", "second") + info + "\n");
  w.Write("cleared.jsonl", Header("cleared") + tool_text + "\n" +
                               UserEntry("e1", "c1", "the prompt") + info + "\n" + cleared + "\n");
  w.Write("torn.jsonl", Header("torn") + UserEntry("e1", "", "only") + R"({"type":"mess)");
  auto store = Open(w.path());
  for (const char* id : {"named", "cleared", "torn"}) {
    auto i = store->Info(id);
    ASSERT_TRUE(i.ok()) << id;
    auto s = store->Load(id);
    ASSERT_TRUE(s.ok()) << id;
    std::optional<std::string> name = (*s)->Name();
    EXPECT_EQ(i->named, name.has_value() && !name->empty()) << id;
    if (i->named) {
      EXPECT_EQ(i->title, *name) << id;
    }
  }
  auto named = store->Info("named");
  EXPECT_EQ(named->title, "First name");
  EXPECT_EQ(named->entries, 4u);
  EXPECT_EQ(named->last_activity_ms, 1767261605000);  // the session_info's timestamp
  auto cleared_info = store->Info("cleared");
  EXPECT_FALSE(cleared_info->named);
  EXPECT_EQ(cleared_info->title, "the prompt");
  auto torn = store->Info("torn");
  EXPECT_EQ(torn->title, "only");
  EXPECT_EQ(torn->entries, 1u);
  EXPECT_EQ(torn->entries, (*store->Load("torn"))->size());
  EXPECT_EQ(named->entries, (*store->Load("named"))->size());
}

TEST(DirectoryStore, NewSessionsAreMode0600AndLoadBack) {
  TempDir w;
  auto store = Open(w.path() + "/created");
  auto id = store->Create(
      "", "/cwd",
      {R"({"type":"custom","id":"c1","parentId":null,"timestamp":"2026-01-01T10:00:00.000Z","customType":"x"})"});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto info = store->Info(*id);
  ASSERT_TRUE(info.ok());
  auto st = Env::Default()->Stat(info->path);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->mode & 0777, 0600u);
  auto s = store->Load(*id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->header().id, *id);
  EXPECT_EQ((*s)->header().cwd, "/cwd");
  EXPECT_EQ((*s)->size(), 1u);
  // A chosen id; taken and unsafe ones are refused.
  EXPECT_TRUE(store->Create("chosen-1", "", {}).ok());
  EXPECT_EQ(store->Create("chosen-1", "", {}).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->Create("../evil", "", {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Create(".x", "", {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(DirectoryStore, ReadOnlySessionsRefuseWrites) {
  TempDir w, ro;
  std::string path = ro.Write("c.jsonl", Header("sess-c") + UserEntry("e1", "", "hi"));
  auto store = Open(w.path(), {ro.path()});
  ASSERT_TRUE(store->ReadOnly("sess-c").ok());
  EXPECT_TRUE(*store->ReadOnly("sess-c"));
  Status s = store->Append("sess-c", {R"({"type":"custom","id":"z","parentId":"e1"})"});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store->Replace("sess-c", Header("sess-c"), std::nullopt).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadFileOrDie(path), Header("sess-c") + UserEntry("e1", "", "hi"));
}

TEST(DirectoryStore, TheWritableDirectoryWinsADuplicateId) {
  TempDir w, ro;
  w.Write("mine.jsonl", Header("same"));
  ro.Write("theirs.jsonl", Header("same"));
  auto store = Open(w.path(), {ro.path()});
  auto info = store->Info("same");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->path, w.path() + "/mine.jsonl");
  EXPECT_FALSE(info->read_only);
}

TEST(DirectoryStore, AppendsRefuseASessionChangedSinceItWasRead) {
  TempDir w;
  std::string path = w.Write("a.jsonl", Header("a") + UserEntry("e1", "", "hi"));
  auto store = Open(w.path());
  StoreAppendOptions ao;
  ao.expected_entries = 1;
  ASSERT_TRUE(
      (store->Append(
           "a",
           {R"({"type":"custom","id":"c1","parentId":"e1","timestamp":"2026-01-01T10:00:01.000Z"})"},
           ao))
          .ok());
  // Someone else's entry arrived meanwhile: the caller's view (1 entry) is stale.
  Status stale = store->Append("a", {R"({"type":"custom","id":"c2","parentId":"e1"})"}, ao);
  EXPECT_EQ(stale.code(), StatusCode::kFailedPrecondition);
  auto s = store->Load("a");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->size(), 2u);
  EXPECT_EQ(store->Append("nosuch", {"{}"}).code(), StatusCode::kNotFound);
}

TEST(DirectoryStore, FilesAddedLaterAreFoundAndTheIndexSurvivesARestart) {
  TempDir w;
  auto store = Open(w.path());
  auto id = store->Create("", "", {});
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE((store->SetConversation("anthropic:session:abc", *id)).ok());
  w.Write("later.jsonl", Header("later"));
  EXPECT_TRUE(store->Info("later").ok());  // an unknown id scans again
  store.reset();
  auto again = Open(w.path());
  EXPECT_TRUE(again->Info(*id).ok());
  EXPECT_TRUE(again->Info("later").ok());
  EXPECT_EQ(again->FindConversation("anthropic:session:abc"), *id);
  EXPECT_EQ(again->FindConversation("other"), std::nullopt);
}

TEST(DirectoryStore, ReplaceKeepsTheIdAndRefusesAStaleView) {
  TempDir w;
  w.Write("a.jsonl", Header("a") + UserEntry("e1", "", "hi"));
  auto store = Open(w.path());
  EXPECT_EQ(store->Replace("a", Header("a"), 5).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE((store->Replace("a", Header("a") + UserEntry("e2", "", "new"), 1)).ok());
  auto s = store->Load("a");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ((*s)->size(), 1u);
  EXPECT_EQ((*s)->entry(0).id, "e2");
}

TEST(DirectoryStore, ACrashKeepsWhatWasSyncedAndNeverATornSession) {
  MemDir m;
  auto store = Open(m.path() + "/store", {}, m.env());
  auto id = store->Create("", "", {});
  ASSERT_TRUE(id.ok());
  StoreAppendOptions synced;
  synced.sync = true;
  ASSERT_TRUE(
      (store->Append(
           *id,
           {R"({"type":"custom","id":"c1","parentId":null,"timestamp":"2026-01-01T10:00:01.000Z"})"},
           synced))
          .ok());
  ASSERT_TRUE(
      (store->Append(
           *id,
           {R"({"type":"custom","id":"c2","parentId":"c1","timestamp":"2026-01-01T10:00:02.000Z"})"}))
          .ok());  // not synced: may be lost
  m.env()->FailNth(MemEnvOp::kWrite, 1);
  EXPECT_FALSE(store->Append(*id, {R"({"type":"custom","id":"c3","parentId":"c2"})"}, synced).ok());
  m.env()->Crash();
  auto after = Open(m.path() + "/store", {}, m.env());
  auto s = after->Load(*id);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE((*s)->warnings().empty());
  ASSERT_GE((*s)->size(), 1u);
  EXPECT_EQ((*s)->entry(0).id, "c1");
}

}  // namespace
}  // namespace compactor::testing

namespace compactor::testing {
namespace {

// With the caller's loaded copy, an unchanged file is appended to without
// counting its entries again; a file another writer appended to since is
// still refused.
TEST(DirectoryStore, AnAppendCheckedAgainstALoadedCopySeesOtherWriters) {
  TempDir w;
  w.Write("a.jsonl", Header("sess-a") + UserEntry("e1", "", "first"));
  auto store = Open(w.path());
  auto loaded = store->Load("sess-a");
  ASSERT_TRUE(loaded.ok());
  StoreAppendOptions ao;
  ao.expected_entries = (*loaded)->size();
  ao.loaded = loaded->get();
  std::string e2 = UserEntry("e2", "e1", "second");
  e2.pop_back();  // no newline: Append takes lines
  ASSERT_TRUE(store->Append("sess-a", {e2}, ao).ok());
  // Our copy is now behind the file: the same check must refuse.
  std::string e3 = UserEntry("e3", "e1", "third");
  e3.pop_back();
  Status again = store->Append("sess-a", {e3}, ao);
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again.ToString();
  ASSERT_TRUE((*loaded)->Refresh().ok());
  ao.expected_entries = (*loaded)->size();
  EXPECT_TRUE(store->Append("sess-a", {e3}, ao).ok());
  auto now = store->Load("sess-a");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ((*now)->size(), 3u);
}

}  // namespace
}  // namespace compactor::testing
