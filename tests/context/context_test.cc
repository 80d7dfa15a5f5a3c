#include "compactor/context.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compactor/estimate.h"

namespace compactor {
namespace {

constexpr char kHeader[] =
    R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})";

struct Builder {
  std::string text = std::string(kHeader) + "\n";
  std::string last;
  int n = 0;
  std::string Add(const std::string& type_and_fields, const std::string& parent) {
    std::string id = "e" + std::to_string(++n);
    std::string p = parent.empty() ? "null" : "\"" + parent + "\"";
    text += R"({"type":)" + type_and_fields + R"(,"id":")" + id + R"(","parentId":)" + p +
            R"(,"timestamp":"2026-01-01T00:00:0)" + std::to_string(n % 10) + R"(.000Z"})" + "\n";
    last = id;
    return id;
  }
  std::string User(const std::string& t, const std::string& parent) {
    return Add(R"("message","message":{"role":"user","content":")" + t + R"(","timestamp":1})",
               parent);
  }
  std::string Assistant(const std::string& t, const std::string& parent,
                        const std::string& model = "m1", const std::string& stop = "stop",
                        int total = 100) {
    return Add(
        R"("message","message":{"role":"assistant","content":[{"type":"text","text":")" + t +
            R"("}],"provider":"p","model":")" + model +
            R"(","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":)" +
            std::to_string(total) + R"(},"stopReason":")" + stop + R"(","timestamp":2})",
        parent);
  }
  std::unique_ptr<Session> Load() {
    auto r = Session::FromString(text, "mem");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::move(r).value();
  }
};

std::vector<std::string> Roles(const SessionContext& c) {
  std::vector<std::string> out;
  for (const auto& m : c.messages) out.emplace_back(RoleName(m.role));
  return out;
}

TEST(Context, EmptySessionHasNoMessages) {
  auto s = Session::FromString(std::string(kHeader) + "\n", "mem");
  ASSERT_TRUE(s.ok());
  auto c = BuildSessionContext(**s);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->leaf_id);
  EXPECT_TRUE(c->messages.empty());
  EXPECT_EQ(ContextToJson(*c),
            R"({"leafId":null,"messages":[],"thinkingLevel":"off","model":null})");
}

TEST(Context, FollowsActivePathAndTracksSettings) {
  Builder b;
  std::string u1 = b.User("hello", "");
  std::string t = b.Add(R"("thinking_level_change","thinkingLevel":"high")", u1);
  std::string a1 = b.Assistant("one", t, "m1");
  std::string mc = b.Add(R"("model_change","provider":"q","modelId":"m2")", a1);
  std::string u2 = b.User("second branch", a1);  // sibling of the model change
  std::string a2 = b.Assistant("two", u2, "m3");
  auto s = b.Load();
  auto c = BuildSessionContext(*s);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c->leaf_id, a2);
  EXPECT_EQ(Roles(*c), (std::vector<std::string>{"user", "assistant", "user", "assistant"}));
  EXPECT_EQ(c->thinking_level, "high");
  EXPECT_EQ(c->model->model_id, "m3");
  ContextOptions at_mc;
  at_mc.leaf_id = mc;
  auto c2 = BuildSessionContext(*s, at_mc);
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->model->provider, "q");
  EXPECT_EQ(c2->model->model_id, "m2");
  ContextOptions unknown;
  unknown.leaf_id = "nope";
  auto bad = BuildSessionContext(*s, unknown);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(Context, LatestCompactionOnPathWinsAndKeepsFromFirstKeptEntry) {
  Builder b;
  std::string u1 = b.User("u1", "");
  std::string a1 = b.Assistant("a1", u1);
  std::string u2 = b.User("u2", a1);
  std::string c1 = b.Add(
      R"("compaction","summary":"first","firstKeptEntryId":")" + a1 + R"(","tokensBefore":50)", u2);
  std::string a2 = b.Assistant("a2", c1);
  std::string c2 = b.Add(R"("compaction","summary":"second","firstKeptEntryId":")" + u2 +
                             R"(","tokensBefore":70,"details":{"readFiles":[]})",
                         a2);
  std::string bs = b.Add(R"("branch_summary","fromId":"x","summary":"went elsewhere")", c2);
  std::string empty_bs = b.Add(R"("branch_summary","fromId":"y","summary":"")", bs);
  std::string cm =
      b.Add(R"("custom_message","customType":"note","content":"hi","display":false)", empty_bs);
  b.Add(R"("custom","customType":"state","data":{"k":1})", cm);
  auto s = b.Load();
  auto c = BuildSessionContext(*s);
  ASSERT_TRUE(c.ok());
  // second summary, kept u2 (c1 inside the window yields nothing), a2, branch summary, custom
  // message
  EXPECT_EQ(Roles(*c), (std::vector<std::string>{"compactionSummary", "user", "assistant",
                                                 "branchSummary", "custom"}));
  auto first = nlohmann::json::parse(c->messages[0].json());
  EXPECT_EQ(first["summary"], "second");
  EXPECT_EQ(first["tokensBefore"], 70);
  auto custom = nlohmann::json::parse(c->messages[4].json());
  EXPECT_EQ(custom["customType"], "note");
  EXPECT_EQ(custom["display"], false);
  EXPECT_FALSE(custom.contains("details"));
  EXPECT_TRUE(custom["timestamp"].is_number());
  EXPECT_EQ(*c->compaction_path_index, 5u);
}

