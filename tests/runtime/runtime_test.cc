// The runtime against the real engine and the offline summarizer, with its
// session files, clock and ids in a MemEnv.
#include "compactor/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "compactor/context.h"
#include "compactor/entries.h"
#include "compactor/session.h"
#include "compactor/strategy.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing::MemDir;

std::string Dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Provider usage reporting `total_tokens` (all of it input).
nlohmann::ordered_json UsageJson(double total_tokens) {
  return {{"input", total_tokens},
          {"output", 0},
          {"cacheRead", 0},
          {"cacheWrite", 0},
          {"totalTokens", total_tokens}};
}

std::string UserJson(const std::string& text) {
  return Dump({{"role", "user"}, {"content", text}, {"timestamp", 1}});
}

std::string AssistantJson(const std::string& stop, double total_tokens,
                          const std::string& text = "ok", const std::string& error = "",
                          const std::string& model = "m") {
  nlohmann::ordered_json j = {
      {"role", "assistant"},
      {"content", nlohmann::ordered_json::array({{{"type", "text"}, {"text", text}}})},
      {"api", "anthropic-messages"},
      {"provider", "p"},
      {"model", model},
      {"usage", UsageJson(total_tokens)},
      {"stopReason", stop}};
  if (!error.empty()) j["errorMessage"] = error;
  j["timestamp"] = 2;
  return Dump(j);
}

std::string ToolCallJson(const std::string& id, double total_tokens) {
  return Dump({{"role", "assistant"},
               {"content", nlohmann::ordered_json::array({{{"type", "toolCall"},
                                                           {"id", id},
                                                           {"name", "bash"},
                                                           {"arguments", {{"command", "ls"}}}}})},
               {"provider", "p"},
               {"model", "m"},
               {"usage", UsageJson(total_tokens)},
               {"stopReason", "toolUse"},
               {"timestamp", 2}});
}

std::string ToolResultJson(const std::string& id, const std::string& text) {
  return Dump({{"role", "toolResult"},
               {"toolCallId", id},
               {"toolName", "bash"},
               {"content", nlohmann::ordered_json::array({{{"type", "text"}, {"text", text}}})},
               {"isError", false},
               {"timestamp", 3}});
}

// `turns` user/tool/assistant turns with `chars` characters of tool output each;
// the final assistant reports `last_usage` tokens.
std::string MakeSession(int turns, int chars, double last_usage = 1000) {
  std::string text = MakeSessionHeader({"sess", "2026-01-01T00:00:00.000Z", "/w", ""}) + "\n";
  std::string parent;
  int n = 0;
  auto add = [&](const std::string& msg) {
    std::string id = "e" + std::to_string(++n);
    text += MakeMessageEntry({id, parent, "2026-01-01T00:00:01.000Z"}, msg) + "\n";
    parent = id;
  };
  for (int t = 0; t < turns; ++t) {
    std::string c = "c" + std::to_string(t);
    add(UserJson("please run step " + std::to_string(t)));
    add(ToolCallJson(c, 1000));
    add(ToolResultJson(c, std::string(static_cast<size_t>(chars), 'x')));
    add(AssistantJson("stop", t + 1 == turns ? last_usage : 1000, "done " + std::to_string(t)));
  }
  return text;
}

struct Fixture {
  MemDir dir;  // the clock starts at 2026-01-01T00:00:00.000Z
  std::vector<RuntimeEvent> events;
  int rebuilt = 0;
  std::string rebuilt_first_role;
  std::vector<std::string> delivered;

  // Window 64000, reserve 16384: the pi trigger fires above 47616 tokens.
  RuntimeOptions Options(const std::string& contents) {
    RuntimeOptions o;
    o.session_path = dir.Write("s.jsonl", contents);
    o.settings.keep_recent_tokens = 2000;
    o.model = {"p", "m", 64000};
    o.env = dir.env();
    o.on_event = [this](const RuntimeEvent& e) { events.push_back(e); };
    o.on_context_rebuilt = [this](const Session&, const SessionContext& c) {
      ++rebuilt;
      rebuilt_first_role = c.messages.empty() ? "" : std::string(RoleName(c.messages[0].role));
    };
    o.on_delivered = [this](const std::vector<std::string>& d) {
      delivered.insert(delivered.end(), d.begin(), d.end());
    };
    return o;
  }

