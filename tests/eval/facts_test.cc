#include <gtest/gtest.h>

#include "compactor/eval.h"

namespace compactor {
namespace {

TEST(FactKindTest, NamesRoundTrip) {
  for (int i = 0; i < kFactKindCount; ++i) {
    FactKind k = static_cast<FactKind>(i);
    auto parsed = ParseFactKind(FactKindName(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
  }
  EXPECT_FALSE(ParseFactKind("goals").ok());
}

TEST(FactFileTest, JsonRoundTrip) {
  FactFile file;
  file.session = "eval-0001.jsonl";
  file.source = "generated";
  file.seed = 7;
  Fact a;
  a.id = "d1";
  a.kind = FactKind::kDecision;
  a.text = "store the counters in Redis";
  a.variants = {"counters in redis"};
  a.superseded_by = "d2";
  a.entry_id = "abcd0123";
  Fact b;
  b.id = "d2";
  b.kind = FactKind::kCommand;
  b.text = "pnpm build";
  b.qualifiers = {{"exit 0", "ok"}};
  b.exit_code = 0;
  Fact c;
  c.id = "e1";
  c.kind = FactKind::kError;
  c.text = "TypeError: x is \"undefined\" \xc3\xa9";
  c.fixed = false;
  file.facts = {a, b, c};
  std::string json = FactFileToJson(file);
  auto back = ParseFactFile(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->session, file.session);
  EXPECT_EQ(back->seed, 7u);
  ASSERT_EQ(back->facts.size(), 3u);
  EXPECT_EQ(back->facts[0].superseded_by, "d2");
  EXPECT_EQ(back->facts[0].variants, a.variants);
  EXPECT_EQ(back->facts[1].qualifiers, b.qualifiers);
  EXPECT_EQ(back->facts[1].exit_code, 0);
  EXPECT_FALSE(back->facts[1].fixed.has_value());
  EXPECT_EQ(back->facts[2].text, c.text);
  EXPECT_EQ(back->facts[2].fixed, false);
  EXPECT_EQ(FactFileToJson(*back), json);
}

TEST(FactFileTest, RejectsBadFiles) {
  EXPECT_FALSE(ParseFactFile("[]").ok());
  EXPECT_FALSE(ParseFactFile("{\"facts\": 3}").ok());
  EXPECT_FALSE(ParseFactFile("{\"facts\":[{\"id\":\"a\",\"kind\":\"nope\",\"text\":\"x\"}]}").ok());
  EXPECT_FALSE(ParseFactFile("{\"facts\":[{\"id\":\"a\",\"kind\":\"goal\",\"text\":\"\"}]}").ok());
  auto dangling = ParseFactFile(
      "{\"facts\":[{\"id\":\"a\",\"kind\":\"goal\",\"text\":\"x\",\"supersededBy\":\"zz\"}]}",
      "f.json");
  ASSERT_FALSE(dangling.ok());
  EXPECT_NE(dangling.status().message().find("zz"), std::string::npos);
  EXPECT_FALSE(ParseFactFile("{not json").ok());
}

TEST(FactFileTest, StatusAndSplitRoundTrip) {
  FactFile file;
  file.session = "ind-0004.jsonl";
  file.source = "generated-independent";
  file.split = "held-out";
  Fact step;
  step.id = "n1";
  step.kind = FactKind::kNextStep;
  step.text = "add a CHANGELOG entry";
  step.status = "done";
  Fact value;
  value.id = "v1";
  value.kind = FactKind::kValue;
  value.text = "58213 ns/op";
  file.facts = {step, value};
  auto back = ParseFactFile(FactFileToJson(file));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->split, "held-out");
  EXPECT_EQ(back->facts[0].status, "done");
  EXPECT_EQ(back->facts[1].kind, FactKind::kValue);
  EXPECT_EQ(back->facts[1].status, "");
  EXPECT_FALSE(ParseFactFile(R"({"split": "later", "facts": []})").ok());
  EXPECT_FALSE(
      ParseFactFile(R"({"facts": [{"id": "a", "kind": "goal", "text": "x", "status": "maybe"}]})")
          .ok());
}

}  // namespace
}  // namespace compactor
