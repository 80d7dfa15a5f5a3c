#include "compactor/session.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <thread>

#include "compactor/context.h"
#include "compactor/estimate.h"
#include "compactor/file_ops.h"
#include "compactor/mem_env.h"
#include "compactor/writer.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing::ReadFileOrDie;
using testing::TempDir;

constexpr char kHeader[] =
    R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})";

std::string Msg(const std::string& id, const std::string& parent, const std::string& role,
                const std::string& text) {
  std::string p = parent.empty() ? "null" : "\"" + parent + "\"";
  return R"({"type":"message","id":")" + id + R"(","parentId":)" + p +
         R"(,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":")" + role +
         R"(","content":[{"type":"text","text":")" + text + R"("}],"timestamp":1}})";
}

std::unique_ptr<Session> MustLoad(const std::string& text, const LoadOptions& o = {}) {
  auto r = Session::FromString(text, "mem.jsonl", o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

// Every indexed field of every entry agrees between two loads of the same
// text (estimates too when both measured them).
void ExpectSameEntries(const Session& a, const Session& b, bool estimates) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Entry& x = a.entry(i);
    const Entry& y = b.entry(i);
    EXPECT_EQ(x.id, y.id) << i;
    EXPECT_EQ(x.parent_id, y.parent_id) << i;
    EXPECT_EQ(x.line, y.line) << i;
    EXPECT_EQ(x.type, y.type) << i;
    EXPECT_EQ(x.role_name, y.role_name) << i;
    EXPECT_EQ(x.role, y.role) << i;
    EXPECT_EQ(x.label, y.label) << i;
    EXPECT_EQ(x.provider, y.provider) << i;
    EXPECT_EQ(x.model, y.model) << i;
    EXPECT_EQ(x.stop_reason, y.stop_reason) << i;
    EXPECT_EQ(x.has_usage, y.has_usage) << i;
    EXPECT_EQ(x.usage.total_tokens, y.usage.total_tokens) << i;
    EXPECT_EQ(x.usage.cache_write, y.usage.cache_write) << i;
    if (estimates) {
      EXPECT_EQ(x.estimate, y.estimate) << i;
    }
    EXPECT_EQ(a.EntryJson(i), b.EntryJson(i)) << i;
    EXPECT_EQ(a.MessageJson(i), b.MessageJson(i)) << i;
  }
}

TEST(Session, IndexesEntriesAndLeaf) {
  auto s = MustLoad(std::string(kHeader) + "\n" + Msg("a", "", "user", "hi") + "\n" +
                    Msg("b", "a", "assistant", "yo") + "\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->header().id, "s1");
  EXPECT_EQ(s->header().version, 3);
  EXPECT_EQ(s->header().cwd, "/w");
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ(s->entry(1).role, Role::kAssistant);
  EXPECT_EQ(*s->Leaf(), 1u);
  EXPECT_EQ(s->PathTo(1), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(s->entry(0).line, 2u);
  EXPECT_FALSE(s->migrated());
}

TEST(Session, MissingFileIsNotFound) {
  auto r = Session::Open("/nonexistent/dir/x.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/dir/x.jsonl"), std::string::npos);
}

TEST(Session, DirectoryIsAnIoError) {
  TempDir d;
  auto r = Session::Open(d.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("directory"), std::string::npos);
}

TEST(Session, EmptyFileIsCorruption) {
  TempDir d;
  auto r = Session::Open(d.Write("e.jsonl", ""));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("e.jsonl:1: empty"), std::string::npos);
}

TEST(Session, NonSessionFirstLineIsRejectedNamingTheLine) {
  auto r = Session::FromString(Msg("a", "", "user", "x") + "\n", "f.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("f.jsonl:1: not a pi session"), std::string::npos);
}

TEST(Session, MalformedLineIsSkippedWithWarningOrRejectedWhenStrict) {
  std::string text = std::string(kHeader) + "\n" + Msg("a", "", "user", "x") + "\n{not json\n" +
                     Msg("b", "a", "user", "y") + "\n";
  auto s = MustLoad(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->size(), 2u);
  ASSERT_EQ(s->warnings().size(), 1u);
  EXPECT_EQ(s->warnings()[0].line, 3u);
  EXPECT_NE(s->warnings()[0].ToString().find("mem.jsonl:3: invalid JSON"), std::string::npos);
  LoadOptions strict;
  strict.strict = true;
  auto r = Session::FromString(text, "mem.jsonl", strict);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("mem.jsonl:3:"), std::string::npos);
}

