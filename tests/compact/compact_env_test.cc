// CompactFile and BranchFile entirely in a MemEnv: every strategy's writes land
// in the Env, ids and timestamps come from it, and a failed write leaves the
// session as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "compactor/branch.h"
#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/entries.h"
#include "compactor/mem_env.h"
#include "compactor/strategy.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using ::testing::HasSubstr;
using testing::MemDir;

// `turns` user / tool call / tool result / answer turns, ~`chars` of output each.
std::string MakeSession(int turns, int chars) {
  std::string text = MakeSessionHeader({"sess", "2026-01-01T00:00:00.000Z", "/w", ""}) + "\n";
  std::string parent;
  int n = 0;
  auto add = [&](const std::string& msg) {
    std::string id = "e" + std::to_string(++n);
    text += MakeMessageEntry({id, parent, "2026-01-01T00:00:01.000Z"}, msg) + "\n";
    parent = id;
  };
  for (int t = 0; t < turns; ++t) {
    const std::string k = std::to_string(t);
    add(R"({"role":"user","content":"please edit file )" + k + R"(.ts","timestamp":1})");
    add(R"({"role":"assistant","content":[{"type":"toolCall","id":"c)" + k +
        R"(","name":"edit","arguments":{"path":"src/f)" + k +
        R"(.ts"}}],"provider":"p","model":"m","usage":{"input":10,"output":10,"cacheRead":0,)"
        R"("cacheWrite":0,"totalTokens":20},"stopReason":"toolUse","timestamp":2})");
    add(R"({"role":"toolResult","toolCallId":"c)" + k +
        R"(","toolName":"edit","content":[{"type":"text","text":")" +
        std::string(static_cast<size_t>(chars), 'x') + R"("}],"isError":false,"timestamp":3})");
    add(R"({"role":"assistant","content":[{"type":"text","text":"done )" + k +
        R"("}],"provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,)"
        R"("cacheWrite":0,"totalTokens":30},"stopReason":"stop","timestamp":4})");
  }
  return text;
}

CompactOptions Options(MemEnv* env) {
  CompactOptions o;
  o.settings.keep_recent_tokens = 2000;
  o.env = env;
  return o;
}

TEST(CompactEnv, SummaryIsAppendedWithTheEnvsClockAndIds) {
  MemEnvOptions seeded;
  seeded.seed = 99;
  MemDir d(seeded), twin(seeded);
  d.env()->AdvanceMs(42);
  twin.env()->AdvanceMs(42);
  const std::string text = MakeSession(20, 2000);
  std::string path = d.Write("s.jsonl", text);
  std::string twin_path = twin.Write("s.jsonl", text);
  auto r = CompactFile(path, Options(d.env()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->compacted);
  EXPECT_EQ(d.Read(path), text + r->entry_json + "\n");
  auto s = d.Load(path);
  ASSERT_TRUE(s);
  const Entry& e = s->entry(s->size() - 1);
  EXPECT_EQ(e.type, EntryType::kCompaction);
  EXPECT_EQ(e.timestamp, "2026-01-01T00:00:00.042Z");
  // Same seed, same clock: the same entry, byte for byte.
  auto again = CompactFile(twin_path, Options(twin.env()));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->entry_json, r->entry_json);
}

TEST(CompactEnv, AFailedAppendLeavesTheSession) {
  MemDir d;
  const std::string text = MakeSession(20, 2000);
  std::string path = d.Write("s.jsonl", text);
  d.env()->FailNth(MemEnvOp::kWrite, 1);
  auto r = CompactFile(path, Options(d.env()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_EQ(d.Read(path), text);
  // Another writer holding the lock delays the append; the compaction then lands.
  d.env()->HoldLockByOther(path, true);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    d.env()->ReleaseOther(path);
  });
  auto later = CompactFile(path, Options(d.env()));
  releaser.join();
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ(d.Read(path), text + later->entry_json + "\n");
}

TEST(CompactEnv, NotesHandoffAndMaskUseTheEnv) {
  MemDir d;
  const std::string text = MakeSession(20, 2000);
  std::string path = d.Write("s.jsonl", text);

  CompactOptions notes = Options(d.env());
  notes.strategy = FindStrategy("notes");
  notes.notes_path = d.path() + "/notes.md";
  EXPECT_EQ(CompactFile(path, notes).status().code(), StatusCode::kNotFound);
  d.Write("notes.md", "# Goal\nShip it.\n");
  auto n = CompactFile(path, notes);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_THAT(n->summary, HasSubstr("Ship it."));

  CompactOptions handoff = Options(d.env());
  handoff.strategy = FindStrategy("handoff");
  auto h = CompactFile(path, handoff);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE(h->compacted);
  EXPECT_THAT(h->output_path, ::testing::StartsWith(d.path() + "/2026-01-01T00-00-00-000Z_"));
  auto fresh = d.Load(h->output_path);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->header().parent_session, path);

  std::string masked = d.Write("m.jsonl", text);
  CompactOptions mask = Options(d.env());
  mask.strategy = FindStrategy("mask");
  auto m = CompactFile(masked, mask);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->compacted);
  EXPECT_EQ(d.Read(masked + ".bak"), text);
  EXPECT_THAT(d.Read(masked), HasSubstr("\"prunedAt\":1767225600000"));
}

TEST(CompactEnv, BranchAppendsThroughTheEnv) {
  MemDir d;
  const std::string text = MakeSession(3, 100);
  std::string path = d.Write("s.jsonl", text);
  BranchOptions o;
  o.target_id = "e2";
  o.env = d.env();
  auto r = BranchFile(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->appended.size(), 1u);
  EXPECT_EQ(d.Read(path), text + r->appended[0] + "\n");
  EXPECT_THAT(r->appended[0], HasSubstr("\"timestamp\":\"2026-01-01T00:00:00.000Z\""));
}

}  // namespace
}  // namespace compactor