TEST(Context, FirstKeptEntryNotOnPathKeepsNothingBeforeTheCompaction) {
  Builder b;
  std::string u1 = b.User("u1", "");
  std::string c1 =
      b.Add(R"("compaction","summary":"s","firstKeptEntryId":"elsewhere","tokensBefore":1)", u1);
  b.User("after", c1);
  auto s = b.Load();
  auto c = BuildSessionContext(*s);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Roles(*c), (std::vector<std::string>{"compactionSummary", "user"}));
}

// The representation hook without any strategy: an expander that stands for
// a compaction with every earlier message, tool outputs shown as placeholders
// (what a masking strategy stored as a compaction entry could do).
class PlaceholderExpander : public CompactionExpander {
 public:
  bool Expand(const CompactionOnPath& c, std::vector<ContextMessage>* out) const override {
    ++calls;
    if (c.session.StringField(c.path[c.path_index], "method") != "placeholders") return false;
    for (size_t k = 0; k < c.path_index; ++k) {
      std::optional<ContextMessage> m = EntryMessage(c.session, c.path[k]);
      if (!m || m->role == Role::kCompactionSummary) continue;
      if (m->role == Role::kToolResult) {
        m->stored = {};
        m->owned = R"({"role":"toolResult","toolCallId":"t","toolName":"read",)"
                   R"("content":[{"type":"text","text":"[output elided]"}],"isError":false,)"
                   R"("timestamp":1})";
        m->origin = "placeholder";
      }
      out->push_back(std::move(*m));
    }
    return true;
  }
  mutable int calls = 0;
};

TEST(Context, AnExpanderRebuildsItsOwnCompactions) {
  Builder b;
  std::string u1 = b.User("u1", "");
  std::string r1 =
      b.Add(R"("message","message":{"role":"toolResult","toolCallId":"t","toolName":"read",)"
            R"("content":[{"type":"text","text":"a long output"}],"isError":false,"timestamp":1})",
            u1);
  std::string a1 = b.Assistant("a1", r1);
  std::string c1 = b.Add(R"("compaction","summary":"s","firstKeptEntryId":")" + a1 +
                             R"(","tokensBefore":9,"method":"placeholders")",
                         a1);
  std::string u2 = b.User("u2", c1);
  auto s = b.Load();
  PlaceholderExpander expander;
  ContextOptions o;
  o.expander = &expander;
  auto ours = BuildSessionContext(*s, o);
  ASSERT_TRUE(ours.ok());
  EXPECT_EQ(expander.calls, 1);
  EXPECT_EQ(Roles(*ours), (std::vector<std::string>{"user", "toolResult", "assistant", "user"}));
  EXPECT_EQ(ours->messages[1].origin, "placeholder");
  EXPECT_NE(std::string(ours->messages[1].json()).find("[output elided]"), std::string::npos);
  EXPECT_EQ(s->entry(ours->messages[3].entry_index).id, u2);  // entries after it as usual
  // Without the hook: pi's view (the summary, the kept assistant, u2).
  auto pi = BuildSessionContext(*s);
  ASSERT_TRUE(pi.ok());
  EXPECT_EQ(Roles(*pi), (std::vector<std::string>{"compactionSummary", "assistant", "user"}));
}

