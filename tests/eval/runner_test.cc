#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compactor/eval.h"
#include "compactor/strategy.h"
#include "compactor/summarizer.h"
#include "support/test_util.h"

namespace compactor {
namespace {

// A summarizer whose summary is fixed text: lets the test decide exactly
// which facts survive.
class FixedSummarizer : public Summarizer {
 public:
  explicit FixedSummarizer(std::string text) : text_(std::move(text)) {}
  std::string_view name() const override { return "fixed"; }
  Result<std::string> Summarize(const SummaryRequest&) const override { return text_; }

 private:
  std::string text_;
};

std::unique_ptr<Session> Load(const GeneratedSession& g) {
  auto s = Session::FromString(g.jsonl, g.name + ".jsonl");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(RunnerTest, CeilingKeepsEverything) {
  GeneratedSession g = GenerateEvalSession({2});
  auto session = Load(g);
  ASSERT_TRUE(session);
  EvalConfig config;  // no strategy
  auto ev = EvaluateSession(*session, g.facts, config);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->strategy, "none");
  EXPECT_FALSE(ev->compacted);
  EvalSummary s = Summarize({*ev});
  EXPECT_DOUBLE_EQ(s.Retention(), 1.0);
  EXPECT_EQ(s.stale_as_current, 0);
  EXPECT_GE(s.stale_total, 1);
  EXPECT_EQ(s.context_tokens_before, s.context_tokens_after);
  EXPECT_TRUE(CheckTargets(s).empty());
}

TEST(RunnerTest, SummaryStrategyScoresWhatTheSummaryKeeps) {
  // An agent without a notes tool: otherwise its latest notes in the kept
  // tail would name the facts the fixed summary leaves out.
  GeneratedSession g = GenerateEvalSession({1, 160000, false});
  auto session = Load(g);
  ASSERT_TRUE(session);
  // The summary names the goal and the stale decision only.
  const Fact* goal = nullptr;
  const Fact* stale = nullptr;
  for (const Fact& f : g.facts.facts) {
    if (f.kind == FactKind::kGoal) goal = &f;
    if (!f.superseded_by.empty() && f.kind == FactKind::kDecision) stale = &f;
  }
  ASSERT_TRUE(goal && stale);
  FixedSummarizer summarizer("## Goal\n" + goal->text + "\n\n## Decisions\n- " + stale->text +
                             "\n");
  EvalConfig config;
  config.strategy = FindStrategy("summary");
  config.compact.summarizer = &summarizer;
  config.summarizer_name = "fixed";
  const std::string before = (*session).ToV3Jsonl();
  auto ev = EvaluateSession(*session, g.facts, config);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  ASSERT_TRUE(ev->compacted) << ev->skipped_reason;
  EXPECT_EQ(session->ToV3Jsonl(), before);  // nothing written, input untouched

  int summarized = 0;
  for (size_t i = 0; i < ev->outcomes.size(); ++i) {
    const FactOutcome& o = ev->outcomes[i];
    const Fact& f = g.facts.facts[i];
    if (f.id == goal->id) {
      EXPECT_TRUE(o.in_summarized_part);
      EXPECT_TRUE(o.retained);
    }
    if (f.id == stale->id) {
      EXPECT_TRUE(o.in_summarized_part);
      // The replacement was summarized away too, so the summary now presents
      // the stale decision as current.
      EXPECT_TRUE(o.stale_as_current);
    }
    if (o.in_summarized_part) {
      ++summarized;
      // Facts of the summarized part that the summary does not name are lost,
      // unless the pi file-operation footer lists them (files).
      if (f.kind == FactKind::kCommand || f.kind == FactKind::kError) {
        EXPECT_FALSE(o.retained) << f.id;
      }
    } else if (f.superseded_by.empty()) {
      EXPECT_TRUE(o.retained) << f.id << " in the kept tail";
    }
  }
  EXPECT_GT(summarized, 10);
  EvalSummary s = Summarize({*ev});
  EXPECT_LT(s.Retention(), 0.7);
  EXPECT_GE(s.stale_as_current, 1);
  EXPECT_GT(s.SummaryReduction(), 0.95);
  EXPECT_GT(s.ContextReduction(), 0.5);
  EXPECT_FALSE(CheckTargets(s).empty());

  // Reports carry the same numbers.
  auto j = nlohmann::json::parse(EvalJson({s}, {*ev}));
  EXPECT_EQ(j["strategies"][0]["strategy"], "summary");
  EXPECT_EQ(j["strategies"][0]["retained"], s.retained);
  EXPECT_EQ(j["sessions"][0]["facts"].size(), g.facts.facts.size());
  EXPECT_NE(EvalTable({s}).find("summary (fixed)"), std::string::npos);
  EXPECT_NE(EvalHtml({s}).find("class=\"bar\""), std::string::npos);
}

TEST(RunnerTest, UnsupportedStrategyIsSkippedNotScored) {
  GeneratedSession g = GenerateEvalSession({2, 100000});
  auto session = Load(g);
  ASSERT_TRUE(session);
  FixedSummarizer summarizer("x");
  EvalConfig config;
  config.strategy = FindStrategy("notes");  // no notes file given
  config.compact.summarizer = &summarizer;
  auto ev = EvaluateSession(*session, g.facts, config);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_FALSE(ev->compacted);
  EXPECT_FALSE(ev->skipped_reason.empty());
}

// A notes file the agent has not written to yet (created empty, or holding
// only blank lines) is Nominal Code's "skip, retry next turn": reported with
// the documented reason and not scored as if the notes had kept everything.
TEST(RunnerTest, EmptyNotesAreSkippedNotScored) {
  GeneratedSession g = GenerateEvalSession({3, 100000});
  auto session = Load(g);
  ASSERT_TRUE(session);
  testing::TempDir dir;
  for (const std::string& content : {std::string(), std::string("\n  \n\t\n")}) {
    EvalConfig config;
    config.strategy = FindStrategy("notes");
    config.compact.notes_path = dir.Write("eval-0003.notes.md", content);
    auto ev = EvaluateSession(*session, g.facts, config);
    ASSERT_TRUE(ev.ok()) << ev.status().ToString();
    EXPECT_FALSE(ev->compacted);
    EXPECT_EQ(ev->skipped_reason, "empty notes");
    EXPECT_TRUE(ev->outcomes.empty());
    EvalSummary s = Summarize({*ev});
    EXPECT_EQ(s.sessions, 1);
    EXPECT_EQ(s.compacted, 0);
    EXPECT_EQ(s.total, 0);
    EXPECT_FALSE(CheckTargets(s).empty());
  }
}

// The notes strategy on the generated corpus: the summary is the simulated
// agent's own notes file. The thresholds sit below what it measures on seeds
// 1-4 (docs/quality.md: 90.1% of facts, every modified file and constraint,
// 0/8 stale, 99.7% summary reduction), not at the offline summarizer's
// targets: the notes leave out what the agent did not write down.
TEST(QualityGateTest, NotesStrategyScoresTheAgentsNotes) {
  testing::TempDir dir;
  std::vector<SessionEval> evals;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    GeneratedSession g = GenerateEvalSession({seed});
    auto session = Load(g);
    ASSERT_TRUE(session);
    EvalConfig config;
    config.strategy = FindStrategy("notes");
    config.compact.notes_path = dir.Write(g.name + ".notes.md", g.notes);
    auto ev = EvaluateSession(*session, g.facts, config);
    ASSERT_TRUE(ev.ok()) << ev.status().ToString();
    ASSERT_TRUE(ev->compacted) << ev->skipped_reason;
    EXPECT_EQ(ev->summarizer, "");  // no summarizer involved
    evals.push_back(std::move(*ev));
  }
  EvalSummary s = Summarize(evals);
  const std::string table = EvalTable({s});
  EXPECT_GE(s.Retention(), 0.80) << table;
  EXPECT_LT(s.Retention(), 1.0) << "notes that keep every fact are an answer key\n" << table;
  EXPECT_GE(s.KindRetention(FactKind::kFileModified), 0.95) << table;
  EXPECT_GE(s.KindRetention(FactKind::kConstraint), 0.85) << table;
  EXPECT_GE(s.KindRetention(FactKind::kGoal), 1.0) << table;
  EXPECT_EQ(s.stale_as_current, 0) << table;
  EXPECT_GE(s.stale_total, 4) << table;
  EXPECT_GE(s.SummaryReduction(), 0.95) << table;
  EXPECT_GE(s.ContextReduction(), 0.95) << table;
}

// The CI quality gate: the embedded offline summarizer on a small generated
// corpus at the default settings must meet the targets, both when
// the agent keeps notes (its latest notes may sit in the kept tail) and when
// it has no notes tool (nothing but the summary carries the old part).
TEST(QualityGateTest, OfflineSummarizerMeetsTargets) {
  if (!NewOfflineSummarizer()) GTEST_SKIP() << "the offline summarizer is not part of this build";
  for (bool agent_notes : {false, true}) {
    SCOPED_TRACE(agent_notes ? "agent with notes" : "agent without notes");
    std::vector<SessionEval> evals;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      GeneratedSession g = GenerateEvalSession({seed, 160000, agent_notes});
      auto session = Load(g);
      ASSERT_TRUE(session);
      EvalConfig config;
      config.strategy = FindStrategy("summary");
      auto ev = EvaluateSession(*session, g.facts, config);
      ASSERT_TRUE(ev.ok()) << ev.status().ToString();
      ASSERT_TRUE(ev->compacted) << ev->skipped_reason;
      evals.push_back(std::move(*ev));
    }
    EvalSummary s = Summarize(evals);
    std::string misses;
    for (const std::string& m : CheckTargets(s)) misses += m + "\n";
    EXPECT_TRUE(misses.empty()) << misses << EvalTable({s});
  }
}