TEST(Session, TornLastLineNeverPreventsLoadingEvenWhenStrict) {
  std::string text = std::string(kHeader) + "\n" + Msg("a", "", "user", "x") + "\n" +
                     R"({"type":"message","id":"b","parentId":"a","message":{"role":"assi)";
  LoadOptions strict;
  strict.strict = true;
  auto s = MustLoad(text, strict);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->size(), 1u);
  ASSERT_EQ(s->warnings().size(), 1u);
  EXPECT_NE(s->warnings()[0].message.find("torn"), std::string::npos);
}

TEST(Session, InvalidUtf8IsReplacedAsNodeDoes) {
  std::string text = std::string(kHeader) + "\n" + Msg("a", "", "user", "bad\xFF\xFEtext") + "\n";
  auto s = MustLoad(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->size(), 1u);
  EXPECT_NE(std::string(s->MessageJson(0)).find("bad\xEF\xBF\xBD\xEF\xBF\xBDtext"),
            std::string::npos);
  ASSERT_EQ(s->warnings().size(), 1u);
  EXPECT_NE(s->warnings()[0].message.find("UTF-8"), std::string::npos);
}

TEST(Session, DuplicateIdsWarnAndTheLaterWins) {
  std::string text = std::string(kHeader) + "\n" + Msg("a", "", "user", "1") + "\n" +
                     Msg("a", "", "user", "2") + "\n" + Msg("c", "a", "user", "3") + "\n";
  auto s = MustLoad(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s->Find("a"), 1u);
  EXPECT_EQ(s->PathTo(2), (std::vector<size_t>{1, 2}));
  ASSERT_FALSE(s->warnings().empty());
  EXPECT_NE(s->warnings()[0].message.find("duplicate entry id"), std::string::npos);
}

TEST(Session, ParentCycleIsReportedAndWalksTerminate) {
  std::string text = std::string(kHeader) + "\n" + Msg("a", "c", "user", "1") + "\n" +
                     Msg("b", "a", "user", "2") + "\n" + Msg("c", "b", "user", "3") + "\n";
  auto s = MustLoad(text);
  ASSERT_TRUE(s);
  bool cycle = false;
  for (const auto& w : s->warnings()) cycle |= w.message.find("cycle") != std::string::npos;
  EXPECT_TRUE(cycle);
  auto path = s->PathTo(2);
  EXPECT_EQ(path.size(), 3u);
  auto ctx = BuildSessionContext(*s);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(ctx->messages.size(), 3u);
}

