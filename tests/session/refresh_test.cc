// Session::Refresh, AppendToSession and ContextCache: a loaded session that
// takes appends gives exactly what a fresh Session::Open + BuildSessionContext
// gives, at every step.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "compactor/context.h"
#include "compactor/entries.h"
#include "compactor/estimate.h"
#include "compactor/js_json.h"
#include "compactor/session.h"
#include "compactor/strategy.h"
#include "compactor/writer.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing::FixturePath;
using testing::ReadFileOrDie;
using testing::TempDir;

constexpr char kHeader[] =
    R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})";

std::string Q(const std::string& s) {
  std::string out;
  AppendJsString(out, s);
  return out;
}

std::string Base(const std::string& type, const std::string& id, const std::string& parent) {
  return R"({"type":)" + Q(type) + R"(,"id":)" + Q(id) + R"(,"parentId":)" +
         (parent.empty() ? std::string("null") : Q(parent)) +
         R"(,"timestamp":"2026-01-01T00:00:01.000Z")";
}

std::string Msg(const std::string& id, const std::string& parent, const std::string& role,
                const std::string& text) {
  std::string m =
      R"({"role":)" + Q(role) + R"(,"content":[{"type":"text","text":)" + Q(text) + "}]";
  if (role == "assistant")
    m += R"(,"provider":"p)" + text.substr(0, 1) + R"(","model":"m)" + text.substr(0, 2) +
         R"(","stopReason":"stop","usage":{"input":10,"output":5,"totalTokens":15})";
  m += R"(,"timestamp":1})";
  return Base("message", id, parent) + R"(,"message":)" + m + "}";
}

void AppendRaw(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::app | std::ios::binary);
  f << bytes;
}

std::unique_ptr<Session> MustOpen(const std::string& path, const LoadOptions& o = {}) {
  auto r = Session::Open(path, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

// Every index Session exposes agrees between the refreshed and a fresh load.
void ExpectSameIndex(const Session& live, const Session& fresh) {
  ASSERT_EQ(live.size(), fresh.size());
  EXPECT_EQ(live.Leaf(), fresh.Leaf());
  EXPECT_EQ(live.Name(), fresh.Name());
  EXPECT_EQ(live.Roots(), fresh.Roots());
  EXPECT_EQ(live.Children(), fresh.Children());
  for (size_t i = 0; i < live.size(); ++i) {
    const Entry& x = live.entry(i);
    const Entry& y = fresh.entry(i);
    EXPECT_EQ(x.id, y.id) << i;
    EXPECT_EQ(x.parent_id, y.parent_id) << i;
    EXPECT_EQ(x.line, y.line) << i;
    EXPECT_EQ(x.type, y.type) << i;
    EXPECT_EQ(x.role, y.role) << i;
    EXPECT_EQ(x.provider, y.provider) << i;
    EXPECT_EQ(x.model, y.model) << i;
    EXPECT_EQ(x.first_kept_entry_id, y.first_kept_entry_id) << i;
    EXPECT_EQ(x.target_id, y.target_id) << i;
    EXPECT_EQ(x.label, y.label) << i;
    EXPECT_EQ(x.estimate, y.estimate) << i;
    EXPECT_EQ(x.tool_call_blocks, y.tool_call_blocks) << i;
    EXPECT_EQ(live.Parent(i), fresh.Parent(i)) << i;
    EXPECT_EQ(live.Find(x.id), fresh.Find(y.id)) << i;
    EXPECT_EQ(live.LabelOf(x.id), fresh.LabelOf(y.id)) << i;
    EXPECT_EQ(live.EntryJson(i), fresh.EntryJson(i)) << i;
    EXPECT_EQ(live.MessageJson(i), fresh.MessageJson(i)) << i;
  }
}

void ExpectSameContext(const SessionContext& got, const SessionContext& want) {
  EXPECT_EQ(ContextToJson(got), ContextToJson(want));
  EXPECT_EQ(got.path, want.path);
  EXPECT_EQ(got.compaction_path_index, want.compaction_path_index);
  ASSERT_EQ(got.messages.size(), want.messages.size());
  for (size_t k = 0; k < got.messages.size(); ++k) {
    EXPECT_EQ(got.messages[k].entry_index, want.messages[k].entry_index) << k;
    EXPECT_EQ(got.messages[k].role, want.messages[k].role) << k;
    EXPECT_EQ(got.messages[k].origin, want.messages[k].origin) << k;
  }
}

// The context of `leaf` from the cache against a fresh load's.
void ExpectContextMatches(ContextCache& cache, const Session& live, const std::string& path,
                          const std::optional<std::string>& leaf,
                          const CompactionExpander* expander) {
  auto fresh = MustOpen(path);
  ASSERT_NE(fresh, nullptr);
  ContextOptions co;
  co.leaf_id = leaf;
  co.expander = expander;
  auto want = BuildSessionContext(*fresh, co);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto got = cache.Get(live, leaf);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ExpectSameContext(**got, *want);
}

TEST(SessionRefresh, ReadsOnlyAppendedEntries) {
  TempDir tmp;
  const std::string path =
      tmp.Write("s.jsonl", std::string(kHeader) + "\n" + Msg("a", "", "user", "hi") + "\n");
  auto s = MustOpen(path);
  ASSERT_NE(s, nullptr);
  auto r = s->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->added, 0u);
  EXPECT_FALSE(r->reloaded);

  AppendRaw(path,
            Msg("b", "a", "assistant", "hello") + "\n" + Msg("c", "b", "user", "more") + "\n");
  r = s->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->added, 2u);
  EXPECT_FALSE(r->reloaded);
  EXPECT_EQ(s->generation(), 0u);
  ExpectSameIndex(*s, *MustOpen(path));
  EXPECT_EQ(s->entry(*s->Leaf()).id, "c");
  EXPECT_EQ(s->entry(2).line, 4u);
}

