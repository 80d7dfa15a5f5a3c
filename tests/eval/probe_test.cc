#include <gtest/gtest.h>

#include "compactor/eval.h"

namespace compactor {
namespace {

// A judge that grades by whether the reference's first line occurs in the
// context: enough to check the plumbing, not a model.
class SubstringJudge : public ProbeJudge {
 public:
  std::string_view name() const override { return "substring"; }
  Result<double> Score(std::string_view context, const ProbeQuestion& q) const override {
    if (q.type == ProbeType::kContinuation) return Status::Unavailable("judge down");
    std::string first = q.expected.substr(2, q.expected.find('\n') - 2);
    first = first.substr(0, first.find(" ("));
    return NormalizeForMatch(context).find(NormalizeForMatch(first)) != std::string::npos ? 5.0
                                                                                          : 0.0;
  }
};

TEST(ProbeTest, QuestionsCoverEveryProbeTypeWithReferenceAnswers) {
  GeneratedSession g = GenerateEvalSession({1, 100000});
  std::vector<ProbeQuestion> qs = MakeProbeQuestions(g.facts);
  // The five Factory probes, then the status questions that apply (open vs
  // resolved errors, current vs revised values, done vs pending steps; this
  // corpus has no rejected options and no tool-output values).
  ASSERT_EQ(qs.size(), 8u);
  EXPECT_EQ(qs[0].type, ProbeType::kRecall);
  EXPECT_EQ(qs[2].type, ProbeType::kArtifact);
  EXPECT_EQ(qs[3].type, ProbeType::kContinuation);
  EXPECT_EQ(qs[4].type, ProbeType::kDecision);
  EXPECT_NE(qs[5].question.find("still open"), std::string::npos);
  EXPECT_NE(qs[6].question.find("current now"), std::string::npos);
  EXPECT_NE(qs[7].question.find("already done"), std::string::npos);
  // The five probes ask about every fact once.
  size_t asked = 0;
  for (size_t i = 0; i < 5; ++i) asked += qs[i].fact_ids.size();
  EXPECT_EQ(asked, g.facts.facts.size());
  EXPECT_NE(qs[6].expected.find("(superseded by: "), std::string::npos);
  // Revised decisions are named as such; error fix status is part of the reference.
  EXPECT_NE(qs[4].expected.find("(superseded by: "), std::string::npos);
  EXPECT_TRUE(qs[1].expected.find("(fixed)") != std::string::npos ||
              qs[1].expected.find("(not fixed)") != std::string::npos);
}

TEST(ProbeTest, JudgePromptAndScoreParsing) {
  ProbeQuestion q;
  q.type = ProbeType::kDecision;
  q.question = "What was decided?";
  q.expected = "- use X\n";
  JudgePrompt p = BuildJudgePrompt("ctx text", q);
  EXPECT_NE(p.system_prompt.find("SCORE: n"), std::string::npos);
  EXPECT_NE(p.user_text.find("<context>\nctx text\n</context>"), std::string::npos);
  EXPECT_NE(p.user_text.find("<question type=\"decision\">"), std::string::npos);
  EXPECT_NE(p.user_text.find("<reference-answer>\n- use X\n</reference-answer>"),
            std::string::npos);

  EXPECT_DOUBLE_EQ(*ParseJudgeScore("SCORE: 4\nbecause"), 4.0);
  EXPECT_DOUBLE_EQ(*ParseJudgeScore("Thinking...\nSCORE:3.5"), 3.5);
  EXPECT_FALSE(ParseJudgeScore("score 4").ok());
  EXPECT_FALSE(ParseJudgeScore("SCORE: high").ok());
  EXPECT_FALSE(ParseJudgeScore("SCORE: 7").ok());
}

TEST(ProbeTest, RunnerAsksTheJudge) {
  GeneratedSession g = GenerateEvalSession({2, 100000});
  auto session = Session::FromString(g.jsonl, "g.jsonl");
  ASSERT_TRUE(session.ok());
  SubstringJudge judge;
  EvalConfig config;
  config.judge = &judge;
  auto ev = EvaluateSession(**session, g.facts, config);
  ASSERT_TRUE(ev.ok());
  ASSERT_EQ(ev->probes.size(), 8u);
  for (const ProbeScore& p : ev->probes) {
    if (p.type == ProbeType::kContinuation) {
      EXPECT_FALSE(p.error.empty());
    } else {
      EXPECT_TRUE(p.error.empty()) << p.error;
      EXPECT_DOUBLE_EQ(p.score, 5.0) << p.question;  // the uncompacted context has everything
    }
  }
}

TEST(ProbeTest, StatusQuestionsOfTheIndependentCorpus) {
  GeneratorOptions o;
  o.seed = 1;
  o.target_tokens = 60000;
  o.style = GeneratorStyle::kIndependent;
  GeneratedSession g = GenerateEvalSession(o);
  std::vector<ProbeQuestion> qs = MakeProbeQuestions(g.facts);
  auto find = [&](std::string_view words) -> const ProbeQuestion* {
    for (const ProbeQuestion& q : qs)
      if (q.question.find(words) != std::string::npos) return &q;
    return nullptr;
  };
  const ProbeQuestion* errors = find("still open");
  ASSERT_NE(errors, nullptr);
  EXPECT_NE(errors->expected.find("(not fixed)"), std::string::npos);
  EXPECT_NE(errors->expected.find("(fixed)"), std::string::npos);
  const ProbeQuestion* values = find("current now");
  ASSERT_NE(values, nullptr);
  EXPECT_NE(values->expected.find("(superseded by: "), std::string::npos);
  EXPECT_EQ(values->expected.find("rejected"), std::string::npos);
  const ProbeQuestion* steps = find("already done");
  ASSERT_NE(steps, nullptr);
  EXPECT_NE(steps->expected.find("(already done)"), std::string::npos);
  const ProbeQuestion* rejected = find("rejected");
  ASSERT_NE(rejected, nullptr);
  EXPECT_NE(rejected->expected.find("(considered and rejected"), std::string::npos);
  const ProbeQuestion* outputs = find("command outputs");
  ASSERT_NE(outputs, nullptr);
  EXPECT_EQ(outputs->type, ProbeType::kArtifact);
}

}  // namespace
}  // namespace compactor