  std::unique_ptr<Session> Load(const std::string& path) const {
    LoadOptions lo;
    lo.env = dir.env();
    auto s = Session::Open(path, lo);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }

  std::vector<RuntimeEvent> Ends() const {
    std::vector<RuntimeEvent> out;
    for (const auto& e : events)
      if (e.kind == RuntimeEvent::Kind::kCompactionEnd) out.push_back(e);
    return out;
  }
};

int CountType(const Session& s, EntryType type) {
  int n = 0;
  for (const Entry& e : s.entries()) n += e.type == type;
  return n;
}

std::unique_ptr<Runtime> OpenOrDie(RuntimeOptions o) {
  auto r = Runtime::Open(std::move(o));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

RuntimeAction Turn(Runtime& rt, const std::string& assistant) {
  EXPECT_TRUE(rt.BeginTurn().ok());
  auto a = rt.AfterTurn({assistant, 0});
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? *a : RuntimeAction{};
}

const std::string kOverflowError =
    "400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is "
    "too long: 213462 tokens > 200000 maximum\"}}";

TEST(Runtime, ThresholdCompactionAfterTurnReestimatesIgnoringStaleUsage) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(20, 2000)));
  RuntimeAction a = Turn(*rt, AssistantJson("stop", 50000, "all done"));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kNone);
  auto s = f.Load(rt->session_path());
  ASSERT_EQ(CountType(*s, EntryType::kCompaction), 1);
  // The response was persisted before the compaction, which is now the leaf.
  EXPECT_EQ(s->entry(*s->Leaf()).type, EntryType::kCompaction);
  EXPECT_EQ(rt->leaf_id(), s->entry(*s->Leaf()).id);

  auto ends = f.Ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].reason, CompactionReason::kThreshold);
  EXPECT_EQ(ends[0].action, "compact");
  EXPECT_EQ(ends[0].strategy, "summary");
  EXPECT_FALSE(ends[0].will_retry);
  EXPECT_DOUBLE_EQ(ends[0].tokens_before, 50000);
  // The kept messages still carry the 50000-token usage; the size after is the
  // estimate of the rebuilt context, far below it.
  auto now = rt->CurrentTokens();
  ASSERT_TRUE(now.ok());
  EXPECT_DOUBLE_EQ(ends[0].tokens_after, *now);
  EXPECT_LT(*now, 10000);
  EXPECT_GT(*now, 0);
  EXPECT_EQ(f.rebuilt, 1);
  EXPECT_EQ(f.rebuilt_first_role, "compactionSummary");

  // A small fresh response afterwards does not compact again.
  Turn(*rt, AssistantJson("stop", 3000));
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 1);
}

// The runtime keeps its session loaded: after its own writes (and the
// engine's compaction) it reads only the appended bytes into the same Session,
// and the context it hands out is what a fresh load builds.
TEST(Runtime, CurrentContextIsExtendedInPlaceAndMatchesAFreshBuild) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(20, 2000, 3000)));
  const Session* first = nullptr;
  {
    auto snap = rt->CurrentContext();
    ASSERT_TRUE(snap.ok()) << snap.status().ToString();
    first = snap->session.get();
  }
  for (int i = 0; i < 6; ++i) {
    // The fourth response crosses the threshold: a compaction is appended.
    Turn(*rt, AssistantJson("stop", i == 3 ? 50000 : 3000, "answer " + std::to_string(i)));
    ASSERT_TRUE(rt->AppendMessage(UserJson("next " + std::to_string(i))).ok());
    auto snap = rt->CurrentContext();
    ASSERT_TRUE(snap.ok()) << snap.status().ToString();
    EXPECT_EQ(snap->session.get(), first) << "extended in place, not read again";
    auto fresh = f.Load(rt->session_path());
    ContextOptions co;
    co.expander = StrategyExpander();
    auto want = BuildSessionContext(*fresh, co);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    EXPECT_EQ(ContextToJson(*snap->context), ContextToJson(*want)) << i;
    EXPECT_EQ(snap->context->leaf_id, rt->leaf_id());
    EXPECT_EQ(snap->session->size(), fresh->size());
  }
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 1);
  // A snapshot held across a write stays as it was; the runtime reads anew.
  auto held = rt->CurrentContext();
  ASSERT_TRUE(held.ok());
  const std::string before = ContextToJson(*held->context);
  ASSERT_TRUE(rt->AppendMessage(UserJson("one more")).ok());
  auto after = rt->CurrentContext();
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->session.get(), held->session.get());
  EXPECT_EQ(ContextToJson(*held->context), before);
  EXPECT_EQ(after->context->messages.size(), held->context->messages.size() + 1);
}