// An expander that declines after appending leaves pi's view, unchanged.
TEST(Context, ADeclinedExpansionLeavesPiView) {
  class Declining : public CompactionExpander {
   public:
    bool Expand(const CompactionOnPath& c, std::vector<ContextMessage>* out) const override {
      out->push_back(*EntryMessage(c.session, c.path[0]));
      return false;
    }
  } declining;
  Builder b;
  std::string u1 = b.User("u1", "");
  std::string a1 = b.Assistant("a1", u1);
  std::string c1 = b.Add(
      R"("compaction","summary":"s","firstKeptEntryId":")" + a1 + R"(","tokensBefore":9)", a1);
  b.User("u2", c1);
  auto s = b.Load();
  ContextOptions o;
  o.expander = &declining;
  auto ours = BuildSessionContext(*s, o);
  auto pi = BuildSessionContext(*s);
  ASSERT_TRUE(ours.ok() && pi.ok());
  EXPECT_EQ(ContextToJson(*ours), ContextToJson(*pi));
}

TEST(Estimate, FollowsPiPerRoleRules) {
  EXPECT_EQ(EstimateMessageTokens(R"({"role":"user","content":"abcde"})"), 2);
  EXPECT_EQ(
      EstimateMessageTokens(
          R"({"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image","data":"AAAA","mimeType":"image/png"}]})"),
      1);
  EXPECT_EQ(
      EstimateMessageTokens(
          R"({"role":"toolResult","content":[{"type":"text","text":"abcd"},{"type":"image","data":"AAAA","mimeType":"image/png"}]})"),
      1201);
  // 😀 is two UTF-16 units, é one.
  EXPECT_EQ(EstimateMessageTokens("{\"role\":\"user\",\"content\":\"\xF0\x9F\x98\x80\xC3\xA9\"}"),
            1);
  EXPECT_EQ(EstimateMessageTokens(
                "{\"role\":\"user\",\"content\":\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\xC3\xA9\"}"),
            2);
  // toolCall: name + JSON.stringify(arguments) ({"path":"a"} = 12 chars), thinking counted,
  // signature not.
  EXPECT_EQ(
      EstimateMessageTokens(
          R"({"role":"assistant","content":[{"type":"thinking","thinking":"abcd","thinkingSignature":"zzzzzzzz"},{"type":"toolCall","id":"t","name":"read","arguments":{ "path" : "a" }}]})"),
      (4 + 4 + 12 + 3) / 4);
  EXPECT_EQ(EstimateMessageTokens(
                R"({"role":"bashExecution","command":"ls","output":"a\nb","exitCode":0})"),
            2);
  EXPECT_EQ(EstimateMessageTokens(
                R"({"role":"compactionSummary","summary":"12345678","tokensBefore":1})"),
            2);
  EXPECT_EQ(EstimateMessageTokens(R"({"role":"developer","content":"ignored"})"), 0);
  EXPECT_EQ(EstimateMessageTokens("not json"), 0);
  // A lone surrogate (a string cut inside an emoji) counts one unit.
  EXPECT_EQ(EstimateMessageTokens(R"({"role":"user","content":"abc\ud83d"})"), 1);
  auto parsed = ParseMessage(
      R"({"role":"assistant","content":[{"type":"thinking","thinking":"abcd"},{"type":"toolCall","id":"t","name":"read","arguments":{ "path" : "a" }}]})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(EstimateMessageTokens(*parsed), 5);
}

TEST(Estimate, ContextUsesLastValidUsagePlusTrailing) {
  Builder b;
  std::string u1 = b.User("aaaaaaaa", "");
  std::string a1 = b.Assistant("bbbb", u1, "m", "stop", 500);
  std::string a2 = b.Assistant("cccc", a1, "m", "aborted", 900);
  b.User("dddddddddddd", a2);
  auto s = b.Load();
  auto c = BuildSessionContext(*s);
  ASSERT_TRUE(c.ok());
  ContextEstimate e = EstimateContextTokens(c->messages);
  EXPECT_EQ(e.heuristic_sum, 2 + 1 + 1 + 3);
  EXPECT_EQ(*e.last_usage_index, 1u);
  EXPECT_EQ(e.usage_tokens, 500);
  EXPECT_EQ(e.trailing_tokens, 1 + 3);
  EXPECT_EQ(e.tokens, 504);
  Usage u;
  u.input = 1, u.output = 2, u.cache_read = 3, u.cache_write = 4;
  EXPECT_EQ(CalculateContextTokens(u), 10);
  u.total_tokens = 7;
  EXPECT_EQ(CalculateContextTokens(u), 7);
}

}  // namespace
}  // namespace compactor
