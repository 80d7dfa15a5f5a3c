// The estimate has a fast path (tool-call arguments measured from their raw
// tokens, no second parse) and the full path it falls back to. Wherever the
// fast path answers it must give the full path's number.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>

#include "compactor/estimate.h"
#include "tokens/estimate_internal.h"

namespace compactor {
namespace {

std::string Assistant(const std::string& arguments_json) {
  return R"({"role":"assistant","content":[{"type":"text","text":"hi"},)"
         R"({"type":"toolCall","id":"t1","name":"edit","arguments":)" +
         arguments_json + R"(}],"stopReason":"toolUse"})";
}

void ExpectAgree(const std::string& arguments, bool fast_expected) {
  std::string m = Assistant(arguments);
  auto fast = internal::EstimateMessageTokensFast(m);
  int64_t full = internal::EstimateMessageTokensFull(m);
  EXPECT_EQ(fast.has_value(), fast_expected) << arguments;
  if (fast) {
    EXPECT_EQ(*fast, full) << arguments;
  }
  EXPECT_EQ(EstimateMessageTokens(m), full) << arguments;
}

TEST(EstimateFast, MeasuresArgumentsAsJsonStringify) {
  // "hi" (2) + "edit" (4) + JSON.stringify({"path":"a b","n":12}) (21) = 27 -> 7
  auto fast = internal::EstimateMessageTokensFast(Assistant(R"({ "path" : "a b", "n" : 12 })"));
  ASSERT_TRUE(fast.has_value());
  EXPECT_EQ(*fast, 7);
  // Escapes as JSON.stringify writes them back: \/ -> /, \u0041 -> A, \u0001 stays, \n stays.
  // {"p":"/A\u0001\n"} is 18 units; 2 + 4 + 18 = 24 -> 6
  fast = internal::EstimateMessageTokensFast(Assistant(R"({"p":"\/\u0041\u0001\n"})"));
  ASSERT_TRUE(fast.has_value());
  EXPECT_EQ(*fast, 6);
}

TEST(EstimateFast, AgreesWithTheFullPathOnTrickyArguments) {
  ExpectAgree(R"({})", true);
  ExpectAgree(R"([])", true);
  ExpectAgree(R"("just a string")", true);
  ExpectAgree(R"(42)", true);
  ExpectAgree(R"(-0)", true);
  ExpectAgree(R"(null)", true);
  ExpectAgree(R"({"a":true,"b":false,"c":null,"d":[1,-2,[3,{"e":"f"}]]})", true);
  ExpectAgree(R"({"a":1,"a":22,"b":{"a":3,"a":"long value"}})", true);  // duplicates
  ExpectAgree(R"({"2":1,"1":2,"x":3})", true);                          // index keys reorder
  ExpectAgree(R"({"s":"\"\\\/\b\f\n\r\t"})", true);
  ExpectAgree(R"({"s":"\u0022\u005c\u002f\u0008\u000a\u001f\u007f\u00e9\u20ac"})", true);
  ExpectAgree(R"({"s":"\ud83d\ude00 pair","t":"😀 é ü 中文"})", true);
  ExpectAgree("{\"k\u00e9y\":\"v\"}", true);
  // Left to the full path.
  ExpectAgree(R"({"s":"lone \ud83d"})", false);
  ExpectAgree(R"({"s":"lone \ude00 low"})", false);
  ExpectAgree(R"({"a\u0062":1,"ab":2})", false);  // escaped key: duplicates need unescaping
  ExpectAgree(R"({"n":1.50})", false);
  ExpectAgree(R"({"n":1e3})", false);
  ExpectAgree(R"({"n":12345678901234567890})", false);
  ExpectAgree(R"({"n":1e400})", false);
}

// Random argument objects: nesting, duplicate keys, escapes of every kind,
// numbers of every shape, whitespace. Fast and full must agree wherever the
// fast path answers, and it must answer on the common shapes.
TEST(EstimateFast, AgreesWithTheFullPathOnRandomArguments) {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const char* pieces[] = {"a",   "é",       "😀",       "\\n",     "\\\"",           "\\\\",
                          "\\/", "\\u0041", "\\u00e9", "\\u0007", "\\ud83d\\ude00", "\\t",
                          " ",   "中",      "\\u2028"};
  const char* numbers[] = {"0", "-0", "7", "-12", "123456789012345", "1.5", "2e3", "-0.0"};
  std::function<std::string(int)> value = [&](int depth) -> std::string {
    int kind = depth > 3 ? pick(3) : pick(5);
    switch (kind) {
      case 0: {
        std::string s = "\"";
        for (int i = pick(6); i > 0; --i) s += pieces[pick(std::size(pieces))];
        return s + "\"";
      }
      case 1:
        return numbers[pick(std::size(numbers))];
      case 2:
        return pick(2) ? "true" : (pick(2) ? "false" : "null");
      case 3: {
        std::string s = "[";
        for (int i = pick(4); i > 0; --i) s += value(depth + 1) + (i > 1 ? " , " : "");
        return s + "]";
      }
      default: {
        std::string s = "{";
        for (int i = pick(5); i > 0; --i) {
          s += "\"k" + std::to_string(pick(4)) + "\" :" + value(depth + 1) + (i > 1 ? "," : "");
        }
        return s + "}";
      }
    }
  };
  int answered = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string args = "{" + std::string("\"path\":") + value(1) + "}";
    std::string m = Assistant(args);
    auto fast = internal::EstimateMessageTokensFast(m);
    int64_t full = internal::EstimateMessageTokensFull(m);
    if (fast) {
      ++answered;
      ASSERT_EQ(*fast, full) << args;
    }
    ASSERT_EQ(EstimateMessageTokens(m), full) << args;
  }
  EXPECT_GT(answered, 1500);
}

TEST(EstimateFast, OtherRolesAndShapesMatch) {
  const char* messages[] = {
      R"({"role":"user","content":"abcde"})",
      R"({"role":"user","content":[{"type":"text","text":"ab"},{"type":"image","data":"x"}]})",
      R"({"role":"toolResult","content":[{"type":"image","data":"x"},{"type":"text","text":"ab"}]})",
      R"({"role":"bashExecution","command":"ls","output":"a\nb"})",
      R"({"role":"compactionSummary","summary":"sum"})",
      R"({"role":"branchSummary","summary":["a","b"]})",
      R"({"role":"custom","content":"x","customType":"n"})",
      R"({"role":"developer","content":"ignored"})",
      R"({"role":"assistant","content":[1,"x",{"type":"thinking","thinking":"t"}]})",
      R"({"role":"assistant","content":[{"type":7,"text":"t"}]})",
      R"({"content":"x","role":"user","role":"assistant"})",
  };
  for (const char* m : messages) {
    auto fast = internal::EstimateMessageTokensFast(m);
    int64_t full = internal::EstimateMessageTokensFull(m);
    if (fast) {
      EXPECT_EQ(*fast, full) << m;
    }
    EXPECT_EQ(EstimateMessageTokens(m), full) << m;
  }
}

}  // namespace
}  // namespace compactor