TEST(Session, OrphanEndsTheWalkAndCountsAsRoot) {
  std::string text = std::string(kHeader) + "\n" + Msg("a", "", "user", "1") + "\n" +
                     Msg("b", "missing", "user", "2") + "\n" + Msg("c", "b", "user", "3") + "\n";
  auto s = MustLoad(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->PathTo(2), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(s->Roots(), (std::vector<size_t>{0, 1}));
}

TEST(Session, LabelsAndNameFollowFileOrder) {
  std::string text =
      std::string(kHeader) + "\n" + Msg("a", "", "user", "1") + "\n" +
      R"({"type":"label","id":"l1","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","targetId":"a","label":"first"})"
      "\n"
      R"({"type":"session_info","id":"n1","parentId":"l1","timestamp":"2026-01-01T00:00:02.000Z","name":"Name one"})"
      "\n"
      R"({"type":"label","id":"l2","parentId":"n1","timestamp":"2026-01-01T00:00:02.000Z","targetId":"a","label":"second"})"
      "\n";
  auto s = MustLoad(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->LabelOf("a").value_or(""), "second");
  EXPECT_EQ(s->Name().value_or(""), "Name one");
  auto cleared = MustLoad(
      text +
      R"({"type":"label","id":"l3","parentId":"l2","timestamp":"2026-01-01T00:00:02.000Z","targetId":"a"})"
      "\n" +
      R"({"type":"session_info","id":"n2","parentId":"l3","timestamp":"2026-01-01T00:00:02.000Z","name":""})"
      "\n");
  ASSERT_TRUE(cleared);
  EXPECT_FALSE(cleared->LabelOf("a"));
  EXPECT_FALSE(cleared->Name());
}

TEST(Session, UnknownEntryTypesAndFieldsArePreservedByteForByte) {
  std::string odd =
      R"({"type":"ttsr_injection","id":"x1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","injectedRules":["r1"],"n":1.50,"z":"\u00e9"})";
  auto s = MustLoad(std::string(kHeader) + "\n" + odd + "\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->entry(0).type, EntryType::kUnknown);
  EXPECT_EQ(s->EntryJson(0), odd);
  EXPECT_EQ(s->ToV3Jsonl(), std::string(kHeader) + "\n" + odd + "\n");
}

TEST(Session, MigratesV1InMemoryLikePi) {
  std::string v1 =
      R"({"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p","provider":"x"})"
      "\n"
      R"({"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}})"
      "\n"
      R"({"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"provider":"p","model":"m","stopReason":"stop","timestamp":2}})"
      "\n"
      R"({"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"S","firstKeptEntryIndex":2,"tokensBefore":10})"
      "\n"
      R"({"type":"message","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":"two","timestamp":3}})"
      "\n";
  auto s = MustLoad(v1);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->migrated());
  EXPECT_EQ(s->header().version, 1);
  ASSERT_EQ(s->size(), 4u);
  EXPECT_EQ(s->entry(0).parent_id, "");
  EXPECT_EQ(s->entry(1).parent_id, s->entry(0).id);
  EXPECT_EQ(s->entry(2).first_kept_entry_id, s->entry(1).id);  // index 2 counts the header as 0
  EXPECT_EQ(s->entry(0).id.size(), 8u);
  std::string c = s->EntryJson(2);
  EXPECT_EQ(
      c,
      R"({"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"S","tokensBefore":10,"id":")" +
          std::string(s->entry(2).id) + R"(","parentId":")" + std::string(s->entry(1).id) +
          R"(","firstKeptEntryId":")" + std::string(s->entry(1).id) + R"("})");
  EXPECT_EQ(
      s->HeaderJson(),
      R"({"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p","provider":"x","version":3})");
  // Deterministic: a second load assigns the same ids.
  auto again = MustLoad(v1);
  EXPECT_EQ(again->entry(3).id, s->entry(3).id);
  auto ctx = BuildSessionContext(*s);
  ASSERT_TRUE(ctx.ok());
  ASSERT_EQ(ctx->messages.size(), 3u);  // summary, kept assistant, later user
  EXPECT_EQ(ctx->messages[0].role, Role::kCompactionSummary);
}

// A header version beyond int (a timestamp written there) is current: no
// migration, the header kept as written.
TEST(Session, AVersionBeyondIntIsCurrent) {
  const std::string header =
      R"({"type":"session","version":1768900849452,"id":"big","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"})";
  auto s = MustLoad(header + "\n" + Msg("a", "", "user", "one") + "\n");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->migrated());
  EXPECT_EQ(s->header().version, INT_MAX);
  EXPECT_EQ(s->HeaderJson(), header);
  ASSERT_EQ(s->size(), 1u);
  EXPECT_EQ(s->entry(0).id, "a");
}

TEST(Session, MigratesV2HookMessageToCustom) {
  std::string v2 =
      R"({"type":"session","version":2,"id":"v2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"})"
      "\n"
      R"({"type":"message","id":"h1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"hookMessage","customType":"t","content":"c","display":true,"timestamp":1}})"
      "\n";
  auto s = MustLoad(v2);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->migrated());
  EXPECT_EQ(s->entry(0).role, Role::kCustom);
  EXPECT_EQ(std::string(s->MessageJson(0)),
            R"({"role":"custom","customType":"t","content":"c","display":true,"timestamp":1})");
  EXPECT_EQ(
      s->HeaderJson(),
      R"({"type":"session","version":3,"id":"v2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"})");
}

