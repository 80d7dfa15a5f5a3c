// Recording conversations into the store: new sessions, appends of what is
// new, branches where the client's history diverges, proxy compactions as
// compaction entries (the recorded context is what was sent upstream),
// restarts, write failures and crashes.
#include "serve/recorder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "compactor/context.h"
#include "compactor/mem_env.h"
#include "compactor/store.h"
#include "support/test_util.h"

namespace compactor::testing {
namespace {

using serve::ConversationRecord;
using serve::ConversationRecorder;
using serve::RecorderOptions;

std::string User(const std::string& text) {
  return R"({"role":"user","content":[{"type":"text","text":")" + text + R"("}],"timestamp":0})";
}
std::string Assistant(const std::string& text) {
  return R"({"role":"assistant","content":[{"type":"text","text":")" + text +
         R"("}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":0})";
}

ConversationRecord Rec(std::vector<std::string> messages, const std::string& conv = "c1") {
  ConversationRecord r;
  r.conversation_id = conv;
  r.api = "anthropic";
  r.provider = "anthropic";
  r.model = "m";
  r.messages = std::move(messages);
  for (size_t i = 0; i < r.messages.size(); ++i) r.item_first_message.push_back(i);
  return r;
}

// The context messages of the recorded session, as JSON text each.
std::vector<std::string> Context(SessionStore& store, const std::string& id) {
  auto s = store.Load(id);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  auto ctx = BuildSessionContext(**s);
  EXPECT_TRUE(ctx.ok());
  std::vector<std::string> out;
  for (const ContextMessage& m : ctx->messages) out.emplace_back(m.json());
  return out;
}

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    recorder_.reset();
    store_.reset();
    DirectoryStoreOptions o;
    o.dir = mem_.path() + "/store";
    o.env = mem_.env();
    auto s = NewDirectoryStore(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    RecorderOptions ro;
    ro.store = store_.get();
    ro.env = mem_.env();
    ro.on_error = [this](const Status& s) { errors_.push_back(s); };
    recorder_ = std::make_unique<ConversationRecorder>(std::move(ro));
  }
  // The recorded session `id`, once its context was checked to be `context`
  // (null when it does not load).
  std::unique_ptr<compactor::Session> Recorded(const std::string& id,
                                               const std::vector<std::string>& context) {
    EXPECT_EQ(Context(*store_, id), context);
    auto s = store_->Load(id);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  std::string Session(const std::string& conv = "c1") {
    auto id = recorder_->SessionOf(conv);
    EXPECT_TRUE(id.has_value());
    return id.value_or("");
  }

  MemDir mem_;
  std::unique_ptr<SessionStore> store_;
  std::unique_ptr<ConversationRecorder> recorder_;
  std::vector<Status> errors_;
};

TEST_F(RecorderTest, ANewConversationIsANewSessionAndLaterRequestsAppendWhatIsNew) {
  std::vector<std::string> m = {User("q1"), Assistant("a1"), User("q2")};
  recorder_->Record(Rec({m[0]}));
  recorder_->Record(Rec(m));
  recorder_->Flush();
  std::string id = Session();
  auto s = Recorded(id, m);
  ASSERT_TRUE(s);
  // model_change + three messages, one chain, no copies.
  EXPECT_EQ(s->size(), 4u);
  EXPECT_EQ(s->Roots().size(), 1u);
  auto list = store_->List();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);
  EXPECT_TRUE(errors_.empty());
}

