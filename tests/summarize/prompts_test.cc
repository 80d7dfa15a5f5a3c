// Prompt assembly for LLM summarizers, output caps, and the input bound.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "compactor/summarizer.h"
#include "support/test_messages.h"

namespace compactor {
namespace {

using summarize_test::Assistant;
using summarize_test::Text;
using summarize_test::User;

std::vector<Message> Small() {
  return {User("Fix the loop in src/app.ts."), Assistant({Text("Done: i < n.")})};
}

TEST(Prompts, HistoryPromptAssembledExactly) {
  std::vector<Message> msgs = Small();
  SummaryRequest req;
  req.messages = msgs;
  auto p = BuildSummaryPrompt(req);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->user_text, "<conversation>\n" + SerializeForSummary(msgs) + "\n</conversation>\n\n" +
                              std::string(SummaryInstructions(SummaryKind::kHistory)));
  EXPECT_EQ(p->system_prompt, SummarizationSystemPrompt());
  EXPECT_EQ(p->max_output_tokens, 13107);
  EXPECT_EQ(p->omitted_messages, 0u);
}

TEST(Prompts, PreviousSummaryMakesAnUpdateAndFocusIsAppended) {
  std::vector<Message> msgs = Small();
  SummaryRequest req;
  req.messages = msgs;
  req.previous_summary = "## Goal\nOld goal";
  req.custom_instructions = "the auth bug";
  EXPECT_EQ(EffectiveKind(req), SummaryKind::kUpdate);
  auto p = BuildSummaryPrompt(req);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->user_text, "<conversation>\n" + SerializeForSummary(msgs) +
                              "\n</conversation>\n\n<previous-summary>\n## Goal\nOld goal\n"
                              "</previous-summary>\n\n" +
                              std::string(SummaryInstructions(SummaryKind::kUpdate)) +
                              "\n\nAdditional focus: the auth bug");
}

TEST(Prompts, BranchReplaceInstructionsAndTurnPrefixIgnoresPrevious) {
  std::vector<Message> msgs = Small();
  SummaryRequest req;
  req.messages = msgs;
  req.kind = SummaryKind::kBranch;
  req.custom_instructions = "Only list the files.";
  req.replace_instructions = true;
  auto p = BuildSummaryPrompt(req);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->user_text, "<conversation>\n" + SerializeForSummary(msgs) +
                              "\n</conversation>\n\nOnly list the files.");
  EXPECT_EQ(p->max_output_tokens, 2048);

  req.kind = SummaryKind::kTurnPrefix;
  req.replace_instructions = false;
  req.previous_summary = "ignored";
  p = BuildSummaryPrompt(req);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->user_text.find("<previous-summary>"), std::string::npos);
  EXPECT_NE(p->user_text.find("Additional focus: Only list the files."), std::string::npos);
  EXPECT_EQ(p->max_output_tokens, 8192);
}

TEST(Prompts, DefaultOutputCaps) {
  EXPECT_EQ(DefaultMaxOutputTokens(SummaryKind::kHistory), 13107);
  EXPECT_EQ(DefaultMaxOutputTokens(SummaryKind::kUpdate), 13107);
  EXPECT_EQ(DefaultMaxOutputTokens(SummaryKind::kTurnPrefix), 8192);
  EXPECT_EQ(DefaultMaxOutputTokens(SummaryKind::kBranch), 2048);
  EXPECT_EQ(DefaultMaxOutputTokens(SummaryKind::kShort), 512);
  EXPECT_EQ(DefaultMaxOutputTokens(SummaryKind::kShort, 1000), 200);
  EXPECT_EQ(DefaultMaxOutputTokens(SummaryKind::kHistory, 1000), 800);
}

TEST(Prompts, InstructionsNameTheRequiredSections) {
  for (SummaryKind k : {SummaryKind::kHistory, SummaryKind::kUpdate}) {
    std::string_view t = SummaryInstructions(k);
    size_t last = 0;
    for (const char* h :
         {"## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress",
          "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context"}) {
      size_t p = t.find(h);
      ASSERT_NE(p, std::string_view::npos) << h;
      EXPECT_GE(p, last) << h;
      last = p;
    }
  }
  std::string_view branch = SummaryInstructions(SummaryKind::kBranch);
  EXPECT_EQ(branch.find("## Critical Context"), std::string_view::npos);
  EXPECT_NE(branch.find("## Next Steps"), std::string_view::npos);
  std::string_view prefix = SummaryInstructions(SummaryKind::kTurnPrefix);
  for (const char* h : {"## Original Request", "## Early Progress", "## Context for Suffix"}) {
    EXPECT_NE(prefix.find(h), std::string_view::npos) << h;
  }
  EXPECT_NE(SummaryInstructions(SummaryKind::kHandoff).find("### Pending"), std::string_view::npos);
}