// The issue-14 targets (PendingTargets) as the gate of the rewritten offline
// summarizer: on both generators and on the hand-labelled real sessions, one
// tuning and one held-out session or more of each, every target holds except
// the ones docs/quality.md reports as not met yet ("Targets and the CI
// gate"); a miss outside that list fails. The list only shrinks: a target is
// never lowered to fit.
struct GateCorpus {
  const char* name;
  std::vector<SessionEval> evals;
  // Targets this corpus still misses (reported, not gated): substrings of
  // CheckPendingTargets' lines.
  std::vector<std::string> reported_not_gated;
};

void ExpectPendingTargetsMet(const GateCorpus& c) {
  SCOPED_TRACE(c.name);
  EvalSummary s = Summarize(c.evals);
  ASSERT_EQ(s.compacted, static_cast<int>(c.evals.size()));
  for (const std::string& miss : CheckPendingTargets(s)) {
    bool reported = false;
    for (const std::string& r : c.reported_not_gated)
      reported = reported || miss.find(r) != std::string::npos;
    EXPECT_TRUE(reported) << miss << "\n" << EvalTable({s});
  }
}

SessionEval EvalSummaryOf(const Session& session, const FactFile& facts) {
  EvalConfig config;
  config.strategy = FindStrategy("summary");
  auto ev = EvaluateSession(session, facts, config);
  EXPECT_TRUE(ev.ok()) << ev.status().ToString();
  return ev.ok() ? std::move(*ev) : SessionEval{};
}

