// The JSON walk over tool-call arguments (ForEachJsonEntry, JsonStringValue):
// what the serialization and the offline summarizer's file and command
// tracking read from a call's arguments.
#include "summarize/text_util.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace compactor::summarize {
namespace {

using Entries = std::vector<std::pair<std::string, std::string>>;

Entries Walk(std::string_view json) {
  Entries out;
  ForEachJsonEntry(json, [&](std::string_view k, std::string_view v) {
    out.emplace_back(std::string(k), std::string(v));
  });
  return out;
}

TEST(ForEachJsonEntryTest, ObjectMembersInOrderWithRawValues) {
  EXPECT_EQ(Walk(R"({"path":"a.txt","limit":10,"flag":true,"none":null,"x":-1.5e3})"),
            (Entries{{"path", "\"a.txt\""},
                     {"limit", "10"},
                     {"flag", "true"},
                     {"none", "null"},
                     {"x", "-1.5e3"}}));
  EXPECT_EQ(Walk("{}"), Entries{});
}

TEST(ForEachJsonEntryTest, NestedValuesComeWhole) {
  EXPECT_EQ(Walk(R"({"edits":[{"old":"a","new":"]}"},[1,[2]]],"o":{"k":{"k2":"}"}},"z":0})"),
            (Entries{{"edits", R"([{"old":"a","new":"]}"},[1,[2]]])"},
                     {"o", R"({"k":{"k2":"}"}})"},
                     {"z", "0"}}));
}

TEST(ForEachJsonEntryTest, ValuesAsWrittenWithoutSurroundingWhitespace) {
  EXPECT_EQ(Walk(" { \"a\" : 1 ,\n\t\"b\" : [ 1 , 2 ] , \"c\" : \"x\" \r\n} "),
            (Entries{{"a", "1"}, {"b", "[ 1 , 2 ]"}, {"c", "\"x\""}}));
}

TEST(ForEachJsonEntryTest, KeysAreUnescapedValuesStayEscaped) {
  EXPECT_EQ(Walk(R"({"a\"b":"q\"uote","t\tab":"\\","\u00e9":"\u00e9","\ud83d\ude00":"\n"})"),
            (Entries{{"a\"b", R"("q\"uote")"},
                     {"t\tab", R"("\\")"},
                     {"\xC3\xA9", R"("\u00e9")"},
                     {"\xF0\x9F\x98\x80", R"("\n")"}}));
}

TEST(ForEachJsonEntryTest, LoneSurrogatesReadAsReplacementCharacterInKeys) {
  // JavaScript writes \ud83d alone when a string was cut inside an emoji.
  EXPECT_EQ(Walk(R"({"a\ud83d":"b\udc00","c":1})"),
            (Entries{{"a\xEF\xBF\xBD", R"("b\udc00")"}, {"c", "1"}}));
}

TEST(ForEachJsonEntryTest, DuplicateKeysAreAllReported) {
  EXPECT_EQ(Walk(R"({"k":1,"k":2})"), (Entries{{"k", "1"}, {"k", "2"}}));
}

TEST(ForEachJsonEntryTest, ArrayElementsAreNumbered) {
  EXPECT_EQ(Walk(R"([ "a", {"b":[]}, 3 ])"),
            (Entries{{"0", "\"a\""}, {"1", R"({"b":[]})"}, {"2", "3"}}));
  EXPECT_EQ(Walk("[]"), Entries{});
}

TEST(ForEachJsonEntryTest, StringGivesOneEntryPerCharacter) {
  EXPECT_EQ(Walk(R"("a\"\\\u00e9\ud83d\ude00")"), (Entries{{"0", "\"a\""},
                                                           {"1", R"("\"")"},
                                                           {"2", R"("\\")"},
                                                           {"3", "\"\xC3\xA9\""},
                                                           {"4", "\"\xF0\x9F\x98\x80\""}}));
  EXPECT_EQ(Walk(R"("x\ud800")"), (Entries{{"0", "\"x\""}, {"1", "\"\xEF\xBF\xBD\""}}));
  EXPECT_EQ(Walk(R"("")"), Entries{});
}

