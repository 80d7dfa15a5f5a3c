#include <gtest/gtest.h>

#include <set>
#include <string>

#include "compactor/compact.h"
#include "compactor/context.h"
#include "compactor/strategy.h"
#include "support/compaction_fixtures.h"

namespace compactor {
namespace {

TEST(StrategyRegistry, TableOrderNamesAndDefault) {
  std::vector<std::string> names;
  for (const CompactionStrategy* s : Strategies()) names.emplace_back(s->name());
  EXPECT_EQ(names, (std::vector<std::string>{"summary", "user-prompts", "notes", "handoff", "mask",
                                             "mask-summary"}));
  EXPECT_EQ(DefaultStrategy().name(), "summary");
  EXPECT_EQ(&DefaultStrategy(), Strategies().front());
  EXPECT_EQ(StrategyNames(), "summary, user-prompts, notes, handoff, mask, mask-summary");
  EXPECT_EQ(StrategyNames(" "), "summary user-prompts notes handoff mask mask-summary");
}

TEST(StrategyRegistry, NamesAndAliasesAreUniqueAndFound) {
  std::set<std::string_view> seen;
  for (const CompactionStrategy* s : Strategies()) {
    EXPECT_TRUE(seen.insert(s->name()).second) << s->name();
    EXPECT_EQ(FindStrategy(s->name()), s);
    EXPECT_FALSE(s->description().empty()) << s->name();
    EXPECT_EQ(s->description().find('\n'), std::string_view::npos) << "one line: " << s->name();
    for (std::string_view alias : s->aliases()) {
      EXPECT_TRUE(seen.insert(alias).second) << alias;
      EXPECT_EQ(FindStrategy(alias), s);
    }
  }
  EXPECT_EQ(FindStrategy("context-full"), &DefaultStrategy());
  EXPECT_EQ(FindStrategy("off"), nullptr);  // a settings value, not a strategy
  EXPECT_EQ(FindStrategy(""), nullptr);
  EXPECT_EQ(FindStrategy("Summary"), nullptr);
}

TEST(StrategyRegistry, ParseErrorsListTheRegisteredNames) {
  auto r = ParseStrategy("magic");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      r.status().message(),
      "unknown strategy \"magic\" (summary, user-prompts, notes, handoff, mask, mask-summary)");
  ASSERT_TRUE(ParseStrategy("mask").ok());
  EXPECT_EQ((*ParseStrategy("mask"))->name(), "mask");
}

TEST(StrategyRegistry, WhatEachStrategyDeclares) {
  struct Expect {
    std::string_view name;
    bool summarizer, notes_file;
    CompactionOutput output;
    bool append_only, summarizes, by_default;
  };
  const Expect expected[] = {
      {"summary", true, false, CompactionOutput::kAppendEntry, true, true, true},
      {"user-prompts", true, false, CompactionOutput::kAppendEntry, true, true, true},
      {"notes", false, true, CompactionOutput::kAppendEntry, true, true, true},
      {"handoff", true, false, CompactionOutput::kNewSession, true, true, false},
      {"mask", false, false, CompactionOutput::kRewriteFile, false, false, true},
      {"mask-summary", true, false, CompactionOutput::kAppendEntry, true, true, true},
  };
  for (const Expect& e : expected) {
    const CompactionStrategy* s = FindStrategy(e.name);
    ASSERT_NE(s, nullptr) << e.name;
    EXPECT_EQ(s->needs().summarizer, e.summarizer) << e.name;
    EXPECT_EQ(s->needs().notes_file, e.notes_file) << e.name;
    EXPECT_EQ(s->output(), e.output) << e.name;
    EXPECT_EQ(s->append_only(), e.append_only) << e.name;
    EXPECT_EQ(s->summarizes_history(), e.summarizes) << e.name;
    EXPECT_EQ(s->evaluated_by_default(), e.by_default) << e.name;
  }
}

// The registry's expander hands an entry to the strategy its "method" names;
// entries of other methods, or without one (pi's own), keep pi's view.
TEST(StrategyRegistry, ExpanderDispatchesByMethod) {
  testing::RecordingSummarizer sum;
  CompactOptions o = testing::Options(&sum);
  auto base = Session::FromString(testing::MakeSession(3, 100), "s.jsonl");
  ASSERT_TRUE(base.ok());
  o.strategy = FindStrategy("user-prompts");
  auto computed = ComputeCompaction(**base, o);
  ASSERT_TRUE(computed.ok() && computed->result.compacted);
  const std::string entry = computed->result.entry_json;
  auto with_method = [&](const std::string& method) {
    std::string line = entry;
    const std::string from = "\"method\":\"user-prompts\"";
    line.replace(line.find(from), from.size(), method);
    return SessionWithAppended(**base, line);
  };
  ContextOptions expanded;
  expanded.expander = StrategyExpander();
  for (const char* method : {"\"method\":\"user-prompts\"", "\"method\":\"summary\"",
                             "\"method\":\"nobody\"", "\"method\":7", "\"x\":1"}) {
    auto s = with_method(method);
    ASSERT_TRUE(s.ok()) << method;
    auto ctx = BuildSessionContext(**s, expanded);
    ASSERT_TRUE(ctx.ok());
    if (std::string_view(method) == "\"method\":\"user-prompts\"") {
      ASSERT_EQ(ctx->messages.size(), 4u);  // 3 prompts + the summary
      EXPECT_EQ(ctx->messages[3].origin, "summary");
    } else {
      ASSERT_EQ(ctx->messages.size(), 1u) << method;
      EXPECT_EQ(ctx->messages[0].role, Role::kCompactionSummary) << method;
    }
  }
}

}  // namespace
}  // namespace compactor