TEST(SessionRefresh, AppendToSessionWritesThroughTheLockAndIndexes) {
  TempDir tmp;
  const std::string path = tmp.Write("s.jsonl", std::string(kHeader) + "\n");
  auto s = MustOpen(path);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->Leaf());
  auto r = AppendToSession(s.get(), {Msg("a", "", "user", "hi"), Msg("b", "a", "user", "x")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->added, 2u);
  EXPECT_EQ(ReadFileOrDie(path), std::string(kHeader) + "\n" + Msg("a", "", "user", "hi") + "\n" +
                                     Msg("b", "a", "user", "x") + "\n");
  ExpectSameIndex(*s, *MustOpen(path));
}

TEST(SessionRefresh, TornLastLineIsLeftForTheNextRead) {
  TempDir tmp;
  const std::string path = tmp.Write("s.jsonl", std::string(kHeader) + "\n");
  const std::string line = Msg("a", "", "user", "hi");
  AppendRaw(path, line.substr(0, 20));
  auto s = MustOpen(path);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->size(), 0u);
  AppendRaw(path, line.substr(20, 30));
  auto r = s->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->added, 0u);
  AppendRaw(path, line.substr(50) + "\n" + Msg("b", "a", "user", "x").substr(0, 10));
  r = s->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->added, 1u);
  EXPECT_FALSE(r->reloaded);
  ExpectSameIndex(*s, *MustOpen(path));
  AppendRaw(path, Msg("b", "a", "user", "x").substr(10) + "\n");
  r = s->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->added, 1u);
  ExpectSameIndex(*s, *MustOpen(path));
  EXPECT_EQ(s->entry(1).line, 3u);
}

