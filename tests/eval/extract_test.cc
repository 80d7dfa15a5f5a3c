#include <gtest/gtest.h>

#include <map>

#include "compactor/context.h"
#include "compactor/eval.h"
#include "support/test_util.h"

namespace compactor {
namespace {

std::map<FactKind, int> Counts(const FactFile& f) {
  std::map<FactKind, int> c;
  for (const Fact& fact : f.facts) ++c[fact.kind];
  return c;
}

const Fact* FindText(const FactFile& f, FactKind kind, std::string_view text) {
  for (const Fact& fact : f.facts)
    if (fact.kind == kind && fact.text == text) return &fact;
  return nullptr;
}

std::string Line(const std::string& id, const std::string& parent, const std::string& message) {
  return "{\"type\":\"message\",\"id\":\"" + id +
         "\",\"parentId\":" + (parent.empty() ? "null" : "\"" + parent + "\"") +
         ",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":" + message + "}\n";
}

std::string Call(const std::string& id, const std::string& tool, const std::string& args) {
  return "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"" + id +
         "\",\"name\":\"" + tool + "\",\"arguments\":" + args +
         "}],\"stopReason\":\"toolUse\",\"timestamp\":1}";
}

std::string Result(const std::string& id, const std::string& tool, const std::string& text,
                   bool error) {
  return "{\"role\":\"toolResult\",\"toolCallId\":\"" + id + "\",\"toolName\":\"" + tool +
         "\",\"content\":[{\"type\":\"text\",\"text\":\"" + text +
         "\"}],\"isError\":" + (error ? "true" : "false") + ",\"timestamp\":2}";
}

TEST(ExtractTest, RulesOnASmallSession) {
  std::string jsonl =
      "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\","
      "\"cwd\":\"/w\"}\n";
  jsonl += Line(
      "u1", "",
      "{\"role\":\"user\",\"content\":\"Fix the flaky build. It fails on CI.\",\"timestamp\":0}");
  jsonl += Line("a1", "u1", Call("t1", "read", "{\"path\":\"/w/src/a.ts\"}"));
  jsonl += Line("r1", "a1", Result("t1", "read", "code", false));
  jsonl += Line("a2", "r1", Call("t2", "bash", "{\"command\":\"make test\"}"));
  jsonl += Line(
      "r2", "a2",
      Result("t2", "bash", "src/a.ts:3: error: bad thing\\n\\nCommand exited with code 2", true));
  jsonl +=
      Line("a3", "r2",
           Call("t3", "edit", "{\"path\":\"/w/src/a.ts\",\"oldText\":\"x\",\"newText\":\"y\"}"));
  jsonl += Line("r3", "a3", Result("t3", "edit", "ok", false));
  jsonl += Line("a4", "r3", Call("t4", "bash", "{\"command\":\"make test\"}"));
  jsonl += Line("r4", "a4", Result("t4", "bash", "all good", false));
  jsonl += Line("a5", "r4", Call("t5", "read", "{\"path\":\"/w/README.md\"}"));
  jsonl += Line("r5", "a5", Result("t5", "read", "ENOENT: no such file", true));
  jsonl += Line("a6", "r5", Call("t6", "bash", "{\"command\":\"make lint\"}"));
  jsonl += Line("r6", "a6", Result("t6", "bash", "Command exited with code 1", true));
  jsonl += Line("a7", "r6", Call("t7", "bash", "{\"command\":\"cd /w && git status --short\"}"));
  jsonl += Line("r7", "a7", Result("t7", "bash", " M src/a.ts", false));
  jsonl += Line("a8", "r7", Call("t8", "bash", "{\"command\":\"cd /w; grep -rn foo src | head\"}"));
  jsonl += Line("r8", "a8", Result("t8", "bash", "src/a.ts:1: foo", false));
  auto session = Session::FromString(jsonl, "x.jsonl");
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  FactFile f = ExtractProbeFacts(**session);
  // Read-only exploration commands are noise, not command facts.
  EXPECT_EQ(Counts(f)[FactKind::kCommand], 2);
  EXPECT_EQ(f.source, "extracted");

  const Fact* goal = FindText(f, FactKind::kGoal, "Fix the flaky build");
  ASSERT_NE(goal, nullptr);
  EXPECT_EQ(goal->entry_id, "u1");
  const Fact* modified = FindText(f, FactKind::kFileModified, "/w/src/a.ts");
  ASSERT_NE(modified, nullptr);
  EXPECT_EQ(modified->variants, std::vector<std::string>{"src/a.ts"});
  // Read and then modified: only a modified fact. README was read (the read failed).
  EXPECT_EQ(FindText(f, FactKind::kFileRead, "/w/src/a.ts"), nullptr);
  EXPECT_NE(FindText(f, FactKind::kFileRead, "/w/README.md"), nullptr);

  const Fact* test = FindText(f, FactKind::kCommand, "make test");
  ASSERT_NE(test, nullptr);
  EXPECT_EQ(test->exit_code, 0);  // the last run wins
  const Fact* lint = FindText(f, FactKind::kCommand, "make lint");
  ASSERT_NE(lint, nullptr);
  EXPECT_EQ(lint->exit_code, 1);

  const Fact* build_error = FindText(f, FactKind::kError, "src/a.ts:3: error: bad thing");
  ASSERT_NE(build_error, nullptr);
  EXPECT_EQ(build_error->fixed, true);  // the same command succeeded later
  const Fact* missing = FindText(f, FactKind::kError, "ENOENT: no such file");
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->fixed, false);
  // "Command exited with code 1" alone carries nothing beyond the command fact.
  EXPECT_EQ(Counts(f)[FactKind::kError], 2);

  // The uncompacted context holds every extracted fact.
  auto ctx = BuildSessionContext(**session);
  ASSERT_TRUE(ctx.ok());
  for (const FactOutcome& o : ScoreFacts(f.facts, RenderContext(ctx->messages)))
    EXPECT_TRUE(o.retained) << o.id;
}

TEST(ExtractTest, FixturesYieldPlausibleCounts) {
  struct Expect {
    const char* file;
    int min_modified, min_read, min_commands, min_errors;
  };
  for (const Expect& e :
       {Expect{"compacted.v3.jsonl", 10, 2, 30, 3}, Expect{"long.v3.jsonl", 20, 5, 30, 5}}) {
    auto session = Session::Open(testing::FixturePath(std::string("pi/") + e.file));
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    FactFile f = ExtractProbeFacts(**session);
    auto c = Counts(f);
    EXPECT_EQ(c[FactKind::kGoal], 1) << e.file;
    EXPECT_GE(c[FactKind::kFileModified], e.min_modified) << e.file;
    EXPECT_GE(c[FactKind::kFileRead], e.min_read) << e.file;
    EXPECT_GE(c[FactKind::kCommand], e.min_commands) << e.file;
    EXPECT_GE(c[FactKind::kError], e.min_errors) << e.file;
    EXPECT_EQ(c[FactKind::kDecision], 0);
    // Every extracted fact is found in the uncompacted context.
    auto ctx = BuildSessionContext(**session);
    ASSERT_TRUE(ctx.ok());
    int missing = 0;
    std::string first_missing;
    std::vector<FactOutcome> outcomes = ScoreFacts(f.facts, RenderContext(ctx->messages));
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (!outcomes[i].retained) {
        ++missing;
        if (first_missing.empty()) first_missing = f.facts[i].id + ": " + f.facts[i].text;
      }
    }
    EXPECT_EQ(missing, 0) << e.file << " first: " << first_missing;
  }
}

}  // namespace
}  // namespace compactor
