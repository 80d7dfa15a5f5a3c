#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "compactor/context.h"
#include "compactor/estimate.h"
#include "compactor/eval.h"
#include "support/oracle.h"
#include "support/test_util.h"

namespace compactor {
namespace {

TEST(GeneratorTest, SameSeedSameBytes) {
  GeneratedSession a = GenerateEvalSession({3, 120000});
  GeneratedSession b = GenerateEvalSession({3, 120000});
  EXPECT_EQ(a.name, "eval-0003");
  EXPECT_EQ(a.jsonl, b.jsonl);
  EXPECT_EQ(FactFileToJson(a.facts), FactFileToJson(b.facts));
  EXPECT_EQ(a.notes, b.notes);
  GeneratedSession c = GenerateEvalSession({4, 120000});
  EXPECT_NE(a.jsonl, c.jsonl);
}

TEST(GeneratorTest, CorpusFilesAreDeterministic) {
  testing::TempDir d1, d2;
  auto p1 = WriteEvalCorpus(d1.path(), 2, 10, 100000);
  auto p2 = WriteEvalCorpus(d2.path(), 2, 10, 100000);
  ASSERT_TRUE(p1.ok() && p2.ok());
  ASSERT_EQ(p1->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(testing::ReadFileOrDie((*p1)[i]), testing::ReadFileOrDie((*p2)[i]));
    std::string facts = (*p1)[i].substr(0, (*p1)[i].size() - 6) + ".facts.json";
    auto f = ReadFactFile(facts);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_FALSE(f->facts.empty());
    const std::string stem = (*p1)[i].substr(0, (*p1)[i].size() - 6);
    const std::string notes = testing::ReadFileOrDie(stem + ".notes.md");
    EXPECT_EQ(notes, GenerateEvalSession({10 + i, 100000}).notes);
    EXPECT_EQ(notes,
              testing::ReadFileOrDie(d2.path() + stem.substr(d1.path().size()) + ".notes.md"));
  }
}

// The write_notes calls of a generated session: (entry index on the path, content).
std::vector<std::pair<size_t, std::string>> NotesCalls(const Session& session) {
  std::vector<std::pair<size_t, std::string>> calls;
  std::vector<size_t> path = session.PathTo(*session.Leaf());
  std::string pending;  // call id waiting for its result
  for (size_t i = 0; i < path.size(); ++i) {
    auto m = nlohmann::json::parse(session.MessageJson(path[i]), nullptr, false);
    if (m.is_discarded() || !m.is_object()) continue;
    if (!pending.empty()) {
      // The result follows its call directly.
      EXPECT_EQ(m.value("role", ""), "toolResult");
      EXPECT_EQ(m.value("toolCallId", ""), pending);
      EXPECT_EQ(m.value("toolName", ""), "write_notes");
      EXPECT_FALSE(m.value("isError", true));
      pending.clear();
      continue;
    }
    if (m.value("role", "") != "assistant") continue;
    for (const auto& part : m["content"]) {
      if (part.value("type", "") != "toolCall" || part.value("name", "") != "write_notes") continue;
      calls.emplace_back(i, part["arguments"]["content"].get<std::string>());
      pending = part["id"].get<std::string>();
    }
  }
  EXPECT_TRUE(pending.empty()) << "a write_notes call without its result";
  return calls;
}

// Without a notes tool the session is the same conversation minus the
// write_notes calls: same entry ids and message contents, in the same order.
TEST(GeneratorTest, NotesCallsAreTheOnlyDifference) {
  for (uint64_t seed : {1, 2}) {
    GeneratedSession with = GenerateEvalSession({seed, 120000, true});
    GeneratedSession without = GenerateEvalSession({seed, 120000, false});
    EXPECT_TRUE(without.notes.empty());
    EXPECT_EQ(FactFileToJson(with.facts), FactFileToJson(without.facts));
    auto a = Session::FromString(with.jsonl, "with.jsonl");
    auto b = Session::FromString(without.jsonl, "without.jsonl");
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(NotesCalls(**b).empty());
    const size_t notes_entries = 2 * NotesCalls(**a).size();
    ASSERT_GT(notes_entries, 0u);
    auto contents = [](const Session& s, bool skip_notes) {
      std::vector<std::string> out;
      std::vector<size_t> path = s.PathTo(*s.Leaf());
      for (size_t i : path) {
        auto m = nlohmann::json::parse(s.MessageJson(i), nullptr, false);
        if (m.is_discarded() || !m.is_object()) continue;
        const std::string text = m["content"].dump();
        if (skip_notes && (m.value("toolName", "") == "write_notes" ||
                           text.find("\"write_notes\"") != std::string::npos))
          continue;
        out.push_back(std::string(s.entry(i).id) + " " + m.value("role", "") + " " + text);
      }
      return out;
    };
    std::vector<std::string> ca = contents(**a, true), cb = contents(**b, false);
    EXPECT_EQ(ca.size() + notes_entries, contents(**a, false).size());
    ASSERT_EQ(ca.size(), cb.size());
    for (size_t i = 0; i < ca.size(); ++i) EXPECT_EQ(ca[i], cb[i]) << seed << " at " << i;
  }
}

TEST(GeneratorTest, AgentKeepsNotesThroughItsTool) {
  int current = 0, retained = 0, missed_minor = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    GeneratedSession g = GenerateEvalSession({seed});
    auto session = Session::FromString(g.jsonl, g.name + ".jsonl");
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    auto calls = NotesCalls(**session);
    // Saved now and then, not after every step.
    ASSERT_GE(calls.size(), 4u) << seed;
    EXPECT_LE(calls.size(), 16u) << seed;
    // The file is what the last call wrote; earlier saves are older versions.
    EXPECT_EQ(g.notes, calls.back().second) << seed;
    EXPECT_NE(calls.front().second, calls.back().second) << seed;
    EXPECT_EQ(g.notes.rfind("# Notes: ", 0), 0u) << seed;

    // Scored as a summary on their own: a revision is always carried into
    // the notes, so no stale fact reads as current and its replacement is
    // there; the goal and the files changed before the last save are kept.
    std::vector<size_t> path = (*session)->PathTo(*(*session)->Leaf());
    std::map<std::string, size_t> position;
    for (size_t i = 0; i < path.size(); ++i)
      position[std::string((*session)->entry(path[i]).id)] = i;
    RenderedBlock block;
    block.summary = true;
    block.text = g.notes;
    std::vector<FactOutcome> outcomes = ScoreFacts(g.facts.facts, {block});
    std::set<std::string> by_id;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      const Fact& f = g.facts.facts[i];
      const FactOutcome& o = outcomes[i];
      if (!f.superseded_by.empty()) {
        EXPECT_FALSE(o.stale_as_current) << seed << " " << f.id << ": " << f.text;
        by_id.insert(f.superseded_by);
        continue;
      }
      ++current;
      if (o.retained) ++retained;
      if (f.kind == FactKind::kGoal) {
        EXPECT_TRUE(o.retained) << seed;
      }
      if (f.kind == FactKind::kFileModified && position.at(f.entry_id) < calls.back().first) {
        EXPECT_TRUE(o.retained) << seed << " " << f.text;
      }
      if (!o.retained && (f.kind == FactKind::kFileRead || f.kind == FactKind::kCommand))
        ++missed_minor;
    }
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (by_id.count(g.facts.facts[i].id)) {
        EXPECT_TRUE(outcomes[i].retained) << seed << " " << g.facts.facts[i].id;
      }
    }
  }
  // An agent's notes, not the answer key: most facts, some minor ones missing.
  EXPECT_GE(retained * 100, current * 70) << retained << "/" << current;
  EXPECT_LT(retained, current);
  EXPECT_GT(missed_minor, 0);
}

class GeneratedSessionTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(GeneratedSessionTest, LoadsAndPlantsScorableFacts) {
  GeneratedSession g = GenerateEvalSession({GetParam()});
  std::vector<LoadWarning> warnings;
  LoadOptions load;
  load.strict = true;
  auto session = Session::FromString(g.jsonl, g.name + ".jsonl", load);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  EXPECT_TRUE((*session)->warnings().empty());
  EXPECT_EQ((*session)->header().version, 3);
  auto ctx = BuildSessionContext(**session);
  ASSERT_TRUE(ctx.ok());

  // Sizes that exceed typical thresholds, with usage that tracks the content.
  ContextEstimate est = EstimateContextTokens(ctx->messages);
  EXPECT_GE(est.heuristic_sum, 100000);
  EXPECT_LE(est.heuristic_sum, 250000);
  EXPECT_GE(est.tokens, 100000);
  EXPECT_LE(est.tokens, 260000);

  // Every kind is planted (but one), with at least one revised fact whose replacement exists.
  std::set<FactKind> kinds;
  int stale = 0;
  std::set<std::string> ids;
  for (const Fact& f : g.facts.facts) {
    kinds.insert(f.kind);
    EXPECT_TRUE(ids.insert(f.id).second) << f.id;
    ASSERT_TRUE((*session)->Find(f.entry_id).has_value()) << f.id << " at " << f.entry_id;
    if (!f.superseded_by.empty()) ++stale;
  }
  // Every kind but `value`: values seen only in tool outputs are the
  // independent generator's (independent_generator_test.cc).
  EXPECT_EQ(kinds.size(), static_cast<size_t>(kFactKindCount) - 1);
  EXPECT_EQ(kinds.count(FactKind::kValue), 0u);
  EXPECT_GE(stale, 1);