TEST(Session, HugeSingleLineLoads) {
  // A 200 MB single line: one tool result with a huge text.
  std::string big(200u << 20, 'x');
  std::string text = std::string(kHeader) + "\n" + Msg("a", "", "toolResult", big) + "\n" +
                     Msg("b", "a", "user", "after") + "\n";
  big.clear();
  big.shrink_to_fit();
  auto s = MustLoad(text);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->size(), 2u);
  const std::string prefix = R"({"role":"toolResult","content":[{"type":"text","text":")";
  const std::string suffix = R"("}],"timestamp":1})";
  EXPECT_EQ(s->MessageJson(0).size(), prefix.size() + (200u << 20) + suffix.size());
}

// Large files are indexed by several threads over ranges of lines; the
// result must be that of one pass: entries, line numbers, warnings in file
// order, the first error, estimates and views.
std::string MixedSession(int messages) {
  std::string text = std::string(kHeader) + "\n\n";
  std::string parent;
  for (int i = 0; i < messages; ++i) {
    std::string id = "m" + std::to_string(i);
    if (i % 7 == 3) text += "{not json\n";
    if (i % 11 == 5) text += "   \n";
    if (i % 13 == 6) text += std::string(kHeader) + "\n";  // a second header: warned
    if (i % 17 == 8) {
      text += R"({"type":"message","id":"u)" + std::to_string(i) +
              "\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"bad \xff\"}}\n";
    }
    if (i % 19 == 9)
      text += R"({"type":"label","id":"l)" + std::to_string(i) +
              R"(","parentId":null,"targetId":"m1","label":"k\u00e9y"})"
              "\n";
    text += Msg(id, parent, i % 2 ? "assistant" : "user", "text " + std::to_string(i)) + "\n";
    if (i % 23 == 10) text += Msg("m1", "", "user", "duplicate") + "\n";
    parent = id;
  }
  return text + R"({"type":"message","id":"torn")";  // a torn last line
}

void ExpectSameLoad(const std::string& text, int threads) {
  std::vector<LoadWarning> w1, wn;
  LoadOptions o1;
  o1.threads = 1;
  o1.message_observer = TokenEstimateObserver();
  o1.on_warning = [&](const LoadWarning& w) { w1.push_back(w); };
  LoadOptions on = o1;
  on.threads = threads;
  on.on_warning = [&](const LoadWarning& w) { wn.push_back(w); };
  auto a = MustLoad(text, o1);
  auto b = MustLoad(text, on);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->header().id, b->header().id);
  EXPECT_EQ(a->header().line, b->header().line);
  ExpectSameEntries(*a, *b, /*estimates=*/true);
  ASSERT_EQ(w1.size(), wn.size());
  for (size_t i = 0; i < w1.size(); ++i) EXPECT_EQ(w1[i].ToString(), wn[i].ToString());
  EXPECT_EQ(a->LabelOf("m1"), b->LabelOf("m1"));
  EXPECT_EQ(a->PathTo(*a->Leaf()), b->PathTo(*b->Leaf()));
}

TEST(Session, ThreadsGiveTheSameIndexAsOnePass) {
  const std::string text = MixedSession(400);
  for (int threads : {2, 3, 8}) {
    SCOPED_TRACE(threads);
    ExpectSameLoad(text, threads);
  }
  // Warnings really were produced in several ranges.
  std::vector<LoadWarning> w;
  LoadOptions o;
  o.threads = 2;
  o.on_warning = [&](const LoadWarning& x) { w.push_back(x); };
  MustLoad(text, o);
  EXPECT_GT(w.size(), 100u);
}

TEST(Session, ThreadsReportTheFirstErrorInFileOrder) {
  std::string text = MixedSession(300);
  LoadOptions strict;
  strict.strict = true;
  strict.threads = 1;
  auto one = Session::FromString(text, "mem.jsonl", strict);
  strict.threads = 2;
  auto two = Session::FromString(text, "mem.jsonl", strict);
  ASSERT_FALSE(one.ok());
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(one.status().ToString(), two.status().ToString());
  // A header after a long run of blank lines lies past the split.
  std::string late = std::string(4000, '\n') + kHeader + "\n" + Msg("a", "", "user", "x") + "\n";
  LoadOptions o;
  o.threads = 2;
  auto s = MustLoad(late, o);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->size(), 1u);
  EXPECT_EQ(s->entry(0).line, 4002u);
}