TEST(QualityGateTest, OfflineSummarizerMeetsTheStatusTargets) {
  if (!NewOfflineSummarizer()) GTEST_SKIP() << "the offline summarizer is not part of this build";
  // Seeds 1-3 tuning, 4 held out (HeldOutSeed); 1 and 4 cover two domains
  // of each generator (seed 4 of the standard one revises a value inside a
  // quoted correction: "...; use batches of 100 instead").
  GateCorpus independent{"independent generator, seeds 1 and 4", {}, {}};
  GateCorpus standard{"standard generator, seeds 1 and 4", {}, {}};
  for (uint64_t seed : {1, 4}) {
    GeneratorOptions o{seed, 160000, false};
    o.style = GeneratorStyle::kIndependent;
    GeneratedSession g = GenerateEvalSession(o);
    auto session = Load(g);
    ASSERT_TRUE(session);
    independent.evals.push_back(EvalSummaryOf(*session, g.facts));
    GeneratedSession gs = GenerateEvalSession({seed, 160000, true});
    auto ss = Load(gs);
    ASSERT_TRUE(ss);
    standard.evals.push_back(EvalSummaryOf(*ss, gs.facts));
  }
  // long.v3 is tuning, compacted.v3 held out.
  GateCorpus labelled{"hand-labelled real sessions", {}, {}};
  for (const char* name : {"long.v3", "compacted.v3"}) {
    const std::string dir = std::string(COMPACTOR_SOURCE_DIR) + "/tests/";
    auto session = Session::Open(dir + "fixtures/pi/" + name + ".jsonl");
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    auto facts = ReadFactFile(dir + "eval/labelled/" + name + ".facts.json");
    ASSERT_TRUE(facts.ok()) << facts.status().ToString();
    labelled.evals.push_back(EvalSummaryOf(**session, *facts));
  }
  ExpectPendingTargetsMet(independent);
  ExpectPendingTargetsMet(standard);
  ExpectPendingTargetsMet(labelled);
}

