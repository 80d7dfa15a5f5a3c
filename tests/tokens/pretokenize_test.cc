// The hand-written pre-tokenizers against PCRE2 running the literal upstream
// patterns, on hand-picked cases and on a large random corpus.
#include "tokens/pretokenize.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "support/pcre2_splitter.h"
#include "support/sample_corpus.h"
#include "tokens/unicode_classes.h"
#include "util/utf8.h"

namespace compactor::tokens {
namespace {

std::string Show(const std::vector<std::string_view>& pieces) {
  std::string out;
  for (auto p : pieces) {
    out += "[";
    for (unsigned char c : p) {
      if (c >= 0x20 && c < 0x7F) {
        out += static_cast<char>(c);
      } else {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\x%02X", c);
        out += buf;
      }
    }
    out += "]";
  }
  return out;
}

// PCRE2's view of each code point's class, probed with the same \p classes
// the patterns use.
class Pcre2Classes {
 public:
  Pcre2Classes() {
    const char* patterns[] = {"[\\p{Lu}\\p{Lt}]", "\\p{Ll}", "[\\p{Lm}\\p{Lo}]",
                              "\\p{M}",           "\\p{N}",  "\\s"};
    for (const char* p : patterns) probes_.push_back(Pcre2Splitter::CreateForPattern(p).value());
  }
  CharClass Of(uint32_t cp) {
    std::string s;
    compactor::internal::AppendUtf8(s, cp);
    for (size_t i = 0; i < probes_.size(); ++i) {
      if (probes_[i]->MatchesAtStart(s)) return static_cast<CharClass>(i + 1);
    }
    return kOther;
  }