TEST(SessionRefresh, ReplacedTruncatedOrRewrittenFileIsReloaded) {
  TempDir tmp;
  const std::string a = Msg("a", "", "user", "hi"), b = Msg("b", "a", "user", "there");
  const std::string path = tmp.Write("s.jsonl", std::string(kHeader) + "\n" + a + "\n" + b + "\n");
  auto s = MustOpen(path);
  ASSERT_NE(s, nullptr);

  // Replaced (a rename over the path: another inode).
  ASSERT_TRUE(WriteFileAtomic(path, std::string(kHeader) + "\n" + a + "\n").ok());
  auto r = s->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->reloaded);
  EXPECT_EQ(s->generation(), 1u);
  ExpectSameIndex(*s, *MustOpen(path));

  // Rewritten in place, longer than before: the bytes before the offset differ.
  {
    std::ofstream f(path, std::ios::trunc | std::ios::binary);
    f << kHeader << "\n" << Msg("z", "", "user", "hj") << "\n" << b << "\n";
  }
  r = s->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->reloaded);
  EXPECT_EQ(s->generation(), 2u);
  ExpectSameIndex(*s, *MustOpen(path));

  // Truncated in place.
  {
    std::ofstream f(path, std::ios::trunc | std::ios::binary);
    f << kHeader << "\n";
  }
  r = s->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->reloaded);
  EXPECT_EQ(s->size(), 0u);
}

TEST(SessionRefresh, EntriesThatChangeEarlierOnesReload) {
  TempDir tmp;
  // "b" names a parent "later" that does not exist yet.
  const std::string path =
      tmp.Write("s.jsonl", std::string(kHeader) + "\n" + Msg("a", "", "user", "hi") + "\n" +
                               Msg("b", "later", "user", "x") + "\n");
  auto s = MustOpen(path);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->Parent(1));
  AppendRaw(path, Msg("later", "a", "user", "y") + "\n");
  auto r = s->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->reloaded);
  EXPECT_EQ(s->Parent(1), std::optional<size_t>(2));
  ExpectSameIndex(*s, *MustOpen(path));

  // A repeated id: the later entry wins for everything that names it.
  AppendRaw(path, Msg("a", "", "user", "again") + "\n");
  r = s->Refresh();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->reloaded);
  ExpectSameIndex(*s, *MustOpen(path));
  EXPECT_EQ(s->Find("a"), std::optional<size_t>(3));
}

TEST(SessionRefresh, StrictModeRefusesABadNewLineAndKeepsTheSession) {
  TempDir tmp;
  const std::string path =
      tmp.Write("s.jsonl", std::string(kHeader) + "\n" + Msg("a", "", "user", "hi") + "\n");
  LoadOptions o;
  o.strict = true;
  auto s = MustOpen(path, o);
  ASSERT_NE(s, nullptr);
  AppendRaw(path, "{not json}\n" + Msg("b", "a", "user", "x") + "\n");
  auto r = s->Refresh();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find(":3:"), std::string::npos) << r.status().message();
  EXPECT_EQ(s->size(), 1u);
}

TEST(SessionRefresh, MeasuresNewMessagesLikeOpen) {
  TempDir tmp;
  const std::string path =
      tmp.Write("s.jsonl", std::string(kHeader) + "\n" + Msg("a", "", "user", "hi") + "\n");
  LoadOptions o;
  o.message_observer = TokenEstimateObserver();
  auto s = MustOpen(path, o);
  ASSERT_NE(s, nullptr);
  AppendRaw(path, Msg("b", "a", "assistant", "a longer answer with more words") + "\n");
  ASSERT_TRUE(s->Refresh().ok());
  auto fresh = MustOpen(path, o);
  ExpectSameIndex(*s, *fresh);
  EXPECT_GT(s->entry(1).estimate, 0);
}

TEST(SessionRefresh, SessionsFromMemoryCannotRefresh) {
  auto s = Session::FromString(std::string(kHeader) + "\n", "mem");
  ASSERT_TRUE(s.ok());
  auto r = (*s)->Refresh();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
}