// The stricter targets are reported, not gated, until the summarizer that
// meets them lands (docs/quality.md); the check itself must see each one.
TEST(QualityGateTest, PendingTargetsCheckEveryMeasure) {
  EvalSummary s;
  s.strategy = "summary";
  s.compacted = 1;
  auto set = [&](FactKind k, int retained, int total) {
    s.kinds[static_cast<int>(k)].retained = retained;
    s.kinds[static_cast<int>(k)].total = total;
  };
  set(FactKind::kValue, 9, 10);
  set(FactKind::kFileModified, 10, 10);
  set(FactKind::kConstraint, 4, 4);
  set(FactKind::kError, 9, 10);
  set(FactKind::kDecision, 9, 10);
  s.total = 44;
  s.retained = 41;  // 93.2%
  s.summarized_tokens = 1000;
  s.summary_tokens = 100;
  s.shape.items = 100;
  s.shape.noise = 2;
  std::vector<std::string> misses = CheckPendingTargets(s);
  ASSERT_EQ(misses.size(), 1u) << ::testing::PrintToString(misses);
  EXPECT_NE(misses[0].find("all facts"), std::string::npos);

  s.retained = 42;  // 95.5%
  EXPECT_TRUE(CheckPendingTargets(s).empty());
  s.status.stale = s.status.open_errors = s.status.standing = 3;
  s.status.stale_presented = s.status.false_resolved = s.status.under_done = 1;
  s.shape.noise = 3;
  set(FactKind::kValue, 8, 10);
  set(FactKind::kFileModified, 9, 10);
  set(FactKind::kConstraint, 3, 4);
  set(FactKind::kError, 8, 10);
  set(FactKind::kDecision, 8, 10);
  s.summary_tokens = 200;
  misses = CheckPendingTargets(s);
  EXPECT_EQ(misses.size(), 10u) << ::testing::PrintToString(misses);
  for (const char* what :
       {"values from tool outputs", "file_modified", "constraint", "error", "decision",
        "superseded presented as current", "open errors shown as resolved",
        "goals and constraints under Done", "noise", "summary reduction"}) {
    bool found = false;
    for (const std::string& m : misses) found = found || m.find(what) != std::string::npos;
    EXPECT_TRUE(found) << what;
  }
}