TEST(Writer, AppendsWholeLinesAndRepairsATornTail) {
  TempDir d;
  std::string p =
      d.Write("s.jsonl", std::string(kHeader) + "\n" + Msg("a", "", "user", "x") + "\n{\"torn");
  ASSERT_TRUE(AppendLines(p, {Msg("b", "a", "user", "y")}).ok());
  std::string after = ReadFileOrDie(p);
  EXPECT_NE(after.find("{\"torn\n" + Msg("b", "a", "user", "y") + "\n"), std::string::npos);
  auto s = Session::Open(p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->size(), 2u);
  EXPECT_EQ((*s)->entry(1).id, "b");
  EXPECT_FALSE(AppendLines(d.path() + "/missing.jsonl", {"{}"}).ok());
}

TEST(Writer, AtomicRewriteKeepsBackup) {
  TempDir d;
  std::string p = d.Write("f.jsonl", "old\n");
  chmod(p.c_str(), 0640);
  ASSERT_TRUE(WriteFileAtomic(p, "new\n").ok());
  EXPECT_EQ(ReadFileOrDie(p), "new\n");
  EXPECT_EQ(ReadFileOrDie(p + ".bak"), "old\n");
  struct stat st {};
  stat(p.c_str(), &st);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_FALSE(WriteFileAtomic(d.path() + "/no/such/dir/f", "x").ok());
}

TEST(Writer, NewIdsAreFreshHex) {
  auto s = MustLoad(std::string(kHeader) + "\n" + Msg("a", "", "user", "x") + "\n");
  std::vector<std::string> taken;
  for (int i = 0; i < 200; ++i) {
    std::string id = NewEntryId(*s, taken);
    ASSERT_EQ(id.size(), 8u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_FALSE(s->Find(id));
    EXPECT_EQ(std::find(taken.begin(), taken.end(), id), taken.end());
    taken.push_back(id);
  }
  std::string u = NewUuidV7();
  EXPECT_EQ(u.size(), 36u);
  EXPECT_EQ(u[14], '7');
  EXPECT_EQ(NowIsoTimestamp().size(), 24u);
}

// Measuring messages while indexing must not change what the index reads of
// them, including for messages the one-walk measure gives up on (decimal
// numbers in tool arguments, escaped keys) and "message" members of entries
// that are no messages.
TEST(Session, MeasuringWhileIndexingKeepsEveryField) {
  const std::string usage =
      R"("usage":{"input":10,"output":5,"cacheRead":1,"cacheWrite":2,"totalTokens":18})";
  const std::vector<std::string> messages = {
      R"({"role":"assistant","provider":"p1","model":"m1","content":[{"type":"text","text":"hi"}],)" +
          usage + R"(,"stopReason":"stop"})",
      R"({"provider":"p2","content":[{"type":"toolCall","id":"c","name":"edit","arguments":{"path":"a","x":1.5}}],"role":"assistant","model":"m2",)" +
          usage + R"(,"stopReason":"toolUse"})",
      R"({"role":"assistant","model":"m3","content":[{"type":"toolCall","id":"c","name":"x","arguments":{"p\u0061th":"a"}}],"stopReason":"toolUse"})",
      R"({"role":"user","content":"plain"})",
      R"({"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"ok"}],"role":"assistant","provider":"late"})",
  };
  std::string text = std::string(kHeader) + "\n";
  for (size_t i = 0; i < messages.size(); ++i) {
    text += R"({"type":"message","id":"m)" + std::to_string(i) +
            R"(","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":)" + messages[i] +
            "}\n";
  }
  // Duplicate "message" members (JSON.parse keeps the last) and a "message"
  // member on an entry that is no message.
  text +=
      R"({"type":"message","id":"d","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"first"},"message":{"role":"assistant","provider":"p9","content":[{"type":"text","text":"second one"}]}})"
      "\n";
  text +=
      R"({"type":"custom","id":"x","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"not a message entry"}})"
      "\n";
  LoadOptions measured;
  measured.message_observer = TokenEstimateObserver();
  for (int threads : {1, 2}) {
    measured.threads = threads;
    auto a = MustLoad(text);
    auto b = MustLoad(text, measured);
    ASSERT_TRUE(a && b);
    ExpectSameEntries(*a, *b, /*estimates=*/false);
    for (size_t i = 0; i < a->size(); ++i) {
      const Entry& y = b->entry(i);
      if (y.type == EntryType::kMessage) {
        // -1: left to the tolerant estimate when the message is read.
        if (y.estimate != -1) {
          EXPECT_EQ(y.estimate, EstimateMessageTokens(b->MessageJson(i))) << i;
        }
      } else {
        EXPECT_EQ(y.estimate, -1) << i;
        EXPECT_FALSE(b->ForEachFileCall(i, [](std::string_view, std::string_view) {})) << i;
      }
    }
    EXPECT_NE(b->entry(0).estimate, -1);
    EXPECT_NE(b->entry(3).estimate, -1);
    EXPECT_EQ(b->entry(1).provider, "p2");
    EXPECT_EQ(b->entry(1).model, "m2");
    EXPECT_EQ(b->entry(4).provider, "late");
    EXPECT_EQ(b->entry(4).role, Role::kAssistant);  // the last "role" wins
    EXPECT_EQ(b->entry(5).provider, "p9");
    EXPECT_EQ(b->entry(5).estimate,
              EstimateMessageTokens(
                  R"({"role":"assistant","content":[{"type":"text","text":"second one"}]})"));
  }
}