TEST(ContextCache, ExtendsTheLeafAndKeepsSnapshotsIntact) {
  TempDir tmp;
  const std::string path =
      tmp.Write("s.jsonl", std::string(kHeader) + "\n" + Msg("a", "", "user", "hi") + "\n");
  auto s = MustOpen(path);
  ASSERT_NE(s, nullptr);
  ContextCache cache;
  auto first = cache.Get(*s);
  ASSERT_TRUE(first.ok());
  const std::string first_json = ContextToJson(**first);
  ASSERT_TRUE(AppendToSession(s.get(), {Msg("b", "a", "assistant", "yo")}).ok());
  auto second = cache.Get(*s);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(cache.extended(), 1u);
  EXPECT_EQ(cache.rebuilt(), 1u);
  EXPECT_EQ(ContextToJson(**first), first_json) << "a held snapshot never changes";
  EXPECT_EQ((*second)->messages.size(), 2u);
  first->reset();
  second->reset();
  ASSERT_TRUE(AppendToSession(s.get(), {Msg("c", "b", "user", "go")}).ok());
  ExpectContextMatches(cache, *s, path, std::nullopt, nullptr);
  EXPECT_EQ(cache.extended(), 2u);
  // An older leaf and an unknown one: built in full.
  ExpectContextMatches(cache, *s, path, std::string("a"), nullptr);
  EXPECT_EQ(cache.rebuilt(), 2u);
  auto unknown = cache.Get(*s, std::string("nope"));
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
}

// Random appends (children of the leaf, branches, compactions, labels,
// model and thinking changes, summaries, torn writes, repeated ids, writes by
// another writer) with the context of the leaf, and now and then of another
// entry, compared with a fresh load at every step.
class RefreshProperty : public ::testing::TestWithParam<int> {};

