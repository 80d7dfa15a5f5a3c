#include "compactor/user_prompts.h"

#include <gtest/gtest.h>

namespace compactor {
namespace {

TEST(UserPrompts, TextTokensCountAsciiQuarterAndOthersOne) {
  EXPECT_EQ(PromptTextTokens(""), 0);
  EXPECT_EQ(PromptTextTokens("abcd"), 1);
  EXPECT_EQ(PromptTextTokens("abcde"), 2);
  EXPECT_EQ(PromptTextTokens("日本語"), 3);
  EXPECT_EQ(PromptTextTokens("ab😀"), 2);
}

TEST(UserPrompts, TruncationIsSinglePassAndKeepsCodePoints) {
  EXPECT_EQ(TruncateToPromptTokens("abcdefgh", 1, false), "abcd");
  EXPECT_EQ(TruncateToPromptTokens("abcdefgh", 1, true), "efgh");
  EXPECT_EQ(TruncateToPromptTokens("日本語テキスト", 2, false), "日本");
  EXPECT_EQ(TruncateToPromptTokens("日本語テキスト", 2, true), "スト");
  EXPECT_EQ(TruncateToPromptTokens("a😀b", 1, true), "b");
  EXPECT_EQ(TruncateToPromptTokens("a😀b", 2, true), "a😀b");  // ceil(2/4) + 1 = 2
  EXPECT_EQ(TruncateToPromptTokens("ab😀", 1, true), "😀");
  EXPECT_EQ(TruncateToPromptTokens("anything", 0, false), "");
  // A long CJK text is handled in linear time (the old quadratic re-estimation froze).
  std::string cjk;
  for (int i = 0; i < 200000; ++i) cjk += "語";
  EXPECT_EQ(PromptTextTokens(TruncateToPromptTokens(cjk, 18000, true)), 18000);
}

TEST(UserPrompts, EverythingFitsIsKeptWhole) {
  std::vector<UserPrompt> p{{"a", "first", 0}, {"b", "second", 1}};
  auto sel = SelectUserPrompts(p);
  EXPECT_TRUE(sel.head.empty());
  ASSERT_EQ(sel.tail.size(), 2u);
  EXPECT_EQ(sel.tail[1].tokens, 2 + kPromptMediaTokens);
  EXPECT_FALSE(sel.elided());
}

TEST(UserPrompts, HeadAndTailWithBoundaryCuts) {
  // Ten prompts of 100 tokens (400 ASCII chars each); budget 350 with head 120.
  std::vector<UserPrompt> p;
  for (int i = 0; i < 10; ++i)
    p.push_back({std::string(1, 'e').append(std::to_string(i)),
                 std::string(400, static_cast<char>('a' + i)), 0});
  UserPromptOptions o;
  o.max_tokens = 350;
  o.head_tokens = 120;
  auto sel = SelectUserPrompts(p, o);
  // Tail budget 230: prompts 9 and 8 whole, prompt 7 cut to its last 30 tokens.
  ASSERT_EQ(sel.tail.size(), 3u);
  EXPECT_EQ(sel.tail[0].entry_id, "e7");
  EXPECT_EQ(sel.tail[0].cut, "tail");
  EXPECT_EQ(sel.tail[0].text, std::string(120, 'h'));
  EXPECT_EQ(sel.tail[2].entry_id, "e9");
  // Head budget 120: prompt 0 whole, prompt 1 cut to its first 20 tokens.
  ASSERT_EQ(sel.head.size(), 2u);
  EXPECT_EQ(sel.head[0].cut, "");
  EXPECT_EQ(sel.head[1].entry_id, "e1");
  EXPECT_EQ(sel.head[1].cut, "head");
  EXPECT_EQ(sel.head[1].text, std::string(80, 'b'));
  EXPECT_EQ(sel.total_tokens, 1000);
  EXPECT_EQ(sel.omitted_tokens, 1000 - 350);
  EXPECT_NE(ElisionMarkerText(sel.omitted_tokens).find("650 tokens"), std::string::npos);
}

TEST(UserPrompts, BoundaryBeginningCanFillTheHead) {
  // One huge prompt: the tail keeps its end, the head its beginning.
  std::vector<UserPrompt> p{{"only", std::string(4000, 'x') + std::string(4000, 'y'), 0}};
  UserPromptOptions o;
  o.max_tokens = 300;
  o.head_tokens = 100;
  auto sel = SelectUserPrompts(p, o);
  ASSERT_EQ(sel.tail.size(), 1u);
  EXPECT_EQ(sel.tail[0].text, std::string(800, 'y'));
  ASSERT_EQ(sel.head.size(), 1u);
  EXPECT_EQ(sel.head[0].text, std::string(400, 'x'));
  EXPECT_EQ(sel.head[0].cut, "head");
}

TEST(UserPrompts, SummaryTextHasPrefixAndFallback) {
  EXPECT_NE(UserPromptsSummaryText("  the summary \n").find("\nthe summary"), std::string::npos);
  EXPECT_NE(UserPromptsSummaryText("").find("(no summary available)"), std::string::npos);
}

}  // namespace
}  // namespace compactor
