// The UTF-8 module against JavaScript: tests/util/utf8_js_cases.txt holds, for
// byte strings with valid and invalid UTF-8, the length Node gives the decoded
// string (String.length after TextDecoder's repair) and the repaired bytes
// (written by scripts/gen_utf8_js_cases.mjs; this test does not need node).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compactor/estimate.h"
#include "summarize/text_util.h"
#include "util/utf8.h"

namespace compactor::internal {
namespace {

struct JsCase {
  std::string input;
  int64_t length = 0;
  std::string repaired;
};

std::string FromHex(const std::string& hex) {
  if (hex == "-") return "";
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::vector<JsCase> LoadCases() {
  std::ifstream in(std::string(COMPACTOR_SOURCE_DIR) + "/tests/util/utf8_js_cases.txt");
  std::vector<JsCase> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string input, repaired;
    JsCase c;
    fields >> input >> c.length >> repaired;
    c.input = FromHex(input);
    c.repaired = FromHex(repaired);
    out.push_back(c);
  }
  return out;
}

std::string Hex(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += "0123456789abcdef"[c >> 4], out += "0123456789abcdef"[c & 15];
  return out;
}

TEST(Utf8Js, CasesAreThere) { EXPECT_GT(LoadCases().size(), 400u); }

TEST(Utf8Js, LengthIsJavaScriptsAfterTextDecoder) {
  for (const JsCase& c : LoadCases()) {
    EXPECT_EQ(Utf16Length(c.input), c.length) << Hex(c.input);
    EXPECT_EQ(compactor::Utf16Length(c.input), c.length) << Hex(c.input);
    // The summarizers cut text by the same count.
    int64_t units = -1;
    EXPECT_EQ(summarize::Utf8PrefixForUnits(c.input, c.length, &units), c.input.size())
        << Hex(c.input);
    EXPECT_EQ(units, c.length) << Hex(c.input);
  }
}

TEST(Utf8Js, RepairIsTextDecoders) {
  for (const JsCase& c : LoadCases()) {
    EXPECT_EQ(Hex(ReplaceInvalidUtf8(c.input)), Hex(c.repaired)) << Hex(c.input);
    const bool valid = c.repaired == c.input;
    EXPECT_EQ(IsValidUtf8(c.input), valid) << Hex(c.input);
    EXPECT_EQ(FindInvalidUtf8(c.input) == std::string_view::npos, valid) << Hex(c.input);
    // Decoding step by step gives the repaired text, code point by code point.
    std::string decoded;
    for (size_t i = 0; i < c.input.size();) {
      uint32_t cp;
      size_t len = DecodeUtf8(c.input, i, &cp);
      ASSERT_GE(len, 1u);
      AppendUtf8(decoded, cp);
      i += len;
    }
    EXPECT_EQ(Hex(decoded), Hex(c.repaired)) << Hex(c.input);
  }
}

TEST(Utf8Js, FindInvalidPointsAtTheFirstBadSequence) {
  EXPECT_EQ(FindInvalidUtf8("plain \xEF\xBF\xBD ok"), std::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("0123456789\xC3"), 10u);
  EXPECT_EQ(FindInvalidUtf8("\xC3\xA9\xE2\x82x"), 2u);
}

TEST(Utf8Js, EncodesCodePoints) {
  std::string s;
  for (uint32_t cp : {0x41u, 0xE9u, 0x20ACu, 0x1F600u}) AppendUtf8(s, cp);
  EXPECT_EQ(s, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  uint16_t units[2];
  ASSERT_EQ(ToUtf16(0x1F600, units), 2);
  EXPECT_EQ(units[0], 0xD83D);
  EXPECT_EQ(units[1], 0xDE00);
  ASSERT_EQ(ToUtf16(0xE9, units), 1);
  EXPECT_EQ(units[0], 0xE9);
}

}  // namespace
}  // namespace compactor::internal