// Records of one conversation are written in the order their places were
// taken (the exchanges' order), not the order they arrive in: the first
// exchange's worker may queue its record after the next exchange's. A
// record waits for an earlier place of its own conversation only.
TEST_F(RecorderTest, RecordsAreWrittenInTheOrderOfTheirPlaces) {
  std::vector<std::string> m = {User("q1"), Assistant("a1"), User("q2")};
  const uint64_t first = recorder_->Reserve("c1");
  const uint64_t second = recorder_->Reserve("c1");
  const uint64_t other = recorder_->Reserve("c2");
  recorder_->Record(Rec(m), second);
  recorder_->Record(Rec({User("x")}, "c2"));  // no place: after everything so far
  recorder_->Cancel(other);
  // The other conversation is not held up by c1's first place.
  for (int i = 0; i < 500 && !recorder_->SessionOf("c2"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto written = store_->List();
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(written->size(), 1u) << "c1's second record was written before its first";
  recorder_->Record(Rec({m[0]}), first);
  recorder_->Flush();
  std::string id = Session();
  auto s = Recorded(id, m);
  ASSERT_TRUE(s);
  // model_change + three messages, one chain: no move back to the first record's leaf.
  EXPECT_EQ(s->size(), 4u);
  for (const auto& c : s->Children()) EXPECT_LE(c.size(), 1u);
  // A place given up (the exchange failed) holds nothing back.
  const uint64_t failed = recorder_->Reserve("c1");
  recorder_->Record(Rec({m[0], m[1], m[2], Assistant("a2"), User("q3")}));
  recorder_->Cancel(failed);
  recorder_->Flush();
  EXPECT_EQ(Context(*store_, id).size(), 5u);
  EXPECT_TRUE(errors_.empty());
}

TEST_F(RecorderTest, ADivergingHistoryBranchesAtTheCommonPrefix) {
  recorder_->Record(Rec({User("q1"), Assistant("a1"), User("q2"), Assistant("a2"), User("q3")}));
  recorder_->Flush();
  // The client compacted its own history: the first exchange is kept, the rest differs.
  std::vector<std::string> now = {User("q1"), Assistant("a1"), User("summary of q2..a2"),
                                  User("q3 again")};
  recorder_->Record(Rec(now));
  recorder_->Flush();
  std::string id = Session();
  auto s = Recorded(id, now);
  ASSERT_TRUE(s);
  int branch_points = 0;
  for (const auto& c : s->Children()) branch_points += c.size() > 1 ? 1 : 0;
  EXPECT_EQ(branch_points, 1);
  EXPECT_EQ(s->size(), 1u + 5u + 2u);  // nothing recorded twice
}

TEST_F(RecorderTest, AProxyCompactionMakesTheContextWhatWasSentUpstream) {
  std::vector<std::string> m = {User("q1"), Assistant("a1"), User("q2"), Assistant("a2"),
                                User("q3")};
  ConversationRecord r = Rec(m);
  serve::SetRecordedCompaction(&r, 3, "the summary", 1234, 200);
  recorder_->Record(r);
  recorder_->Record(r);  // the next request reuses the same compaction: no second entry
  std::vector<std::string> more = m;
  more.push_back(Assistant("a3"));
  more.push_back(User("q4"));
  ConversationRecord r2 = Rec(more);
  serve::SetRecordedCompaction(&r2, 3, "the summary", 1300, 220);
  recorder_->Record(r2);
  recorder_->Flush();
  std::string id = Session();
  std::vector<std::string> ctx = Context(*store_, id);
  ASSERT_EQ(ctx.size(), 1u + more.size() - 3);
  EXPECT_NE(ctx[0].find("\"compactionSummary\""), std::string::npos) << ctx[0];
  EXPECT_NE(ctx[0].find("the summary"), std::string::npos);
  EXPECT_EQ(std::vector<std::string>(ctx.begin() + 1, ctx.end()),
            std::vector<std::string>(more.begin() + 3, more.end()));
  auto s = store_->Load(id);
  ASSERT_TRUE(s.ok());
  int compactions = 0;
  for (const Entry& e : (*s)->entries()) compactions += e.type == EntryType::kCompaction ? 1 : 0;
  EXPECT_EQ(compactions, 1);
}

TEST_F(RecorderTest, AfterARestartTheConversationContinuesInItsSession) {
  recorder_->Record(Rec({User("q1")}));
  recorder_->Flush();
  std::string id = Session();
  Reopen();
  std::vector<std::string> m = {User("q1"), Assistant("a1"), User("q2")};
  recorder_->Record(Rec(m));
  recorder_->Flush();
  EXPECT_EQ(Session(), id);
  EXPECT_EQ(Context(*store_, id), m);
  auto list = store_->List();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);
}

TEST_F(RecorderTest, ATornWriteIsReportedAndTheNextRecordRepairsTheSession) {
  recorder_->Record(Rec({User("q1")}));
  recorder_->Flush();
  std::string id = Session();
  // The append stores 10 bytes of its first line, then the rest fails: a torn line.
  mem_.env()->ShortWriteNth(1, 10);
  mem_.env()->FailNth(MemEnvOp::kWrite, 2);
  recorder_->Record(Rec({User("q1"), Assistant("a1"), User("q2")}));
  recorder_->Flush();
  EXPECT_FALSE(errors_.empty());
  std::vector<std::string> m = {User("q1"), Assistant("a1"), User("q2"), Assistant("a2"),
                                User("q3")};
  recorder_->Record(Rec(m));
  recorder_->Flush();
  EXPECT_EQ(Context(*store_, id), m);
}

TEST_F(RecorderTest, ACrashLosesOnlyWhatWasNotSyncedAndNeverCorrupts) {
  std::vector<std::string> m = {User("q1"), Assistant("a1"), User("q2")};
  recorder_->Record(Rec(m));
  recorder_->Flush();  // written and synced
  std::string id = Session();
  std::vector<std::string> more = m;
  more.push_back(Assistant("a2"));
  more.push_back(User("q3"));
  mem_.env()->FailNth(MemEnvOp::kSync, 1);  // written, never synced: a crash takes it
  recorder_->Record(Rec(more));
  recorder_->Flush();
  EXPECT_FALSE(errors_.empty());
  mem_.env()->Crash();
  Reopen();
  auto s = store_->Load(id);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE((*s)->warnings().empty());
  EXPECT_EQ(Context(*store_, id), m);
  // Recording goes on in the same session.
  more.push_back(Assistant("a3"));
  recorder_->Record(Rec(more));
  recorder_->Flush();
  EXPECT_EQ(Context(*store_, id), more);
}

TEST_F(RecorderTest, ConversationsAreKeptApart) {
  recorder_->Record(Rec({User("x")}, "one"));
  recorder_->Record(Rec({User("y")}, "two"));
  recorder_->Flush();
  EXPECT_NE(Session("one"), Session("two"));
  EXPECT_EQ(Context(*store_, Session("one")), std::vector<std::string>{User("x")});
  EXPECT_EQ(Context(*store_, Session("two")), std::vector<std::string>{User("y")});
}

// Two servers' recorders on one store (shared_store): turns of one
// conversation alternate between them, and an older record may arrive after
// a newer one the other wrote. Every message is recorded once, in one chain.
TEST_F(RecorderTest, TwoRecordersOnASharedStoreNeitherLoseNorDuplicate) {
  auto make = [this] {
    RecorderOptions ro;
    ro.store = store_.get();
    ro.env = mem_.env();
    ro.shared_store = true;
    ro.on_error = [this](const Status& s) { errors_.push_back(s); };
    return std::make_unique<ConversationRecorder>(std::move(ro));
  };
  auto a = make();
  auto b = make();
  std::vector<std::string> m;
  std::vector<std::vector<std::string>> turns;
  for (int t = 0; t < 6; ++t) {
    m.push_back(User("q" + std::to_string(t)));
    turns.push_back(m);
    m.push_back(Assistant("a" + std::to_string(t)));
  }
  // Both see the first request of the new conversation: one session wins.
  auto write = [](ConversationRecorder& r, const std::vector<std::string>& messages) {
    r.Record(Rec(messages));
    r.Flush();
  };
  write(*a, turns[0]);
  write(*b, turns[0]);
  // Alternating, then late: b writes turn 3 before a's turn 2 arrives.
  write(*a, turns[1]);
  write(*b, turns[3]);
  write(*a, turns[2]);
  write(*a, turns[4]);
  write(*b, turns[5]);
  ASSERT_TRUE(errors_.empty()) << errors_[0].ToString();
  auto list = store_->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);  // one session for the conversation
  const std::string id = (*list)[0].id;
  EXPECT_EQ(a->SessionOf("c1"), id);
  EXPECT_EQ(b->SessionOf("c1"), id);
  auto s = Recorded(id, turns[5]);
  ASSERT_TRUE(s);
  size_t messages = 0;
  for (const Entry& e : s->entries()) messages += e.type == EntryType::kMessage ? 1 : 0;
  EXPECT_EQ(messages, turns[5].size());  // nothing twice, nothing lost
  EXPECT_EQ(s->Roots().size(), 1u);
  for (const auto& c : s->Children()) EXPECT_LE(c.size(), 1u);  // no branch
}

}  // namespace
}  // namespace compactor::testing