// Reports give both splits (docs/quality.md, "Splits").
TEST(EvalCliTest, ReportsGiveBothSplits) {
  testing::TempDir dir;
  auto r = testing::RunCli({"eval", "--generate", dir.path(), "--generator", "independent",
                            "--sessions", "2", "--seed", "3", "--target-tokens", "50000",
                            "--strategy", "none", "--json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("splits"));
  EXPECT_EQ(j["splits"]["tuning"][0]["sessions"], 1);    // seed 3
  EXPECT_EQ(j["splits"]["held-out"][0]["sessions"], 1);  // seed 4
  EXPECT_EQ(j["sessions"][0]["split"], "tuning");
  EXPECT_EQ(j["sessions"][1]["split"], "held-out");
  EXPECT_TRUE(j["strategies"][0].contains("status"));
  EXPECT_TRUE(j["strategies"][0].contains("artifacts"));
  auto t = testing::RunCli({"eval", dir.path(), "--strategy", "none", "-q"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("tuning split (1 sessions)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("held-out split (1 sessions)"), std::string::npos);
  EXPECT_NE(t.out.find("superseded presented as current"), std::string::npos);
}

TEST(EvalCliTest, GenerateAndEvaluateTheCeiling) {
  testing::TempDir dir;
  auto r = testing::RunCli({"eval", "--generate", dir.path(), "--sessions", "2", "--seed", "5",
                            "--strategy", "none", "--json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["strategies"].size(), 1u);
  EXPECT_EQ(j["strategies"][0]["strategy"], "none");
  EXPECT_EQ(j["strategies"][0]["sessions"], 2);
  EXPECT_DOUBLE_EQ(j["strategies"][0]["retention"].get<double>(), 1.0);
  EXPECT_EQ(j["sessions"].size(), 2u);

  // The same directory again, as a table, with the check and an HTML report.
  std::string html = dir.path() + "/report.html";
  auto t = testing::RunCli({"eval", dir.path(), "--strategy", "none", "--html", html, "-q"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("all facts"), std::string::npos);
  EXPECT_NE(testing::ReadFileOrDie(html).find("<h2>none</h2>"), std::string::npos);
  auto c = testing::RunCli({"eval", dir.path(), "--strategy", "none", "--check", "-q"});
  EXPECT_EQ(c.exit_code, 3) << "--check without the summary strategy must fail";
  auto bad = testing::RunCli({"eval", dir.path(), "--strategy", "bogus"});
  EXPECT_EQ(bad.exit_code, 2);
}

TEST(EvalCliTest, NotesFromTheGeneratedNotesFiles) {
  testing::TempDir dir;
  auto gen = testing::RunCli({"eval", "--generate", dir.path(), "--sessions", "2", "--seed", "7",
                              "--target-tokens", "100000", "--no-eval", "-q"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  // The agent of the second session had not written its notes yet.
  dir.Write("eval-0008.notes.md", "");
  auto r = testing::RunCli({"eval", dir.path(), "--strategy", "notes", "--json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["strategies"].size(), 1u);
  EXPECT_EQ(j["strategies"][0]["strategy"], "notes");
  EXPECT_EQ(j["strategies"][0]["sessions"], 2);
  EXPECT_EQ(j["strategies"][0]["compacted"], 1);
  ASSERT_EQ(j["sessions"].size(), 2u);
  EXPECT_TRUE(j["sessions"][0]["compacted"].get<bool>());
  EXPECT_GT(j["sessions"][0]["facts"].size(), 10u);
  EXPECT_FALSE(j["sessions"][1]["compacted"].get<bool>());
  EXPECT_EQ(j["sessions"][1]["skippedReason"], "empty notes");
  EXPECT_TRUE(j["sessions"][1]["facts"].empty());

  // As a table, the skip is reported on stderr.
  auto t = testing::RunCli({"eval", dir.path(), "--strategy", "notes"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("1/2"), std::string::npos) << t.out;
  EXPECT_NE(t.err.find("eval-0008.jsonl (notes): empty notes"), std::string::npos) << t.err;
}

}  // namespace
}  // namespace compactor