// The session an agent builds its request from: the runtime's own reading,
// shared until the runtime writes again.
TEST(Runtime, CurrentSessionIsReReadOnlyAfterWrites) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(3, 100)));
  auto first = rt->CurrentSession();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto again = rt->CurrentSession();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->get(), again->get());  // nothing written: the same reading
  const size_t before = (*first)->size();
  Turn(*rt, AssistantJson("stop", 3000, "a new answer"));
  auto after = rt->CurrentSession();
  ASSERT_TRUE(after.ok());
  EXPECT_NE(first->get(), after->get());
  EXPECT_EQ((*after)->size(), before + 1);
  EXPECT_EQ((*after)->entry(*(*after)->Leaf()).id, rt->leaf_id());
  EXPECT_EQ((*first)->size(), before);  // an earlier reading stays as it was
}

TEST(Runtime, BelowThresholdDoesNothing) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(20, 2000)));
  RuntimeAction a = Turn(*rt, AssistantJson("stop", 40000));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kNone);
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 0);
  EXPECT_TRUE(f.events.empty());
}

TEST(Runtime, OverflowDropsFailingAssistantCompactsAndRetries) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(20, 2000)));
  std::string before_leaf = rt->leaf_id();
  RuntimeAction a = Turn(*rt, AssistantJson("error", 0, "", kOverflowError));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kRetryTurn);
  std::string text = f.dir.Read(rt->session_path());
  EXPECT_EQ(text.find("prompt is too long"), std::string::npos) << "failing response persisted";
  auto s = f.Load(rt->session_path());
  ASSERT_EQ(CountType(*s, EntryType::kCompaction), 1);
  const Entry& c = s->entry(*s->Leaf());
  EXPECT_EQ(c.type, EntryType::kCompaction);
  EXPECT_EQ(c.parent_id, before_leaf);
  const std::string compaction_id(c.id);  // `c` dies with `s` below
  auto ends = f.Ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].reason, CompactionReason::kOverflow);
  EXPECT_TRUE(ends[0].will_retry);
  ASSERT_FALSE(f.events.empty());
  EXPECT_EQ(f.events[0].kind, RuntimeEvent::Kind::kCompactionStart);
  EXPECT_TRUE(f.events[0].will_retry);

  // The retry succeeds and is persisted after the compaction.
  a = Turn(*rt, AssistantJson("stop", 5000, "recovered"));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kNone);
  s = f.Load(rt->session_path());
  EXPECT_EQ(s->entry(*s->Leaf()).parent_id, compaction_id);
  EXPECT_EQ(s->entry(*s->Leaf()).role, Role::kAssistant);
}

TEST(Runtime, OverflowWithoutNewContentGivesUpInsteadOfRecompacting) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(20, 2000)));
  EXPECT_EQ(Turn(*rt, AssistantJson("error", 0, "", kOverflowError)).kind,
            RuntimeAction::Kind::kRetryTurn);
  RuntimeAction a = Turn(*rt, AssistantJson("error", 0, "", kOverflowError));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kGiveUp);
  EXPECT_NE(a.error.find("nothing was added"), std::string::npos) << a.error;
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 1);
}

TEST(Runtime, AtMostThreeOverflowCompactionsInARow) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(20, 2000)));
  for (int i = 0; i < 3; ++i) {
    RuntimeAction a = Turn(*rt, AssistantJson("error", 0, "", kOverflowError));
    ASSERT_EQ(a.kind, RuntimeAction::Kind::kRetryTurn) << i << " " << a.error;
    // New content between the retries (e.g. the user pasted a large file).
    ASSERT_TRUE(rt->AppendMessage(UserJson(std::string(12000, 'u'))).ok());
  }
  RuntimeAction a = Turn(*rt, AssistantJson("error", 0, "", kOverflowError));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kGiveUp);
  EXPECT_NE(a.error.find("after 3"), std::string::npos) << a.error;
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 3);

  // A good response resets the count: the next overflow compacts again.
  ASSERT_TRUE(rt->AppendMessage(UserJson(std::string(12000, 'v'))).ok());
  EXPECT_EQ(Turn(*rt, AssistantJson("stop", 1000)).kind, RuntimeAction::Kind::kNone);
  ASSERT_TRUE(rt->AppendMessage(UserJson(std::string(12000, 'w'))).ok());
  EXPECT_EQ(Turn(*rt, AssistantJson("error", 0, "", kOverflowError)).kind,
            RuntimeAction::Kind::kRetryTurn);
}