 private:
  std::vector<std::unique_ptr<Pcre2Splitter>> probes_;
};

// Code points whose class differs between our Unicode 16 table and PCRE2's
// Unicode 14. Computed once.
const std::set<uint32_t>& ClassDifferences() {
  static const std::set<uint32_t> diffs = [] {
    std::set<uint32_t> d;
    Pcre2Classes pcre;
    for (uint32_t cp = 0; cp < 0x110000; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      if (pcre.Of(cp) != ClassOf(cp)) d.insert(cp);
    }
    return d;
  }();
  return diffs;
}

TEST(TokenizerUnicodeClassesTest, AgreeWithPcre2ExceptNewerUnicode) {
  Pcre2Classes pcre;
  const auto& diffs = ClassDifferences();
  // Expected differences: characters assigned after Unicode 14 (unassigned,
  // hence "other", in PCRE2 10.42), plus a handful of general-category changes.
  size_t newly_assigned = 0, recategorized = 0;
  for (uint32_t cp : diffs) {
    if (pcre.Of(cp) == kOther) {
      ++newly_assigned;
    } else {
      ++recategorized;
    }
  }
  // NEL is \s in both (Rust: White_Space; PCRE2 10.42 with UCP likewise).
  EXPECT_FALSE(diffs.count(0x85));
  EXPECT_EQ(ClassOf(0x85), kSpace);
  // Unicode 15.0 + 15.1 + 16.0 added ~10,500 letters/marks/numbers (CJK
  // extensions H and I alone: 4,192 + 622).
  EXPECT_GT(newly_assigned, 5000u);
  EXPECT_LT(newly_assigned, 14000u);
  EXPECT_LT(recategorized, 40u) << "unexpected number of category changes";
  printf("class differences vs PCRE2: %zu newly assigned, %zu recategorized\n", newly_assigned,
         recategorized);
  // Spot checks of the table itself.
  EXPECT_EQ(ClassOf('A'), kUpper);
  EXPECT_EQ(ClassOf('z'), kLower);
  EXPECT_EQ(ClassOf(0x01C5), kUpper);        // Lt
  EXPECT_EQ(ClassOf(0x02B0), kLetterOther);  // Lm
  EXPECT_EQ(ClassOf(0x4E00), kLetterOther);  // Lo
  EXPECT_EQ(ClassOf(0x0301), kMark);
  EXPECT_EQ(ClassOf(0x2163), kNumber);  // Nl
  EXPECT_EQ(ClassOf(0x3000), kSpace);
  EXPECT_EQ(ClassOf(0x200B), kOther);         // ZWSP is Cf, not White_Space
  EXPECT_EQ(ClassOf(0x11380), kLetterOther);  // Tulu-Tigalari, new in 16.0
  EXPECT_EQ(pcre.Of(0x11380), kOther);
}

void ExpectSameSplit(Encoding enc, Pcre2Splitter& ref, std::string_view text) {
  auto fast = SplitFast(enc, text);
  auto want = ref.Split(text);
  ASSERT_EQ(Show(fast), Show(want)) << EncodingName(enc) << " on " << Show({text});
}

class PreTokenizerTest : public ::testing::TestWithParam<Encoding> {};

TEST_P(PreTokenizerTest, HandPickedCases) {
  auto ref = Pcre2Splitter::Create(GetParam());
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  for (auto doc : SyntheticCorpus(1)) {
    if (doc.kind != "edge") continue;
    ExpectSameSplit(GetParam(), **ref, doc.text);
  }
  for (std::string_view t : {"Hello, world! It's 2026.",
                             "HELLO'S world'S",
                             "  leading",
                             "trailing  ",
                             "a\r\nb",
                             "x\n \n y",
                             "über ÜBER Über",
                             "ǅemal ǅEMAL",
                             "ʰello",
                             "e\xCC\x81\xCC\x81x",
                             "\xCC\x81",
                             " \xCC\x81",
                             "1234567",
                             "a1b22c333d4444",
                             "foo//bar\n//\n",
                             "!!!\n\n\r\n",
                             "  \t\n",
                             "'s's's",
                             "x'Re x'rE x'LL",
                             "日本語のテキスト。",
                             "\xE3\x80\x80\xE3\x80\x80x"}) {
    ExpectSameSplit(GetParam(), **ref, t);
  }
}

// Random strings over an alphabet of characters that matter to the patterns,
// plus random code points; characters whose class differs between the two
// Unicode versions are left out (covered by the golden test instead).
TEST_P(PreTokenizerTest, RandomCorpusMatchesPcre2) {
  auto ref = Pcre2Splitter::Create(GetParam());
  ASSERT_TRUE(ref.ok());
  const auto& diffs = ClassDifferences();
  static constexpr uint32_t kAlphabet[] = {
      'a',    'b',    's',    't',    'r',     'e',     'v',    'm',    'l',    'd',    'x',
      'A',    'S',    'T',    'R',    'E',     'L',     'D',    'Z',    '\'',   '\'',   ' ',
      ' ',    ' ',    '\t',   '\r',   '\n',    '/',     '0',    '7',    '.',    '!',    '-',
      '"',    '{',    0x017F, 0x00E9, 0x00C9,  0x01C5,  0x02B0, 0x4E00, 0x3042, 0x0627, 0x0301,
      0x0903, 0x20DD, 0xFE0F, 0x200D, 0x00BD,  0x2163,  0x0663, 0xFF11, 0x00A0, 0x3000, 0x2028,
      0x2029, 0x1680, 0x200B, 0xFEFF, 0x1F600, 0x1F3FD, 0x000B, 0x000C, 0x001C, 0x212A, 0x0130};
  SampleRng rng(GetParam() == Encoding::kO200kBase ? 42 : 43);
  std::string text;
  for (int iter = 0; iter < 60000; ++iter) {
    text.clear();
    size_t len = 1 + rng.Below(iter % 100 == 0 ? 400 : 24);
    for (size_t i = 0; i < len; ++i) {
      uint32_t cp;
      if (rng.Chance(85)) {
        cp = kAlphabet[rng.Below(std::size(kAlphabet))];
      } else {
        do {
          cp = static_cast<uint32_t>(rng.Chance(50) ? rng.Below(0x3400) : rng.Below(0x110000));
        } while ((cp >= 0xD800 && cp <= 0xDFFF) || diffs.count(cp) || cp == 0);
      }
      compactor::internal::AppendUtf8(text, cp);
    }
    ExpectSameSplit(GetParam(), **ref, text);
    if (HasFatalFailure()) return;
  }
}

TEST_P(PreTokenizerTest, SampleCorporaMatchPcre2) {
  auto ref = Pcre2Splitter::Create(GetParam());
  ASSERT_TRUE(ref.ok());
  SampleRng rng(5);
  for (const std::string& text :
       {SampleEnglish(rng, 200000), SampleCode(rng, 200000), SampleJson(rng, 100000),
        SampleCjk(rng, 100000), SampleEmoji(rng, 50000), SampleWhitespace(rng, 50000)}) {
    auto fast = SplitFast(GetParam(), text);
    auto want = (*ref)->Split(text);
    ASSERT_EQ(fast.size(), want.size());
    for (size_t i = 0; i < fast.size(); ++i) {
      ASSERT_EQ(fast[i].data(), want[i].data()) << i << ": " << Show({fast[i], want[i]});
      ASSERT_EQ(fast[i].size(), want[i].size()) << i << ": " << Show({fast[i], want[i]});
    }
  }
}

TEST_P(PreTokenizerTest, PiecesTileTheInput) {
  SampleRng rng(9);
  std::string text = SampleUnicode(rng, 100000);
  size_t pos = 0;
  for (auto p : SplitFast(GetParam(), text)) {
    ASSERT_EQ(p.data(), text.data() + pos);
    ASSERT_FALSE(p.empty());
    pos += p.size();
  }
  EXPECT_EQ(pos, text.size());
}

INSTANTIATE_TEST_SUITE_P(Encodings, PreTokenizerTest,
                         ::testing::Values(Encoding::kO200kBase, Encoding::kCl100kBase),
                         [](const auto& info) { return std::string(EncodingName(info.param)); });

}  // namespace
}  // namespace compactor::tokens