// The instructions of the summaries that state status carry the rules the
// eval checks (docs/quality.md, "Status"): an error fixed only by a later
// success of the same command, a pipeline's exit code proving nothing, the
// current value only, no goal or constraint under Done, no step already done
// as a next step, decisions with their reason.
TEST(Prompts, StatusRulesAreInTheInstructionsThatStateStatus) {
  for (SummaryKind k : {SummaryKind::kHistory, SummaryKind::kUpdate, SummaryKind::kTurnPrefix}) {
    std::string_view t = SummaryInstructions(k);
    SCOPED_TRACE(std::string(SummaryKindName(k)));
    for (const char* rule :
         {"same command or test was run again later and succeeded", "`cmd | tail`",
          "give the current one", "never put them under Done", "not steps already carried out",
          "turned down as rejected", "appeared only in a command's output"}) {
      EXPECT_NE(t.find(rule), std::string_view::npos) << rule;
    }
  }
  EXPECT_EQ(SummaryInstructions(SummaryKind::kShort).find("`cmd | tail`"), std::string_view::npos);
}

TEST(Prompts, MergeSplitTurnExactly) {
  EXPECT_EQ(MergeSplitTurnSummaries("H", "P"), "H\n\n---\n\n**Turn Context (split turn):**\n\nP");
}

std::vector<Message> Many(int n, size_t size) {
  std::vector<Message> msgs;
  for (int i = 0; i < n; ++i) {
    msgs.push_back(User("message " + std::to_string(i) + " " + std::string(size, 'a' + i % 26)));
  }
  return msgs;
}

TEST(Prompts, InputBoundKeepsNewestAndFits) {
  std::vector<Message> msgs = Many(50, 4000);
  SummaryRequest req;
  req.messages = msgs;
  req.max_input_tokens = 8000;
  auto p = BuildSummaryPrompt(req);
  ASSERT_TRUE(p.ok());
  EXPECT_LE(EstimateTextTokens(p->system_prompt) + EstimateTextTokens(p->user_text), 8000);
  EXPECT_GT(p->omitted_messages, 0u);
  EXPECT_NE(p->user_text.find("message 49 "), std::string::npos);
  EXPECT_EQ(p->user_text.find("message 0 "), std::string::npos);
  EXPECT_NE(p->user_text.find("earlier messages omitted"), std::string::npos);

  // One part alone larger than the window is cut in the middle.
  std::vector<Message> huge = {User("head " + std::string(100000, 'x') + " tail")};
  req.messages = huge;
  req.max_input_tokens = 4000;
  p = BuildSummaryPrompt(req);
  ASSERT_TRUE(p.ok());
  EXPECT_LE(EstimateTextTokens(p->system_prompt) + EstimateTextTokens(p->user_text), 4000);
  EXPECT_NE(p->user_text.find("[User]: head"), std::string::npos);
  EXPECT_NE(p->user_text.find(" tail\n</conversation>"), std::string::npos);
  EXPECT_NE(p->user_text.find("characters omitted"), std::string::npos);

  // A window too small for the fixed parts is an error, not a silent overflow.
  // (The fixed parts, with the status rules, are about 700 tokens.)
  req.max_input_tokens = 900;
  p = BuildSummaryPrompt(req);
  ASSERT_TRUE(p.ok());
  EXPECT_LE(EstimateTextTokens(p->system_prompt) + EstimateTextTokens(p->user_text), 900);
  req.max_input_tokens = 500;
  EXPECT_EQ(BuildSummaryPrompt(req).status().code(), StatusCode::kFailedPrecondition);
}

