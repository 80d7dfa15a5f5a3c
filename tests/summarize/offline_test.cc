// The offline summarizer on hand-built, realistic coding conversations with
// planted facts: each must survive, revised ones must not appear as current.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compactor/summarizer.h"
#include "support/sample_conversation.h"
#include "support/test_messages.h"

namespace compactor {
namespace {

using summarize_test::Assistant;
using summarize_test::Bash;
using summarize_test::Call;
using summarize_test::Convo;
using summarize_test::FirstHalf;
using summarize_test::SecondHalf;
using summarize_test::Text;
using summarize_test::Thinking;
using summarize_test::ToolResult;
using summarize_test::User;

std::string Summarize(const std::vector<Message>& messages, const std::string& previous = "") {
  auto s = NewOfflineSummarizer();
  SummaryRequest req;
  req.messages = messages;
  req.previous_summary = previous;
  auto r = s->Summarize(req);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

int64_t InputTokens(const std::vector<Message>& messages) {
  int64_t chars = 0;
  for (const Message& m : messages) {
    chars += static_cast<int64_t>(m.content_string.size());
    for (const ContentBlock& b : m.content) chars += b.text.size() + b.arguments_json.size();
  }
  return chars / 4;
}

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// The whole line holding `needle` ("" when absent).
std::string LineWith(const std::string& text, const std::string& needle) {
  size_t p = text.find(needle);
  if (p == std::string::npos) return "";
  size_t b = text.rfind('\n', p);
  b = b == std::string::npos ? 0 : b + 1;
  size_t e = text.find('\n', p);
  return text.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

// The text of one "## " section (up to the next "## ").
std::string Section(const std::string& text, const std::string& heading) {
  size_t p = text.find(heading + "\n");
  if (p == std::string::npos) return "";
  size_t e = text.find("\n## ", p + heading.size());
  return text.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

void ExpectPlantedFacts(const std::string& s) {
  SCOPED_TRACE(s);
  // Goal.
  EXPECT_TRUE(Has(Section(s, "## Goal"), "logstat"));
  EXPECT_TRUE(Has(Section(s, "## Goal"), "latency percentiles"));
  // Every constraint, the revised one in its latest form only.
  std::string constraints = Section(s, "## Constraints & Preferences");
  EXPECT_TRUE(Has(constraints, "It must not use any async runtime."));
  EXPECT_TRUE(Has(constraints, "Always keep the public API in src/lib.rs stable."));
  EXPECT_TRUE(Has(constraints, "Prefer clap v4 for argument parsing."));
  EXPECT_TRUE(Has(constraints, "Don't add dependencies beyond clap and serde without asking."));
  EXPECT_TRUE(Has(constraints, "use spaces instead of tabs in the report"));
  EXPECT_TRUE(Has(constraints, "must be valid JSON Lines"));
  EXPECT_FALSE(Has(s, "Use tabs for indentation")) << "superseded preference shown";
  // Every modified file; read-only files.
  for (const char* f : {"src/parser.rs", "src/main.rs", "src/report.rs", "src/json_out.rs"}) {
    EXPECT_TRUE(Has(Section(s, "## Progress"), std::string("`") + f + "`")) << f;
  }
  EXPECT_TRUE(Has(s, "`Cargo.toml`"));
  EXPECT_TRUE(Has(s, "`src/lib.rs`"));
  // Commands with outcomes.
  EXPECT_TRUE(Has(s, "`cargo build`"));
  EXPECT_TRUE(Has(s, "`cargo test`"));
  EXPECT_TRUE(Has(s, "14 passed; 0 failed"));
  EXPECT_TRUE(Has(s, "`cargo clippy -- -D warnings` fails (exit 101)"));
  // Errors and whether they were fixed.
  std::string critical = Section(s, "## Critical Context");
  EXPECT_TRUE(Has(LineWith(critical, "cannot find value `line_no` in this scope"), "-> resolved"));
  // An open failure is listed once, under Blocked, not again as an error line.
  EXPECT_TRUE(Has(LineWith(Section(s, "### Blocked"), "this `if` has identical blocks"),
                  "`cargo clippy -- -D warnings` fails (exit 101)"));
  EXPECT_FALSE(Has(critical, "this `if` has identical blocks"));
  EXPECT_TRUE(Has(LineWith(critical, "parses_quoted_referrer"), "-> resolved"));
  EXPECT_TRUE(Has(Section(s, "## Progress"), "identical blocks"));    // Blocked
  EXPECT_FALSE(Has(Section(s, "## Progress"), "cannot find value"));  // fixed: not blocked
  // Decisions with reasons; the revised one is gone.
  std::string decisions = Section(s, "## Key Decisions");
  EXPECT_TRUE(Has(decisions, "streaming line parser"));
  EXPECT_TRUE(Has(decisions, "because access logs can be several gigabytes"));
  EXPECT_TRUE(Has(decisions, "BTreeMap"));
  EXPECT_TRUE(Has(decisions, "because the report must be sorted by endpoint"));
  EXPECT_FALSE(Has(s, "use a HashMap for the endpoint buckets")) << "superseded decision shown";
  // The next step.
  std::string next = Section(s, "## Next Steps");
  EXPECT_TRUE(Has(next, "fix the clippy warning"));
  EXPECT_TRUE(Has(next, "integration test for --json in tests/cli.rs"));
}

TEST(OfflineSummarizer, KeepsPlantedFactsOfAWholeSession) {
  Convo c;
  FirstHalf(c);
  SecondHalf(c);
  std::string s = Summarize(c.messages);
  ExpectPlantedFacts(s);
  // The sections appear in the documented order.
  size_t last = 0;
  for (const char* h :
       {"## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress",
        "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context"}) {
    size_t p = s.find(h);
    ASSERT_NE(p, std::string::npos) << h;
    EXPECT_GT(p + 1, last) << h;
    last = p;
  }
  // >= 85% token reduction of the summarized part.
  int64_t in = InputTokens(c.messages);
  int64_t out = EstimateTextTokens(s);
  EXPECT_LE(out * 100, in * 15) << out << " summary tokens for " << in << " input tokens";
}

TEST(OfflineSummarizer, UpdateMergesPreviousSummaryAndAppliesRevisions) {
  Convo first;
  FirstHalf(first);
  std::string s1 = Summarize(first.messages);
  EXPECT_TRUE(Has(s1, "Use tabs for indentation"));  // current at that point
  EXPECT_TRUE(Has(s1, "12 passed; 2 failed"));
  EXPECT_TRUE(Has(LineWith(Section(s1, "### Blocked"), "parses_quoted_referrer"), "fails"));

  Convo second;
  SecondHalf(second);
  std::string s2 = Summarize(second.messages, s1);
  ExpectPlantedFacts(s2);
  // The test failure of the first half was fixed in the second.
  EXPECT_FALSE(Has(Section(s2, "## Progress"), "parses_quoted_referrer"));
}

TEST(OfflineSummarizer, ChainedUpdatesDoNotGrowWithoutBound) {
  std::string summary;
  std::vector<size_t> sizes;
  for (int round = 0; round < 6; ++round) {
    Convo c;
    FirstHalf(c);
    SecondHalf(c);
    summary = Summarize(c.messages, summary);
    sizes.push_back(summary.size());
  }
  // Repeated material is merged, not stacked.
  EXPECT_LT(sizes.back(), sizes.front() * 2) << sizes.front() << " -> " << sizes.back();
}

TEST(OfflineSummarizer, IsDeterministic) {
  Convo c;
  FirstHalf(c);
  SecondHalf(c);
  std::string a = Summarize(c.messages);
  std::string b = Summarize(c.messages);
  EXPECT_EQ(a, b);
  auto other = NewOfflineSummarizer();
  SummaryRequest req;
  req.messages = c.messages;
  EXPECT_EQ(*other->Summarize(req), a);
}

TEST(OfflineSummarizer, NeverSummarizesNothing) {
  auto s = NewOfflineSummarizer();
  SummaryRequest req;
  auto empty = s->Summarize(req);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kFailedPrecondition);

  // Messages that serialize to nothing count as nothing.
  Message excluded = Bash("secret", "x", 0);
  excluded.exclude_from_context = true;
  std::vector<Message> unreadable = {User(""), Assistant({}), excluded};
  req.messages = unreadable;
  auto r = s->Summarize(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);

  // Even with a previous summary, an update with no new messages is refused:
  // the caller reuses the previous summary instead of calling a summarizer.
  req.previous_summary = "## Goal\nx";
  EXPECT_EQ(s->Summarize(req).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(BuildSummaryPrompt(req).status().code(), StatusCode::kFailedPrecondition);
}

TEST(OfflineSummarizer, CancellationStopsIt) {
  Convo c;
  FirstHalf(c);
  auto s = NewOfflineSummarizer();
  SummaryRequest req;
  req.messages = c.messages;
  req.is_cancelled = [] { return true; };
  EXPECT_EQ(s->Summarize(req).status().code(), StatusCode::kCancelled);
}

TEST(OfflineSummarizer, UserShellCommandsAndPendingQuestion) {
  std::vector<Message> msgs = {
      User("Please make the integration tests pass."),
      Bash("make test", "FAILED tests/test_api.py::test_login - KeyError: 'token'\n", 2),
      Assistant({Text("The login handler does not return a token.")}),
      User("Why does the staging deploy use port 8080? It should use port 9090."),
  };
  std::string s = Summarize(msgs);
  SCOPED_TRACE(s);
  EXPECT_TRUE(Has(s, "`make test` fails (exit 2)"));
  EXPECT_TRUE(Has(s, "KeyError: 'token'"));
  EXPECT_TRUE(Has(Section(s, "## Next Steps"), "Answer the user's latest message"));
  EXPECT_TRUE(Has(Section(s, "## Next Steps"), "port 9090"));
  EXPECT_TRUE(Has(Section(s, "## Constraints & Preferences"), "It should use port 9090."));
}

TEST(OfflineSummarizer, RestatedValueReplacesTheOldOne) {
  std::vector<Message> msgs = {
      User("Set up the dev server. The API server must listen on port 8080 in development."),
      Assistant({Text("Configured.")}),
      User("Change of plan: the API server must listen on port 9090 in development."),
      Assistant({Text("Updated the port.")}),
  };
  std::string s = Summarize(msgs);
  SCOPED_TRACE(s);
  EXPECT_TRUE(Has(s, "port 9090"));
  EXPECT_FALSE(Has(s, "port 8080"));
}

TEST(OfflineSummarizer, KindsUseTheirOwnSections) {
  Convo c;
  FirstHalf(c);
  SecondHalf(c);
  auto s = NewOfflineSummarizer();
  SummaryRequest req;
  req.messages = c.messages;

  req.kind = SummaryKind::kTurnPrefix;
  std::string prefix = *s->Summarize(req);
  EXPECT_TRUE(Has(prefix, "## Original Request"));
  EXPECT_TRUE(Has(prefix, "## Early Progress"));
  EXPECT_TRUE(Has(prefix, "## Context for Suffix"));
  EXPECT_FALSE(Has(prefix, "## Goal"));

  req.kind = SummaryKind::kBranch;
  std::string branch = *s->Summarize(req);
  EXPECT_TRUE(Has(branch, "## Goal"));
  EXPECT_TRUE(Has(branch, "## Next Steps"));
  EXPECT_FALSE(Has(branch, "## Critical Context"));

  req.kind = SummaryKind::kHandoff;
  std::string handoff = *s->Summarize(req);
  EXPECT_TRUE(Has(handoff, "### Pending"));
  EXPECT_TRUE(Has(handoff, "## Critical Context"));

  req.kind = SummaryKind::kShort;
  std::string short_summary = *s->Summarize(req);
  EXPECT_EQ(short_summary.rfind("I changed ", 0), 0u) << short_summary;
  EXPECT_TRUE(Has(short_summary, "`src/parser.rs`"));
  EXPECT_TRUE(Has(short_summary, "identical blocks"));
  EXPECT_LT(short_summary.size(), 1300u);
}

TEST(OfflineSummarizer, OutputRespectsMaxOutputTokens) {
  Convo c;
  for (int i = 0; i < 40; ++i) {
    FirstHalf(c);
    SecondHalf(c);
  }
  auto s = NewOfflineSummarizer();
  SummaryRequest req;
  req.messages = c.messages;
  req.max_output_tokens = 300;
  auto r = s->Summarize(req);
  ASSERT_TRUE(r.ok());
  EXPECT_LE(static_cast<int64_t>(r->size()), 300 * 4);
  EXPECT_TRUE(Has(*r, "## Goal"));
}

// The same session repeated to about 50 MB: the summary stays one summary
// (each item once, within its budget), not 29,000 messages' worth. Its speed
// is measured by bench/summarize_bench.cc, not here.
TEST(OfflineSummarizer, ALargeSummarizedPartStaysOneSummary) {
  Convo c = summarize_test::LargeConversation(50LL * 1024 * 1024);
  ASSERT_GT(c.messages.size(), 20000u);
  std::string out = Summarize(c.messages);
  EXPECT_LE(out.size(), 16u * 1024) << out;
  EXPECT_TRUE(Has(out, "logstat")) << out;
  EXPECT_EQ(Count(out, "must not use any async runtime"), 1) << out;
  EXPECT_TRUE(Has(out, "src/json_out.rs")) << out;
  EXPECT_EQ(Count(out, "src/json_out.rs:31:5"), 1) << out;
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

TEST(OfflineSummarizer, UpdateReadsAnLlmWrittenPreviousSummary) {
  const std::string previous =
      "# Context Checkpoint\n\n## Goal\nPort the parser to Rust.\n\n## User Preferences\n"
      "- Keep the old C parser building until the port is done\n\n## Layout\n```\nsrc/\n"
      "├── a.rs   # same\n├── b.rs   # same\n```\n\n## Next Steps\n1. Port the lexer\n\n"
      "<read-files>\nold/read.c\n</read-files>\n\n<modified-files>\nold/mod.c\n</modified-files>";
  std::vector<Message> msgs = {
      User("Now port the lexer as planned."),
      Assistant({Call("c1", "edit", R"({"path":"src/lexer.rs","oldText":"a","newText":"b"})")}),
      ToolResult("c1", "edit", "Successfully replaced text in src/lexer.rs."),
  };
  SummaryRequest req;
  req.messages = msgs;
  req.previous_summary = previous;
  auto s = NewOfflineSummarizer()->Summarize(req);
  ASSERT_TRUE(s.ok());
  SCOPED_TRACE(*s);
  EXPECT_TRUE(Has(Section(*s, "## Goal"), "Port the parser to Rust."));
  EXPECT_TRUE(Has(Section(*s, "## Constraints & Preferences"),
                  "Keep the old C parser building until the port is done"));
  // The fenced block survives whole (both "# same" lines), the title does not.
  EXPECT_TRUE(Has(*s, "```\nsrc/\n├── a.rs   # same\n├── b.rs   # same\n```"));
  EXPECT_FALSE(Has(*s, "Context Checkpoint"));
  // The old footer is not carried as text (the caller appends a fresh one).
  EXPECT_FALSE(Has(*s, "<read-files>"));
  EXPECT_TRUE(Has(Section(*s, "## Progress"), "`src/lexer.rs`"));
}

// An earlier summary whose entry kept no file lists names its modified files
// only in its footer: they stay listed.
TEST(OfflineSummarizer, AnEarlierSummarysFooterFilesStayModified) {
  SummaryRequest req;
  req.previous_summary =
      "## Goal\nRefactor the modes.\n\n## Progress\n### Done\n- [x] Moved the rpc mode\n\n"
      "<read-files>\nsrc/read-only.ts\n</read-files>\n\n<modified-files>\nsrc/rpc-mode.ts\n"
      "src/print-mode.ts\n</modified-files>";
  std::vector<Message> msgs = {
      User("Now the theme."),
      Assistant({Call("e1", "edit", R"({"path":"src/theme.ts","oldText":"a","newText":"b"})")}),
      ToolResult("e1", "edit", "Successfully replaced text in src/theme.ts."),
  };
  req.messages = msgs;
  auto s = NewOfflineSummarizer()->Summarize(req);
  ASSERT_TRUE(s.ok());
  const std::string line = LineWith(*s, "Files modified:");
  EXPECT_TRUE(Has(line, "`src/rpc-mode.ts`")) << *s;
  EXPECT_TRUE(Has(line, "`src/print-mode.ts`")) << *s;
  EXPECT_TRUE(Has(line, "`src/theme.ts`")) << *s;
  EXPECT_FALSE(Has(line, "read-only")) << *s;
  EXPECT_FALSE(Has(*s, "<modified-files>")) << "the caller appends the footer";
}

// Each item once: a correction that is both a constraint and the request under
// way is listed as the constraint; a turn prefix's request is its Original
// Request, not also a constraint and a "Continue with"; "Last assistant
// message" only when nothing follows the summarized part.
TEST(OfflineSummarizer, ACorrectionOrATurnPrefixRequestIsSaidOnce) {
  const std::string correction = "Actually, use spaces instead of tabs in the report, 4 of them.";
  std::vector<Message> msgs = {
      User("Write the report generator for logstat in src/report.rs please."),
      Assistant({Text("Writing it.")}),
      User(correction),
      Assistant({Call("e1", "edit", R"({"path":"src/report.rs","oldText":"\t","newText":" "})")}),
      ToolResult("e1", "edit", "Successfully replaced text in src/report.rs."),
  };
  std::string out = Summarize(msgs);
  SCOPED_TRACE(out);
  EXPECT_EQ(Count(out, "use spaces instead of tabs"), 1);
  EXPECT_TRUE(Has(out, "Last assistant message"));

  std::vector<Message> kept = {Assistant({Text("Done.")})};
  SummaryRequest req;
  req.messages = {msgs.begin() + 2, msgs.end()};
  req.kind = SummaryKind::kTurnPrefix;
  req.later_messages = {std::span<const Message>(kept)};
  auto prefix = NewOfflineSummarizer()->Summarize(req);
  ASSERT_TRUE(prefix.ok());
  SCOPED_TRACE(*prefix);
  EXPECT_EQ(Count(*prefix, "use spaces instead of tabs"), 1);
  EXPECT_FALSE(Has(*prefix, "Continue with"));
  EXPECT_FALSE(Has(*prefix, "Last assistant message"));
}

// A failed test run is reported by the test that failed, not by the runner's
// closing remark ("error: test failed, to rerun pass ..."), in the forms the
// common runners print.
TEST(OfflineSummarizer, AFailedTestRunNamesTheFailingTest) {
  struct Case {
    const char* command;
    const char* output;
    const char* unit;
  };
  const Case cases[] = {
      {"cargo test --test accept",
       "running 7 tests\n.....F.\nfailures:\n\n---- prefers_webp stdout ----\n"
       "thread 'prefers_webp' panicked at tests/accept.rs:41:5:\nassertion `left == right` failed\n"
       "\nfailures:\n    prefers_webp\n\ntest result: FAILED. 6 passed; 1 failed; 0 ignored\n"
       "error: test failed, to rerun pass `--test accept`",
       "prefers_webp"},
      {"go test ./internal/ship/...",
       "=== RUN   TestBackoffCap\n--- FAIL: TestBackoffCap (0.00s)\n"
       "    backoff_test.go:41: backoff 30s exceeds cap 10s\nFAIL\n"
       "FAIL\texample.com/ship/internal/ship\t0.012s\nFAIL",
       "TestBackoffCap"},
      {"pytest -q",
       "..F.\n=================================== FAILURES ===================================\n"
       "_________________________________ test_login __________________________________\n"
       "E   KeyError: 'token'\n=========================== short test summary info "
       "============================\nFAILED tests/test_api.py::test_login - KeyError: 'token'\n"
       "1 failed, 3 passed in 0.21s",
       "tests/test_api.py::test_login"},
      {"npx jest",
       "FAIL src/app.test.ts\n  \xe2\x97\x8f math \xe2\x80\xba adds two numbers\n\n"
       "    expect(received).toBe(expected)\n\nTests:       1 failed, 4 passed, 5 total",
       "adds two numbers"},
      {"npx vitest run",
       " RUN  v1.6.0 /app\n\n \xe2\x9d\xaf test/sum.test.ts (2 tests | 1 failed) 5ms\n"
       "   \xc3\x97 sum > adds negatives 3ms\n     \xe2\x86\x92 expected -1 to be 1\n\n"
       " FAIL  test/sum.test.ts > sum > adds negatives\nAssertionError: expected -1 to be 1\n\n"
       " Test Files  1 failed (1)\n      Tests  1 failed | 1 passed (2)",
       "sum > adds negatives"},
  };
  for (const Case& c : cases) {
    std::vector<Message> msgs = {User("Make the tests pass."), Bash(c.command, c.output, 1)};
    std::string out = Summarize(msgs);
    SCOPED_TRACE(out);
    const std::string blocked = LineWith(out, std::string("`") + c.command + "` fails");
    EXPECT_TRUE(Has(blocked, c.unit)) << c.command;
  }
}

// An earlier summary's "Check src/lexer.ts" is done once the file was read
// after it, in the summarized messages or in the later ones; a step that asks
// for more than reading, or a file not read, stays open.
TEST(OfflineSummarizer, AnEarlierInspectionStepDoneSinceIsFiledUnderDone) {
  const std::string previous =
      "## Goal\nFix the off-by-one.\n\n## Progress\n### In Progress\n- [ ] Check src/lexer.ts\n"
      "- [ ] Check that the parser handles tabs\n\n## Next Steps\n1. Review src/lexer.ts\n"
      "2. Review src/emit.ts\n";
  std::vector<Message> msgs = {
      Assistant({Text("Done with the tokenizer.")}),
  };
  std::vector<Message> later = {
      User("Also check src/lexer.ts: does it have the same bug?"),
      Assistant({Call("r1", "read", R"({"path":"src/lexer.ts"})")}),
      ToolResult("r1", "read", "1\tfor (let i = 0; i < n; i++) {}"),
      Assistant({Text("No, src/lexer.ts compares with < already.")}),
  };
  SummaryRequest req;
  req.messages = msgs;
  req.previous_summary = previous;
  req.later_messages = {std::span<const Message>(later)};
  auto s = NewOfflineSummarizer()->Summarize(req);
  ASSERT_TRUE(s.ok());
  SCOPED_TRACE(*s);
  std::string done = Section(*s, "### Done");
  done = done.substr(0, done.find("### In Progress"));
  EXPECT_TRUE(Has(done, "[x] Check src/lexer.ts (done since: read `src/lexer.ts`)"));
  EXPECT_TRUE(Has(done, "[x] Review src/lexer.ts (done since: read `src/lexer.ts`)"));
  EXPECT_FALSE(Has(Section(*s, "## Progress").substr(done.size()), "src/lexer.ts"));
  EXPECT_FALSE(Has(Section(*s, "## Next Steps"), "src/lexer.ts"));
  EXPECT_TRUE(Has(*s, "Check that the parser handles tabs"));
  EXPECT_FALSE(Has(done, "handles tabs"));
  EXPECT_TRUE(Has(Section(*s, "## Next Steps"), "Review src/emit.ts"));
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

TEST(OfflineSummarizer, InsteadOfAnActionRetiresNothing) {
  std::vector<Message> msgs = {
      User("Add streaming support. Don't modify the config file format."),
      Assistant({Text("I'll use a streaming reader instead of loading the whole file because "
                      "inputs can be huge.")}),
      User("Use the old npm scripts for the build."),
      Assistant({Text("Done.")}),
      User("Use pnpm rather than the old npm scripts from now on."),
  };
  std::string s = Summarize(msgs);
  SCOPED_TRACE(s);
  EXPECT_TRUE(
      Has(Section(s, "## Constraints & Preferences"), "Don't modify the config file format."));
  EXPECT_TRUE(Has(Section(s, "## Key Decisions"), "streaming reader"));
  EXPECT_FALSE(Has(s, "Use the old npm scripts for the build."));
  EXPECT_TRUE(Has(Section(s, "## Constraints & Preferences"), "Use pnpm rather than"));
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

using summarize_test::Assistant;
using summarize_test::Text;
using summarize_test::User;

std::string SummarizeWithLater(const std::vector<Message>& messages,
                               const std::vector<Message>& later, int64_t max_input_tokens = 0) {
  auto s = NewOfflineSummarizer();
  SummaryRequest req;
  req.messages = messages;
  req.later_messages = {later};
  req.max_input_tokens = max_input_tokens;
  if (max_input_tokens > 0) req.max_output_tokens = 1000;
  auto r = SummarizeInPasses(*s, req);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

// What the kept messages (or a split turn's prefix) revise is not current
// in the summary of what came before them, though they are not summarized.
TEST(OfflineSummarizer, LaterMessagesRetireWhatTheyRevise) {
  std::vector<Message> history = {
      User("Set up the dev server. The API server must listen on port 8080 in development."),
      Assistant({Text("Configured.")}),
  };
  std::vector<Message> later = {
      User("Change of plan: the API server must listen on port 9090 in development."),
      Assistant({Text("Updated the port.")}),
  };
  std::string without = SummarizeWithLater(history, {});
  EXPECT_TRUE(Has(without, "port 8080")) << without;
  std::string s = SummarizeWithLater(history, later);
  SCOPED_TRACE(s);
  EXPECT_FALSE(Has(s, "port 8080"));
  EXPECT_FALSE(Has(s, "port 9090"));  // the later messages are not summarized
}

TEST(OfflineSummarizer, ARuleTheLaterMessagesRestateStaysCurrent) {
  std::vector<Message> history = {
      User("Fix the parser. Never modify files under vendor/."),
      Assistant({Text("Understood.")}),
  };
  std::vector<Message> later = {
      User("Remember: never modify files under vendor/."),
      Assistant({Text("Yes.")}),
  };
  std::string s = SummarizeWithLater(history, later);
  EXPECT_TRUE(Has(s, "vendor/")) << s;
}

TEST(OfflineSummarizer, AnErrorALaterRunFixedIsNotOpen) {
  Convo history;
  history.UserSays("Make the tests pass.");
  history.Run("npm test", "FAIL src/app.test.ts\n  Expected 3, received 2", 1);
  Convo later;
  later.Run("npm test", "Tests: 12 passed, 12 total", 0);
  std::string before = SummarizeWithLater(history.messages, {});
  EXPECT_TRUE(Has(LineWith(before, "Expected 3"), "npm test")) << before;
  EXPECT_FALSE(Has(before, "resolved (later")) << before;
  std::string s = SummarizeWithLater(history.messages, later.messages);
  SCOPED_TRACE(s);
  EXPECT_FALSE(Has(s, "NOT resolved"));
  EXPECT_FALSE(Has(Section(s, "## Next Steps"), "npm test"));
  // A pipeline's exit code proves nothing, later as well.
  Convo piped;
  piped.Run("npm test | tail -5", "Tests: 12 passed, 12 total", 0);
  std::string p = SummarizeWithLater(history.messages, piped.messages);
  EXPECT_FALSE(Has(p, "resolved (later")) << p;
}

// Summarized in passes, an earlier chunk's value that a later chunk revises
// is not carried into the running summary as current.
TEST(OfflineSummarizer, PassesRetireWhatALaterChunkRevises) {
  std::vector<Message> history = {
      User("Set up the dev server. The API server must listen on port 8080 in development."),
      Assistant({Text("Configured.")}),
  };
  for (int i = 0; i < 40; ++i) {
    history.push_back(User("Step " + std::to_string(i) + ": tidy module " + std::to_string(i) +
                           " and keep its public names."));
    history.push_back(Assistant({Text(std::string(600, 'x'))}));
  }
  history.push_back(
      User("Change of plan: the API server must listen on port 9090 in development."));
  history.push_back(Assistant({Text("Updated the port.")}));
  std::string s = SummarizeWithLater(history, {}, 3000);
  SCOPED_TRACE(s);
  EXPECT_TRUE(Has(s, "port 9090"));
  EXPECT_FALSE(Has(s, "port 8080"));
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

// A message sent again and again (a retried prompt, an agent loop) is quoted
// once, with the turns it was sent in, not once per turn.
TEST(OfflineSummarizer, ARepeatedUserMessageIsQuotedOnce) {
  Convo c;
  c.UserSays("Port the CLI to the new config loader.");
  c.AssistantSays("Starting.");
  for (int i = 0; i < 30; ++i) {
    c.UserSays("Please check the build again and report what fails.");
    c.Run("make -j2", "ok", 0);
    c.AssistantSays("The build passes.");
    if (i == 10) {
      c.UserSays("Also look at the flaky network test.");
      c.AssistantSays("Looking.");
    }
  }
  c.UserSays("Now write the release notes.");
  c.AssistantSays("Writing them.");
  std::string s = Summarize(c.messages);
  SCOPED_TRACE(s);
  size_t quoted = 0;
  for (size_t p = s.find("check the build again"); p != std::string::npos;
       p = s.find("check the build again", p + 1)) {
    ++quoted;
  }
  EXPECT_EQ(quoted, 1u);
  EXPECT_TRUE(Has(LineWith(s, "check the build again"), "(30 times)"));
  EXPECT_TRUE(Has(s, "flaky network test"));
}

}  // namespace
}  // namespace compactor

namespace compactor {
namespace {

// A value stated inside the goal request is retired from the quoted goal
// when a later correction changes it.
TEST(OfflineSummarizer, AGoalsValueRevisedLaterIsNotQuotedAsCurrent) {
  std::vector<Message> history = {
      User("Goal for today: add a bulk CSV import endpoint to the inventory service so staff can "
           "upload stock counts at once. Insert rows in batches of 500.\n\nUse uv, not pip, to "
           "install or run anything."),
      Assistant({Text("Starting with the parser.")}),
  };
  std::vector<Message> later = {
      User("Correction: the DBA says batches of 500 lock the stock table too long; use batches "
           "of 100 instead."),
      Assistant({Text("Switching to 100.")}),
  };
  std::string s = SummarizeWithLater(history, later);
  SCOPED_TRACE(s);
  EXPECT_TRUE(Has(s, "bulk CSV import endpoint"));
  EXPECT_FALSE(Has(s, "batches of 500"));
  EXPECT_TRUE(Has(s, "Use uv, not pip"));
}

}  // namespace
}  // namespace compactor
