// Supersession: the indexed pass must retire exactly what comparing every pair
// in the look-back window retires.
#include "summarize/extract.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace compactor::summarize {
namespace {

// Random statements over a small vocabulary, so that many share words, with
// the phrases the rules look for: replacements, negations, revision cues.
std::vector<Statement> RandomStatements(uint32_t seed, size_t n) {
  static const std::vector<std::string> kWords = {
      "tabs",   "spaces",   "pnpm",   "npm", "yarn",   "postgres", "sqlite", "redis",
      "tests",  "vitest",   "jest",   "api", "schema", "cache",    "retry",  "logging",
      "config", "database", "docker", "ci",  "lint",   "strict",   "mode",   "hashmap"};
  static const std::vector<std::string> kFrames = {
      "use {} for the {}",        "use {} instead of {}",     "never use {} in {}",
      "actually, use {} with {}", "switch from {} to {}",     "keep {} and {} as they are",
      "do not use {} for {}",     "we decided on {} over {}", "{} must stay with {}",
      "rather than {}, prefer {}"};
  std::mt19937 rng(seed);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  std::vector<Statement> out(n);
  int64_t order = 0;
  for (size_t i = 0; i < n; ++i) {
    std::string text = pick(kFrames);
    for (size_t p; (p = text.find("{}")) != std::string::npos;) text.replace(p, 2, pick(kWords));
    if (rng() % 3 == 0) text += " " + pick(kWords) + " " + pick(kWords);
    order += rng() % 4 == 0 ? 0 : 1;  // some statements come from the same message
    out[i].order = order;
    out[i].text = text;
    out[i].kind = static_cast<int>(rng() % 3);
    // A reason can name the replaced thing on its own ("rather than redis"),
    // which the statement's own words then do not hold.
    if (rng() % 5 == 0) out[i].reason = "because " + pick(kWords) + " is " + pick(kWords);
    if (rng() % 5 == 0) out[i].reason = "rather than " + pick(kWords);
  }
  return out;
}

std::vector<bool> Retired(std::vector<Statement> statements, bool pairwise) {
  std::vector<Statement*> timeline;
  for (Statement& s : statements) timeline.push_back(&s);
  if (pairwise) {
    ApplySupersessionPairwise(timeline);
  } else {
    ApplySupersession(timeline);
  }
  std::vector<bool> out;
  for (const Statement& s : statements) out.push_back(s.superseded);
  return out;
}

TEST(Supersession, IndexedPassAgreesWithEveryPair) {
  size_t retired = 0, kept = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    // Past the look-back window (400) in the larger cases.
    const size_t n = seed <= 6 ? 60 : 900;
    std::vector<Statement> statements = RandomStatements(seed, n);
    std::vector<bool> indexed = Retired(statements, false);
    EXPECT_EQ(indexed, Retired(statements, true)) << "seed " << seed;
    for (bool r : indexed) (r ? retired : kept) += 1;
  }
  // The case must exercise both outcomes.
  EXPECT_GT(retired, 100u);
  EXPECT_GT(kept, 100u);
}

TEST(Supersession, ReplacementRetiresTheEarlierChoice) {
  std::vector<Statement> s(3);
  s[0] = {1, "use tabs for indentation", "", false, 0, ""};
  s[1] = {2, "run the tests with vitest", "", false, 1, ""};
  s[2] = {3, "use spaces instead of tabs", "", false, 1, ""};
  std::vector<Statement*> timeline = {&s[2], &s[0], &s[1]};
  ApplySupersession(timeline);
  EXPECT_TRUE(s[0].superseded);  // across kinds: an explicit replacement
  EXPECT_FALSE(s[1].superseded);
  EXPECT_FALSE(s[2].superseded);
}

}  // namespace
}  // namespace compactor::summarize