TEST(ForEachJsonEntryTest, ScalarsGiveNothing) {
  for (std::string_view json : {"1", "-2.5", "true", "false", "null", "", "   "}) {
    EXPECT_EQ(Walk(json), Entries{}) << json;
  }
}

TEST(ForEachJsonEntryTest, MalformedTextGivesNothingAtAll) {
  for (std::string_view json : {
           R"({"a":1,"b":)",       // cut after a key
           R"({"a":1,"b":"open)",  // unterminated string
           R"({"a":1 "b":2})",     // missing comma
           R"({"a":1,})",          // trailing comma
           R"({a:1})",             // unquoted key
           R"({"a":1}})",          // extra close
           R"({"a":1} x)",         // trailing text
           R"(["a",)",             // cut array
           R"("abc)",              // cut string
           R"("a\qb")",            // invalid escape
           "{\"a\":\"\xFF\"}",     // invalid UTF-8
           R"({"a\ud83d)",         // cut after a lone surrogate
       }) {
    EXPECT_EQ(Walk(json), Entries{}) << json;
  }
}

TEST(ForEachJsonEntryTest, CallbackMayParseJsonItself) {
  // The callback reuses the thread's parser; the walk must not be disturbed.
  std::vector<std::string> seen;
  ForEachJsonEntry(
      R"({"a":"x","b":{"c":"y"},"d":"z"})", [&](std::string_view k, std::string_view v) {
        if (auto s = JsonStringValue(v)) seen.push_back(std::string(k) + "=" + *s);
        ForEachJsonEntry(v, [&](std::string_view k2, std::string_view v2) {
          seen.push_back(std::string(k) + "." + std::string(k2) + "=" + std::string(v2));
        });
      });
  EXPECT_EQ(seen, (std::vector<std::string>{"a=x", "a.0=\"x\"", "b.c=\"y\"", "d=z", "d.0=\"z\""}));
}

TEST(ForEachJsonEntryTest, LargeValues) {
  std::string big(1 << 20, 'x');
  big[1000] = '"';  // escaped below
  std::string escaped;
  for (char c : big) {
    if (c == '"') escaped += '\\';
    escaped += c;
  }
  std::string json = R"({"path":"f","content":")" + escaped + R"(","n":1})";
  Entries e = Walk(json);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[1].second, "\"" + escaped + "\"");
  EXPECT_EQ(JsonStringValue(e[1].second), big);
}

TEST(JsonStringValueTest, Unescapes) {
  EXPECT_EQ(JsonStringValue(R"("a\"b\\c\/d\b\f\n\r\t")"), "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(JsonStringValue(R"("\u0041\u00e9\u4e2d\ud83d\ude00")"),
            "A\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
  EXPECT_EQ(JsonStringValue(R"("nul\u0000!")"), std::string("nul\0!", 5));
  EXPECT_EQ(JsonStringValue(R"( "spaced" )"), "spaced");
  EXPECT_EQ(JsonStringValue(R"("")"), "");
}

TEST(JsonStringValueTest, LoneSurrogatesBecomeReplacementCharacters) {
  EXPECT_EQ(JsonStringValue(R"("a\ud83d")"), "a\xEF\xBF\xBD");
  EXPECT_EQ(JsonStringValue(R"("\udc00b")"),
            "\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(JsonStringValue(R"("\ud800\u0041")"),
            "\xEF\xBF\xBD"
            "A");
  EXPECT_EQ(JsonStringValue(R"("\ud83d\ud83d\ude00")"), "\xEF\xBF\xBD\xF0\x9F\x98\x80");
}

TEST(JsonStringValueTest, NotAStringGivesNothing) {
  for (std::string_view json :
       {"1", "null", "{\"a\":\"b\"}", "[\"a\"]", "", "\"open", "\"a\" \"b\"", "\"a\\x\"", "'a'"}) {
    EXPECT_EQ(JsonStringValue(json), std::nullopt) << json;
  }
}

}  // namespace
}  // namespace compactor::summarize