// The file tool calls the index pass records must be what a parse of the
// message finds; where only a full parse reads a message right (escapes,
// repeated keys) the session must say it has no record.
TEST(Session, FileCallsRecordedWhileIndexing) {
  struct Case {
    std::string content;  // the assistant message's content array
    bool known;
    std::vector<std::pair<std::string, std::string>> calls;
  };
  auto call = [](const std::string& name, const std::string& args) {
    return R"({"type":"toolCall","id":"c","name":")" + name + R"(","arguments":)" + args + "}";
  };
  const std::vector<Case> cases = {
      {"[" + call("read", R"({"path":"a.ts"})") + "," + call("edit", R"({"path":"b.ts","x":1})") +
           "," + call("write", R"({"content":"x","path":"c/d é.ts"})") + "]",
       true,
       {{"read", "a.ts"}, {"edit", "b.ts"}, {"write", "c/d é.ts"}}},
      {"[" + call("bash", R"({"path":"a.ts"})") + "]", true, {}},     // not a file tool
      {"[" + call("read", R"({"path":""})") + "]", true, {}},         // empty path
      {"[" + call("read", R"({"path":7})") + "]", true, {}},          // not a string
      {"[" + call("read", R"({"o":{"path":"x"}})") + "]", true, {}},  // nested, not the argument
      {"[" + call("read", R"(["path","x"])") + "]", true, {}},        // not an object
      {R"([{"type":"text","text":"read path"}])", true, {}},          // no tool call
      {"[" + call("read", R"({"path":"C:\\src\\a.ts"})") + "]", false, {}},  // escaped path
      {"[" + call("re\\u0061d", R"({"path":"a.ts"})") + "]", false, {}},     // escaped name
      {"[" + call("read", R"({"path":"a.ts","path":"b.ts"})") + "]", false, {}},
      {R"([{"type":"toolCall","name":"read","name":"edit","arguments":{"path":"a"}}])", false, {}},
      // The first "type" makes it a call for a parse that reads the first key.
      {R"([{"type":"toolCall","name":"read","arguments":{"path":"a"},"type":"text"}])", false, {}},
  };
  std::string text = std::string(kHeader) + "\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    text += R"({"type":"message","id":"m)" + std::to_string(i) + R"(","parentId":null,)" +
            R"("timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":)" +
            cases[i].content + R"(,"stopReason":"toolUse","timestamp":1}})" + "\n";
  }
  for (int threads : {1, 2}) {
    LoadOptions o;
    o.message_observer = TokenEstimateObserver();
    o.threads = threads;
    auto s = MustLoad(text, o);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      std::vector<std::pair<std::string, std::string>> got;
      FileOps recorded;
      bool known = s->ForEachFileCall(i, [&](std::string_view tool, std::string_view path) {
        got.emplace_back(tool, path);
        (tool == "read"    ? recorded.read
         : tool == "write" ? recorded.written
                           : recorded.edited)
            .insert(std::string(path));
      });
      EXPECT_EQ(known, cases[i].known) << cases[i].content;
      if (!known) continue;
      EXPECT_EQ(got, cases[i].calls) << cases[i].content;
      FileOps parsed;
      ExtractFileOpsFromJson(s->MessageJson(i), parsed);
      EXPECT_EQ(recorded.read, parsed.read) << cases[i].content;
      EXPECT_EQ(recorded.written, parsed.written) << cases[i].content;
      EXPECT_EQ(recorded.edited, parsed.edited) << cases[i].content;
    }
  }
  // Without the estimate nothing is recorded.
  auto plain = MustLoad(text);
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->ForEachFileCall(0, [](std::string_view, std::string_view) {}));
}

