#include "compactor/js_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "compactor/message.h"
#include "util/json_scan.h"
#include "util/utf8.h"

namespace compactor {
namespace {

TEST(JsNumber, MatchesJavaScriptToString) {
  EXPECT_EQ(JsNumber(0), "0");
  EXPECT_EQ(JsNumber(-0.0), "0");
  EXPECT_EQ(JsNumber(1), "1");
  EXPECT_EQ(JsNumber(-42), "-42");
  EXPECT_EQ(JsNumber(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(JsNumber(0.009000000000000001), "0.009000000000000001");
  EXPECT_EQ(JsNumber(1e21), "1e+21");
  EXPECT_EQ(JsNumber(1e20), "100000000000000000000");
  EXPECT_EQ(JsNumber(1e-7), "1e-7");
  EXPECT_EQ(JsNumber(1.5e-7), "1.5e-7");
  EXPECT_EQ(JsNumber(0.000001), "0.000001");
  EXPECT_EQ(JsNumber(123.456), "123.456");
  EXPECT_EQ(JsNumber(1767261601000), "1767261601000");
  EXPECT_EQ(JsNumber(std::nan("")), "null");
  EXPECT_EQ(JsNumber(INFINITY), "null");
  EXPECT_EQ(JsNumber(1.7976931348623157e308), "1.7976931348623157e+308");
}

TEST(JsString, EscapesLikeJsonStringify) {
  std::string out;
  AppendJsString(out, std::string("a\"b\\c\n\t\b\f\r\x01/\xE2\x80\xA8\xF0\x9F\x98\x80", 19));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\t\\b\\f\\r\\u0001/\xE2\x80\xA8\xF0\x9F\x98\x80\"");
  out.clear();
  AppendJsString(out, "bad\xFFutf8");
  EXPECT_EQ(out, "\"bad\xEF\xBF\xBDutf8\"");
}

// The escaper skips words of 8 bytes without an escape: every byte that
// needs one, at every position of a word and near the ends, next to bytes
// that need none (ASCII just above and below the special ones, UTF-8).
TEST(JsString, EscapesAtEveryPositionOfLongStrings) {
  auto slow = [](std::string_view s) {  // byte by byte, as JSON.stringify
    std::string out = "\"";
    for (unsigned char c : s) {
      if (c == '"') {
        out += "\\\"";
      } else if (c == '\\') {
        out += "\\\\";
      } else if (c == '\b') {
        out += "\\b";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\f') {
        out += "\\f";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
    return out + "\"";
  };
  const std::string specials = std::string("\"\\\n\t\x01\x1f", 6) + std::string(1, '\0');
  const std::string fillers[] = {"abcdefghijklmnopqrstuvwxyz0123", "!#[]^_`{}~ !#[]^_`{}~!#[]^_`{",
                                 "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xC3\xA9\xE2\x82\xAC"};
  for (const std::string& filler : fillers) {
    for (size_t len = 0; len <= filler.size(); ++len) {
      for (size_t at = 0; at <= len; ++at) {
        for (char special : specials) {
          std::string s = filler.substr(0, len);
          s.insert(at, 1, special);
          if (at + 9 <= s.size()) s.insert(at + 9, 1, special);  // two in nearby words
          if (!internal::IsValidUtf8(s)) continue;               // a cut through a UTF-8 sequence
          std::string out;
          AppendJsString(out, s);
          ASSERT_EQ(out, slow(s)) << "filler " << filler << ", length " << len << ", at " << at;
        }
      }
      if (!internal::IsValidUtf8(filler.substr(0, len))) continue;
      std::string plain;
      AppendJsString(plain, filler.substr(0, len));
      EXPECT_EQ(plain, "\"" + filler.substr(0, len) + "\"");
    }
  }
}

TEST(JsCanonical, ReordersIntegerKeysAndCollapsesDuplicates) {
  auto r = JsCanonicalJson(
      R"( {"b": 1, "10": 2, "2": 3, "a": {"x": [1.0, 2e0, -0]}, "b": 4, "01": 5} )");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, R"({"2":3,"10":2,"b":4,"a":{"x":[1,2,0]},"01":5})");
  auto bad = JsCanonicalJson("{nope");
  EXPECT_FALSE(bad.ok());
}

// Numbers simdjson refuses but JSON.parse reads (checked against node): huge
// integers become the nearest double, huge magnitudes Infinity (printed null);
// the same digits inside strings stay as they are.
TEST(JsCanonical, ReadsNumbersBeyondSimdjsonsRangeLikeJsonParse) {
  const std::string in =
      R"([123456789012345678901,-9223372036854775809,1e400,-1e400,18446744073709551615,)"
      R"(9007199254740993,"x 1e400 123456789012345678901",{"a":1E-400,"b":"\"-99999999999999999999"}])";
  auto out = JsCanonicalJson(in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(
      *out,
      R"([123456789012345680000,-9223372036854776000,null,null,18446744073709552000,)"
      R"(9007199254740992,"x 1e400 123456789012345678901",{"a":0,"b":"\"-99999999999999999999"}])");
  // A message holding such a number parses instead of being dropped.
  auto m = ParseMessage(R"({"role":"assistant","content":[{"type":"toolCall","id":"c","name":"x",)"
                        R"("arguments":{"id":123456789012345678901}}]})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->content[0].arguments_json, R"({"id":123456789012345680000})");
  // The edge of a double, integers too long for one, zero and tiny exponents
  // (checked against node's JSON.stringify(JSON.parse(x))).
  const std::string zeros292(292, '0'), zeros291(291, '0');
  auto edge = JsCanonicalJson("[1.7976931348623157e308,1.8e308,-1.8e308,17976931348623157" +
                              zeros292 + ",179769313486231581" + zeros291 +
                              ",0.0000e500,1e-400,12345678901234567890123]");
  ASSERT_TRUE(edge.ok()) << edge.status().ToString();
  EXPECT_EQ(*edge,
            "[1.7976931348623157e+308,null,null,1.7976931348623157e+308,null,0,0,"
            "1.2345678901234568e+22]");
  // Both repairs at once: a huge number before a lone surrogate.
  auto both = ParseMessage(R"({"role":"user","n":1e400,"content":"a\ud800b"})");
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(both->content_string,
            "a\xEF\xBF\xBD"
            "b");
  std::string repaired;
  EXPECT_FALSE(internal::ReplaceOutOfRangeNumbers(R"([1,-2,3.5e10,18446744073709551615,"9e999"])",
                                                  &repaired));
}

TEST(JsCanonical, LengthCountsUtf16Units) {
  auto n = JsCanonicalLength(R"({"path":"😀é"})");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 9 + 2 + 1 + 2);
}

