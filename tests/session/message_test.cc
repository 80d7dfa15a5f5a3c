// ParseMessage: tool-call arguments are kept as JSON.stringify(JSON.parse(x)).
#include "compactor/message.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "compactor/js_json.h"

namespace compactor {
namespace {

std::string ArgumentsOf(const std::string& args) {
  auto m = ParseMessage(R"({"role":"assistant","content":[{"type":"toolCall","id":"c","name":"x",)"
                        R"("arguments":)" +
                        args + "}]}");
  EXPECT_TRUE(m.ok()) << args;
  if (!m.ok() || m->content.empty()) return "<none>";
  return m->content[0].arguments_json;
}

// A random JSON value: nested containers, repeated and integer-like keys,
// numbers JavaScript prints its own way, escapes and non-ASCII text.
std::string RandomJson(std::mt19937& rng, int depth) {
  static const std::vector<std::string> kScalars = {"0",
                                                    "-0",
                                                    "1e21",
                                                    "1E-7",
                                                    "0.1",
                                                    "12345678901234567",
                                                    "true",
                                                    "false",
                                                    "null",
                                                    R"("a\"b")",
                                                    R"("tab\there")",
                                                    R"("\u00e9t\u00e9 é")",
                                                    R"("\ud83d\ude00")",
                                                    R"("\/slash")",
                                                    "-12.50",
                                                    "9007199254740993"};
  static const std::vector<std::string> kKeys = {"path", "b", "a", "10", "2", "01", "é", "path"};
  const unsigned kind = depth > 2 ? 0 : rng() % 3;
  if (kind == 0) return kScalars[rng() % kScalars.size()];
  std::string out = kind == 1 ? "{" : "[";
  const unsigned n = rng() % 4;
  for (unsigned i = 0; i < n; ++i) {
    if (i) out += ", ";
    if (kind == 1) out += "\"" + kKeys[rng() % kKeys.size()] + "\" : ";
    out += RandomJson(rng, depth + 1);
  }
  return out + (kind == 1 ? "}" : "]");
}

TEST(Message, ToolCallArgumentsAreCanonicalJson) {
  const std::vector<std::string> fixed = {
      R"({"path":"a.ts","path":"b.ts"})",    // the last value, at the first position
      R"({"b":1,"10":2,"2":3,"a":4})",       // integer-like keys first, ascending
      R"({ "x" : [ 1 , 2.0 , 1.5e300 ] })",  // spacing dropped; numbers as JavaScript prints them
      R"("just a string")",
      R"([])",
      R"({})",
      R"(null)"};
  for (const std::string& args : fixed) {
    auto canonical = JsCanonicalJson(args);
    ASSERT_TRUE(canonical.ok()) << args;
    EXPECT_EQ(ArgumentsOf(args), *canonical) << args;
  }
  EXPECT_EQ(ArgumentsOf(R"({"b":1,"10":2,"2":3,"a":4})"), R"({"2":3,"10":2,"b":1,"a":4})");
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string args = "{\"k\":" + RandomJson(rng, 0) + "}";
    auto canonical = JsCanonicalJson(args);
    ASSERT_TRUE(canonical.ok()) << args;
    EXPECT_EQ(ArgumentsOf(args), *canonical) << args;
  }
}

}  // namespace
}  // namespace compactor