TEST(Runtime, OverflowRespectsDisabledCompaction) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.settings.enabled = false;
  auto rt = OpenOrDie(std::move(o));
  RuntimeAction a = Turn(*rt, AssistantJson("error", 0, "", kOverflowError));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kGiveUp);
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 0);
}

TEST(Runtime, LengthStopBelowThresholdRetriesWithoutCompacting) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(20, 2000)));
  size_t size_before = f.dir.Read(rt->session_path()).size();
  RuntimeAction a = Turn(*rt, AssistantJson("length", 20000, "half an ans"));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kRetryTurn);
  EXPECT_EQ(f.dir.Read(rt->session_path()).size(), size_before);
  EXPECT_TRUE(f.events.empty());
}

TEST(Runtime, LengthStopOverThresholdCompactsAndRetriesThenGivesUpAtTheCap) {
  Fixture f;
  // The session's own last usage puts the context over the threshold.
  auto rt = OpenOrDie(f.Options(MakeSession(20, 2000, 50000)));
  RuntimeAction a = Turn(*rt, AssistantJson("length", 50000, "half an ans"));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kRetryTurn);
  auto ends = f.Ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].reason, CompactionReason::kIncomplete);
  EXPECT_TRUE(ends[0].will_retry);
  EXPECT_EQ(f.dir.Read(rt->session_path()).find("half an ans"), std::string::npos);
  // Now below the threshold: plain retries, up to the cap; then the output is kept.
  EXPECT_EQ(Turn(*rt, AssistantJson("length", 9000, "half an ans")).kind,
            RuntimeAction::Kind::kRetryTurn);
  EXPECT_EQ(Turn(*rt, AssistantJson("length", 9000, "half an ans")).kind,
            RuntimeAction::Kind::kRetryTurn);
  a = Turn(*rt, AssistantJson("length", 9000, "half an ans"));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kGiveUp);
  EXPECT_NE(f.dir.Read(rt->session_path()).find("half an ans"), std::string::npos);
  EXPECT_EQ(f.Ends().size(), 1u);
}

TEST(Runtime, IdleCompactionAfterQuietTimeOncePerQuietPeriod) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.idle_after_ms = 60000;
  o.idle_min_tokens = 5000;
  auto rt = OpenOrDie(std::move(o));
  auto t = rt->Tick();  // not armed before a turn ended
  ASSERT_TRUE(t.ok());
  f.dir.env()->AdvanceMs(120000);
  ASSERT_TRUE(rt->Tick().ok());
  EXPECT_TRUE(f.events.empty());

  Turn(*rt, AssistantJson("stop", 12000));
  f.dir.env()->AdvanceMs(30000);
  ASSERT_TRUE(rt->Tick().ok());
  EXPECT_TRUE(f.events.empty());
  f.dir.env()->AdvanceMs(31000);
  auto a = rt->Tick();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, RuntimeAction::Kind::kNone);  // idle never auto-continues
  auto ends = f.Ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].reason, CompactionReason::kIdle);
  f.dir.env()->AdvanceMs(600000);
  ASSERT_TRUE(rt->Tick().ok());
  EXPECT_EQ(f.Ends().size(), 1u);
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 1);
}

TEST(Runtime, IdleSkipsSmallContexts) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.idle_after_ms = 1000;
  o.idle_min_tokens = 100000;
  auto rt = OpenOrDie(std::move(o));
  Turn(*rt, AssistantJson("stop", 12000));
  f.dir.env()->AdvanceMs(5000);
  ASSERT_TRUE(rt->Tick().ok());
  EXPECT_TRUE(f.events.empty());
}

// The offline summarizer plus a callback run during the summary (to act while
// the compaction is in progress) and a record of the instructions.
class HookedSummarizer : public Summarizer {
 public:
  std::string_view name() const override { return "hooked"; }
  Result<std::string> Summarize(const SummaryRequest& r) const override {
    // A split turn summarizes its prefix on a second thread: act once.
    if (r.kind != SummaryKind::kTurnPrefix) instructions = r.custom_instructions;
    if (during && !fired.exchange(true)) during();
    return offline->Summarize(r);
  }
  std::unique_ptr<Summarizer> offline = NewOfflineSummarizer();
  std::function<void()> during;
  mutable std::string instructions;
  mutable std::atomic<bool> fired{false};
};