TEST(IsoTimestamp, ParsesLikeDateParse) {
  EXPECT_EQ(ParseIsoTimestampMs("2026-11-22T13:00:07.436Z"), 1795352407436.0);
  EXPECT_EQ(ParseIsoTimestampMs("1970-01-01T00:00:00Z"), 0.0);
  EXPECT_EQ(ParseIsoTimestampMs("1970-01-01T01:00:00+01:00"), 0.0);
  EXPECT_EQ(ParseIsoTimestampMs("2026-11-22"), 1795305600000.0);
  EXPECT_TRUE(std::isnan(ParseIsoTimestampMs("yesterday")));
  EXPECT_TRUE(std::isnan(ParseIsoTimestampMs("2026-13-01T00:00:00Z")));
  EXPECT_EQ(FormatIsoTimestamp(1795352407436), "2026-11-22T13:00:07.436Z");
  EXPECT_EQ(FormatIsoTimestamp(0), "1970-01-01T00:00:00.000Z");
}

TEST(Utf8, ReplacesInvalidSequencesLikeNode) {
  using internal::ReplaceInvalidUtf8;
  EXPECT_EQ(ReplaceInvalidUtf8("ok"), "ok");
  EXPECT_EQ(ReplaceInvalidUtf8("\xC3"), "\xEF\xBF\xBD");
  EXPECT_EQ(ReplaceInvalidUtf8("\xE2\x82x"), "\xEF\xBF\xBDx");  // truncated 3-byte: one U+FFFD
  EXPECT_EQ(ReplaceInvalidUtf8("\xED\xA0\x80"),
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(ReplaceInvalidUtf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(Utf8, JsonStringTokenLength) {
  using internal::JsonStringTokenUtf16Length;
  EXPECT_EQ(JsonStringTokenUtf16Length(R"("abc")"), 3);
  EXPECT_EQ(JsonStringTokenUtf16Length(R"("a\"b\\c\n")"), 6);
  EXPECT_EQ(JsonStringTokenUtf16Length(R"("\ud83d\ude00")"), 2);
  EXPECT_EQ(JsonStringTokenUtf16Length("\"\xF0\x9F\x98\x80\xC3\xA9\""), 3);
  EXPECT_EQ(JsonStringTokenUtf16Length(R"("unterminated)"), -1);
}

TEST(Utf8, LoneSurrogateEscapesAreReplacedInPlace) {
  std::string in = R"({"t":"a\ud83d","ok":"\ud83d\ude00","lo":"\ude00"})";
  EXPECT_TRUE(internal::HasLoneSurrogateEscape(in));
  std::string out = internal::ReplaceLoneSurrogateEscapes(in);
  EXPECT_EQ(out, R"({"t":"a\ufffd","ok":"\ud83d\ude00","lo":"\ufffd"})");
  EXPECT_EQ(out.size(), in.size());
  EXPECT_FALSE(internal::HasLoneSurrogateEscape(out));
}

TEST(JsonScan, FindsRemovesAndSetsMembers) {
  using namespace internal;
  std::string j =
      R"({"type":"compaction","summary":"a,}b","firstKeptEntryIndex":3,"nested":{"x":[1,{"y":2}]}})";
  EXPECT_EQ(FindMember(j, "firstKeptEntryIndex"), "3");
  EXPECT_EQ(FindMember(j, "nested"), R"({"x":[1,{"y":2}]})");
  EXPECT_EQ(FindMember(j, "missing"), "");
  EXPECT_EQ(RemoveMember(j, "firstKeptEntryIndex"),
            R"({"type":"compaction","summary":"a,}b","nested":{"x":[1,{"y":2}]}})");
  EXPECT_EQ(RemoveMember(j, "nested"),
            R"({"type":"compaction","summary":"a,}b","firstKeptEntryIndex":3})");
  EXPECT_EQ(SetMember(j, "type", "\"x\""),
            R"({"type":"x","summary":"a,}b","firstKeptEntryIndex":3,"nested":{"x":[1,{"y":2}]}})");
  EXPECT_EQ(SetMember(R"({"a":1})", "id", "\"q\""), R"({"a":1,"id":"q"})");
  EXPECT_EQ(SetMember("{}", "id", "1"), R"({"id":1})");
}

// Strings are skipped quote to quote: escaped quotes and runs of backslashes
// before a quote decide where a string ends.
TEST(JsonScan, StringsWithEscapedQuotesAndBackslashes) {
  using namespace internal;
  const std::string j =
      R"({"a":"x\"y","b":"\\","c":"\\\"}\\","d":"","e":["\"",{"k":"v\\"}],"f":1})";
  EXPECT_EQ(FindMember(j, "a"), R"("x\"y")");
  EXPECT_EQ(FindMember(j, "b"), R"("\\")");
  EXPECT_EQ(FindMember(j, "c"), R"("\\\"}\\")");
  EXPECT_EQ(FindMember(j, "d"), R"("")");
  EXPECT_EQ(FindMember(j, "e"), R"(["\"",{"k":"v\\"}])");
  EXPECT_EQ(FindMember(j, "f"), "1");
  const std::vector<JsonMember> members = ScanObjectMembers(j);
  ASSERT_EQ(members.size(), 6u);
  EXPECT_EQ(members[2].raw_key, "c");
  // An unterminated string runs to the end.
  EXPECT_EQ(FindMember(R"({"a":"never closed)", "a"), R"("never closed)");
}

}  // namespace
}  // namespace compactor