TEST_P(RefreshProperty, MatchesAFreshLoadAtEveryStep) {
  const uint32_t seed = static_cast<uint32_t>(GetParam());
  std::mt19937 rng(seed);
  auto chance = [&rng](int percent) { return static_cast<int>(rng() % 100) < percent; };
  TempDir tmp;
  const std::string path = tmp.Write("s.jsonl", std::string(kHeader) + "\n");
  auto s = MustOpen(path);
  ASSERT_NE(s, nullptr);
  const CompactionExpander* expander = seed % 2 == 0 ? StrategyExpander() : nullptr;
  ContextOptions cache_options;
  cache_options.expander = expander;
  ContextCache cache(cache_options);
  std::vector<std::string> ids;
  std::string leaf;
  std::optional<std::string> torn;  // the rest of a line written in part
  int next = 0;
  for (int step = 0; step < 160; ++step) {
    std::vector<std::string> lines;
    const int batch = chance(15) ? 3 : 1;
    for (int k = 0; k < batch; ++k) {
      std::string id = "e" + std::to_string(next++);
      if (chance(2) && !ids.empty()) id = ids[rng() % ids.size()];  // a repeated id
      std::string parent = leaf;
      if (chance(8) && !ids.empty()) parent = ids[rng() % ids.size()];  // a branch
      const int kind = static_cast<int>(rng() % 100);
      std::string line;
      if (kind < 45) {
        line = Msg(id, parent, chance(50) ? "user" : "assistant", "t" + std::to_string(step));
      } else if (kind < 55 && !ids.empty()) {
        CompactionEntryFields f;
        f.summary = "summary " + std::to_string(step);
        f.first_kept_entry_id = chance(80) ? ids[rng() % ids.size()] : "missing";
        f.tokens_before = 1000;
        f.extra = {{"method", chance(50) ? R"("summary")" : R"("user-prompts")"}};
        line = MakeCompactionEntry({id, parent, "2026-01-01T00:00:02.000Z"}, f);
      } else if (kind < 63 && !ids.empty()) {
        line = Base("label", id, parent) + R"(,"targetId":)" + Q(ids[rng() % ids.size()]) +
               (chance(70) ? R"(,"label":"L)" + std::to_string(step) + "\"" : "") + "}";
      } else if (kind < 70) {
        line = Base("model_change", id, parent) + R"(,"provider":"x","modelId":"m)" +
               std::to_string(step) + "\"}";
      } else if (kind < 76) {
        line = Base("thinking_level_change", id, parent) +
               (chance(80) ? R"(,"thinkingLevel":"high")" : "") + "}";
      } else if (kind < 82) {
        BranchSummaryEntryFields f;
        f.from_id = parent.empty() ? "root" : parent;
        f.summary = chance(80) ? "branch " + std::to_string(step) : "";
        line = MakeBranchSummaryEntry({id, parent, "2026-01-01T00:00:03.000Z"}, f);
      } else if (kind < 88) {
        CustomMessageEntryFields f;
        f.custom_type = "note";
        f.content_json = Q("custom " + std::to_string(step));
        line = MakeCustomMessageEntry({id, parent, "2026-01-01T00:00:04.000Z"}, f);
      } else if (kind < 93) {
        line = Base("session_info", id, parent) + R"(,"name":"n)" + std::to_string(step) + "\"}";
      } else {
        line = Base("custom", id, parent) + R"(,"customType":"state","data":{"k":1}})";
      }
      ids.push_back(id);
      leaf = id;
      lines.push_back(std::move(line));
    }
    if (torn) {
      AppendRaw(path, *torn + "\n");  // the writer completes its line
      torn.reset();
    }
    if (chance(10)) {
      // Another writer is half-way through its last line.
      std::string all;
      for (const std::string& l : lines) all += l + "\n";
      const size_t cut = all.size() - 1 - rng() % (lines.back().size() / 2);
      AppendRaw(path, all.substr(0, cut));
      torn = all.substr(cut, all.size() - 1 - cut);
      auto r = s->Refresh();
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    } else if (chance(50)) {
      auto r = AppendToSession(s.get(), lines);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    } else {
      std::string all;
      for (const std::string& l : lines) all += l + "\n";
      AppendRaw(path, all);  // another writer; we refresh
      auto r = s->Refresh();
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
    auto fresh = MustOpen(path);
    ASSERT_NE(fresh, nullptr);
    ExpectSameIndex(*s, *fresh);
    std::optional<std::string> at;
    if (chance(10) && fresh->size() > 0) at = std::string(fresh->entry(rng() % fresh->size()).id);
    ExpectContextMatches(cache, *s, path, at, expander);
    if (::testing::Test::HasFailure()) FAIL() << "seed " << seed << ", step " << step;
  }
  EXPECT_GT(cache.extended(), 40u) << "the common case must take the incremental path";
  EXPECT_GT(cache.rebuilt(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RefreshProperty, ::testing::Range(1, 9));

// The pi 0.73.1 goldens of the v3 fixtures: the file appended entry by entry
// to a loaded session gives pi's context at each leaf the goldens record.
TEST(ContextCacheGolden, AppendedEntryByEntryMatchesPi) {
  std::set<std::string> checked;
  for (const char* golden : {"written.k2000.json", "written.before-compaction.k2000.json",
                             "compacted.k20000.json", "long.k20000.json"}) {
    const nlohmann::json want =
        nlohmann::json::parse(ReadFileOrDie(FixturePath(std::string("pi/expected/") + golden)));
    const std::string source = ReadFileOrDie(FixturePath(
        want.at("file").get<std::string>().substr(std::string("tests/fixtures/").size())));
    const std::string leaf = want.at("leafId").get<std::string>();
    TempDir tmp;
    const size_t header_end = source.find('\n') + 1;
    const std::string path = tmp.Write("s.jsonl", source.substr(0, header_end));
    auto s = MustOpen(path);
    ASSERT_NE(s, nullptr);
    ContextCache cache;
    bool seen = false;
    for (size_t pos = header_end; pos < source.size();) {
      const size_t end = source.find('\n', pos) + 1;
      AppendRaw(path, source.substr(pos, end - pos));
      pos = end;
      ASSERT_TRUE(s->Refresh().ok());
      auto ctx = cache.Get(*s);
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      if ((*ctx)->leaf_id != leaf) continue;
      seen = true;
      const nlohmann::json got = nlohmann::json::parse(ContextToJson(**ctx));
      EXPECT_EQ(got.at("messages"), want.at("contextMessages")) << golden;
      EXPECT_EQ(got.at("model"), want.at("model")) << golden;
      EXPECT_EQ(got.value("thinkingLevel", nlohmann::json()),
                want.value("thinkingLevel", nlohmann::json()))
          << golden;
    }
    EXPECT_TRUE(seen) << golden << ": leaf " << leaf << " never reached";
    EXPECT_GT(cache.extended(), 0u) << golden;
    checked.insert(golden);
  }
  EXPECT_EQ(checked.size(), 4u);
}

}  // namespace
}  // namespace compactor