  // The uncompacted context (the ceiling) holds every current fact and never
  // presents a stale one as current: the planted texts and the scorer agree.
  std::vector<FactOutcome> outcomes = ScoreFacts(g.facts.facts, RenderContext(ctx->messages));
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const Fact& f = g.facts.facts[i];
    if (f.superseded_by.empty()) {
      EXPECT_TRUE(outcomes[i].retained) << f.id << ": " << f.text;
    } else {
      EXPECT_TRUE(outcomes[i].mentioned) << f.id;
      EXPECT_FALSE(outcomes[i].stale_as_current) << f.id << ": " << f.text;
    }
  }

  // Most facts sit where a default compaction (20k recent tokens kept)
  // summarizes, and some in the kept tail.
  std::vector<size_t> path = (*session)->PathTo(*(*session)->Leaf());
  int64_t tail = 0;
  size_t tail_start = path.size();
  while (tail_start > 0 && tail < 20000) {
    --tail_start;
    tail += EstimateMessageTokens((*session)->MessageJson(path[tail_start]));
  }
  std::set<std::string> tail_ids;
  for (size_t i = tail_start; i < path.size(); ++i)
    tail_ids.insert(std::string((*session)->entry(path[i]).id));
  size_t in_tail = 0;
  for (const Fact& f : g.facts.facts) in_tail += tail_ids.count(f.entry_id);
  EXPECT_GE(in_tail, 1u);
  EXPECT_LE(in_tail * 4, g.facts.facts.size()) << "more than a quarter of the facts in the tail";
}

INSTANTIATE_TEST_SUITE_P(Seeds, GeneratedSessionTest, ::testing::Values(1, 2, 3, 4, 5, 6, 17, 42));

TEST(GeneratorTest, PiLoadsGeneratedSessions) {
  COMPACTOR_REQUIRE_ORACLE();
  testing::TempDir dir;
  auto paths = WriteEvalCorpus(dir.path(), 2, 1, 100000);
  ASSERT_TRUE(paths.ok());
  for (const std::string& path : *paths) {
    auto run = testing::RunOracle(
        {"inspect", path, "--keep", "20000", "--reserve", "16384", "--messages", "brief"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto j = nlohmann::json::parse(run.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << run.out.substr(0, 500);
    auto session = Session::Open(path);
    ASSERT_TRUE(session.ok());
    auto ctx = BuildSessionContext(**session);
    ASSERT_TRUE(ctx.ok());
    EXPECT_EQ(j["contextMessages"].size(), ctx->messages.size());
    // pi's own file tracking over the part it would summarize finds only
    // files the generator planted as modified.
    auto facts = ReadFactFile(path.substr(0, path.size() - 6) + ".facts.json");
    ASSERT_TRUE(facts.ok());
    std::set<std::string> planted;
    for (const Fact& f : facts->facts)
      if (f.kind == FactKind::kFileModified) planted.insert(f.text);
    const auto& modified = j["preparation"]["modifiedFiles"];
    EXPECT_FALSE(modified.empty());
    for (const auto& m : modified) EXPECT_TRUE(planted.count(m.get<std::string>())) << m;
  }
}

}  // namespace
}  // namespace compactor