TEST(Runtime, ManualCompactionDuringTurnIsDeferredUntilTheTurnCompletes) {
  Fixture f;
  HookedSummarizer sum;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.summarizer = &sum;
  auto rt = OpenOrDie(std::move(o));
  ASSERT_TRUE(rt->BeginTurn().ok());
  auto m = rt->RequestCompaction("focus on the build");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->deferred);
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 0);
  auto a = rt->AfterTurn({AssistantJson("stop", 5000, "answer"), 0});
  ASSERT_TRUE(a.ok());
  auto s = f.Load(rt->session_path());
  ASSERT_EQ(CountType(*s, EntryType::kCompaction), 1);
  // The turn's response came first, then the compaction.
  const Entry& c = s->entry(*s->Leaf());
  EXPECT_EQ(c.type, EntryType::kCompaction);
  EXPECT_EQ(s->entry(*s->Find(c.parent_id)).role, Role::kAssistant);
  auto ends = f.Ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].reason, CompactionReason::kManual);
  EXPECT_NE(sum.instructions.find("focus on the build"), std::string::npos);
}

TEST(Runtime, ManualCompactionWhenIdleRunsAtOnce) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(20, 2000)));
  auto m = rt->RequestCompaction();
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->deferred);
  EXPECT_TRUE(m->result.compacted);
  // Nothing new: a second manual compaction is skipped by the engine.
  auto again = rt->CompactNow();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->compacted);
  EXPECT_EQ(again->skipped_reason, "already compacted");
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 1);
}

TEST(Runtime, CompactNowDuringTurnFailsFast) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(20, 2000)));
  ASSERT_TRUE(rt->BeginTurn().ok());
  auto r = rt->CompactNow("x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("turn is running"), std::string::npos);
  EXPECT_TRUE(f.events.empty());
  EXPECT_TRUE(rt->in_turn());
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 0);
}

TEST(Runtime, CompactNowDuringTurnCanAbortTheTurn) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  int aborted = 0;
  o.abort_on_manual_during_turn = true;
  o.abort_turn = [&] { ++aborted; };
  auto rt = OpenOrDie(std::move(o));
  ASSERT_TRUE(rt->BeginTurn().ok());
  auto r = rt->CompactNow();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->compacted);
  EXPECT_EQ(aborted, 1);
  EXPECT_FALSE(rt->in_turn());
  // The aborted turn's response was built on the old context: discarded.
  auto a = rt->AfterTurn({AssistantJson("aborted", 0, "stale partial"), 0});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, RuntimeAction::Kind::kNone);
  EXPECT_EQ(f.dir.Read(rt->session_path()).find("stale partial"), std::string::npos);
}

TEST(Runtime, AbortOptionNeedsACallback) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(2, 10));
  o.abort_on_manual_during_turn = true;
  EXPECT_EQ(Runtime::Open(std::move(o)).status().code(), StatusCode::kInvalidArgument);
}

TEST(Runtime, MessagesQueuedDuringCompactionAreDeliveredAfterIt) {
  Fixture f;
  HookedSummarizer sum;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.summarizer = &sum;
  auto rt = OpenOrDie(std::move(o));
  Runtime* raw = rt.get();
  std::string appended_id = "unset";
  bool was_compacting = false;
  sum.during = [&] {
    was_compacting = raw->compacting();
    EXPECT_TRUE(raw->QueueUserMessage(UserJson("queued while compacting")).ok());
    auto id = raw->AppendMessage(UserJson("appended while compacting"));
    ASSERT_TRUE(id.ok());
    appended_id = *id;
    // A second compaction is refused, not raced.
    auto again = raw->CompactNow();
    EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(again.status().message().find("already in progress"), std::string::npos);
  };
  auto r = rt->CompactNow();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->compacted);
  EXPECT_TRUE(was_compacting);
  EXPECT_EQ(appended_id, "");  // held, written after the compaction
  auto s = f.Load(rt->session_path());
  // compaction -> queued -> appended, each the child of the previous entry.
  size_t leaf = *s->Leaf();
  const Entry& last = s->entry(leaf);
  const Entry& prev = s->entry(*s->Find(last.parent_id));
  const Entry& comp = s->entry(*s->Find(prev.parent_id));
  EXPECT_EQ(comp.type, EntryType::kCompaction);
  EXPECT_NE(std::string(s->MessageJson(*s->Find(prev.id))).find("queued while compacting"),
            std::string::npos);
  EXPECT_NE(std::string(s->MessageJson(leaf)).find("appended while compacting"), std::string::npos);
  ASSERT_EQ(f.delivered.size(), 1u);
  EXPECT_NE(f.delivered[0].find("queued while compacting"), std::string::npos);
}

