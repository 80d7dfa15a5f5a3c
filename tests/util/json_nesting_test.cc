// JsonNestingExceeds: the guard in front of every recursive walk over a value.
#include <gtest/gtest.h>

#include <string>

#include "util/json_scan.h"

namespace compactor::internal {
namespace {

TEST(JsonNesting, CountsObjectsAndArraysOutsideStrings) {
  EXPECT_FALSE(JsonNestingExceeds("{}", 1));
  EXPECT_TRUE(JsonNestingExceeds("{\"a\":[]}", 1));
  EXPECT_FALSE(JsonNestingExceeds("{\"a\":[]}", 2));
  // Brackets inside strings, escaped quotes included, do not count.
  EXPECT_FALSE(JsonNestingExceeds(R"({"a":"[[[[{{{{\"[[[["})", 1));
  EXPECT_FALSE(JsonNestingExceeds(R"(["\\", "[[["])", 1));
  // Siblings do not add up.
  EXPECT_FALSE(JsonNestingExceeds("[[],[],[],[]]", 2));
}

TEST(JsonNesting, TheLimitIsInclusive) {
  const std::string at = std::string(1024, '[') + std::string(1024, ']');
  EXPECT_FALSE(JsonNestingExceeds(at, kMaxJsonNesting));
  const std::string over = std::string(1025, '[') + std::string(1025, ']');
  EXPECT_TRUE(JsonNestingExceeds(over, kMaxJsonNesting));
  // Far deeper than any stack: a loop, no recursion.
  const std::string deep(10'000'000, '{');
  EXPECT_TRUE(JsonNestingExceeds(deep, kMaxJsonNesting));
  // Many brackets, little depth: the exact pass says no.
  std::string wide;
  for (int i = 0; i < 5000; ++i) wide += "[]";
  EXPECT_FALSE(JsonNestingExceeds("[" + wide + "]", kMaxJsonNesting));
}

}  // namespace
}  // namespace compactor::internal