// A pipe (`compactor stats <(cat s.jsonl)`) is read into memory; a FIFO nobody
// writes to reads as empty instead of hanging the open.
TEST(SessionOpen, ReadsAPipeAndNeverHangsOnAFifo) {
  TempDir d;
  const std::string fifo = d.path() + "/pipe.jsonl";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string text = std::string(kHeader) + "\n" + Msg("a", "", "user", "x") + "\n";
  std::thread writer([&] {
    int fd = ::open(fifo.c_str(), O_WRONLY);  // waits for the reader
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  });
  // Until the writer is in its open(), the FIFO has no writer and reads as
  // empty; once it is, it stays a writer until it has written.
  auto s = Session::Open(fifo);
  for (int i = 0; i < 200 && !s.ok() && s.status().code() == StatusCode::kCorruption; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = Session::Open(fifo);
  }
  writer.join();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->size(), 1u);

  auto start = std::chrono::steady_clock::now();
  auto empty = Session::Open(fifo);  // no writer at all
  EXPECT_EQ(empty.status().code(), StatusCode::kCorruption);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// Loading through a MemEnv: the bytes and the indexing threads come from it.
TEST(SessionOpen, LoadsThroughTheEnv) {
  testing::MemDir d;
  std::string path =
      d.Write("s.jsonl", std::string(kHeader) + "\n" + Msg("a", "", "user", "x") + "\n");
  LoadOptions o;
  o.env = d.env();
  auto s = Session::Open(path, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->size(), 1u);
  EXPECT_EQ(d.env()->Counters().maps, 1);
  EXPECT_EQ(Session::Open(d.path() + "/none", o).status().code(), StatusCode::kNotFound);
  auto dir = Session::Open(d.path(), o);
  EXPECT_EQ(dir.status().code(), StatusCode::kIoError);
  EXPECT_NE(dir.status().message().find("is a directory, not a session file"), std::string::npos);
  // Two indexing threads, or one when the Env has none to give: the same index.
  std::string big = std::string(kHeader) + "\n";
  std::string parent;
  for (int i = 0; i < 2000; ++i) {
    std::string id = "m" + std::to_string(i);
    big += Msg(id, parent, "user", std::string(200, 'y')) + "\n";
    parent = id;
  }
  std::string bigpath = d.Write("big.jsonl", big);
  o.threads = 2;
  auto two = Session::Open(bigpath, o);
  d.env()->FailNth(MemEnvOp::kStartThread, 1);
  auto one = Session::Open(bigpath, o);
  ASSERT_TRUE(two.ok() && one.ok());
  EXPECT_EQ((*two)->size(), 2000u);
  EXPECT_EQ((*one)->ToV3Jsonl(), (*two)->ToV3Jsonl());
}

}  // namespace
}  // namespace compactor