TEST(Runtime, MessageQueuedFromAnotherThreadDuringCompactionIsNotLost) {
  Fixture f;
  HookedSummarizer sum;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.summarizer = &sum;
  auto rt = OpenOrDie(std::move(o));
  std::promise<void> queued;
  std::thread other;
  sum.during = [&] {
    other = std::thread([&] {
      EXPECT_TRUE(rt->QueueUserMessage(UserJson("from the UI thread")).ok());
      queued.set_value();
    });
    // The runtime's lock is not held while the summarizer runs.
    ASSERT_EQ(queued.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  };
  auto r = rt->CompactNow();
  other.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto s = f.Load(rt->session_path());
  const Entry& last = s->entry(*s->Leaf());
  EXPECT_NE(std::string(s->MessageJson(*s->Leaf())).find("from the UI thread"), std::string::npos);
  EXPECT_EQ(s->entry(*s->Find(last.parent_id)).type, EntryType::kCompaction);
  EXPECT_EQ(f.delivered.size(), 1u);
}

TEST(Runtime, QueuedUserMessageWaitsForPendingToolResults) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(2, 100)));
  ASSERT_TRUE(rt->BeginTurn().ok());
  ASSERT_TRUE(rt->QueueUserMessage(UserJson("by the way")).ok());
  auto a = rt->AfterTurn({ToolCallJson("t1", 2000), 0});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->delivered.empty());  // the tool call awaits its result
  ASSERT_TRUE(rt->AppendMessage(ToolResultJson("t1", "out")).ok());
  ASSERT_TRUE(rt->BeginTurn().ok());  // goes out with the next request
  ASSERT_EQ(f.delivered.size(), 1u);
  auto s = f.Load(rt->session_path());
  const Entry& last = s->entry(*s->Leaf());
  EXPECT_EQ(last.role, Role::kUser);
  EXPECT_EQ(s->entry(*s->Find(last.parent_id)).role, Role::kToolResult);
}

TEST(Runtime, QueuedDuringTurnIsDeliveredAfterItAndContinues) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(2, 100)));
  ASSERT_TRUE(rt->BeginTurn().ok());
  ASSERT_TRUE(rt->QueueUserMessage(UserJson("one more thing")).ok());
  EXPECT_TRUE(f.delivered.empty());
  auto a = rt->AfterTurn({AssistantJson("stop", 2000), 0});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, RuntimeAction::Kind::kContinue);
  ASSERT_EQ(a->delivered.size(), 1u);
  EXPECT_EQ(f.delivered.size(), 1u);
}

TEST(Runtime, PromotionInsteadOfCompactionOnOverflow) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.promotion_models = {{"p", "small", 32000}, {"p", "big", 1000000}};
  auto rt = OpenOrDie(std::move(o));
  RuntimeAction a = Turn(*rt, AssistantJson("error", 0, "", kOverflowError));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kSwitchModel);
  EXPECT_TRUE(a.retry);
  EXPECT_EQ(a.model.id, "big");
  EXPECT_EQ(rt->model().id, "big");
  auto s = f.Load(rt->session_path());
  EXPECT_EQ(CountType(*s, EntryType::kCompaction), 0);
  const Entry& leaf = s->entry(*s->Leaf());
  EXPECT_EQ(leaf.type, EntryType::kModelChange);
  EXPECT_EQ(leaf.model, "big");
  auto ends = f.Ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].action, "promote");
  EXPECT_EQ(ends[0].reason, CompactionReason::kOverflow);
  // Nothing larger left: the next overflow (of the big model) compacts.
  ASSERT_TRUE(rt->AppendMessage(UserJson("more")).ok());
  a = Turn(*rt, AssistantJson("error", 0, "", kOverflowError, "big"));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kRetryTurn) << a.error;
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 1);
}

