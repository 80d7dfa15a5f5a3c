// JsonNestingExceeds: the guard in front of every recursive walk over a value.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
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

TEST(JsonNesting, EveryLengthAroundTheCountingBlocks) {
  // The first count runs over fixed blocks and then a tail: every split of
  // a line's brackets between them gives the same answer, and only '[' and
  // '{' count ('[' | 0x20 is '{', and no other byte gives '{').
  for (size_t depth : {1, 2, 223, 224, 225, 447, 448, 449, 700}) {
    for (size_t pad : {0, 1, 31, 223, 224, 300}) {
      const std::string filler(pad, ' ');
      // One bracket fewer counted and the first pass would say no.
      const std::string bare = filler + std::string(depth, '[') + std::string(depth, ']') + filler;
      EXPECT_FALSE(JsonNestingExceeds(bare, depth)) << depth << " " << pad;
      EXPECT_TRUE(JsonNestingExceeds(bare, depth - 1)) << depth << " " << pad;
      // Brackets inside a string count only in the first pass.
      const std::string quoted =
          filler + std::string(depth, '[') + "\"{};;:[]\"" + std::string(depth, ']') + filler;
      EXPECT_FALSE(JsonNestingExceeds(quoted, depth)) << depth << " " << pad;
      EXPECT_TRUE(JsonNestingExceeds(quoted, depth - 1)) << depth << " " << pad;
    }
  }
  // Bytes a bit away from the brackets never count.
  std::string near;
  for (unsigned char c : {0x3b, 0x4b, 0x6b, 0x5d, 0x7d, 0xdb, 0xfb, 0x1b})
    near += std::string(300, static_cast<char>(c));
  EXPECT_FALSE(JsonNestingExceeds(near, 0));
}

// The one parse of outside JSON says why it refused, so no caller scans the
// nesting again to pick its message.
TEST(JsonNesting, ParseWithinLimitSaysWhyItRefused) {
  using Json = nlohmann::json;
  Result<Json> ok = ParseJsonWithinLimit<Json>(R"({"a":[1,2]})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["a"][1], 2);
  const std::string at = std::string(1024, '[') + std::string(1024, ']');
  EXPECT_TRUE(ParseJsonWithinLimit<Json>(at).ok());

  Result<Json> invalid = ParseJsonWithinLimit<Json>("{\"a\":");
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(invalid.status().message(), "invalid JSON");

  // Too deep wins over invalid: the text is never handed to the parser.
  for (const std::string& deep :
       {std::string(1025, '[') + std::string(1025, ']'), std::string(100'000, '{')}) {
    Result<Json> r = ParseJsonWithinLimit<Json>(deep);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
    EXPECT_EQ(r.status().message(), JsonTooDeepMessage());
    EXPECT_EQ(r.status().message(), "JSON nested deeper than 1024 levels");
  }

  // Comments only when asked (settings files allow them).
  EXPECT_FALSE(ParseJsonWithinLimit<Json>("{/* c */}").ok());
  EXPECT_TRUE(ParseJsonWithinLimit<Json>("{/* c */}", /*ignore_comments=*/true).ok());
}

}  // namespace
}  // namespace compactor::internal
