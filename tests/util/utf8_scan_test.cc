// ScanJsonStringBody counts escapes from per-position comparisons (64 bytes
// at a time where the CPU allows); check it against walking the escapes one
// by one, on strings whose escapes fall across block boundaries.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "util/utf8.h"

namespace compactor::internal {
namespace {

struct Walked {
  int64_t escapes = 0, u = 0, slash = 0, controls = 0;
};

Walked Walk(std::string_view body) {
  Walked w;
  for (size_t i = 0; i < body.size(); ++i) {
    if (static_cast<unsigned char>(body[i]) < 0x20) ++w.controls;
    if (body[i] != '\\' || i + 1 >= body.size()) continue;
    ++w.escapes;
    if (body[i + 1] == 'u') ++w.u;
    if (body[i + 1] == '/') ++w.slash;
    ++i;  // the escaped character
  }
  return w;
}

int MaxBackslashRun(std::string_view body) {
  int best = 0, run = 0;
  for (char c : body) {
    run = c == '\\' ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

TEST(ScanJsonStringBody, MatchesAnEscapeWalk) {
  std::mt19937 rng(11);
  const char* pieces[] = {"a",    "é",  "😀",   "\\n",   "\\\\",  "\\u00e9", "\\/",
                          "\\\"", "\t", "xyz", "\\\\u", "\\\\/", "\\\\\\n", "中"};
  int checked = 0, with_long_runs = 0;
  for (int k = 0; k < 4000; ++k) {
    std::string body;
    const int count = static_cast<int>(rng() % 50);
    for (int i = 0; i < count; ++i) body += pieces[rng() % std::size(pieces)];
    JsonStringBodyScan scan = ScanJsonStringBody(body);
    ASSERT_EQ(scan.units, Utf16LengthValid(body)) << body;
    ASSERT_EQ(scan.long_runs, MaxBackslashRun(body) >= 3) << body;
    Walked w = Walk(body);
    ASSERT_EQ(scan.controls, w.controls) << body;
    if (scan.long_runs) {
      ++with_long_runs;
      continue;
    }
    ASSERT_EQ(scan.escapes, w.escapes) << body;
    ASSERT_EQ(scan.u_escapes, w.u) << body;
    ASSERT_EQ(scan.slash_escapes, w.slash) << body;
    ++checked;
  }
  EXPECT_GT(checked, 500);
  EXPECT_GT(with_long_runs, 100);
}

TEST(ScanJsonStringBody, TokenLengthAgreesAcrossBlockBoundaries) {
  // The same escapes at every offset around the 64-byte blocks.
  for (size_t pad = 0; pad < 140; ++pad) {
    std::string body(pad, 'x');
    body += "\\\\u\\u00e9\\n\\\\\\\\\\/";  // \\u \u00e9 \n \\ \\ \/
    std::string token = "\"" + body + "\"";
    // pad + (\\ u) 2 + é 1 + \n 1 + \\ 1 + \\ 1 + / 1
    EXPECT_EQ(JsonStringTokenUtf16Length(token), static_cast<int64_t>(pad) + 7) << pad;
  }
}

}  // namespace
}  // namespace compactor::internal