TEST(Runtime, PromotionOnThresholdOnlyWhenEnabledAndAvailable) {
  for (int variant = 0; variant < 3; ++variant) {
    Fixture f;
    RuntimeOptions o = f.Options(MakeSession(20, 2000));
    o.promotion_models = {{"p", "big", 1000000}};
    o.promote_on_threshold = variant != 0;
    if (variant == 2) o.model_available = [](const ModelInfo&) { return false; };
    auto rt = OpenOrDie(std::move(o));
    RuntimeAction a = Turn(*rt, AssistantJson("stop", 50000));
    auto s = f.Load(rt->session_path());
    if (variant == 1) {
      EXPECT_EQ(a.kind, RuntimeAction::Kind::kSwitchModel);
      EXPECT_FALSE(a.retry);
      EXPECT_EQ(CountType(*s, EntryType::kCompaction), 0);
    } else {
      EXPECT_EQ(a.kind, RuntimeAction::Kind::kNone) << variant;
      EXPECT_EQ(CountType(*s, EntryType::kCompaction), 1) << variant;
    }
  }
}

TEST(Runtime, AutoContinueIsGated) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.auto_continue = true;
  auto rt = OpenOrDie(std::move(o));
  RuntimeAction a = Turn(*rt, AssistantJson("stop", 50000));
  ASSERT_EQ(a.kind, RuntimeAction::Kind::kContinue);
  EXPECT_NE(a.continue_prompt.find("compacted"), std::string::npos);
  auto s = f.Load(rt->session_path());
  EXPECT_EQ(s->entry(*s->Leaf()).role, Role::kUser);
  EXPECT_EQ(s->entry(*s->Find(s->entry(*s->Leaf()).parent_id)).type, EntryType::kCompaction);

  // Grow past the threshold again without a user message: no second continue.
  ASSERT_TRUE(rt->AppendMessage(ToolResultJson("zz", std::string(40000, 'y'))).ok());
  a = Turn(*rt, AssistantJson("stop", 50000));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kNone);
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 2);

  // A user message re-opens the gate.
  ASSERT_TRUE(rt->AppendMessage(UserJson(std::string(40000, 'q'))).ok());
  a = Turn(*rt, AssistantJson("stop", 50000));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kContinue);
}

TEST(Runtime, AutoContinueNotAfterToolUseNorWithoutOpenWorkNorWhenOff) {
  for (int variant = 0; variant < 3; ++variant) {
    Fixture f;
    RuntimeOptions o = f.Options(MakeSession(20, 2000));
    o.auto_continue = variant != 2;
    if (variant == 1) o.has_open_work = [] { return false; };
    auto rt = OpenOrDie(std::move(o));
    RuntimeAction a =
        Turn(*rt, variant == 0 ? ToolCallJson("t9", 50000) : AssistantJson("stop", 50000));
    EXPECT_EQ(a.kind, RuntimeAction::Kind::kNone) << variant;
    EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 1) << variant;
  }
}

TEST(Runtime, PruningFirstWhenEnabled) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(20, 8000));
  o.settings.pruning.enabled = true;
  o.settings.pruning.protect_tokens = 4000;
  o.settings.pruning.minimum_savings = 1000;
  auto rt = OpenOrDie(std::move(o));
  // 20 x 2000 tokens of tool output; pruning all but the newest ~4000 saves
  // about 32000, enough to get from 50000 below the 47616 threshold.
  RuntimeAction a = Turn(*rt, AssistantJson("stop", 50000));
  EXPECT_EQ(a.kind, RuntimeAction::Kind::kNone);
  auto ends = f.Ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].action, "prune");
  EXPECT_LT(ends[0].tokens_after, 47616);
  std::string text = f.dir.Read(rt->session_path());
  EXPECT_NE(text.find("[Output truncated"), std::string::npos);
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 0);
  EXPECT_EQ(f.rebuilt, 1);
}

TEST(Runtime, IneffectiveCompactionDoesNotLoop) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(40, 2000));
  // Threshold 8000; keeping 9500 tokens plus the summary stays above it.
  o.settings.keep_recent_tokens = 9500;
  o.model.context_window = 12000;
  o.settings.reserve_tokens = 4000;
  o.ineffective_regrowth_tokens = 5000;
  auto rt = OpenOrDie(std::move(o));
  Turn(*rt, AssistantJson("stop", 25000));
  ASSERT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 1);
  auto ends = f.Ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_GT(ends[0].tokens_after, 8000);
  // More steps with fresh usage over the threshold but little growth: no
  // compaction per step, one warning.
  for (int i = 0; i < 3; ++i) Turn(*rt, AssistantJson("stop", ends[0].tokens_after + 1000));
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 1);
  int warnings = 0;
  for (const auto& e : f.events) warnings += e.kind == RuntimeEvent::Kind::kWarning;
  EXPECT_EQ(warnings, 1);
  // Enough growth: compaction is tried again.
  ASSERT_TRUE(rt->AppendMessage(UserJson(std::string(24000, 'g'))).ok());
  Turn(*rt, AssistantJson("stop", ends[0].tokens_after + 7000));
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 2);
}