// Records every call; answers with a summary naming the call number.
class RecordingSummarizer : public Summarizer {
 public:
  std::string_view name() const override { return "recording"; }
  Result<std::string> Summarize(const SummaryRequest& request) const override {
    auto prompt = BuildSummaryPrompt(request);
    if (!prompt.ok()) return prompt.status();
    std::lock_guard<std::mutex> lock(mu_);
    calls.push_back(
        {EffectiveKind(request), request.messages.size(),
         EstimateTextTokens(prompt->system_prompt) + EstimateTextTokens(prompt->user_text),
         prompt->omitted_messages, request.previous_summary, LaterMessageCount(request)});
    return "## Goal\nsummary " + std::to_string(calls.size());
  }
  struct Call {
    SummaryKind kind;
    size_t messages;
    int64_t prompt_tokens;
    size_t omitted;
    std::string previous;
    size_t later;
  };
  mutable std::vector<Call> calls;

 private:
  mutable std::mutex mu_;
};

TEST(Prompts, SummarizeInPassesChainsChunksWithinTheWindow) {
  std::vector<Message> msgs = Many(60, 4000);
  RecordingSummarizer rec;
  SummaryRequest req;
  req.messages = msgs;
  req.max_input_tokens = 20000;
  req.max_output_tokens = 1000;
  auto r = SummarizeInPasses(rec, req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_GE(rec.calls.size(), 3u);
  EXPECT_EQ(*r, "## Goal\nsummary " + std::to_string(rec.calls.size()));
  size_t covered = 0;
  for (size_t i = 0; i < rec.calls.size(); ++i) {
    const auto& c = rec.calls[i];
    EXPECT_EQ(c.kind, i == 0 ? SummaryKind::kHistory : SummaryKind::kUpdate) << i;
    EXPECT_LE(c.prompt_tokens, 20000) << i;
    EXPECT_EQ(c.omitted, 0u) << "a pass dropped messages";
    if (i > 0) {
      EXPECT_EQ(c.previous, "## Goal\nsummary " + std::to_string(i));
    }
    covered += c.messages;
  }
  EXPECT_EQ(covered, msgs.size());

  // Fits in one request: one call.
  RecordingSummarizer one;
  req.max_input_tokens = 200000;
  ASSERT_TRUE(SummarizeInPasses(one, req).ok());
  EXPECT_EQ(one.calls.size(), 1u);

  // Nothing to summarize: no call at all.
  RecordingSummarizer none;
  req.messages = {};
  EXPECT_EQ(SummarizeInPasses(none, req).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(none.calls.empty());
  // ... and with a previous summary, that summary stands (still no call).
  req.previous_summary = "## Goal\nearlier";
  auto kept = SummarizeInPasses(none, req);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, "## Goal\nearlier");
  EXPECT_TRUE(none.calls.empty());
}

// The messages after the summarized ones are not in any prompt; each pass
// gets, as later messages, the chunks after its own and the request's.
TEST(Prompts, LaterMessagesStayOutOfThePromptAndPassesGetTheRest) {
  std::vector<Message> msgs = Many(60, 4000);
  std::vector<Message> later = {User("Later: use port 9090."), Assistant({Text("ok")})};
  SummaryRequest req;
  req.messages = msgs;
  auto plain = BuildSummaryPrompt(req);
  req.later_messages = {later};
  auto with_later = BuildSummaryPrompt(req);
  ASSERT_TRUE(plain.ok() && with_later.ok());
  EXPECT_EQ(plain->user_text, with_later->user_text);
  EXPECT_EQ(with_later->user_text.find("9090"), std::string::npos);

  RecordingSummarizer rec;
  req.max_input_tokens = 20000;
  req.max_output_tokens = 1000;
  ASSERT_TRUE(SummarizeInPasses(rec, req).ok());
  ASSERT_GE(rec.calls.size(), 3u);
  size_t covered = 0;
  for (const auto& c : rec.calls) {
    covered += c.messages;
    EXPECT_EQ(c.later, msgs.size() - covered + later.size());
  }
}

TEST(Prompts, SummarizeInPassesWorksWithTheOfflineSummarizer) {
  std::vector<Message> msgs = Many(40, 3000);
  auto offline = NewOfflineSummarizer();
  SummaryRequest req;
  req.messages = msgs;
  req.max_input_tokens = 12000;
  req.max_output_tokens = 1500;
  auto r = SummarizeInPasses(*offline, req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->find("## Goal\nmessage 0"), std::string::npos) << *r;
}

}  // namespace
}  // namespace compactor