TEST(Runtime, ThresholdWithNothingToCompactIsNotRetriedEveryStep) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.settings.keep_recent_tokens = 60000;  // everything is kept: nothing to summarize
  auto rt = OpenOrDie(std::move(o));
  for (int i = 0; i < 3; ++i) Turn(*rt, AssistantJson("stop", 50000));
  auto ends = f.Ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_TRUE(ends[0].skipped);
  EXPECT_EQ(ends[0].skipped_reason, "nothing to summarize");
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 0);
}

TEST(Runtime, HandoffContinuesInTheNewSessionButOverflowSummarizes) {
  Fixture f;
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.settings.strategy = "handoff";
  auto rt = OpenOrDie(std::move(o));
  std::string old_path = rt->session_path();
  // Overflow never uses handoff: the summary strategy in the same file.
  EXPECT_EQ(Turn(*rt, AssistantJson("error", 0, "", kOverflowError)).kind,
            RuntimeAction::Kind::kRetryTurn);
  EXPECT_EQ(rt->session_path(), old_path);
  EXPECT_EQ(CountType(*f.Load(old_path), EntryType::kCompaction), 1);
  ASSERT_EQ(f.Ends().size(), 1u);
  EXPECT_EQ(f.Ends()[0].strategy, "summary");
  // A threshold compaction hands off to a new file, where the runtime goes on.
  ASSERT_TRUE(rt->AppendMessage(UserJson(std::string(12000, 'h'))).ok());
  Turn(*rt, AssistantJson("stop", 50000));
  ASSERT_EQ(f.Ends().size(), 2u);
  EXPECT_EQ(f.Ends()[1].action, "handoff") << f.Ends()[1].error << f.Ends()[1].skipped_reason;
  ASSERT_NE(rt->session_path(), old_path);
  auto id = rt->AppendMessage(UserJson("next"));
  ASSERT_TRUE(id.ok());
  auto s = f.Load(rt->session_path());
  EXPECT_EQ(s->entry(*s->Leaf()).id, *id);
  EXPECT_EQ(s->header().parent_session, old_path);
}

TEST(Runtime, AppendMessageWritesPiEntriesAndTracksTheLeaf) {
  Fixture f;
  auto rt = OpenOrDie(f.Options(MakeSession(1, 10)));
  std::string parent = rt->leaf_id();
  auto id = rt->AppendMessage(R"({ "role": "user", "content": "hi\nthere", "timestamp": 5 })");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(rt->leaf_id(), *id);
  auto s = f.Load(rt->session_path());
  const Entry& e = s->entry(*s->Leaf());
  EXPECT_EQ(e.id, *id);
  EXPECT_EQ(e.parent_id, parent);
  EXPECT_EQ(e.timestamp, "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(s->MessageJson(*s->Leaf()), R"({"role":"user","content":"hi\nthere","timestamp":5})");
  EXPECT_FALSE(rt->AppendMessage("{not json").ok());
  EXPECT_FALSE(rt->AfterTurn({AssistantJson("stop", 1), 0}).ok());  // no BeginTurn
}

TEST(Runtime, SettingsFileEditsApplyAtTheNextCheck) {
  Fixture f;
  std::string settings = f.dir.Write("settings.json", R"({"enabled": false})");
  SettingsSource source(settings, {}, f.dir.env());
  RuntimeOptions o = f.Options(MakeSession(20, 2000));
  o.settings_source = &source;
  auto rt = OpenOrDie(std::move(o));
  Turn(*rt, AssistantJson("stop", 50000));
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 0);
  f.dir.Write("settings.json", R"({"enabled": true, "keepRecentTokens": 2000, "x": 1})");
  Turn(*rt, AssistantJson("stop", 50000));
  EXPECT_EQ(CountType(*f.Load(rt->session_path()), EntryType::kCompaction), 1);
}

}  // namespace
}  // namespace compactor
